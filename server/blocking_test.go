package server

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitBlocked waits until n clients are blocked (a synchronisation point,
// not a timing assertion: it only bounds how long a broken server may hang
// the test).
func waitBlockedClients(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Engine().BlockedClients() != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients = %d, want %d", srv.Engine().BlockedClients(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func bulkPair(k, v string) string {
	return "*2\r\n$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
}

func TestBLPOP_WokenByLPUSHFromAnotherClient(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	if info := b.do("INFO", "clients"); !strings.Contains(info, "blocked_clients:1\r\n") {
		t.Fatalf("INFO clients while a client waits:\n%s", info)
	}
	if got := b.do("LPUSH", "q", "job"); got != ":1\r\n" {
		t.Fatalf("LPUSH = %q", got)
	}
	if got := a.read(); got != bulkPair("q", "job") {
		t.Fatalf("BLPOP = %q", got)
	}
	if got := b.do("EXISTS", "q"); got != ":0\r\n" {
		t.Fatalf("the element was not taken: EXISTS = %q", got)
	}
	waitBlockedClients(t, srv, 0)
}

// python-redis-lock releases with a script that LPUSHes a signal key; the
// waiter is served when the script ends.
func TestBLPOP_WokenByLPUSHInsideScript(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "lock-signal:x", "0"))
	waitBlockedClients(t, srv, 1)
	script := "redis.call('del', KEYS[1]); redis.call('lpush', KEYS[2], 1); redis.call('pexpire', KEYS[2], 1000); return 1"
	if got := b.do("EVAL", script, "2", "lock:x", "lock-signal:x"); got != ":1\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	if got := a.read(); got != bulkPair("lock-signal:x", "1") {
		t.Fatalf("BLPOP = %q", got)
	}
}

// Waiters are served from the state a script leaves, as in Redis: a script
// that pushes and then pops the same key leaves nothing to serve.
func TestBLPOP_ScriptThatPushesAndPopsLeavesWaiterBlocked(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "k", "0"))
	waitBlockedClients(t, srv, 1)
	got := b.do("EVAL", "redis.call('lpush', KEYS[1], 'x'); return redis.call('lpop', KEYS[1])", "1", "k")
	if got != "$1\r\nx\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	// Serving ran before EVAL's reply was sent: the waiter is still there.
	if n := srv.Engine().BlockedClients(); n != 1 {
		t.Fatalf("blocked clients after the script = %d, want 1", n)
	}
	b.do("RPUSH", "k", "y")
	if got := a.read(); got != bulkPair("k", "y") {
		t.Fatalf("BLPOP = %q", got)
	}
}

func TestBLPOP_WaitersServedFirstBlockedFirst(t *testing.T) {
	srv := RunT(t)
	var cs []*rawClient
	for i := 0; i < 3; i++ {
		c := dial(t, srv.Addr())
		c.send(encode("BLPOP", "q", "0"))
		waitBlockedClients(t, srv, i+1)
		cs = append(cs, c)
	}
	p := dial(t, srv.Addr())
	if got := p.do("RPUSH", "q", "1", "2", "3", "4"); got != ":4\r\n" {
		t.Fatalf("RPUSH = %q", got)
	}
	for i, c := range cs {
		if got, want := c.read(), bulkPair("q", strconv.Itoa(i+1)); got != want {
			t.Fatalf("waiter %d got %q, want %q", i, got, want)
		}
	}
	if got := p.do("LRANGE", "q", "0", "-1"); got != "*1\r\n$1\r\n4\r\n" {
		t.Fatalf("left in the list: %q", got)
	}
}

