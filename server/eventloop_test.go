//go:build linux

package server

import (
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// The event loop (eventloop_linux.go): it serves plain connections, and
// hands a connection back to its goroutine before anything that may wait,
// so that no connection on the loop ever waits for another. Most tests
// here use one loop, so that every connection shares it: a wait on the
// loop would stall the others, and their replies time out (rawClient
// reads with a deadline).

func runOneLoop(t *testing.T, opts ...func(*Config)) *Server {
	t.Helper()
	return RunT(t, WithConfig(func(c *Config) {
		c.EventLoops = 1
		for _, o := range opts {
			o(c)
		}
	}))
}

// inLoop waits until the loop has run a batch of c's (a PING), proving c
// is served there.
func inLoop(t *testing.T, srv *Server, c *rawClient) {
	t.Helper()
	before := srv.loopStats.batches.Load()
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if srv.loopStats.batches.Load() == before {
		t.Fatalf("PING was not served by the event loop (hand-backs %d %d %d %d)", srv.loopStats.leaves[0].Load(), srv.loopStats.leaves[1].Load(), srv.loopStats.leaves[2].Load(), srv.loopStats.leaves[3].Load())
	}
}

// testTransport is how a test's clients reach the server: over TCP, or
// over a Unix domain socket (unixsocket), which the event loops serve
// alike. The tests whose subject is the socket run over both.
type testTransport struct {
	unix string // the socket's path; "" for TCP
}

// overTransports runs f over TCP, then over a Unix socket.
func overTransports(t *testing.T, f func(t *testing.T, tr testTransport)) {
	t.Run("tcp", func(t *testing.T) { f(t, testTransport{}) })
	t.Run("unix", func(t *testing.T) { f(t, testTransport{unix: unixSocketPath(t)}) })
}

// config adds the Unix socket to a server's configuration.
func (tr testTransport) config(c *Config) {
	if tr.unix != "" {
		c.UnixSocket = tr.unix
	}
}

// dial connects to srv over the transport.
func (tr testTransport) dial(t *testing.T, srv *Server) *rawClient {
	t.Helper()
	if tr.unix != "" {
		return dialUnix(t, tr.unix)
	}
	return dial(t, srv.Addr())
}

func TestEventLoop_ServesPlainConnections(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := runOneLoop(t, tr.config)
		c := tr.dial(t, srv)
		inLoop(t, srv, c)
		if got := c.do("SET", "k", "v", "NX", "PX", "30000"); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
		// A pipeline is one batch, its replies in order.
		c.send(encode("GET", "k") + encode("DEL", "k") + encode("GET", "k"))
		for _, want := range []string{"$1\r\nv\r\n", ":1\r\n", "$-1\r\n"} {
			if got := c.read(); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	})
}

func TestEventLoop_Off(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.NoEventLoop = true }))
	c := dial(t, srv.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if n := srv.loopStats.batches.Load(); n != 0 {
		t.Fatalf("event-loop no, yet %d batches ran in a loop", n)
	}
	if got := c.do("CONFIG", "GET", "event-loop"); got != "*2\r\n$10\r\nevent-loop\r\n$2\r\nno\r\n" {
		t.Fatalf("CONFIG GET event-loop: %q", got)
	}
}

// A blocked command waits on its connection's goroutine: the loop goes on
// serving the others, and the rest of the blocked client's pipeline runs
// after the wait.
func TestEventLoop_BlockedCommandWaitsOffTheLoop(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := runOneLoop(t, tr.config)
		a, b := tr.dial(t, srv), tr.dial(t, srv)
		inLoop(t, srv, a)
		inLoop(t, srv, b)
		a.send(encode("PING", "first") + encode("BLPOP", "q", "0") + encode("PING", "after"))
		if got := a.read(); got != "$5\r\nfirst\r\n" {
			t.Fatalf("before BLPOP: %q", got)
		}
		waitFor(t, "BLPOP handed back", func() bool { return srv.loopStats.leaves[exitBatch].Load() > 0 })
		for i := 0; i < 3; i++ {
			if got := b.do("PING"); got != "+PONG\r\n" {
				t.Fatalf("another client while one is blocked: %q", got)
			}
		}
		if got := b.do("RPUSH", "q", "x"); got != ":1\r\n" {
			t.Fatalf("RPUSH: %q", got)
		}
		if got := a.read(); got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
			t.Fatalf("BLPOP: %q", got)
		}
		if got := a.read(); got != "$5\r\nafter\r\n" {
			t.Fatalf("after BLPOP: %q", got)
		}
	})
}

