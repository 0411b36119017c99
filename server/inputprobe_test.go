package server

import (
	"net"
	"runtime"
	"testing"
	"time"
)

func TestInputProbe_ReportsWaitingInput(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe is Linux-only; elsewhere ready is always true")
	}
	p := newInputProbe()
	if p == nil {
		t.Skip("no epoll")
	}
	defer p.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	if p.ready() {
		t.Fatal("ready with nothing watched")
	}
	p.add(srv)
	if p.ready() {
		t.Fatal("ready before the client wrote anything")
	}
	if _, err := cli.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the probe to see the input", p.ready)
	buf := make([]byte, 16)
	if n, err := srv.Read(buf); err != nil || n != 6 {
		t.Fatalf("read %d, %v", n, err)
	}
	if p.ready() {
		t.Fatal("still ready once the input was read")
	}
	_ = cli.Close()
	waitFor(t, "the hang-up to count as input", p.ready)
	_ = srv.Close() // the kernel drops a closed socket from the set
	if p.ready() {
		t.Fatal("ready after the watched socket was closed")
	}
}

func TestPauseExpiry_EndsOnAKickNotAStaleOne(t *testing.T) {
	s := New(Config{})
	s.expiryPauseMax = time.Hour // only a kick can end the pause
	s.kickExpiry()               // no pause on: sends nothing
	s.expiryKick <- struct{}{}   // a kick left over from an earlier pause
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	done := make(chan pauseEnd)
	go func() { done <- s.pauseExpiry(timer) }()
	waitFor(t, "the pause to begin", s.expiryPausing.Load)
	select {
	case end := <-done:
		t.Fatalf("the pause ended (%d) before any client was served", end)
	case <-time.After(20 * time.Millisecond):
	}
	s.kickExpiry()
	select {
	case end := <-done:
		if end != pauseKicked {
			t.Fatalf("pause ended with %d, want pauseKicked", end)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a kick did not end the pause")
	}
	if s.expiryPausing.Load() {
		t.Fatal("still pausing after the pause ended")
	}

	s.expiryPauseMax = time.Millisecond
	if end := s.pauseExpiry(timer); end != pauseTimedOut {
		t.Fatalf("an unkicked pause ended with %d, want pauseTimedOut", end)
	}

	s.expiryPauseMax = time.Hour
	go func() { done <- s.pauseExpiry(timer) }()
	waitFor(t, "the last pause to begin", s.expiryPausing.Load)
	close(s.done)
	if end := <-done; end != pauseClosing {
		t.Fatalf("a pause ended by Close reported %d", end)
	}
}

// The wiring in serveConn: every connection's socket is in the probe, and
// a connection that writes its replies ends a pause.
func TestServeConn_ProbedAndKicks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe is Linux-only")
	}
	defer func(d time.Duration) { expiryPauseMax = d }(expiryPauseMax)
	expiryPauseMax = time.Hour // the pause below ends only by a kick
	srv := RunT(t)
	if srv.probe == nil {
		t.Skip("no epoll")
	}
	c := dial(t, srv.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	waitFor(t, "no input waiting", func() bool { return !srv.probe.ready() })

	// Hold the connection's goroutine in a command, so that its next
	// input stays in the socket, where only the probe can see it.
	srv.Pause(time.Hour)
	c.send(encode("PING"))
	if err := srv.WaitHeld(1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.send(encode("PING"))
	waitFor(t, "the probe to see the held connection's input", srv.probe.ready)

	// While a pause of the expiry is on, the connection's replies end it.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	done := make(chan pauseEnd)
	go func() { done <- srv.pauseExpiry(timer) }()
	waitFor(t, "the pause to begin", srv.expiryPausing.Load)
	srv.Unpause()
	for i := 0; i < 2; i++ {
		if got := c.read(); got != "+PONG\r\n" {
			t.Fatalf("held PING %d: %q", i, got)
		}
	}
	select {
	case end := <-done:
		if end != pauseKicked {
			t.Fatalf("pause ended with %d, want pauseKicked", end)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serving a connection did not end the expiry's pause")
	}
}
