package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestManualClock_ReportedTimes: under a manual clock, the times the
// server reports follow it (WithManualClock's promise), not only TIME,
// OBJECT IDLETIME and CLIENT LIST's age: INFO's server_time_usec,
// uptime_in_seconds and lru_clock, LASTSAVE after a Restart, the slow
// log's, LATENCY's and ACL LOG's timestamps too.
func TestManualClock_ReportedTimes(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	num := func(reply string) int64 {
		t.Helper()
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(reply, ":")), 10, 64)
		if err != nil {
			t.Fatalf("not an integer: %q", reply)
		}
		return n
	}
	field := func(info, name string) int64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + name + `:(\d+)\r$`).FindStringSubmatch(info)
		if m == nil {
			t.Fatalf("no %s in INFO", name)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	const step = 1000 * time.Second
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	c.do("CONFIG", "SET", "latency-monitor-threshold", "1")
	c.do("ACL", "SETUSER", "alice", "on", "nopass", "+get")
	lastsave := num(c.do("LASTSAVE"))
	info0 := c.do("INFO", "server")
	srv.Advance(step)
	wall := srv.ManualClock().Wall()

	info := c.do("INFO", "server")
	if got := field(info, "uptime_in_seconds") - field(info0, "uptime_in_seconds"); got != 1000 {
		t.Errorf("uptime_in_seconds moved %d s after Advance(%v), want 1000", got, step)
	}
	if got := field(info, "server_time_usec") / 1e6; got != wall.Unix() {
		t.Errorf("server_time_usec = %d s, want the manual clock's %d", got, wall.Unix())
	}
	if got := field(info, "lru_clock") - field(info0, "lru_clock"); got != 1000 {
		t.Errorf("lru_clock moved %d, want 1000", got)
	}
	c.do("SLOWLOG", "RESET")
	c.do("PING")
	if m := regexp.MustCompile(`\*\d+\r\n:\d+\r\n:(\d+)\r\n`).FindStringSubmatch(c.do("SLOWLOG", "GET", "1")); m == nil {
		t.Error("no slow log entry")
	} else if ts, _ := strconv.ParseInt(m[1], 10, 64); ts != wall.Unix() {
		t.Errorf("slow log entry at %d, want the manual clock's %d", ts, wall.Unix())
	}
	c.do("DEBUG", "SLEEP", "0.005")
	if m := regexp.MustCompile(`:(\d+)\r\n:\d+\r\n:\d+\r\n`).FindStringSubmatch(c.do("LATENCY", "LATEST")); m == nil {
		t.Error("no latency event")
	} else if ts, _ := strconv.ParseInt(m[1], 10, 64); ts != wall.Unix() {
		t.Errorf("latency event at %d, want the manual clock's %d", ts, wall.Unix())
	}
	a := dial(t, srv.Addr())
	a.do("AUTH", "alice", "x")
	a.do("SET", "k", "v") // refused: logged
	srv.Advance(7 * time.Second)
	if log := c.do("ACL", "LOG", "1"); !strings.Contains(log, "age-seconds\r\n$1\r\n7\r\n") {
		t.Errorf("ACL LOG entry 7 s old on the manual clock: %q", log)
	}
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	c = dial(t, srv.Addr())
	if got := num(c.do("LASTSAVE")) - lastsave; got != 1007 {
		t.Errorf("LASTSAVE after a Restart moved %d s, want the manual clock's 1007", got)
	}
}

// TestManualClock_WaitTimeoutRange: WAIT and WAITAOF check that their
// timeout fits after the server's wall clock, as BLPOP and CLIENT PAUSE
// do (Redis's getTimeoutFromObjectOrReply), on a manual clock the
// manual wall clock: after JumpWallClock a timeout that would overflow
// it is out of range.
func TestManualClock_WaitTimeoutRange(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	srv.JumpWallClock(100 * 365 * 24 * time.Hour)
	// fits after the real clock, not after the manual one, 100 years on
	ms := strconv.FormatInt(1<<63-1-time.Now().UnixMilli()-1_000_000_000_000, 10)
	want := "-ERR timeout is out of range\r\n"
	for _, cmd := range [][]string{{"BLPOP", "q", ms[:len(ms)-3]}, {"CLIENT", "PAUSE", ms}, {"WAIT", "0", ms}, {"WAITAOF", "0", "0", ms}} {
		if got := c.do(cmd...); got != want {
			t.Errorf("%s after JumpWallClock(100 years) = %q, want %q", cmd[0], got, want)
		}
	}
}
