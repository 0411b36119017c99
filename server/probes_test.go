package server

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// Redis 7.2 behaviour the 7.0 oracle of compat/diff lacks.

// notFromScript is the error of a script calling a command flagged
// noscript.
func notFromScript(script string) string {
	sum := sha1.Sum([]byte(script))
	return "-ERR This Redis command is not allowed from script script: " + hex.EncodeToString(sum[:]) + ", on @user_script:1.\r\n"
}

// CLIENT NO-TOUCH (7.2) and NO-EVICT set flags CLIENT INFO shows.
func TestProbes_ClientNoTouchNoEvict(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "CLIENT", "NO-TOUCH", "on")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=T ") {
		t.Fatalf("CLIENT INFO after NO-TOUCH on: %q", info)
	}
	c.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "ON")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=eT ") {
		t.Fatalf("CLIENT INFO after NO-EVICT on: %q", info)
	}
	c.expectDo("+OK\r\n", "CLIENT", "NO-TOUCH", "OFF")
	c.expectDo("+OK\r\n", "client", "no-evict", "off")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=N ") {
		t.Fatalf("CLIENT INFO after both off: %q", info)
	}
	c.expectDo("-ERR syntax error\r\n", "CLIENT", "NO-TOUCH", "maybe")
	c.expectDo("-ERR wrong number of arguments for 'client|no-touch' command\r\n", "CLIENT", "NO-TOUCH")
	script := "return redis.call('client', 'no-touch', 'on')"
	c.expectDo(notFromScript(script), "EVAL", script, "0")
}

// WAITAOF (7.2): appendonly is off, so numlocal 1 is refused; [0, 0]
// otherwise.
func TestProbes_WaitAOF(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	ok := "*2\r\n:0\r\n:0\r\n"
	c.expectDo(ok, "WAITAOF", "0", "0", "0")
	c.expectDo(ok, "WAITAOF", "0", "1", "20") // no replica: after the timeout
	c.expectDo("-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n", "WAITAOF", "1", "0", "0")
	c.expectDo("-ERR value is out of range, value must between 0 and 1\r\n", "WAITAOF", "2", "0", "0")
	c.expectDo("-ERR value is out of range, value must between 0 and 1\r\n", "WAITAOF", "-1", "0", "0")
	c.expectDo("-ERR value is not an integer or out of range\r\n", "WAITAOF", "x", "0", "0")
	c.expectDo("-ERR value is out of range, must be positive\r\n", "WAITAOF", "0", "-1", "0")
	c.expectDo("-ERR value is out of range, must be positive\r\n", "WAITAOF", "0", "x", "0")
	c.expectDo("-ERR timeout is negative\r\n", "WAITAOF", "0", "0", "-1")
	c.expectDo("-ERR timeout is not an integer or out of range\r\n", "WAITAOF", "0", "0", "x")
	// Arguments are checked before appendonly.
	c.expectDo("-ERR timeout is negative\r\n", "WAITAOF", "1", "0", "-1")
	c.expectDo("-ERR wrong number of arguments for 'waitaof' command\r\n", "WAITAOF", "0", "0")
	script := "return redis.call('waitaof', 0, 0, 0)"
	c.expectDo(notFromScript(script), "EVAL", script, "0")
}

// WAIT may run in scripts in 7.2, where it never blocks; a timeout that
// would overflow is refused.
func TestProbes_WaitInScriptAndTimeoutRange(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.expectDo(":0\r\n", "EVAL", "return redis.call('wait', 1, 0)", "0") // would block forever outside a script
	c.expectDo("-ERR timeout is out of range\r\n", "WAIT", "0", "9223372036854775807")
	c.expectDo(":0\r\n", "WAIT", "0", "0")
}

// A client blocked in WAIT still receives pushes, and Close ends the wait.
func TestProbes_WaitBlocksUntilCloseAndStillGetsPushes(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := dial(t, srv.Addr())
	c.hello3()
	c.expectDo(confirmation(3, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	c.send(encode("WAIT", "1", "0"))
	pub := dial(t, srv.Addr())
	eventually(t, "the message to reach the blocked client", func() bool {
		return pub.do("PUBLISH", "ch", "while-waiting") == ":1\r\n"
	})
	c.expect(msg3("ch", "while-waiting"))
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a WAIT without timeout")
	}
}

// CLIENT NO-TOUCH keeps the access times of the keys the client's
// commands (and its scripts' commands) read, but for TOUCH's, as Redis
// 7.2's; another client's reads still count; RESET turns it off, as 7.2's
// does.
func TestClientNoTouch_KeepsAccessTimes(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "SET", "k", "v")
	c.expectDo("+OK\r\n", "SET", "j", "v")
	srv.Advance(10 * time.Second)
	c.expectDo("+OK\r\n", "CLIENT", "NO-TOUCH", "on")
	c.expectDo("$1\r\nv\r\n", "GET", "k")
	c.expectDo("$1\r\nv\r\n", "EVAL", "return redis.call('get', KEYS[1])", "1", "k")
	c.expectDo(":10\r\n", "OBJECT", "IDLETIME", "k")
	c.expectDo(":1\r\n", "TOUCH", "j")
	c.expectDo(":0\r\n", "OBJECT", "IDLETIME", "j")
	other.expectDo("$1\r\nv\r\n", "GET", "k")
	c.expectDo(":0\r\n", "OBJECT", "IDLETIME", "k")
	srv.Advance(5 * time.Second)
	c.expectDo("+RESET\r\n", "RESET")
	if info := c.do("CLIENT", "INFO"); !strings.Contains(info, " flags=N ") {
		t.Fatalf("CLIENT INFO after RESET: %q", info)
	}
	c.expectDo("$1\r\nv\r\n", "GET", "k")
	c.expectDo(":0\r\n", "OBJECT", "IDLETIME", "k")
}

