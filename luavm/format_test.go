package luavm

import (
	"strings"
	"testing"
)

// string.format is Lua 5.1's (C's sprintf), not Go's fmt. Each expected
// reply is redis-server 7.0.15's for the same script; the transcript
// compat/diff/testdata/luaformat.txt diffs more against redis-server.
func TestStringFormat_AsLua51(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"string.format('%g|%g|%g|%10.4g|%G', 123456789, 0.0001, 100000, 3.14159265, 1e-10)", "1.23457e+08|0.0001|100000|     3.142|1E-10"},
		{"string.format('%x|%X|%o|%u|%#x|%#o|%i', -1, 255, 8, -5, 255, 8, 7.9)", "ffffffffffffffff|FF|10|18446744073709551611|0xff|010|7"},
		{"string.format('%x|%x|%x|%d', 2^63, 2^64, -2^63, 1e100)", "8000000000000000|0|8000000000000000|-9223372036854775808"},
		{"string.format('%5.2s|%-5s|%05d|%+d|% d|%05s|%.0d|', 'abc', 'x', 42, 5, 5, 'ab', 0)", "   ab|x    |00042|+5| 5|   ab||"},
		{"string.format('%f|%g|%e|%5.1f|%+E', 1/0, -1/0, 0/0, 1/0, 1/0)", "inf|-inf|-nan|  inf|+INF"},
		{"string.format('%s|%s|%s|%s', 1.5, 1e100, 12345678901234567, -0.0)", "1.5|1e+100|1.2345678901235e+16|-0"},
		{"string.format('%#g|%#.0f|%.0f|%.0f', 1.0, 4.0, 2.5, -0.5)", "1.00000|4.|2|-0"},
		{"string.format('%c%c%c', 256+65, -1, 0)", "A\xff"},
		{"string.format('%s|%.3s|%q', 'ab\\0cd', 'ab\\0cd', 'a\"b\\\\c\\nd\\re\\0f')", "ab|ab|\"a\\\"b\\\\c\\\nd\\re\\000f\""},
		{"string.format('%s', string.rep('a\\0', 60))", strings.Repeat("a\x00", 60)},
		{"string.format('%d%%', '10')", "10%"},
	} {
		if got, want := f.do(2, "EVAL", "return "+tc.script, "0"), "$"+tc.want; got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, want)
		}
	}
	const sc = " script: "
	for _, tc := range []struct{ script, want string }{
		{"string.format('%d', 'x')", "bad argument #2 to 'format' (number expected, got string)"},
		{"string.format('%s')", "bad argument #2 to 'format' (no value)"},
		{"string.format('%s %s', 1)", "bad argument #3 to 'format' (no value)"},
		{"string.format('%s', nil)", "bad argument #2 to 'format' (string expected, got nil)"},
		{"string.format('%d', {})", "bad argument #2 to 'format' (number expected, got table)"},
		{"string.format('%z', 1)", "invalid option '%z' to 'format'"},
		{"string.format('%', 1)", "invalid option '%' to 'format'"},
		{"string.format('%------d', 1)", "invalid format (repeated flags)"},
		{"string.format('%100d', 1)", "invalid format (width or precision too long)"},
		{"string.format('%5.100f', 1)", "invalid format (width or precision too long)"},
	} {
		got := f.do(2, "EVAL", "return "+tc.script, "0")
		want := "-ERR user_script:1: " + tc.want + sc
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, want)
		}
	}
}
