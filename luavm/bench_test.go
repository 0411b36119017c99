package luavm

import (
	"testing"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// discard is an engine.Writer that drops replies, so the benchmarks measure
// the script path alone.
type discard struct{}

func (discard) Proto() int                { return 2 }
func (discard) WriteStatus(string)        {}
func (discard) WriteError(string)         {}
func (discard) WriteInt(int64)            {}
func (discard) WriteBulk([]byte)          {}
func (discard) WriteBulkString(string)    {}
func (discard) WriteNull()                {}
func (discard) WriteNullArray()           {}
func (discard) WriteArray(int)            {}
func (discard) WriteMap(int)              {}
func (discard) WriteSet(int)              {}
func (discard) WriteBool(bool)            {}
func (discard) WriteDouble(float64)       {}
func (discard) WriteVerbatim(_, _ string) {}
func (discard) WriteBigNumber(_ string)   {}

const extend = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`

// token is 32 bytes, as tumbler-bench's tokens are.
const token = "0000a1b2c3d4e5f60000000000000001"

func args(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}

// benchEngine returns an engine with a VM, the release and extend scripts
// loaded, and one held lock "lock:held".
func benchEngine(b *testing.B) *engine.Engine {
	e := engine.New(engine.Config{})
	Install(e)
	for _, c := range [][]string{
		{"SCRIPT", "LOAD", release},
		{"SCRIPT", "LOAD", extend},
		{"SET", "lock:held", token, "PX", "30000", "NX"},
	} {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: args(c...), W: w})
		if s := w.String(); s == "" || s[0] == '-' {
			b.Fatalf("%q: %s", c, s)
		}
	}
	return e
}

// expect runs args once and fails the benchmark unless the reply is want:
// a benchmark of the wrong path measures nothing.
func expect(b *testing.B, e *engine.Engine, want string, a [][]byte) {
	b.Helper()
	w := &enginetest.TextWriter{}
	e.Exec(&engine.Ctx{Args: a, W: w})
	if w.String() != want {
		b.Fatalf("%q = %s, want %s", a, w.String(), want)
	}
}

// BenchmarkEvalSHA_ReleaseHeld is a whole lock cycle through the engine:
// SET NX PX takes the lock, EVALSHA of the release script deletes it.
// Compare with engine's BenchmarkSetNXPX for the SET alone.
func BenchmarkEvalSHA_ReleaseHeld(b *testing.B) { benchReleaseCycle(b, benchEngine(b)) }

// benchReleaseCycle takes the lock with SET NX PX and releases it with
// EVALSHA of the release script, b.N times, on e.
func benchReleaseCycle(b *testing.B, e *engine.Engine) {
	set := args("SET", "lock:1", token, "PX", "30000", "NX")
	rel := args("EVALSHA", SHA1Hex([]byte(release)), "1", "lock:1", token)
	expect(b, e, "+OK", set)
	expect(b, e, ":1", rel)
	cs := &engine.Ctx{Args: set, W: discard{}}
	cr := &engine.Ctx{Args: rel, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs.Args = set
		e.Exec(cs)
		cr.Args = rel
		e.Exec(cr)
	}
}

// BenchmarkEvalSHA_ReleaseMissing is the release script on a key that is
// not there (the lock expired): one GET inside the script, no delete.
func BenchmarkEvalSHA_ReleaseMissing(b *testing.B) {
	e := benchEngine(b)
	rel := args("EVALSHA", SHA1Hex([]byte(release)), "1", "lock:absent", token)
	expect(b, e, ":0", rel)
	c := &engine.Ctx{Args: rel, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Args = rel
		e.Exec(c)
	}
}

// BenchmarkEval_ReleaseMissingByBody is the same script sent with EVAL, as
// clients do before they learn the SHA: the cache lookup is by body.
func BenchmarkEval_ReleaseMissingByBody(b *testing.B) {
	e := benchEngine(b)
	rel := args("EVAL", release, "1", "lock:absent", token)
	expect(b, e, ":0", rel)
	c := &engine.Ctx{Args: rel, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Args = rel
		e.Exec(c)
	}
}

// BenchmarkEvalSHA_ExtendHeld is a watchdog tick: the compare-and-PEXPIRE
// script on a held lock (GET, compare, PEXPIRE reschedules the deadline).
func BenchmarkEvalSHA_ExtendHeld(b *testing.B) {
	e := benchEngine(b)
	ext := args("EVALSHA", SHA1Hex([]byte(extend)), "1", "lock:held", token, "30000")
	expect(b, e, ":1", ext)
	c := &engine.Ctx{Args: ext, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Args = ext
		e.Exec(c)
	}
}

// BenchmarkEvalSHA_LuaExtendHeld is BenchmarkEvalSHA_ExtendHeld forced
// through the interpreter (SetLuaOnly): the per-run cost of the Lua path,
// including its bookkeeping (the memory watchdog's among it).
func BenchmarkEvalSHA_LuaExtendHeld(b *testing.B) {
	e := engine.New(engine.Config{})
	Install(e).SetLuaOnly(true)
	expect(b, e, "$"+SHA1Hex([]byte(extend)), args("SCRIPT", "LOAD", extend))
	expect(b, e, "+OK", args("SET", "lock:held", token, "PX", "30000"))
	ext := args("EVALSHA", SHA1Hex([]byte(extend)), "1", "lock:held", token, "30000")
	expect(b, e, ":1", ext)
	c := &engine.Ctx{Args: ext, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Args = ext
		e.Exec(c)
	}
}

// BenchmarkEvalSHA_LuaReleaseHeld is BenchmarkEvalSHA_ReleaseHeld with
// the release script run in Lua (SetLuaOnly), not natively: the
// difference between the two is what the native path saves.
func BenchmarkEvalSHA_LuaReleaseHeld(b *testing.B) {
	e := engine.New(engine.Config{})
	Install(e).SetLuaOnly(true)
	expect(b, e, "$"+SHA1Hex([]byte(release)), args("SCRIPT", "LOAD", release))
	benchReleaseCycle(b, e)
}

// BenchmarkEvalSHA_Concat is a script that builds key names with .., as
// Redisson's read-write lock scripts do: every operand that is not a
// string literal goes through concatOperand (coerce.go).
func BenchmarkEvalSHA_Concat(b *testing.B) {
	benchEvalSHA(b, `local k = KEYS[1] .. ':' .. ARGV[1] .. ':rwlock_timeout:' .. ARGV[2] return #k`, ":62",
		"1", "{lock}", "6a1c0f3e-1f6a-4c3e-9b1e-3f0c5b2a7d10:1", "2")
}