// A waiter blocked on several keys is served from the first one, in the
// order of its keys, that holds a list when it runs again; it leaves the
// queues of all its keys.
func TestBRPOP_SeveralKeysServedOnceFromFirstNonEmpty(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BRPOP", "k1", "k2", "k1", "0"))
	waitBlockedClients(t, srv, 1)
	got := b.do("EVAL", "redis.call('rpush', 'k2', 'two'); redis.call('rpush', 'k1', 'x', 'one'); return 1", "0")
	if got != ":1\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	if got := a.read(); got != bulkPair("k1", "one") {
		t.Fatalf("BRPOP = %q", got)
	}
	if got := b.do("MGET", "x"); got != "*1\r\n$-1\r\n" {
		t.Fatalf("MGET = %q", got)
	}
	if got := b.do("LRANGE", "k2", "0", "-1"); got != "*1\r\n$3\r\ntwo\r\n" {
		t.Fatalf("k2 = %q (the waiter must be served once)", got)
	}
	waitBlockedClients(t, srv, 0)
}

func TestBLPOP_TimeoutRepliesNullArrayInBothProtocols(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("BLPOP", "missing", "0.01"); got != "*-1\r\n" {
		t.Fatalf("RESP2 timeout = %q", got)
	}
	if got := c.do("BLMOVE", "missing", "dst", "LEFT", "LEFT", "0.01"); got != "*-1\r\n" {
		t.Fatalf("RESP2 BLMOVE timeout = %q", got)
	}
	c.do("HELLO", "3")
	if got := c.do("BRPOP", "missing", "0.01"); got != "_\r\n" {
		t.Fatalf("RESP3 timeout = %q", got)
	}
	waitBlockedClients(t, srv, 0)
}

