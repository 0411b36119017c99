package server

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

func TestPause_HoldsEveryReplyUntilTheClockPassesIt(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a := dial(t, srv.Addr())
	a.do("SET", "lock", "tok", "PX", "3000")
	srv.Pause(5 * time.Second)

	// A pipeline: a write, an unknown command and a PING are all held.
	a.send(encode("SET", "k", "v") + encode("nosuch") + encode("PING"))
	b := dial(t, srv.Addr()) // new connections are accepted, their commands held too
	b.send(encode("PING"))
	eventually(t, "both connections held", func() bool { return srv.waitingCommands() == 2 })
	if _, ok := srv.Get("k"); ok {
		t.Fatal("a command ran during the pause")
	}
	srv.Advance(4999 * time.Millisecond)
	if n := srv.waitingCommands(); n != 2 {
		t.Fatalf("%d commands held 1 ms before the pause ends; want 2", n)
	}
	if _, ok := srv.Get("k"); ok {
		t.Fatal("a command ran before the pause ended")
	}
	srv.Advance(time.Millisecond)
	if got := a.read() + a.read() + a.read(); got != "+OK\r\n-ERR unknown command 'nosuch', with args beginning with: \r\n+PONG\r\n" {
		t.Fatalf("replies after the pause = %q", got)
	}
	if got := b.read(); got != "+PONG\r\n" {
		t.Fatalf("new connection's reply = %q", got)
	}
	// The pause outlived the lock: it is gone when the server answers again.
	if got := a.do("GET", "lock"); got != "$-1\r\n" {
		t.Fatalf("lock after a pause longer than its TTL = %q", got)
	}
}

func TestPause_UnpauseAndReplace(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	srv.Pause(time.Hour)
	c.send(encode("PING"))
	eventually(t, "PING held", func() bool { return srv.waitingCommands() == 1 })
	srv.Unpause()
	if got := c.read(); got != "+PONG\r\n" {
		t.Fatalf("after Unpause: %q", got)
	}
	srv.Pause(time.Hour)
	srv.Pause(time.Second) // replaces the hour
	c.send(encode("PING"))
	eventually(t, "PING held", func() bool { return srv.waitingCommands() == 1 })
	srv.Advance(time.Second)
	if got := c.read(); got != "+PONG\r\n" {
		t.Fatalf("after the replacing pause: %q", got)
	}
}

func TestPause_RealClockEndsByItself(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	start := time.Now() // before the pause begins: the bound cannot fail for a late start
	srv.Pause(30 * time.Millisecond)
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if el := time.Since(start); el < 29*time.Millisecond { // (the pause's end is a whole ms)
		t.Fatalf("PING answered after %v, inside a 30 ms pause", el)
	}
}

func TestPause_CloseDoesNotWaitForIt(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0", Clock: expiry.NewManualClock(time.Now())})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	srv.Pause(time.Hour)
	c.send(encode("PING"))
	eventually(t, "PING held", func() bool { return srv.waitingCommands() == 1 })
	srv.Close() // returns although the pause and its held command never end
	c.expectClosed()
}

func TestSetLatency_DelaysEveryReply(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	srv.SetLatency(40 * time.Millisecond)
	start := time.Now()
	if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET = %q", got)
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Fatalf("reply came after %v with 40 ms latency", el)
	}
	// The command itself ran at once: only the reply waits.
	srv.SetLatency(0)
	if v, ok := srv.Get("k"); !ok || v != "v" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
}

func TestDropConnections_ClosesClientsKeepsServing(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("SET", "k", "v")
	b.do("PING")
	if n := srv.DropConnections(); n != 2 {
		t.Fatalf("DropConnections = %d, want 2", n)
	}
	a.expectClosed()
	b.expectClosed()
	c := dial(t, srv.Addr())
	if got := c.do("GET", "k"); got != bulk("v") {
		t.Fatalf("after dropping connections GET = %q; the data stays", got)
	}
}

// DropClient cuts off one client, named by the ClientID of a command it
// sent; the others stay connected and its keys stay.
func TestDropClient_ClosesOneClient(t *testing.T) {
	srv := RunT(t)
	holder, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	holder.do("SET", "lock", "tok", "NX", "PX", "30000")
	other.do("PING")
	var id int64
	for _, r := range srv.Commands() {
		if r.Name() == "set" {
			id = r.ClientID
		}
	}
	if id == 0 {
		t.Fatal("no SET in the command log")
	}
	if !srv.DropClient(id) {
		t.Fatal("DropClient of the SET's client = false")
	}
	holder.expectClosed()
	if got := other.do("GET", "lock"); got != bulk("tok") {
		t.Fatalf("the other client after DropClient: GET = %q", got)
	}
	if srv.DropClient(id) {
		t.Fatal("DropClient of a closed client = true")
	}
	if got := other.do("CLIENT", "LIST"); strings.Count(got, "id=") != 1 {
		t.Fatalf("CLIENT LIST after DropClient:\n%s", got)
	}
}

func TestRestart_SamePortWithAndWithoutData(t *testing.T) {
	srv := RunT(t, WithManualClock())
	addr := srv.Addr()
	c := dial(t, addr)
	c.do("SET", "lock", "tok", "PX", "10000")
	c.do("SET", "plain", "v")
	sha := strings.TrimSpace(strings.Split(c.do("SCRIPT", "LOAD", "return 1"), "\r\n")[1])

	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if srv.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", srv.Addr(), addr)
	}
	c = dial(t, addr)
	if got := c.do("GET", "lock"); got != bulk("tok") {
		t.Fatalf("Restart(true) lost the data: %q", got)
	}
	if got := c.do("EVALSHA", sha, "0"); got != "-NOSCRIPT No matching script. Please use EVAL.\r\n" {
		t.Fatalf("the script cache survived a restart: %q", got)
	}
	srv.Advance(10*time.Second + time.Millisecond) // deadlines keep running across the restart
	if got := c.do("EXISTS", "lock"); got != ":0\r\n" {
		t.Fatalf("lock outlived its TTL across a restart: %q", got)
	}

	if err := srv.Restart(false); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	c = dial(t, addr)
	if got := c.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("Restart(false) kept %q keys", got)
	}
	if n, _ := srv.Engine().KeyCount(); n != 0 {
		t.Fatalf("%d keys after Restart(false)", n)
	}
	srv.Close()
	if err := srv.Restart(true); err != ErrClosed {
		t.Fatalf("Restart after Close = %v, want ErrClosed", err)
	}
}

func TestRestart_HeldCommandsDieWithTheOldProcess(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	srv.Pause(time.Hour)
	c.send(encode("SET", "ghost", "v"))
	eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
	if err := srv.Restart(false); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if _, ok := srv.Get("ghost"); ok {
		t.Fatal("a command held by the old process ran after the restart")
	}
	// The restarted process is not paused.
	if got := dial(t, srv.Addr()).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after restart = %q", got)
	}
}

