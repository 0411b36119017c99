package engine

// SplitArgs splits a line into words exactly as Redis's sdssplitargs
// (src/sds.c): words are separated by spaces, tabs, CR and LF; "double
// quotes" take the escapes \n \r \t \b \a \xHH and \<any>; 'single
// quotes' take only \'. ok is false for unbalanced quotes or a closing
// quote not followed by a space. A FUNCTION LOAD library's shebang line is
// split with it.
func SplitArgs(line string) (args []string, ok bool) {
	words, _, ok := AppendSplitArgs(nil, nil, []byte(line))
	if !ok {
		return nil, false
	}
	for _, w := range words {
		args = append(args, string(w))
	}
	return args, true
}

// AppendSplitArgs is SplitArgs without allocating a string a word: it
// appends each word of line to arena and a slice of it to args, and
// returns both. The server splits inline requests with it, as Redis's
// processInlineBuffer does with sdssplitargs; a word stays valid while
// arena's backing array is not reused (appending past its capacity moves
// later words to a new one, and leaves the earlier ones where they are).
// On !ok, args and arena are returned as they were given.
func AppendSplitArgs(args [][]byte, arena, line []byte) ([][]byte, []byte, bool) {
	args0, arena0 := args, arena
	if arena == nil {
		arena = make([]byte, 0, 64) // an empty word is an empty slice, not nil
	}
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
			return args, arena, true
		}
		start := len(arena)
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHexDigitAny(at(p+2)) && isHexDigitAny(at(p+3)):
					arena = append(arena, hexNibble(at(p+2))<<4|hexNibble(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch e := at(p); e {
					case 'n':
						arena = append(arena, '\n')
					case 'r':
						arena = append(arena, '\r')
					case 't':
						arena = append(arena, '\t')
					case 'b':
						arena = append(arena, '\b')
					case 'a':
						arena = append(arena, '\a')
					default:
						arena = append(arena, e)
					}
				case c == '"':
					if p+1 < n && !isSpace(at(p+1)) {
						return args0, arena0, false
					}
					done = true
				case p >= n:
					return args0, arena0, false
				default:
					arena = append(arena, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					arena = append(arena, '\'')
				case c == '\'':
					if p+1 < n && !isSpace(at(p+1)) {
						return args0, arena0, false
					}
					done = true
				case p >= n:
					return args0, arena0, false
				default:
					arena = append(arena, c)
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
					// the rest of an unquoted run at once
					j := p + 1
					for j < n {
						if c := line[j]; c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '"' || c == '\'' {
							break
						}
						j++
					}
					arena = append(arena, line[p:j]...)
					p = j - 1 // (moved past the run below)
				}
			}
			if p < n {
				p++
			}
		}
		args = append(args, arena[start:len(arena):len(arena)])
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