// On a manual clock a blocking command's timeout is on that clock, as
// every other time is: Advance beyond it times the command out at once
// (python-redis-lock waits with BLPOP), and as long as the clock has not
// passed it the command keeps waiting, through its last millisecond as
// in Redis, however much real time goes by.
func TestBLPOP_TimeoutFollowsTheManualClock(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())

	a.send(encode("BLPOP", "lock-signal:x", "60"))
	waitBlockedClients(t, srv, 1)
	srv.Advance(60 * time.Second) // at the deadline: still waiting
	if got := b.do("LPUSH", "lock-signal:x", "1"); got != ":1\r\n" {
		t.Fatalf("LPUSH = %q", got)
	}
	if got := a.read(); got != bulkPair("lock-signal:x", "1") {
		t.Fatalf("BLPOP served at its deadline = %q", got)
	}

	a.send(encode("BLMOVE", "src", "dst", "LEFT", "LEFT", "60"))
	waitBlockedClients(t, srv, 1)
	srv.Advance(60*time.Second + time.Millisecond) // past it: a minute, without waiting one
	if got := a.read(); got != "*-1\r\n" {
		t.Fatalf("BLMOVE after Advance past its timeout = %q", got)
	}
	a.send(encode("BZPOPMIN", "z", "0.5"))
	waitBlockedClients(t, srv, 1)
	srv.Advance(501 * time.Millisecond)
	if got := a.read(); got != "*-1\r\n" {
		t.Fatalf("BZPOPMIN after Advance past its timeout = %q", got)
	}
	waitBlockedClients(t, srv, 0)

	// A wait with no timeout is not ended by the clock.
	a.send(encode("BRPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	srv.Advance(24 * time.Hour)
	b.do("RPUSH", "q", "job")
	if got := a.read(); got != bulkPair("q", "job") {
		t.Fatalf("BRPOP 0 after a day = %q", got)
	}
}

// A client that disconnects while blocked leaves the queue at once: the
// next push stays in the list instead of going to a dead connection.
func TestBLPOP_DisconnectWhileBlockedLeavesElementInList(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	a.conn.Close()
	waitBlockedClients(t, srv, 0)
	b.do("LPUSH", "q", "job")
	if got := b.do("LRANGE", "q", "0", "-1"); got != "*1\r\n$3\r\njob\r\n" {
		t.Fatalf("LRANGE = %q", got)
	}
}

// Commands pipelined behind a blocking command, in the same write or sent
// while it waits, run after it has been served, in order.
func TestBLPOP_PipelinedCommandsRunAfterItIsServed(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("SET", "x", "1") + encode("BLPOP", "q", "0") + encode("INCR", "x") + encode("GET", "x"))
	if got := a.read(); got != "+OK\r\n" {
		t.Fatalf("SET = %q (replies before the blocking command are sent)", got)
	}
	waitBlockedClients(t, srv, 1)
	a.send(encode("INCR", "x"))
	if got := b.do("GET", "x"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET x = %q: commands behind BLPOP ran before it was served", got)
	}
	b.do("RPUSH", "q", "v")
	for _, want := range []string{bulkPair("q", "v"), ":2\r\n", "$1\r\n2\r\n", ":3\r\n"} {
		if got := a.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestBLPOP_InsideScriptDoesNotBlock(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "q"); got != "$-1\r\n" {
		t.Fatalf("empty: %q", got)
	}
	c.do("RPUSH", "q", "a")
	if got := c.do("EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "q"); got != bulkPair("q", "a") {
		t.Fatalf("non-empty: %q", got)
	}
	if got := c.do("EVAL", "return redis.call('blmove', KEYS[1], 'd', 'LEFT', 'LEFT', 0)", "1", "q"); got != "$-1\r\n" {
		t.Fatalf("BLMOVE in a script: %q", got)
	}
	waitBlockedClients(t, srv, 0)
}

func TestClientUnblock(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	if got := b.do("CLIENT", "UNBLOCK", id); got != ":0\r\n" {
		t.Fatalf("unblocking a client that is not blocked = %q", got)
	}
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	if got := b.do("CLIENT", "UNBLOCK", id); got != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK = %q", got)
	}
	if got := a.read(); got != "*-1\r\n" {
		t.Fatalf("unblocked as a timeout: %q", got)
	}
	a.send(encode("BRPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	if got := b.do("CLIENT", "UNBLOCK", id, "error"); got != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK ERROR = %q", got)
	}
	if got := a.read(); got != "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" {
		t.Fatalf("unblocked with an error: %q", got)
	}
	if got := a.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("connection after unblock: %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "UNBLOCK", id, "bogus"}, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "x", "bogus"}, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "UNBLOCK"}, "-ERR wrong number of arguments for 'client|unblock' command\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "1", "2", "3"}, "-ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "999999"}, ":0\r\n"},
	} {
		if got := b.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// BLMOVE pushes into a list another client waits on: that one is served
// too, in the same round.
func TestBLMOVE_ChainsToClientWaitingOnDestination(t *testing.T) {
	srv := RunT(t)
	a, b, p := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	b.send(encode("BLPOP", "dst", "0"))
	waitBlockedClients(t, srv, 1)
	a.send(encode("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"))
	waitBlockedClients(t, srv, 2)
	p.do("RPUSH", "src", "foo")
	if got := a.read(); got != "$3\r\nfoo\r\n" {
		t.Fatalf("BLMOVE = %q", got)
	}
	if got := b.read(); got != bulkPair("dst", "foo") {
		t.Fatalf("BLPOP = %q", got)
	}
	if got := p.do("EXISTS", "src", "dst"); got != ":0\r\n" {
		t.Fatalf("EXISTS = %q", got)
	}
}

// As in Redis 7.2, a waiter's command runs again when it is served, so a
// destination of the wrong kind is reported then, and the element stays.
func TestBRPOPLPUSH_ServedWithWrongDestinationReportsWrongType(t *testing.T) {
	srv := RunT(t)
	a, p := dial(t, srv.Addr()), dial(t, srv.Addr())
	p.do("SET", "dst", "string")
	a.send(encode("BRPOPLPUSH", "src", "dst", "0"))
	waitBlockedClients(t, srv, 1)
	p.do("RPUSH", "src", "a", "b")
	if got := a.read(); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("served with a string destination: %q", got)
	}
	if got := p.do("LRANGE", "src", "0", "-1"); got != "*2\r\n$1\r\na\r\n$1\r\nb\r\n" {
		t.Fatalf("src = %q", got)
	}
}

