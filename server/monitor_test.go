package server

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// monitorServer runs on a manual clock at a fixed wall time, so MONITOR's
// timestamps are exact.
func monitorServer(t *testing.T) *Server {
	return RunT(t, WithConfig(func(c *Config) {
		c.Clock = expiry.NewManualClock(time.Unix(1339518083, 107412000))
	}))
}

func TestMonitor_ShowsCommandsAsRedisDoes(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := dial(t, srv.Addr())
	from := "[0 " + c.conn.LocalAddr().String() + "]"
	c.do("SET", "k", "a b\"\n\x01\\")
	c.do("AUTH", "secret")
	c.do("AUTH", "a", "b", "c")
	c.do("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "x")
	c.do("HELLO", "2")
	c.do("nosuch")                // unknown: not shown
	c.do("GET")                   // arity error: not shown
	c.do("CONFIG", "GET", "port") // admin: not shown
	c.do("CLIENT", "LIST")        // admin: not shown
	c.do("EVAL", "redis.call('set', KEYS[1], '1') return redis.call('get', KEYS[1])", "1", "kk")
	c.do("EVALSHA", "abc", "0") // shown before it runs, even when it fails
	c.do("CLIENT", "SETNAME", "nm")
	srv.Advance(1500 * time.Millisecond)
	c.do("INCR", "5")

	ts := "+1339518083.107412 "
	want := []string{
		ts + from + ` "SET" "k" "a b\"\n\x01\\"`,
		ts + from + ` "AUTH" "(redacted)"`,
		ts + from + ` "AUTH" "a" "b" "c"`,
		ts + from + ` "HELLO" "3" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`,
		ts + from + ` "HELLO" "2"`,
		ts + from + ` "EVAL" "redis.call('set', KEYS[1], '1') return redis.call('get', KEYS[1])" "1" "kk"`,
		ts + `[0 lua] "set" "kk" "1"`,
		ts + `[0 lua] "get" "kk"`,
		ts + from + ` "EVALSHA" "abc" "0"`,
		ts + from + ` "CLIENT" "SETNAME" "nm"`,
		"+1339518084.607412 " + from + ` "INCR" "5"`,
	}
	for i, w := range want {
		if got := m.read(); got != w+"\r\n" {
			t.Fatalf("line %d = %q\nwant %q", i, got, w+"\r\n")
		}
	}
}

func TestMonitor_TheMonitoringConnection(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	m.do("MONITOR")
	from := "[0 " + m.conn.LocalAddr().String() + "]"
	// Its own commands are shown to it, after their reply.
	if got := m.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if got := m.read(); got != "+1339518083.107412 "+from+` "PING"`+"\r\n" {
		t.Fatalf("own PING line = %q", got)
	}
	// It may not touch the keyspace.
	for _, args := range [][]string{{"GET", "x"}, {"SET", "x", "y"}, {"EVAL", "return 1", "0"}} {
		if got := m.do(args...); got != "-ERR Replica can't interact with the keyspace\r\n" {
			t.Fatalf("%v from a monitor = %q", args, got)
		}
	}
	// CLIENT PAUSE does not hold it (Redis exempts replicas, monitors among them).
	c0 := dial(t, srv.Addr())
	c0.do("CLIENT", "PAUSE", "100000", "ALL")
	if got := m.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING from a monitor during CLIENT PAUSE ALL = %q", got)
	}
	m.read() // its line
	c0.send(encode("CLIENT", "UNPAUSE"))
	eventually(t, "UNPAUSE held", func() bool { return srv.waitingCommands() == 1 })
	srv.Advance(100*time.Second + time.Millisecond)
	if got := c0.read(); got != "+OK\r\n" {
		t.Fatalf("UNPAUSE = %q", got)
	}
	// (CLIENT PAUSE and UNPAUSE are admin commands: MONITOR does not show them.)
	// A second MONITOR gets no reply at all: the next reply is ECHO's.
	m.send(encode("MONITOR") + encode("ECHO", "after"))
	if got := m.read(); got != bulk("after") {
		t.Fatalf("after a second MONITOR: %q", got)
	}
	m.read() // the ECHO line
	// CLIENT LIST shows it with flag O.
	c := dial(t, srv.Addr())
	if list := c.do("CLIENT", "LIST"); !strings.Contains(list, "flags=O") || !strings.Contains(list, "cmd=echo") {
		t.Fatalf("CLIENT LIST = %q", list)
	}
	// RESET leaves MONITOR mode.
	if got := m.do("RESET"); got != "+RESET\r\n" {
		t.Fatalf("RESET = %q", got)
	}
	c.do("SET", "k", "v")
	if got := m.do("GET", "k"); got != bulk("v") {
		t.Fatalf("GET after RESET = %q; no MONITOR line may come before it", got)
	}
	if srv.monitoring() {
		t.Fatal("still monitoring after RESET")
	}
}