// A script that is not one of the lock scripts runs off the loop: while it
// is busy the loop's other clients get BUSY at once, and SCRIPT KILL, sent
// on the loop too, stops it.
func TestEventLoop_BusyScriptRunsOffTheLoop(t *testing.T) {
	srv := runOneLoop(t, func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond })
	a, b, k := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, a)
	inLoop(t, srv, b)
	inLoop(t, srv, k)
	a.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "a busy script", srv.eng.Busy) // (behind 100k INCRs, under -race)
	if got := b.do("GET", "x"); !strings.HasPrefix(got, "-BUSY") {
		t.Fatalf("GET during a busy script: %q", got)
	}
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	if got := a.read(); !strings.HasPrefix(got, "-ERR Script killed by user") {
		t.Fatalf("the killed script: %q", got)
	}
	// After loopReturnAfter batches on its goroutine, a returns.
	for i := 0; i < loopReturnAfter; i++ {
		if got := a.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING: %q", got)
		}
	}
	inLoop(t, srv, a)
}

// A lock script stays on the loop, whether it is sent by body or by SHA.
func TestEventLoop_LockScriptStaysOnTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	sha := strings.TrimSuffix(strings.SplitN(c.do("SCRIPT", "LOAD", release), "\r\n", 3)[1], "\r\n")
	inLoop(t, srv, c)
	left := srv.loopStats.leaves[exitBatch].Load()
	c.do("SET", "lk", "tok")
	if got := c.do("EVALSHA", sha, "1", "lk", "tok"); got != ":1\r\n" {
		t.Fatalf("EVALSHA release: %q", got)
	}
	if got := c.do("EVAL", release, "1", "lk", "tok"); got != ":0\r\n" {
		t.Fatalf("EVAL release: %q", got)
	}
	// An unknown SHA, and one too long to be a SHA, are NOSCRIPT; they
	// leave the loop (nothing is known of them) and must not crash it.
	for _, s := range []string{strings.Repeat("a", 40), strings.Repeat("b", 42)} {
		if got := c.do("EVALSHA", s, "0"); !strings.HasPrefix(got, "-NOSCRIPT") {
			t.Fatalf("EVALSHA %s: %q", s, got)
		}
	}
	if n := srv.loopStats.leaves[exitBatch].Load() - left; n != 1 {
		t.Fatalf("%d hand-backs before a command, want 1 (the first unknown SHA)", n)
	}
}

// CLIENT KILL sent on the loop, of a client on the same loop or of
// itself, must not wait for the loop (it would wait forever).
func TestEventLoop_ClientKillOnTheLoop(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := runOneLoop(t, tr.config)
		a, b := tr.dial(t, srv), tr.dial(t, srv)
		inLoop(t, srv, a)
		inLoop(t, srv, b)
		id := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
		if got := a.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
			t.Fatalf("CLIENT KILL ID: %q", got)
		}
		expectEOF(t, b)
		self := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
		if got := a.do("CLIENT", "KILL", "ID", self, "SKIPME", "no"); got != ":1\r\n" {
			t.Fatalf("CLIENT KILL of itself: %q", got)
		}
		expectEOF(t, a)
		waitFor(t, "no connections", func() bool { return srv.nconns.Load() == 0 })
		c := tr.dial(t, srv)
		inLoop(t, srv, c)
	})
}

func expectEOF(t *testing.T, c *rawClient) {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.rd.ReadByte(); err != io.EOF && !isReset(err) {
		t.Fatalf("read after kill: %v, want EOF", err)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// Close ends the connections the loops serve, and returns.
func TestEventLoop_CloseEndsLoopConnections(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		cfg := Config{Addr: "127.0.0.1:0", EventLoops: 2}
		tr.config(&cfg)
		srv := New(cfg)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		var cs []*rawClient
		for i := 0; i < 8; i++ {
			c := tr.dial(t, srv)
			inLoop(t, srv, c)
			cs = append(cs, c)
		}
		done := make(chan struct{})
		go func() { srv.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
		for _, c := range cs {
			expectEOF(t, c)
		}
	})
}

// An idle timeout set while connections sit in the loop (which keeps no
// timers) hands them back, and the timeout closes them.
func TestEventLoop_IdleTimeoutSetLive(t *testing.T) {
	srv := runOneLoop(t)
	idle, admin := dial(t, srv.Addr()), dial(t, srv.Addr())
	start := time.Now() // before idle's last command: its idle time is at most this
	inLoop(t, srv, idle)
	if got := admin.do("CONFIG", "SET", "timeout", "1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout: %q", got)
	}
	expectEOF(t, idle)
	if d := time.Since(start); d < 995*time.Millisecond { // (a little for rounding)
		t.Fatalf("closed after %v, before the 1 s timeout", d)
	}
	c := dial(t, srv.Addr()) // (admin is idle too, and closed by now)
	if got := c.do("CONFIG", "SET", "timeout", "0"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET timeout 0: %q", got)
	}
	inLoop(t, srv, c)
}

