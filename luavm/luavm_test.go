package luavm

import (
	"context"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/engine/enginetest"
	"github.com/tumblerdb/tumbler/expiry"
)

type fixture struct {
	t   *testing.T
	e   *engine.Engine
	vm  *VM
	clk *expiry.ManualClock
}

func newFixture(t *testing.T) *fixture {
	clk := expiry.NewManualClock(time.UnixMilli(1_700_000_000_000))
	e := engine.New(engine.Config{Clock: clk})
	vm := Install(e)
	t.Cleanup(func() {
		vm.Close() // its memory watchdog, once started, holds it until then
		if msg := e.CheckInvariants(); msg != "" {
			t.Errorf("invariant violated: %s", msg)
		}
	})
	return &fixture{t: t, e: e, vm: vm, clk: clk}
}

func (f *fixture) do(proto int, args ...string) string {
	w := &enginetest.TextWriter{P: proto}
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	f.e.Exec(&engine.Ctx{Args: b, W: w})
	return w.String()
}

func (f *fixture) expect(want string, args ...string) {
	f.t.Helper()
	if got := f.do(2, args...); got != want {
		f.t.Errorf("%q:\n got %q\nwant %q", args, got, want)
	}
}

const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

func TestEval_LockReleaseScript(t *testing.T) {
	f := newFixture(t)
	f.expect("+OK", "SET", "lock", "tok", "PX", "30000", "NX")
	f.expect(":0", "EVAL", release, "1", "lock", "other")
	f.expect(":1", "EVAL", release, "1", "lock", "tok")
	f.expect(":0", "EXISTS", "lock")
	sha := SHA1Hex([]byte(release))
	f.expect(":0", "EVALSHA", sha, "1", "lock", "tok")
	f.expect(":0", "EVALSHA", strings.ToUpper(sha), "1", "lock", "tok")
}

func TestEvalSHA_NoScriptAndLoad(t *testing.T) {
	f := newFixture(t)
	sha := SHA1Hex([]byte("return 7"))
	f.expect("-"+engine.ErrNoScript, "EVALSHA", sha, "0")
	f.expect("-"+engine.ErrNoScript, "EVALSHA", "short", "0")
	// a SHA of another length is NOSCRIPT before numkeys is parsed
	f.expect("-"+engine.ErrNoScript, "EVALSHA", "short", "-1")
	f.expect("-"+engine.ErrNoScript, "EVALSHA", "short", "x")
	f.expect("-"+engine.ErrNoScript, "EVALSHA", "short", "5", "k")
	f.expect("-"+engine.ErrNumKeysNeg, "EVALSHA", sha, "-1")
	f.expect("-"+engine.ErrNotInteger, "EVALSHA", sha, "x")
	f.expect("-"+engine.ErrNumKeysTooMany, "EVALSHA", sha, "5", "k")
	f.expect("$"+sha, "SCRIPT", "LOAD", "return 7")
	f.expect(":7", "EVALSHA", sha, "0")
	f.expect("*2 :1 :0", "SCRIPT", "EXISTS", strings.ToUpper(sha), SHA1Hex([]byte("x")))
	f.expect("+OK", "SCRIPT", "FLUSH")
	f.expect("*1 :0", "SCRIPT", "EXISTS", sha)
	f.expect("-"+engine.ErrNumKeysTooMany, "EVAL", "return 1", "2", "a")
	f.expect("-"+engine.ErrNumKeysNeg, "EVAL", "return 1", "-1")
	f.expect("-"+engine.ErrNotInteger, "EVAL", "return 1", "x")
}

func TestEval_Conversions(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ script, want string }{
		{"return 3.99", ":3"},
		{"return -3.99", ":-3"},
		{"return true", ":1"},
		{"return false", "(nil)"},
		{"return nil", "(nil)"},
		{"return 'x'", "$x"},
		{"return {1,'a',{2,3},nil,5}", "*3 :1 $a *2 :2 :3"},
		{"return {ok='FINE'}", "+FINE"},
		{"return {err='bad thing'}", "-bad thing"},
		{"return redis.error_reply('oops')", "-ERR oops"},
		{"return redis.error_reply('MY oops')", "-MY oops"},
		{"return redis.status_reply('FINE')", "+FINE"},
		// an error's and a status's text end at a NUL, as Redis's C strings
		{"return {err='ab\\0cd'}", "-ab"},
		{"return redis.status_reply('ab\\0cd')", "+ab"},
		{"return redis.error_reply('ab\\0cd')", "-ERR ab"},
		{"return redis.sha1hex('')", "$da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"return redis.call('get','missing')", "(nil)"},
		{"return type(redis.call('get','missing'))", "$boolean"},
		{"return redis.call('set','k','v')['ok']", "$OK"},
		{"return redis.pcall('incr','k')['err']", "$ERR value is not an integer or out of range"},
		{"redis.call('set','n',1500) return redis.call('get','n')", "$1500"},
		{"redis.call('set','f',1.5) return redis.call('get','f')", "$1.5"},
		{"return tonumber(ARGV and '2') + 1", ":3"},
		{"return {double=1.5}", ",1.5"},
		{"return #KEYS", ":0"},
	}
	for _, c := range cases {
		f.expect(c.want, "EVAL", c.script, "0")
	}
	// false is a null in the caller's protocol, even for RESP3 callers
	if got := f.do(3, "EVAL", "return false", "0"); got != "(nil)" {
		t.Fatalf("RESP3 false = %q", got)
	}
}