// A restarted node has the settings it started with and fresh
// statistics: CONFIG SET changes, commandstats, the latency histograms and
// the slow log do not survive Restart, as they do not survive a Redis
// restart; the settings given at start do.
func TestRestart_StartSettingsAndFreshStats(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.ProtoMaxBulkLen = 1 << 20 }))
	c := dial(t, srv.Addr())
	for _, args := range [][]string{
		{"CONFIG", "SET", "notify-keyspace-events", "KEA"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"CONFIG", "SET", "hz", "50"},
		{"CONFIG", "SET", "proto-max-bulk-len", "2mb"},
		{"SET", "k", "v"}, {"GET", "k"},
	} {
		if got := c.do(args...); !strings.HasPrefix(got, "+OK") && !strings.HasPrefix(got, "$1") {
			t.Fatalf("%v: %q", args, got)
		}
	}
	runID := func() string {
		_, rest, _ := strings.Cut(c.do("INFO", "server"), "run_id:")
		id, _, _ := strings.Cut(rest, "\r\n")
		return id
	}
	before := runID()
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	c = dial(t, srv.Addr())
	// First: with the threshold back at 10 ms, a command that a loaded
	// machine stalls would be logged anew.
	if got := c.do("SLOWLOG", "LEN"); got != ":0\r\n" {
		t.Errorf("SLOWLOG LEN after Restart = %q", got)
	}
	for param, want := range map[string]string{"notify-keyspace-events": "", "slowlog-log-slower-than": "10000", "hz": "10", "proto-max-bulk-len": "1048576"} {
		if got := c.do("CONFIG", "GET", param); !strings.HasSuffix(got, "\r\n"+want+"\r\n") {
			t.Errorf("after Restart CONFIG GET %s = %q, want %q", param, got, want)
		}
	}
	info := c.do("INFO", "commandstats")
	if strings.Contains(info, "cmdstat_get:") || strings.Contains(info, "cmdstat_config|set:") {
		t.Errorf("commandstats survived Restart: %q", info)
	}
	if info := c.do("INFO", "latencystats"); strings.Contains(info, "_get:") {
		t.Errorf("latency histograms survived Restart: %q", info)
	}
	if got := c.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Errorf("GET k after Restart(true) = %q", got)
	}
	if after := runID(); len(after) != 40 || after == before {
		t.Errorf("run_id after Restart = %q (before %q): a restarted server has a new one", after, before)
	}
}

func TestRestart_ClearsClientPauseAndMonitors(t *testing.T) {
	srv := RunT(t, WithManualClock())
	m := dial(t, srv.Addr())
	m.do("MONITOR")
	c := dial(t, srv.Addr())
	c.do("CLIENT", "PAUSE", "100000", "WRITE")
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	m.expectClosed()
	if srv.monitoring() {
		t.Fatal("a monitor survived the restart")
	}
	if got := dial(t, srv.Addr()).do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET after restart = %q; CLIENT PAUSE must not survive", got)
	}
}

func TestRestartDelay_RefusesLockGrantsUntilItPasses(t *testing.T) {
	srv := RunT(t, WithManualClock(), WithRestartDelay(30*time.Second))
	c := dial(t, srv.Addr())
	check := func(want string, args ...string) {
		t.Helper()
		if got := c.do(args...); got != want {
			t.Fatalf("%v = %q, want %q", args, got, want)
		}
	}
	refused := "-ERR restart delay: this node restarted and refuses writes for another 30000 ms, so that a lock it forgot is not granted twice\r\n"
	// Lock grants look like a lock held by someone else ...
	check("$-1\r\n", "SET", "lock", "tok", "PX", "10000", "NX")
	check("$-1\r\n", "set", "lock", "tok", "nx", "ex", "10")
	check(":0\r\n", "SETNX", "lock", "tok")
	check(":0\r\n", "MSETNX", "lock", "tok", "other", "x")
	check("$-1\r\n", "EVAL", "return redis.call('set', KEYS[1], 'tok', 'NX', 'PX', 1000)", "1", "lock")
	// ... every other write is an error ...
	check(refused, "SET", "lock", "tok")
	check(refused, "DEL", "lock")
	check(refused, "INCR", "fence")
	if got := c.do("EVAL", "return redis.call('pexpire', KEYS[1], 1000)", "1", "lock"); !strings.HasPrefix(got, "-ERR restart delay") {
		t.Fatalf("a write inside a script = %q", got)
	}
	// ... and reads work.
	check("$-1\r\n", "GET", "lock")
	check(":0\r\n", "DBSIZE")
	// The fixture's own Set is not refused.
	srv.Set("seeded", "v", 0)
	check(bulk("v"), "GET", "seeded")
	// RESP3 sees its null.
	c.do("HELLO", "3")
	check("_\r\n", "SET", "lock", "tok", "NX")

	srv.Advance(29999 * time.Millisecond)
	check("-ERR restart delay: this node restarted and refuses writes for another 1 ms, so that a lock it forgot is not granted twice\r\n", "DEL", "x")
	srv.Advance(time.Millisecond)
	check("+OK\r\n", "SET", "lock", "tok", "PX", "10000", "NX")

	// Every restart starts the delay again.
	if err := srv.Restart(false); err != nil {
		t.Fatal(err)
	}
	c = dial(t, srv.Addr())
	check("$-1\r\n", "SET", "lock", "tok", "PX", "10000", "NX")
	srv.Advance(30 * time.Second)
	check("+OK\r\n", "SET", "lock", "tok", "PX", "10000", "NX")
}

func TestFailNext_FailsTheNextCommands(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	srv.FailNext(2, "ERR boom")
	if got := c.do("PING"); got != "-ERR boom\r\n" {
		t.Fatalf("first = %q", got)
	}
	if got := c.do("SET", "k", "v"); got != "-ERR boom\r\n" {
		t.Fatalf("second = %q", got)
	}
	if _, ok := srv.Get("k"); ok {
		t.Fatal("a failed command ran")
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("third = %q", got)
	}

	srv.FailNextCmd("SET", 1, "READONLY You can't write against a read only replica.")
	srv.FailNext(1, "") // queued behind: the next command of any name
	if got := c.do("GET", "k"); got != "-ERR injected failure\r\n" {
		t.Fatalf("GET = %q; the second rule matches any command", got)
	}
	if got := c.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("GET = %q", got)
	}
	if got := c.do("set", "k", "v"); got != "-READONLY You can't write against a read only replica.\r\n" {
		t.Fatalf("set = %q", got)
	}
	if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET after the failure = %q", got)
	}

	srv.FailNextCmd("evalsha", 5, "ERR nope")
	srv.ClearFailures()
	if got := c.do("EVALSHA", "0000000000000000000000000000000000000000", "0"); !strings.HasPrefix(got, "-NOSCRIPT") {
		t.Fatalf("EVALSHA after ClearFailures = %q", got)
	}
	// Commands inside scripts are not affected.
	srv.FailNextCmd("get", 1, "ERR nope")
	if got := c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k"); got != bulk("v") {
		t.Fatalf("GET inside a script = %q", got)
	}
}