// A key that becomes a string does not wake a list waiter; it is served
// once a list appears.
func TestBLPOP_KeyOfAnotherKindDoesNotWake(t *testing.T) {
	srv := RunT(t)
	a, p := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "k", "0"))
	waitBlockedClients(t, srv, 1)
	p.do("SET", "k", "v")
	p.do("HSET", "h", "f", "v")
	if n := srv.Engine().BlockedClients(); n != 1 {
		t.Fatalf("blocked clients = %d after SET", n)
	}
	p.do("DEL", "k")
	p.do("RPUSH", "k", "x")
	if got := a.read(); got != bulkPair("k", "x") {
		t.Fatalf("BLPOP = %q", got)
	}
}

// Close ends blocked connections promptly.
func TestClose_WithBlockedClients(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var cs []*rawClient
	for i := 0; i < 3; i++ {
		c := dial(t, srv.Addr())
		c.send(encode("BLPOP", "q"+strconv.Itoa(i), "0"))
		cs = append(cs, c)
	}
	waitBlockedClients(t, srv, 3)
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with blocked clients")
	}
	for _, c := range cs {
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.rd.ReadByte(); err == nil {
			t.Fatal("a blocked connection got a reply instead of being closed")
		}
	}
	if n := srv.Engine().BlockedClients(); n != 0 {
		t.Fatalf("blocked clients after Close = %d", n)
	}
}

// A timeout that fires while the waiter is being served must not lose the
// element: whichever wins, the element is either delivered or still in the
// list. Many short waits make the race likely.
func TestBLPOP_TimeoutRacingPushNeverLosesElements(t *testing.T) {
	srv := RunT(t)
	a, p := dial(t, srv.Addr()), dial(t, srv.Addr())
	delivered := 0
	for i := 0; i < 200; i++ {
		a.send(encode("BLPOP", "q", "0.001"))
		p.do("RPUSH", "q", "x")
		if got := a.read(); got == bulkPair("q", "x") {
			delivered++
		} else if got != "*-1\r\n" {
			t.Fatalf("round %d: BLPOP = %q", i, got)
		}
	}
	left, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p.do("LLEN", "q"), ":"), "\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if delivered+left != 200 {
		t.Fatalf("%d delivered + %d left in the list != 200 pushed", delivered, left)
	}
}

// A blocked client's input is read on while it waits, as Redis reads it
// into its query buffer: a client that floods while blocked is not
// stalled, and once the wait ends every command sent is served, in order.
func TestBLPOP_InputWhileBlockedIsServedAfter(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)

	// 16 MB of commands: far more than loopback's socket buffers hold
	var cmds strings.Builder
	n := 0
	for ; cmds.Len() < 16<<20; n++ {
		cmds.WriteString(encode("SET", "k", strconv.Itoa(n)+strings.Repeat("v", 4096)))
	}
	a.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if sent, err := a.conn.Write([]byte(cmds.String())); err != nil {
		t.Fatalf("sent %d of %d bytes while blocked: %v", sent, cmds.Len(), err)
	}
	if got := b.do("LPUSH", "q", "x"); got != ":1\r\n" {
		t.Fatalf("LPUSH = %q", got)
	}
	if got := a.read(); got != bulkPair("q", "x") {
		t.Fatalf("BLPOP = %q", got)
	}
	for i := 0; i < n; i++ {
		if got := a.read(); got != "+OK\r\n" {
			t.Fatalf("SET %d = %q", i, got)
		}
	}
	if got := a.do("STRLEN", "k"); got != ":"+strconv.Itoa(len(strconv.Itoa(n-1))+4096)+"\r\n" {
		t.Fatalf("STRLEN k = %q: the last SET was not the last run", got)
	}
}

