package server

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Transactions over the wire. Expected replies were observed from
// redis-server 7.0.15 (raw RESP, several connections, real sleeps).

const busyErr = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

func expectReply(t *testing.T, c *rawClient, want string, args ...string) {
	t.Helper()
	if got := c.do(args...); got != want {
		t.Fatalf("%q: got %q, want %q", args, got, want)
	}
}

// waitFor polls cond until it holds or 5 s pass (a bound on a hang, not a
// timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestExec_NullArrayAndRepliesPerProtocol(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	for _, p := range []struct{ hello, null, nilGet string }{
		{"2", "*-1\r\n", "$-1\r\n"},
		{"3", "_\r\n", "_\r\n"},
	} {
		a.do("HELLO", p.hello)
		expectReply(t, a, "+OK\r\n", "WATCH", "k")
		expectReply(t, b, "+OK\r\n", "SET", "k", "1")
		expectReply(t, a, "+OK\r\n", "MULTI")
		expectReply(t, a, "+QUEUED\r\n", "GET", "k")
		expectReply(t, a, p.null, "EXEC")

		expectReply(t, a, "+OK\r\n", "MULTI")
		expectReply(t, a, "+QUEUED\r\n", "GET", "missing")
		expectReply(t, a, "+QUEUED\r\n", "INCR", "k")
		expectReply(t, a, "+QUEUED\r\n", "SET", "k", "v", "NX", "XX")
		expectReply(t, a, "*3\r\n"+p.nilGet+":2\r\n-ERR syntax error\r\n", "EXEC")
	}
}

func TestWatch_ConflictBetweenConnections(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	expectReply(t, a, "+OK\r\n", "SET", "k", "1")
	expectReply(t, a, "+OK\r\n", "WATCH", "k")
	expectReply(t, a, "$1\r\n1\r\n", "GET", "k")
	expectReply(t, b, ":2\r\n", "INCR", "k")
	expectReply(t, a, "+OK\r\n", "MULTI")
	expectReply(t, a, "+QUEUED\r\n", "SET", "k", "100")
	expectReply(t, a, "*-1\r\n", "EXEC")
	expectReply(t, a, "$1\r\n2\r\n", "GET", "k")
}

func TestWatch_KeyExpiringBeforeExecAborts_ManualClock(t *testing.T) {
	// redis 7.0.15 with real sleeps: SET k v PX 100; WATCH k; sleep 300ms;
	// MULTI; EXEC -> *-1 (the key's active or lazy expiry touches the
	// watch, or EXEC finds it expired: isWatchedKeyExpired).
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	expectReply(t, c, "+OK\r\n", "SET", "k", "v", "PX", "100")
	expectReply(t, c, "+OK\r\n", "WATCH", "k")
	srv.Advance(101 * time.Millisecond)
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "+QUEUED\r\n", "SET", "k", "mine")
	expectReply(t, c, "*-1\r\n", "EXEC")
	expectReply(t, c, "$-1\r\n", "GET", "k")

	// the same after the active loop has certainly reclaimed it
	expectReply(t, c, "+OK\r\n", "SET", "k", "v", "PX", "100")
	expectReply(t, c, "+OK\r\n", "WATCH", "k")
	srv.Advance(101 * time.Millisecond)
	waitFor(t, "active expiry", func() bool { n, _ := srv.Engine().KeyCount(); return n == 0 })
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "*-1\r\n", "EXEC")

	// and one second short of the deadline it runs
	expectReply(t, c, "+OK\r\n", "SET", "k", "v", "PX", "100")
	expectReply(t, c, "+OK\r\n", "WATCH", "k")
	srv.Advance(99 * time.Millisecond)
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "+QUEUED\r\n", "PEXPIRE", "k", "1000")
	expectReply(t, c, "*1\r\n:1\r\n", "EXEC")
}