func TestEval_KeysArgvReusedTablesAreReset(t *testing.T) {
	f := newFixture(t)
	f.expect("*3 $a $b $c", "EVAL", "return {KEYS[1],KEYS[2],ARGV[1]}", "2", "a", "b", "c")
	f.expect("*2 :1 :0", "EVAL", "return {#KEYS,#ARGV}", "1", "x")
}

func TestEval_ErrorsCarryScriptAndLine(t *testing.T) {
	f := newFixture(t)
	sha := func(s string) string { return SHA1Hex([]byte(s)) }
	cases := []struct{ script, want string }{
		{"x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: %s, on @user_script:1."},
		{"return y", "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: %s, on @user_script:1."},
		{"\nreturn redis.call('nosuch')", "-ERR Unknown Redis command called from script script: %s, on @user_script:2."},
		{"return redis.call()", "-ERR Please specify at least one argument for this redis lib call script: %s, on @user_script:1."},
		{"return redis.call('get')", "-ERR Wrong number of args calling Redis command from script script: %s, on @user_script:1."},
		{"return redis.call('eval','return 1','0')", "-ERR This Redis command is not allowed from script script: %s, on @user_script:1."},
		{"return redis.call('get',{})", "-ERR Lua redis lib command arguments must be strings or integers script: %s, on @user_script:1."},
		{"error('boom')", "-ERR user_script:1: boom script: %s, on @user_script:1."},
		{"error({err='MYERR x'})", "-MYERR x script: %s, on @user_script:1."},
		{"error({err=1})", "-1 script: %s, on @user_script:1."},
		{"error({err=0.1+0.2})", "-0.3 script: %s, on @user_script:1."},
		{"string.rep = nil", "-ERR user_script:1: Attempt to modify a readonly table script: %s, on @user_script:1."},
		{"rawset(_G,'a',1)", "-ERR Attempt to modify a readonly table script: %s, on @user_script:1."},
		{"redis.call('set','k','v') redis.call('incr','k')", "-ERR value is not an integer or out of range script: %s, on @user_script:1."},
	}
	for _, c := range cases {
		f.expect(strings.Replace(c.want, "%s", sha(c.script), 1), "EVAL", c.script, "0")
	}
	f.expect("-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'", "EVAL", "return 'x' ..", "0")
	// writes before an error are not rolled back
	f.expect("$v", "GET", "k")
}

func TestEvalRO_RefusesWrites(t *testing.T) {
	f := newFixture(t)
	s := "return redis.call('set','a','b')"
	f.expect("-ERR Write commands are not allowed from read-only scripts. script: "+SHA1Hex([]byte(s))+", on @user_script:1.", "EVAL_RO", s, "0")
	f.expect("$x", "EVAL_RO", "return redis.call('get',KEYS[1]) or 'x'", "1", "a")
}

func TestSandbox_NoEscape(t *testing.T) {
	f := newFixture(t)
	for _, g := range []string{"os", "io", "debug", "package", "require", "dofile", "loadfile", "print", "setfenv", "getfenv", "module"} {
		got := f.do(2, "EVAL", "return "+g, "0")
		if !strings.Contains(got, "nonexistent global variable '"+g+"'") {
			t.Errorf("global %s must not exist, got %q", g, got)
		}
	}
	for _, g := range []string{"string", "table", "math", "redis", "pcall", "loadstring", "unpack", "tonumber", "collectgarbage"} {
		if got := f.do(2, "EVAL", "return type("+g+")", "0"); got != "$table" && got != "$function" {
			t.Errorf("global %s must exist, got %q", g, got)
		}
	}
	// state does not leak between scripts
	f.do(2, "EVAL", "pcall(function() x = 1 end)", "0")
	if got := f.do(2, "EVAL", "return rawget(_G, 'x')", "0"); got != "(nil)" {
		t.Errorf("global leaked: %q", got)
	}
	// the globals' metatable is seen only as a read-only table (as in
	// Redis): it cannot be changed, nor the protection removed
	if got := f.do(2, "EVAL", "return getmetatable(_G)", "0"); got != "*0" {
		t.Errorf("globals' metatable = %q, want a read-only table (*0)", got)
	}
	for _, script := range []string{
		"local g = getmetatable(_G) g.__index = nil",
		"rawset(getmetatable(_G), '__index', nil)",
		"setmetatable(_G, nil)",
		"setmetatable(getmetatable(_G), {})",
	} {
		if got := f.do(2, "EVAL", script, "0"); !strings.Contains(got, engine.ErrScriptReadonly) {
			t.Errorf("%s = %q, want it refused", script, got)
		}
	}
	if got := f.do(2, "EVAL", "return nosuch", "0"); !strings.Contains(got, "nonexistent global variable 'nosuch'") {
		t.Errorf("the globals' protection is gone: %q", got)
	}
}

