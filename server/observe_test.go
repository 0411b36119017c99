package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// infoField returns one INFO field over the wire, or "".
func infoField(t *testing.T, c *rawClient, sec, key string) string {
	t.Helper()
	for _, line := range strings.Split(c.do("INFO", sec), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return v
		}
	}
	return ""
}

func TestShutdown_ClosesServerWithoutReply(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.send(encode("SHUTDOWN", "NOSAVE", "NOW"))
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := c.rd.ReadByte(); err == nil {
		t.Fatalf("SHUTDOWN replied %q; Redis closes the connection", b)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not close after SHUTDOWN")
	}
	if !srv.ShutdownRequested() {
		t.Error("ShutdownRequested = false")
	}
	expectNotListening(t, srv, srv.Addr())
}

// TestShutdown_RefusesConnectionsOnceTheCallerIsClosed: a client that
// sees SHUTDOWN close its connection and dials again at once is refused,
// as by Redis, which has exited (the Tcl suite's "SHUTDOWN NOSAVE can kill
// a timedout script anyway"). The listeners closed in Close, which runs
// after the caller's connection closes, so such a dial was at times
// accepted and then dropped. Several rounds: the window was short.
func TestShutdown_RefusesConnectionsOnceTheCallerIsClosed(t *testing.T) {
	for i := 0; i < 30; i++ {
		srv := RunT(t)
		c := dial(t, srv.Addr())
		c.send(encode("SHUTDOWN", "NOSAVE"))
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, err := c.rd.ReadByte(); err == nil {
			t.Fatalf("SHUTDOWN replied %q", b)
		}
		if nc, err := dialErr(srv.Addr()); err == nil {
			// ours drops it unanswered; a listener that took the freed
			// port since (other packages' tests) would not
			_ = nc.SetDeadline(time.Now().Add(time.Second))
			_, _ = nc.Write([]byte(encode("PING")))
			_, err := nc.Read(make([]byte, 16))
			nc.Close()
			var ne net.Error
			if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				t.Fatalf("round %d: a connection was accepted after SHUTDOWN closed its caller, then dropped (%v)", i, err)
			}
		}
		<-srv.Done()
	}
}

func TestShutdown_RefusalsAsRedis(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SHUTDOWN", "ABORT"}, "-ERR No shutdown in progress.\r\n"},
		{[]string{"SHUTDOWN", "abort", "NOW"}, "-ERR syntax error\r\n"},
		{[]string{"SHUTDOWN", "SAVE", "NOSAVE"}, "-ERR syntax error\r\n"},
		{[]string{"SHUTDOWN", "LATER"}, "-ERR syntax error\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := c.do("EVAL", "return redis.call('shutdown')", "0"); !strings.HasPrefix(got, "-ERR This Redis command is not allowed from script") {
		t.Errorf("SHUTDOWN from a script = %q", got)
	}
	// no-multi in Redis: refused when queued, and the transaction aborts
	for _, step := range [][2]string{
		{"MULTI", "+OK\r\n"},
		{"SHUTDOWN", "-ERR Command not allowed inside a transaction\r\n"},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
	} {
		if got := c.do(step[0]); got != step[1] {
			t.Errorf("%s = %q, want %q", step[0], got, step[1])
		}
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("server went down after refused SHUTDOWNs: %q", got)
	}
}

func TestShutdown_BusyScriptNeedsNoSave(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond }))
	runner := dial(t, srv.Addr())
	runner.send(encode("EVAL", "while true do end", "0"))
	c := dial(t, srv.Addr())
	deadline := time.Now().Add(10 * time.Second)
	for !srv.Engine().Busy() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := c.do("SHUTDOWN"); !strings.HasPrefix(got, "-BUSY") {
		t.Fatalf("SHUTDOWN during a busy script = %q, want BUSY", got)
	}
	c.send(encode("SHUTDOWN", "NOSAVE"))
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not close the server during a busy script")
	}
}

