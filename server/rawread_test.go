//go:build linux

package server

import (
	"strings"
	"testing"
	"time"
)

// TestRawRead_ConnectionsReadRaw: a TCP or Unix socket client's requests
// are read by rawReader (rawread.go), one at a time and pipelined.
func TestRawRead_ConnectionsReadRaw(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := RunT(t, WithConfig(tr.config))
		c := tr.dial(t, srv)
		reads := rawReads.Load()
		const n = 100
		for i := 0; i < n; i++ {
			if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
				t.Fatal(got)
			}
		}
		if got := rawReads.Load() - reads; got < n {
			t.Fatalf("%d requests made %d raw reads: the connection is not read by rawReader", n, got)
		}
	})
}

// TestRawRead_HalfClose: a client that sends its last request and then
// shuts down its side (`printf 'PING\r\n' | nc -N`) gets its reply and
// then EOF, whether the request and the FIN arrive together or while the
// server is busy. (A loop that waited for the next readiness event after
// a short read, without reading again, never saw the FIN.)
func TestRawRead_HalfClose(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		for _, busy := range []bool{false, true} {
			srv := RunT(t, WithConfig(tr.config))
			c := tr.dial(t, srv)
			if busy {
				c.send(encode("DEBUG", "SLEEP", "0.3")) // busy while the request and the FIN arrive
				time.Sleep(50 * time.Millisecond)
			}
			c.send(encode("PING"))
			if err := c.conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if busy {
				if got := c.read(); got != "+OK\r\n" {
					t.Fatal(got)
				}
			}
			if got := c.read(); got != "+PONG\r\n" {
				t.Fatal(got)
			}
			if b := waitClosed(t, c); len(b) != 0 {
				t.Fatalf("busy=%v: %q after the reply", busy, b)
			}
		}
	})
}