func TestMonitor_ClosedMonitorIsForgotten(t *testing.T) {
	srv := RunT(t)
	m := dial(t, srv.Addr())
	m.do("MONITOR")
	m2 := dial(t, srv.Addr())
	m2.do("MONITOR")
	m.conn.Close()
	eventually(t, "one monitor left", func() bool {
		p := srv.fx.monitors.Load()
		return p != nil && len(*p) == 1
	})
	c := dial(t, srv.Addr())
	c.do("PING")
	if got := m2.read(); !regexp.MustCompile(`^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "PING"\r\n$`).MatchString(got) {
		t.Fatalf("line = %q", got)
	}
}

// MONITOR inside EXEC is refused, as Redis refuses it to a client that
// expects a reply a command (CLIENT_DENY_BLOCKING); the connection stays
// an ordinary one.
func TestMonitor_RefusedInsideExec(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("MULTI")
	c.do("MONITOR")
	if got := c.do("EXEC"); got != "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if p := srv.fx.monitors.Load(); p != nil && len(*p) != 0 {
		t.Fatalf("%d monitors", len(*p))
	}
	if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET after = %q", got)
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after = %q", got)
	}
}

func TestMonitor_RESP3ClientGetsStatusLines(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	m.do("HELLO", "3")
	m.do("MONITOR")
	c := dial(t, srv.Addr())
	c.do("SET", "k", "v")
	want := fmt.Sprintf("+1339518083.107412 [0 %s] \"SET\" \"k\" \"v\"\r\n", c.conn.LocalAddr())
	if got := m.read(); got != want {
		t.Fatalf("line = %q, want %q", got, want)
	}
}

func TestAppendRepr_AsSdscatrepr(t *testing.T) {
	got := string(appendRepr(nil, []byte("a\\b\"c\n\r\t\a\b\x00\x7f\xff ~")))
	want := `"a\\b\"c\n\r\t\a\b\x00\x7f\xff ~"`
	if got != want {
		t.Fatalf("appendRepr = %s, want %s", got, want)
	}
}