// A SHUTDOWN sent while a script runs, before the busy threshold, waits
// for it as Redis reads it only then: the plain one gets BUSY once the
// script is busy, and never cuts the script short; with NOSAVE it shuts
// down then.
func TestShutdown_SentBeforeTheBusyThresholdWaitsForIt(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 300 * time.Millisecond }))
	runner := dial(t, srv.Addr())
	runner.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "the script running", srv.Engine().ScriptRunning)
	if ran := time.Since(srv.Engine().ScriptStart()); ran >= 200*time.Millisecond {
		t.Skipf("the script had run %v before the test could send SHUTDOWN (threshold 300 ms)", ran)
	}
	c := dial(t, srv.Addr())
	if got := c.do("SHUTDOWN"); !strings.HasPrefix(got, "-BUSY") {
		t.Fatalf("SHUTDOWN sent before the threshold = %q, want BUSY", got)
	}
	if ran := time.Since(srv.Engine().ScriptStart()); !srv.Engine().Busy() || ran < 300*time.Millisecond {
		t.Fatalf("SHUTDOWN answered %v into the script, before the threshold", ran)
	}
	if got := c.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	runner.read()
	// NOSAVE, sent before the threshold, shuts down once it is passed
	runner.send(encode("EVAL", "while true do end", "0"))
	eventually(t, "the script running", srv.Engine().ScriptRunning)
	start := srv.Engine().ScriptStart()
	c.send(encode("SHUTDOWN", "NOSAVE"))
	select {
	case <-srv.Done():
		if ran := time.Since(start); ran < 300*time.Millisecond {
			t.Fatalf("SHUTDOWN NOSAVE closed the server %v into the script, before the threshold", ran)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not close the server")
	}
	// the stopped script's client gets no reply, as Redis exits there:
	// not the error of a script killed by SCRIPT KILL
	runner.expectClosed()
}

// The replies of commands that ran before a SHUTDOWN are sent before the
// connections close, as Redis writes them before it exits: here a 32 MB
// reply, still being written when SHUTDOWN runs, as its client reads it
// only after. (The drain's bounds are raised: on a loaded machine the
// client may start reading more than drainStuck after the drain began,
// or read for longer than shutdownDrainMax, and this test is not about
// those bounds.)
func TestShutdown_RepliesOfCommandsRunBeforeItAreSent(t *testing.T) {
	defer func(d, s time.Duration) { shutdownDrainMax, drainStuck = d, s }(shutdownDrainMax, drainStuck)
	shutdownDrainMax, drainStuck = time.Minute, 30*time.Second
	srv := RunT(t)
	a := shutdownDuringBigReply(t, srv)
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got strings.Builder
	if err := readReply(a.rd, &got); err != nil || got.Len() != len("$33554432\r\n")+32<<20+2 {
		t.Fatalf("the GET's reply: %d bytes, %v; want all of it before the connection closed", got.Len(), err)
	}
	a.expectClosed()
}

// Close called while SHUTDOWN's runs (cmd/tumbler calls it once Done is
// closed, then exits) returns only when that one has finished: a client
// that does not read its reply holds the first one a while (drainStuck).
func TestClose_WaitsForTheCloseInProgress(t *testing.T) {
	srv := RunT(t)
	shutdownDuringBigReply(t, srv) // never read
	srv.Close()
	if n := srv.nconns.Load(); n != 0 {
		t.Fatalf("Close returned with %d connections still open: the SHUTDOWN's Close had not finished", n)
	}
}

// SHUTDOWN's drain does not wait out its bound for a client that reads
// none of its reply (Redis exits without waiting for anyone): it gives
// that connection up once its socket has taken nothing for drainStuck.
func TestShutdown_DoesNotWaitForAClientThatReadsNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the drain sees a stuck peer on Linux only (SIOCOUTQ)")
	}
	defer func(d time.Duration) { shutdownDrainMax = d }(shutdownDrainMax)
	shutdownDrainMax = time.Minute
	srv := RunT(t)
	shutdownDuringBigReply(t, srv) // never read
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("SHUTDOWN still waits for a client that reads nothing after 20s (its bound: a minute)")
	}
}

// shutdownDuringBigReply has a client GET a 32 MB value, which it does
// not read, and another send SHUTDOWN once the GET has run. It returns
// the first client, once Done is closed.
func shutdownDuringBigReply(t *testing.T, srv *Server) *rawClient {
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("SETRANGE", "big", strconv.Itoa(32<<20-1), "x")
	b.do("PING")
	ran := srv.Engine().Stats.Commands.Load()
	a.send(encode("GET", "big"))
	eventually(t, "the GET run", func() bool { return srv.Engine().Stats.Commands.Load() > ran })
	b.send(encode("SHUTDOWN"))
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not close the server")
	}
	return a
}

