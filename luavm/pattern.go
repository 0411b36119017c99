package luavm

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's pattern matching (lstrlib.c), under string.find, match,
// gmatch (and its old name gfind) and gsub. gopher-lua compiles patterns
// to its own machine, which differs from Lua 5.1 in ways scripts see: no
// %f frontier, a trailing '%' is no error, '^' anchors in gmatch (5.1
// matches it literally there), a gsub replacement table holding true is
// no error, find past the end of the string finds nothing. This is a
// line-by-line port of the C matcher, errors included, over byte indexes
// instead of pointers.
//
// Two bounds the C code lacks: a match that runs long checks the script's
// context every matchTick steps, so SCRIPT KILL, the busy-script timeout
// and the memory bound stop it (in Redis a backtracking pattern over a
// long string cannot be killed); and recursion, which in C is bounded by
// the pattern's length and the C stack, stops at maxMatchDepth with Lua
// 5.2's "pattern too complex" where the C stack would overflow.

const (
	maxCaptures   = 32 // LUA_MAXCAPTURES
	capUnfinished = -1
	capPosition   = -2
	maxMatchDepth = 100000
	matchTick     = 1 << 14
	patSpecials   = "^$*+?.([%-"
)

type matchState struct {
	L     *lua.LState
	src   string
	pat   string // up to its first NUL, where C's string ends
	level int    // captures, finished or not
	cap   [maxCaptures]struct{ init, len int }
	steps int
	depth int
	limit int // gsub: the longest result it may build (0: no gsub)
}

func newMatchState(L *lua.LState, src, pat string) *matchState {
	return &matchState{L: L, src: src, pat: cString(pat)}
}

// p is the pattern's byte at i, 0 past its end (C's terminator).
func (ms *matchState) p(i int) byte {
	if i < len(ms.pat) {
		return ms.pat[i]
	}
	return 0
}

// s is the subject's byte at i, 0 at its end (Lua strings end in a NUL,
// which matchbalance and %f read).
func (ms *matchState) s(i int) byte {
	if i < len(ms.src) {
		return ms.src[i]
	}
	return 0
}

// tick counts a step and, every matchTick steps, stops the match if the
// script has been stopped.
func (ms *matchState) tick() {
	ms.steps++
	if ms.steps%matchTick == 0 {
		if ctx := ms.L.Context(); ctx != nil && ctx.Err() != nil {
			ms.L.RaiseError("%s", ctx.Err().Error())
		}
	}
}

func (ms *matchState) checkCapture(l byte) int {
	i := int(l) - '1'
	if i < 0 || i >= ms.level || ms.cap[i].len == capUnfinished {
		cError(ms.L, "invalid capture index")
	}
	return i
}

func (ms *matchState) captureToClose() int {
	for level := ms.level - 1; level >= 0; level-- {
		if ms.cap[level].len == capUnfinished {
			return level
		}
	}
	cError(ms.L, "invalid pattern capture")
	return 0
}

