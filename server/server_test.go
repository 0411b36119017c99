package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/luavm"
)

func TestRace_FiftyConnectionsExactlyOneAcquires(t *testing.T) {
	srv := RunT(t)
	for round := 0; round < 20; round++ {
		key := "lock:" + string(rune('a'+round))
		var wins, nulls atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		clients := make([]*rawClient, 50)
		for i := range clients {
			clients[i] = dial(t, srv.Addr())
		}
		for i, c := range clients {
			wg.Add(1)
			go func(i int, c *rawClient) {
				defer wg.Done()
				<-start
				c.send(encode("SET", key, "token-"+string(rune('A'+i)), "NX", "PX", "30000"))
				c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				var b strings.Builder
				if err := readReply(c.rd, &b); err != nil {
					t.Errorf("read: %v", err)
					return
				}
				switch b.String() {
				case "+OK\r\n":
					wins.Add(1)
				case "$-1\r\n":
					nulls.Add(1)
				default:
					t.Errorf("unexpected reply %q", b.String())
				}
			}(i, c)
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || nulls.Load() != 49 {
			t.Fatalf("round %d: %d winners and %d null replies; want exactly 1 and 49", round, wins.Load(), nulls.Load())
		}
	}
	if msg := srv.Engine().CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
}

func TestPipelining_AllRepliesInOrder(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString(encode("INCR", "n"))
	}
	c.send(b.String())
	for i := 1; i <= 200; i++ {
		if got, want := c.read(), ":"+itoa(i)+"\r\n"; got != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestHello_RESP3RepliesAndFallback(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("GET", "missing"); got != "$-1\r\n" {
		t.Fatalf("RESP2 null = %q", got)
	}
	if got := c.do("HELLO", "4"); got != "-NOPROTO unsupported protocol version\r\n" {
		t.Fatalf("HELLO 4 = %q", got)
	}
	if got := c.do("HELLO", "x"); got != "-ERR Protocol version is not an integer or out of range\r\n" {
		t.Fatalf("HELLO x = %q", got)
	}
	hello := c.do("HELLO", "3", "SETNAME", "me")
	for _, part := range []string{"%7\r\n", "$6\r\nserver\r\n$5\r\nredis\r\n", "$7\r\nversion\r\n$5\r\n7.2.4\r\n", "$5\r\nproto\r\n:3\r\n", "$2\r\nid\r\n:", "$4\r\nmode\r\n$10\r\nstandalone\r\n", "$4\r\nrole\r\n$6\r\nmaster\r\n", "$7\r\nmodules\r\n*0\r\n"} {
		if !strings.Contains(hello, part) {
			t.Fatalf("HELLO 3 reply %q lacks %q", hello, part)
		}
	}
	if got := c.do("GET", "missing"); got != "_\r\n" {
		t.Fatalf("RESP3 null = %q", got)
	}
	if got := c.do("SET", "k", "v", "NX", "GET"); got != "_\r\n" {
		t.Fatalf("RESP3 SET GET on missing = %q", got)
	}
	if got := c.do("CONFIG", "GET", "maxmemory"); got != "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n" {
		t.Fatalf("RESP3 CONFIG GET = %q", got)
	}
	if got := c.do("CLIENT", "GETNAME"); got != "$2\r\nme\r\n" {
		t.Fatalf("CLIENT GETNAME = %q", got)
	}
	if got := c.do("EVAL", "return false", "0"); got != "_\r\n" {
		t.Fatalf("RESP3 script false = %q", got)
	}
	if got := c.do("INFO", "server"); !strings.HasPrefix(got, "=") || !strings.Contains(got, "txt:# Server\r\nredis_version:7.2.4\r\n") {
		t.Fatalf("RESP3 INFO must be a verbatim string, got %.80q", got)
	}
	if got := c.do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET = %q", got)
	}
	if got := c.do("GET", "missing"); got != "$-1\r\n" {
		t.Fatalf("after RESET the connection is RESP2 again: %q", got)
	}
}

func TestInfo_ReadyCheckFields(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("SET", "a", "1", "EX", "100")
	c.do("SET", "b", "1")
	info := c.do("INFO")
	for _, f := range []string{"redis_version:7.2.4\r\n", "loading:0\r\n", "# Clients\r\nconnected_clients:1\r\n", "role:master\r\n", "db0:keys=2,expires=1,avg_ttl=", "# Memory\r\nused_memory:", "# Stats\r\n"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO lacks %q", f)
		}
	}
	if strings.Contains(c.do("INFO", "keyspace"), "redis_version") {
		t.Error("INFO keyspace must contain only the keyspace section")
	}
}

