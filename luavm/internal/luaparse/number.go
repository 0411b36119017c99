package luaparse

import (
	"math"
	"strings"

	"github.com/tumblerdb/tumbler/engine"
)

// Str2d is Lua 5.1's luaO_str2d, which reads the numbers of a script and
// tonumber's strings: the whole string (white space around it allowed,
// as C reads it: up to a NUL byte) must be a number as C's strtod reads
// one: decimal with an optional exponent, hexadecimal (with an optional
// binary exponent), or inf, infinity and nan in any case. (luaO_str2d's
// second try, strtoul after an 'x', never reads more than glibc's strtod
// did.)
func Str2d(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	i := 0
	for i < len(s) && isSpace(int(s[i])) {
		i++
	}
	f, n := engine.Strtod(s[i:])
	if n == 0 {
		return 0, false
	}
	for j := i + n; j < len(s); j++ {
		if !isSpace(int(s[j])) {
			return 0, false
		}
	}
	if f != f {
		// glibc's NaN: the quiet NaN with no payload, negative after a
		// '-' ("-nan" + 0 is -nan). engine.Strtod gives Go's math.NaN(),
		// whose lowest bit is set (LuaBitOp's bit.tobit('nan') read it as
		// 1, Redis's 0), and drops the sign.
		f = math.Float64frombits(0x7ff8000000000000)
		if s[i] == '-' {
			f = -f
		}
	}
	return f, true
}