// A client that hangs up while WAIT (or WAITAOF) blocks it is freed at
// once, as Redis frees it: it held its connection slot until the timeout
// (0: for good), so hang-ups filled maxclients. A killed one is freed too.
func TestProbes_WaitClientHangsUpIsFreed(t *testing.T) {
	srv := RunT(t)
	for _, req := range [][]string{{"WAIT", "1", "0"}, {"WAITAOF", "0", "1", "0"}} {
		for i := 0; i < 5; i++ {
			c := dial(t, srv.Addr())
			c.send(encode(req...))
			c.conn.Close()
		}
	}
	eventually(t, "the hung-up WAIT clients to be freed", func() bool {
		return srv.ServerInfo().ConnectedClients == 0
	})
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	a.send(encode("WAIT", "1", "0"))
	eventually(t, "WAIT to block", func() bool { return strings.Contains(b.do("CLIENT", "LIST"), "cmd=wait") })
	b.expectDo(":1\r\n", "CLIENT", "KILL", "ID", id)
	a.expectClosed()
	eventually(t, "the killed WAIT client to be freed", func() bool {
		return srv.ServerInfo().ConnectedClients == 1
	})
}

// WAIT and WAITAOF block as Redis blocks a client: INFO's blocked_clients
// and CLIENT LIST's 'b' count them, and CLIENT UNBLOCK ends the wait with
// the timeout's reply, or the UNBLOCKED error (replies as redis-server
// 7.0.15 sends them; 7.0 has no WAITAOF). Before, they waited outside the
// engine: CLIENT UNBLOCK said 0 and left them waiting.
func TestProbes_WaitIsABlockedClient(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	for _, tc := range []struct {
		req  []string
		how  []string
		want string
	}{
		{[]string{"WAIT", "1", "0"}, nil, ":0\r\n"},
		{[]string{"WAIT", "1", "100000"}, []string{"TIMEOUT"}, ":0\r\n"},
		{[]string{"wait", "5", "0"}, []string{"error"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
		{[]string{"WAITAOF", "0", "1", "0"}, nil, "*2\r\n:0\r\n:0\r\n"},
		{[]string{"WAITAOF", "0", "1", "0"}, []string{"ERROR"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	} {
		a.send(encode(tc.req...))
		if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
			t.Fatalf("%q: %v", tc.req, err)
		}
		if info := b.do("INFO", "clients"); !strings.Contains(info, "\r\nblocked_clients:1\r\n") {
			t.Fatalf("%q: INFO clients = %q", tc.req, info)
		}
		if list := b.do("CLIENT", "LIST", "ID", id); !strings.Contains(list, " flags=b ") {
			t.Fatalf("%q: CLIENT LIST = %q", tc.req, list)
		}
		b.expectDo(":1\r\n", append([]string{"CLIENT", "UNBLOCK", id}, tc.how...)...)
		a.expect(tc.want)
		if info := b.do("INFO", "clients"); !strings.Contains(info, "\r\nblocked_clients:0\r\n") {
			t.Fatalf("%q after UNBLOCK: INFO clients = %q", tc.req, info)
		}
		b.expectDo(":0\r\n", "CLIENT", "UNBLOCK", id) // no longer blocked
	}
	// The commands pipelined behind a WAIT run after it.
	a.send(encode("WAIT", "1", "0") + encode("PING"))
	if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b.expectDo(":1\r\n", "CLIENT", "UNBLOCK", id)
	a.expect(":0\r\n")
	a.expect("+PONG\r\n")
	// Inside a transaction WAIT does not block (a timeout of 0 would be
	// for good), as in Redis.
	a.expectDo("+OK\r\n", "MULTI")
	a.expectDo("+QUEUED\r\n", "WAIT", "1", "0")
	a.expectDo("+QUEUED\r\n", "WAITAOF", "0", "1", "0")
	a.expectDo("*2\r\n:0\r\n*2\r\n:0\r\n:0\r\n", "EXEC")
	if info := b.do("INFO", "errorstats"); !strings.Contains(info, "errorstat_UNBLOCKED:count=2\r\n") {
		t.Fatalf("INFO errorstats = %q", info)
	}
}

// On a manual clock a WAIT's timeout passes when Advance moves the clock
// past it, as a BLPOP's does.
func TestProbes_WaitTimeoutOnManualClock(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a := dial(t, srv.Addr())
	a.send(encode("WAIT", "1", "50"))
	if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Real time passing does not end it: nothing comes in 300 ms.
	_ = a.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := a.conn.Read(make([]byte, 16)); n != 0 || err == nil {
		t.Fatalf("WAIT replied on real time: %d bytes, %v", n, err)
	}
	srv.Advance(50 * time.Millisecond)
	srv.Advance(time.Millisecond) // a wait lives through its last millisecond
	a.expect(":0\r\n")
}
