package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHeapFloorPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 0, 100},              // no floor
		{3 * mb, 0, 100},         // no floor
		{0, 32 * mb, 800},        // before the first collection: the minimum heap is the floor
		{3 * mb, 32 * mb, 800},   // 3 MB·9 = 27 MB, but 4 MB·8 = 32 MB
		{1 * mb, 32 * mb, 800},   // likewise
		{8 * mb, 32 * mb, 300},   // 8 MB·4 = 32 MB
		{10 * mb, 32 * mb, 220},  // 10 MB·3.2
		{16 * mb, 32 * mb, 100},  // Go's own pacing from half the floor on
		{200 * mb, 32 * mb, 100}, // a large data set
		{3 * mb, 8 * mb, 166},    // maxmemory 16 MB: 3 MB·2.66 ≈ 8 MB
		{3 * mb, 4 * mb, 100},    // never below Go's default
	} {
		got := heapFloorPercent(c.live, c.floor)
		if got != c.want {
			t.Errorf("heapFloorPercent(%d MB, %d MB) = %d, want %d", c.live/mb, c.floor/mb, got, c.want)
		}
		// the goal it gives, Go's max(live·(1+p/100), 4 MB·p/100), is about the floor
		if c.floor > 0 && c.live*2 < c.floor {
			goal := max(c.live+c.live*uint64(got)/100, goHeapMinimum*uint64(got)/100)
			if goal > c.floor+c.floor/10 || goal < c.floor-c.floor/10 {
				t.Errorf("live %d MB, floor %d MB: GOGC %d makes the goal %d MB", c.live/mb, c.floor/mb, got, goal/mb)
			}
		}
	}
}

// gogc reads GOGC as the runtime has it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// waitGOGC runs collections until GOGC is want (the floor adjusts after
// each one, on the cleanup goroutine).
func waitGOGC(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for gogc() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", gogc(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// The floor raises GOGC while the live heap is small, follows maxmemory
// after the next collection, and puts GOGC back when stopped. Not
// parallel: GOGC is the process's.
func TestKeepHeapFloor(t *testing.T) {
	if _, set := lookupGOGC(); set {
		t.Skip("GOGC is set in the environment")
	}
	var maxmem atomic.Uint64
	stop := keepHeapFloor(64<<20, maxmem.Load)
	// this test binary's live heap is a few MB: the minimum heap decides
	waitGOGC(t, 64*100/4)
	maxmem.Store(4 << 20) // a floor of 2 MB: under the live heap, Go's own pacing
	waitGOGC(t, 100)
	maxmem.Store(0)
	waitGOGC(t, 64*100/4)
	stop()
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC is %d after stop, want 100", p)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC is %d after stop and two collections, want 100", p)
	}
}

// GOGC in the environment is the operator's choice: the floor leaves it.
func TestKeepHeapFloor_GOGCInTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "100")
	stop := keepHeapFloor(64<<20, func() uint64 { return 0 })
	defer stop()
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if p := gogc(); p != 100 {
		t.Fatalf("GOGC is %d with GOGC=100 in the environment", p)
	}
}

// The binary keeps the floor: with garbage made fast (1 MB values
// replaced one after another), Go's collections aim at 32 MB of heap,
// not at the 4 to 8 MB a small live heap gives by default. Read from the
// runtime's own trace (GODEBUG=gctrace=1: "..., 4 MB goal, ...").
func TestBinary_KeepsTheHeapFloor(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", port)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GODEBUG=gctrace=1")
	var trace bytes.Buffer
	cmd.Stderr = &syncWriter{w: &trace}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	conn := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	const n = 1 << 20
	req := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", n) + "\r\n")
	rd := bufio.NewReader(conn)
	goal := regexp.MustCompile(`, (\d+) MB goal,`)
	for i := range 400 { // up to 400 MB of garbage
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
			t.Fatalf("SET %d: %q, %v", i, line, err)
		}
		cmd.Stderr.(*syncWriter).mu.Lock()
		goals := goal.FindAllStringSubmatch(trace.String(), -1)
		cmd.Stderr.(*syncWriter).mu.Unlock()
		// after the first collection (which the floor can only follow)
		if len(goals) >= 3 {
			for _, g := range goals[1:] {
				if mb, _ := strconv.Atoi(g[1]); mb < 30 {
					t.Fatalf("a collection aimed at %s MB of heap; the trace:\n%s", g[1], trace.String())
				}
			}
			return
		}
	}
	t.Fatalf("fewer than 3 collections in 400 MB of garbage; the trace:\n%s", trace.String())
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
