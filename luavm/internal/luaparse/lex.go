package luaparse

import (
	"strconv"
	"strings"
)

// The lexer is Lua 5.1's llex.c, function for function, so that it
// accepts what Redis's Lua accepts and fails where it fails, with the
// same message, line and token text.
//
// Redis's Lua is built without LUA_COMPAT_LSTR's nesting check: "[[a [[b]]"
// is the string "a [[b", as redis-server 7.0 reads it.

// Tokens past the single characters, in llex.h's order (ORDER RESERVED).
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	// other terminal symbols
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

const firstReserved = tkAnd

// tokenNames is luaX_tokens.
var tokenNames = [...]string{
	"and", "break", "do", "else", "elseif",
	"end", "false", "for", "function", "if",
	"in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=",
	"<number>", "<name>", "<string>", "<eof>",
}

var reserved = func() map[string]int {
	m := make(map[string]int, tkWhile-tkAnd+1)
	for t := tkAnd; t <= tkWhile; t++ {
		m[tokenNames[t-firstReserved]] = t
	}
	return m
}()

// eoz is the end of the input (EOZ).
const eoz = -1

// maxInt is llimits.h's MAX_INT: the most lines a chunk may have.
const maxInt = 1<<31 - 1 - 2

type token struct {
	tok  int
	str  string  // tkName, tkString
	num  float64 // tkNumber
	line int     // the line it starts on (the AST's positions)
}

// syntaxError is a compile error, its text final: "chunk:line: message".
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return e.msg }

type lexer struct {
	src       []byte
	pos       int           // of the byte after current
	fill      func() []byte // more of the chunk when src is read (nil: none)
	current   int           // the byte being looked at, or eoz
	line      int           // linenumber
	lastline  int           // the line of the last token consumed
	chunk     string
	buf       []byte // the text of the token being read (Mbuffer)
	t         token  // the current token
	lookahead token  // tkEOS when there is none
}

func (ls *lexer) init(src []byte, chunk string) {
	ls.src = src
	ls.chunk = chunk
	ls.line = 1
	ls.lastline = 1
	ls.lookahead.tok = tkEOS
	ls.next()
}

func (ls *lexer) next() {
	for ls.pos >= len(ls.src) && ls.fill != nil {
		if ls.src, ls.pos = ls.fill(), 0; len(ls.src) == 0 {
			ls.fill = nil // luaZ_fill: an empty piece ends the chunk
		}
	}
	if ls.pos < len(ls.src) {
		ls.current = int(ls.src[ls.pos])
		ls.pos++
	} else {
		ls.pos = len(ls.src) + 1
		ls.current = eoz
	}
}

func (ls *lexer) save(c int) { ls.buf = append(ls.buf, byte(c)) }

func (ls *lexer) saveAndNext() {
	ls.save(ls.current)
	ls.next()
}

func (ls *lexer) currIsNewline() bool { return ls.current == '\n' || ls.current == '\r' }

// C's character classes, in the C locale (Redis sets only LC_COLLATE).
func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c int) bool { return isAlpha(c) || isDigit(c) }
func isSpace(c int) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func isCntrl(c int) bool { return c >= 0 && c < 32 || c == 127 }

// token2str is luaX_token2str.
func token2str(tok int) string {
	if tok < firstReserved {
		if isCntrl(tok) {
			return "char(" + strconv.Itoa(tok) + ")"
		}
		return string([]byte{byte(tok)})
	}
	return tokenNames[tok-firstReserved]
}

// txtToken is the text an error shows for tok: a name, string or number
// shows what the lexer last read, as C reads it (up to a NUL byte).
func (ls *lexer) txtToken(tok int) string {
	switch tok {
	case tkName, tkString, tkNumber:
		s := string(ls.buf)
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return s
	}
	return token2str(tok)
}

// lexError is luaX_lexerror: tok 0 names no token.
func (ls *lexer) lexError(msg string, tok int) {
	msg = ls.chunk + ":" + strconv.Itoa(ls.line) + ": " + msg
	if tok != 0 {
		msg += " near '" + ls.txtToken(tok) + "'"
	}
	panic(&syntaxError{msg})
}

// syntaxError is luaX_syntaxerror: near the current token.
func (ls *lexer) syntaxError(msg string) { ls.lexError(msg, ls.t.tok) }

func (ls *lexer) incLineNumber() {
	old := ls.current
	ls.next() // skip '\n' or '\r'
	if ls.currIsNewline() && ls.current != old {
		ls.next() // skip "\n\r" or "\r\n"
	}
	ls.line++
	if ls.line >= maxInt {
		ls.syntaxError("chunk has too many lines")
	}
}

// checkNext reads the current byte if it is in set. As C's strchr,
// which finds a string's terminating NUL, it takes a NUL byte for any
// set: "1\x00.5" is the number 1 (its text "1\x00.5" read as C does),
// and ".\x00" is "..".
func (ls *lexer) checkNext(set string) bool {
	if ls.current == eoz || ls.current != 0 && strings.IndexByte(set, byte(ls.current)) < 0 {
		return false
	}
	ls.saveAndNext()
	return true
}

// readNumeral reads a number as Lua 5.1 does: digits and dots, an
// exponent, then any letters, digits and underscores, all handed to
// luaO_str2d.
func (ls *lexer) readNumeral(t *token) {
	for {
		ls.saveAndNext()
		if !isDigit(ls.current) && ls.current != '.' {
			break
		}
	}
	if ls.checkNext("Ee") {
		ls.checkNext("+-")
	}
	for isAlnum(ls.current) || ls.current == '_' {
		ls.saveAndNext()
	}
	f, ok := Str2d(string(ls.buf))
	if !ok {
		ls.lexError("malformed number", tkNumber)
	}
	t.num = f
}

