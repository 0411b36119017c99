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

func TestPauseExpiry_EndsWhenAClientIsServed(t *testing.T) {
	defer func(d time.Duration) { expiryPauseMax = d }(expiryPauseMax)
	expiryPauseMax = time.Hour // only a kick can end the pause
	s := New(Config{})
	s.kickExpiry() // no pause on: a kick now must not end the next pause
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	done := make(chan bool)
	go func() { done <- s.pauseExpiry(timer) }()
	waitFor(t, "the pause to begin", s.expiryPausing.Load)
	select {
	case <-done:
		t.Fatal("the pause ended before any client was served")
	case <-time.After(20 * time.Millisecond):
	}
	s.kickExpiry()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("pauseExpiry reported the server closing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a kick did not end the pause")
	}
	if s.expiryPausing.Load() {
		t.Fatal("still pausing after the pause ended")
	}
	go func() { done <- s.pauseExpiry(timer) }()
	waitFor(t, "the second pause to begin", s.expiryPausing.Load)
	close(s.done)
	if ok := <-done; ok {
		t.Fatal("a pause ended by Close must report it")
	}
}
