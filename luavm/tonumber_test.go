package luavm

import (
	"math"
	"testing"
)

// The expected values are redis-server 7.0.15's (Lua 5.1: strtod and
// strtoul); compat/diff/testdata/eval.txt diffs the same cases against it.
func TestStr2d(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"12", 12, true},
		{"  12  ", 12, true},
		{"\t\n12\v\f\r", 12, true},
		{"1e5", 100000, true},
		{"1E+2", 100, true},
		{"2.5e-1", 0.25, true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"+5", 5, true},
		{"-7", -7, true},
		{"19223372036854775807", 19223372036854775807, true},
		{"1e400", math.Inf(1), true},
		{"-1e400", math.Inf(-1), true},
		{"1e-400", 0, true},
		{"0x10", 16, true},
		{"0X1p4", 16, true},
		{"0x1.8p1", 3, true},
		{"-0x10", -16, true},
		{"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"12\x00xyz", 12, true}, // C stops at the NUL
		{"", 0, false},
		{" ", 0, false},
		{".", 0, false},
		{"-", 0, false},
		{"+-5", 0, false},
		{"0x", 0, false},
		{"0x1p", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1 2", 0, false},
		{"12abc", 0, false},
		{"1_000", 0, false},
		{"infinit", 0, false},
	}
	for _, c := range cases {
		got, ok := str2d(c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("str2d(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, in := range []string{"nan", "NaN", " -nan ", "nan(abc)"} {
		if got, ok := str2d(in); !ok || !math.IsNaN(got) {
			t.Errorf("str2d(%q) = %v, %v; want NaN", in, got, ok)
		}
	}
}

func TestStrtoulAll(t *testing.T) {
	cases := []struct {
		in   string
		base int
		want uint64
		ok   bool
	}{
		{"ff", 16, 255, true},
		{"  0xff  ", 16, 255, true},
		{"zz", 36, 1295, true},
		{"777", 8, 511, true},
		{"10", 2, 2, true},
		{"-1", 16, math.MaxUint64, true}, // negated in unsigned arithmetic
		{"99999999999999999999999", 16, math.MaxUint64, true},
		{"12", 2, 0, false},
		{"8", 8, 0, false},
		{"0x", 16, 0, false},
		{"0x10", 10, 0, false},
		{"", 16, 0, false},
	}
	for _, c := range cases {
		got, ok := strtoulAll(c.in, c.base)
		if ok != c.ok || got != c.want {
			t.Errorf("strtoulAll(%q, %d) = %d, %v; want %d, %v", c.in, c.base, got, ok, c.want, c.ok)
		}
	}
}

func TestEval_ToNumberAndMathHuge(t *testing.T) {
	f := newFixture(t)
	f.expect(":-9223372036854775808", "EVAL", "return tonumber('19223372036854775807')", "0")
	f.expect("$100000", "EVAL", "return tostring(tonumber('1e5'))", "0")
	f.expect(":16", "EVAL", "return tonumber(10, 16)", "0")
	f.expect(":16", "EVAL", "return tonumber('10', '16')", "0")
	f.expect("(nil)", "EVAL", "return tonumber('12', 2)", "0")
	f.expect(":1", "EVAL", "return tonumber('inf') == math.huge", "0")
	f.expect(":1", "EVAL", "return math.huge == 1/0", "0")
}

func TestEval_IntegerArgumentsFromNumericStrings(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return string.sub('hello', ARGV[1])", "$ello"},
		{"return string.sub('hello', ' 2 ', '3.0')", "$el"},
		{"return ('hello'):sub('0x2')", "$ello"},
		{"return string.rep('a', '3')", "$aaa"},
		{"return string.char('65', '66')", "$AB"},
		{"return select('2', 'a', 'b')", "$b"},
		{"return select('#', 'a', 'b')", ":2"},
		{"return table.concat({1,2,3}, ',', '2')", "$2,3"},
		{"local t={} table.insert(t, '1', 'x') return t[1]", "$x"},
		{"local t={} table.insert(t, '1') return type(t[1])", "$string"},
	} {
		f.expect(tc.want, "EVAL", tc.script, "0", "2")
	}
}

// Lua 5.1 gives a string function a number as "%.14g" writes it
// (redis-server 7.0.15's replies).
func TestEval_StringArgumentsFromNumbers(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return string.len(0.1+0.2)", ":3"},
		{"return string.len(100)", ":3"},
		{"return string.sub(1e15, 1)", "$1e+15"},
		{"return string.sub(1/3, 1)", "$0.33333333333333"},
		{"return string.reverse(-0.0)", "$0-"},
		{"return string.sub(0/0, 1)", "$-nan"},
		{"return string.sub(-(0/0), 1)", "$nan"},
		{"return string.sub(1/0, 1)", "$inf"},
		{"return string.reverse(-1/0)", "$fni-"},
		{"return redis.sha1hex(0.1+0.2) == redis.sha1hex('0.3')", ":1"},
		{"return redis.sha1hex(1e15)", "$29649fb9b5a7f057fcfd4d03bc770039deb636be"},
		{"return redis.sha1hex({}) == redis.sha1hex('')", ":1"},
		{"return tonumber(1e15, 16)", "(nil)"},
		{"return tonumber(0.5, 16)", "(nil)"},
		{"return tonumber(255, 16)", ":597"},
	} {
		f.expect(tc.want, "EVAL", tc.script, "0")
	}
}