func TestEval_TimeIsFrozenInScript(t *testing.T) {
	e := engine.New(engine.Config{}) // system clock
	Install(e)
	w := &enginetest.TextWriter{}
	script := `redis.call('set', KEYS[1], 'v', 'PX', 1)
local t0 = redis.call('time')
local deadline = tonumber(t0[1]) * 1000000 + tonumber(t0[2]) + 20000
repeat
  local t = redis.call('time')
until tonumber(t[1]) * 1000000 + tonumber(t[2]) > deadline
return redis.call('get', KEYS[1])`
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte(script), []byte("1"), []byte("k")}, W: w})
	if got := w.String(); got != "$v" {
		t.Fatalf("a key set with PX 1 must stay visible for the rest of its script; got %q", got)
	}
}

// runBusy starts script on e in the background and waits until it is past
// the busy threshold; the channel yields the script's reply.
func runBusy(t *testing.T, e *engine.Engine, script string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte(script), []byte("0")}, W: w})
		done <- w.String()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !e.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("script never became busy")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return done
}

// SCRIPT KILL sent before the script is busy waits for it, with no
// server to yield the busy script (the engine alone): it yields it
// itself, then kills.
func TestKill_SentBeforeTheThresholdWithoutAServer(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 200 * time.Millisecond})
	Install(e)
	done := make(chan string, 1)
	go func() {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte("while true do end"), []byte("0")}, W: w})
		done <- w.String()
	}()
	for !e.ScriptRunning() {
		time.Sleep(time.Millisecond)
	}
	killed := make(chan string, 1)
	go func() {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: [][]byte{[]byte("SCRIPT"), []byte("KILL")}, W: w})
		killed <- w.String()
	}()
	select {
	case got := <-killed:
		if got != "+OK" {
			t.Fatalf("SCRIPT KILL = %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SCRIPT KILL sent before the threshold never ran")
	}
	if got := <-done; !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("killed script replied %q", got)
	}
}

func TestKill_StopsReadOnlyScript(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 20 * time.Millisecond})
	Install(e)
	done := runBusy(t, e, "while true do end")
	w := &enginetest.TextWriter{}
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("GET"), []byte("k")}, W: w})
	if w.String() != "-"+engine.ErrBusy {
		t.Fatalf("other commands during a busy script: %q", w.String())
	}
	w.Reset()
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("SCRIPT"), []byte("KILL")}, W: w})
	if w.String() != "+OK" {
		t.Fatalf("SCRIPT KILL = %q", w.String())
	}
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
			t.Fatalf("killed script replied %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("script was not killed")
	}
	// the VM is usable afterwards
	w.Reset()
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte("return 1"), []byte("0")}, W: w})
	if w.String() != ":1" {
		t.Fatalf("after kill: %q", w.String())
	}
	w.Reset()
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("SCRIPT"), []byte("KILL")}, W: w})
	if w.String() != "-"+engine.ErrNotBusy {
		t.Fatalf("SCRIPT KILL with nothing running = %q", w.String())
	}
}

func TestKill_PcallCannotSwallowKill(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 10 * time.Millisecond})
	vm := Install(e)
	done := runBusy(t, e, "while true do pcall(function() while true do end end) end")
	vm.Kill()
	select {
	case got := <-done:
		if !strings.Contains(got, "Script killed") {
			t.Fatalf("got %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pcall swallowed SCRIPT KILL")
	}
}

// TestKill_LongGoLoops: the loops that run no Lua instruction check for
// SCRIPT KILL themselves: load's reader when it is a Go function (here
// collectgarbage, 0 forever, which grows one endless numeral), and
// table.sort's default order (with a comparator, the comparator's Lua
// code is where a kill lands).
func TestKill_LongGoLoops(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 10 * time.Millisecond})
	vm := Install(e)
	done := runBusy(t, e, "local f, e = load(collectgarbage) return tostring(e)")
	vm.Kill()
	select {
	case got := <-done:
		if !strings.Contains(got, "Script killed") {
			t.Fatalf("load(collectgarbage): got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("load(collectgarbage): SCRIPT KILL did not stop it")
	}

	// table.sort alone, in a cancelled run: only its own check can stop it
	L := vm.L
	tbl := L.NewTable()
	for i := 1; i <= 200000; i++ {
		tbl.RawSetInt(i, lua.LNumber((i*7919)%1000003))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	L.SetContext(ctx)
	defer func() {
		vm.killMu.Lock() // the memory watchdog reads the context
		vm.newContext()
		vm.killMu.Unlock()
	}()
	err := L.CallByParam(lua.P{Fn: L.NewFunction(vm.tableSort), Protect: true}, tbl)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("table.sort in a cancelled run: %v", err)
	}
}

func TestKill_UnkillableAfterWrite(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 10 * time.Millisecond})
	vm := Install(e)
	done := runBusy(t, e, "redis.call('set','k','v') while true do end")
	w := &enginetest.TextWriter{}
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("SCRIPT"), []byte("KILL")}, W: w})
	if w.String() != "-"+engine.ErrUnkillable {
		t.Fatalf("SCRIPT KILL after a write = %q", w.String())
	}
	vm.Kill() // what shutting the server down does
	<-done
}