func TestAuth_RequirePass(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.RequirePass = "s3cret" }))
	c := dial(t, srv.Addr())
	if got := c.do("GET", "k"); got != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("before AUTH: %q", got)
	}
	if got := c.do("PING"); got != "-NOAUTH Authentication required.\r\n" {
		t.Fatalf("PING before AUTH: %q", got)
	}
	if got := c.do("AUTH", "wrong"); got != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("bad AUTH: %q", got)
	}
	if got := c.do("HELLO", "3"); !strings.HasPrefix(got, "-NOAUTH HELLO must be called with the client already authenticated") {
		t.Fatalf("HELLO without auth: %q", got)
	}
	if got := c.do("AUTH", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH: %q", got)
	}
	if got := c.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("after AUTH: %q", got)
	}
	c2 := dial(t, srv.Addr())
	if got := c2.do("HELLO", "3", "AUTH", "default", "s3cret"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO AUTH: %q", got)
	}
	c3 := dial(t, srv.Addr())
	if got := c3.do("AUTH", "default", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH default pass: %q", got)
	}
	open := RunT(t)
	c4 := dial(t, open.Addr())
	if got := c4.do("AUTH", "x"); !strings.HasPrefix(got, "-ERR AUTH <password> called without any password configured") {
		t.Fatalf("AUTH with no password set: %q", got)
	}
}

func TestQuit_RepliesThenCloses(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("QUIT"); got != "+OK\r\n" {
		t.Fatalf("QUIT = %q", got)
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.rd.ReadByte(); err == nil {
		t.Fatal("connection must be closed after QUIT")
	}
}

func TestMalformedInput_ErrorReplyServerStaysUp(t *testing.T) {
	srv := RunT(t)
	for _, raw := range []string{"*x\r\n", "*1\r\n$x\r\n", "*1\r\n+foo\r\n", "\"unbalanced\r\n"} {
		c := dial(t, srv.Addr())
		c.send(raw)
		got := c.read()
		if !strings.HasPrefix(got, "-ERR Protocol error") {
			t.Errorf("%q: got %q", raw, got)
		}
	}
	c := dial(t, srv.Addr())
	c.send("PING\r\n") // inline commands work
	if got := c.read(); got != "+PONG\r\n" {
		t.Fatalf("inline PING = %q", got)
	}
}

func TestActiveExpiry_ReclaimsWithoutAccess(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for i := 0; i < 100; i++ {
		c.do("SET", "k"+fmtInt(i), "v", "PX", "30")
	}
	c.do("SET", "keep", "v")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := srv.Engine().KeyCount(); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			n, _ := srv.Engine().KeyCount()
			t.Fatalf("active expiry left %d keys", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestManualClock_AdvanceExpiresImmediately(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	srv.Advance(30000 * time.Millisecond)
	if got := c.do("GET", "lock"); got != "$3\r\ntok\r\n" {
		t.Fatalf("at the deadline (a key lives through its millisecond, as in Redis): %q", got)
	}
	srv.Advance(time.Millisecond)
	// the active loop reclaims it without any access
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		if n, _ := srv.Engine().KeyCount(); n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("Advance past the deadline did not reclaim the key")
		case <-time.After(time.Millisecond):
		}
	}
	if got := c.do("SET", "lock", "other", "PX", "30000", "NX"); got != "+OK\r\n" {
		t.Fatalf("after expiry another holder must acquire: %q", got)
	}
}

func TestBusyScript_OtherClientsGetBusyUntilKilled(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond }))
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.send(encode("EVAL", "while true do end", "0"))
	// past the threshold: refused at once (a command sent before it
	// waits behind the script: the test below)
	eventually(t, "the script busy", srv.Engine().Busy)
	if got := b.do("GET", "k"); got != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n" {
		t.Fatalf("during busy script: %q", got)
	}
	// WATCH inside MULTI reads no key: refused at once (allow-busy in
	// Redis), not held until the script ends
	for _, step := range [][2]string{{"MULTI", "+OK\r\n"}, {"WATCH", "-ERR WATCH inside MULTI is not allowed\r\n"}, {"DISCARD", "+OK\r\n"}} {
		args := []string{step[0]}
		if step[0] == "WATCH" {
			args = append(args, "k")
		}
		if got := b.do(args...); got != step[1] {
			t.Fatalf("%s during busy script: %q, want %q", step[0], got, step[1])
		}
	}
	if got := b.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	if got := a.read(); !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("killed script's client got %q", got)
	}
	if got := b.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("after kill: %q", got)
	}
}