func TestClientPause_Errors(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "PAUSE"}, "-ERR wrong number of arguments for 'client|pause' command\r\n"},
		{[]string{"CLIENT", "PAUSE", "x"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "1.5"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "99999999999999999999"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "-1"}, "-ERR timeout is negative\r\n"},
		{[]string{"CLIENT", "PAUSE", "10", "foo"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"},
		{[]string{"CLIENT", "PAUSE", "x", "foo"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"},
		{[]string{"CLIENT", "PAUSE", "10", "write", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "UNPAUSE", "x"}, "-ERR wrong number of arguments for 'client|unpause' command\r\n"},
		{[]string{"CLIENT", "PAUSE", "0"}, "+OK\r\n"},
		{[]string{"SET", "k", "v"}, "+OK\r\n"}, // a zero pause pauses nothing
		{[]string{"CLIENT", "UNPAUSE"}, "+OK\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestClientPause_WriteHoldsWritesAndScripts(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("SET", "k", "v")
	if got := a.do("CLIENT", "PAUSE", "10000", "WRITE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	// Reads, read-only scripts, connection commands and rejected commands are answered.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, bulk("v")},
		{[]string{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"}, bulk("v")},
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"nosuch"}, "-ERR unknown command 'nosuch', with args beginning with: \r\n"},
		{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command\r\n"},
	} {
		if got := b.do(tc.args...); got != tc.want {
			t.Fatalf("%v during CLIENT PAUSE WRITE = %q, want %q", tc.args, got, tc.want)
		}
	}
	// Writes and EVAL wait; so does what follows them on the connection.
	b.send(encode("SET", "k", "w") + encode("EVAL", "return 1", "0") + encode("PING"))
	eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
	c := dial(t, srv.Addr())
	c.send(encode("EXPIRE", "k", "100"))
	eventually(t, "EXPIRE held", func() bool { return srv.waitingCommands() == 2 })
	// INFO counts them in blocked_clients, as Redis counts its postponed clients
	if got := a.do("INFO", "clients"); !strings.Contains(got, "\r\nblocked_clients:2\r\n") {
		t.Fatalf("INFO clients while two commands are held:\n%s", got)
	}
	if v, _ := srv.Get("k"); v != "v" {
		t.Fatalf("a write ran during CLIENT PAUSE WRITE: k = %q", v)
	}
	// CLIENT UNPAUSE from another client releases them, in order.
	if got := a.do("CLIENT", "UNPAUSE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := b.read() + b.read() + b.read(); got != "+OK\r\n:1\r\n+PONG\r\n" {
		t.Fatalf("released replies = %q", got)
	}
	if got := c.read(); got != ":1\r\n" {
		t.Fatalf("EXPIRE = %q", got)
	}
	if got := a.do("INFO", "clients"); !strings.Contains(got, "\r\nblocked_clients:0\r\n") {
		t.Fatalf("INFO clients after the pause:\n%s", got)
	}
}

// A script whose shebang flags it no-writes is neither a write nor
// may-replicate (Redis's evalGetCommandFlags): CLIENT PAUSE WRITE lets it
// run, alone or queued for EXEC. A script without a shebang, or with one
// that allows writes, waits.
func TestClientPause_WriteLetsNoWritesScriptsRun(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	ro := "#!lua flags=no-writes\nreturn 12"
	sha := strings.TrimSuffix(strings.SplitN(a.do("SCRIPT", "LOAD", ro), "\r\n", 3)[1], "\r\n")
	a.do("CLIENT", "PAUSE", "10000", "WRITE")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EVAL", ro, "0"}, ":12\r\n"},
		{[]string{"EVAL", "#!lua flags=no-writes,allow-stale\nreturn 13", "0"}, ":13\r\n"}, // not cached yet
		{[]string{"EVALSHA", sha, "0"}, ":12\r\n"},
		{[]string{"EVAL_RO", "return 5", "0"}, ":5\r\n"}, // no shebang: EVAL_RO only reads
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EVAL", ro, "0"}, "+QUEUED\r\n"},
		{[]string{"EVALSHA", sha, "0"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*2\r\n:12\r\n:12\r\n"},
	} {
		if got := b.do(tc.args...); got != tc.want {
			t.Fatalf("%q during CLIENT PAUSE WRITE = %q, want %q", tc.args, got, tc.want)
		}
	}
	for i, args := range [][]string{
		{"EVAL", "return 1", "0"},
		{"EVAL", "#!lua\nreturn 1", "0"},
		{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
		{"EVAL_RO", "#!lua\nreturn 1", "0"}, // a shebang without no-writes: a write
	} {
		c := dial(t, srv.Addr())
		c.send(encode(args...))
		eventually(t, fmt.Sprintf("%q held", args), func() bool { return srv.waitingCommands() == i+1 })
	}
}

// A pipeline's replies before the command a pause holds go out while it
// waits, as in Redis 7.0: the GET is answered, the SET after it waits.
func TestClientPause_RepliesBeforeTheHeldCommandGoOut(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("eventLoop=%v", loops), func(t *testing.T) {
			var opts []Option
			if !loops {
				opts = append(opts, WithConfig(func(c *Config) { c.NoEventLoop = true }))
			}
			srv := RunT(t, append(opts, WithManualClock())...)
			a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
			a.do("SET", "k", "v")
			if got := a.do("CLIENT", "PAUSE", "100000", "WRITE"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			b.send(encode("GET", "k") + encode("SET", "k", "w") + encode("GET", "k"))
			if got := b.read(); got != bulk("v") {
				t.Fatalf("GET before the held SET = %q", got)
			}
			eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
			b.expectSilent(50 * time.Millisecond)
			if got := a.do("CLIENT", "UNPAUSE"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			if got := b.read() + b.read(); got != "+OK\r\n"+bulk("w") {
				t.Fatalf("released replies = %q", got)
			}
		})
	}
}

// A command held by a stall that began during its pipeline counts as held
// at once (Held, WaitHeld), though the replies before it are held too:
// here a script runs while Pause begins, and the GET after it waits.
func TestPause_HeldCountsTheCommandAfterRepliesInItsBatch(t *testing.T) {
	for _, loops := range []bool{true, false} {
		t.Run(fmt.Sprintf("eventLoop=%v", loops), func(t *testing.T) {
			srv := RunT(t, WithManualClock(), WithConfig(func(c *Config) { c.NoEventLoop = !loops }))
			c := dial(t, srv.Addr())
			c.do("SET", "k", "v")
			c.send(encode("EVAL", "for i = 1, 5000000 do end return 1", "0") + encode("GET", "k"))
			eventually(t, "script running", srv.eng.ScriptRunning)
			srv.Pause(time.Hour)
			if err := srv.WaitHeld(1, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			c.expectSilent(50 * time.Millisecond)
			srv.Unpause()
			if got := c.read() + c.read(); got != ":1\r\n"+bulk("v") {
				t.Fatalf("replies = %q", got)
			}
		})
	}
}

func TestClientPause_AllHoldsEvenUnpauseUntilItEnds(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("CLIENT", "PAUSE", "1000", "WRITE")
	a.do("CLIENT", "PAUSE", "10", "ALL") // the stricter mode and the later end win
	a.send(encode("CLIENT", "UNPAUSE"))
	b.send(encode("GET", "k"))
	eventually(t, "both held", func() bool { return srv.waitingCommands() == 2 })
	srv.Advance(time.Second) // through its last millisecond, as in Redis
	if n := srv.waitingCommands(); n != 2 {
		t.Fatalf("%d held at the end's millisecond", n)
	}
	srv.Advance(time.Millisecond)
	if got := a.read(); got != "+OK\r\n" {
		t.Fatalf("UNPAUSE = %q", got)
	}
	if got := b.read(); got != "$-1\r\n" {
		t.Fatalf("GET = %q", got)
	}
}

func TestClientPause_HoldsActiveExpiry(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	c.do("SET", "k", "v", "PX", "100")
	c.do("CLIENT", "PAUSE", "10000", "WRITE")
	eventually(t, "active expiry parked", srv.activeExpiryParked)
	srv.Advance(time.Second)
	if n, _ := srv.Engine().KeyCount(); n != 1 {
		t.Fatalf("active expiry reclaimed during CLIENT PAUSE: %d keys", n)
	}
	// Reads see the key gone all the same, but leave it in place (Redis's
	// expireIfNeeded while clients are paused): no expiry at all.
	if got := c.do("PTTL", "k"); got != ":-2\r\n" {
		t.Fatalf("PTTL = %q", got)
	}
	if n, _ := srv.Engine().KeyCount(); n != 1 {
		t.Fatalf("a read reclaimed an expired key during CLIENT PAUSE: %d keys", n)
	}
	if got := c.do("INFO", "stats"); !strings.Contains(got, "\r\nexpired_keys:0\r\n") {
		t.Fatalf("INFO stats during CLIENT PAUSE:\n%s", got)
	}
	c.send(encode("SET", "k2", "v", "PX", "100")) // held: a write
	eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
	srv.Advance(9*time.Second + time.Millisecond) // the pause ends, past its last millisecond
	if got := c.read(); got != "+OK\r\n" {
		t.Fatalf("SET after the pause = %q", got)
	}
	srv.Advance(101 * time.Millisecond)
	eventually(t, "keys reclaimed", func() bool { n, _ := srv.Engine().KeyCount(); return n == 0 })
}

func TestClientKill_FormsAndFilters(t *testing.T) {
	srv := RunT(t)
	me := dial(t, srv.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "KILL"}, "-ERR wrong number of arguments for 'client|kill' command\r\n"},
		{[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "-ERR No such client\r\n"},
		{[]string{"CLIENT", "KILL", "ID"}, "-ERR No such client\r\n"},
		{[]string{"CLIENT", "KILL", "ID", "x"}, "-ERR client-id should be greater than 0\r\n"},
		{[]string{"CLIENT", "KILL", "ID", "0"}, "-ERR client-id should be greater than 0\r\n"},
		{[]string{"CLIENT", "KILL", "ID", "-5"}, "-ERR client-id should be greater than 0\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "foo"}, "-ERR Unknown client type 'foo'\r\n"},
		{[]string{"CLIENT", "KILL", "USER", "nobody"}, "-ERR No such user 'nobody'\r\n"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "KILL", "FOO", "bar"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "KILL", "ID", "999", "TYPE"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "KILL", "MAXAGE", "5"}, "-ERR syntax error\r\n"},
		{[]string{"CLIENT", "KILL", "ID", "999"}, ":0\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "master"}, ":0\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "slave"}, ":0\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "pubsub"}, ":0\r\n"},
		{[]string{"CLIENT", "KILL", "LADDR", "x"}, ":0\r\n"},
		{[]string{"CLIENT", "KILL", "TYPE", "normal"}, ":0\r\n"}, // SKIPME yes by default
		{[]string{"CLIENT", "KILL", "USER", "default"}, ":0\r\n"},
	} {
		if got := me.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}

	idOf := func(c *rawClient) string {
		return strings.TrimSuffix(strings.TrimPrefix(c.do("CLIENT", "ID"), ":"), "\r\n")
	}
	// New form by ID.
	a := dial(t, srv.Addr())
	if got := me.do("CLIENT", "KILL", "ID", idOf(a)); got != ":1\r\n" {
		t.Fatalf("KILL ID = %q", got)
	}
	a.expectClosed()
	// Old form by address.
	b := dial(t, srv.Addr())
	b.do("PING")
	if got := me.do("CLIENT", "KILL", b.conn.LocalAddr().String()); got != "+OK\r\n" {
		t.Fatalf("KILL addr = %q", got)
	}
	b.expectClosed()
	// ADDR and LADDR together.
	d := dial(t, srv.Addr())
	d.do("PING")
	if got := me.do("CLIENT", "KILL", "ADDR", d.conn.LocalAddr().String(), "LADDR", srv.Addr()); got != ":1\r\n" {
		t.Fatalf("KILL ADDR LADDR = %q", got)
	}
	d.expectClosed()
	// Everyone, this connection included: the reply comes first.
	e := dial(t, srv.Addr())
	e.do("PING")
	me.send(encode("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no") + encode("PING"))
	if got := me.read(); got != ":2\r\n" {
		t.Fatalf("KILL TYPE normal SKIPME no = %q", got)
	}
	me.expectClosed()
	e.expectClosed()
}

// Two CLIENT KILLs that match the same clients at once count each client
// once between them: the one whose kill found it already gone does not
// count it (Redis frees a client once, and one thread counts it).
func TestClientKill_ConcurrentKillersCountEachOnce(t *testing.T) {
	srv := RunT(t)
	const n = 200
	for round := range 5 {
		conns := dialMany(t, srv.Addr(), n)
		want := "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
		for _, c := range conns {
			c.Write([]byte(encode("SUBSCRIBE", "ch")))
		}
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, len(want))
			if _, err := io.ReadFull(c, b); err != nil || string(b) != want {
				t.Fatalf("SUBSCRIBE = %q, %v", b, err)
			}
		}
		k1, k2 := dial(t, srv.Addr()), dial(t, srv.Addr())
		k1.send(encode("CLIENT", "KILL", "TYPE", "pubsub"))
		k2.send(encode("CLIENT", "KILL", "TYPE", "pubsub"))
		total := 0
		for _, k := range []*rawClient{k1, k2} {
			got := k.read()
			v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"))
			if err != nil {
				t.Fatalf("CLIENT KILL = %q", got)
			}
			total += v
		}
		if total != n {
			t.Fatalf("round %d: the two kills counted %d clients, want %d", round, total, n)
		}
	}
}

func TestClientKill_ReleasesAHeldCommand(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	id := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	b.do("CLIENT", "PAUSE", "100000", "WRITE")
	a.send(encode("SET", "k", "v"))
	eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
	if got := b.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("KILL = %q", got)
	}
	a.expectClosed()
	eventually(t, "the held command gave up", func() bool { return srv.waitingCommands() == 0 })
	b.do("CLIENT", "UNPAUSE")
	if _, ok := srv.Get("k"); ok {
		t.Fatal("a killed client's held command ran")
	}
}

func TestRestart_ListensAgainAfterReturning(t *testing.T) {
	srv := RunT(t)
	addr := srv.Addr()
	for range 3 {
		if err := srv.Restart(false); err != nil {
			t.Fatal(err)
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatalf("dial after Restart: %v", err)
		}
		conn.Close()
	}
}

func TestRestart_StopsARunningScript(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.send(encode("EVAL", "redis.call('set', 'half', 'done') while true do end", "0"))
	eventually(t, "the script to run", func() bool { return !srv.Engine().ScriptStart().IsZero() })
	if err := srv.Restart(false); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	if got := dial(t, srv.Addr()).do("EXISTS", "half"); got != ":0\r\n" {
		t.Fatalf("EXISTS half = %q", got)
	}
}

// acceptedConns counts the connections the accept loop has handed over
// and whose goroutine has not ended, registered as clients or not yet.
func acceptedConns(s *Server) int {
	n := 0
	s.fx.counted.Range(func(_, _ any) bool { n++; return true })
	return n
}

// dialMany dials n connections at once and returns them.
func dialMany(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	for i := range conns {
		go func() {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			conns[i] = c
			errs <- err
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatalf("dial: %v", err)
		}
	}
	for _, c := range conns {
		t.Cleanup(func() { c.Close() })
	}
	return conns
}

// expectDead checks that a connection no longer answers.
func expectDead(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte(encode("PING")))
	var b [16]byte
	if n, err := c.Read(b[:]); err == nil {
		t.Fatalf("connection still answers: %q", b[:n])
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection still open (read timed out)")
	}
}

// A connection accepted just before Restart is closed with the others,
// even when its goroutine has not registered it yet; Restart never waits
// for a connection it missed.
func TestRestart_ClosesConnectionsAcceptedJustBefore(t *testing.T) {
	srv := RunT(t)
	for range 40 {
		conns := dialMany(t, srv.Addr(), 8)
		done := make(chan error, 1)
		go func() { done <- srv.Restart(false) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Restart hangs")
		}
		for _, c := range conns {
			expectDead(t, c)
		}
	}
}

// DropConnections closes every connection the server accepted before it
// was called, registered yet or not.
func TestDropConnections_ClosesConnectionsAcceptedJustBefore(t *testing.T) {
	srv := RunT(t)
	for range 40 {
		conns := dialMany(t, srv.Addr(), 8)
		eventually(t, "the connections accepted", func() bool { return acceptedConns(srv) == len(conns) })
		srv.DropConnections()
		for _, c := range conns {
			expectDead(t, c)
		}
		eventually(t, "the connections gone", func() bool { return acceptedConns(srv) == 0 })
	}
}

// expectSilent checks that nothing arrives on c for a while: a bounded
// look for something that must not happen, not a wait for a state.
func (c *rawClient) expectSilent(d time.Duration) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(d))
	b, err := c.rd.ReadByte()
	var ne net.Error
	if err == nil {
		c.rd.UnreadByte()
		got, _ := c.rd.Peek(c.rd.Buffered())
		c.t.Fatalf("received %q while the server should send nothing", got)
	} else if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("read: %v (byte %q)", err, b)
	}
}