func TestError_NonStringValuesAndLevels(t *testing.T) {
	f := newFixture(t)
	sha := func(s string) string { return SHA1Hex([]byte(s)) }
	// expected replies from redis-server 7.0.15
	cases := []struct{ script, want string }{
		{"error()", "-ERR nil script: %s, on @user_script:1."},
		{"\nerror(nil)", "-ERR nil script: %s, on @user_script:2."},
		{"error(42)", "-ERR user_script:1: 42 script: %s, on @user_script:1."},
		{"error('boom', 0)", "-ERR boom script: %s, on @user_script:1."},
		{"error('x', 2)", "-ERR x script: %s, on @user_script:1."},
	}
	for _, c := range cases {
		f.expect(strings.Replace(c.want, "%s", sha(c.script), 1), "EVAL", c.script, "0")
	}
	// pcall sees the raw value, not Redis's error table
	f.expect("$x", "EVAL", "local ok, e = pcall(error, 'x') return e", "0")
	f.expect("$42", "EVAL", "local ok, e = pcall(error, 42) return e", "0") // lua_concat made it a string (Redis 7.0: $2 42)
	f.expect("$user_script:1: y", "EVAL", "local ok, e = pcall(function() error('y') end) return e", "0")
}

func TestSetResp3_BooleansAndHelpers(t *testing.T) {
	f := newFixture(t)
	f.expect("#false", "EVAL", "redis.setresp(3) return false", "0") // a boolean, which RESP2 encodes as :0
	if got := f.do(3, "EVAL", "redis.setresp(3) return true", "0"); got != "#true" {
		t.Fatalf("RESP3 caller, setresp(3), true = %q", got)
	}
	f.expect("-ERR RESP version must be 2 or 3. script: "+SHA1Hex([]byte("redis.setresp(4)"))+", on @user_script:1.", "EVAL", "redis.setresp(4)", "0")
	f.expect(":1", "EVAL", "return redis.acl_check_cmd('get','k')", "0")
	f.expect("-ERR Invalid command passed to redis.acl_check_cmd() script: "+SHA1Hex([]byte("return redis.acl_check_cmd('nosuch')"))+", on @user_script:1.", "EVAL", "return redis.acl_check_cmd('nosuch')", "0")
	f.expect("-ERR dashed", "EVAL", "return redis.error_reply('-ERR dashed')", "0")
}

// Every table a script can reach refuses writes, so one script cannot
// change what the next one (another client's) runs.
func TestSandbox_NoPersistentChanges(t *testing.T) {
	f := newFixture(t)
	attacks := []string{
		"loadstring('redis = nil')()",
		"load(function() return nil end)",
		"loadstring('string.upper = nil')()",
		"getmetatable('').__index.upper = function() return 'pwned' end",
		"getmetatable('').__index = nil",
		"rawset(getmetatable(''), '__index', nil)",
		"setmetatable(getmetatable(''), nil)",
		"redis.call = function() return 'pwned' end",
		"rawset(redis, 'call', nil)",
		"cjson.encode = nil",
		"table.insert = nil",
		"math.floor = nil",
		"KEYS = nil",
		"_G.redis = nil",
		// gopher-lua's setmetatable set the one metatable of all numbers,
		// booleans, strings or functions, for every later script
		"setmetatable(1, {__index = function() return 'pwned' end})",
		"pcall(setmetatable, true, {__index = function() return 'pwned' end})",
		"setmetatable('', {__index = {upper = function() return 'pwned' end}})",
		"setmetatable(print or tostring, {__index = function() return 'pwned' end})",
	}
	for _, a := range attacks {
		f.do(2, "EVAL", a, "0")
	}
	f.expect("$ABC", "EVAL", "return ('abc'):upper()", "0")
	f.expect("*4 $nil $nil $nil $table", "EVAL", "return {type(getmetatable(1)), type(getmetatable(true)), type(getmetatable(tostring)), type(getmetatable(''))}", "0")
	f.expect("$user_script:1: attempt to index a number value", "EVAL", "local ok, e = pcall(function() return (5).x end) return e", "0")
	f.expect("$ABC", "EVAL", "return string.upper('abc')", "0")
	f.expect("+OK", "EVAL", "return redis.call('set', 'k', 'v')", "0")
	f.expect("$table", "EVAL", "return type(redis)", "0")
	f.expect(":2", "EVAL", "return loadstring('return 1 + 1')()", "0")
	f.expect("*3 $function $function $function", "EVAL", "return {type(cjson.encode), type(table.insert), type(math.floor)}", "0")
	got := f.do(2, "EVAL", "local f = loadstring('x = 5') f() return 1", "0")
	if !strings.Contains(got, "Attempt to modify a readonly table") {
		t.Fatalf("a loaded chunk wrote a global: %q", got)
	}
}

