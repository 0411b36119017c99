package server

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDebug_RefusedUnlessEnabled(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string
	}{
		{"", "-" + errDebugNotAllowed + "\r\n"},
		{"no", "-" + errDebugNotAllowed + "\r\n"},
		{"yes", "+OK\r\n"},
		{"local", "+OK\r\n"}, // the test connects over loopback
	} {
		srv := New(Config{Addr: "127.0.0.1:0", EnableDebugCommand: tc.mode})
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		c := dial(t, srv.Addr())
		if got := c.do("DEBUG", "SLEEP", "0"); got != tc.want {
			t.Errorf("enable-debug-command %q: DEBUG SLEEP 0 = %q, want %q", tc.mode, got, tc.want)
		}
		// Arity is checked first, as in Redis.
		if got := c.do("DEBUG"); got != "-ERR wrong number of arguments for 'debug' command\r\n" {
			t.Errorf("DEBUG = %q", got)
		}
		want := map[string]string{"": "no", "no": "no", "yes": "yes", "local": "local"}[tc.mode]
		if got := c.do("CONFIG", "GET", "enable-debug-command"); got != "*2\r\n"+bulk("enable-debug-command")+bulk(want) {
			t.Errorf("CONFIG GET enable-debug-command = %q", got)
		}
		srv.Close()
	}
}

// A refused protected command is refused when MULTI would queue it, so
// EXEC aborts, as Redis's processCommand refuses it before queueing.
// (Bytes from redis-server 7.0.15 without enable-debug-command.)
func TestDebug_RefusedProtectedCommandAbortsMulti(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "no" }))
	c := dial(t, srv.Addr())
	c.send(encode("MULTI") + encode("DEBUG", "SLEEP", "0") + encode("SET", "a", "1") + encode("EXEC") +
		encode("MULTI") + encode("MODULE", "LOAD", "/x") + encode("EXEC") +
		encode("MULTI") + encode("MODULE", "LIST") + encode("EXEC"))
	abort := "-EXECABORT Transaction discarded because of previous errors.\r\n"
	for i, want := range []string{"+OK\r\n", "-" + errDebugNotAllowed + "\r\n", "+QUEUED\r\n", abort,
		"+OK\r\n", "-" + errModuleNotAllowed + "\r\n", abort,
		"+OK\r\n", "+QUEUED\r\n", "*1\r\n*0\r\n"} {
		if got := c.read(); got != want {
			t.Fatalf("reply %d = %q, want %q", i, got, want)
		}
	}
	if got := c.do("EXISTS", "a"); got != ":0\r\n" {
		t.Fatalf("the aborted transaction ran: EXISTS a = %q", got)
	}
}

// ... and answered at once during CLIENT PAUSE ALL, as Redis rejects it
// before a pause could hold it (processCommand).
func TestDebug_RefusedProtectedCommandIsNotHeldByAPause(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "no" }))
	a, c := dial(t, srv.Addr()), dial(t, srv.Addr())
	if got := a.do("CLIENT", "PAUSE", "100000", "ALL"); got != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE = %q", got)
	}
	start := time.Now()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"MODULE", "LOAD", "/x"}, "-" + errModuleNotAllowed + "\r\n"},
		{[]string{"DEBUG", "SLEEP", "0"}, "-" + errDebugNotAllowed + "\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Fatalf("%v under CLIENT PAUSE = %q, want %q", tc.args, got, tc.want)
		}
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the refusals waited %v", waited)
	}
}

