package server

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak_LockCyclesNoErrorsNoLeaks runs 200 connections doing lock
// cycles on 20 contended keys (SET NX PX, then EVALSHA of the release
// script) for TUMBLER_SOAK (a Go duration; default 5s so that make test
// stays fast). For a real soak:
//
//	TUMBLER_SOAK=60s go test -run Soak -race -timeout 5m ./server
//
// Every reply must be as expected (a holder's release always deletes: a
// second holder would make some release return 0). Afterwards the
// goroutine count returns to where it was before the connections, and the
// heap in use stays within a generous bound of the baseline.
func TestSoak_LockCyclesNoErrorsNoLeaks(t *testing.T) {
	dur := 5 * time.Second
	if v := os.Getenv("TUMBLER_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TUMBLER_SOAK=%q: %v", v, err)
		}
		dur = d
	}
	if testing.Short() {
		dur = time.Second
	}
	srv := RunT(t, WithConfig(func(c *Config) { c.CommandLog = 0 }))
	addr := srv.Addr()

	runtime.GC()
	baseG := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapInuse

	const conns, keys = 200, 20
	stop := time.Now().Add(dur)
	var acquired, contended atomic.Int64
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		lc, err := newLockClient(addr, "", fmt.Sprintf("soak:%d", i%keys))
		if err != nil {
			t.Fatal(err)
		}
		lc.tok = fmt.Sprintf("tok-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer lc.conn.Close()
			for time.Now().Before(stop) {
				r, err := lc.roundTrip("SET", lc.key, lc.tok, "NX", "PX", "30000")
				switch {
				case err != nil:
					errs <- err
					return
				case r == "$-1\r\n":
					contended.Add(1)
					continue
				case r != "+OK\r\n":
					errs <- fmt.Errorf("acquire: %q", r)
					return
				}
				if r, err := lc.roundTrip("EVALSHA", lc.sha, "1", lc.key, lc.tok); err != nil || r != ":1\r\n" {
					errs <- fmt.Errorf("release %s by %s: %q %v", lc.key, lc.tok, r, err)
					return
				}
				acquired.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%v: %d lock cycles, %d contended attempts", dur, acquired.Load(), contended.Load())
	if acquired.Load() == 0 {
		t.Fatal("no lock was ever acquired")
	}
	if msg := srv.Engine().CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}

	// The server notices closed connections asynchronously: wait (bounded)
	// for their goroutines to end.
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > baseG && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseG {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before the connections, %d after they closed\n%s", baseG, g, buf[:runtime.Stack(buf, true)])
	}
	if n := srv.ServerInfo().ConnectedClients; n != 0 {
		t.Errorf("connected_clients = %d after every connection closed", n)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if limit := 2*baseHeap + 64<<20; ms.HeapInuse > limit {
		t.Errorf("heap in use grew from %d to %d bytes (bound %d)", baseHeap, ms.HeapInuse, limit)
	}
}