// trackingClient is a RESP3 connection tracking key, which it has read.
func trackingClient(t *testing.T, srv *Server, key string) *rawClient {
	t.Helper()
	a := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.do("GET", key)
	return a
}

// A Pause stalls everything a process does on its own: active expiry
// (and Advance's reclaiming) holds still, and so do pushes, whether an
// expiry or a fixture Set caused them. They happen when the pause ends.
func TestPause_HoldsActiveExpiryAndPushes(t *testing.T) {
	t.Run("expiry", func(t *testing.T) {
		srv := RunT(t, WithManualClock())
		srv.Set("k", "v", time.Second)
		a := trackingClient(t, srv, "k")
		srv.Pause(time.Hour)
		srv.Advance(2 * time.Second)
		if n := srv.call("dbsize").n; n != 1 {
			t.Fatalf("DBSIZE during the pause = %d; active expiry ran", n)
		}
		a.expectSilent(100 * time.Millisecond)
		srv.Unpause()
		a.expect(inval3("k")) // the deferred expiry, and its push
		eventually(t, "k reclaimed", func() bool { return srv.call("dbsize").n == 0 })
	})
	t.Run("fixture-set", func(t *testing.T) {
		srv := RunT(t, WithManualClock())
		a := trackingClient(t, srv, "k")
		srv.Pause(time.Hour)
		srv.Set("k", "v", 0)
		a.expectSilent(100 * time.Millisecond)
		srv.Advance(time.Hour)
		a.expect(inval3("k"))
	})
}