// A reply the socket does not take at once is written by the
// connection's goroutine: the loop goes on serving others meanwhile.
func TestEventLoop_LargeReplyToASlowReader(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := runOneLoop(t, tr.config)
		slow, other := tr.dial(t, srv), tr.dial(t, srv)
		// A small receive buffer (no autotuning), so that the reply cannot
		// fit the socket buffers whatever the machine's maxima.
		if err := slow.conn.(interface{ SetReadBuffer(int) error }).SetReadBuffer(16 << 10); err != nil {
			t.Fatal(err)
		}
		inLoop(t, srv, slow)
		inLoop(t, srv, other)
		val := strings.Repeat("x", 16<<20)
		other.send(encode("SET", "big", val))
		if got := other.read(); got != "+OK\r\n" {
			t.Fatalf("SET big: %q", got)
		}
		sent := srv.loopStats.leaves[exitSend].Load()
		slow.send(encode("GET", "big"))
		waitFor(t, "GET big handed back", func() bool { return srv.loopStats.leaves[exitSend].Load() > sent })
		if got := other.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING while a large reply is pending: %q", got)
		}
		want := "$" + strconv.Itoa(len(val)) + "\r\n" + val + "\r\n"
		if got := slow.read(); got != want {
			t.Fatalf("GET big: %d bytes, want %d", len(got), len(want))
		}
	})
}

// QUIT, a protocol error and the end of input, on the loop.
func TestEventLoop_EndsOfAConnection(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := runOneLoop(t, tr.config)
		q := tr.dial(t, srv)
		inLoop(t, srv, q)
		q.send(encode("SET", "a", "1") + encode("QUIT") + encode("SET", "a", "2"))
		if got := q.read() + q.read(); got != "+OK\r\n+OK\r\n" {
			t.Fatalf("SET, QUIT: %q", got)
		}
		expectEOF(t, q)

		p := tr.dial(t, srv)
		inLoop(t, srv, p)
		p.send(encode("GET", "a") + "*1\r\n$x\r\n")
		if got := p.read(); got != "$1\r\n1\r\n" {
			t.Fatalf("GET before the bad request: %q", got)
		}
		if got := p.read(); got != "-ERR Protocol error: invalid bulk length\r\n" {
			t.Fatalf("protocol error: %q", got)
		}
		expectEOF(t, p)

		e := tr.dial(t, srv)
		inLoop(t, srv, e)
		e.conn.Close()
		waitFor(t, "no connections", func() bool { return srv.nconns.Load() == 0 })
	})
}

// MULTI ... EXEC: EXEC runs on the connection's goroutine.
func TestEventLoop_Transaction(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	inLoop(t, srv, c)
	c.send(encode("MULTI") + encode("SET", "t", "1") + encode("INCR", "t") + encode("EXEC"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n+OK\r\n:2\r\n"} {
		if got := c.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// CLIENT PAUSE: commands of loop clients wait on their goroutines, and
// the loop serves the unpausing client.
func TestEventLoop_ClientPause(t *testing.T) {
	srv := runOneLoop(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, a)
	inLoop(t, srv, b)
	if got := a.do("CLIENT", "PAUSE", "10000", "WRITE"); got != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE: %q", got)
	}
	b.send(encode("SET", "p", "1"))
	if err := srv.WaitHeld(1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := a.do("CLIENT", "UNPAUSE"); got != "+OK\r\n" {
		t.Fatalf("CLIENT UNPAUSE: %q", got)
	}
	if got := b.read(); got != "+OK\r\n" {
		t.Fatalf("the paused SET: %q", got)
	}
}

// WATCH waits out a busy script (allow-busy) rather than answering BUSY,
// so it never runs on a loop: here a script starts after the loop has
// looked (EXEC runs 100k queued commands, then the script), and SCRIPT
// KILL, on the same loop, must still get through.
func TestEventLoop_WatchBehindAScriptInExec(t *testing.T) {
	srv := runOneLoop(t, func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond })
	a, b, k := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, b)
	inLoop(t, srv, k)
	const n = 100000
	var sb strings.Builder
	sb.WriteString(encode("MULTI"))
	for i := 0; i < n; i++ {
		sb.WriteString(encode("INCR", "n"))
	}
	sb.WriteString(encode("EVAL", "while true do end", "0"))
	go a.conn.Write([]byte(sb.String()))
	for i := 0; i < n+2; i++ {
		a.read()
	}
	base := srv.eng.Stats.Commands.Load()
	a.send(encode("EXEC"))
	waitFor(t, "EXEC running", func() bool { return srv.eng.Stats.Commands.Load() > base+1000 })
	b.send(encode("WATCH", "w"))
	waitFor(t, "a busy script", srv.eng.Busy)
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	if got := b.read(); got != "+OK\r\n" {
		t.Fatalf("WATCH: %q", got)
	}
	if got := a.read(); !strings.HasPrefix(got, "*"+strconv.Itoa(n+1)+"\r\n") {
		t.Fatalf("EXEC: %.40q", got)
	}
}

// Closing a connection a loop serves, a second time (Close racing CLIENT
// KILL), from the loop itself: it must only shut the socket down, never
// wait for the loop to let go of the descriptor (net.Conn.Close would).
func TestEventLoop_SecondCloseOnTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	victim, killer := dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, victim)
	inLoop(t, srv, killer)
	id := strings.TrimSuffix(strings.TrimPrefix(victim.do("CLIENT", "ID"), ":"), "\r\n")
	var target *client
	srv.clients.Range(func(k, _ any) bool {
		if c := k.(*client); strconv.FormatInt(c.ID, 10) == id {
			target = c
		}
		return true
	})
	// The first closer has marked it and not yet shut it down.
	if target.lp.state.Swap(lpClosed) != lpLoop {
		t.Fatal("the victim is not in its loop")
	}
	if got := killer.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL: %q", got)
	}
	expectEOF(t, victim)
	waitFor(t, "one connection", func() bool { return srv.nconns.Load() == 1 })
}