func TestDebug_Errors(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"DEBUG", "SLEEP"}, "-ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.\r\n"},
		{[]string{"debug", "sleep", "0.1", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'sleep'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "nosuch"}, "-ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "SET-ACTIVE-EXPIRE"}, "-ERR unknown subcommand or wrong number of arguments for 'SET-ACTIVE-EXPIRE'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "SET-ACTIVE-EXPIRE", "1", "2"}, "-ERR unknown subcommand or wrong number of arguments for 'SET-ACTIVE-EXPIRE'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "SLEEP", "x"}, "+OK\r\n"},  // strtod: 0
		{[]string{"DEBUG", "SLEEP", "-1"}, "+OK\r\n"}, // nothing to sleep
		// secs*1e6 does not fit a long long: Redis's conversion gives a
		// negative sleep, and it answers at once
		{[]string{"DEBUG", "SLEEP", "inf"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP", "1e300"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP", "nan"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP", "1e13"}, "+OK\r\n"},
		{[]string{"DEBUG", "SLEEP", "0.0000009"}, "+OK\r\n"}, // 0 µs
		{[]string{"DEBUG", "set-active-expire", "1"}, "+OK\r\n"},
		// Redis's parsing of REPLYBUFFER (tumbler has nothing to set)
		{[]string{"DEBUG", "REPLYBUFFER", "resizing", "0"}, "+OK\r\n"},
		{[]string{"DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"}, "+OK\r\n"},
		{[]string{"DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"}, "+OK\r\n"},
		{[]string{"DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"DEBUG", "REPLYBUFFER", "other", "1"}, "-ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "REPLYBUFFER", "resizing"}, "-ERR unknown subcommand or wrong number of arguments for 'REPLYBUFFER'. Try DEBUG HELP.\r\n"},
		{[]string{"DEBUG", "PAUSE-CRON", "0"}, "+OK\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := c.do("EVAL", "return redis.call('debug', 'sleep', '0')", "0"); !strings.HasPrefix(got, "-ERR This Redis command is not allowed from script script: ") {
		t.Errorf("DEBUG from a script = %q", got)
	}
	help := c.do("DEBUG", "HELP")
	// Redis 7.0's help lines for the subcommands tumbler has, in its order
	lines := []string{"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CONFIG-REWRITE-FORCE-ALL",
		"    Like CONFIG REWRITE but writes all configuration options, including",
		"    keywords not listed in original configuration file or default values.",
		"DIGEST",
		"    Output a hex signature representing the current DB content.",
		"DIGEST-VALUE <key> [<key> ...]",
		"    Output a hex signature of the values of all the specified keys.",
		"ERROR <string>",
		"    Return a Redis protocol error with <string> as message. Useful for clients",
		"    unit tests to simulate Redis errors.",
		"LOG <message>",
		"    Write <message> to the server log.",
		"OBJECT <key>",
		"    Show low level info about `key` and associated value.",
		"POPULATE <count> [<prefix>] [<size>]",
		"    Create <count> string keys named key:<num>. If <prefix> is specified then",
		"    it is used instead of the 'key' prefix. These are not propagated to",
		"    replicas. Cluster slots are not respected so keys not belonging to the",
		"    current node can be created in cluster mode.",
		"PROTOCOL <type>",
		"    Reply with a test value of the specified type. <type> can be: string,",
		"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
		"    true, false.",
		"RELOAD [option ...]",
		"    Save the data set in memory (tumbler keeps no RDB file) and load it back.",
		"    Valid <option> values:",
		"    * MERGE: conflicting keys will be loaded from the saved data set.",
		"    * NOFLUSH: the existing database will not be removed before load, and",
		"      conflicting keys make the load fail, with nothing changed.",
		"    * NOSAVE: the database will be loaded from the last save.",
		"SET-ACTIVE-EXPIRE <0|1>",
		"    Setting it to 0 disables expiring keys in background when they are not",
		"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
		"    default.",
		"QUICKLIST-PACKED-THRESHOLD <size>",
		"    Sets the threshold for elements to be inserted as plain vs packed nodes",
		"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
		"SLEEP <seconds>",
		"    Stop the server for <seconds>. Decimals allowed.",
		"CLIENT-EVICTION",
		"    Show low level client eviction pools info (maxmemory-clients).",
		"PAUSE-CRON <0|1>",
		"    Stop periodic cron job processing (tumbler's 100 ms tick: INFO's rates, the",
		"    pub/sub output limits, the clients' memory for maxmemory-clients).",
		"REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
		"    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
		"    tumbler keeps no reply buffer peaks: accepted, changes nothing.",
		"REPLYBUFFER RESIZING <0|1>",
		"    Enable or disable the reply buffer resize cron job. tumbler resizes no reply",
		"    buffer on a timer: accepted, changes nothing.",
		"HELP",
		"    Prints this help."}
	want := "*" + strconv.Itoa(len(lines)) + "\r\n+" + strings.Join(lines, "\r\n+") + "\r\n"
	if help != want {
		t.Fatalf("DEBUG HELP = %q", help)
	}
}

func TestDebug_SleepStallsEveryClient(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	start := time.Now()
	a.send(encode("DEBUG", "SLEEP", "1")) // (long enough for both polls below to see it, under load)
	eventually(t, "the sleep to start", func() bool {
		srv.fx.pmu.Lock()
		defer srv.fx.pmu.Unlock()
		return srv.fx.sleeps == 1
	})
	b.send(encode("PING")) // a connection command: held all the same
	eventually(t, "PING held", func() bool { return srv.waitingCommands() == 1 })
	if got := a.read(); got != "+OK\r\n" {
		t.Fatalf("DEBUG SLEEP = %q", got)
	}
	if got := b.read(); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("DEBUG SLEEP 1 returned after %v", el)
	}
}

