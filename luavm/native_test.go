package luavm

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/engine/enginetest"
	"github.com/tumblerdb/tumbler/expiry"
	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
)

// Lock scripts as their clients send them, byte for byte (paths are in
// each client's source), and the native template each must get (""
// when it must run in Lua).
var clientScripts = []struct {
	from, body, native string
}{
	{"redis.io distributed locks / bench", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "compare-and-delete"},
	{"redis.io distributed locks (multi-line)", "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend\n", "compare-and-delete"},
	{"bench extend", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`, "compare-and-pexpire"},
	{"bsm/redislock v0.9.4 redislock.go luaRelease", `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`, "compare-and-delete"},
	{"bsm/redislock v0.9.4 redislock.go luaRefresh", `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`, "compare-and-pexpire"},
	{"bsm/redislock v0.9.4 redislock.go luaPTTL", `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`, "compare-and-pttl"},
	{"go-zero v1.10.3 core/stores/redis/delscript.lua", "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"DEL\", KEYS[1])\nelse\n    return 0\nend", "compare-and-delete"},
	{"redsync v4.15.0 scripts.go deleteScript", "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n", "redsync-delete"},
	{"redsync v4.15.0 scripts.go touchScript", "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n", "compare-and-pexpire"},
	{"redsync v4.15.0 scripts.go touchWithSetNXScript", "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n", ""},
	{"redis-py 4.3.4 redis/lock.py LUA_RELEASE_SCRIPT", "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('del', KEYS[1])\n        return 1\n    ", "redis-py-release"},
	{"redis-py 4.3.4 redis/lock.py LUA_REACQUIRE_SCRIPT", "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('pexpire', KEYS[1], ARGV[2])\n        return 1\n    ", "redis-py-reacquire"},
	// near misses: each differs from a template in meaning
	{"other comparison", `if redis.call("get",KEYS[1]) ~= ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, ""},
	{"other key", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[2]) else return 0 end`, ""},
	{"other command", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("unlink",KEYS[1]) else return 0 end`, ""},
	{"pcall", `if redis.pcall("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, ""},
	{"float literal", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0.5 end`, ""},
	{"string literal return", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return "0" end`, ""},
	{"two locals one name", "local a = redis.call('get', KEYS[1]) if not a or b ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1", ""},
	{"local shadows redis", "local redis = redis.call('get', KEYS[1]) if not redis or redis ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1", ""},
	// a comment ends at a CR as at a LF: what follows it is code
	{"code after a comment's CR", "-- x\rredis.call('set','pwn','1')\nif redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", ""},
	{"return after a comment's CR", "-- x\rif true then return 42 end\nif redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", ""},
	{"CRLF line ends and a comment", "-- release\r\nif redis.call(\"get\",KEYS[1]) == ARGV[1] then\r\n  return redis.call(\"del\",KEYS[1])\r\nelse\r\n  return 0\r\nend\r\n", "compare-and-delete"},
	{"escape in command name", `if redis.call("g\et",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, ""},
}

func TestNative_ClientScriptsMatchTheirTemplates(t *testing.T) {
	for _, cs := range clientScripts {
		m := matchNative([]byte(cs.body))
		got := ""
		if m != nil {
			got = m.name
		}
		if got != cs.native {
			t.Errorf("%s: native %q, want %q", cs.from, got, cs.native)
		}
	}
}

