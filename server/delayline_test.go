package server

import (
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SetLatency is a delay line (delayline.go): with several requests in
// flight on one connection, each reply leaves d after its request
// arrived, the connection is read and its commands run meanwhile, and
// the replies keep their order.

// expectDelayLine sends n ECHO requests down c, gap apart, from another
// goroutine, while it reads the replies: each must come in order, no
// earlier than d after its request was written, and well before 1.5 d (a
// connection not read while its replies wait takes up to 2 d for some:
// with requests d/4 apart, 1.75 d for the second). The tests take d large
// (delayD), so that a loaded machine's scheduling stays inside the slack.
func expectDelayLine(t *testing.T, c *rawClient, d time.Duration, n int, gap time.Duration) {
	t.Helper()
	sent := make([]time.Time, n)
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if i > 0 {
				time.Sleep(gap)
			}
			sent[i] = time.Now()
			if _, err := c.conn.Write([]byte(encode("ECHO", strconv.Itoa(i)))); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	got := make([]time.Time, n)
	for i := range n {
		want := bulk(strconv.Itoa(i))
		if r := c.read(); r != want {
			t.Fatalf("reply %d: %q, want %q", i, r, want)
		}
		got[i] = time.Now()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if took := got[i].Sub(sent[i]); took < d || took >= d*3/2 {
			t.Errorf("reply %d came %v after its request, want about %v (at least %v, under %v)", i, took, d, d, d*3/2)
		}
	}
}

func TestSetLatency_IsADelayLine(t *testing.T) {
	const d, n, gap = delayD, 4, delayD / 4
	t.Run("tcp", func(t *testing.T) {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		c.do("PING")
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
	t.Run("unix", func(t *testing.T) {
		path := unixSocketPath(t)
		srv := RunT(t, WithConfig(func(c *Config) { c.UnixSocket = path }))
		c := dialUnix(t, path)
		c.do("PING")
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
	t.Run("no-event-loop", func(t *testing.T) {
		srv := RunT(t, WithConfig(func(c *Config) { c.NoEventLoop = true }))
		c := dial(t, srv.Addr())
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
	t.Run("idle-timeout", func(t *testing.T) { // connections on their goroutines
		srv := RunT(t, WithConfig(func(c *Config) { c.Timeout = time.Hour }))
		c := dial(t, srv.Addr())
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
	t.Run("tls", func(t *testing.T) {
		p := newTestPKI(t)
		srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no") }))
		c := dialTLS(t, srv, p)
		c.do("PING")
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
	t.Run("push-capable", func(t *testing.T) { // its replies go through flushShared
		srv := RunT(t)
		c := trackingClient(t, srv, "k")
		srv.SetLatency(d)
		expectDelayLine(t, c, d, n, gap)
	})
}

// A command sent while an earlier reply waits is read and run at once:
// another connection sees its effect before that reply has left.
func TestSetLatency_LaterCommandsRunWhileRepliesWait(t *testing.T) {
	const d = time.Second
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("PING")
	b.do("PING")
	srv.SetLatency(d)
	start := time.Now()
	a.send(encode("PING"))
	time.Sleep(50 * time.Millisecond)
	a.send(encode("SET", "k", "x"))
	// (the PING's reply leaves at d: until d/2 the SET has time to run)
	for _, ok := srv.Get("k"); !ok && time.Since(start) < d/2; _, ok = srv.Get("k") {
		time.Sleep(time.Millisecond)
	}
	b.send(encode("GET", "k")) // run now, its reply d later
	if got := b.read(); got != "$1\r\nx\r\n" {
		t.Fatalf("GET from another connection, sent before the PING's reply left: %q, want the value SET after the PING", got)
	}
	for _, want := range []string{"+PONG\r\n", "+OK\r\n"} {
		if got := a.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// SetLatency(0) releases the replies that wait at once, in order; a new
// latency moves them to d after they were ready.
func TestSetLatency_ChangeMovesRepliesThatWait(t *testing.T) {
	t.Run("zero", func(t *testing.T) {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		srv.SetLatency(time.Hour)
		for _, m := range []string{"a", "b", "c"} {
			c.send(encode("ECHO", m))
			time.Sleep(20 * time.Millisecond)
		}
		c.expectSilent(100 * time.Millisecond)
		srv.SetLatency(0)
		start := time.Now()
		for _, m := range []string{"a", "b", "c"} {
			if got := c.read(); got != bulk(m) {
				t.Fatalf("got %q, want %q", got, bulk(m))
			}
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("the replies came %v after SetLatency(0)", el)
		}
		c.expectDo("+PONG\r\n", "PING") // and the connection goes on undelayed
	})
	t.Run("shorter", func(t *testing.T) {
		const d = 200 * time.Millisecond
		srv := RunT(t)
		c := dial(t, srv.Addr())
		srv.SetLatency(time.Hour)
		start := time.Now()
		c.send(encode("PING"))
		time.Sleep(50 * time.Millisecond)
		srv.SetLatency(d)
		c.expect("+PONG\r\n")
		if el := time.Since(start); el < d || el > 5*time.Second {
			t.Fatalf("the reply came %v after its request, want about %v", el, d)
		}
	})
}

// A push is delayed from when it was produced, in order with the replies
// around it.
func TestSetLatency_PushesInOrderWithReplies(t *testing.T) {
	const d = delayD
	srv := RunT(t)
	a := trackingClient(t, srv, "k")
	srv.SetLatency(d)
	sent := time.Now()
	a.send(encode("PING"))
	time.Sleep(d / 4)
	pushed := time.Now()
	srv.Set("k", "v", 0) // an invalidation
	time.Sleep(d / 4)
	pinged := time.Now()
	a.send(encode("ECHO", "after"))
	expectTimed(t, a, d, timedReply{"+PONG\r\n", sent}, timedReply{inval3("k"), pushed}, timedReply{bulk("after"), pinged})
}

// delayD is the latency of the tests that bound a reply's delay from
// above (under 1.5 d): large enough that the slack, d/2, holds a loaded
// machine's scheduling (with 200 ms, a run beside a CI run once went
// past it), small enough to keep the tests short.
const delayD = 600 * time.Millisecond

// timedReply is a reply due d after from.
type timedReply struct {
	want string
	from time.Time
}

// expectTimed reads replies from c, in order, each at least d and less
// than 1.5 d after its from.
func expectTimed(t *testing.T, c *rawClient, d time.Duration, replies ...timedReply) {
	t.Helper()
	for _, w := range replies {
		if got := c.read(); got != w.want {
			t.Fatalf("got %q, want %q", got, w.want)
		}
		if took := time.Since(w.from); took < d || took >= d*3/2 {
			t.Errorf("%q came %v after it was ready, want about %v", w.want, took, d)
		}
	}
}

// A blocked command's reply is ready when it is served: it leaves d
// later, and the commands behind it follow it.
func TestSetLatency_BlockedCommand(t *testing.T) {
	const d = delayD
	srv := RunT(t)
	c, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.do("PING")
	srv.SetLatency(d)
	c.send(encode("BLPOP", "q", "0"))
	eventually(t, "BLPOP blocked", func() bool { return srv.eng.BlockedClients() == 1 })
	pushed := time.Now()
	other.send(encode("LPUSH", "q", "x"))
	time.Sleep(d / 4)
	pinged := time.Now()
	c.send(encode("PING"))
	expectTimed(t, c, d, timedReply{"*2\r\n$1\r\nq\r\n$1\r\nx\r\n", pushed}, timedReply{"+PONG\r\n", pinged})
}

// A transaction's replies and a paused command's keep their order; a
// command CLIENT PAUSE holds has its reply d after it has run.
func TestSetLatency_TransactionsAndClientPause(t *testing.T) {
	const d = 200 * time.Millisecond
	srv := RunT(t)
	c, ctl := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.do("PING")
	start := time.Now() // (the pause begins after)
	ctl.expectDo("+OK\r\n", "CLIENT", "PAUSE", "300", "WRITE")
	srv.SetLatency(d)
	c.send(encode("MULTI") + encode("INCR", "n") + encode("EXEC") + encode("ECHO", "x"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "*1\r\n:1\r\n", bulk("x")} {
		if got := c.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if took := time.Since(start); took < 300*time.Millisecond+d-5*time.Millisecond {
		t.Fatalf("EXEC's reply came %v after the pause began: before the pause's end and the latency", took)
	}
}

// A connection that ends sends what waits first (QUIT's +OK, a protocol
// error's reply, in order); one that is dropped does not.
func TestSetLatency_ConnectionEnds(t *testing.T) {
	const d = 200 * time.Millisecond
	t.Run("quit", func(t *testing.T) {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		srv.SetLatency(d)
		start := time.Now()
		c.send(encode("PING"))
		time.Sleep(50 * time.Millisecond)
		c.send(encode("QUIT"))
		c.expect("+PONG\r\n")
		c.expect("+OK\r\n")
		if took := time.Since(start); took < d+50*time.Millisecond {
			t.Fatalf("QUIT's +OK came %v after the PING, want the latency after the QUIT", took)
		}
		c.expectClosed()
	})
	t.Run("protocol-error", func(t *testing.T) {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		srv.SetLatency(d)
		c.send(encode("PING"))
		time.Sleep(50 * time.Millisecond)
		c.send("*1\r\n$x\r\n")
		c.expect("+PONG\r\n")
		c.expect("-ERR Protocol error: invalid bulk length\r\n")
		c.expectClosed()
	})
	t.Run("dropped", func(t *testing.T) {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		srv.SetLatency(time.Hour)
		defer srv.SetLatency(0)
		c.send(encode("SET", "k", "v"))
		eventually(t, "SET run", func() bool { _, ok := srv.Get("k"); return ok })
		done := make(chan int, 1)
		go func() { done <- srv.DropConnections() }()
		select {
		case n := <-done:
			if n != 1 {
				t.Fatalf("DropConnections = %d", n)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("DropConnections waits for the replies held")
		}
		if b := waitClosed(t, c); len(b) != 0 {
			t.Fatalf("a dropped connection was sent %q", b)
		}
	})
}

// The replies that wait are the connection's output: past the normal
// class's hard limit the connection is closed, as Redis closes a client
// whose output buffer grows while the network is slow.
func TestSetLatency_RepliesThatWaitCountAsOutput(t *testing.T) {
	srv := RunT(t)
	srv.Set("big", string(make([]byte, 600)), 0)
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "normal 1000 0 0")
	srv.SetLatency(time.Hour)
	defer srv.SetLatency(0)
	c.send(encode("GET", "big")) // 600 bytes wait
	eventually(t, "held", func() bool { return srv.heldOutput() > 0 })
	c.send(encode("GET", "big")) // 600 more: over 1000
	if b := waitClosed(t, c); len(b) != 0 {
		t.Fatalf("a connection over its limit was sent %q", b)
	}
}

// heldOutput is what the clients' delay lines hold.
func (s *Server) heldOutput() int {
	n := 0
	s.clients.Range(func(k, _ any) bool {
		n += k.(*client).heldOut()
		return true
	})
	return n
}

// Close and Restart with replies waiting return at once, and leave no
// goroutine behind.
func TestSetLatency_CloseAndRestartWhileRepliesWait(t *testing.T) {
	for _, how := range []string{"Close", "Restart"} {
		t.Run(how, func(t *testing.T) {
			srv := RunT(t)
			var conns []net.Conn
			for range 3 {
				c := dial(t, srv.Addr())
				c.do("PING")
				conns = append(conns, c.conn)
			}
			srv.SetLatency(time.Hour)
			defer srv.SetLatency(0)
			before := srv.Engine().Stats.Commands.Load()
			for _, c := range conns {
				if _, err := c.Write([]byte(encode("PING") + encode("SET", "k", "v"))); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the commands run", func() bool { return srv.Engine().Stats.Commands.Load() >= before+6 })
			done := make(chan error, 1)
			go func() {
				if how == "Close" {
					done <- srv.Close()
				} else {
					done <- srv.Restart(true)
				}
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s waits for the replies held", how)
			}
			if how == "Restart" {
				eventually(t, "the delay lines gone", func() bool { return srv.heldOutput() == 0 && delayWriters() == 0 })
				c := dial(t, srv.Addr())
				srv.SetLatency(0)
				c.expectDo("+PONG\r\n", "PING")
				return
			}
			eventually(t, "the delay lines gone", func() bool { return delayWriters() == 0 })
		})
	}
}

// delayWriters counts the delay lines' writer goroutines (the tests of
// this package do not run in parallel).
func delayWriters() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "server.(*Server).writeDelayed(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Large replies (written in segments: respWriter.segs) wait whole, and
// arrive intact and in order.
func TestSetLatency_LargeReplies(t *testing.T) {
	const d = 100 * time.Millisecond
	srv := RunT(t)
	big := strings.Repeat("0123456789", 300_000) // 3 MB
	srv.Set("big", big, 0)
	c := dial(t, srv.Addr())
	c.do("PING")
	srv.SetLatency(d)
	start := time.Now()
	c.send(encode("GET", "big") + encode("PING"))
	time.Sleep(20 * time.Millisecond)
	c.send(encode("GET", "big"))
	for _, want := range []string{bulk(big), "+PONG\r\n", bulk(big)} {
		if got := c.read(); got != want {
			t.Fatalf("got %d bytes (%.20q...), want %d", len(got), got, len(want))
		}
	}
	if took := time.Since(start); took < d {
		t.Fatalf("the replies came %v after the requests, before the latency", took)
	}
}

// A reply in the delay line when a Pause begins was sent: it arrives
// during the pause; one produced after waits for the pause, then d.
func TestSetLatency_PauseHoldsOnlyWhatIsNotSentYet(t *testing.T) {
	const d = 200 * time.Millisecond
	srv := RunT(t)
	c, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.do("PING")
	other.do("PING")
	srv.SetLatency(d)
	c.send(encode("ECHO", "sent"))
	eventually(t, "ECHO's reply in the delay line", func() bool { return srv.heldOutput() > 0 })
	srv.Pause(time.Hour)
	defer srv.Unpause()
	other.send(encode("PING")) // held by the pause
	c.expect(bulk("sent"))
	other.expectSilent(d * 3 / 2)
	srv.Unpause()
	other.expect("+PONG\r\n")
}