func TestDebug_CloseCutsASleepShort(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0", EnableDebugCommand: "yes"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	c.send(encode("DEBUG", "SLEEP", "3600"))
	eventually(t, "the sleep to start", func() bool {
		srv.fx.pmu.Lock()
		defer srv.fx.pmu.Unlock()
		return srv.fx.sleeps == 1
	})
	srv.Close()
	c.expectClosed()
}

func TestDebug_SetActiveExpire(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	c.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	eventually(t, "active expiry parked", srv.activeExpiryParked)
	c.do("SET", "a", "v", "PX", "100")
	c.do("SET", "b", "v", "PX", "100")
	srv.Advance(time.Second)
	if n, exp := srv.Engine().KeyCount(); n != 2 || exp != 2 {
		t.Fatalf("with active expiry off: %d keys, %d with TTL; want both kept", n, exp)
	}
	// Lazy expiry still works.
	if got := c.do("GET", "a"); got != "$-1\r\n" {
		t.Fatalf("GET of an expired key = %q", got)
	}
	if n, _ := srv.Engine().KeyCount(); n != 1 {
		t.Fatalf("lazy expiry left %d keys", n)
	}
	c.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	eventually(t, "active expiry to reclaim b", func() bool { n, _ := srv.Engine().KeyCount(); return n == 0 })
	if srv.activeExpiryParked() {
		t.Fatal("active expiry still parked")
	}
	// A restart turns it back on.
	c.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	eventually(t, "active expiry parked", srv.activeExpiryParked)
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	srv.Set("k", "v", time.Millisecond)
	srv.Advance(2 * time.Millisecond)
	if n, _ := srv.Engine().KeyCount(); n != 0 {
		t.Fatalf("after a restart active expiry is on again; %d keys left", n)
	}
}