// classEnd is the index just past the single-character class at p.
func (ms *matchState) classEnd(p int) int {
	c := ms.p(p)
	p++
	switch c {
	case '%':
		if ms.p(p) == 0 {
			cError(ms.L, "%s", "malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		if ms.p(p) == '^' {
			p++
		}
		for { // look for a ']'
			if ms.p(p) == 0 {
				cError(ms.L, "malformed pattern (missing ']')")
			}
			c := ms.pat[p]
			p++
			if c == '%' && ms.p(p) != 0 {
				p++ // skip escapes (e.g. '%]')
			}
			if ms.p(p) == ']' {
				break
			}
		}
		return p + 1
	}
	return p
}

// matchClass is C's match_class in the C locale: ASCII classes only.
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = isDigit(c)
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = c > 32 && c < 127 && !isAlnum(c)
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isAlnum(c)
	case 'x':
		res = isHex(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'a' && cl <= 'z' {
		return res
	}
	return !res
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// matchBracketClass matches c against the set [...] from p (its '[') to
// ec (its ']').
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	sig := true
	if ms.p(p+1) == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case ms.pat[p] == '%':
			p++
			if matchClass(c, ms.p(p)) {
				return sig
			}
		case ms.p(p+1) == '-' && p+2 < ec:
			p += 2
			if ms.pat[p-2] <= c && c <= ms.pat[p] {
				return sig
			}
		case ms.pat[p] == c:
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(c byte, p, ep int) bool {
	switch ms.p(p) {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.p(p+1))
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	}
	return ms.p(p) == c
}

func (ms *matchState) matchBalance(s, p int) int {
	if ms.p(p) == 0 || ms.p(p+1) == 0 {
		cError(ms.L, "unbalanced pattern")
	}
	if ms.s(s) != ms.pat[p] {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.tick()
		if ms.src[s] == e {
			if cont--; cont == 0 {
				return s + 1
			}
		} else if ms.src[s] == b {
			cont++
		}
	}
	return -1 // the string ends out of balance
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0 // the most repetitions of the item
	for s+i < len(ms.src) && ms.singleMatch(ms.src[s+i], p, ep) {
		ms.tick()
		i++
	}
	for ; i >= 0; i-- { // fewer and fewer, until the rest matches
		if res := ms.match(s+i, ep+1); res >= 0 {
			return res
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if res := ms.match(s, ep+1); res >= 0 {
			return res
		}
		if s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep) {
			s++ // one more repetition
		} else {
			return -1
		}
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		cError(ms.L, "too many captures")
	}
	ms.cap[ms.level].init, ms.cap[ms.level].len = s, what
	ms.level++
	res := ms.match(s, p)
	if res < 0 {
		ms.level-- // undo the capture
	}
	return res
}

func (ms *matchState) endCapture(s, p int) int {
	l := ms.captureToClose()
	ms.cap[l].len = s - ms.cap[l].init
	res := ms.match(s, p)
	if res < 0 {
		ms.cap[l].len = capUnfinished
	}
	return res
}

func (ms *matchState) matchCapture(s int, l byte) int {
	i := ms.checkCapture(l)
	n, init := ms.cap[i].len, ms.cap[i].init
	// A position capture's length is negative: as a size_t in C it is
	// larger than any rest of the string, so it never matches.
	if n >= 0 && len(ms.src)-s >= n && ms.src[init:init+n] == ms.src[s:s+n] {
		return s + n
	}
	return -1
}

// match matches the pattern from p against the subject from s: the end
// of the match, or -1.
func (ms *matchState) match(s, p int) int {
	if ms.depth++; ms.depth > maxMatchDepth {
		cError(ms.L, "pattern too complex")
	}
	res := ms.doMatch(s, p)
	ms.depth--
	return res
}

func (ms *matchState) doMatch(s, p int) int {
	for {
		ms.tick()
		switch ms.p(p) {
		case '(': // start capture
			if ms.p(p+1) == ')' { // position capture
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')': // end capture
			return ms.endCapture(s, p+1)
		case '%':
			switch ms.p(p + 1) {
			case 'b': // balanced string
				if s = ms.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case 'f': // frontier
				p += 2
				if ms.p(p) != '[' {
					cError(ms.L, "%s", "missing '[' after '%f' in pattern")
				}
				ep := ms.classEnd(p)
				var previous byte
				if s > 0 {
					previous = ms.src[s-1]
				}
				if ms.matchBracketClass(previous, p, ep-1) || !ms.matchBracketClass(ms.s(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			}
			if isDigit(ms.p(p + 1)) { // a capture's text again (%1-%9)
				if s = ms.matchCapture(s, ms.p(p+1)); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		case 0: // end of pattern
			return s
		case '$':
			if p+1 >= len(ms.pat) { // the last character: end of subject
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		}
		// a single-character class, perhaps with a repetition
		ep := ms.classEnd(p)
		m := s < len(ms.src) && ms.singleMatch(ms.src[s], p, ep)
		switch ms.p(ep) {
		case '?':
			if m {
				if res := ms.match(s+1, ep+1); res >= 0 {
					return res
				}
			}
			p = ep + 1
		case '*':
			return ms.maxExpand(s, p, ep)
		case '+':
			if !m {
				return -1
			}
			return ms.maxExpand(s+1, p, ep)
		case '-':
			return ms.minExpand(s, p, ep)
		default:
			if !m {
				return -1
			}
			s++
			p = ep
		}
	}
}

// capture is capture i of a match of [s, e): the whole match when the
// pattern has no captures and i is 0.
func (ms *matchState) capture(i, s, e int) lua.LValue {
	if i >= ms.level {
		if i != 0 {
			cError(ms.L, "invalid capture index")
		}
		return lua.LString(ms.src[s:e])
	}
	c := ms.cap[i]
	switch c.len {
	case capUnfinished:
		cError(ms.L, "unfinished capture")
	case capPosition:
		return lua.LNumber(c.init + 1)
	}
	return lua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures of a match of [s, e), or the whole
// match if there are none and whole is set; it returns how many.
func (ms *matchState) pushCaptures(s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		ms.L.Push(ms.capture(i, s, e))
	}
	return n
}

// posrelat turns a negative string position into one from the start.
func posrelat(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	return max(pos, 0)
}

func strFind(L *lua.LState) int  { return strFindAux(L, true) }
func strMatch(L *lua.LState) int { return strFindAux(L, false) }

func strFindAux(L *lua.LState, find bool) int {
	s := cCheckString(L, 1)
	p := cCheckString(L, 2)
	init := posrelat(cOptInteger(L, 3, 1), len(s)) - 1
	if init < 0 {
		init = 0
	} else if init > int64(len(s)) {
		init = int64(len(s))
	}
	if find && (L.ToBool(4) || !strings.ContainsAny(cString(p), patSpecials)) {
		// a plain search, for the whole of p (NULs included)
		if i := strings.Index(s[init:], p); i >= 0 {
			start := int(init) + i
			L.Push(lua.LNumber(start + 1))
			L.Push(lua.LNumber(start + len(p)))
			return 2
		}
	} else {
		ms := newMatchState(L, s, p)
		anchor := ms.p(0) == '^'
		if anchor {
			ms.pat = ms.pat[1:]
		}
		for s1 := int(init); ; s1++ {
			ms.level = 0
			if res := ms.match(s1, 0); res >= 0 {
				if find {
					L.Push(lua.LNumber(s1 + 1)) // start
					L.Push(lua.LNumber(res))    // end
					return ms.pushCaptures(0, 0, false) + 2
				}
				return ms.pushCaptures(s1, res, true)
			}
			if s1 >= len(s) || anchor {
				break
			}
		}
	}
	L.Push(lua.LNil) // not found
	return 1
}

// strGmatch is string.gmatch: unlike find, match and gsub it takes '^' as
// an ordinary character.
func strGmatch(L *lua.LState) int {
	s := cCheckString(L, 1)
	p := cCheckString(L, 2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		ms := newMatchState(L, s, p)
		for src := pos; src <= len(s); src++ {
			ms.level = 0
			if e := ms.match(src, 0); e >= 0 {
				pos = e
				if e == src { // an empty match: go on at least one position
					pos++
				}
				return ms.pushCaptures(src, e, true)
			}
		}
		return 0 // not found
	}))
	return 1
}

// strGsub returns string.gsub; sizeLimit bounds the string it builds
// (one call the memory watchdog cannot see until it returns).
func strGsub(sizeLimit func() int) lua.LGFunction {
	return func(L *lua.LState) int {
		src := cCheckString(L, 1)
		p := cCheckString(L, 2)
		repl := L.Get(3)
		tr := repl.Type()
		maxS := int64(len(src) + 1)
		if L.GetTop() >= 4 && L.Get(4) != lua.LNil {
			maxS = int64(int32(cCheckInteger(L, 4))) // luaL_optint: a C int
		}
		if tr != lua.LTNumber && tr != lua.LTString && tr != lua.LTFunction && tr != lua.LTTable {
			cArgError(L, 3, "string/function/table expected")
		}
		ms := newMatchState(L, src, p)
		anchor := ms.p(0) == '^'
		if anchor {
			ms.pat = ms.pat[1:]
		}
		ms.limit = sizeLimit()
		var b []byte
		n, s := int64(0), 0
		for n < maxS {
			ms.level = 0
			e := ms.match(s, 0)
			if e >= 0 {
				n++
				b = ms.addValue(b, s, e, repl)
			}
			if e >= 0 && e > s { // a non-empty match: skip it
				s = e
			} else if s < len(src) {
				b = append(b, src[s])
				s++
			} else {
				break
			}
			if anchor {
				break
			}
		}
		b = ms.grow(b, src[s:])
		L.Push(lua.LString(b))
		L.Push(lua.LNumber(n))
		return 2
	}
}

// addValue appends the replacement of the match [s, e) to b.
func (ms *matchState) addValue(b []byte, s, e int, repl lua.LValue) []byte {
	L := ms.L
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		return ms.addString(b, s, e, string(r))
	case lua.LNumber:
		return ms.addString(b, s, e, number14g(float64(r)))
	case *lua.LFunction:
		top := L.GetTop()
		L.Push(r)
		L.Call(ms.pushCaptures(s, e, true), 1)
		v = L.Get(-1)
		L.SetTop(top)
	case *lua.LTable:
		v = L.GetTable(r, ms.capture(0, s, e))
	}
	switch v := v.(type) {
	case lua.LString:
		return ms.grow(b, string(v))
	case lua.LNumber:
		return ms.grow(b, number14g(float64(v)))
	}
	if !lua.LVAsBool(v) { // nil or false: keep the original text
		return ms.grow(b, ms.src[s:e])
	}
	cError(L, "invalid replacement value (a %s)", v.Type().String())
	return b
}

// grow appends piece to gsub's result, refusing a result past the size
// limit before building it: one replacement may repeat a long match
// many times ('%0%0%0...').
func (ms *matchState) grow(b []byte, piece string) []byte {
	if len(b)+len(piece) > ms.limit {
		ms.L.RaiseError("not enough memory")
	}
	return append(b, piece...)
}

// addString appends a replacement string: %0 is the whole match, %1-%9
// a capture, '%' before anything else that character (a '%' at the end,
// the string's NUL).
func (ms *matchState) addString(b []byte, s, e int, news string) []byte {
	for i := 0; i < len(news); i++ {
		ms.tick()
		if news[i] != '%' { // the literal run up to the next escape, at once
			j := strings.IndexByte(news[i:], '%')
			if j < 0 {
				j = len(news) - i
			}
			b = ms.grow(b, news[i:i+j])
			i += j - 1
			continue
		}
		i++ // skip the escape
		c := byte(0)
		if i < len(news) {
			c = news[i]
		}
		switch {
		case !isDigit(c):
			b = ms.grow(b, string(c))
		case c == '0':
			b = ms.grow(b, ms.src[s:e])
		default:
			switch v := ms.capture(int(c-'1'), s, e).(type) {
			case lua.LNumber:
				b = ms.grow(b, number14g(float64(v)))
			case lua.LString:
				b = ms.grow(b, string(v))
			}
		}
	}
	return b
}