// DEBUG SLEEP stalls active expiry and pushes as Pause does.
func TestDebugSleep_HoldsActiveExpiryAndPushes(t *testing.T) {
	srv := RunT(t, WithManualClock())
	srv.Set("k", "v", time.Second)
	a := trackingClient(t, srv, "k")
	b := dial(t, srv.Addr())
	b.send(encode("DEBUG", "SLEEP", "2")) // (what follows is done in it, even under load)
	eventually(t, "the sleep to start", func() bool {
		srv.fx.pmu.Lock()
		defer srv.fx.pmu.Unlock()
		return srv.fx.sleeps == 1
	})
	srv.Advance(2 * time.Second)
	if n := srv.call("dbsize").n; n != 1 {
		t.Fatalf("DBSIZE during DEBUG SLEEP = %d; active expiry ran", n)
	}
	srv.Set("other", "v", 0)
	srv.Set("k", "v2", 0) // an invalidation, held
	a.expectSilent(100 * time.Millisecond)
	if got := b.read(); got != "+OK\r\n" {
		t.Fatalf("DEBUG SLEEP = %q", got)
	}
	a.expect(inval3("k"))
}

// SetLatency holds pushes back too, not only replies.
func TestSetLatency_DelaysPushes(t *testing.T) {
	srv := RunT(t)
	a := trackingClient(t, srv, "k")
	srv.SetLatency(300 * time.Millisecond)
	start := time.Now()
	srv.Set("k", "v", 0)
	a.expect(inval3("k"))
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("push came after %v with 300 ms latency", el)
	}
}

// A failure injected while MULTI queues commands is an error at queue
// time, and as in Redis that dooms the transaction: EXEC then replies
// EXECABORT and runs none of it. A failed EXEC discards the transaction.
func TestFailNext_InsideMultiAbortsTheTransaction(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "MULTI")
	c.expectDo("+QUEUED\r\n", "INCR", "x")
	srv.FailNextCmd("set", 1, "ERR boom")
	c.expectDo("-ERR boom\r\n", "SET", "k", "v")
	c.expectDo("+QUEUED\r\n", "INCR", "x")
	c.expectDo("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	if keys := srv.Keys(); len(keys) != 0 {
		t.Fatalf("keys after an aborted transaction: %v", keys)
	}

	c.expectDo("+OK\r\n", "MULTI")
	c.expectDo("+QUEUED\r\n", "INCR", "x")
	srv.FailNextCmd("exec", 1, "READONLY You can't write against a read only replica.")
	c.expectDo("-EXECABORT Transaction discarded because of: READONLY You can't write against a read only replica.\r\n", "EXEC")
	c.expectDo("+PONG\r\n", "PING") // out of MULTI
	if keys := srv.Keys(); len(keys) != 0 {
		t.Fatalf("keys after a failed EXEC: %v", keys)
	}
}

func TestWaitHeld_ReturnsOnceTheCommandsAreHeld(t *testing.T) {
	srv := RunT(t, WithManualClock())
	if err := srv.WaitHeld(0, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitHeld(1, 20*time.Millisecond); err == nil {
		t.Fatal("WaitHeld(1) with nothing held returned nil")
	}
	srv.Pause(time.Minute)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.send(encode("SET", "k", "a"))
	b.send(encode("SET", "k", "b"))
	if err := srv.WaitHeld(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := srv.Held(); n != 2 {
		t.Fatalf("Held = %d, want 2", n)
	}
	if _, ok := srv.Get("k"); ok {
		t.Fatal("a held command ran")
	}
	srv.Advance(time.Minute)
	a.expect("+OK\r\n")
	b.expect("+OK\r\n")
	if n := srv.Held(); n != 0 {
		t.Fatalf("Held after the pause = %d", n)
	}
	srv.Close()
	if err := srv.WaitHeld(1, 10*time.Second); err != ErrClosed {
		t.Fatalf("WaitHeld on a closed server = %v", err)
	}
}

// A command a pause held counts until it has run, not only until the
// pause ends: a test that waits for Held to reach 0 after Advance sees
// what it did, even when its client gave up on it. (A predicate that
// waits stands for the moment between the pause's end and the run.)
func TestHeld_CountsAReleasedCommandUntilItHasRun(t *testing.T) {
	srv := RunT(t, WithManualClock())
	entered, proceed := make(chan struct{}), make(chan struct{})
	srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		if cmd.Name() == "set" {
			close(entered)
			<-proceed
		}
		return "", false
	})
	c := dial(t, srv.Addr())
	srv.Pause(time.Minute)
	c.send(encode("SET", "lock", "a", "NX", "PX", "60000"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Minute)
	<-entered // the pause is over; the SET has not run
	if n := srv.Held(); n != 1 {
		t.Fatalf("Held = %d before the released SET ran, want 1", n)
	}
	close(proceed)
	eventually(t, "Held back to 0", func() bool { return srv.Held() == 0 })
	if _, ok := srv.Get("lock"); !ok {
		t.Fatal("Held is 0, and the released SET has not run")
	}
	c.expect("+OK\r\n")
}

// Held counts one command a connection: the commands pipelined behind a
// held one wait behind it, uncounted, and run in order after the pause.
func TestHeld_OneCommandAConnection(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	srv.Pause(time.Minute)
	a.send(encode("SET", "k", "1") + encode("INCR", "k") + encode("INCR", "k"))
	b.send(encode("INCR", "n"))
	if err := srv.WaitHeld(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := srv.Held(); n != 2 {
		t.Fatalf("Held = %d, want 2: one for each connection", n)
	}
	srv.Advance(time.Minute)
	a.expect("+OK\r\n")
	a.expect(":2\r\n")
	a.expect(":3\r\n")
	b.expect(":1\r\n")
}

// Another listener may take the port while Restart has it closed: Restart
// tries again for a while, and says what happened if it stays taken.
func TestRestart_PortTakenMeanwhile(t *testing.T) {
	t.Run("released", func(t *testing.T) {
		srv := RunT(t)
		addr := srv.Addr()
		var other net.Listener
		attempts := 0
		srv.fx.listen = func(a string) (net.Listener, error) {
			attempts++
			switch attempts {
			case 1: // someone takes the port as soon as it is free...
				l, err := net.Listen("tcp", a)
				if err != nil {
					t.Errorf("taking the port: %v", err)
				}
				other = l
			case 3: // ...and lets it go
				other.Close()
			}
			return net.Listen("tcp", a)
		}
		if err := srv.Restart(false); err != nil {
			t.Fatalf("Restart: %v", err)
		}
		if attempts != 3 {
			t.Fatalf("%d attempts, want 3", attempts)
		}
		if got := dial(t, addr).do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING after Restart = %q", got)
		}
	})
	t.Run("kept", func(t *testing.T) {
		srv := RunT(t)
		srv.fx.listen = func(a string) (net.Listener, error) {
			if l, err := net.Listen("tcp", a); err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return net.Listen("tcp", a)
		}
		err := srv.Restart(false)
		if err == nil || !strings.Contains(err.Error(), "cannot listen on "+srv.Addr()+" again") || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("Restart with the port taken = %v", err)
		}
	})
}

