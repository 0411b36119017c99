package server

import (
	"strings"
	"testing"
	"time"
)

// A client on an event loop whose batches write nothing (CLIENT REPLY OFF)
// still ends each batch: the tick measures it, and it is evicted when it
// is the largest (its batches, one every 30 ms, once kept it "busy").
func TestClientEviction_ReplyOffClientEvictable(t *testing.T) {
	srv, ctl := evictionServer(t, "200000")
	z := named(t, srv, "z")
	watchKeys(t, z, 2400)
	for range 20 { // back to its event loop
		z.expectDo("+PONG\r\n", "PING")
	}
	before := srv.loopStats.batches.Load()
	z.send(encode("CLIENT", "REPLY", "OFF"))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			z.conn.Write([]byte(encode("EXISTS", "nothing"))) // (fails once z is evicted)
		}
	}()
	defer func() { close(stop); <-done }()
	eventually(t, "z's batches on its event loop", func() bool { return srv.loopStats.batches.Load() > before+2 })
	y := named(t, srv, "y")
	y.send("*2\r\n$3\r\nGET\r\n$100000\r\n" + strings.Repeat("x", 60_000))
	eventually(t, "z, the largest, evicted", func() bool { return !hasClient(t, ctl, "z") })
	if !hasClient(t, ctl, "y") {
		t.Fatalf("y evicted too: %v", clientNames(t, ctl))
	}
}