// A plain SHUTDOWN sent while an EXEC runs scripts waits for the whole
// EXEC, as Redis reads it only after: the EXEC's second script is not
// killed by the shutdown.
func TestShutdown_WaitsForTheRunningExec(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 10 * time.Second }))
	spin := spinScript(400 * time.Millisecond)
	runner := dial(t, srv.Addr())
	ran := srv.Engine().Stats.Commands.Load()
	runner.send(encode("MULTI") + encode("EVAL", spin, "0") + encode("SET", "after", "1") + encode("EVAL", spin, "0") + encode("EXEC"))
	awaitScript(t, srv, ran)
	c := dial(t, srv.Addr())
	c.send(encode("SHUTDOWN"))
	for i, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*3\r\n:1\r\n+OK\r\n:1\r\n"} {
		if got := runner.read(); got != want {
			t.Fatalf("reply %d during SHUTDOWN = %q, want %q", i, got, want)
		}
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not close the server after the EXEC")
	}
}

func TestInfo_ClientsAndStatsOverTheWire(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	d := dial(t, srv.Addr())
	d.do("PING")
	if got := infoField(t, c, "clients", "connected_clients"); got != "2" {
		t.Errorf("connected_clients = %q", got)
	}
	if got := infoField(t, c, "clients", "maxclients"); got != "10000" {
		t.Errorf("maxclients = %q", got)
	}
	if got := infoField(t, c, "stats", "total_connections_received"); got != "2" {
		t.Errorf("total_connections_received = %q", got)
	}
	c.do("SET", "k", "v", "PX", "100000")
	db0 := infoField(t, c, "keyspace", "db0")
	ttl, err := strconv.Atoi(strings.TrimPrefix(db0, "keys=1,expires=1,avg_ttl="))
	if err != nil || ttl <= 90000 || ttl > 100000 {
		t.Errorf("db0 = %q, want the 100 s key's time left as avg_ttl", db0)
	}
	// instantaneous_ops_per_sec is sampled every 100 ms: keep commands
	// flowing until a sample sees them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := 0; i < 50; i++ {
			d.do("PING")
		}
		v, _ := strconv.Atoi(infoField(t, c, "stats", "instantaneous_ops_per_sec"))
		if v > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("instantaneous_ops_per_sec stayed 0 under load")
		}
	}
	if got := infoField(t, c, "commandstats", "cmdstat_ping"); !strings.HasPrefix(got, "calls=") {
		t.Errorf("cmdstat_ping = %q", got)
	}
}

// TestInfo_NetworkBytesAreExact: total_net_input_bytes and
// total_net_output_bytes count every byte of requests and replies, on the
// event loop and on connection goroutines alike.
func TestInfo_NetworkBytesAreExact(t *testing.T) {
	for _, noLoop := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoEventLoop=%v", noLoop), func(t *testing.T) {
			srv := RunT(t, WithConfig(func(c *Config) { c.NoEventLoop = noLoop }))
			// One connection: a reply reaches its client a moment before
			// the server adds it to the counters (just after the write
			// returns), so another connection's INFO may run in between
			// (two event loops); on the same connection the next request
			// is read only after the count.
			c := dial(t, srv.Addr())
			stat := func(reply, key string) int64 {
				for _, line := range strings.Split(reply, "\r\n") {
					if k, v, ok := strings.Cut(line, ":"); ok && k == key {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							t.Fatalf("%s = %q", key, v)
						}
						return n
					}
				}
				t.Fatalf("no %s in %q", key, reply)
				return 0
			}
			r1 := c.do("INFO", "stats")
			const k = 20
			for i := 0; i < k; i++ {
				if got := c.do("PING"); got != "+PONG\r\n" {
					t.Fatalf("PING = %q", got)
				}
			}
			r2 := c.do("INFO", "stats")
			in := stat(r2, "total_net_input_bytes") - stat(r1, "total_net_input_bytes")
			out := stat(r2, "total_net_output_bytes") - stat(r1, "total_net_output_bytes")
			if want := int64(k*len(encode("PING")) + len(encode("INFO", "stats"))); in != want {
				t.Errorf("input grew by %d bytes, want %d", in, want)
			}
			if want := int64(k*len("+PONG\r\n") + len(r1)); out != want {
				t.Errorf("output grew by %d bytes, want %d", out, want)
			}
			if reads := stat(r2, "total_reads_processed") - stat(r1, "total_reads_processed"); reads < k+1 {
				t.Errorf("%d reads counted for %d requests", reads, k+1)
			}
			if writes := stat(r2, "total_writes_processed") - stat(r1, "total_writes_processed"); writes < k+1 {
				t.Errorf("%d writes counted for %d replies", writes, k+1)
			}
		})
	}
}

