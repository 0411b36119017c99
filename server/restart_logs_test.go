package server

import (
	"strings"
	"testing"
)

// TestRestart_EmptiesTheProcessLogs: a restarted Redis starts with an
// empty LATENCY monitor, ACL LOG and slow log (whose entry ids start at 0
// again); Restart left the first two as they were, entries about users
// the restart had forgotten included.
func TestRestart_EmptiesTheProcessLogs(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("CONFIG", "SET", "latency-monitor-threshold", "1")
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	c.do("DEBUG", "SLEEP", "0.01")
	c.do("ACL", "SETUSER", "alice", "on", "nopass", "+get")
	c.do("AUTH", "alice", "x")
	c.do("SET", "k", "v") // refused: logged
	c.do("AUTH", "nosuch", "x")
	if got := c.do("LATENCY", "LATEST"); got == "*0\r\n" {
		t.Fatal("no latency event before the restart")
	}
	if got := c.do("ACL", "LOG"); got == "*0\r\n" {
		t.Fatal("no ACL LOG entry before the restart")
	}
	for _, keep := range []bool{false, true} {
		if err := srv.Restart(keep); err != nil {
			t.Fatal(err)
		}
		c = dial(t, srv.Addr())
		if got := c.do("LATENCY", "LATEST"); got != "*0\r\n" {
			t.Errorf("Restart(%v): LATENCY LATEST = %q, want no events", keep, got)
		}
		if got := c.do("ACL", "LOG"); got != "*0\r\n" {
			t.Errorf("Restart(%v): ACL LOG = %q, want empty", keep, got)
		}
		c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		c.do("PING")
		if got := c.do("SLOWLOG", "GET", "1"); !strings.HasPrefix(got, "*1\r\n*6\r\n:1\r\n") {
			// entry 0 is the CONFIG SET
			t.Errorf("Restart(%v): SLOWLOG GET 1 = %q, want the entry with id 1", keep, got)
		}
	}
}
