package luavm

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// luaWriter is an engine.Writer that turns a command's reply into a Lua
// value, as Redis's redisProtocolToLuaType does for the script client
// (RESP2 unless the script called redis.setresp(3)):
// integer → number, bulk → string, null → false (RESP3: nil),
// status → {ok=...}, error → {err=...}, array → table.
type luaWriter struct {
	L      *lua.LState
	resp   int
	stack  []lframe
	result lua.LValue
	topErr bool
}

type lframe struct {
	t      *lua.LTable
	left   int
	kind   byte // 'a' array, 'm' map, 's' set
	i      int
	key    lua.LValue
	hasKey bool
	wrap   string // RESP3: wrap the table as {map=t} / {set=t}
}

var _ engine.Writer = (*luaWriter)(nil)

func (w *luaWriter) Proto() int { return w.resp }

func (w *luaWriter) emit(v lua.LValue) {
	for {
		if len(w.stack) == 0 {
			w.result = v
			return
		}
		f := &w.stack[len(w.stack)-1]
		switch f.kind {
		case 'a':
			f.i++
			f.t.RawSetInt(f.i, v)
			f.left--
		case 'm':
			if !f.hasKey {
				f.key, f.hasKey = v, true
				return
			}
			f.t.RawSet(f.key, v)
			f.hasKey = false
			f.left--
		case 's':
			f.t.RawSet(v, lua.LTrue)
			f.left--
		}
		if f.left > 0 {
			return
		}
		// aggregate complete: pop it and emit it into its parent
		var done lua.LValue = f.t
		if f.wrap != "" {
			outer := w.L.NewTable()
			outer.RawSetString(f.wrap, f.t)
			done = outer
		}
		w.stack = w.stack[:len(w.stack)-1]
		v = done
	}
}

func (w *luaWriter) open(n int, kind byte, wrap string) {
	t := w.L.CreateTable(n, 0)
	if n <= 0 {
		var v lua.LValue = t
		if wrap != "" {
			outer := w.L.NewTable()
			outer.RawSetString(wrap, t)
			v = outer
		}
		w.emit(v)
		return
	}
	w.stack = append(w.stack, lframe{t: t, left: n, kind: kind, wrap: wrap})
}

func (w *luaWriter) WriteStatus(s string) {
	t := w.L.NewTable()
	t.RawSetString("ok", lua.LString(s))
	w.emit(t)
}

func (w *luaWriter) WriteError(msg string) {
	if len(w.stack) == 0 {
		w.topErr = true
	}
	w.emit(errorTable(w.L, "-"+msg))
}

// WriteInt emits n; the numbers commands reply most (DEL's, PEXPIRE's,
// EXISTS') come boxed already, so that they cost no allocation.
func (w *luaWriter) WriteInt(n int64) {
	if n >= -2 && n < int64(len(smallNumbers))-2 {
		w.emit(smallNumbers[n+2])
		return
	}
	w.emit(lua.LNumber(n))
}

// smallNumbers holds -2..253 as Lua values (an LNumber in an interface
// is otherwise a new allocation; shared, they are immutable).
var smallNumbers = func() (t [256]lua.LValue) {
	for i := range t {
		t[i] = lua.LNumber(i - 2)
	}
	return t
}()

func (w *luaWriter) WriteBulk(b []byte)       { w.emit(lua.LString(b)) }
func (w *luaWriter) WriteBulkString(s string) { w.emit(lua.LString(s)) }

// WriteVerbatim is a string in RESP2 (the reply is a bulk string there),
// and Redis's {verbatim_string={format=f, string=s}} in RESP3.
func (w *luaWriter) WriteVerbatim(format, s string) {
	if w.resp != 3 {
		w.emit(lua.LString(s))
		return
	}
	v := w.L.CreateTable(0, 2)
	v.RawSetString("string", lua.LString(s))
	v.RawSetString("format", lua.LString(format))
	t := w.L.CreateTable(0, 1)
	t.RawSetString("verbatim_string", v)
	w.emit(t)
}

// WriteBigNumber is Redis's RESP3 big number in Lua: {big_number=s}. (No
// command tumbler runs replies with one.)
func (w *luaWriter) WriteBigNumber(s string) {
	t := w.L.CreateTable(0, 1)
	t.RawSetString("big_number", lua.LString(s))
	w.emit(t)
}

func (w *luaWriter) null() {
	if w.resp == 3 {
		w.emit(lua.LNil)
	} else {
		w.emit(lua.LFalse)
	}
}

func (w *luaWriter) WriteNull()      { w.null() }
func (w *luaWriter) WriteNullArray() { w.null() }
func (w *luaWriter) WriteArray(n int) {
	w.open(n, 'a', "")
}

