package luavm

import (
	"github.com/tumblerdb/tumbler/engine"
)

// This file runs the well-known lock scripts without Lua.
//
// A script whose tokens match one of the templates below (whitespace,
// comments, semicolons, quote style, the case of command names and the
// names of locals aside) gets a native program when it is compiled. The
// program makes the same redis.call calls, through the same dispatcher,
// in the same order, so replies, keyspace effects, statistics and hooks
// are those of the Lua run. A program only runs when it can prove no call
// will fail (the key holds a string or nothing, numeric arguments parse,
// no call would be refused: Ctx.CallRefused); otherwise it declines
// before any call and the script runs in Lua, which produces Redis's
// error replies. The Lua run remains the reference: the
// differential tests run every template both ways.

// RunNative implements engine.NativeRunner: it runs a cached script's
// native program, if it has one and the program accepts the call.
func (vm *VM) RunNative(c *engine.Ctx, sha, body []byte, keys, argv [][]byte) bool {
	if vm.luaOnly || c.Script.ReadOnly {
		return false
	}
	var s *script
	if body != nil {
		var errMsg string
		if s, errMsg = vm.load(body, c.Prepared); errMsg != "" {
			return false // Run replies the compile error
		}
	} else {
		s = vm.lookupRecent(sha)
	}
	if s == nil || s.native == nil {
		return false // not cached (Run replies NOSCRIPT), or no program
	}
	nr := &vm.nat
	nr.c, nr.cmds, nr.ints = c, s.native.cmds, s.native.ints
	ran := s.native.prog(nr, keys, argv)
	nr.c = nil
	if ran {
		vm.nativeRuns.Add(1)
	}
	return ran
}

// nativeProg runs a matched script. It reports false, having done
// nothing, when the script must run in Lua instead.
type nativeProg func(n *native, keys, argv [][]byte) bool

// native is one native run's state: the script's context, the captured
// names of the commands it calls (as the script spells them), a reply
// capture and a reusable argument vector.
type native struct {
	c    *engine.Ctx
	cmds [][]byte
	ints []int64
	rep  capture
	args [4][]byte
}

type nativeTemplate struct {
	name string
	toks []string
	prog nativeProg
}

// The templates. $cmd:x is a string literal naming command x (any case);
// $id:v an identifier, the same one at each use of v; $int an integer
// literal, negative ones included.
var nativeTemplates = []nativeTemplate{
	// Compare-and-delete: redis.io's distributed-lock release, bsm/redislock,
	// go-zero, redsync v1-v3, and most hand-written lock code.
	{"compare-and-delete", lexTemplate(`if redis . call ( $cmd:get , KEYS [ 1 ] ) == ARGV [ 1 ] then return redis . call ( $cmd:del , KEYS [ 1 ] ) else return $int end`), progCompareCall(false)},
	// Compare-and-pexpire: bsm/redislock refresh, redsync touch.
	{"compare-and-pexpire", lexTemplate(`if redis . call ( $cmd:get , KEYS [ 1 ] ) == ARGV [ 1 ] then return redis . call ( $cmd:pexpire , KEYS [ 1 ] , ARGV [ 2 ] ) else return $int end`), progCompareCall(true)},
	// Compare-and-pttl: bsm/redislock TTL.
	{"compare-and-pttl", lexTemplate(`if redis . call ( $cmd:get , KEYS [ 1 ] ) == ARGV [ 1 ] then return redis . call ( $cmd:pttl , KEYS [ 1 ] ) else return $int end`), progCompareCall(false)},
	// redsync v4 release: -1 when the key is gone.
	{"redsync-delete", lexTemplate(`local $id:v = redis . call ( $cmd:get , KEYS [ 1 ] ) if $id:v == ARGV [ 1 ] then return redis . call ( $cmd:del , KEYS [ 1 ] ) elseif $id:v == false then return $int else return $int end`), progRedsyncDelete},
	// redis-py Lock release (LUA_RELEASE_SCRIPT).
	{"redis-py-release", lexTemplate(`local $id:t = redis . call ( $cmd:get , KEYS [ 1 ] ) if not $id:t or $id:t ~= ARGV [ 1 ] then return $int end redis . call ( $cmd:del , KEYS [ 1 ] ) return $int`), progGuardedCall(false)},
	// redis-py Lock reacquire (LUA_REACQUIRE_SCRIPT).
	{"redis-py-reacquire", lexTemplate(`local $id:t = redis . call ( $cmd:get , KEYS [ 1 ] ) if not $id:t or $id:t ~= ARGV [ 1 ] then return $int end redis . call ( $cmd:pexpire , KEYS [ 1 ] , ARGV [ 2 ] ) return $int`), progGuardedCall(true)},
}

