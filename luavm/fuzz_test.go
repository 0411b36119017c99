package luavm

import (
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// shapeWriter checks that a reply is one well-formed RESP value: every
// aggregate gets exactly the elements it announced. A simple string or
// error may carry CR or LF here: the server's writer turns them into
// spaces, as Redis does (redcon.AppendError, AppendString).
type shapeWriter struct {
	t       *testing.T
	pending []int // elements still due, innermost last
	values  int   // top-level values written
	proto   int
	last    string // the last bulk string
}

// value records the end of a complete value, which may complete the
// aggregates around it.
func (w *shapeWriter) value() {
	for len(w.pending) > 0 {
		n := len(w.pending) - 1
		if w.pending[n]--; w.pending[n] > 0 {
			return
		}
		w.pending = w.pending[:n]
	}
	w.values++
}

func (w *shapeWriter) aggregate(n int) {
	switch {
	case n < 0:
		w.t.Fatalf("negative aggregate length %d", n)
	case n == 0:
		w.value()
	default:
		w.pending = append(w.pending, n)
	}
}

func (w *shapeWriter) Proto() int                { return w.proto }
func (w *shapeWriter) WriteStatus(string)        { w.value() }
func (w *shapeWriter) WriteError(string)         { w.value() }
func (w *shapeWriter) WriteInt(int64)            { w.value() }
func (w *shapeWriter) WriteBulk([]byte)          { w.value() }
func (w *shapeWriter) WriteBulkString(s string)  { w.last = s; w.value() }
func (w *shapeWriter) WriteNull()                { w.value() }
func (w *shapeWriter) WriteNullArray()           { w.value() }
func (w *shapeWriter) WriteArray(n int)          { w.aggregate(n) }
func (w *shapeWriter) WriteMap(n int)            { w.aggregate(2 * n) }
func (w *shapeWriter) WriteSet(n int)            { w.aggregate(n) }
func (w *shapeWriter) WriteBool(bool)            { w.value() }
func (w *shapeWriter) WriteDouble(float64)       { w.value() }
func (w *shapeWriter) WriteVerbatim(_, _ string) { w.value() }
func (w *shapeWriter) WriteBigNumber(_ string)   { w.value() }

// done fails unless exactly one complete value was written.
func (w *shapeWriter) done(what string) {
	if len(w.pending) != 0 || w.values != 1 {
		w.t.Fatalf("%s: %d values written, %v elements still due", what, w.values, w.pending)
	}
}

// fuzzRunLimit bounds one fuzzed script: past it the script is killed,
// written or not.
const fuzzRunLimit = 100 * time.Millisecond

// FuzzScript runs arbitrary script bodies with arbitrary KEYS and ARGV
// through EVAL, in RESP2 and RESP3, the interpreter and the native path.
// It must never panic, every run must end (runaway scripts are killed
// after fuzzRunLimit, memory hogs by a small lua-memory-limit), every
// reply must be one well-formed value, and the next script must run.
func FuzzScript(f *testing.F) {
	for _, s := range []string{
		release, extend, "return 1", "return {1, 'two', {3}, false, true}", "return redis.status_reply('OK')",
		"return redis.error_reply('MY error')", "return redis.call('set', KEYS[1], ARGV[1])",
		"return redis.pcall('incr', KEYS[1])", "redis.setresp(3) return redis.call('hgetall', KEYS[1])",
		"return {err='x'}", "return {ok='y'}", "error({err='bad'})", "error('s')", "return 1.5",
		"return cjson.encode({a={1,2}})", "return string.rep('x', 10)", "local t = {} t[1] = t return t",
		"while true do end", "return redis.sha1hex(ARGV[1])", "x = 1", "return tostring(KEYS)",
		"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "return unpack({1, 2, 3})",
	} {
		f.Add(s, "k", "v", false)
		f.Add(s, "k", "v", true)
	}
	e := engine.New(engine.Config{})
	vm := Install(e)
	vm.SetMemoryLimit(16 << 20)
	f.Cleanup(vm.Close)
	f.Fuzz(func(t *testing.T, body, key, arg string, resp3 bool) {
		if len(body) > 4096 {
			return
		}
		proto := 2
		if resp3 {
			proto = 3
		}
		for i, args := range [][]string{
			{"EVAL", body, "1", key, arg},
			{"EVAL", "return 'next'", "0"},
		} {
			w := &shapeWriter{t: t, proto: proto}
			b := make([][]byte, len(args))
			for j, a := range args {
				b[j] = []byte(a)
			}
			timer := time.AfterFunc(fuzzRunLimit, vm.Kill)
			e.Exec(&engine.Ctx{Args: b, W: w})
			timer.Stop()
			w.done(args[0])
			if i == 1 && w.last != "next" {
				t.Fatal("the next script did not run")
			}
		}
		if msg := e.CheckInvariants(); msg != "" {
			t.Fatal(msg)
		}
	})
}
