package engine

import (
	"math"
	"strconv"
	"strings"
)

// Strtod reads the longest prefix of s (no leading white space) that C's
// strtod would, and returns its value and length (0: no number). The
// Lua VM's tonumber and the sorted sets' score ranges read numbers so.
func Strtod(s string) (float64, int) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := LowerASCII(s[i:])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + len("infinity")
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + len("inf")
	case strings.HasPrefix(rest, "nan"):
		n := i + len("nan")
		// "nan(chars)": the parenthesised part belongs to the number
		if j := n; j < len(s) && s[j] == '(' {
			for j++; j < len(s) && (isAlnumC(s[j]) || s[j] == '_'); j++ {
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return math.NaN(), n
	}
	if len(rest) >= 3 && rest[0] == '0' && rest[1] == 'x' && (isHexDigitAny(rest[2]) || (rest[2] == '.' && len(rest) > 3 && isHexDigitAny(rest[3]))) {
		return hexFloat(s, i+2, neg)
	}
	start := i
	digits := 0
	for i < len(s) && isDecDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDecDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	i = exponent(s, i, "eE")
	// The token is plain decimal syntax, which ParseFloat reads as strtod
	// does (correctly rounded; ±Inf past the range, as HUGE_VAL).
	f, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return sign(f), i
}

// hexFloat reads a hexadecimal number whose digits start at s[i]: hex
// digits, an optional fraction, an optional binary exponent.
func hexFloat(s string, i int, neg bool) (float64, int) {
	start := i
	for i < len(s) && isHexDigitAny(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigitAny(s[i]) {
			i++
		}
	}
	mant := s[start:i]
	exp := "p0"
	if e := exponent(s, i, "pP"); e > i {
		exp, i = s[i:e], e
	}
	f, err := strconv.ParseFloat("0x"+mant+exp, 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	if neg {
		f = -f
	}
	return f, i
}

// exponent returns the end of the exponent at s[i] (one of letters, an
// optional sign, decimal digits), or i when there is none: without a
// digit the letter is not part of the number.
func exponent(s string, i int, letters string) int {
	if i >= len(s) || strings.IndexByte(letters, s[i]) < 0 {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !isDecDigit(s[j]) {
		return i
	}
	for j < len(s) && isDecDigit(s[j]) {
		j++
	}
	return j
}

func isDecDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigitAny(c byte) bool {
	return isDecDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

func isAlnumC(c byte) bool { return isDecDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') }

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
