package engine

import (
	"math"
	"strconv"
)

// parseInt parses b as Redis's string2ll does: optional '-', no '+', no
// leading zeros, no spaces, within int64.
func parseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseInt exposes Redis's integer parsing to other packages.
func ParseInt(b []byte) (int64, bool) { return parseInt(b) }

// eqFold reports whether b equals the lower-case ASCII word s, ignoring
// the case of ASCII letters, as Redis's strcasecmp(b, s) == 0 compares
// option words and subcommand names: as C strings, so b ends at its first
// NUL byte ("nx\x00z" is NX). Where Redis compares a whole argument, use
// eqFoldAll.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		// b is s only if it goes on with a NUL byte (s holds none):
		// tested off the path of an exact word, so an option costs no
		// more to parse, and eqFold stays inlined.
		if len(b) < len(s) || b[len(s)] != 0 {
			return false
		}
		b = b[:len(s)]
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// eqFoldAll reports whether all of b equals the lower-case ASCII word s,
// ignoring the case of ASCII letters: a NUL byte is a byte like any other.
func eqFoldAll(b []byte, s string) bool {
	return len(b) == len(s) && eqFold(b, s) // of equal lengths, eqFold compares every byte
}

// cstr is b as C sees an argument's sds through its char pointer: up to
// its first NUL byte. Where Redis compares a word with strcasecmp, or
// prints it with %s, tumbler compares or prints cstr of it.
func cstr[T string | []byte](b T) T {
	for i := 0; i < len(b); i++ {
		if b[i] == 0 {
			return b[:i]
		}
	}
	return b
}

// CStr is cstr for other packages.
func CStr[T string | []byte](b T) T { return cstr(b) }

// lowerC is the word a switch on a lowered argument compares where Redis
// compares it with strcasecmp: cstr(b), ASCII letters lowered.
func lowerC(b []byte) string { return LowerASCII(string(cstr(b))) }

// LowerC is lowerC for other packages.
func LowerC(b []byte) string { return lowerC(b) }

// EqFold is eqFold for other packages.
func EqFold(b []byte, s string) bool { return eqFold(b, s) }

// EqualFoldASCII reports whether a and b are equal ignoring the case of
// ASCII letters only, as C's strcasecmp(a, b) == 0 (short of its stop at
// a NUL byte), which Redis compares option names and words from clients
// and config files with. Unlike
// strings.EqualFold it does not fold Unicode: the Kelvin sign (U+212A) is
// no "k", nor U+017F ("ſ") an "s".
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Match reports whether str matches the Redis glob pattern (the semantics
// of Redis's stringmatchlen: * ? [abc] [^a-z] and \ escapes).
//
// Like Redis (since the fix for CVE-2022-36021), a '*' whose rest of
// pattern matches nowhere in the rest of the string ends the whole search:
// without that, a pattern such as "*a*a*a*a*a*b" takes time exponential in
// the number of stars, and KEYS would hold the keyspace lock for hours.
func Match(pattern, str []byte, nocase bool) bool {
	skip := false
	return matchLen(pattern, str, nocase, 0, &skip)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// matchLen is Redis's stringmatchlen_impl. skipLonger is set when a '*'
// found no match for the rest of the pattern anywhere in the rest of the
// string: then no earlier '*' can help by matching more.
func matchLen(p, s []byte, nocase bool, depth int, skipLonger *bool) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if matchLen(p[1:], s, nocase, depth+1, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) == 0 {
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					c := s[0]
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					p = p[2:]
					if c >= start && c <= end {
						match = true
					}
				} else {
					if nocase {
						if lower(p[0]) == lower(s[0]) {
							match = true
						}
					} else if p[0] == s[0] {
						match = true
					}
				}
				p = p[1:]
			}
			if len(p) == 0 {
				// unterminated class: Redis treats the end of the
				// pattern as the closing bracket
				p = []byte{']'}
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if nocase {
				if lower(p[0]) != lower(s[0]) {
					return false
				}
			} else if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}
