package engine

import (
	"math"
	"math/big"
	"strings"
)

// Redis parses HINCRBYFLOAT increments and blocking timeouts as C long
// doubles (x87 80-bit extended precision on the platforms it ships on:
// a 64-bit mantissa) with strtold, adds in that precision and prints with
// "%.17Lf". tumbler does the same arithmetic with math/big at 64 bits of
// mantissa, rounding to nearest even, so that for example 0.1+0.2 prints
// "0.3" as Redis does, where float64 would print 0.30000000000000004.

const ldPrec = 64

// ldMax is LDBL_MAX, (2 - 2^-63) * 2^16383; ldMinHalf is half the smallest
// subnormal long double (2^-16445): strtold rounds anything smaller to 0.
var (
	ldMax = func() *big.Float {
		m := new(big.Float).SetPrec(ldPrec).SetUint64(math.MaxUint64) // 2^64 - 1
		return m.SetMantExp(m, 16384-64)
	}()
	ldMinHalf = new(big.Float).SetMantExp(big.NewFloat(1), -16446)
)

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: longer inputs are
// refused before parsing.
const maxLongDoubleChars = 5 * 1024

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseLongDouble is Redis's string2ld: the whole of b must be a number
// strtold accepts (decimal, hexadecimal, inf/infinity; not nan), without
// leading space, and not overflow or underflow to zero.
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars || isCSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	i := 0
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		i = 1
	}
	rest := LowerASCII(s[i:])
	if rest == "inf" || rest == "infinity" {
		return new(big.Float).SetInf(neg), true
	}
	hex := len(rest) > 2 && rest[0] == '0' && rest[1] == 'x' && validHexFloat(rest[2:])
	if !hex && !validDecFloat(rest) {
		return nil, false
	}
	f := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	base := 10
	if hex {
		base = 0 // the 0x prefix selects base 16 and a 'p' exponent
	}
	if _, _, err := f.Parse(s, base); err != nil {
		return nil, false
	}
	if f.Sign() != 0 {
		abs := new(big.Float).Abs(f)
		if abs.Cmp(ldMax) > 0 || abs.Cmp(ldMinHalf) <= 0 {
			return nil, false // ERANGE: HUGE_VAL or 0
		}
	}
	return f, true
}

// validDecFloat reports whether s is digits[.digits] or .digits, with an
// optional exponent, all of it (strtold would stop at anything else).
func validDecFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && s[i] == 'e' {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		if n == 0 {
			return false
		}
	}
	return i == len(s)
}

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
}

// validHexFloat checks the part of a hexadecimal float after "0x" (lower
// case): hexdigits[.hexdigits] or .hexdigits, then optionally p[sign]digits.
func validHexFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && s[i] == 'p' {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		if n == 0 {
			return false
		}
	}
	return i == len(s)
}

// ldOverflows reports whether f is outside the long double range (the
// result of an addition that overflowed to infinity in C).
func ldOverflows(f *big.Float) bool {
	return f.IsInf() || new(big.Float).Abs(f).Cmp(ldMax) > 0
}

// formatLongDoubleHuman is Redis's ld2string in LD_STR_HUMAN mode:
// "%.17Lf" with trailing zeros (and a trailing '.') removed, "-0" as "0".
func formatLongDoubleHuman(f *big.Float) string {
	if f.IsInf() {
		if f.Sign() > 0 {
			return "inf"
		}
		return "-inf"
	}
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// addLongDouble returns a+b rounded to a long double.
func addLongDouble(a, b *big.Float) *big.Float {
	return new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
}

// timeoutMillis is the seconds-to-milliseconds step of Redis 7.2's
// getTimeoutFromObjectOrReply: ms = ceil(seconds * 1000) in long double,
// an error if that exceeds LLONG_MAX; a value the conversion to long long
// cannot represent becomes LLONG_MIN, as on x86, and so reads as negative.
func timeoutMillis(sec *big.Float) (ms int64, outOfRange bool) {
	if sec.IsInf() {
		if sec.Sign() > 0 {
			return 0, true
		}
		return math.MinInt64, false
	}
	v := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Mul(sec, big.NewFloat(1000))
	limit := new(big.Float).SetInt64(math.MaxInt64) // rounds to 2^63, as (long double)LLONG_MAX
	if v.Cmp(limit) > 0 {
		return 0, true
	}
	// ceil
	t, acc := v.Int(nil)
	if acc == big.Below { // t < v: v had a positive fraction
		t.Add(t, big.NewInt(1))
	}
	if !t.IsInt64() {
		return math.MinInt64, false
	}
	return t.Int64(), false
}