func TestKeysArgv_FreshEachRun(t *testing.T) {
	f := newFixture(t)
	f.expect(":1", "EVAL", "ARGV[3]='leak' KEYS[2]='stale' return 1", "0")
	f.expect("*2 :1 :1", "EVAL", "return {#ARGV, #KEYS}", "1", "k", "a")
	f.expect("*1 $k", "EVAL", "return KEYS", "1", "k")
}

// Expected replies from redis-server 7.0.15.
func TestShebang(t *testing.T) {
	f := newFixture(t)
	noWrites := "#!lua flags=no-writes\nreturn redis.call('set','a','b')"
	f.expect("-ERR Write commands are not allowed from read-only scripts. script: "+SHA1Hex([]byte(noWrites))+", on @user_script:2.", "EVAL", noWrites, "0")
	f.expect("-ERR Can not execute a script with write flag using *_ro command.", "EVAL_RO", "#!lua\nreturn 1", "0")
	f.expect(":7", "EVAL_RO", "#!lua flags=no-writes,allow-stale\nreturn 7", "0")
	f.expect("+OK", "EVAL", "#!lua\nreturn redis.call('set','a','b')", "0")
	f.expect("-ERR Unexpected engine in script shebang: #!python", "EVAL", "#!python\nreturn 1", "0")
	f.expect("-ERR Unexpected flag in script shebang: bogus", "EVAL", "#!lua flags=bogus\nreturn 1", "0")
	f.expect("-ERR Unknown lua shebang option: foo=bar", "EVAL", "#!lua foo=bar\nreturn 1", "0")
	f.expect("-ERR Invalid script shebang", "EVAL", "#!lua", "0")
	f.expect("-ERR Invalid script shebang", "SCRIPT", "LOAD", "#!lua")
	bad := "#!lua\nreturn x"
	f.expect("-ERR user_script:2: Script attempted to access nonexistent global variable 'x' script: "+SHA1Hex([]byte(bad))+", on @user_script:2.", "EVAL", bad, "0")
}

func TestReplyHelpers_ArgumentChecks(t *testing.T) {
	f := newFixture(t)
	f.expect("-ERR wrong number or type of arguments", "EVAL", "return redis.status_reply(5)", "0")
	f.expect("-ERR wrong number or type of arguments", "EVAL", "return redis.error_reply()", "0")
	f.expect("-ERR wrong number of arguments script: "+SHA1Hex([]byte("return redis.sha1hex()"))+", on @user_script:1.", "EVAL", "return redis.sha1hex()", "0")
	f.expect("(123", "EVAL", "return {big_number='123'}", "0") // a big number (RESP2 sends it as a bulk string)
}

func TestStringRep_RefusesHugeResults(t *testing.T) {
	f := newFixture(t)
	s := "return string.rep('x', 1024*1024*1024)"
	f.expect("-ERR user_script:1: not enough memory script: "+SHA1Hex([]byte(s))+", on @user_script:1.", "EVAL", s, "0")
	f.expect(":3", "EVAL", "return #string.rep('ab', 1) + #('x'):rep(1)", "0")
}

