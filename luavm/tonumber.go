package luavm

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"

	"github.com/tumblerdb/tumbler/engine"
)

// luaToNumber is Lua 5.1's tonumber (lbaselib.c, luaB_tonumber), which
// Redis's scripts get. gopher-lua's own parses a string without a '.' as
// an int64 only, so tonumber('1e5') and tonumber('19223372036854775807')
// were nil where Redis gives 100000 and 1.9223372036854776e19 (Redisson's
// unlock script returns tonumber of a stored value).
//
// Base 10 converts as the Lua parser does (luaO_str2d: C's strtod, then
// trailing white space); any other base reads an unsigned integer as C's
// strtoul does.
func luaToNumber(L *lua.LState) int {
	numberArg(L, 2) // the base may be a numeric string too
	base := L.OptInt(2, 10)
	if base == 10 {
		switch v := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(v)
		case lua.LString:
			if f, ok := str2d(string(v)); ok {
				L.Push(lua.LNumber(f))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
	stringArg(L, 1) // luaL_checkstring: tonumber(1e15, 16) reads "1e+15"
	s := L.CheckString(1)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	if n, ok := strtoulAll(cString(s), base); ok {
		L.Push(lua.LNumber(float64(n)))
	} else {
		L.Push(lua.LNil)
	}
	return 1
}

// cString is s as C sees it: up to its first NUL byte.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// str2d is Lua 5.1's luaO_str2d (luaparse.Str2d): the whole string
// (white space around it allowed) must be a number as strtod reads one.
func str2d(s string) (float64, bool) { return luaparse.Str2d(s) }

// strtod is C's strtod on a string without leading white space
// (engine.Strtod).
func strtod(s string) (float64, int) { return engine.Strtod(s) }

// strtoulAll is C's strtoul(s, &end, base) accepted only when it read a
// digit and nothing but white space follows, as luaB_tonumber requires:
// leading white space, an optional sign (a '-' negates in unsigned
// arithmetic), "0x" before base 16 digits; past the range it gives
// ULONG_MAX.
func strtoulAll(s string, base int) (uint64, bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitVal(s[i+2]) < 16 {
		i += 2
	}
	var n uint64
	over := false
	start := i
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			over = true
		}
		n = n*uint64(base) + uint64(d)
	}
	if i == start {
		return 0, false
	}
	for ; i < len(s); i++ {
		if !isCSpace(s[i]) {
			return 0, false
		}
	}
	if over {
		return math.MaxUint64, true
	}
	if neg {
		n = -n
	}
	return n, true
}

// digitVal is c's value as a digit of a base up to 36, or 36 for none.
func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 36
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return digitVal(c) < 16 }
func isAlnum(c byte) bool { return digitVal(c) < 36 }

// intArgs are the library functions that read integer arguments, and
// which: Lua 5.1 reads those from numeric strings too (luaL_checkinteger
// converts as tonumber does), gopher-lua's CheckInt does not, so that
// string.sub(s, ARGV[1]) failed with "number expected, got string".
// all: every argument (string.char). Functions ported from Lua 5.1
// (pattern.go's, table.insert, lib51.go's) read their arguments themselves.
//
// str are the string arguments of gopher-lua's functions, which Lua 5.1
// reads from numbers as lua_tolstring writes them ("%.14g"): gopher-lua
// writes Go's digits, so that string.len(0.1+0.2) was 19 (of
// "0.30000000000000004"), not 3, and string.sub(1/0, 1) "+Inf", not "inf".
var intArgs = []struct {
	lib, fn string
	pos     []int
	all     bool
	str     []int
}{
	{lib: lua.StringLibName, fn: "sub", pos: []int{2, 3}, str: []int{1}},
	{lib: lua.StringLibName, fn: "len", str: []int{1}},
	{lib: lua.StringLibName, fn: "reverse", str: []int{1}},
}

// coerceIntArgs wraps the functions of intArgs in G (after any other
// wrapper, so that those see numbers too) to turn their integer arguments
// that are numeric strings into numbers first, and their string arguments
// that are numbers into strings.
func coerceIntArgs(L *lua.LState, G *lua.LTable) {
	for _, w := range intArgs {
		t := G
		if w.lib != "" {
			lib, ok := G.RawGetString(w.lib).(*lua.LTable)
			if !ok {
				continue
			}
			t = lib
		}
		orig, ok := t.RawGetString(w.fn).(*lua.LFunction)
		if !ok || orig.GFunction == nil {
			continue
		}
		w := w
		t.RawSetString(w.fn, L.NewFunction(func(L *lua.LState) int {
			top := L.GetTop()
			for _, i := range w.str {
				if i <= top {
					stringArg(L, i)
				}
			}
			switch {
			case w.all:
				for i := 1; i <= top; i++ {
					numberArg(L, i)
				}
			default:
				for _, i := range w.pos {
					if i <= top {
						numberArg(L, i)
					}
				}
			}
			return orig.GFunction(L)
		}))
	}
}

// numberArg replaces argument i with its number if it is a numeric string.
func numberArg(L *lua.LState, i int) {
	if s, ok := L.Get(i).(lua.LString); ok {
		if f, ok := str2d(string(s)); ok {
			L.Replace(i, lua.LNumber(f))
		}
	}
}

// stringArg replaces argument i with its string if it is a number,
// written as Lua 5.1 writes it ("%.14g", inf, -nan).
func stringArg(L *lua.LState, i int) {
	if n, ok := L.Get(i).(lua.LNumber); ok {
		L.Replace(i, lua.LString(number14g(float64(n))))
	}
}

// toNumber is lua_tonumber: a number, or a string that is one.
func toNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		return str2d(string(v))
	}
	return 0, false
}