// A blocked client that hangs up after sending more than a megabyte is
// taken out of the wait at once: an element pushed afterwards stays in
// the list, not popped for a client that is gone. (The read-ahead once
// stopped at 1 MB, and the hang-up went unseen behind the unread bytes.)
func TestBLPOP_HangUpAfterLargeInputWhileBlocked(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	flood := strings.Repeat(encode("SET", "k", strings.Repeat("v", 4096)), 1000) // 4 MB
	a.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if sent, err := a.conn.Write([]byte(flood)); err != nil {
		t.Fatalf("sent %d of %d bytes while blocked: %v", sent, len(flood), err)
	}
	a.conn.Close()
	expectPushKeptFromTheGone(t, srv, b)
}

// expectPushKeptFromTheGone checks, once no client is blocked, that what
// b pushes to q stays there, and that the gone client's pipelined SETs
// of k never ran.
func expectPushKeptFromTheGone(t *testing.T, srv *Server, b *rawClient) {
	t.Helper()
	waitBlockedClients(t, srv, 0)
	b.expectDo(":1\r\n", "LPUSH", "q", "x")
	b.expectDo(":1\r\n", "LLEN", "q")
	b.expectDo(":0\r\n", "EXISTS", "k")
}

// A blocked client whose unserved input passes client-query-buffer-limit
// is closed, as Redis closes it ("Closing client that reached max query
// buffer length", flags=b), and its wait ends: the list keeps what is
// pushed next.
func TestBLPOP_InputPastQueryBufferLimitWhileBlockedCloses(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	b.expectDo("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	a.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	flood := strings.Repeat(encode("SET", "k", strings.Repeat("v", 4096)), 4000) // 16 MB
	a.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := a.conn.Write([]byte(flood)); err == nil {
		t.Fatal("16 MB sent while blocked were all taken with a 1 MB query buffer limit")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending while blocked: %v, want the connection closed", err)
	}
	expectPushKeptFromTheGone(t, srv, b)
}

// setsOf returns SET k requests of exactly n bytes in all.
func setsOf(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for b.Len() < n {
		if req := encode("SET", "k", strings.Repeat("v", 4096)); n-b.Len() >= len(req)+64 {
			b.WriteString(req)
			continue
		}
		// the last one sized to end at n: its length's digits count too
		rest := n - b.Len()
		for v := rest; v >= 0; v-- {
			if req := encode("SET", "k", strings.Repeat("v", v)); len(req) == rest {
				b.WriteString(req)
				return b.String()
			}
		}
		t.Fatalf("no SET of %d bytes", rest)
	}
	return b.String()
}

// waitReadAhead waits until a blocked client's read-ahead holds n bytes.
func waitReadAhead(t *testing.T, srv *Server, n int) {
	t.Helper()
	waitFor(t, "the blocked client's input read", func() bool {
		held := 0
		srv.clients.Range(func(k, _ any) bool {
			if c := k.(*client); c.fx.blocked.Load() {
				held, _ = unpackWaiting(c.fc.aheadMem.Load())
			}
			return true
		})
		return held >= n
	})
}

// expectBlockedServed pushes to q and expects the blocked a to get it,
// then sets replies to the requests it sent while blocked.
func expectBlockedServed(t *testing.T, a, b *rawClient, sets int) {
	t.Helper()
	b.expectDo(":1\r\n", "LPUSH", "q", "x")
	if got := a.read(); got != bulkPair("q", "x") {
		t.Fatalf("BLPOP = %q", got)
	}
	for i := 0; i < sets; i++ {
		if got := a.read(); got != "+OK\r\n" {
			t.Fatalf("SET %d = %q", i, got)
		}
	}
}

// The query buffer limit is a ceiling a blocked client may reach: as
// Redis closes a client whose query buffer is over the limit, one that
// sends exactly the limit while blocked is served. And the limit is the
// one in force as it sends: raised while it is blocked, it may send more;
// lowered, it is closed on its next input past it. (The read-ahead once
// closed it at the limit, and kept the limit it started with.)
func TestBLPOP_QueryBufferLimitWhileBlocked(t *testing.T) {
	srv := RunT(t)
	b := dial(t, srv.Addr())
	blocked := func() *rawClient {
		a := dial(t, srv.Addr())
		a.send(encode("BLPOP", "q", "0"))
		waitBlockedClients(t, srv, 1)
		return a
	}
	send := func(a *rawClient, in string) error {
		a.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
		_, err := a.conn.Write([]byte(in))
		return err
	}

	b.expectDo("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	a := blocked()
	in := setsOf(t, 1<<20)
	if err := send(a, in); err != nil {
		t.Fatal(err)
	}
	waitReadAhead(t, srv, len(in))
	expectBlockedServed(t, a, b, strings.Count(in, "*3\r\n"))

	// a first request read while blocked: the read-ahead runs, with the
	// limit in force when it started
	first := encode("SET", "k", "first")
	readingAhead := func() *rawClient {
		a := blocked()
		if err := send(a, first); err != nil {
			t.Fatal(err)
		}
		waitReadAhead(t, srv, len(first))
		return a
	}
	a = readingAhead()
	b.expectDo("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "64mb")
	in = setsOf(t, 4<<20)
	if err := send(a, in); err != nil {
		t.Fatalf("sending 4 MB while blocked, the limit raised to 64 MB: %v", err)
	}
	waitReadAhead(t, srv, len(first)+len(in))
	expectBlockedServed(t, a, b, 1+strings.Count(in, "*3\r\n"))
	b.expectDo(":0\r\n", "LLEN", "q")

	a = readingAhead()
	b.expectDo("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	if err := send(a, setsOf(t, 16<<20)); err == nil {
		t.Fatal("16 MB sent while blocked were all taken, the limit lowered to 1 MB")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending while blocked: %v, want the connection closed", err)
	}
	b.expectDo(":1\r\n", "DEL", "k") // set by the clients served before
	expectPushKeptFromTheGone(t, srv, b)
}

// BZPOPMIN over the wire: woken by ZADD from another client, in RESP3 the
// score is a double; a timeout is a null array; in MULTI it does not block.
func TestBZPOPMIN_WokenByZADDFromAnotherClient(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("HELLO", "3")
	a.send(encode("BZPOPMIN", "z1", "z2", "0"))
	waitBlockedClients(t, srv, 1)
	if got := b.do("ZADD", "z2", "2.5", "x", "3", "y"); got != ":2\r\n" {
		t.Fatalf("ZADD = %q", got)
	}
	if got := a.read(); got != "*3\r\n$2\r\nz2\r\n$1\r\nx\r\n,2.5\r\n" {
		t.Fatalf("BZPOPMIN = %q", got)
	}
	a.send(encode("BZMPOP", "0", "1", "z3", "MAX", "COUNT", "5"))
	waitBlockedClients(t, srv, 1)
	b.do("ZUNIONSTORE", "z3", "1", "z2")
	if got := a.read(); got != "*2\r\n$2\r\nz3\r\n*1\r\n*2\r\n$1\r\ny\r\n,3\r\n" {
		t.Fatalf("BZMPOP = %q", got)
	}
	if got := b.do("EXISTS", "z3"); got != ":0\r\n" {
		t.Fatalf("BZMPOP left z3: EXISTS = %q", got)
	}
	waitBlockedClients(t, srv, 0)
}

func TestBZPOP_TimeoutAndMULTI(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("BZPOPMAX", "missing", "0.01"); got != "*-1\r\n" {
		t.Fatalf("RESP2 timeout = %q", got)
	}
	if got := c.do("BZMPOP", "0.01", "1", "missing", "MIN"); got != "*-1\r\n" {
		t.Fatalf("RESP2 BZMPOP timeout = %q", got)
	}
	c.do("MULTI")
	c.do("BZPOPMIN", "missing", "0")
	c.do("BZMPOP", "0", "1", "missing", "MIN")
	if got := c.do("EXEC"); got != "*2\r\n*-1\r\n*-1\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	waitBlockedClients(t, srv, 0)
}

// CLIENT UNBLOCK inside MULTI: EXEC runs it under the keyspace lock, which
// it must not take again. Before, the server deadlocked (every keyed
// command hung). Replies as redis-server 7.0.15's.
func TestClientUnblock_InsideMulti(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	a.send(encode("BLPOP", "q", "0"))
	if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b.expectDo("+OK\r\n", "MULTI")
	b.expectDo("+QUEUED\r\n", "CLIENT", "UNBLOCK", id)
	b.expectDo("+QUEUED\r\n", "CLIENT", "UNBLOCK", id)
	b.expectDo("*2\r\n:1\r\n:0\r\n", "EXEC")
	a.expect("*-1\r\n")
	b.expectDo("$-1\r\n", "GET", "k")
}

// CLIENT KILL inside MULTI, then a push in the same EXEC: Redis frees the
// killed client at once, so it is no longer waiting when the push comes
// and the element stays. In tumbler the killed client's goroutine removes
// its waiter only after EXEC lets the keyspace go; until then it must not
// be served (the element would go to a closed socket).
func TestBLPOP_ClientKilledInsideExecIsNotServed(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
	b.send(encode("BLPOP", "bl", "0"))
	waitBlockedClients(t, srv, 1)
	a.send(encode("MULTI") + encode("CLIENT", "KILL", "ID", id) + encode("LPUSH", "bl", "x") + encode("INFO", "clients") + encode("EXEC"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n"} {
		if got := a.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// the killed client no longer counts as blocked, at once, as Redis
	// frees it (its goroutine may not have seen the kill yet)
	if got := a.read(); !strings.HasPrefix(got, "*3\r\n:1\r\n:1\r\n") || !strings.Contains(got, "\r\nblocked_clients:0\r\n") {
		t.Fatalf("EXEC = %q, want [1, 1, INFO with blocked_clients:0]", got)
	}
	if got := a.do("LRANGE", "bl", "0", "-1"); got != "*1\r\n$1\r\nx\r\n" {
		t.Fatalf("the element pushed after the kill went to the killed client: LRANGE = %q", got)
	}
	waitBlockedClients(t, srv, 0)
	// a live waiter blocked after it is still served
	c := dial(t, srv.Addr())
	if got := c.do("BLPOP", "bl", "0"); got != bulkPair("bl", "x") {
		t.Fatalf("BLPOP = %q", got)
	}
}

// INFO's clients_in_timeout_table counts the blocked clients that wait
// with a timeout (Redis's clients_timeout_table), BLPOP's and WAIT's; a
// client killed while it waits leaves both counts at once.
func TestInfo_ClientsInTimeoutTable(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	counts := func() string {
		var out []string
		for _, l := range strings.Split(a.do("INFO", "clients"), "\r\n") {
			if strings.HasPrefix(l, "blocked_clients:") || strings.HasPrefix(l, "clients_in_timeout_table:") {
				out = append(out, l)
			}
		}
		return strings.Join(out, " ")
	}
	b, c, d := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
	b.send(encode("BLPOP", "tt1", "100"))
	c.send(encode("BLPOP", "tt2", "0"))
	d.send(encode("WAIT", "1", "100000"))
	waitBlockedClients(t, srv, 3)
	if got := counts(); got != "blocked_clients:3 clients_in_timeout_table:2" {
		t.Fatalf("INFO clients: %s", got)
	}
	if got := a.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL = %q", got)
	}
	if got := counts(); got != "blocked_clients:2 clients_in_timeout_table:1" {
		t.Fatalf("INFO clients after the kill: %s", got)
	}
	if got := a.do("LPUSH", "tt2", "x"); got != ":1\r\n" {
		t.Fatalf("LPUSH = %q", got)
	}
	c.read()
	waitBlockedClients(t, srv, 1)
	if got := counts(); got != "blocked_clients:1 clients_in_timeout_table:1" {
		t.Fatalf("INFO clients after BLPOP was served: %s", got)
	}
}