// SCRIPT KILL sent while an EXEC runs its first script, which ends below
// the busy threshold, reaches Redis only when the EXEC's next script is
// busy, and kills that one; it must not answer NOTBUSY in between and
// leave the endless script running.
func TestScriptKill_SentDuringAnExecKillsItsLaterBusyScript(t *testing.T) {
	// (a threshold well over the first script's 100 ms: under load a
	// short one lets that script turn busy, and the SCRIPT KILL kills it)
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = time.Second }))
	short := spinScript(100 * time.Millisecond)
	a := dial(t, srv.Addr())
	k := dial(t, srv.Addr())
	a.send(encode("MULTI") + encode("EVAL", short, "0") + encode("EVAL", "while true do end", "0") + encode("EXEC"))
	eventually(t, "the first script running", srv.Engine().ScriptRunning)
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL during the EXEC = %q, want +OK once its second script is busy", got)
	}
	for i, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n:1\r\n-ERR Script killed by user with SCRIPT KILL..."} {
		if got := a.read(); !strings.HasPrefix(got, want) {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
	if got := k.do("SCRIPT", "KILL"); got != "-NOTBUSY No scripts in execution right now.\r\n" {
		t.Fatalf("SCRIPT KILL after the EXEC = %q", got)
	}
}

// A lower busy-reply-threshold set while the busy watcher sleeps out the
// old one applies to the next script at once: other clients get BUSY
// after the new threshold, not the old.
func TestBusyScript_LoweredThresholdAppliesAtOnce(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 5 * time.Second }))
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	// a script arms the watcher for 5 s, and ends
	if got := a.do("EVAL", "local i = 0 while i < 100000 do i = i + 1 end return 1", "0"); got != ":1\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	b.do("CONFIG", "SET", "busy-reply-threshold", "100")
	a.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "the script running", srv.Engine().ScriptRunning)
	b.send(encode("GET", "k"))
	b.conn.SetReadDeadline(time.Now().Add(3 * time.Second)) // the old threshold is 5 s
	var got strings.Builder
	if err := readReply(b.rd, &got); err != nil || !strings.HasPrefix(got.String(), "-BUSY") {
		t.Fatalf("GET during the script: %q, %v; want BUSY after the new 100 ms threshold", got.String(), err)
	}
	if got := b.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	a.read()
}

// MULTI, WATCH inside MULTI, DISCARD and the other allow-busy commands
// that take no keyspace lock, sent while another client's script runs
// below the busy threshold, are answered after it, as Redis reads them
// only then; not in the middle of it.
func TestScript_AllowBusyCommandsWaitForTheRunningScript(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 10 * time.Second }))
	spin := spinScript(200 * time.Millisecond)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	for _, step := range [][]string{{"MULTI", "+OK"}, {"WATCH", "-ERR WATCH inside MULTI is not allowed"}, {"UNWATCH", "+QUEUED"}, {"DISCARD", "+OK"}} {
		ran := srv.Engine().Stats.Commands.Load()
		a.send(encode("EVAL", spin, "0"))
		awaitScript(t, srv, ran)
		args := step[:1]
		if step[0] == "WATCH" {
			args = []string{"WATCH", "k"}
		}
		if got := b.do(args...); got != step[1]+"\r\n" {
			t.Fatalf("%s = %q", step[0], got)
		}
		if srv.Engine().ScriptRunning() {
			t.Fatalf("%s was answered while the script ran", step[0])
		}
		a.read()
	}
}