func (w *luaWriter) WriteMap(n int) {
	if w.resp == 3 {
		w.open(n, 'm', "map")
		return
	}
	w.open(2*n, 'a', "")
}

func (w *luaWriter) WriteSet(n int) {
	if w.resp == 3 {
		w.open(n, 's', "set")
		return
	}
	w.open(n, 'a', "")
}

func (w *luaWriter) WriteBool(v bool) {
	if w.resp == 3 {
		w.emit(lua.LBool(v))
		return
	}
	if v {
		w.emit(lua.LNumber(1))
	} else {
		w.emit(lua.LNumber(0))
	}
}

func (w *luaWriter) WriteDouble(f float64) {
	if w.resp == 3 {
		t := w.L.NewTable()
		t.RawSetString("double", lua.LNumber(f))
		w.emit(t)
		return
	}
	w.emit(lua.LString(formatDouble(f)))
}

// formatDouble is the text of a double reply in RESP2, as Redis 7.0's
// addReplyDouble writes it and a script reads it.
func formatDouble(f float64) string { return engine.FormatDouble(f) }

// Redis's luaReplyToRedisReply walks a reply on Lua's stack, and writes
// "reached lua stack limit" in place of a value it cannot make room for:
// lua_checkstack(4) fails past LUAI_MAXCSTACK (8000) slots. The reply
// starts at replyStackBase slots; an array's element takes one more than
// its table, a map's value three (the field, the key, the value) and its
// key four (a copy), a set's member three. So arrays nest 7994 deep, maps
// and sets 2664.
const replyStackBase = 2

// writeLuaValue writes a script's return value as Redis's
// luaReplyToRedisReply does: string → bulk, number → integer (truncated),
// true → 1, false/nil → null, {err=} → error, {ok=} → status,
// {double=} → double, other tables → arrays cut at the first nil. After
// redis.setresp(3) (resp 3) booleans are written as booleans. slots is
// how much of Lua's stack Redis would use with v on top (replyStackBase
// for the script's result); pre, the run's constructors' sizes, orders
// a map or set as Lua 5.1 would (presize.go).
func writeLuaValue(w engine.Writer, v lua.LValue, resp, slots int, pre *presizes) {
	if slots+4 > luaMaxCStack {
		w.WriteError("ERR reached lua stack limit")
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.WriteBulkString(string(v))
	case lua.LNumber:
		w.WriteInt(toInt(float64(v)))
	case lua.LBool:
		switch {
		case resp == 3:
			w.WriteBool(bool(v))
		case bool(v):
			w.WriteInt(1)
		default:
			w.WriteNull()
		}
	case *lua.LTable:
		// Redis copies an error's and a status's text as C strings
		// (sdsnew): a NUL ends them.
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			msg := strings.Trim(cString(string(e)), "\r\n")
			if v.RawGetString(ignoreStatsField) == lua.LTrue {
				engine.WriteErrorNoStats(w, msg)
			} else {
				w.WriteError(msg)
			}
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.WriteStatus(strings.NewReplacer("\r", " ", "\n", " ").Replace(cString(string(s))))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.WriteDouble(float64(d))
			return
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			w.WriteBigNumber(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b)))
			return
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, okf := vt.RawGetString("format").(lua.LString)
			s, oks := vt.RawGetString("string").(lua.LString)
			if okf && oks {
				w.WriteVerbatim(string(f), string(s))
				return
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var keys, vals []lua.LValue
			lua51Pairs(m, pre, func(k, val lua.LValue) { // lua_next's order, as Redis walks it
				keys = append(keys, k)
				vals = append(vals, val)
			})
			w.WriteMap(len(keys))
			for i := range keys {
				writeLuaValue(w, keys[i], resp, slots+4, pre)
				writeLuaValue(w, vals[i], resp, slots+3, pre)
			}
			return
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			var keys []lua.LValue
			lua51Pairs(s, pre, func(k, _ lua.LValue) { keys = append(keys, k) })
			w.WriteSet(len(keys))
			for _, k := range keys {
				writeLuaValue(w, k, resp, slots+3, pre)
			}
			return
		}
		n := 0 // up to the first nil, past the array part's bound too
		for rawGetInt(v, n+1) != lua.LNil {
			n++
		}
		w.WriteArray(n)
		for i := 1; i <= n; i++ {
			writeLuaValue(w, rawGetInt(v, i), resp, slots+1, pre)
		}
	default:
		w.WriteNull()
	}
}

// toInt converts a Lua number as C's (long long) cast does, saturating
// where C's behaviour is undefined.
func toInt(f float64) int64 {
	switch {
	case f != f:
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MinInt64 // what x86 produces for out-of-range casts
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