// skipSep reads a long bracket's '[' or ']' and its '='s: their count,
// or -count-1 when the second bracket does not follow.
func (ls *lexer) skipSep() int {
	count := 0
	s := ls.current
	ls.saveAndNext()
	for ls.current == '=' {
		ls.saveAndNext()
		count++
	}
	if ls.current == s {
		return count
	}
	return -count - 1
}

// readLongString reads a long string, or a long comment when t is nil.
func (ls *lexer) readLongString(t *token, sep int) {
	ls.saveAndNext() // skip the second '['
	if ls.currIsNewline() {
		ls.incLineNumber() // a string starting with a newline skips it
	}
	for {
		switch ls.current {
		case eoz:
			if t != nil {
				ls.lexError("unfinished long string", tkEOS)
			}
			ls.lexError("unfinished long comment", tkEOS)
		case ']':
			if ls.skipSep() == sep {
				ls.saveAndNext() // skip the second ']'
				if t != nil {
					t.str = string(ls.buf[2+sep : len(ls.buf)-(2+sep)])
				}
				return
			}
		case '\n', '\r':
			ls.save('\n')
			ls.incLineNumber()
			if t == nil {
				ls.buf = ls.buf[:0] // a comment's text is not kept
			}
		default:
			if t != nil {
				ls.saveAndNext()
			} else {
				ls.next()
			}
		}
	}
}

func (ls *lexer) readString(del int, t *token) {
	ls.saveAndNext()
	for ls.current != del {
		switch ls.current {
		case eoz:
			ls.lexError("unfinished string", tkEOS)
		case '\n', '\r':
			ls.lexError("unfinished string", tkString)
		case '\\':
			var c int
			ls.next() // the '\\' is not kept
			switch ls.current {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				ls.save('\n')
				ls.incLineNumber()
				continue
			case eoz:
				continue // the error comes at the loop's next turn
			default:
				if !isDigit(ls.current) {
					ls.saveAndNext() // \\, \", \' and \? (and any other)
				} else { // \ddd
					c = 0
					for i := 0; i < 3 && isDigit(ls.current); i++ {
						c = 10*c + (ls.current - '0')
						ls.next()
					}
					if c > 255 {
						ls.lexError("escape sequence too large", tkString)
					}
					ls.save(c)
				}
				continue
			}
			ls.save(c)
			ls.next()
		default:
			ls.saveAndNext()
		}
	}
	ls.saveAndNext() // skip the delimiter
	t.str = string(ls.buf[1 : len(ls.buf)-1])
}

// llex reads the next token into t.
func (ls *lexer) llex(t *token) int {
	ls.buf = ls.buf[:0]
	for {
		t.line = ls.line
		switch ls.current {
		case '\n', '\r':
			ls.incLineNumber()
			continue
		case '-':
			ls.next()
			if ls.current != '-' {
				return '-'
			}
			// a comment
			ls.next()
			if ls.current == '[' {
				sep := ls.skipSep()
				ls.buf = ls.buf[:0]
				if sep >= 0 {
					ls.readLongString(nil, sep)
					ls.buf = ls.buf[:0]
					continue
				}
			}
			for !ls.currIsNewline() && ls.current != eoz {
				ls.next()
			}
			continue
		case '[':
			sep := ls.skipSep()
			if sep >= 0 {
				ls.readLongString(t, sep)
				return tkString
			} else if sep == -1 {
				return '['
			}
			ls.lexError("invalid long string delimiter", tkString)
		case '=':
			return ls.orEquals('=', tkEq)
		case '<':
			return ls.orEquals('<', tkLe)
		case '>':
			return ls.orEquals('>', tkGe)
		case '~':
			return ls.orEquals('~', tkNe)
		case '"', '\'':
			ls.readString(ls.current, t)
			return tkString
		case '.':
			ls.saveAndNext()
			if ls.checkNext(".") {
				if ls.checkNext(".") {
					return tkDots
				}
				return tkConcat
			} else if !isDigit(ls.current) {
				return '.'
			}
			ls.readNumeral(t)
			return tkNumber
		case eoz:
			return tkEOS
		default:
			if isSpace(ls.current) {
				ls.next()
				continue
			} else if isDigit(ls.current) {
				ls.readNumeral(t)
				return tkNumber
			} else if isAlpha(ls.current) || ls.current == '_' {
				for {
					ls.saveAndNext()
					if !isAlnum(ls.current) && ls.current != '_' {
						break
					}
				}
				if r, ok := reserved[string(ls.buf)]; ok {
					return r
				}
				t.str = string(ls.buf)
				return tkName
			}
			c := ls.current
			ls.next()
			return c // a single-character token
		}
	}
}

// orEquals reads c, or c followed by '=' as the token double.
func (ls *lexer) orEquals(c, double int) int {
	ls.next()
	if ls.current != '=' {
		return c
	}
	ls.next()
	return double
}

// advance is luaX_next.
func (ls *lexer) advance() {
	ls.lastline = ls.line
	if ls.lookahead.tok != tkEOS {
		ls.t = ls.lookahead
		ls.lookahead.tok = tkEOS
		return
	}
	ls.t = token{}
	ls.t.tok = ls.llex(&ls.t)
}

// peek is luaX_lookahead.
func (ls *lexer) peek() {
	ls.lookahead = token{}
	ls.lookahead.tok = ls.llex(&ls.lookahead)
}