// A loop that has ended takes no more connections: post says so, and the
// connection's goroutine serves it.
func TestEventLoop_PostAfterTheEnd(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	l, err := newIOLoop(srv)
	if err != nil {
		t.Fatal(err)
	}
	srv.wg.Add(1)
	go l.run()
	if !l.post(func() { l.stop = true }) {
		t.Fatal("post to a running loop failed")
	}
	srv.wg.Wait()
	ran := false
	if l.post(func() { ran = true }) || ran {
		t.Fatal("post to an ended loop ran")
	}
}

// Start with fewer descriptors than its loops need serves every
// connection from its own goroutine.
func TestEventLoop_StartWithoutLoops(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	srv := New(Config{Addr: "127.0.0.1:0", EventLoops: 64})
	low := lim
	low.Cur = uint64(len(fds) + 40) // room for the listener and a few loops, not 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	err = srv.Start()
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer srv.Close()
	if len(srv.loops) != 0 {
		t.Fatalf("%d loops kept after a failed start", len(srv.loops))
	}
	c := dial(t, srv.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
}

// Connections that keep leaving their loop and coming back (a script
// that is not a lock script, BLPOP, EXEC, WATCH, pauses of their own
// requests' making) amid pipelines of plain commands: every reply
// arrives, in order, on every connection, and nothing hangs.
func TestEventLoop_HandBacksAmidPipelines(t *testing.T) {
	srv := runOneLoop(t)
	runWorkers(t, srv, 8, func(w int, c *rawClient) error { return handBackWorker(w, 240, c) })
	if srv.loopStats.leaves[exitBatch].Load() == 0 || srv.loopStats.batches.Load() == 0 {
		t.Fatalf("no hand-backs (%d) or no loop batches (%d): the test tested nothing",
			srv.loopStats.leaves[exitBatch].Load(), srv.loopStats.batches.Load())
	}
}

// handBackWorker runs one connection's share: each round a pipeline of
// plain commands with, now and then, one that leaves the loop in it.
func handBackWorker(w, rounds int, c *rawClient) error {
	key := "hb:" + strconv.Itoa(w)
	for r := 0; r < rounds; r++ {
		var req strings.Builder
		var want []string
		add := func(reply string, args ...string) {
			req.WriteString(encode(args...))
			want = append(want, reply)
		}
		v := strconv.Itoa(r)
		add("+OK\r\n", "SET", key, v)
		switch r % 6 {
		case 1:
			add(":"+strconv.Itoa(r+1)+"\r\n", "EVAL", "return tonumber(ARGV[1]) + 1", "0", v)
		case 2:
			add("*-1\r\n", "BLPOP", key+":q", "0.01")
		case 3:
			add("+OK\r\n", "WATCH", key)
			add("+OK\r\n", "MULTI")
			add("+QUEUED\r\n", "GET", key)
			add("*1\r\n$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "EXEC")
		case 4:
			add(":1\r\n", "RPUSH", key+":q", v)
			add("*2\r\n$"+strconv.Itoa(len(key)+2)+"\r\n"+key+":q\r\n$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "BLPOP", key+":q", "1")
		}
		add("$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "GET", key)
		add(":1\r\n", "DEL", key)
		c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.conn.Write([]byte(req.String())); err != nil {
			return err
		}
		for i, exp := range want {
			c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var b strings.Builder
			if err := readReply(c.rd, &b); err != nil {
				return fmt.Errorf("conn %d round %d reply %d: %v", w, r, i, err)
			}
			if b.String() != exp {
				return fmt.Errorf("conn %d round %d reply %d: %q, want %q", w, r, i, b.String(), exp)
			}
		}
	}
	return nil
}

// A request larger than loopMaxPartial is read and run by its
// connection's goroutine: the loop hands it back as soon as it holds that
// much of it, and serves the others meanwhile.
func TestEventLoop_LargeRequestLeavesTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, a)
	inLoop(t, srv, b)
	const n = 8 << 20
	val := strings.Repeat("v", n)
	req := encode("SET", "big", val)
	left := srv.loopStats.leaves[exitRead].Load()
	a.send(req[:1<<20]) // the request's first megabyte only
	waitFor(t, "the large request handed back", func() bool { return srv.loopStats.leaves[exitRead].Load() > left })
	if got := b.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	a.send(req[1<<20:])
	if got := a.read(); got != "+OK\r\n" {
		t.Fatalf("SET big: %q", got)
	}
	if got := b.do("STRLEN", "big"); got != ":"+strconv.Itoa(n)+"\r\n" {
		t.Fatalf("STRLEN: %q", got)
	}
}

// mayWait: the commands a loop hands back before running them.
func TestEventLoop_MayWait(t *testing.T) {
	srv := runOneLoop(t)
	const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	c := dial(t, srv.Addr())
	sha := strings.TrimSuffix(strings.SplitN(c.do("SCRIPT", "LOAD", release), "\r\n", 3)[1], "\r\n")
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"GET", "k"}, false},
		{[]string{"set", "k", "v", "NX", "PX", "100"}, false},
		{[]string{"EVALSHA", sha, "1", "k", "v"}, false},
		{[]string{"evalsha", strings.ToUpper(sha), "1", "k", "v"}, false},
		{[]string{"EVAL", release, "1", "k", "v"}, false},
		{[]string{"EVAL", "return 1", "0"}, true},
		{[]string{"EVALSHA", strings.Repeat("0", 40), "0"}, true},
		{[]string{"EVAL_RO", release, "1", "k", "v"}, false},
		{[]string{"eval_ro", "return 1", "0"}, true},
		{[]string{"EVALSHA_RO", sha, "1", "k", "v"}, false},
		{[]string{"evalsha_ro", strings.Repeat("0", 40), "0"}, true},
		{[]string{"FCALL", "f", "0"}, true},
		{[]string{"FCALL_RO", "f", "0"}, true},
		{[]string{"BLPOP", "q", "0"}, false}, // it blocks in the engine: handed back after (Blocked)
		{[]string{"WAIT", "1", "0"}, false},  // as BLPOP
		{[]string{"WAITAOF", "0", "1", "0"}, false},
		{[]string{"MULTI"}, false},
		{[]string{"EXEC"}, true},
		{[]string{"WATCH", "k"}, true},
		{[]string{"DEBUG", "SLEEP", "0"}, true},
		{[]string{"SCRIPT", "KILL"}, true},
		{[]string{"script", "kill"}, true},
		{[]string{"SCRIPT", "FLUSH"}, false},
		{[]string{"MEMORY", "PURGE"}, true},
		{[]string{"memory", "purge"}, true},
		{[]string{"MEMORY", "USAGE", "k"}, false},
		{[]string{"MEMORY", "PURGE", "x"}, false}, // an arity error
		{[]string{"SCRIPT", "LOAD", release}, false},
		{[]string{"script", "load", "return 1 --" + strings.Repeat("x", engine.PrecompileMin)}, true},
		{[]string{"SCRIPT", "LOAD", "return 1 --" + strings.Repeat("x", engine.PrecompileMin), "x"}, false}, // an arity error
		{[]string{"SCRIPT", "KILLS"}, false},
		{[]string{"SCRIPT"}, false},
		{[]string{"CLIENT", "PAUSE", "10"}, false},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		if got := srv.mayWait(&client{}, args); got != tc.want {
			t.Errorf("mayWait(%.60q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// WATCH inside MULTI is refused without the keyspace lock (a running
// script hands it back as it does every command): it stays on the loop.
func TestEventLoop_WatchInMultiStaysOnTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	inLoop(t, srv, c)
	c.do("MULTI")
	left := srv.loopStats.leaves[exitBatch].Load()
	if got := c.do("WATCH", "k"); got != "-ERR WATCH inside MULTI is not allowed\r\n" {
		t.Fatalf("WATCH in MULTI: %q", got)
	}
	if n := srv.loopStats.leaves[exitBatch].Load() - left; n != 0 {
		t.Fatalf("%d hand-backs, want 0", n)
	}
}

// What would wait outside MULTI is only queued inside it, on the loop; a
// large SCRIPT LOAD already cached compiles nothing and stays there too.
func TestEventLoop_QueuedAndCachedStayOnTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	big := "return 1 --" + strings.Repeat("x", engine.PrecompileMin)
	if got := c.do("SCRIPT", "LOAD", big); !strings.HasPrefix(got, "$40\r\n") {
		t.Fatalf("SCRIPT LOAD: %.80q", got)
	}
	for i := 0; i < loopReturnAfter; i++ { // back to the loop
		c.do("PING")
	}
	inLoop(t, srv, c)
	left := srv.loopStats.leaves[exitBatch].Load()
	if got := c.do("SCRIPT", "LOAD", big); !strings.HasPrefix(got, "$40\r\n") {
		t.Fatalf("SCRIPT LOAD again: %.80q", got)
	}
	c.do("MULTI")
	for _, args := range [][]string{
		{"EVAL", "return 2", "0"},
		{"EVAL", big + "x", "0"},
		{"SCRIPT", "LOAD", big + "y"},
		{"DEBUG", "SLEEP", "0"},
		{"FCALL", "f", "0"},
		{"WAIT", "0", "0"},
	} {
		if got := c.do(args...); got != "+QUEUED\r\n" {
			t.Fatalf("%.40q in MULTI: %q", args, got)
		}
	}
	if n := srv.loopStats.leaves[exitBatch].Load() - left; n != 0 {
		t.Fatalf("%d hand-backs before EXEC, want none", n)
	}
	got := c.do("EXEC")
	if !strings.HasPrefix(got, "*6\r\n:2\r\n:1\r\n$40\r\n") {
		t.Fatalf("EXEC: %.80q", got)
	}
	if n := srv.loopStats.leaves[exitBatch].Load() - left; n != 1 {
		t.Fatalf("%d hand-backs, want 1 (EXEC)", n)
	}
}

// A stall (Pause) or a SetLatency that begins while a pass runs the
// commands holds the replies of that pass: the loop checks before it
// writes (flushOut) and leaves them to the connections' goroutines.
func TestEventLoop_StallBeginningDuringAPassHoldsItsReplies(t *testing.T) {
	for _, stall := range []string{"Pause", "SetLatency"} {
		t.Run(stall, func(t *testing.T) {
			srv := runOneLoop(t, WithManualClock())
			c := dial(t, srv.Addr())
			inLoop(t, srv, c)
			var fired atomic.Bool
			ran := make(chan struct{})
			hook := func() {
				if fired.CompareAndSwap(false, true) {
					if stall == "Pause" {
						srv.Pause(time.Hour)
					} else {
						srv.SetLatency(300 * time.Millisecond)
					}
					close(ran)
				}
			}
			srv.loopStats.beforeFlush.Store(&hook)
			sent := time.Now()
			c.send(encode("PING"))
			select {
			case <-ran:
			case <-time.After(10 * time.Second):
				t.Fatal("the hook did not run: PING was not served by the loop")
			}
			if stall == "Pause" {
				c.expectSilent(100 * time.Millisecond)
				srv.Unpause()
			}
			if got := c.read(); got != "+PONG\r\n" {
				t.Fatalf("PING: %q", got)
			}
			if stall == "SetLatency" {
				if d := time.Since(sent); d < 300*time.Millisecond {
					t.Fatalf("reply after %v, before the latency begun during its pass", d)
				}
				srv.SetLatency(0)
			}
			if srv.loopStats.leaves[exitSend].Load() == 0 {
				t.Fatal("the loop did not hand the replies back")
			}
		})
	}
}

// A connection the loop serves gives up its read buffer once a batch
// leaves nothing unparsed (cmdReader.dropIdle): idle, it holds none, as a
// Redis client idle for two seconds, and CLIENT LIST says so. Before,
// every idle connection kept 4 KB (13.1 KB each at 5000 connections,
// Redis 9.5 KB).
func TestEventLoop_IdleConnectionHoldsNoReadBuffer(t *testing.T) {
	srv := runOneLoop(t)
	idle, admin := dial(t, srv.Addr()), dial(t, srv.Addr())
	idle.expectDo("+OK\r\n", "CLIENT", "SETNAME", "idle")
	inLoop(t, srv, idle)
	line := ""
	for _, l := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
		if strings.Contains(l, " name=idle ") {
			line = l
		}
	}
	if !strings.Contains(line, " qbuf=0 qbuf-free=0 ") {
		t.Fatalf("an idle connection on the loop: %q", line)
	}
}