// maxNativeTTL bounds the expire arguments a native program accepts: far
// below where PEXPIRE or SET PX could overflow and fail.
const maxNativeTTL = 1 << 40

// validTTLArg reports whether PEXPIRE would accept b without an error.
func validTTLArg(b []byte) bool {
	v, ok := engine.ParseInt(b)
	return ok && v > -maxNativeTTL && v < maxNativeTTL
}

// get runs GET key as the script spells it: ok is false when the reply is
// not a bulk or a null (which the caller's checks rule out).
func (n *native) get(name, key []byte) (val []byte, found, ok bool) {
	n.rep.reset()
	n.c.Call(append(n.args[:0], name, key), &n.rep)
	switch n.rep.kind {
	case 'b':
		return n.rep.b, true, true
	case 'n':
		return nil, false, true
	}
	return nil, false, false
}

// callable reports whether a program's calls, GET key and then its
// second command (key, and ARGV[2] withTTL), would run as asked rather
// than be refused (ACL, min-replicas-to-write, the host's write gate): a
// refused call's error is Lua's to reply, with its script and line.
func (n *native) callable(key []byte, withTTL bool, argv [][]byte) bool {
	if n.c.CallsFree() { // (the template's commands are known, their arity right)
		return true
	}
	// rename-command may have given a name the template spells to another
	// command (get renamed, ttl renamed get): Lua calls that one, whose
	// reply the program does not expect.
	for _, name := range n.cmds {
		if own := n.c.Eng.CommandName(name); !engine.EqFold(name, string(own)) {
			return false
		}
	}
	if n.c.CallRefused(append(n.args[:0], n.cmds[0], key)) {
		return false
	}
	a := append(n.args[:0], n.cmds[1], key)
	if withTTL {
		a = append(a, argv[1])
	}
	return !n.c.CallRefused(a)
}

// call runs a command expected to reply with an integer.
func (n *native) call(args ...[]byte) (int64, bool) {
	n.rep.reset()
	n.c.Call(append(n.args[:0], args...), &n.rep)
	return n.rep.n, n.rep.kind == 'i'
}

// progCompareCall: if GET key == ARGV[1] then return CMD(key [, ARGV[2]])
// else return N.
func progCompareCall(withTTL bool) nativeProg {
	return func(n *native, keys, argv [][]byte) bool {
		if len(keys) < 1 || len(argv) < 1 || !n.c.StringOrAbsent(keys[0]) {
			return false
		}
		if withTTL && (len(argv) < 2 || !validTTLArg(argv[1])) {
			return false
		}
		if !n.callable(keys[0], withTTL, argv) {
			return false
		}
		val, found, ok := n.get(n.cmds[0], keys[0])
		if !ok {
			panic("luavm: native GET on a checked key did not reply a bulk or null")
		}
		if !found || string(val) != string(argv[0]) {
			n.c.W.WriteInt(n.ints[0])
			return true
		}
		var r int64
		if withTTL {
			r, ok = n.call(n.cmds[1], keys[0], argv[1])
		} else {
			r, ok = n.call(n.cmds[1], keys[0])
		}
		if !ok {
			panic("luavm: native call did not reply an integer")
		}
		n.c.W.WriteInt(r)
		return true
	}
}

// progRedsyncDelete: local v = GET key; v == ARGV[1] → DEL; v == false →
// -N1; else N2.
func progRedsyncDelete(n *native, keys, argv [][]byte) bool {
	if len(keys) < 1 || len(argv) < 1 || !n.c.StringOrAbsent(keys[0]) || !n.callable(keys[0], false, argv) {
		return false
	}
	val, found, ok := n.get(n.cmds[0], keys[0])
	if !ok {
		panic("luavm: native GET on a checked key did not reply a bulk or null")
	}
	switch {
	case found && string(val) == string(argv[0]):
		r, ok := n.call(n.cmds[1], keys[0])
		if !ok {
			panic("luavm: native DEL did not reply an integer")
		}
		n.c.W.WriteInt(r)
	case !found:
		n.c.W.WriteInt(n.ints[0])
	default:
		n.c.W.WriteInt(n.ints[1])
	}
	return true
}