// TestRawRead_AfterABlockedCommand: input the read-ahead took while BLPOP
// waited, and input that arrives while its reply is held, are all served
// in order once it is woken.
func TestRawRead_AfterABlockedCommand(t *testing.T) {
	srv := RunT(t)
	c, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.send(encode("BLPOP", "q", "0"))
	time.Sleep(100 * time.Millisecond)
	c.send(encode("PING")) // the read-ahead takes it
	time.Sleep(100 * time.Millisecond)
	srv.SetLatency(300 * time.Millisecond)
	defer srv.SetLatency(0)
	other.send(encode("LPUSH", "q", "x"))
	time.Sleep(100 * time.Millisecond)
	c.send(encode("ECHO", "after")) // arrives while BLPOP's reply is held
	for _, want := range []string{"*2\r\n$1\r\nq\r\n$1\r\nx\r\n", "+PONG\r\n", "$5\r\nafter\r\n"} {
		if got := c.read(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// TestRawRead_PipelinesInPieces: requests split anywhere across writes,
// with pauses between the pieces, are all served in order (the loop must
// read again, not wait, when a read filled its buffer, and must wait, not
// spin, on a partial request).
func TestRawRead_PipelinesInPieces(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := RunT(t, WithConfig(tr.config))
		c := tr.dial(t, srv)
		var all strings.Builder
		for i := 0; i < 200; i++ {
			all.WriteString(encode("SET", "k"+strings.Repeat("x", i%37), strings.Repeat("v", i*53%9000)))
			all.WriteString(encode("GET", "k"+strings.Repeat("x", i%37)))
		}
		in := all.String()
		for off, step := 0, 1; off < len(in); step = step*7%9973 + 1 {
			end := min(off+step, len(in))
			c.send(in[off:end])
			off = end
			if step%5 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		for i := 0; i < 200; i++ {
			if got := c.read(); got != "+OK\r\n" {
				t.Fatalf("SET %d: %q", i, got)
			}
			want := strings.Repeat("v", i*53%9000)
			if got := c.read(); !strings.HasSuffix(got, "\r\n"+want+"\r\n") && !(want == "" && got == "$0\r\n\r\n") {
				t.Fatalf("GET %d: %d bytes, want the %d-byte value", i, len(got), len(want))
			}
		}
	})
}

// TestRawRead_DropConnectionsWhileAReplyIsHeld: DropConnections returns
// while a connection's reply is held (SetLatency), and the dropped
// client's input sent after it never runs: a raw read of a closed
// connection fails, as net.Conn.Read does.
func TestRawRead_DropConnectionsWhileAReplyIsHeld(t *testing.T) {
	srv := RunT(t)
	victim := dial(t, srv.Addr())
	if got := victim.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	cmds := srv.Engine().Stats.Commands.Load()
	srv.SetLatency(time.Hour)
	defer srv.SetLatency(0)
	victim.send(encode("PING"))
	deadline := time.Now().Add(10 * time.Second)
	for srv.Engine().Stats.Commands.Load() == cmds { // the PING ran: its reply is held
		if time.Now().After(deadline) {
			t.Fatal("the PING never ran")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan int, 1)
	go func() { done <- srv.DropConnections() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("DropConnections waits for the goroutine of a connection it closes")
	}
	_, _ = victim.conn.Write([]byte(encode("SET", "after-kill", "1"))) // (may fail: closed)
	waitClosed(t, victim)
	srv.SetLatency(0)
	if got := dial(t, srv.Addr()).do("EXISTS", "after-kill"); got != ":0\r\n" {
		t.Fatalf("a command sent after its connection was dropped ran: EXISTS %q", got)
	}
}

// TestRawRead_BigReplyToASlowReader: a reply larger than the socket takes
// at once is written in part without waiting, and the rest with
// net.Conn.Write once the client reads: every byte arrives, in order.
func TestRawRead_BigReplyToASlowReader(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	val := make([]byte, 8<<20)
	for i := range val {
		val[i] = byte('a' + i%26 + i/(1<<20))
	}
	if got := c.do("SET", "big", string(val)); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c.send(encode("GET", "big") + encode("GET", "big"))
	time.Sleep(200 * time.Millisecond) // the server fills the socket and waits
	for i := 0; i < 2; i++ {
		if got := c.read(); got != "$8388608\r\n"+string(val)+"\r\n" {
			t.Fatalf("reply %d: %d bytes, not the value", i, len(got))
		}
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
}

// TestFixtureBefore_KilledClientRunsNothing: once killed, a client's
// commands already read (or still in a shut-down socket, which Linux
// delivers) do not run. TestRawRead_DropConnectionsWhileAReplyIsHeld
// reached this only when the kill fell in an event loop's hand-off, about
// one run in fifty under load.
func TestFixtureBefore_KilledClientRunsNothing(t *testing.T) {
	srv := RunT(t)
	c := &client{}
	c.ctx.Args = [][]byte{[]byte("SET"), []byte("k"), []byte("v")}
	c.fx.dead.Store(true)
	if srv.fixtureBefore(c) {
		t.Fatal("a killed client's command may run")
	}
	if !c.closeNow {
		t.Error("the killed client's connection is not closed after it")
	}
}

// TestRawRead_PipelineSentBeforeAnyReplyIsRead: a client that sends a
// whole pipeline before it reads a reply gets every reply, however large
// both sides grow. The server keeps reading while its replies wait for
// room, as Redis does; a server that only waited for room would wait for
// a client that waits for it to read. 10 MB of requests and 27 MB of
// replies: more than loopback's socket buffers hold (tcp_rmem and
// tcp_wmem's maxima are 6 and 4 MB; a Unix socket's about 200 KB).
func TestRawRead_PipelineSentBeforeAnyReplyIsRead(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := RunT(t, WithConfig(tr.config))
		expectPipelineServed(t, tr.dial(t, srv))
	})
}

// TestRawRead_PipelineUnreadPastTheQueryBufferLimit: what the server reads
// while its replies wait for room counts against
// client-query-buffer-limit; past it the client is closed, as Redis
// closes a client past it, and the others are served. (Redis runs such a
// client's requests as they come and keeps the replies, which count
// against client-output-buffer-limit's normal class, unlimited by
// default: README, "Differences".)
func TestRawRead_PipelineUnreadPastTheQueryBufferLimit(t *testing.T) {
	overTransports(t, func(t *testing.T, tr testTransport) {
		srv := RunT(t, WithConfig(tr.config))
		expectClosedPastQueryBufLimit(t, srv, tr.dial(t, srv), tr.dial(t, srv))
	})
}