// A SCRIPT KILL whose client an EXEC it waits for kills (CLIENT KILL in
// the EXEC) kills nothing: Redis frees the client before it reads the
// command. The EXEC's endless script runs on until another SCRIPT KILL.
// (The first script runs 100 ms, well under the busy threshold: under
// load a 200 ms threshold let it turn busy, and the SCRIPT KILL killed it.)
func TestScriptKill_FromAClientKilledWhileItWaitedKillsNothing(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = time.Second }))
	short := spinScript(100 * time.Millisecond)
	a, k, o := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	kid := strings.TrimSpace(strings.TrimPrefix(k.do("CLIENT", "ID"), ":"))
	a.send(encode("MULTI") + encode("EVAL", short, "0") + encode("CLIENT", "KILL", "ID", kid) +
		encode("EVAL", "while true do end", "0") + encode("EXEC"))
	eventually(t, "the first script running", srv.Engine().ScriptRunning)
	k.send(encode("SCRIPT", "KILL"))
	// once the endless script is busy, K's SCRIPT KILL would run at once
	eventually(t, "the endless script busy", srv.Engine().Busy)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if !srv.Engine().ScriptRunning() {
			t.Fatal("the endless script ended: the killed client's SCRIPT KILL killed it")
		}
	}
	if got := o.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	for _, want := range []string{"+OK", "+QUEUED", "+QUEUED", "+QUEUED", "*3\r\n:1\r\n:1\r\n-ERR Script killed"} {
		if got := a.read(); !strings.HasPrefix(got, want) {
			t.Fatalf("EXEC's client got %q, want %q", got, want)
		}
	}
}

// spinScript is a script that runs for d of wall time (a loop on TIME),
// however loaded the machine: a counted loop's time grows with the load,
// several times over under -race.
func spinScript(d time.Duration) string {
	return fmt.Sprintf("local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] "+
		"while true do local n = redis.call('TIME') if n[1] * 1000000 + n[2] - s > %d then break end end return 1", d.Microseconds())
}

// awaitScript waits until the script sent after the engine had run ran
// commands runs, or has run: a poll of ScriptRunning alone times out on a
// script that ended while a loaded machine held the test up.
func awaitScript(t *testing.T, srv *Server, ran int64) {
	t.Helper()
	eventually(t, "the script running", func() bool {
		return srv.Engine().ScriptRunning() || srv.Engine().Stats.Commands.Load() > ran
	})
}

func TestStart_PortTakenIsAnError(t *testing.T) {
	srv := RunT(t)
	other := New(Config{Addr: srv.Addr()})
	err := other.Start()
	if err == nil {
		other.Close()
		t.Fatal("starting on a taken port must fail")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error should say why: %v", err)
	}
}

func TestClose_Idempotent(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	srv.Close()
	srv.Close()
	if err := srv.Start(); err != ErrClosed {
		t.Fatalf("Start after Close = %v", err)
	}
	expectNotListening(t, srv, addr)
}

