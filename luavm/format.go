package luavm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.format as Lua 5.1's (lstrlib.c str_format), which hands each
// item to C's sprintf. gopher-lua's is Go's fmt: %g without a precision
// prints every digit, %x of -1 is "-1", a missing argument becomes
// "%!s(MISSING)", %d of a non-number is 0, and an unknown option is
// printed rather than refused. This one follows C:
//
//   - an item is % [flags -+ #0, at most five] [width, at most 2 digits]
//     [. precision, at most 2 digits] and one of c d i o u x X e E f g G
//     q s; anything else is "invalid option '%z' to 'format'";
//   - numbers convert as C converts a double: d/i to long long, o/u/x/X
//     to unsigned long long, c to int, as x86-64 does it (out of range is
//     the "integer indefinite" value); numeric strings are numbers;
//   - %s takes strings and numbers (the number as "%.14g"), and a string
//     of 100 bytes or more goes in whole when no precision is given;
//   - every item but %q and such a long %s ends at its first NUL byte, as
//     sprintf's output is a C string (%c of 0 adds nothing).
//
// As string.rep and table.concat, it refuses a result past the size
// limit (vm.sizeLimit) before it builds it: "not enough memory".
func (vm *VM) strFormat(L *lua.LState) int { return luaFormat(L, vm.sizeLimit()) }

func luaFormat(L *lua.LState, limit int) int {
	top := L.GetTop()
	fs := formatStringArg(L, 1)
	var b []byte
	arg := 1
	for i := 0; i < len(fs); {
		if fs[i] != '%' {
			b = append(b, fs[i])
			i++
			continue
		}
		i++
		if i < len(fs) && fs[i] == '%' {
			b = append(b, '%')
			i++
			continue
		}
		arg++
		if arg > top {
			formatArgError(L, arg, "no value")
		}
		var sp fmtSpec
		i = sp.scan(L, fs, i)
		conv := byte(0) // the C string's terminator, past its end
		if i < len(fs) {
			conv = fs[i]
		}
		i++
		var item string
		switch conv {
		case 'c':
			item = sp.pad(string([]byte{byte(int32Of(formatNumberArg(L, arg)))}), false)
		case 'd', 'i':
			n := int64Of(formatNumberArg(L, arg))
			neg := n < 0
			u := uint64(n)
			if neg {
				u = -u
			}
			item = sp.integer(neg, u, conv)
		case 'o', 'u', 'x', 'X':
			item = sp.integer(false, uint64Of(formatNumberArg(L, arg)), conv)
		case 'e', 'E', 'f', 'g', 'G':
			item = sp.float(formatNumberArg(L, arg), conv)
		case 'q':
			s := formatStringArg(L, arg)
			if len(b)+quotedLen(s) > limit {
				L.RaiseError("not enough memory")
			}
			b = appendQuoted(b, s)
			continue
		case 's':
			s := formatStringArg(L, arg)
			if !sp.hasPrec && len(s) >= 100 {
				if len(b)+len(s) > limit {
					L.RaiseError("not enough memory")
				}
				b = append(b, s...) // whole, NUL bytes and all
				continue
			}
			s = cString(s)
			if sp.hasPrec && len(s) > sp.prec {
				s = s[:sp.prec]
			}
			item = sp.pad(s, false)
		default:
			cError(L, "invalid option '%%%s' to 'format'", cString(string([]byte{conv})))
		}
		b = append(b, cString(item)...)
		if len(b) > limit { // (items of at most a few hundred bytes)
			L.RaiseError("not enough memory")
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// fmtSpec is one item's flags, width and precision.
type fmtSpec struct {
	minus, plus, space, hash, zero bool
	width, prec                    int
	hasPrec                        bool
}

// scan reads the flags, width and precision at fs[i:] as Lua 5.1's
// scanformat does, and returns the index of the conversion.
func (sp *fmtSpec) scan(L *lua.LState, fs string, i int) int {
	start := i
	for ; i < len(fs) && strings.IndexByte("-+ #0", fs[i]) >= 0; i++ {
		switch fs[i] {
		case '-':
			sp.minus = true
		case '+':
			sp.plus = true
		case ' ':
			sp.space = true
		case '#':
			sp.hash = true
		case '0':
			sp.zero = true
		}
	}
	if i-start >= len("-+ #0")+1 {
		cError(L, "%s", "invalid format (repeated flags)")
	}
	digits := func() int {
		n := 0
		for j := 0; j < 2 && i < len(fs) && isDigit(fs[i]); j++ {
			n = n*10 + int(fs[i]-'0')
			i++
		}
		return n
	}
	sp.width = digits()
	if i < len(fs) && fs[i] == '.' {
		i++
		sp.hasPrec = true
		sp.prec = digits()
	}
	if i < len(fs) && isDigit(fs[i]) {
		cError(L, "%s", "invalid format (width or precision too long)")
	}
	return i
}

// pad pads s to the width: on the right with '-', else on the left, with
// zeros after any sign or prefix (signLen bytes) when zeros is set.
func (sp *fmtSpec) pad(s string, zeros bool, signLen ...int) string {
	n := sp.width - len(s)
	if n <= 0 {
		return s
	}
	switch {
	case sp.minus:
		return s + strings.Repeat(" ", n)
	case zeros:
		k := 0
		if len(signLen) > 0 {
			k = signLen[0]
		}
		return s[:k] + strings.Repeat("0", n) + s[k:]
	default:
		return strings.Repeat(" ", n) + s
	}
}

// integer formats u (its magnitude, neg its sign) as C's %d, %i, %o, %u,
// %x or %X with sp.
func (sp *fmtSpec) integer(neg bool, u uint64, conv byte) string {
	var digits string
	switch conv {
	case 'o':
		digits = strconv.FormatUint(u, 8)
	case 'x':
		digits = strconv.FormatUint(u, 16)
	case 'X':
		digits = strings.ToUpper(strconv.FormatUint(u, 16))
	default:
		digits = strconv.FormatUint(u, 10)
	}
	if sp.hasPrec && sp.prec == 0 && u == 0 {
		digits = ""
	}
	if sp.hasPrec && len(digits) < sp.prec {
		digits = strings.Repeat("0", sp.prec-len(digits)) + digits
	}
	prefix := ""
	switch {
	case conv == 'd' || conv == 'i':
		switch {
		case neg:
			prefix = "-"
		case sp.plus:
			prefix = "+"
		case sp.space:
			prefix = " "
		}
	case sp.hash && conv == 'o':
		if !strings.HasPrefix(digits, "0") {
			digits = "0" + digits
		}
	case sp.hash && u != 0 && conv == 'x':
		prefix = "0x"
	case sp.hash && u != 0 && conv == 'X':
		prefix = "0X"
	}
	return sp.pad(prefix+digits, sp.zero && !sp.hasPrec, len(prefix))
}

// float formats f as C's %e, %E, %f, %g or %G with sp (default precision
// 6, where Go's %g without one prints the shortest exact form).
func (sp *fmtSpec) float(f float64, conv byte) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s := "inf"
		if math.IsNaN(f) {
			s = "nan"
		}
		if conv == 'E' || conv == 'G' {
			s = strings.ToUpper(s)
		}
		switch {
		case math.Signbit(f):
			s = "-" + s
		case sp.plus:
			s = "+" + s
		case sp.space:
			s = " " + s
		}
		return sp.pad(s, false) // no zero padding for inf and nan
	}
	var form strings.Builder
	form.WriteByte('%')
	for _, fl := range []struct {
		on bool
		c  byte
	}{{sp.minus, '-'}, {sp.plus, '+'}, {sp.space, ' '}, {sp.hash, '#'}, {sp.zero, '0'}} {
		if fl.on {
			form.WriteByte(fl.c)
		}
	}
	if sp.width > 0 {
		form.WriteString(strconv.Itoa(sp.width))
	}
	prec := 6
	if sp.hasPrec {
		prec = sp.prec
	}
	form.WriteString("." + strconv.Itoa(prec))
	form.WriteByte(conv)
	return fmt.Sprintf(form.String(), f)
}

// appendQuoted is %q: the string between double quotes, with ", \ and
// newline escaped by a backslash, \r as \r and NUL as \000.
// quotedLen is the length appendQuoted adds for s.
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '\n', '\r':
			n++
		case 0:
			n += 3
		}
	}
	return n
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, `\r`...)
		case 0:
			b = append(b, `\000`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// formatStringArg is luaL_checklstring for format.
func formatStringArg(L *lua.LState, i int) string { return checkLString(L, i, "format") }

// checkLString is luaL_checklstring for argument i of library function
// fname: a string, or a number as Lua 5.1 prints one ("%.14g").
func checkLString(L *lua.LState, i int, fname string) string {
	switch v := L.Get(i).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return number14g(float64(v))
	default:
		argError(L, i, fname, "string expected, got "+typeName(L, i))
		return ""
	}
}