func TestClientList_FiltersAndFields(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	aid := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	b.do("GET", "x")
	srv.Advance(5 * time.Second)
	a.do("PING")
	srv.Advance(2 * time.Second)

	line := func(list, addr string) string {
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, " addr="+addr+" ") {
				return l
			}
		}
		t.Fatalf("no line for %s in %q", addr, list)
		return ""
	}
	list := a.do("CLIENT", "LIST")
	la := line(list, a.conn.LocalAddr().String())
	lb := line(list, b.conn.LocalAddr().String())
	for _, want := range []string{"id=" + aid + " ", " laddr=" + srv.Addr() + " ", " age=7 ", " idle=0 ", " flags=N ", " cmd=client|list "} {
		if !strings.Contains(la, want) {
			t.Errorf("own line lacks %q: %s", want, la)
		}
	}
	for _, want := range []string{" age=7 ", " idle=7 ", " cmd=get "} {
		if !strings.Contains(lb, want) {
			t.Errorf("other line lacks %q: %s", want, lb)
		}
	}
	c := dial(t, srv.Addr())
	if l := c.do("CLIENT", "INFO"); !strings.Contains(l, " cmd=client|info ") || !strings.Contains(l, " age=0 ") {
		t.Errorf("CLIENT INFO of a new connection = %q", l)
	}
	d := dial(t, srv.Addr())
	d.do("nosuch")
	if l := line(c.do("CLIENT", "LIST"), d.conn.LocalAddr().String()); !strings.Contains(l, " cmd=NULL ") {
		t.Errorf("after an unknown command: %s", l)
	}

	if got := a.do("CLIENT", "LIST", "ID", aid, "99999", "-1"); strings.Count(got, "id=") != 1 || !strings.Contains(got, "id="+aid+" ") {
		t.Fatalf("CLIENT LIST ID = %q", got)
	}
	if got := a.do("CLIENT", "LIST", "TYPE", "NORMAL"); strings.Count(got, "id=") != 4 {
		t.Fatalf("CLIENT LIST TYPE normal = %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "LIST", "TYPE", "master"}, "$0\r\n\r\n"},
		{[]string{"CLIENT", "LIST", "TYPE", "replica"}, "$0\r\n\r\n"},
		{[]string{"CLIENT", "LIST", "ID", "99999"}, "$0\r\n\r\n"},
		{[]string{"CLIENT", "LIST", "TYPE"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "LIST", "TYPE", "foo"}, "-ERR Unknown client type 'foo'\r\n"},
		{[]string{"CLIENT", "LIST", "ID"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "LIST", "ID", "x"}, "-ERR Invalid client ID\r\n"},
		{[]string{"CLIENT", "LIST", "ID", "1", "x"}, "-ERR Invalid client ID\r\n"},
		{[]string{"CLIENT", "LIST", "FOO", "bar"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "LIST", "TYPE", "normal", "x"}, "-ERR syntax error\r\n"},
	} {
		if got := a.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A reply written counts as an interaction, as in Redis (writeToClient):
// a client whose BLPOP was served after a long wait is not idle.
func TestClientList_IdleEndsWithTheReplyOfABlockedCommand(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("BLPOP", "q", "0"))
	idleOfA := func() string {
		for _, l := range strings.Split(b.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(l, " addr="+a.conn.LocalAddr().String()+" ") {
				for _, f := range strings.Fields(l) {
					if strings.HasPrefix(f, "idle=") {
						return f
					}
				}
			}
		}
		t.Fatal("no CLIENT LIST line (or idle field) for the blocked client")
		return ""
	}
	for i := 0; !strings.Contains(b.do("INFO", "clients"), "blocked_clients:1"); i++ {
		if i > 500 {
			t.Fatal("BLPOP never blocked")
		}
		time.Sleep(2 * time.Millisecond)
	}
	srv.Advance(60 * time.Second)
	if got := idleOfA(); got != "idle=60" {
		t.Fatalf("blocked client: %q, want idle=60 (since its read)", got)
	}
	b.do("LPUSH", "q", "x")
	if got := a.read(); got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP reply %q", got)
	}
	for i := 0; idleOfA() != "idle=0"; i++ {
		if i > 500 {
			t.Fatalf("after its reply the client still shows %q, want idle=0", idleOfA())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A command refused by ACL does not reach MONITOR, as in Redis (only
// commands that run are fed).
func TestMonitor_SkipsACLRefusals(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := dial(t, srv.Addr())
	from := "[0 " + c.conn.LocalAddr().String() + "]"
	c.do("AUTH", "secret")
	c.do("ACL", "SETUSER", "ro", "on", "nopass", "~k", "+get", "+auth")
	c.do("AUTH", "ro", "x")
	if got := c.do("GET", "other"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatal(got)
	}
	c.do("GET", "k")
	ts := "+1339518083.107412 "
	for i, w := range []string{
		ts + from + ` "AUTH" "(redacted)"`,
		ts + from + ` "AUTH" "(redacted)" "(redacted)"`,
		ts + from + ` "GET" "k"`,
	} {
		if got := m.read(); got != w+"\r\n" {
			t.Fatalf("line %d = %q\nwant %q", i, got, w+"\r\n")
		}
	}
}

// MONITOR shows each command with its database: the client's after the
// command ran (a SELECT shows its new one), and for a script's commands
// the script's own, as Redis's call() feeds them.
func TestMonitor_ShowsDatabase(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := dial(t, srv.Addr())
	addr := c.conn.LocalAddr().String()
	c.do("SELECT", "5")
	c.do("SET", "a", "1")
	c.do("EVAL", "redis.call('select', 2) return redis.call('set', 'b', '1')", "0")
	c.do("GET", "a")
	ts := "+1339518083.107412 "
	want := []string{
		ts + "[5 " + addr + `] "SELECT" "5"`,
		ts + "[5 " + addr + `] "SET" "a" "1"`,
		ts + "[5 " + addr + `] "EVAL" "redis.call('select', 2) return redis.call('set', 'b', '1')" "0"`,
		ts + `[2 lua] "select" "2"`,
		ts + `[2 lua] "set" "b" "1"`,
		ts + "[5 " + addr + `] "GET" "a"`,
	}
	for i, w := range want {
		if got := m.read(); got != w+"\r\n" {
			t.Fatalf("line %d = %q\nwant %q", i, got, w+"\r\n")
		}
	}
}

// TestMonitor_SubcommandNamesInASCIICase: a subcommand is found by its
// name in ASCII case only, as Redis's: "SCRIPT \u212aILL" (a Kelvin sign,
// which Unicode lowers to "k") is an unknown subcommand, not SCRIPT KILL,
// and MONITOR does not show it.
func TestMonitor_SubcommandNamesInASCIICase(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	m.do("MONITOR")
	c := dial(t, srv.Addr())
	from := "[0 " + c.conn.LocalAddr().String() + "]"
	if got := c.do("SCRIPT", "\u212aILL"); !strings.HasPrefix(got, "-ERR unknown subcommand") {
		t.Fatalf("SCRIPT \\u212aILL = %q", got)
	}
	c.do("PING")
	if got, want := m.read(), "+1339518083.107412 "+from+` "PING"`+"\r\n"; got != want {
		t.Fatalf("MONITOR shows %q, want %q", got, want)
	}
}
