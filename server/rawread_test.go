//go:build linux

package server

import (
	"strings"
	"testing"
	"time"
)

// TestRawRead_OneReadARequest: a client that sends a request and waits for
// its reply costs one read a request. After a read that drained the socket
// the loop waits for input without first trying a read that finds none
// (rawread.go); net.Conn.Read would try one after every reply.
func TestRawRead_OneReadARequest(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	reads, empty := rawReads.Load(), rawReadsEmpty.Load()
	const n = 300
	for i := 0; i < n; i++ {
		if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
			t.Fatal(got)
		}
	}
	if got := rawReads.Load() - reads; got < n {
		t.Fatalf("%d requests made %d raw reads: the connection is not served by the raw read loop", n, got)
	}
	// A wakeup may be stale now and then (the readiness of input already
	// read); one a request means the loop reads before it waits.
	if failed := rawReadsEmpty.Load() - empty; failed > n/10 {
		t.Fatalf("%d requests, one at a time, cost %d reads that found no input", n, failed)
	}
}

// TestRawRead_PipelinesInPieces: requests split anywhere across writes,
// with pauses between the pieces, are all served in order (the loop must
// read again, not wait, when a read filled its buffer, and must wait, not
// spin, on a partial request).
func TestRawRead_PipelinesInPieces(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
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
}

// TestRawRead_DropConnectionsDoesNotWaitForALoop: closing a connection
// whose goroutine is inside its raw read loop (here holding its reply for
// SetLatency) must not wait for that goroutine: net.Conn.Close would,
// and DropConnections closes every socket before it releases held
// replies. And the killed client's input sent meanwhile never runs.
func TestRawRead_DropConnectionsDoesNotWaitForALoop(t *testing.T) {
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
	victim.send(encode("SET", "after-kill", "1"))
	done := make(chan int, 1)
	go func() { done <- srv.DropConnections() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("DropConnections waits for the goroutine of a connection it closes")
	}
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
