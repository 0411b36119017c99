package engine

// SplitArgs splits a line into words exactly as Redis's sdssplitargs
// (src/sds.c): words are separated by spaces, tabs, CR and LF; "double
// quotes" take the escapes \n \r \t \b \a \xHH and \<any>; 'single
// quotes' take only \'. ok is false for unbalanced quotes or a closing
// quote not followed by a space. A FUNCTION LOAD library's shebang line is
// split with it.
func SplitArgs(line string) (args []string, ok bool) {
	p, n := 0, len(line)
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' }
	at := func(i int) byte {
		if i < n {
			return line[i]
		}
		return 0
	}
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p >= n {
			return args, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHexDigitAny(at(p+2)) && isHexDigitAny(at(p+3)):
					cur = append(cur, hexNibble(at(p+2))<<4|hexNibble(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch e := at(p); e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case c == '"':
					if p+1 < n && !isSpace(at(p+1)) {
						return nil, false
					}
					done = true
				case p >= n:
					return nil, false
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == '\'':
					if p+1 < n && !isSpace(at(p+1)) {
						return nil, false
					}
					done = true
				case p >= n:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch {
				case p >= n || c == ' ' || c == '\n' || c == '\r' || c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if p < n {
				p++
			}
		}
		args = append(args, string(cur))
	}
}

// hexNibble is the value of the hex digit c.
func hexNibble(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