// CLIENT PAUSE WRITE holds an EXEC whose queue writes, as Redis (which
// looks at the queued commands' flags), and lets one of reads run.
func TestClientPause_WriteHoldsAnExecThatWrites(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	b.expectDo("+OK\r\n", "MULTI")
	b.expectDo("+QUEUED\r\n", "GET", "k")
	a.expectDo("+OK\r\n", "CLIENT", "PAUSE", "10000", "WRITE")
	b.expectDo("*1\r\n$-1\r\n", "EXEC")

	b.expectDo("+OK\r\n", "MULTI")
	b.send(encode("SET", "k", "v")) // a write is held even when only queued
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	a.expectDo("+OK\r\n", "CLIENT", "UNPAUSE")
	b.expect("+QUEUED\r\n")
	a.expectDo("+OK\r\n", "CLIENT", "PAUSE", "10000", "WRITE")
	b.send(encode("EXEC"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Get("k"); ok {
		t.Fatal("an EXEC of writes ran during CLIENT PAUSE WRITE")
	}
	a.expectDo("+OK\r\n", "CLIENT", "UNPAUSE")
	b.expect("*1\r\n+OK\r\n")
}

// RestartAfter keeps the server down for the time it is given:
// connecting is refused until it listens again, with its data when asked.
func TestRestartAfter_DownForItsTime(t *testing.T) {
	srv := RunT(t)
	addr := srv.Addr()
	c := dial(t, addr)
	c.do("SET", "k", "v")
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- srv.RestartAfter(time.Second, true) }()
	c.expectClosed()
	refused := 0
	// (from the close: a loaded machine may take a while to get there)
	for closed := time.Now(); time.Since(closed) < 100*time.Millisecond && time.Since(start) < 900*time.Millisecond; {
		if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			nc.Close()
			select {
			case <-done:
				t.Fatalf("RestartAfter returned after %v", time.Since(start))
			default:
			}
			t.Fatal("connected while the server was down")
		}
		refused++
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("down for %v, want 1s", took)
	}
	if refused == 0 {
		t.Fatal("no connection attempt while down")
	}
	if got := dial(t, addr).do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET after RestartAfter(keepData) = %q", got)
	}
}

// EndRestartDelay ends the delay where Advance cannot: on the system
// clock.
func TestEndRestartDelay(t *testing.T) {
	srv := RunT(t, WithRestartDelay(time.Hour))
	c := dial(t, srv.Addr())
	if got := c.do("SET", "lock", "tok", "NX", "PX", "10000"); got != "$-1\r\n" {
		t.Fatalf("SET NX in the delay = %q", got)
	}
	srv.EndRestartDelay()
	if got := c.do("SET", "lock", "tok", "NX", "PX", "10000"); got != "+OK\r\n" {
		t.Fatalf("SET NX after EndRestartDelay = %q", got)
	}
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	if got := dial(t, srv.Addr()).do("SET", "lock2", "tok", "NX"); got != "$-1\r\n" {
		t.Fatalf("SET NX after a Restart = %q (the delay starts again)", got)
	}
}

// FailWhen fails the commands its predicate picks: here the release of one
// lock on one client, while everything else runs.
func TestFailWhen_PredicateChoosesCommands(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	aID := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	var mu sync.Mutex
	var seen []string
	stop := srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		mu.Lock()
		seen = append(seen, cmd.Name())
		mu.Unlock()
		return "ERR unreachable", cmd.Name() == "eval" && len(cmd.Args) > 3 && cmd.Args[3] == "lock:a" &&
			strconv.FormatInt(cmd.ClientID, 10) == aID
	})
	release := "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	for _, k := range []string{"lock:a", "lock:b"} {
		srv.Set(k, "tok", 0)
	}
	if got := a.do("EVAL", release, "1", "lock:a", "tok"); got != "-ERR unreachable\r\n" {
		t.Fatalf("a's release of lock:a = %q", got)
	}
	if _, ok := srv.Get("lock:a"); !ok {
		t.Fatal("the failed release ran")
	}
	if got := a.do("EVAL", release, "1", "lock:b", "tok"); got != ":1\r\n" {
		t.Fatalf("a's release of lock:b = %q", got)
	}
	if got := b.do("EVAL", release, "1", "lock:a", "tok"); got != ":1\r\n" {
		t.Fatalf("b's release of lock:a = %q", got)
	}
	mu.Lock()
	if slices.Contains(seen, "get") || slices.Contains(seen, "del") {
		t.Errorf("the predicate saw commands run by scripts: %q", seen)
	}
	mu.Unlock()

	// The FailNext queue comes first; then the predicates, in order.
	srv.Set("lock:a", "tok", 0)
	srv.FailNextCmd("eval", 1, "ERR queued")
	srv.FailWhen(func(cmd CommandRecord) (string, bool) { return "", cmd.Name() == "eval" })
	for _, want := range []string{"-ERR queued\r\n", "-ERR unreachable\r\n"} {
		if got := a.do("EVAL", release, "1", "lock:a", "tok"); got != want {
			t.Fatalf("release = %q, want %q", got, want)
		}
	}
	stop()
	stop() // a second stop is harmless
	if got := a.do("EVAL", release, "1", "lock:a", "tok"); got != "-ERR injected failure\r\n" {
		t.Fatalf("release with the second predicate alone = %q", got)
	}
	srv.ClearFailures()
	if got := a.do("EVAL", release, "1", "lock:a", "tok"); got != ":1\r\n" {
		t.Fatalf("release after ClearFailures = %q", got)
	}

	// A predicate may stop itself (once: the next command runs), and a
	// failure it picks inside MULTI discards the transaction, as FailNext's.
	var stopSelf func()
	stopSelf = srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		if cmd.Name() != "set" {
			return "", false
		}
		stopSelf()
		return "READONLY You can't write against a read only replica.", true
	})
	a.do("MULTI")
	if got := a.do("SET", "k", "v"); got != "-READONLY You can't write against a read only replica.\r\n" {
		t.Fatalf("SET in MULTI = %q", got)
	}
	if got := a.do("SET", "k", "w"); got != "+QUEUED\r\n" {
		t.Fatalf("the next SET = %q (the predicate stopped itself)", got)
	}
	if got := a.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT") {
		t.Fatalf("EXEC = %q", got)
	}
	if _, ok := srv.Get("k"); ok {
		t.Fatal("the doomed transaction ran")
	}

	// A predicate that panics fails only the command it was asked about.
	srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		if cmd.Name() == "get" {
			panic("a broken predicate")
		}
		return "", false
	})
	if got := a.do("GET", "k"); got != "-ERR internal error\r\n" {
		t.Fatalf("GET under a panicking predicate = %q", got)
	}
	if got := a.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after = %q", got)
	}
}

