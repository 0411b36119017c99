package server

import (
	"testing"
	"time"
)

// TestSetLatency_ConnectionNotReadWhileRepliesWait pins down what
// SetLatency's comment says: a connection is not read while its replies
// wait out the latency, so a command that arrives meanwhile waits for
// them, then for d of its own (up to 2d in all), where a network would
// deliver its reply d after it was sent.
func TestSetLatency_ConnectionNotReadWhileRepliesWait(t *testing.T) {
	const d = 200 * time.Millisecond
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("PING")
	srv.SetLatency(d)
	start := time.Now()
	c.send(encode("PING"))
	time.Sleep(d / 2)
	second := time.Now()
	c.send(encode("ECHO", "x"))
	c.read()
	if first := time.Since(start); first > d*5/4 {
		t.Skipf("the first reply took %v: too loaded to tell the two commands apart", first)
	}
	if got := c.read(); got != "$1\r\nx\r\n" {
		t.Fatalf("ECHO = %q", got)
	}
	if took := time.Since(second); took < d*5/4 {
		t.Errorf("a command sent while the connection's replies waited took %v, want about 1.5 × %v", took, d)
	}
}
