package diff

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// monitorCommands run on one connection while another MONITORs; what the
// monitor shows must be Redis's, line for line, once the timestamps and
// the client's address are masked: which commands, in what order, each
// with its database (a SELECT's new one, a script's own), transactions
// shown as EXEC runs them (a DISCARD, an aborted or a WATCH-failed EXEC
// shows none of the queued commands).
var monitorCommands = [][]string{
	{"SELECT", "5"},
	{"SET", "a", "1"},
	{"EVAL", "redis.call('select', 2) return redis.call('set', 'b', '1')", "0"},
	{"GET", "a"},
	{"MULTI"}, {"SELECT", "3"}, {"GET", "a"}, {"CONFIG", "GET", "port"},
	{"EVAL", "return redis.call('get', 'a')", "0"}, {"EXEC"},
	{"GET", "a"},
	{"MULTI"}, {"SET", "x", "1"}, {"DISCARD"},
	{"MULTI"}, {"SET", "x", "1"}, {"NOSUCH"}, {"EXEC"},
	{"WATCH", "w"}, {"SET", "w", "1"}, {"MULTI"}, {"SET", "x", "2"}, {"EXEC"},
	{"MULTI"}, {"SELECT", "0"}, {"EXEC"},
	{"SET", "z", "0"},
	// MIGRATE's credentials are redacted as migrateCommand parses them,
	// up to an option it refuses; none of these reaches a target
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH", "pw", "BOGUS"},
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "COPY", "AUTH2", "u", "pw", "KEYS", "x"},
	{"MIGRATE", "127.0.0.1", "1", "", "0", "10", "REPLACE", "AUTH", "pw", "KEYS", "nosuch"},
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "BOGUS", "AUTH", "pw"},
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u"},
	// an option word ends at a NUL byte (strcasecmp): still credentials
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH\x00x", "pw", "BOGUS"},
	{"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "auth2\x00", "u", "pw", "BOGUS"},
	{"HELLO", "2", "AUTH\x00x", "default", "pw", "SETNAME\x00", "n"},
	// Redis 7.0 runs QUIT as a command, shown like any other (monitorRun
	// sends it on a connection of its own)
	{"QUIT"},
}

func TestMonitorDiff(t *testing.T) {
	redis := startRedis(t)
	tumbler := server.RunT(t).Addr()
	want := monitorRun(t, redis)
	got := monitorRun(t, tumbler)
	if len(want) < len(monitorCommands)/2 {
		t.Fatalf("Redis's monitor showed only %q", want)
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("monitor line %d:\n redis:   %s\n tumbler: %s", i, w, g)
		}
	}
}

var monitorMask = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) (lua|[0-9.:]+)\]`)

// monitorRun returns the monitor's lines for monitorCommands, the
// timestamp dropped and the client's address shown as "client".
func monitorRun(t *testing.T, addr string) []string {
	t.Helper()
	m, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if r, err := m.do("MONITOR"); err != nil || string(r) != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", r, err)
	}
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, cmd := range monitorCommands {
		on := c
		if cmd[0] == "QUIT" {
			if on, err = dial(addr); err != nil {
				t.Fatal(err)
			}
			defer on.close()
		}
		if _, err := on.do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		if on != c {
			on.r.ReadByte() // until the server has closed it
		}
	}
	if _, err := c.do("ECHO", "end"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	rd := bufio.NewReader(m.c)
	m.c.SetDeadline(time.Now().Add(ioTimeout))
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the monitor after %q: %v", lines, err)
		}
		line = strings.TrimSuffix(line, "\r\n")
		sub := monitorMask.FindStringSubmatch(line)
		if sub == nil {
			t.Fatalf("not a monitor line: %q", line)
		}
		who := "client"
		if sub[2] == "lua" {
			who = "lua"
		}
		line = "[" + sub[1] + " " + who + "]" + line[len(sub[0]):]
		if strings.HasSuffix(line, `"ECHO" "end"`) {
			return lines
		}
		lines = append(lines, line)
	}
}

// TestMonitorInExecDiff: MONITOR queued in MULTI is refused by EXEC, and
// the connection goes on as an ordinary one.
func TestMonitorInExecDiff(t *testing.T) {
	rc, tc := dialPair(t)
	for _, args := range [][]string{{"MULTI"}, {"MONITOR"}, {"EXEC"}, {"SET", "k", "v"}, {"PING"}} {
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("redis %v: %v", args, err)
		}
		got, err := tc.do(args...)
		if err != nil {
			t.Fatalf("tumbler %v: %v", args, err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%v\nredis:   %q\ntumbler: %q", args, want, got)
		}
	}
}