func TestBusyScript_ClientsQueuedBeforeThresholdGetBusy(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 200 * time.Millisecond }))
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	k := dial(t, srv.Addr())
	a.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "the script running", srv.Engine().ScriptRunning)
	start := time.Now()
	if ran := start.Sub(srv.Engine().ScriptStart()); ran >= 150*time.Millisecond {
		t.Skipf("the script had run %v before the test could send a command queued behind it (threshold 200 ms)", ran)
	}
	// sent before the threshold: queued behind the script, then BUSY; a
	// script and a transaction too (the command inside MULTI is refused,
	// not queued, so EXEC aborts)
	const busy = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	ev := dial(t, srv.Addr())
	ev.send(encode("EVAL", "return redis.call('set', 'k', 'v')", "0"))
	tx := dial(t, srv.Addr())
	tx.send(encode("MULTI") + encode("SET", "k", "v") + encode("EXEC"))
	if got := b.do("SET", "k", "v"); got != busy {
		t.Fatalf("queued command got %q", got)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("queued command waited %v for its BUSY reply", waited)
	}
	if got := ev.read(); got != busy {
		t.Fatalf("queued EVAL got %q", got)
	}
	if got := tx.read() + tx.read() + tx.read(); got != "+OK\r\n"+busy+"-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n" {
		t.Fatalf("queued MULTI/SET/EXEC got %q", got)
	}
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	a.read()
	if got := b.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("the BUSY command must not have run; GET k = %q", got)
	}
}

// A command that runs without the keyspace lock (ACL, CONFIG, CLIENT...)
// waits for a running script as every other does: in Redis it runs after
// the script, so a script never sees its user's permissions, or a setting,
// change partway through.
func TestScript_KeylessCommandsWaitForTheScript(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 10 * time.Second }))
	adm := dial(t, srv.Addr())
	if got := adm.do("ACL", "SETUSER", "u1", "on", ">p", "~*", "+@all"); got != "+OK\r\n" {
		t.Fatalf("ACL SETUSER = %q", got)
	}
	a := dial(t, srv.Addr())
	if got := a.do("AUTH", "u1", "p"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	// runs 500 ms, then writes and reads
	ran := srv.Engine().Stats.Commands.Load()
	a.send(encode("EVAL", "local t0 = redis.call('time') local t "+
		"repeat t = redis.call('time') until (t[1] - t0[1]) * 1000000 + t[2] - t0[2] > 500000 "+
		"return {redis.pcall('set', 'k', 'v'), redis.pcall('get', 'k')}", "0"))
	awaitScript(t, srv, ran) // (ended already: the check below skips)
	start := srv.Engine().ScriptStart()
	acl := dial(t, srv.Addr())
	acl.send(encode("ACL", "SETUSER", "u1", "-get", "-set"))
	cfg := dial(t, srv.Addr())
	cfg.send(encode("CONFIG", "SET", "maxmemory-samples", "7"))
	cfgDone := make(chan time.Duration, 1)
	go func() {
		if got := cfg.read(); got != "+OK\r\n" {
			t.Errorf("CONFIG SET = %q", got)
		}
		cfgDone <- time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond) // (with the bug, they have run by now)
	if ran := time.Since(start); ran >= 400*time.Millisecond {
		// CONFIG SET's reader must be done before the test ends: closing
		// its connection under it fails the test
		<-cfgDone
		t.Skipf("the script had run %v before the test had sent its commands (it runs 500 ms)", ran)
	}
	if got, want := a.read(), "*2\r\n+OK\r\n$1\r\nv\r\n"; got != want {
		t.Fatalf("the script saw another client's ACL SETUSER: %q, want %q", got, want)
	}
	if got := acl.read(); got != "+OK\r\n" {
		t.Fatalf("ACL SETUSER after the script = %q", got)
	}
	if at := <-cfgDone; at < 500*time.Millisecond {
		t.Fatalf("CONFIG SET answered %v into a script that runs 500 ms", at)
	}
	if got := a.do("GET", "k"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatalf("GET after ACL SETUSER -get = %q", got)
	}
}

