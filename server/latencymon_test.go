package server

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExpireCycle_LatencySample: a run of the active expiry that takes at
// least latency-monitor-threshold is an expire-cycle event of the latency
// monitor, as Redis's activeExpireCycle records it.
func TestExpireCycle_LatencySample(t *testing.T) {
	defer func(d time.Duration) { expirySlice = d }(expirySlice)
	expirySlice = 50 * time.Millisecond // slices long enough to pass 1 ms
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "latency-monitor-threshold", "1"},
		{"DEBUG", "SET-ACTIVE-EXPIRE", "0"},
	} {
		if got := c.do(cmd...); got != "+OK\r\n" {
			t.Fatalf("%q: %q", cmd, got)
		}
	}
	const n = 50000 // (a 50 ms slice of them takes well over 1 ms)
	for i := 0; i < n; i++ {
		srv.Set("k"+strconv.Itoa(i), "v", time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond) // all due
	if got := c.do("LATENCY", "LATEST"); strings.Contains(got, "expire-cycle") {
		t.Fatalf("LATENCY LATEST before the expiry ran: %q", got)
	}
	if got := c.do("DEBUG", "SET-ACTIVE-EXPIRE", "1"); got != "+OK\r\n" {
		t.Fatalf("DEBUG SET-ACTIVE-EXPIRE 1: %q", got)
	}
	eventually(t, "the keys to be reclaimed", func() bool { return c.do("DBSIZE") == ":0\r\n" })
	if got := c.do("LATENCY", "LATEST"); !strings.Contains(got, "$12\r\nexpire-cycle\r\n") {
		t.Fatalf("LATENCY LATEST after reclaiming %d keys: %q", n, got)
	}
}