// A command that queued on the keyspace lock before a script took it must
// not wait out the whole script: when the script passes the busy threshold
// the lock is yielded and the command replies BUSY.
func TestBusy_CommandQueuedBeforeScriptGetsBusy(t *testing.T) {
	e := engine.New(engine.Config{BusyThreshold: 30 * time.Millisecond})
	vm := Install(e)
	e.Lock() // an ordinary command holds the keyspace
	get := make(chan string, 1)
	go func() {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: [][]byte{[]byte("GET"), []byte("k")}, W: w})
		get <- w.String()
	}()
	script := make(chan string, 1)
	go func() {
		w := &enginetest.TextWriter{}
		e.Exec(&engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte("while true do end"), []byte("0")}, W: w})
		script <- w.String()
	}()
	time.Sleep(20 * time.Millisecond) // both are queued on the lock
	e.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for !e.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("script never became busy")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.YieldIfBusy() // what the server's busy loop does
	select {
	case got := <-get:
		if got != "(nil)" && got != "-"+engine.ErrBusy {
			t.Fatalf("queued GET replied %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a command queued before the script waited for the whole script")
	}
	vm.Kill()
	select {
	case got := <-script:
		if !strings.Contains(got, "Script killed") {
			t.Fatalf("script replied %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("script not killed")
	}
	// the keyspace lock is consistent again
	w := &enginetest.TextWriter{}
	e.Exec(&engine.Ctx{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("v")}, W: w})
	if w.String() != "+OK" {
		t.Fatalf("after the script: %q", w.String())
	}
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
}

func TestSandbox_SecondReviewEscapes(t *testing.T) {
	f := newFixture(t)
	f.do(2, "EVAL", "string.__index.len = function() return 42 end", "0")
	f.do(2, "EVAL", "getmetatable('').__index.__index.len = function() return 42 end", "0")
	f.expect(":3", "EVAL", "return string.len('abc')", "0")
	f.expect(":3", "EVAL", "return ('abc'):len()", "0")
	f.expect("(nil)", "EVAL", "return type(string.__index) == 'table'", "0")
	// error() must not write its position into the table it is given
	f.do(2, "EVAL", "pcall(error, _G) pcall(error, string)", "0")
	got := f.do(2, "EVAL", "return line", "0")
	if !strings.Contains(got, "nonexistent global variable 'line'") {
		t.Fatalf("error(_G) left a global behind: %q", got)
	}
	f.expect("(nil)", "EVAL", "return string.line", "0")
	f.expect("(nil)", "EVAL", "local ok, e = pcall(error, {err='x'}) return e.line", "0")
	// the line is still reported when a table error leaves the script
	s := "\n\nerror({err='MY x'})"
	f.expect("-MY x script: "+SHA1Hex([]byte(s))+", on @user_script:3.", "EVAL", s, "0")
	s = "\nredis.call('nosuch')"
	f.expect("-ERR Unknown Redis command called from script script: "+SHA1Hex([]byte(s))+", on @user_script:2.", "EVAL", s, "0")
	f.expect(":7", "EVAL", "#!lua flags=\nreturn 7", "0")
	big := "return string.rep('abc', 6148914691236517206)"
	f.expect("-ERR user_script:1: not enough memory script: "+SHA1Hex([]byte(big))+", on @user_script:1.", "EVAL", big, "0")
}

// Walks every table reachable from the scripts' globals and the string
// metatable: each must be a read-only proxy, except the per-run KEYS/ARGV.
func TestSandbox_EveryReachableTableIsReadOnly(t *testing.T) {
	vm := New()
	L := vm.L
	isProxy := func(tb *lua.LTable) bool {
		mt, ok := tb.Metatable.(*lua.LTable)
		if !ok || tb.Len() != 0 {
			return false
		}
		_, fn := mt.RawGetString("__newindex").(*lua.LFunction)
		return fn
	}
	seen := map[*lua.LTable]bool{}
	var walk func(proxy *lua.LTable, path string)
	walk = func(proxy *lua.LTable, path string) {
		if seen[proxy] {
			return
		}
		seen[proxy] = true
		if !isProxy(proxy) {
			t.Errorf("%s is a writable table", path)
			return
		}
		real, ok := proxy.Metatable.(*lua.LTable).RawGetString("__index").(*lua.LTable)
		if !ok {
			return
		}
		real.ForEach(func(k, v lua.LValue) {
			if tb, ok := v.(*lua.LTable); ok {
				name := path + "." + k.String()
				if path == "_G" && (k.String() == "KEYS" || k.String() == "ARGV") {
					return
				}
				walk(tb, name)
			}
		})
	}
	walk(vm.env, "_G")
	// what getmetatable("") returns, and the tables behind it
	smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable)
	if !ok {
		t.Fatal("getmetatable('') must be a table")
	}
	walk(smt, "getmetatable('')")
	if len(seen) < 8 {
		t.Fatalf("walked only %d tables", len(seen))
	}
}

// MayWrite is Redis's evalGetCommandFlags as CLIENT PAUSE WRITE reads it.
func TestMayWrite(t *testing.T) {
	f := newFixture(t)
	ro := "#!lua flags=no-writes\nreturn 1"
	f.expect("$"+SHA1Hex([]byte(ro)), "SCRIPT", "LOAD", ro)
	vm := f.vm
	for _, tc := range []struct {
		evalsha bool
		arg     string
		want    bool
	}{
		{false, ro, false}, // cached
		{false, "#!lua flags=no-writes,allow-oom\nreturn 2", false}, // parsed
		{false, "return 1", true},                                   // no shebang: Redis's compatibility mode
		{false, "#!lua\nreturn 1", true},                            // shebang without no-writes
		{false, "#!lua flags=bogus\nreturn 1", true},                // shebang in error
		{true, SHA1Hex([]byte(ro)), false},
		{true, strings.ToUpper(SHA1Hex([]byte(ro))), false},
		{true, SHA1Hex([]byte("unknown")), true},
		{true, "short", true},
	} {
		if got := vm.MayWrite(tc.evalsha, false, []byte(tc.arg)); got != tc.want {
			t.Errorf("MayWrite(%v, %q) = %v, want %v", tc.evalsha, tc.arg, got, tc.want)
		}
	}
	// EVAL_RO: without a shebang it only reads
	for _, tc := range []struct {
		arg  string
		want bool
	}{
		{"return 1", false},
		{"#!lua\nreturn 1", true},
		{ro, false},
	} {
		if got := vm.MayWrite(false, true, []byte(tc.arg)); got != tc.want {
			t.Errorf("MayWrite(ro, %q) = %v, want %v", tc.arg, got, tc.want)
		}
	}
}