// progGuardedCall: local t = GET key; if not t or t ~= ARGV[1] then return
// N1 end; CMD(key [, ARGV[2]]); return N2.
func progGuardedCall(withTTL bool) nativeProg {
	return func(n *native, keys, argv [][]byte) bool {
		if len(keys) < 1 || len(argv) < 1 || !n.c.StringOrAbsent(keys[0]) {
			return false
		}
		if withTTL && (len(argv) < 2 || !validTTLArg(argv[1])) {
			return false
		}
		if !n.callable(keys[0], withTTL, argv) {
			return false
		}
		val, found, ok := n.get(n.cmds[0], keys[0])
		if !ok {
			panic("luavm: native GET on a checked key did not reply a bulk or null")
		}
		if !found || string(val) != string(argv[0]) {
			n.c.W.WriteInt(n.ints[0])
			return true
		}
		if withTTL {
			_, ok = n.call(n.cmds[1], keys[0], argv[1])
		} else {
			_, ok = n.call(n.cmds[1], keys[0])
		}
		if !ok {
			panic("luavm: native call did not reply an integer")
		}
		n.c.W.WriteInt(n.ints[1])
		return true
	}
}

// nativeMatch is a compiled script's native program, if any.
type nativeMatch struct {
	name string
	prog nativeProg
	cmds [][]byte
	ints []int64
}

// maxTemplateToks is the most tokens a template has.
var maxTemplateToks = func() int {
	n := 0
	for _, t := range nativeTemplates {
		n = max(n, len(t.toks))
	}
	return n
}()

// matchNative finds the template body's tokens match.
func matchNative(body []byte) *nativeMatch {
	toks, ok := lexLua(body)
	if !ok {
		return nil
	}
	for i := range nativeTemplates {
		t := &nativeTemplates[i]
		if m := t.match(toks); m != nil {
			return m
		}
	}
	return nil
}

func (t *nativeTemplate) match(toks []luaTok) *nativeMatch {
	if len(toks) != len(t.toks) {
		return nil
	}
	m := &nativeMatch{name: t.name, prog: t.prog}
	ids := map[string]string{}
	for i, want := range t.toks {
		got := toks[i]
		switch {
		case len(want) > 5 && want[:5] == "$cmd:":
			if got.kind != tokString || !eqFoldStr(got.text, want[5:]) {
				return nil
			}
			m.cmds = append(m.cmds, []byte(got.text))
		case len(want) > 4 && want[:4] == "$id:":
			if got.kind != tokName || luaKeywords[got.text] {
				return nil
			}
			if prev, seen := ids[want[4:]]; seen && prev != got.text {
				return nil
			} else if !seen {
				for _, other := range ids {
					if other == got.text { // two template names, one identifier
						return nil
					}
				}
				ids[want[4:]] = got.text
			}
		case want == "$int":
			v, ok := engine.ParseInt([]byte(got.text))
			if got.kind != tokNumber || !ok || v <= -1<<40 || v >= 1<<40 {
				return nil
			}
			m.ints = append(m.ints, v)
		default:
			if got.text != want || got.kind == tokString {
				return nil
			}
		}
	}
	return m
}

func eqFoldStr(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// ---- a small Lua lexer, enough to compare scripts token by token ----

type tokKind uint8

const (
	tokName tokKind = iota
	tokString
	tokNumber
	tokPunct
)

type luaTok struct {
	kind tokKind
	text string // a string token's contents, without quotes
}

var luaKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
	"false": true, "for": true, "function": true, "if": true, "in": true, "local": true,
	"nil": true, "not": true, "or": true, "repeat": true, "return": true, "then": true,
	"true": true, "until": true, "while": true,
	// globals a template relies on: a local of these names would change meaning
	"redis": true, "KEYS": true, "ARGV": true,
}

