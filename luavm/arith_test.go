package luavm

import (
	"math"
	"strings"
	"testing"
)

// Arithmetic, math and bit read numeric strings as Lua 5.1's luaO_str2d
// (arith.go). The expected replies are redis-server 7.0.15's;
// compat/diff's TestLuaNumberDiff diffs them against it.
func TestEval_ArithmeticOnNumericStrings(t *testing.T) {
	f := newFixture(t)
	at := " script: %s, on @user_script:1."
	for _, tc := range []struct{ script, want string }{
		{"local a = '0010' return a * 60", ":600"},
		{"return '010' + 0", ":10"},
		{"return 1 - '010'", ":-9"},
		{"return '2' ^ '010'", ":1024"},
		{"return '010' % '3'", ":1"},
		{"return -'010'", ":-10"},
		{"local s = '010' return -s", ":-10"},
		{"return ARGV[1] * 2", ":20"},
		{"return tostring('0x.8' + 0)", "$0.5"},
		{"return tostring(-'0x.8')", "$-0.5"},
		{"return tostring('0xffffffffffffffffff' + 0)", "$4.7223664828696e+21"},
		{"return tostring('1e500' + 0)", "$inf"},
		{"return tostring('-nan' + 0)", "$-nan"},
		{"return tostring('nan' + 0)", "$nan"},
		{"return '5\\r' + 0", ":5"},
		{"return '5\\f' + '\\v6'", ":11"},
		// no numbers to Lua 5.1
		{"return '0b1' + 0", "-ERR user_script:1: attempt to perform arithmetic on a string value" + at},
		{"return 1 * '1_000'", "-ERR user_script:1: attempt to perform arithmetic on a string value" + at},
		{"local x = '0o17' return x + 1", "-ERR user_script:1: attempt to perform arithmetic on local 'x' (a string value)" + at},
		{"return -'abc'", "-ERR user_script:1: attempt to perform arithmetic on a string value" + at},
		{"local t = {} return t + 'x'", "-ERR user_script:1: attempt to perform arithmetic on local 't' (a table value)" + at},
		{"local s = 'x' return s + {}", "-ERR user_script:1: attempt to perform arithmetic on local 's' (a string value)" + at},
		{"local ok, e = pcall(function() return '1_000' * 2 end) return e", "$user_script:1: attempt to perform arithmetic on a string value"},
		{"local ok, e = xpcall(function() local s = 'x' return -s end, function(m) return m end) return e", "$user_script:1: attempt to perform arithmetic on local 's' (a string value)"},
		// a table's metamethod, on either side of a string
		{"local t = setmetatable({}, {__add = function(a, b) return type(a) .. type(b) end}) return {t + '1', '1' + t, 'x' + t}", "*3 $tablestring $stringtable $stringtable"},
		{"local t = setmetatable({}, {__add = function(a, b) error('in add', 2) end}) return 'x' + t", "-ERR user_script:1: in add" + at},
		{"local t = setmetatable({}, {__add = 5}) return 'x' + t", "-ERR user_script:1: attempt to call a number value" + at},
		// which scripts do not see
		{"return getmetatable('').__add", "(nil)"},
		{"return getmetatable('').__index == string", ":1"},
		// math and bit
		{"return math.max('010', 1)", ":10"},
		{"return math.floor(' 5\\r')", ":5"},
		{"return bit.band('010', 255)", ":10"},
		{"return bit.tobit('nan')", ":0"},
		{"return math.floor('0b1')", "-ERR user_script:1: bad argument #1 to 'floor' (number expected, got string)" + at},
		{"return bit.band('0o17', 1)", "-ERR user_script:1: bad argument #1 to 'band' (number expected, got string)" + at},
	} {
		want := tc.want
		if strings.Contains(want, "%s") {
			want = strings.Replace(want, "%s", SHA1Hex([]byte(tc.script)), 1)
		}
		f.expect(want, "EVAL", tc.script, "0", "010")
	}
}

// glibc's strtod gives the quiet NaN with no payload, signed.
func TestStr2d_NaNIsGlibcs(t *testing.T) {
	for in, want := range map[string]uint64{"nan": 0x7ff8000000000000, " -NaN ": 0xfff8000000000000, "+nan(x)": 0x7ff8000000000000} {
		if f, ok := str2d(in); !ok || math.Float64bits(f) != want {
			t.Errorf("str2d(%q) = %#x, %v; want %#x", in, math.Float64bits(f), ok, want)
		}
	}
}