func TestStrtodAtoi_LikeC(t *testing.T) {
	for in, want := range map[string]float64{
		"0.5": 0.5, "  2": 2, "1e-1": 0.1, "3abc": 3, "x": 0, "": 0, "-1.5": -1.5, ".5s": 0.5, "inf": 0,
	} {
		got := strtod([]byte(in))
		if in == "inf" {
			if got <= 1e308 {
				t.Errorf("strtod(inf) = %v", got)
			}
			continue
		}
		if got != want {
			t.Errorf("strtod(%q) = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[string]int64{"0": 0, "1": 1, "2": 2, "x": 0, " 7z": 7, "-3": -3, "+4": 4, "": 0} {
		if got := atoi([]byte(in)); got != want {
			t.Errorf("atoi(%q) = %d, want %d", in, got, want)
		}
	}
}

// DEBUG DIGEST-VALUE gives the digests redis-server 7.0.15 gave for the
// same values (compat/diff's debug.txt compares the rest with a live
// redis-server), and DEBUG POPULATE makes Redis's keys.
func TestDebug_DigestAndPopulate(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("SET", "s", "hello")
	c.do("RPUSH", "l", "a", "b", "3", "", "c")
	c.do("SET", "e", "v", "PX", "100000")
	want := "*4\r\n+36b23a1456b2dce2c3ed252c456761301dba8060\r\n+8891912607cf87d366307df07830fdaf5a12b46a\r\n" +
		"+311b17018163335616e089f6b951c82c477335ac\r\n+0000000000000000000000000000000000000000\r\n"
	if got := c.do("DEBUG", "DIGEST-VALUE", "s", "l", "e", "missing"); got != want {
		t.Errorf("DIGEST-VALUE = %q, want %q", got, want)
	}
	before := c.do("DEBUG", "DIGEST")
	c.do("RPUSH", "l", "d")
	c.do("RPOP", "l")
	if got := c.do("DEBUG", "DIGEST"); got != before {
		t.Errorf("DIGEST after a push and a pop = %q, was %q", got, before)
	}
	c.do("LPUSH", "l", "z")
	if got := c.do("DEBUG", "DIGEST"); got == before {
		t.Errorf("DIGEST did not change with a list's order")
	}

	c.do("SET", "k:1", "mine")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"DEBUG", "POPULATE", "3", "k"}, "+OK\r\n"},
		{[]string{"GET", "k:0"}, "$7\r\nvalue:0\r\n"},
		{[]string{"GET", "k:1"}, "$4\r\nmine\r\n"},
		{[]string{"DEBUG", "POPULATE", "2", "p", "9"}, "+OK\r\n"},
		{[]string{"GET", "p:1"}, "$9\r\nvalue:1\x00\x00\r\n"},
		{[]string{"DEBUG", "POPULATE", "2", "q", "3"}, "+OK\r\n"},
		{[]string{"GET", "q:1"}, "$3\r\nval\r\n"},
		{[]string{"DEBUG", "POPULATE", "1", "q", "99999999999"}, "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"},
		{[]string{"DEBUG", "POPULATE", "-1"}, "-ERR value is out of range, must be positive\r\n"},
		{[]string{"DBSIZE"}, ":10\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// DEBUG RELOAD beyond what compat/diff's debug.txt diffs against Redis:
// NOSAVE with nothing saved, NOFLUSH over a clashing key (which kills
// Redis) failing with nothing changed, MERGE, and what the load touches:
// a WATCHed key is dirty (the flush), a tracking client is told to drop
// its cache, a keyspace subscriber gets no event, and a large hash comes
// back whole.
func TestDebug_Reload(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.expectDo("-ERR Error trying to load the RDB dump\r\n", "DEBUG", "RELOAD", "NOSAVE")
	c.do("SET", "a", "1")
	args := []string{"HSET", "big"}
	for i := range 1000 {
		args = append(args, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	c.do(args...)
	c.expectDo("+OK\r\n", "DEBUG", "RELOAD")
	c.expectDo("$3\r\n999\r\n", "HGET", "big", "f999")
	c.expectDo(":1000\r\n", "HLEN", "big")
	c.expectDo("$9\r\nhashtable\r\n", "OBJECT", "ENCODING", "big")

	// NOFLUSH over a key the save holds: refused, nothing changed
	c.do("SET", "a", "changed")
	c.do("SET", "b", "new")
	digest := c.do("DEBUG", "DIGEST")
	c.expectDo("-ERR Error trying to load the RDB dump\r\n", "DEBUG", "RELOAD", "NOSAVE", "NOFLUSH")
	c.expectDo(digest, "DEBUG", "DIGEST")
	// MERGE: the saved value replaces it; a key not saved stays
	c.expectDo("+OK\r\n", "DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE")
	c.expectDo("$1\r\n1\r\n", "GET", "a")
	c.expectDo("$3\r\nnew\r\n", "GET", "b")

	// a WATCHed key is touched by the flush
	c.expectDo("+OK\r\n", "WATCH", "a")
	other := dial(t, srv.Addr())
	other.expectDo("+OK\r\n", "DEBUG", "RELOAD")
	c.expectDo("+OK\r\n", "MULTI")
	c.expectDo("+QUEUED\r\n", "GET", "a")
	c.expectDo("*-1\r\n", "EXEC")

	// a tracking client drops its cache (one invalidation for all keys);
	// a keyspace subscriber hears nothing of the load
	tr := trackingClient(t, srv, "a")
	other.do("CONFIG", "SET", "notify-keyspace-events", "KEA")
	sub := dial(t, srv.Addr())
	sub.expectDo("*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n", "PSUBSCRIBE", "*")
	other.expectDo("+OK\r\n", "DEBUG", "RELOAD")
	tr.expect(">2\r\n$10\r\ninvalidate\r\n_\r\n")
	sub.expectSilent(50 * time.Millisecond)
	other.expectDo(":1\r\n", "DEL", "b") // the first event the subscriber gets
	sub.expect("*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$16\r\n__keyspace@0__:b\r\n$3\r\ndel\r\n")
}