// lexLua splits a script into tokens, dropping whitespace, line comments
// and semicolons. It gives up (ok false) on anything a template never
// contains: long strings or comments, escapes, non-decimal numbers, more
// tokens than the longest template has (a large script would cost tens
// of bytes a token to match nothing).
func lexLua(b []byte) (toks []luaTok, ok bool) {
	s := string(b)
	for i := 0; i < len(s); {
		if len(toks) > maxTemplateToks {
			return nil, false
		}
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v' || ch == ';':
			i++
		case ch == '-' && i+1 < len(s) && s[i+1] == '-':
			if i+2 < len(s) && s[i+2] == '[' {
				return nil, false
			}
			for i < len(s) && s[i] != '\n' && s[i] != '\r' { // Lua ends it at either
				i++
			}
		case ch == '"' || ch == '\'':
			j := i + 1
			for j < len(s) && s[j] != ch {
				if s[j] == '\\' || s[j] == '\n' {
					return nil, false
				}
				j++
			}
			if j >= len(s) {
				return nil, false
			}
			toks = append(toks, luaTok{tokString, s[i+1 : j]})
			i = j + 1
		case ch >= '0' && ch <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j < len(s) && (s[j] == '.' || s[j] == 'x' || s[j] == 'X' || s[j] == 'e' || s[j] == 'E' || isNameChar(s[j])) {
				return nil, false
			}
			if j-i > 1 && s[i] == '0' {
				return nil, false
			}
			text := s[i:j]
			// "return -1": a negative literal, one token
			if k := len(toks); k >= 2 && toks[k-1] == (luaTok{tokPunct, "-"}) && toks[k-2] == (luaTok{tokName, "return"}) {
				toks = toks[:k-1]
				text = "-" + text
			}
			toks = append(toks, luaTok{tokNumber, text})
			i = j
		case isNameStart(ch):
			j := i
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			toks = append(toks, luaTok{tokName, s[i:j]})
			i = j
		case (ch == '=' || ch == '~' || ch == '<' || ch == '>') && i+1 < len(s) && s[i+1] == '=':
			toks = append(toks, luaTok{tokPunct, s[i : i+2]})
			i += 2
		case ch == '.' && i+1 < len(s) && (s[i+1] == '.' || s[i+1] >= '0' && s[i+1] <= '9'):
			return nil, false // ".." or a number (".5")
		case ch == '[' && i+1 < len(s) && (s[i+1] == '[' || s[i+1] == '='):
			return nil, false
		case ch < 0x20 || ch >= 0x7f:
			return nil, false
		default:
			toks = append(toks, luaTok{tokPunct, s[i : i+1]})
			i++
		}
	}
	return toks, true
}

func isNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || '0' <= c && c <= '9' }

// lexTemplate splits a template on spaces.
func lexTemplate(t string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(t); i++ {
		if i == len(t) || t[i] == ' ' {
			if start >= 0 {
				out = append(out, t[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// capture records one reply of a command a native program calls.
type capture struct {
	kind byte // 'b' bulk, 'n' null, 'i' integer, 's' status, 'e' error, 'o' other
	b    []byte
	n    int64
}

var _ engine.CopyingWriter = (*capture)(nil)

func (w *capture) reset()                    { w.kind, w.b, w.n = 0, w.b[:0], 0 }
func (w *capture) CopiesReplies()            {} // (engine.CopyingWriter: it copies a bulk)
func (w *capture) Proto() int                { return 2 }
func (w *capture) WriteStatus(string)        { w.kind = 's' }
func (w *capture) WriteError(string)         { w.kind = 'e' }
func (w *capture) WriteInt(n int64)          { w.kind, w.n = 'i', n }
func (w *capture) WriteBulk(b []byte)        { w.kind, w.b = 'b', append(w.b[:0], b...) }
func (w *capture) WriteBulkString(s string)  { w.kind, w.b = 'b', append(w.b[:0], s...) }
func (w *capture) WriteNull()                { w.kind = 'n' }
func (w *capture) WriteNullArray()           { w.kind = 'o' }
func (w *capture) WriteArray(int)            { w.kind = 'o' }
func (w *capture) WriteMap(int)              { w.kind = 'o' }
func (w *capture) WriteSet(int)              { w.kind = 'o' }
func (w *capture) WriteBool(bool)            { w.kind = 'o' }
func (w *capture) WriteDouble(float64)       { w.kind = 'o' }
func (w *capture) WriteVerbatim(_, _ string) { w.kind = 'o' }
func (w *capture) WriteBigNumber(_ string)   { w.kind = 'o' }