// Every client script, natively and in Lua, over the states a lock key can
// be in and the argument shapes a caller can send: the same replies
// (RESP2 and RESP3 callers), the same keyspace, the same statistics.
func TestNative_SameAsLua(t *testing.T) {
	type state struct {
		name  string
		setup [][]string
	}
	states := []state{
		{"absent", nil},
		{"held by us", [][]string{{"SET", "lock", "tok", "PX", "30000"}}},
		{"held by other", [][]string{{"SET", "lock", "other", "PX", "30000"}}},
		{"held without ttl", [][]string{{"SET", "lock", "tok"}}},
		{"expired", [][]string{{"SET", "lock", "tok", "PX", "10"}}},
		{"empty token", [][]string{{"SET", "lock", ""}}},
	}
	argSets := [][]string{
		{"1", "lock", "tok", "30000"},
		{"1", "lock", "tok", "30000", "1"},
		{"1", "lock", "other", "30000"},
		{"1", "lock", "", "30000"},
		{"1", "lock", "tok"},
		{"1", "lock", "tok", "abc"},
		{"1", "lock", "tok", "-5"},
		{"1", "lock", "tok", "0"},
		{"1", "lock", "tok", "99999999999999999999"},
		{"1", "lock", "tok", "9223372036854775807"},
		{"1", "lock"},
		{"0", "tok", "30000"},
		{"2", "lock", "lock2", "tok", "30000"},
	}
	for _, cs := range clientScripts {
		if cs.native == "" {
			continue
		}
		for _, st := range states {
			for _, args := range argSets {
				for _, proto := range []int{2, 3} {
					for _, evalsha := range []bool{false, true} {
						name := fmt.Sprintf("%s/%s/%v/RESP%d/sha=%v", cs.from, st.name, args, proto, evalsha)
						var results [2]string
						for i, luaOnly := range []bool{false, true} {
							clk := expiry.NewManualClock(time.UnixMilli(1_700_000_000_000))
							e := engine.New(engine.Config{Clock: clk})
							vm := Install(e)
							vm.SetLuaOnly(luaOnly)
							run := func(p int, a ...string) string {
								w := &enginetest.TextWriter{P: p}
								b := make([][]byte, len(a))
								for j := range a {
									b[j] = []byte(a[j])
								}
								e.Exec(&engine.Ctx{Args: b, W: w})
								return w.String()
							}
							for _, s := range st.setup {
								run(2, s...)
							}
							clk.Advance(20 * time.Millisecond)
							var reply string
							if evalsha {
								sha := run(2, "SCRIPT", "LOAD", cs.body)
								reply = run(proto, append([]string{"EVALSHA", strings.TrimPrefix(sha, "$")}, args...)...)
							} else {
								reply = run(proto, append([]string{"EVAL", cs.body}, args...)...)
							}
							stats := fmt.Sprintf("commands %d hits %d misses %d expired %d scripts %d",
								e.Stats.Commands.Load(), e.Stats.KeyspaceHits.Load(), e.Stats.KeyspaceMisses.Load(), e.Stats.ExpiredKeys.Load(), e.Stats.ScriptRuns.Load())
							keys := run(2, "KEYS", "*")
							state := run(2, "MGET", "lock", "lock2", "tok") + " " + run(2, "PTTL", "lock") + " " + run(2, "PTTL", "lock2")
							results[i] = fmt.Sprintf("reply %s\n%s\nkeys %s\nstate %s", reply, stats, keys, state)
							if msg := e.CheckInvariants(); msg != "" {
								t.Fatalf("%s: %s", name, msg)
							}
							// Its memory watchdog, once started, holds it
							// until then: the thousands of runs here kept
							// 3.5 GB live, and later tests measuring the heap
							// (TestMemoryLimit_*) ran beside it.
							vm.Close()
						}
						if results[0] != results[1] {
							t.Errorf("%s:\nnative:\n%s\nlua:\n%s", name, results[0], results[1])
						}
					}
				}
			}
		}
	}
}

// The native program really runs, and SetLuaOnly turns it off.
func TestNative_RunsWithoutLua(t *testing.T) {
	f := newFixture(t)
	f.expect("+OK", "SET", "lock", "tok")
	f.expect(":1", "EVAL", release, "1", "lock", "tok")
	if got := f.vm.NativeRuns(); got != 1 {
		t.Fatalf("native runs %d after one release, want 1", got)
	}
	f.vm.SetLuaOnly(true)
	f.expect("+OK", "SET", "lock", "tok")
	f.expect(":1", "EVAL", release, "1", "lock", "tok")
	if got := f.vm.NativeRuns(); got != 1 {
		t.Fatalf("native runs %d with SetLuaOnly(true), want still 1", got)
	}
}