// TestInfo_TrackingShardAndScriptFigures: the tracking table's size, the
// shard channels and the script cache's bytes are measured.
func TestInfo_TrackingShardAndScriptFigures(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	for _, x := range []*rawClient{a, b} {
		x.do("HELLO", "3")
		x.do("CLIENT", "TRACKING", "ON")
	}
	a.do("GET", "k1")
	a.do("GET", "k2")
	b.do("GET", "k1")
	check := func(when string, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got := infoField(t, c, "stats", k); got != v {
				t.Errorf("%s: %s = %q, want %s", when, k, got, v)
			}
		}
	}
	check("three reads of two keys", map[string]string{"tracking_total_keys": "2", "tracking_total_items": "3", "tracking_total_prefixes": "0"})
	c.do("SET", "k1", "v") // invalidates k1 for a and b
	check("k1 written", map[string]string{"tracking_total_keys": "1", "tracking_total_items": "1"})
	p := dial(t, srv.Addr())
	p.do("HELLO", "3")
	p.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:")
	check("BCAST with two prefixes", map[string]string{"tracking_total_prefixes": "2"})

	sub := dial(t, srv.Addr())
	sub.send(encode("SSUBSCRIBE", "s1", "s2"))
	sub.read()
	sub.read()
	check("two shard channels", map[string]string{"pubsubshard_channels": "2", "pubsub_channels": "0"})

	body := "return 1"
	c.do("SCRIPT", "LOAD", body)
	if got, want := infoField(t, c, "memory", "used_memory_scripts_eval"), strconv.Itoa(40+len(body)); got != want {
		t.Errorf("used_memory_scripts_eval = %q, want %s (SHA1 and body)", got, want)
	}
	c.do("SCRIPT", "FLUSH")
	if got := infoField(t, c, "memory", "used_memory_scripts_eval"); got != "0" {
		t.Errorf("used_memory_scripts_eval = %q after SCRIPT FLUSH", got)
	}
}

func TestSlowlog_WireShapeWithAddrAndName(t *testing.T) {
	srv := RunT(t)
	srv.Engine().SetSlowlogSlowerThan(0)
	c := dial(t, srv.Addr())
	c.do("SLOWLOG", "RESET")
	c.do("CLIENT", "SETNAME", "worker")
	c.do("SET", "k", "v")
	got := c.do("SLOWLOG", "GET", "1")
	addr := c.conn.LocalAddr().String()
	wantTail := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$" + strconv.Itoa(len(addr)) + "\r\n" + addr + "\r\n$6\r\nworker\r\n"
	if !strings.HasPrefix(got, "*1\r\n*6\r\n:") || !strings.HasSuffix(got, wantTail) {
		t.Errorf("SLOWLOG GET 1 = %q, want ...%q", got, wantTail)
	}
	c.do("AUTH", "nopass")
	if got := c.do("SLOWLOG", "GET", "1"); !strings.Contains(got, "$4\r\nAUTH\r\n$10\r\n(redacted)\r\n") {
		t.Errorf("AUTH not redacted: %q", got)
	}
	// a command a script calls is logged for Redis's Lua client: no name,
	// no address; the script itself for its caller
	c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k")
	got = c.do("SLOWLOG", "GET", "2")
	inner := "*2\r\n$3\r\nget\r\n$1\r\nk\r\n$3\r\n?:0\r\n$0\r\n\r\n"
	outer := "$1\r\nk\r\n$" + strconv.Itoa(len(addr)) + "\r\n" + addr + "\r\n$6\r\nworker\r\n"
	if !strings.HasSuffix(got, inner) || !strings.Contains(got, outer) {
		t.Errorf("SLOWLOG GET 2 after EVAL = %q, want the get with %q and the EVAL ending %q", got, inner, outer)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestLogs_ConnectionsAtDebugOnly(t *testing.T) {
	for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf syncBuf
		level := "notice"
		if lvl == slog.LevelDebug {
			level = "debug"
		}
		srv := New(Config{Addr: "127.0.0.1:0", LogLevel: level, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: lvl}))})
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		c := dial(t, srv.Addr())
		c.do("PING")
		c.conn.Close()
		srv.Close()
		logs := buf.String()
		has := strings.Contains(logs, "msg=accepted") && strings.Contains(logs, `msg="client closed connection"`)
		if has != (lvl == slog.LevelDebug) {
			t.Errorf("level %v: connection logs present=%v:\n%s", lvl, has, logs)
		}
	}
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metric returns the value of the series line that starts with series
// (name and labels, exactly as exposed), or "".
func metric(body, series string) string {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			return rest
		}
	}
	return ""
}