// DenyOOM: a script with a shebang is refused over maxmemory before it
// runs unless flagged no-writes or allow-oom.
func TestDenyOOM(t *testing.T) {
	f := newFixture(t)
	w := "#!lua\nreturn 1"
	f.expect("$"+SHA1Hex([]byte(w)), "SCRIPT", "LOAD", w)
	for _, tc := range []struct {
		evalsha bool
		arg     string
		want    bool
	}{
		{false, w, true},
		{false, "#!lua flags=allow-stale\nreturn 2", true},
		{false, "#!lua flags=no-writes\nreturn 1", false},
		{false, "#!lua flags=allow-oom\nreturn 1", false},
		{false, "return 1", false},
		{false, "#!lua flags=bogus\nreturn 1", false},
		{true, SHA1Hex([]byte(w)), true},
		{true, SHA1Hex([]byte("unknown")), false},
		{true, "short", false},
	} {
		fl, ok := f.vm.ScriptFlags(tc.evalsha, []byte(tc.arg))
		if got := ok && fl.DenyOOM(); got != tc.want {
			t.Errorf("DenyOOM(%v, %q) = %v, want %v", tc.evalsha, tc.arg, got, tc.want)
		}
	}
}

// An error a script's call replied, or a call refused, is counted once,
// when it happens: the script's reply does not count it again, though
// the script counts as failed (Redis's ignore_error_stats_update).
func TestScriptErrors_CountedOnce(t *testing.T) {
	f := newFixture(t)
	field := func(sec, key string) string {
		for _, line := range strings.Split(f.do(2, "INFO", sec), "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == key {
				return v
			}
		}
		return ""
	}
	stat := func(cmd string) string { // calls, rejected and failed
		v := field("commandstats", "cmdstat_"+cmd)
		if i, j := strings.Index(v, ",usec="), strings.Index(v, ",rejected_calls="); i >= 0 && j > i {
			v = v[:i] + v[j:]
		}
		return v
	}
	f.do(2, "SET", "s", "v")
	f.do(2, "CONFIG", "RESETSTAT")
	f.do(2, "EVAL", "return redis.call('set','x')", "0")               // refused: arity
	f.do(2, "EVAL", "return redis.pcall('incr','s')", "0")             // replied, then returned
	f.do(2, "EVAL", "local t = redis.pcall('incr','s') return 1", "0") // replied, caught
	if got := field("stats", "total_error_replies"); got != "3" {
		t.Errorf("total_error_replies = %q, want 3", got)
	}
	for cmd, want := range map[string]string{
		"set":  "calls=0,rejected_calls=1,failed_calls=0",
		"incr": "calls=2,rejected_calls=0,failed_calls=2",
		"eval": "calls=3,rejected_calls=0,failed_calls=2",
	} {
		if got := stat(cmd); got != want {
			t.Errorf("cmdstat_%s = %q, want %q", cmd, got, want)
		}
	}
}

// INFO memory's number_of_cached_scripts counts the scripts cached since
// the last SCRIPT FLUSH, loaded or run.
func TestInfo_NumberOfCachedScripts(t *testing.T) {
	f := newFixture(t)
	count := func() string {
		for _, line := range strings.Split(f.do(2, "INFO", "memory"), "\r\n") {
			if v, ok := strings.CutPrefix(line, "number_of_cached_scripts:"); ok {
				return v
			}
		}
		return "(absent)"
	}
	if got := count(); got != "0" {
		t.Fatalf("number_of_cached_scripts = %s at start", got)
	}
	f.do(2, "SCRIPT", "LOAD", "return 1")
	f.do(2, "EVAL", "return 2", "0")
	f.do(2, "EVAL", "return 2", "0")
	if got := count(); got != "2" {
		t.Fatalf("number_of_cached_scripts = %s, want 2", got)
	}
	f.do(2, "SCRIPT", "FLUSH")
	if got := count(); got != "0" {
		t.Fatalf("number_of_cached_scripts = %s after SCRIPT FLUSH", got)
	}
}

// pcall is Redis 7's: an error table with a string or number err field
// (what redis.call raises) is caught as that field, as in Redis 6; with
// another err field, the field follows the table. Every reply here is
// redis-server 7.0.15's for the same script.
func TestPcall_ErrorTablesCaughtAsStrings(t *testing.T) {
	f := newFixture(t)
	f.expect(":1", "RPUSH", "l", "a")
	f.expect("*3 $string $false $WRONGTYPE Operation against a key holding the wrong kind of value",
		"EVAL", "local ok, e = pcall(redis.call, 'get', KEYS[1]) return {type(e), tostring(ok), e}", "1", "l")
	f.expect("*2 $string $E1 tbl", "EVAL", "local ok, e = pcall(function() error({err='E1 tbl'}) end) return {type(e), e}", "0")
	f.expect("*2 $string $user_script:1: plain", "EVAL", "local ok, e = pcall(function() error('plain') end) return {type(e), e}", "0")
	f.expect("*2 :3 $table", "EVAL", "return {select('#', pcall(error, {})), type(select(2, pcall(error, {})))}", "0")
	f.expect("*2 :3 $table", "EVAL", "return {select('#', pcall(error, {err={}})), type(select(3, pcall(error, {err={}})))}", "0")
	f.expect("*2 $nil :5", "EVAL", "local ok, e = pcall(error, {err=5}) return {tostring(ok) == 'false' and 'nil' or 'x', e}", "0")
	f.expect("$viaindex", "EVAL", "local ok, e = pcall(error, setmetatable({}, {__index=function() return 'viaindex' end})) return e", "0")
	f.expect("*2 $false $attempt to call a boolean value", "EVAL", "local a, b = pcall() return {tostring(a), b}", "0")
	f.expect("*3 :1 (nil) :1", "EVAL", "return {pcall(function() return false, 1 end)}", "0") // true, false, 1
	f.expect("$table", "EVAL", "local ok, e = xpcall(function() error({err='x'}) end, function(e) return e end) return type(e)", "0")
}