// Connections on one loop read, one after another, into the buffer the
// last gave up: replies that echo their requests' bytes, with requests
// written in pieces so that some batches end mid-request (and keep their
// buffer) and some values outgrow it, catch a batch whose arguments are
// read after their buffer went to another connection.
func TestEventLoop_ConnectionsShareReadBuffers(t *testing.T) {
	srv := runOneLoop(t)
	runWorkers(t, srv, 12, func(w int, c *rawClient) error { return shareBufWorker(w, 150, c) })
	if srv.loopStats.batches.Load() == 0 {
		t.Fatal("no batch on the loop: the test tested nothing")
	}
}

// The loop reads a ready socket into 16 KB, as Redis reads
// PROTO_IOBUF_LEN, and into more for a client whose reads fill that: a
// SET of a 4 KB value sent in one write takes one read (with 4 KB it took
// two, and a second trip through the loop's poll), and 16 pipelined SETs
// of 1 KB values a write take one read a batch after the first (16 KB
// at most would take two; 4 KB took five). Counted by INFO's
// total_reads_processed, as Redis counts its reads.
func TestEventLoop_ReadBufferFitsTheInput(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	inLoop(t, srv, c)
	reads := func() int64 { t.Helper(); return readsProcessed(t, c) }
	const sets = 10
	before := reads()
	for i := 0; i < sets; i++ {
		c.expectDo("+OK\r\n", "SET", "k", strings.Repeat("v", 4096))
	}
	if got := reads() - before - 1; got != sets { // (- the INFO's)
		t.Errorf("%d SETs of a 4 KB value, each in one write, took %d reads", sets, got)
	}
	const batches = 10
	batch := strings.Repeat(encode("SET", "k", strings.Repeat("v", 1024)), 16)
	before = reads()
	for i := 0; i < batches; i++ {
		c.send(batch)
		for j := 0; j < 16; j++ {
			c.expect("+OK\r\n")
		}
	}
	if got := reads() - before - 1; got > batches+1 {
		t.Errorf("%d batches of 16 SETs of a 1 KB value, each in one write, took %d reads", batches, got)
	}
	if srv.loopStats.batches.Load() == 0 {
		t.Fatal("no batch on the loop: the test tested nothing")
	}
}