// Nor does one that waited for a script run in the middle of the next:
// with clients running scripts back to back, some inside MULTI/EXEC, and
// another turning their user's permissions off and on, a script either
// sees the permissions off from its start (its SET fails) or never (its
// GET succeeds too); never a SET that succeeds and a GET refused.
func TestScript_KeylessCommandNeverRunsInsideAnotherClientsScript(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 10 * time.Second }))
	adm := dial(t, srv.Addr())
	if got := adm.do("ACL", "SETUSER", "u", "on", ">p", "~*", "+@all"); got != "+OK\r\n" {
		t.Fatalf("ACL SETUSER = %q", got)
	}
	const script = `local a = redis.pcall('set', KEYS[1], '1')
if type(a) == 'table' and a.err then return 'setfail' end
local i = 0 while i < 20000 do i = i + 1 end
local g = redis.pcall('get', KEYS[1])
if type(g) == 'table' and g.err then return 'getfail' end
return 'ok'`
	stop := time.Now().Add(time.Second)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := dial(t, srv.Addr())
		if r := c.do("AUTH", "u", "p"); r != "+OK\r\n" {
			t.Fatalf("AUTH = %q", r)
		}
		wg.Add(1)
		go func(w int, c *rawClient) {
			defer wg.Done()
			key := fmt.Sprintf("k%d", w)
			for time.Now().Before(stop) {
				c.conn.SetDeadline(time.Now().Add(10 * time.Second))
				var b strings.Builder
				if w%2 == 0 {
					_, err := c.conn.Write([]byte(encode("EVAL", script, "1", key)))
					if err == nil {
						err = readReply(c.rd, &b)
					}
					if err != nil {
						t.Errorf("EVAL: %v", err)
						return
					}
				} else { // the script inside EXEC, with the EXEC's ACL check of its queued command
					_, err := c.conn.Write([]byte(encode("MULTI") + encode("EVAL", script, "1", key) + encode("EXEC")))
					for i := 0; i < 3 && err == nil; i++ {
						b.Reset()
						err = readReply(c.rd, &b)
					}
					if err != nil {
						t.Errorf("MULTI/EVAL/EXEC: %v", err)
						return
					}
				}
				r := b.String()
				mu.Lock()
				got[r[strings.LastIndex(r[:len(r)-2], "\n")+1:len(r)-2]]++
				mu.Unlock()
			}
		}(w, c)
	}
	toggles := 0
	for time.Now().Before(stop) {
		adm.do("ACL", "SETUSER", "u", "-set", "-get")
		adm.do("ACL", "SETUSER", "u", "+set", "+get")
		toggles += 2
	}
	wg.Wait()
	t.Logf("%d ACL changes; script results %v", toggles, got)
	if got["getfail"] > 0 {
		t.Fatalf("%d scripts saw their user's permissions change partway through (results %v)", got["getfail"], got)
	}
	if got["ok"] == 0 || toggles == 0 {
		t.Fatalf("the test ran no whole script, or no ACL change: results %v, %d ACL changes", got, toggles)
	}
}

// ... and one sent before the busy threshold gets BUSY once the script
// passes it, as a keyed command does (TestBusyScript_ClientsQueuedBefore
// ThresholdGetBusy), without having run.
func TestBusyScript_KeylessCommandQueuedBeforeThresholdGetsBusy(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 300 * time.Millisecond }))
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	k := dial(t, srv.Addr())
	a.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "the script running", srv.Engine().ScriptRunning)
	if ran := time.Since(srv.Engine().ScriptStart()); ran >= 200*time.Millisecond {
		t.Skipf("the script had run %v before the test could send a command behind it (threshold 300 ms)", ran)
	}
	if got := b.do("CONFIG", "SET", "maxmemory-samples", "9"); got != "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n" {
		t.Fatalf("CONFIG SET sent before the threshold got %q", got)
	}
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	a.read()
	if got := b.do("CONFIG", "GET", "maxmemory-samples"); got != "*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n" {
		t.Fatalf("the BUSY CONFIG SET must not have run: %q", got)
	}
}