// BenchmarkEvalSHA_Table10k is a moderate script, under the memory
// bound's limit, that builds a table of 10,000 string keys: what the
// watchdog (memory.go) may cost a script that allocates.
func BenchmarkEvalSHA_Table10k(b *testing.B) {
	benchEvalSHA(b, `local t = {} for i = 1, 10000 do t['k'..i] = i end return 1`, ":1", "0")
}

// BenchmarkEvalSHA_Loop is a script of 300,000 instructions that
// allocates nothing: the interpreter's cost per instruction, which
// includes the check of the run's context (memory.go).
func BenchmarkEvalSHA_Loop(b *testing.B) {
	benchEvalSHA(b, `local n = 0 for i = 1, 100000 do n = n + i end return n`, ":5000050000", "0")
}

// benchEvalSHA runs EVALSHA of script with numkeys, keys and args,
// whose reply must be want.
func benchEvalSHA(b *testing.B, script, want string, numkeysKeysArgs ...string) {
	e := engine.New(engine.Config{})
	Install(e)
	sha := SHA1Hex([]byte(script))
	expect(b, e, "$"+sha, args("SCRIPT", "LOAD", script))
	a := args(append([]string{"EVALSHA", sha}, numkeysKeysArgs...)...)
	expect(b, e, want, a)
	c := &engine.Ctx{Args: a, W: discard{}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.Exec(c)
	}
}

// BenchmarkPairs is a script that builds a table of n string keys and
// walks it with pairs (walk) or does not (build, the same script without
// the loop): the difference is what a traversal costs.
func BenchmarkPairs(b *testing.B) {
	const script = `local n, walk = tonumber(ARGV[1]), ARGV[2] == '1'
local t = {}
for i = 1, n do t['k' .. i] = i end
local c = 0
if walk then for k, v in pairs(t) do c = c + 1 end end
return c`
	e := engine.New(engine.Config{})
	Install(e)
	sha := SHA1Hex([]byte(script))
	expect(b, e, "$"+sha, args("SCRIPT", "LOAD", script))
	for _, n := range []string{"10", "1000", "100000"} {
		for _, walk := range []string{"0", "1"} {
			name := "keys=" + n + "/build"
			if walk == "1" {
				name = "keys=" + n + "/walk"
			}
			b.Run(name, func(b *testing.B) {
				a := args("EVALSHA", sha, "0", n, walk)
				c := &engine.Ctx{Args: a, W: discard{}}
				b.ReportAllocs()
				for range b.N {
					e.Exec(c)
				}
			})
		}
	}
}