// redis.call reuses its argument vector and reply writer, and small
// integer replies come boxed already: a call replying an integer
// allocates nothing of its own. Measured as the difference between a
// script making 201 calls and one making 1, so the run's own allocations
// (KEYS, ARGV, the reply) cancel out.
func TestRedisCall_IntegerReplyAllocatesNothing(t *testing.T) {
	f := newFixture(t)
	f.do(2, "SET", "k", "v")
	script := `local n = 0
for i = 1, tonumber(ARGV[1]) do n = n + redis.call('EXISTS', KEYS[1]) + redis.call('DEL', 'missing') end
return n`
	ctx := func(calls string) *engine.Ctx {
		return &engine.Ctx{Args: [][]byte{[]byte("EVAL"), []byte(script), []byte("1"), []byte("k"), []byte(calls)}, W: discard{}}
	}
	one, many := ctx("1"), ctx("101")
	f.e.Exec(one) // the script compiled and cached
	a1 := testing.AllocsPerRun(50, func() { f.e.Exec(one) })
	a101 := testing.AllocsPerRun(50, func() { f.e.Exec(many) })
	if per := (a101 - a1) / 200; per > 0.05 {
		t.Fatalf("redis.call with an integer reply: %.2f allocations a call (%v for 2 calls, %v for 202)", per, a1, a101)
	}
}

// TestReply_NestsAsDeepAsRedisStack: a returned table is converted as
// deep as Redis's Lua stack lets it (arrays 7994 levels, maps and sets
// 2664); past that, the value that does not fit is the error "reached
// lua stack limit", in its place.
func TestReply_NestsAsDeepAsRedisStack(t *testing.T) {
	f := newFixture(t)
	nested := func(script string) (depth int, tail string) {
		got := f.do(2, "EVAL", script, "0")
		for strings.HasPrefix(got, "*1 ") {
			got, depth = got[3:], depth+1
		}
		return depth, got
	}
	for _, c := range []struct {
		script string
		depth  int
		tail   string
	}{
		{"local t = {} local c = t for i = 1, 7994 do c[1] = {} c = c[1] end return t", 7994, "*0"},
		{"local t = {} local c = t for i = 1, 7995 do c[1] = {} c = c[1] end return t", 7995, "-ERR reached lua stack limit"},
		{"local t = {} t[1] = t return t", 7995, "-ERR reached lua stack limit"},
		// a map's value is three slots deeper
		{"redis.setresp(3) local t = {} local c = t for i = 1, 2664 do local n = {} c.map = {a = n} c = n end return t", 0, ""},
	} {
		depth, tail := nested(c.script)
		if c.depth == 0 {
			got := f.do(2, "EVAL", c.script, "0")
			if n := strings.Count(got, "%1 $a "); n != 2664 || strings.Contains(got, "limit") {
				t.Errorf("%.60s: %d map levels, %q", c.script, n, got[max(0, len(got)-60):])
			}
			continue
		}
		if depth != c.depth || tail != c.tail {
			t.Errorf("%.60s: %d levels then %q, want %d then %q", c.script, depth, tail, c.depth, c.tail)
		}
	}
	got := f.do(2, "EVAL", "redis.setresp(3) local t = {} local c = t for i = 1, 2665 do local n = {} c.map = {a = n} c = n end return t", "0")
	if n := strings.Count(got, "%1 "); n != 2665 || !strings.HasSuffix(got, "-ERR reached lua stack limit -ERR reached lua stack limit") {
		t.Errorf("2665 map levels: %d, %q", n, got[max(0, len(got)-60):])
	}
}

// A script keeps a reply as a Lua string that aliases the value's bytes:
// a later SET of a value of the same size, which a connection's would
// write in place (engine's entry.overwrite), must leave what the script
// holds as it was.
func TestEval_ValueReadStaysWhenTheKeyIsSet(t *testing.T) {
	f := newFixture(t)
	f.expect("+OK", "SET", "k", "old1")
	f.expect("*4 $old1 $old1 $ld $new1", "EVAL", `
local a = redis.call("get", KEYS[1])
local m = redis.call("mget", KEYS[1])
local r = redis.call("getrange", KEYS[1], 1, 2)
redis.call("set", KEYS[1], ARGV[1])
return {a, m[1], r, redis.call("get", KEYS[1])}`, "1", "k", "new1")
	f.expect("+OK", "SET", "k", "old2")
	f.expect("$old2", "EVAL", `
local v = redis.call("get", KEYS[1])
redis.call("set", KEYS[1], "new2")
redis.call("set", KEYS[1], "new3")
return v`, "1", "k")
	f.expect("$new3", "GET", "k")
}