func TestWatch_KeyAlreadyExpiredAtWatchDoesNotAbort_ManualClock(t *testing.T) {
	// redis 7.0.15: SET k v PX 50; sleep 100ms; WATCH k; MULTI; EXEC -> *0
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	expectReply(t, c, "+OK\r\n", "SET", "k", "v", "PX", "50")
	srv.Advance(100 * time.Millisecond)
	expectReply(t, c, "+OK\r\n", "WATCH", "k")
	waitFor(t, "active expiry", func() bool { n, _ := srv.Engine().KeyCount(); return n == 0 })
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "*0\r\n", "EXEC")
}

func TestMulti_BusyScriptRejectsQueueingAndExec(t *testing.T) {
	// redis 7.0.15, busy-reply-threshold 100, another client in
	// EVAL "while true do end" 0:
	//   MULTI +OK; SET a 1 -BUSY...; EXEC -EXECABORT ... because of: BUSY ...;
	//   DISCARD -ERR DISCARD without MULTI; UNWATCH +OK; MULTI +OK;
	//   UNWATCH +QUEUED; EXEC -EXECABORT ... because of: BUSY ...;
	//   MULTI +OK; DISCARD +OK
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond }))
	a, b, k := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("EVAL", "while true do end", "0"))
	waitFor(t, "the script to be busy", func() bool { return srv.Engine().Busy() })
	expectReply(t, b, "+OK\r\n", "MULTI")
	expectReply(t, b, "-"+busyErr+"\r\n", "SET", "a", "1")
	expectReply(t, b, "-EXECABORT Transaction discarded because of: "+busyErr+"\r\n", "EXEC")
	expectReply(t, b, "-ERR DISCARD without MULTI\r\n", "DISCARD")
	expectReply(t, b, "+OK\r\n", "UNWATCH")
	expectReply(t, b, "+OK\r\n", "MULTI")
	expectReply(t, b, "+QUEUED\r\n", "UNWATCH") // allowed while busy, and queued like any command
	expectReply(t, b, "-EXECABORT Transaction discarded because of: "+busyErr+"\r\n", "EXEC")
	expectReply(t, b, "+OK\r\n", "MULTI")
	expectReply(t, b, "+OK\r\n", "DISCARD")
	expectReply(t, k, "+OK\r\n", "SCRIPT", "KILL")
	a.read()
	expectReply(t, b, "-ERR EXEC without MULTI\r\n", "EXEC")
	expectReply(t, b, "$-1\r\n", "GET", "a")

	// queued before the script got busy, EXEC during it: aborted, and the
	// transaction never runs
	expectReply(t, b, "+OK\r\n", "MULTI")
	expectReply(t, b, "+QUEUED\r\n", "SET", "a", "1")
	a.send(encode("EVAL", "while true do end", "0"))
	waitFor(t, "the script to be busy", func() bool { return srv.Engine().Busy() })
	expectReply(t, b, "-EXECABORT Transaction discarded because of: "+busyErr+"\r\n", "EXEC")
	expectReply(t, k, "+OK\r\n", "SCRIPT", "KILL")
	a.read()
	expectReply(t, b, "-ERR EXEC without MULTI\r\n", "EXEC")
	expectReply(t, b, "$-1\r\n", "GET", "a")
}

func TestMulti_NoAuth(t *testing.T) {
	// redis 7.0.15 with requirepass, before AUTH
	srv := RunT(t, WithConfig(func(c *Config) { c.RequirePass = "pw" }))
	c := dial(t, srv.Addr())
	expectReply(t, c, "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n", "EXEC")
	for _, cmd := range [][]string{{"MULTI"}, {"DISCARD"}, {"WATCH", "a"}, {"UNWATCH"}} {
		expectReply(t, c, "-NOAUTH Authentication required.\r\n", cmd...)
	}
	expectReply(t, c, "+OK\r\n", "AUTH", "pw")
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "+QUEUED\r\n", "SET", "a", "1")
	expectReply(t, c, "*1\r\n+OK\r\n", "EXEC")
}