// TestNative_RecentScriptsAndFlush: EVALSHA finds its script among the
// recently run ones (lookupRecent) in any case of the SHA, through more
// scripts than the recent list holds, and never after SCRIPT FLUSH.
func TestNative_RecentScriptsAndFlush(t *testing.T) {
	f := newFixture(t)
	var shas []string
	for i := 0; i < 6; i++ { // more than len(vm.recent)
		body := fmt.Sprintf(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return %d end`, i)
		shas = append(shas, SHA1Hex([]byte(body)))
		f.expect("$"+shas[i], "SCRIPT", "LOAD", body)
	}
	for round := 0; round < 3; round++ {
		for i, sha := range shas {
			if round == 1 {
				sha = strings.ToUpper(sha)
			}
			f.expect("+OK", "SET", "lock", "tok")
			f.expect(":1", "EVALSHA", sha, "1", "lock", "tok")
			f.expect(fmt.Sprintf(":%d", i), "EVALSHA", sha, "1", "lock", "tok")
		}
	}
	if got := f.vm.NativeRuns(); got != 36 {
		t.Fatalf("native runs %d, want 36", got)
	}
	f.expect("+OK", "SCRIPT", "FLUSH")
	for _, sha := range shas {
		f.expect("-NOSCRIPT No matching script. Please use EVAL.", "EVALSHA", sha, "1", "lock", "tok")
	}
}

// IsLockScript (the event loop's test of what may run on it): true only
// for a cached script with a native program, by body or by SHA in either
// case; nothing is compiled or cached by asking, and a SHA of the wrong
// length is simply not found.
func TestIsLockScript(t *testing.T) {
	vm := New()
	for _, cs := range clientScripts {
		body := []byte(cs.body)
		sha := SHA1Hex(body)
		if vm.IsLockScript(nil, body) || vm.IsLockScript([]byte(sha), nil) {
			t.Fatalf("%s: a lock script before it is cached", cs.from)
		}
		if vm.Exists([]byte(sha)) {
			t.Fatalf("%s: IsLockScript cached the script", cs.from)
		}
		if _, msg := vm.Load(body, nil); msg != "" {
			t.Fatalf("%s: %s", cs.from, msg)
		}
		want := cs.native != ""
		if got := vm.IsLockScript(nil, body); got != want {
			t.Errorf("%s: IsLockScript by body %v, want %v", cs.from, got, want)
		}
		if got := vm.IsLockScript([]byte(strings.ToUpper(sha)), nil); got != want {
			t.Errorf("%s: IsLockScript by SHA %v, want %v", cs.from, got, want)
		}
	}
	for _, sha := range []string{"", "abc", strings.Repeat("a", 41), strings.Repeat("f", 400)} {
		if vm.IsLockScript([]byte(sha), nil) {
			t.Errorf("IsLockScript(%q) is true", sha)
		}
	}
}

// IsLockScript remembers the lock scripts it found (lockSeen): asked
// again, about more scripts than it remembers, in turn, it answers the
// same, without allocating once it has seen them; after SCRIPT FLUSH a
// lock script it found stays one (run, it fails at once or compiles).
func TestIsLockScript_Remembered(t *testing.T) {
	vm := New()
	type ask struct {
		sha, body []byte
		want      bool
	}
	var asks []ask
	for _, cs := range clientScripts {
		body := []byte(cs.body)
		if _, msg := vm.Load(body, nil); msg != "" {
			t.Fatalf("%s: %s", cs.from, msg)
		}
		sha := []byte(SHA1Hex(body))
		asks = append(asks, ask{sha, nil, cs.native != ""}, ask{nil, body, cs.native != ""})
	}
	if len(asks) <= 2*len(vm.lockSeen) {
		t.Fatalf("%d questions: too few to replace remembered scripts", len(asks))
	}
	for round := 0; round < 3; round++ {
		for _, a := range asks {
			if got := vm.IsLockScript(a.sha, a.body); got != a.want {
				t.Fatalf("round %d: IsLockScript(%.12q, %.30q) = %v, want %v", round, a.sha, a.body, got, a.want)
			}
		}
	}
	last := asks[len(asks)-1]
	for _, a := range asks {
		if a.want {
			last = a
		}
	}
	if n := testing.AllocsPerRun(100, func() { vm.IsLockScript(last.sha, last.body) }); n != 0 {
		t.Errorf("a remembered lock script: %v allocations", n)
	}
	vm.Flush()
	if !vm.IsLockScript(last.sha, last.body) {
		t.Error("a remembered lock script is not one after SCRIPT FLUSH")
	}
	for _, a := range asks {
		if !a.want && vm.IsLockScript(a.sha, a.body) {
			t.Errorf("after SCRIPT FLUSH IsLockScript(%.12q, %.30q) is true", a.sha, a.body)
		}
	}
}

func BenchmarkIsLockScript_SHA(b *testing.B) {
	vm := New()
	sha, msg := vm.Load([]byte(release), nil)
	if msg != "" {
		b.Fatal(msg)
	}
	arg := []byte(sha)
	b.ReportAllocs()
	for b.Loop() {
		if !vm.IsLockScript(arg, nil) {
			b.Fatal("not a lock script")
		}
	}
}

// A large script is not lexed whole to be matched against the templates:
// the lexer stops past the longest template's tokens (a 1 MB script of
// short statements cost 98 MB of tokens to match nothing).
func TestMatchNative_LargeScriptCheap(t *testing.T) {
	body := append(bytes.Repeat([]byte("x=1 "), 1<<18), "return 1"...)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if m := matchNative(body); m != nil {
		t.Fatalf("matched %s", m.name)
	}
	runtime.ReadMemStats(&m1)
	if n := m1.TotalAlloc - m0.TotalAlloc; n > 4<<20 {
		t.Fatalf("matching a %d-byte script allocated %d bytes", len(body), n)
	}
}

// lexLuaAsParser gives lexLua's tokens as luaparse.Tokens gives them,
// with the semicolons lexLua skips left out of theirs.
func lexLuaAsParser(toks []luaTok) []string {
	var out []string
	for _, t := range toks {
		switch t.kind {
		case tokName:
			// a reserved word or a name: as Lua's lexer reads the word alone
			w, _ := luaparse.Tokens([]byte(t.text))
			out = append(out, w...)
		case tokString:
			out = append(out, "string:"+t.text)
		case tokNumber:
			text := t.text
			if text[0] == '-' { // "return -1", one token to lexLua
				out = append(out, "-")
				text = text[1:]
			}
			f, _ := strconv.ParseFloat(text, 64)
			out = append(out, "number:"+strconv.FormatFloat(f, 'g', -1, 64))
		default:
			out = append(out, t.text)
		}
	}
	return out
}

// FuzzLexLua: whatever lexLua (the lock-script matcher's lexer) accepts,
// Lua's own lexer (luaparse, as Redis's Lua 5.1) reads as the same
// tokens. Otherwise a script could match a template while Lua runs other
// code: a comment that lexLua ended only at a LF hid the code after a CR.
func FuzzLexLua(f *testing.F) {
	for _, cs := range clientScripts {
		f.Add([]byte(cs.body))
	}
	for _, s := range []string{"-- a\rreturn 1\n", "--\r\nreturn 0", "return -1 ; return - 1", "x = 'a\rb'",
		"--[=[ c ]=] return 1", "--[ c\rreturn 2\n", "return 0x10", "a.b:c(1)[2]", "return 1e3", "x=\"\\r\"",
		"if a ~= b then return 0 end", "\v\freturn\t3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		toks, ok := lexLua(body)
		if !ok {
			return
		}
		want, err := luaparse.Tokens(body)
		if err != nil {
			return // not Lua: the script fails to compile, and nothing is matched
		}
		var wantNoSemi []string
		for _, w := range want {
			if w != ";" {
				wantNoSemi = append(wantNoSemi, w)
			}
		}
		if got := lexLuaAsParser(toks); !slices.Equal(got, wantNoSemi) {
			t.Fatalf("%q:\nlexLua %q\nLua    %q", body, got, wantNoSemi)
		}
	})
}