// formatNumberArg is luaL_checknumber for format: a number, or a string
// that is one.
func formatNumberArg(L *lua.LState, i int) float64 {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return float64(v)
	case lua.LString:
		if f, ok := str2d(string(v)); ok {
			return f
		}
	}
	formatArgError(L, i, "number expected, got "+typeName(L, i))
	return 0
}

// typeName is the name of argument i's type, "no value" past the top.
func typeName(L *lua.LState, i int) string {
	if i > L.GetTop() {
		return "no value"
	}
	return L.Get(i).Type().String()
}

func formatArgError(L *lua.LState, i int, msg string) { argError(L, i, "format", msg) }

// argError is luaL_argerror, worded as Lua 5.1 words it.
func argError(L *lua.LState, i int, fname, msg string) {
	L.RaiseError("bad argument #%d to '%s' (%s)", i, fname, msg)
}

// number14g is Lua 5.1's lua_Number2str: C's "%.14g".
func number14g(f float64) string {
	if s, ok := nonFinite(f); ok {
		return s
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// number17g is C's "%.17g", in which Redis passes a Lua number to a
// command (luaRedisGenericCommand): 1/0 is "inf", not Go's "+Inf".
func number17g(f float64) []byte {
	if s, ok := nonFinite(f); ok {
		return []byte(s)
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// nonFinite is how glibc's printf writes an infinity or a NaN (a NaN with
// its sign bit set, as 0/0 makes on x86-64, is "-nan").
func nonFinite(f float64) (string, bool) {
	switch {
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan", true
		}
		return "nan", true
	}
	return "", false
}

// cvttsd2si is x86-64's conversion of a double to a 64-bit integer, which
// C's casts compile to: it truncates, and a value out of range (or NaN)
// becomes the "integer indefinite" value, math.MinInt64.
func cvttsd2si(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

func int64Of(f float64) int64 { return cvttsd2si(f) }

// uint64Of is a C cast of a double to unsigned long long as x86-64
// compilers emit it: values below 2^63 convert signed (so -1 is all
// ones), the rest by subtracting 2^63 first and setting the top bit back.
func uint64Of(f float64) uint64 {
	if f < 1<<63 {
		return uint64(cvttsd2si(f))
	}
	return uint64(cvttsd2si(f-(1<<63))) ^ (1 << 63)
}

// int32Of is a C cast of a double to int (cvttsd2si, 32 bits).
func int32Of(f float64) int32 {
	if math.IsNaN(f) || f >= 1<<31 || f < -(1<<31) {
		return math.MinInt32
	}
	return int32(f)
}