func TestMulti_ResetEndsTransactionAndWatches(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	expectReply(t, a, "+OK\r\n", "WATCH", "k")
	expectReply(t, a, "+OK\r\n", "MULTI")
	expectReply(t, a, "+QUEUED\r\n", "SET", "k", "from-a")
	expectReply(t, a, "+RESET\r\n", "RESET")
	if n := srv.Engine().WatchedKeys(); n != 0 {
		t.Fatalf("RESET left %d watched keys", n)
	}
	expectReply(t, a, "-ERR EXEC without MULTI\r\n", "EXEC")
	expectReply(t, b, "+OK\r\n", "SET", "k", "from-b")
	expectReply(t, a, "+OK\r\n", "MULTI")
	expectReply(t, a, "+QUEUED\r\n", "GET", "k")
	expectReply(t, a, "*1\r\n$6\r\nfrom-b\r\n", "EXEC") // the old watch is gone
}

func TestMulti_QuitInsideMultiClosesAndDropsWatches(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	expectReply(t, c, "+OK\r\n", "WATCH", "k", "j")
	expectReply(t, c, "+OK\r\n", "MULTI")
	expectReply(t, c, "+QUEUED\r\n", "SET", "k", "v")
	expectReply(t, c, "+OK\r\n", "QUIT")
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.rd.ReadByte(); err == nil {
		t.Fatal("connection must close after QUIT")
	}
	waitFor(t, "the closed connection's watches to go", func() bool { return srv.Engine().WatchedKeys() == 0 })
	d := dial(t, srv.Addr())
	expectReply(t, d, "$-1\r\n", "GET", "k") // the queued SET never ran
}

func TestWatch_DisconnectDropsWatches(t *testing.T) {
	srv := RunT(t)
	for i := 0; i < 20; i++ {
		c := dial(t, srv.Addr())
		expectReply(t, c, "+OK\r\n", "WATCH", "k"+strconv.Itoa(i), "shared")
		c.conn.Close()
	}
	waitFor(t, "closed connections' watches to go", func() bool { return srv.Engine().WatchedKeys() == 0 })
}