// A predicate may crash the node when the command it looks for arrives:
// Restart and Close, which wait for every connection's goroutine, do not
// wait for the one running the predicate, and its command does not run.
// (Served by an event loop, a connection leaves it to run a predicate.)
func TestFailWhen_PredicateMayRestartOrClose(t *testing.T) {
	within := func(t *testing.T, errc <-chan error, what string) {
		t.Helper()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("%s = %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s called from the predicate has not returned after 10s", what)
		}
	}
	t.Run("Restart", func(t *testing.T) {
		srv := RunT(t)
		srv.Set("job", "tok", 0)
		other := dial(t, srv.Addr()) // another connection, dropped too
		other.do("PING")
		errc := make(chan error, 1)
		srv.FailWhen(func(cmd CommandRecord) (string, bool) {
			if cmd.Name() == "del" {
				errc <- srv.Restart(true)
			}
			return "", false
		})
		c := dial(t, srv.Addr())
		c.send(encode("DEL", "job"))
		within(t, errc, "Restart")
		c.expectClosed()
		other.expectClosed()
		if v, ok := srv.Get("job"); !ok || v != "tok" {
			t.Fatalf("job = %q, %v after the restart: the DEL that crashed the node ran", v, ok)
		}
		srv.ClearFailures()
		if got := dial(t, srv.Addr()).do("DEL", "job"); got != ":1\r\n" {
			t.Fatalf("DEL after the restart = %q", got)
		}
	})
	// A push-capable connection (tracking, as rueidis turns on) has a
	// flusher goroutine too, which ends only with the connection.
	for _, push := range []string{"", "tracking"} {
		t.Run("Close"+push, func(t *testing.T) {
			srv := RunT(t)
			errc := make(chan error, 1)
			srv.FailWhen(func(cmd CommandRecord) (string, bool) {
				if cmd.Name() == "del" {
					errc <- srv.Close()
				}
				return "", false
			})
			c := dial(t, srv.Addr())
			if push != "" {
				c.do("CLIENT", "TRACKING", "ON")
			}
			c.do("SET", "job", "tok")
			c.send(encode("DEL", "job"))
			within(t, errc, "Close")
			c.expectClosed()
			if v, ok := srv.Get("job"); !ok || v != "tok" {
				t.Fatalf("job = %q, %v after Close: the DEL that closed the server ran", v, ok)
			}
		})
	}
	// Restart from elsewhere still waits for a connection whose predicate
	// runs: only the predicate's own call does not.
	t.Run("RestartFromTheTest", func(t *testing.T) {
		srv := RunT(t)
		entered, proceed := make(chan struct{}), make(chan struct{})
		srv.FailWhen(func(cmd CommandRecord) (string, bool) {
			if cmd.Name() == "del" {
				close(entered)
				<-proceed
			}
			return "", false
		})
		c := dial(t, srv.Addr())
		c.send(encode("DEL", "job"))
		<-entered
		errc := make(chan error, 1)
		go func() { errc <- srv.Restart(false) }()
		select {
		case err := <-errc:
			t.Fatalf("Restart returned (%v) while a connection's predicate still ran", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(proceed)
		within(t, errc, "Restart")
	})
}

// A CommandRecord names its connection's client (CLIENT SETNAME, HELLO
// SETNAME): a predicate can pick every connection of one pooled client.
func TestCommandRecord_ClientName(t *testing.T) {
	srv := RunT(t)
	a1, a2, b, anon := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	a1.do("CLIENT", "SETNAME", "worker-a")
	a2.do("CLIENT", "SETNAME", "worker-a")
	if got := b.do("HELLO", "2", "SETNAME", "worker-b"); !strings.HasPrefix(got, "*") {
		t.Fatalf("HELLO = %q", got)
	}
	srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		return "ERR partitioned", cmd.ClientName == "worker-a" && cmd.Name() == "set"
	})
	for i, c := range []*rawClient{a1, a2, b, anon} {
		want := "+OK\r\n"
		if i < 2 {
			want = "-ERR partitioned\r\n"
		}
		if got := c.do("SET", "k"+strconv.Itoa(i), "v"); got != want {
			t.Errorf("client %d: SET = %q, want %q", i, got, want)
		}
	}
	names := map[string]string{}
	for _, r := range srv.Commands() {
		if r.Name() == "set" {
			names[r.Args[1]] = r.ClientName
		}
	}
	want := map[string]string{"k0": "worker-a", "k1": "worker-a", "k2": "worker-b", "k3": ""}
	if !maps.Equal(names, want) {
		t.Fatalf("ClientName of the SETs in Commands = %v, want %v", names, want)
	}
}

func TestPendingFailures_CountsTheQueue(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	srv.FailNext(2, "ERR boom")
	srv.FailNextCmd("set", 3, "ERR boom")
	srv.FailWhen(func(CommandRecord) (string, bool) { return "", false }) // not counted
	if n := srv.PendingFailures(); n != 5 {
		t.Fatalf("PendingFailures = %d, want 5", n)
	}
	c.do("PING")
	c.do("GET", "k")
	c.do("GET", "k") // no rule left for GET
	if n := srv.PendingFailures(); n != 3 {
		t.Fatalf("after two commands: PendingFailures = %d, want 3", n)
	}
	c.do("SET", "k", "v")
	if n := srv.PendingFailures(); n != 2 {
		t.Fatalf("after a SET: PendingFailures = %d, want 2", n)
	}
	srv.ClearFailures()
	if n := srv.PendingFailures(); n != 0 {
		t.Fatalf("after ClearFailures: PendingFailures = %d", n)
	}
}