func TestMetrics_SeriesMoveWithTraffic(t *testing.T) {
	srv := RunT(t, WithManualClock(), WithConfig(func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }))
	if srv.MetricsAddr() == "" {
		t.Fatal("no metrics address")
	}
	before := scrape(t, srv.MetricsAddr())
	if got := metric(before, "tumbler_keys"); got != "0" {
		t.Errorf("tumbler_keys = %q before any write", got)
	}
	c := dial(t, srv.Addr())
	c.do("SET", "lock:a", "tok", "NX", "PX", "1000")
	c.do("SET", "lock:b", "tok")
	c.do("GET", "lock:a")
	c.do("INCR", "lock:b") // fails
	c.do("GET")            // rejected
	release := "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
	c.do("EVAL", release, "1", "lock:x", "tok")
	srv.Advance(2 * time.Second)
	c.do("GET", "lock:a") // expired now
	after := scrape(t, srv.MetricsAddr())
	for series, want := range map[string]string{
		`tumbler_commands_total{command="set"}`:                       "2",
		`tumbler_commands_total{command="get"}`:                       "3", // two sent, one by the script
		`tumbler_command_errors_total{command="incr",kind="failed"}`:  "1",
		`tumbler_command_errors_total{command="get",kind="rejected"}`: "1",
		`tumbler_error_replies_total{code="ERR"}`:                     "2",
		`tumbler_keys`:                                      "1",
		`tumbler_keys_with_deadline`:                        "0",
		`tumbler_expired_keys_total`:                        "1",
		`tumbler_script_runs_total`:                         "1",
		`tumbler_script_duration_seconds_count`:             "1",
		`tumbler_script_duration_seconds_bucket{le="+Inf"}`: "1",
		`tumbler_connected_clients`:                         "1",
		`tumbler_connections_received_total`:                "1",
		`tumbler_commands_total{command="eval"}`:            "1",
	} {
		if got := metric(after, series); got != want {
			t.Errorf("%s = %q, want %q", series, got, want)
		}
	}
	if metric(after, "tumbler_script_native_runs_total") == "" || metric(after, "go_goroutines") == "" {
		t.Error("native script runs or Go runtime series missing")
	}
}

func TestMetrics_AddressTakenFailsStart(t *testing.T) {
	a := RunT(t, WithConfig(func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }))
	b := New(Config{Addr: "127.0.0.1:0", MetricsAddr: a.MetricsAddr()})
	if err := b.Start(); err == nil {
		b.Close()
		t.Fatal("Start succeeded with the metrics address taken")
	}
	b.Close()
}

// cmdstatCalls returns the calls of one command in an INFO commandstats
// reply, or -1 when it is not listed.
func cmdstatCalls(t *testing.T, info, name string) int {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
			n, err := strconv.Atoi(v[:strings.IndexByte(v, ',')])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	return -1
}