// TestWatch_StackExchangeLockPatternRacing runs StackExchange.Redis's
// LockExtend / LockRelease sequence (WATCH k, GET k, then MULTI,
// PEXPIRE k ms or DEL k, EXEC when the token matches, else UNWATCH) from
// two connections racing for one lock. The fast client's locks expire
// after 1-3 ms, so the other often takes the lock between its GET and its
// EXEC; WATCH must then abort its EXEC. The slow client holds its lock
// for 60 s and checks, inside its critical section and at release, that
// nobody else deleted or re-timed it.
func TestWatch_StackExchangeLockPatternRacing(t *testing.T) {
	srv := RunT(t)
	const key = "se:lock"
	const rounds = 300

	type outcome struct{ ok, aborted, mismatch int }

	// cycle returns EXEC's reply, or matched=false after UNWATCH on a
	// token mismatch. It runs on the racing goroutines: errors, not fatals.
	cycle := func(c *rawClient, token, op string, opArgs ...string) (reply string, matched bool) {
		check := func(want string, args ...string) {
			if got := c.do(args...); got != want {
				t.Errorf("%q: got %q, want %q", args, got, want)
			}
		}
		check("+OK\r\n", "WATCH", key)
		if got := c.do("GET", key); got != "$"+strconv.Itoa(len(token))+"\r\n"+token+"\r\n" {
			check("+OK\r\n", "UNWATCH")
			return "", false
		}
		check("+OK\r\n", "MULTI")
		check("+QUEUED\r\n", append([]string{op, key}, opArgs...)...)
		return c.do("EXEC"), true
	}

	var wg sync.WaitGroup
	var fast outcome
	wg.Add(2)
	go func() { // fast: short leases, often loses them mid-cycle
		defer wg.Done()
		c := dial(t, srv.Addr())
		for i := 0; i < rounds; i++ {
			tok := "fast-" + strconv.Itoa(i)
			if c.do("SET", key, tok, "PX", strconv.Itoa(1+i%3), "NX") != "+OK\r\n" {
				continue
			}
			for _, step := range []struct{ op, arg string }{{"PEXPIRE", "2"}, {"DEL", ""}} {
				args := []string{}
				if step.arg != "" {
					args = append(args, step.arg)
				}
				reply, matched := cycle(c, tok, step.op, args...)
				switch {
				case !matched:
					fast.mismatch++
				case reply == "*-1\r\n":
					fast.aborted++
				case reply == "*1\r\n:1\r\n":
					fast.ok++
				case reply == "*1\r\n:0\r\n":
					// the key expired between GET and EXEC with nobody
					// writing it: PEXPIRE/DEL of a missing key
				default:
					t.Errorf("fast %s EXEC = %q", step.op, reply)
				}
			}
		}
	}()
	go func() { // slow: long leases, must never lose one
		defer wg.Done()
		c := dial(t, srv.Addr())
		for i := 0; i < rounds; i++ {
			tok := "slow-" + strconv.Itoa(i)
			if c.do("SET", key, tok, "PX", "60000", "NX") != "+OK\r\n" {
				continue
			}
			want := "$" + strconv.Itoa(len(tok)) + "\r\n" + tok + "\r\n"
			if got := c.do("GET", key); got != want {
				t.Errorf("slow holds the lock but GET = %q", got)
			}
			reply, matched := cycle(c, tok, "PEXPIRE", "60000")
			if !matched || reply != "*1\r\n:1\r\n" {
				t.Errorf("slow extend: matched=%v EXEC=%q", matched, reply)
			}
			pttl := c.do("PTTL", key)
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(pttl, ":"))); err != nil || n < 50000 {
				t.Errorf("slow's lease was re-timed by someone else: PTTL %q", pttl)
			}
			reply, matched = cycle(c, tok, "DEL")
			if !matched || reply != "*1\r\n:1\r\n" {
				t.Errorf("slow release: matched=%v EXEC=%q", matched, reply)
			}
		}
	}()
	wg.Wait()
	t.Logf("fast client: %d EXECs ran, %d aborted by WATCH, %d token mismatches", fast.ok, fast.aborted, fast.mismatch)
	if n := srv.Engine().WatchedKeys(); n != 0 {
		t.Fatalf("%d watched keys left after every cycle ended with EXEC or UNWATCH", n)
	}
}

// The allow-busy commands queued inside MULTI run in the EXEC, which
// holds what they would wait for outside (a running script): they run
// at once there, as in Redis.
func TestExec_RunsQueuedAllowBusyCommands(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.send(encode("MULTI") + encode("UNWATCH") + encode("SCRIPT", "KILL") + encode("FUNCTION", "KILL") + encode("EXEC"))
	for i, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n",
		"*3\r\n+OK\r\n-NOTBUSY No scripts in execution right now.\r\n-NOTBUSY No scripts in execution right now.\r\n"} {
		if got := c.read(); got != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
}

// A client that kills itself inside a transaction gets no more output,
// pushes included, as Redis's (prepareClientToWrite refuses all output
// once it is to close after its reply): its own PUBLISH in the same EXEC
// sends it no message before the close.
func TestMulti_KilledItselfGetsNoPush(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.hello3()
	id := c.id()
	c.expectDo(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "SUBSCRIBE", "ch")
	c.send(encode("MULTI") + encode("CLIENT", "KILL", "ID", id, "SKIPME", "no") + encode("PUBLISH", "ch", "x") + encode("EXEC"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n"} {
		c.expect(want)
	}
	// EXEC's array, the kill's reply, and nothing after it
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, _ := io.ReadAll(c.rd)
	if string(rest) != "*2\r\n:1\r\n" {
		t.Fatalf("after the kill: %q, want %q and the close", rest, "*2\r\n:1\r\n")
	}
}
