package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// oom-score-adj sets the process's OOM score as redis-server sets its
// own: at start from the config file, on CONFIG SET, relative to the
// score the process started with or absolute, and back to that score
// with "no". (Redis's unit/oom-score-adj asserts the same.)
func TestBinary_OOMScoreAdj(t *testing.T) {
	own, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Skipf("no /proc/self/oom_score_adj: %v", err)
	}
	base, _ := strconv.Atoi(strings.TrimSpace(string(own))) // what the binary inherits
	if base > 500 {
		t.Skipf("this process's OOM score is %d already", base)
	}
	bin := build(t)
	port := freePort(t)
	conf := filepath.Join(t.TempDir(), "tumbler.conf")
	os.WriteFile(conf, []byte("oom-score-adj absolute\noom-score-adj-values 300 400 500\n"), 0o600)
	cmd, out, _ := runBin(t, bin, conf, "--port", strconv.Itoa(port))
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)) })
	rd := bufio.NewReader(c)
	score := func() int {
		t.Helper()
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/oom_score_adj")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	if got := score(); got != 300 {
		t.Fatalf("oom_score_adj %d at start, want 300 (absolute, from the file)\n%s", got, out)
	}
	roundTrip(t, c, rd, "CONFIG SET oom-score-adj-values \"350 400 500\"\r\n", "+OK\r\n")
	if got := score(); got != 350 {
		t.Fatalf("oom_score_adj %d, want 350", got)
	}
	roundTrip(t, c, rd, "CONFIG SET oom-score-adj relative oom-score-adj-values \"20 400 500\"\r\n", "+OK\r\n")
	if got := score(); got != base+20 {
		t.Fatalf("oom_score_adj %d, want %d (relative to %d)", got, base+20, base)
	}
	roundTrip(t, c, rd, "CONFIG SET oom-score-adj-values \"2000 2000 2000\"\r\n", "+OK\r\n")
	if got := score(); got != 1000 {
		t.Fatalf("oom_score_adj %d, want 1000 (the kernel's largest)", got)
	}
	roundTrip(t, c, rd, "CONFIG SET oom-score-adj no\r\n", "+OK\r\n")
	if got := score(); got != base {
		t.Fatalf("oom_score_adj %d after no, want the starting %d", got, base)
	}
	roundTrip(t, c, rd, "CONFIG SET oom-score-adj-values \"100 100 100\"\r\n", "+OK\r\n") // off: untouched
	if got := score(); got != base {
		t.Fatalf("oom_score_adj %d with oom-score-adj no, want %d", got, base)
	}
}