// A connection's commands count in batches (engine.PendingStats): an INFO
// later in the same pipeline, an INFO inside EXEC, and any client that has
// seen a batch's replies all see its commands counted, however many
// distinct commands the batch ran.
func TestCommandStats_CountedBeforeTheirRepliesGoOut(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	d := dial(t, srv.Addr())
	sha := strings.TrimSpace(strings.Split(c.do("SCRIPT", "LOAD",
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`), "\r\n")[1])

	// one pipeline: its own INFO sees what ran before it
	c.send(encode("SET", "a", "1") + encode("GET", "a") + encode("EVALSHA", sha, "1", "a", "1") +
		encode("GET", "a") + encode("INFO", "commandstats"))
	for i := 0; i < 4; i++ {
		c.read()
	}
	info := c.read()
	for name, want := range map[string]int{"set": 1, "get": 3, "evalsha": 1, "del": 1} {
		if got := cmdstatCalls(t, info, name); got != want {
			t.Errorf("in the pipeline, %s calls=%d, want %d", name, got, want)
		}
	}
	if got := infoField(t, c, "stats", "total_eval_calls"); got != "1" {
		t.Errorf("total_eval_calls = %q", got)
	}

	// more distinct commands in one batch than PendingStats holds
	names := []string{"strlen", "exists", "type", "pttl", "ttl", "persist", "getdel", "incr"}
	var batch strings.Builder
	for i := 0; i < 20; i++ {
		batch.WriteString(encode("GET", "a"))
	}
	for _, n := range names {
		batch.WriteString(encode(n, "b"))
	}
	c.send(batch.String())
	for i := 0; i < 20+len(names); i++ {
		c.read()
	}
	// another client, after those replies came
	info = d.do("INFO", "commandstats")
	if got := cmdstatCalls(t, info, "get"); got != 23 {
		t.Errorf("after the batch's replies, get calls=%d, want 23", got)
	}
	for _, n := range names {
		if got := cmdstatCalls(t, info, n); got != 1 {
			t.Errorf("after the batch's replies, %s calls=%d, want 1", n, got)
		}
	}

	// inside EXEC: the queued SET counts before the queued INFO runs
	c.send(encode("SET", "x", "1") + encode("MULTI") + encode("SET", "b", "1") + encode("INFO", "commandstats") + encode("EXEC"))
	for i := 0; i < 4; i++ {
		c.read()
	}
	exec := c.read()
	if got := cmdstatCalls(t, exec, "set"); got != 3 {
		t.Errorf("inside EXEC, set calls=%d, want 3", got)
	}
	if got := cmdstatCalls(t, exec, "multi"); got != 1 {
		t.Errorf("inside EXEC, multi calls=%d, want 1", got)
	}

	// CONFIG RESETSTAT clears what its own pipeline ran before it
	c.send(encode("GET", "a") + encode("CONFIG", "RESETSTAT") + encode("GET", "a") + encode("INFO", "commandstats"))
	for i := 0; i < 3; i++ {
		c.read()
	}
	if got := cmdstatCalls(t, c.read(), "get"); got != 1 {
		t.Errorf("after RESETSTAT in the pipeline, get calls=%d, want 1", got)
	}

	// a command blocked in a batch: what ran before it counts meanwhile
	c.send(encode("GET", "a") + encode("BLPOP", "q", "10"))
	for deadline := time.Now().Add(2 * time.Second); cmdstatCalls(t, d.do("INFO", "commandstats"), "get") != 2; {
		if time.Now().After(deadline) {
			t.Fatal("a GET before a blocked BLPOP was not counted while it waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.do("LPUSH", "q", "x")
	c.read()
	c.read()

	// a script's INFO sees the script's calls before it
	got := c.do("EVAL", `redis.call("get", "a") redis.call("get", "a") return redis.call("info", "commandstats")`, "0")
	if n := cmdstatCalls(t, got, "get"); n != 4 {
		t.Errorf("INFO in a script: get calls=%d, want 4 (%q)", n, got)
	}

	// a command held by CLIENT PAUSE: what ran before it in its pipeline
	// counts meanwhile, and a CONFIG RESETSTAT meanwhile clears it
	d.do("CONFIG", "RESETSTAT")
	d.do("CLIENT", "PAUSE", "60000", "WRITE")
	c.send(encode("GET", "a") + encode("SET", "a", "2"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := cmdstatCalls(t, d.do("INFO", "commandstats"), "get"); n != 1 {
		t.Errorf("during a pause, get calls=%d, want 1: the GET before the held SET", n)
	}
	d.do("CONFIG", "RESETSTAT")
	d.do("CLIENT", "UNPAUSE")
	c.read()
	c.read()
	info = d.do("INFO", "commandstats")
	if n := cmdstatCalls(t, info, "get"); n > 0 {
		t.Errorf("after a RESETSTAT during the pause, get calls=%d, want none", n)
	}
	if n := cmdstatCalls(t, info, "set"); n != 1 {
		t.Errorf("after the pause, set calls=%d, want 1", n)
	}
}

// A command after a blocked one in the same pipeline is timed from its own
// start, not from the end of the command before it (engine.StartBatch):
// the BLPOP's wait is not the GET's time.
func TestCommandStats_AWaitInABatchIsNotTheNextCommandsTime(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.send(encode("GET", "a") + encode("BLPOP", "q", "0.25") + encode("GET", "a")) // (a wait far above a stalled GET's time)
	for i := 0; i < 3; i++ {
		c.read()
	}
	info := c.do("INFO", "commandstats")
	for _, line := range strings.Split(info, "\r\n") {
		v, ok := strings.CutPrefix(line, "cmdstat_get:calls=2,usec=")
		if !ok {
			continue
		}
		us, err := strconv.Atoi(v[:strings.IndexByte(v, ',')])
		if err != nil || us >= 250000 {
			t.Fatalf("two GETs took %q µs: the BLPOP's wait was counted", v)
		}
		return
	}
	t.Fatalf("no cmdstat_get with 2 calls in %q", info)
}

// CONFIG RESETSTAT counts itself, as Redis counts a command once it has
// run: right after it total_commands_processed is 1 (INFO is counted once
// it has run, too), and 2 for an INFO after another command.
func TestConfigResetStat_CountsItself(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("SET", "k", "v")
	for _, want := range []string{"1", "2"} {
		if want == "1" {
			c.do("CONFIG", "RESETSTAT")
		}
		got := c.do("INFO", "stats")
		if !strings.Contains(got, "\r\ntotal_commands_processed:"+want+"\r\n") {
			t.Fatalf("total_commands_processed, want %s:\n%s", want, got)
		}
	}
}

// total_commands_processed counts a command once it has run, as Redis's
// call() does, also inside EXEC and inside scripts: an INFO queued in a
// MULTI or called by a script sees the commands before it, not itself nor
// the EXEC or EVAL around it. The counts are redis-server 7.0.15's for the
// same sequences, one fresh connection each.
func TestTotalCommands_CountedOnceRun(t *testing.T) {
	srv := RunT(t)
	info := []string{"INFO", "stats"}
	for _, tc := range []struct {
		seq  [][]string
		want []string // total_commands_processed of each INFO, in order
	}{
		{[][]string{{"MULTI"}, {"CONFIG", "RESETSTAT"}, info, {"EXEC"}, info}, []string{"1", "3"}},
		{[][]string{{"MULTI"}, {"CONFIG", "RESETSTAT"}, {"PING"}, info, {"PING"}, {"EXEC"}, info}, []string{"2", "5"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, info, {"EXEC"}, info}, []string{"2", "4"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, {"SET", "a", "b"}, info, {"EXEC"}, info}, []string{"3", "5"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, {"GET", "a"}, {"EXEC"}, info}, []string{"4"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, {"GET"}, {"GET", "a"}, {"EXEC"}, info}, []string{"3"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"EVAL", `return redis.call("info","stats")`, "0"}, info}, []string{"1", "3"}},
		{[][]string{{"CONFIG", "RESETSTAT"}, {"MULTI"}, {"EVAL", `return redis.call("info","stats")`, "0"}, {"EXEC"}, info}, []string{"2", "5"}},
	} {
		c := dial(t, srv.Addr())
		var got []string
		for _, args := range tc.seq {
			for _, m := range regexp.MustCompile(`total_commands_processed:(\d+)`).FindAllStringSubmatch(c.do(args...), -1) {
				got = append(got, m[1])
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: total_commands_processed %v, want %v (Redis)", tc.seq, got, tc.want)
		}
		c.conn.Close()
	}
}

// A blocked command served later counts once in total_commands_processed
// (redis-server 7.0.15: RESETSTAT, BLPOP, RPUSH, then INFO reads 3).
func TestTotalCommands_BlockedCommandCountsOnce(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	b.expectDo("+OK\r\n", "CONFIG", "RESETSTAT")
	a.send(encode("BLPOP", "bk", "0"))
	waitBlockedClients(t, srv, 1)
	b.expectDo(":1\r\n", "RPUSH", "bk", "x")
	a.expect("*2\r\n$2\r\nbk\r\n$1\r\nx\r\n")
	if got := b.do("INFO", "stats"); !strings.Contains(got, "\r\ntotal_commands_processed:3\r\n") {
		t.Fatalf("want total_commands_processed:3 (RESETSTAT, BLPOP, RPUSH):\n%s", got)
	}
}

// TestInfo_ServerSectionFollowsTheServer: INFO server's hz and
// configured_hz follow the hz setting (and dynamic-hz), multiplexing_api
// names the event loops when they serve, os is uname's, and master_replid
// is an id of its own, not run_id.
func TestInfo_ServerSectionFollowsTheServer(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	field := func(name string) string { return infoField(t, c, "server", name) }
	if hz, conf := field("hz"), field("configured_hz"); hz != "10" || conf != "10" {
		t.Errorf("hz %q, configured_hz %q; want 10 and 10", hz, conf)
	}
	c.do("CONFIG", "SET", "hz", "50")
	if hz, conf := field("hz"), field("configured_hz"); hz != "50" || conf != "50" {
		t.Errorf("after CONFIG SET hz 50: hz %q, configured_hz %q", hz, conf)
	}
	c.do("CONFIG", "SET", "hz", "0") // held at 1, as Redis holds it
	if hz := field("hz"); hz != "1" {
		t.Errorf("after CONFIG SET hz 0: hz %q, want 1", hz)
	}
	// dynamic-hz doubles hz while there are over 200 clients a tick
	for range 200 {
		dial(t, srv.Addr()).do("PING")
	}
	if hz := field("hz"); hz != "2" {
		t.Errorf("201 clients at hz 1: hz %q, want 2 (dynamic-hz)", hz)
	}
	c.do("CONFIG", "SET", "dynamic-hz", "no")
	if hz := field("hz"); hz != "1" {
		t.Errorf("dynamic-hz no: hz %q, want 1", hz)
	}
	if runtime.GOOS == "linux" {
		if got := field("multiplexing_api"); got != "epoll" {
			t.Errorf("multiplexing_api %q, want epoll (the event loops)", got)
		}
		if got := field("os"); !strings.HasPrefix(got, "Linux ") || strings.Count(got, " ") != 2 {
			t.Errorf("os %q, want uname's \"Linux <release> <machine>\"", got)
		}
	}
	if run, repl := field("run_id"), infoField(t, c, "replication", "master_replid"); len(repl) != 40 || repl == run {
		t.Errorf("master_replid %q, run_id %q: want an id of its own", repl, run)
	}
}

// TestSlowlog_DatedWhenLogged: a slow log entry is dated when it is
// logged, after its command ran, as Redis's slowlogCreateEntry
// (time(NULL)): DEBUG SLEEP 1.1 begun at second s is dated s+1 or later
// (Redis 7.0.15: TIME 1795997358, the entry 1795997360). It was dated by
// its start.
func TestSlowlog_DatedWhenLogged(t *testing.T) {
	srv := RunT(t)
	srv.Engine().SetSlowlogSlowerThan(0)
	c := dial(t, srv.Addr())
	m := regexp.MustCompile(`^\*2\r\n\$\d+\r\n(\d+)\r\n`).FindStringSubmatch(c.do("TIME"))
	if m == nil {
		t.Fatal("TIME: no seconds")
	}
	before, _ := strconv.ParseInt(m[1], 10, 64)
	c.do("SLOWLOG", "RESET")
	c.do("DEBUG", "SLEEP", "1.1")
	m = regexp.MustCompile(`^\*1\r\n\*6\r\n:\d+\r\n:(\d+)\r\n`).FindStringSubmatch(c.do("SLOWLOG", "GET", "1"))
	if m == nil {
		t.Fatal("no slow log entry")
	}
	if ts, _ := strconv.ParseInt(m[1], 10, 64); ts < before+1 {
		t.Errorf("DEBUG SLEEP 1.1 begun at %d dated %d, want its end (%d or later)", before, ts, before+1)
	}
}