func TestHostileInput_ServerSurvivesAndAnswersOthers(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.RequirePass = "pw" }))
	good := dial(t, srv.Addr())
	if got := good.do("AUTH", "pw"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	cases := []struct{ in, want string }{
		{"*1\r\n$9223372036854775800\r\nxx\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*4611686018427387904\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"*1\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
		{strings.Repeat("a", 70000), "-ERR Protocol error: too big inline request\r\n"},
		{"*1\r\n+x\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
	}
	for _, c := range cases {
		bad := dial(t, srv.Addr())
		bad.send(c.in)
		start := time.Now()
		if got := bad.read(); got != c.want {
			t.Errorf("%.40q: got %q, want %q", c.in, got, c.want)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("%.40q: slow error reply", c.in)
		}
	}
	// empty multibulk headers are ignored, as Redis does
	c := dial(t, srv.Addr())
	c.send("*0\r\n*-1\r\n" + encode("AUTH", "pw"))
	if got := c.read(); got != "+OK\r\n" {
		t.Fatalf("after empty headers: %q", got)
	}
	if got := good.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("server must stay up for well-behaved clients: %q", got)
	}
}

// A large EVAL's script compiles before the keyspace lock is taken
// (engine.Precompiler), alone and queued in MULTI: over the wire its
// replies and caching are those of any EVAL.
func TestLargeEval_PrecompiledAloneAndInMulti(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	pad := "\n--" + strings.Repeat("x", engine.PrecompileMin)
	release := "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end" + pad
	c.do("SET", "k", "tok")
	if got := c.do("EVAL", release, "1", "k", "tok"); got != ":1\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	sha := luavm.SHA1Hex([]byte(release))
	if got := c.do("SCRIPT", "EXISTS", sha); got != "*1\r\n:1\r\n" {
		t.Fatalf("SCRIPT EXISTS after EVAL = %q", got)
	}
	c.do("SCRIPT", "FLUSH")
	c.do("SET", "k", "tok")
	c.do("MULTI")
	c.do("EVAL", release, "1", "k", "tok")
	c.do("EVAL", "return 1 +"+pad, "0")
	got := c.do("EXEC")
	if !strings.HasPrefix(got, "*2\r\n:1\r\n-ERR Error compiling script (new function): user_script:") {
		t.Fatalf("EXEC = %q", got)
	}
	if got := c.do("SCRIPT", "EXISTS", sha); got != "*1\r\n:1\r\n" {
		t.Fatalf("SCRIPT EXISTS after EXEC = %q", got)
	}
}

// cmdstatUsec returns name's usec in INFO commandstats, -1 without it.
func cmdstatUsec(t *testing.T, info, name string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+name+":"); ok {
			_, v, _ = strings.Cut(v, "usec=")
			n, err := strconv.ParseInt(v[:strings.IndexByte(v, ',')], 10, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	return -1
}

// A large EVAL's or library's compiling counts once in its time
// (commandstats): the time is at least something and at most the round
// trip the client saw. (Compiled before the keyspace lock, it was
// counted twice in a batch.)
func TestLargeEval_CompilingCountedOnce(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	var b strings.Builder
	b.WriteString("local x = 0\n")
	for range 20000 {
		b.WriteString("x = x + 1\n")
	}
	code := b.String()
	for _, tc := range []struct {
		name string
		send []string
		last string // the last reply
	}{
		{"eval", []string{encode("EVAL", code+"return x", "0")}, ":20000\r\n"},
		{"exec", []string{encode("MULTI"), encode("EVAL", code+"return x ", "0"), encode("EXEC")}, "*1\r\n:20000\r\n"},
		{"function|load", []string{encode("FUNCTION", "LOAD", "REPLACE", "#!lua name=big\n"+code+"redis.register_function('f', function() return x end)")}, "$3\r\nbig\r\n"},
	} {
		c.do("SCRIPT", "FLUSH")
		c.do("CONFIG", "RESETSTAT")
		start := time.Now()
		var last string
		for _, req := range tc.send {
			c.send(req)
			last = c.read()
		}
		if last != tc.last {
			t.Errorf("%s: %q, want %q", tc.name, last, tc.last)
		}
		rtt := time.Since(start).Microseconds()
		if us := cmdstatUsec(t, c.do("INFO", "commandstats"), tc.name); us <= 0 || us > rtt {
			t.Errorf("%s: commandstats usec %d, round trip %d µs", tc.name, us, rtt)
		}
	}
}