// A client that hangs up while CLIENT PAUSE holds its command is freed at
// once, and its command never runs, as Redis frees a postponed client
// (checked against redis-server 7.0.15). Before, it kept its connection
// until the pause ended, so hang-ups during a long pause filled
// maxclients. Under a stall (Pause) the hang-up is seen when the stall
// ends, as a stopped process sees it: the command counts as held until
// then, and runs, as Redis runs what it read before a DEBUG SLEEP.
func TestClientPause_HangUpFreesTheClient(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	admin.expectDo("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	// Each client's command is held before it hangs up: a connection the
	// server has not accepted yet is not counted in connected_clients
	// either, and would run its SET after the UNPAUSE below.
	half := dial(t, srv.Addr())
	half.send(encode("SET", "k2", "v"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		c := dial(t, srv.Addr())
		c.send(encode("SET", "k", "v"))
		eventually(t, "the SET to be held", func() bool { return srv.Held() == 2 })
		c.conn.Close()
		eventually(t, "the client that hung up to be freed", func() bool { return srv.Held() == 1 })
	}
	_ = half.conn.(*net.TCPConn).CloseWrite()
	eventually(t, "the hung-up clients to be freed", func() bool {
		return srv.ServerInfo().ConnectedClients == 1
	})
	if n := srv.Held(); n != 0 {
		t.Fatalf("Held = %d after every held client hung up", n)
	}
	admin.expectDo("+OK\r\n", "CLIENT", "UNPAUSE")
	admin.expectDo("*2\r\n$-1\r\n$-1\r\n", "MGET", "k", "k2")
	half.expectClosed()

	srv.Pause(time.Hour)
	c := dial(t, srv.Addr())
	c.send(encode("SET", "k", "v"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.conn.Close()
	time.Sleep(100 * time.Millisecond)
	if n := srv.Held(); n != 1 {
		t.Fatalf("Held = %d during a stall after the client hung up, want 1", n)
	}
	srv.Unpause()
	eventually(t, "the hung-up client to be freed after the stall", func() bool {
		return srv.ServerInfo().ConnectedClients == 1
	})
	admin.expectDo("$1\r\nv\r\n", "GET", "k")
}

// A client that CLIENT PAUSE holds is read on as Redis reads a postponed
// client, up to client-query-buffer-limit: one that sends megabytes more
// and hangs up is freed at once, and one whose input passes the limit is
// closed. (The read once stopped at 1 MB, and such a hang-up went unseen
// until the pause ended.)
func TestClientPause_HeldClientInputToTheQueryBufferLimit(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	admin.expectDo("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	flood := strings.Repeat(encode("SET", "k", strings.Repeat("v", 4096)), 1000) // 4 MB

	c := dial(t, srv.Addr())
	c.send(encode("SET", "k", "v"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if sent, err := c.conn.Write([]byte(flood)); err != nil {
		t.Fatalf("sent %d of %d bytes while held: %v", sent, len(flood), err)
	}
	c.conn.Close()
	eventually(t, "the client that hung up to be freed", func() bool {
		return srv.Held() == 0 && srv.ServerInfo().ConnectedClients == 1
	})

	admin.expectDo("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	c = dial(t, srv.Addr())
	c.send(encode("SET", "k", "v"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.conn.Write([]byte(strings.Repeat(flood, 4))); err == nil {
		t.Fatal("16 MB sent while held were all taken with a 1 MB query buffer limit")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending while held: %v, want the connection closed", err)
	}
	eventually(t, "the client past the limit to be freed", func() bool {
		return srv.Held() == 0 && srv.ServerInfo().ConnectedClients == 1
	})
	admin.expectDo("+OK\r\n", "CLIENT", "UNPAUSE")
	admin.expectDo("$-1\r\n", "GET", "k")
}

// A CLIENT PAUSE timeout that, added to the wall clock, passes LLONG_MAX
// is refused, as Redis 7.2 refuses it (getTimeoutFromObjectOrReply, as
// WAIT's timeout: TestProbes_WaitInScriptAndTimeoutRange); a pause in
// progress is left alone. (Redis 7.0.15's sum wraps to an end in the past
// and pauses nothing.) Before, it paused for good.
func TestClientPause_TimeoutPastLongLongRefused(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	c.expectDo("-ERR timeout is out of range\r\n", "CLIENT", "PAUSE", "9223372036854775807", "WRITE")
	c.expectDo("+OK\r\n", "SET", "k", "v") // a timeout: a paused write never answers
	c.expectDo("-ERR timeout is negative\r\n", "CLIENT", "PAUSE", "-1")

	c.expectDo("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	c.expectDo("-ERR timeout is out of range\r\n", "CLIENT", "PAUSE", "9223372036854775807", "ALL")
	c.expectDo("$1\r\nv\r\n", "GET", "k") // still WRITE only
	other := dial(t, srv.Addr())
	other.send(encode("SET", "k", "w"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Advance(100*time.Second + time.Millisecond) // past the pause's end, kept
	other.expect("+OK\r\n")
}

// A command that ran just before a Pause began has its reply held by the
// stall, and its client waits for it as surely as for a held command: it
// counts as held (Held, WaitHeld) until the pause ends, once, and a kill
// takes it out of the count at once. (WaitHeld waited forever for a
// client that was busy when the Pause began, if its last command had
// just run: tumbler-bench's stalled-operation test hung on it.) A
// push-capable connection (RESP3 with tracking) writes its replies
// through flushShared: the same.
func TestHeld_CountsAReplyThePauseHolds(t *testing.T) {
	for _, push := range []bool{false, true} {
		t.Run(fmt.Sprintf("push=%v", push), func(t *testing.T) {
			srv := RunT(t, WithManualClock())
			srv.FailWhen(func(cmd CommandRecord) (string, bool) {
				if cmd.Name() == "set" {
					srv.Pause(time.Minute) // after waitTurn: the SET runs, its reply waits
				}
				return "", false
			})
			conn := func() *rawClient {
				c := dial(t, srv.Addr())
				if push {
					c.send(encode("HELLO", "3"))
					c.read()
					c.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
				}
				return c
			}
			a := conn()
			a.send(encode("SET", "lock", "a", "NX", "PX", "60000"))
			if err := srv.WaitHeld(1, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, ok := srv.Get("lock"); !ok {
				t.Fatal("counted as held before the SET ran")
			}
			a.expectSilent(50 * time.Millisecond)
			if n := srv.Held(); n != 1 {
				t.Fatalf("Held = %d, want 1", n)
			}
			srv.Advance(time.Minute)
			a.expect("+OK\r\n")
			eventually(t, "Held back to 0 after the pause", func() bool { return srv.Held() == 0 })

			b := conn()
			b.send(encode("SET", "lock2", "b", "NX", "PX", "60000"))
			if err := srv.WaitHeld(1, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			srv.DropConnections()
			if n := srv.Held(); n != 0 {
				t.Fatalf("Held = %d right after DropConnections, want 0", n)
			}
			srv.Unpause()
		})
	}
}

// A push-capable connection's reply can wait behind its flusher, which
// holds its write lock while a push (here the invalidation a fixture Set
// caused) waits out the stall: the connection counts as held all the
// same, and after the pause the push comes first, then the reply.
func TestHeld_CountsAReplyBehindAHeldPush(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("_\r\n", "GET", "k") // tracked
	srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		if cmd.Name() == "set" {
			srv.Pause(time.Minute)
			srv.Set("k", "v", 0)              // an invalidation for a: its flusher holds it in the stall
			time.Sleep(20 * time.Millisecond) // and takes the write lock before the SET's reply
		}
		return "", false
	})
	a.send(encode("SET", "lock", "a", "NX", "PX", "60000"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	a.expectSilent(50 * time.Millisecond)
	srv.Advance(time.Minute)
	a.expect(inval3("k"))
	a.expect("+OK\r\n")
	eventually(t, "Held back to 0", func() bool { return srv.Held() == 0 })
}

// A reply held by a stall counts as held (Held) but is not a blocked
// command: a client whose PING reply the stall held while its BLPOP,
// pipelined behind it, blocks is still flagged 'b' (CLIENT LIST) and
// counted in blocked_clients once the pause is over.
func TestHeld_ReplyCountLeavesTheBlockedFlag(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON") // flushShared: the BLPOP's wait flushes through it
	a.expectDo("+OK\r\n", "CLIENT", "SETNAME", "blocker")
	srv.FailWhen(func(cmd CommandRecord) (string, bool) {
		if cmd.Name() == "blpop" {
			srv.Pause(time.Minute)
		}
		return "", false
	})
	a.send(encode("PING") + encode("BLPOP", "q", "0"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Minute)
	a.expect("+PONG\r\n")
	eventually(t, "Held back to 0", func() bool { return srv.Held() == 0 })
	b := dial(t, srv.Addr())
	list := b.do("CLIENT", "LIST")
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, "name=blocker") && !strings.Contains(l, "flags=bt ") {
			t.Errorf("the client blocked in BLPOP: %s, want flags=bt", l)
		}
	}
	if info := b.do("INFO", "clients"); !strings.Contains(info, "blocked_clients:1\r\n") {
		t.Errorf("INFO clients: %q, want blocked_clients:1", info)
	}
	b.expectDo(":1\r\n", "RPUSH", "q", "x")
	a.expect("*2\r\n$1\r\nq\r\n$1\r\nx\r\n")
}

// TestClientPause_LivesThroughItsLastMillisecond: as Redis 7.0 ends a
// pause once its end time is past (updateClientPauseTypeAndEndTime:
// p->end < server.mstime), CLIENT PAUSE 1000 still holds a write at
// 1000 ms, lazy expiry included, and lets it go at 1001 ms, as a key
// lives through its deadline's millisecond. (It ended at 1000 ms.)
func TestClientPause_LivesThroughItsLastMillisecond(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("SET", "k", "v", "PX", "500")
	a.do("CLIENT", "PAUSE", "1000", "WRITE")
	b.send(encode("SET", "x", "1"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	if n := srv.Held(); n != 1 {
		t.Fatalf("%d held at the pause's last millisecond, want 1", n)
	}
	if n, _ := srv.Engine().KeyCount(); n != 1 {
		t.Fatalf("the expired key was reclaimed at the pause's last millisecond: %d keys", n)
	}
	srv.Advance(time.Millisecond)
	if got := b.read(); got != "+OK\r\n" {
		t.Fatalf("SET after the pause = %q", got)
	}
	eventually(t, "the expired key reclaimed once the pause is over", func() bool { n, _ := srv.Engine().KeyCount(); return n == 1 })
}