// What a loop connection holds once its batch is over or handed to its
// goroutine: a read of blank lines only leaves no buffer (it kept the
// loop's, 16 KB, while idle), and a client blocked in BLPOP holds 4 KB at
// most, the rest of its batch moved there (it held the loop's buffer
// for as long as it waited).
func TestEventLoop_ConnectionsHandedBackHoldLittle(t *testing.T) {
	srv := runOneLoop(t)
	admin := dial(t, srv.Addr())
	line := func(name string) string {
		t.Helper()
		for _, l := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(l, " name="+name+" ") {
				return l
			}
		}
		t.Fatalf("no client %s in CLIENT LIST", name)
		return ""
	}
	reads := func() int64 { t.Helper(); return readsProcessed(t, admin) }

	blank := dial(t, srv.Addr())
	blank.expectDo("+OK\r\n", "CLIENT", "SETNAME", "blank")
	inLoop(t, srv, blank)
	r0 := reads()
	blank.send("\r\n\r\n")
	for n := int64(1); reads()-r0-n < 1; n++ { // (each INFO is a read of its own)
		if n > 1000 {
			t.Fatal("the blank lines were never read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if l := line("blank"); !strings.Contains(l, " qbuf=0 qbuf-free=0 ") {
		t.Errorf("after a read of blank lines: %q", l)
	}
	blank.expectDo("+PONG\r\n", "PING")

	waiter := dial(t, srv.Addr())
	waiter.expectDo("+OK\r\n", "CLIENT", "SETNAME", "waiter")
	inLoop(t, srv, waiter)
	waiter.send(encode("BLPOP", "q", "0") + encode("ECHO", "after"))
	l := ""
	for i := 0; !strings.Contains(l, " cmd=blpop "); i++ {
		if i > 1000 {
			t.Fatalf("the client never blocked: %q", l)
		}
		time.Sleep(5 * time.Millisecond)
		l = line("waiter")
	}
	free := -1
	for _, f := range strings.Fields(l) {
		if v, ok := strings.CutPrefix(f, "qbuf-free="); ok {
			free, _ = strconv.Atoi(v)
		}
	}
	if free < 0 || free > readerMinBuf {
		t.Errorf("a client blocked in BLPOP holds a buffer of %d bytes' room; want at most %d: %q", free, readerMinBuf, l)
	}
	admin.expectDo(":1\r\n", "LPUSH", "q", "v")
	waiter.expect("*2\r\n$1\r\nq\r\n$1\r\nv\r\n")
	waiter.expect("$5\r\nafter\r\n")
}

// readsProcessed returns INFO's total_reads_processed, asked on c.
func readsProcessed(t *testing.T, c *rawClient) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoField(t, c, "stats", "total_reads_processed"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runWorkers runs work on n connections at once, each its own goroutine,
// and fails t with the first error.
func runWorkers(t *testing.T, srv *Server, n int, work func(w int, c *rawClient) error) {
	t.Helper()
	errs := make(chan error, n)
	for w := 0; w < n; w++ {
		c := dial(t, srv.Addr())
		go func() { errs <- work(w, c) }()
	}
	for w := 0; w < n; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func shareBufWorker(w, rounds int, c *rawClient) error {
	rng := rand.New(rand.NewSource(int64(w)))
	key := "sb:" + strconv.Itoa(w)
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	payload := func(max int) string {
		b := make([]byte, 1+rng.Intn(max))
		for i := range b {
			b[i] = byte('a' + rng.Intn(26))
		}
		return string(b)
	}
	for r := 0; r < rounds; r++ {
		v, e := payload(9000), payload(3000)
		req := encode("SET", key, v) + encode("ECHO", e) + encode("GET", key)
		want := "+OK\r\n" + bulk(e) + bulk(v)
		c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for len(req) > 0 { // in random pieces
			n := len(req)
			if rng.Intn(2) == 0 {
				n = 1 + rng.Intn(len(req))
			}
			if _, err := c.conn.Write([]byte(req[:n])); err != nil {
				return err
			}
			req = req[n:]
			if len(req) > 0 {
				time.Sleep(time.Duration(rng.Intn(200)) * time.Microsecond)
			}
		}
		var got strings.Builder
		for i := 0; i < 3; i++ {
			c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := readReply(c.rd, &got); err != nil {
				return fmt.Errorf("conn %d round %d: %v", w, r, err)
			}
		}
		if got.String() != want {
			return fmt.Errorf("conn %d round %d: replies differ from the requests' bytes (%d bytes, want %d)", w, r, got.Len(), len(want))
		}
	}
	return nil
}

// New connections whose goroutines post them to the loop out of order (as
// the scheduler may run the second's first) are added in the order they
// connected, so that their first requests, already waiting, run in that
// order, as Redis runs them. Before, the second's BRPOPLPUSH, run first,
// took the element meant for the first (which then waited for ever).
func TestLoop_NewConnectionsServedInTheOrderTheyConnected(t *testing.T) {
	srv := runOneLoop(t)
	l := srv.loops[0]
	ctl := dial(t, srv.Addr())
	inLoop(t, srv, ctl)
	ctl.expectDo("+OK\r\n", "SET", "target1", "nolist")

	// the loop held in a pass while both connections post themselves
	release, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(held)
			<-release
		})
	}
	srv.loopStats.beforeFlush.Store(&hook)
	ctl.send(encode("PING"))
	<-held
	rd1, rd2 := dial(t, srv.Addr()), dial(t, srv.Addr())
	rd1.send(encode("BRPOPLPUSH", "blist", "target1", "0"))
	rd2.send(encode("BRPOPLPUSH", "blist", "target2", "0"))
	inbox := func() []*client {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.Clone(l.inbox)
	}
	waitFor(t, "both connections posted to the loop", func() bool { return len(inbox()) == 2 })
	l.mu.Lock()
	if l.inbox[0].ID < l.inbox[1].ID {
		l.inbox[0], l.inbox[1] = l.inbox[1], l.inbox[0] // the second connection's goroutine posted first
	}
	l.mu.Unlock()
	close(release)
	srv.loopStats.beforeFlush.Store(nil)
	if got := ctl.read(); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	waitBlockedClients(t, srv, 2)
	ctl.expectDo(":1\r\n", "LPUSH", "blist", "foo")
	if got := rd1.read(); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("the first connection's BRPOPLPUSH: %q, want WRONGTYPE (it blocked first)", got)
	}
	if got := rd2.read(); got != "$3\r\nfoo\r\n" {
		t.Fatalf("the second connection's BRPOPLPUSH: %q", got)
	}
}
