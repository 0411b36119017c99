package server

import (
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
		{[]string{"DEBUG", "set-active-expire", "1"}, "+OK\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := c.do("EVAL", "return redis.call('debug', 'sleep', '0')", "0"); !strings.HasPrefix(got, "-ERR This Redis command is not allowed from script script: ") {
		t.Errorf("DEBUG from a script = %q", got)
	}
	help := c.do("DEBUG", "HELP")
	want := "*9\r\n+DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+SET-ACTIVE-EXPIRE <0|1>\r\n" +
		"+    Setting it to 0 disables expiring keys in background when they are not\r\n" +
		"+    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the\r\n" +
		"+    default.\r\n+SLEEP <seconds>\r\n+    Stop the server for <seconds>. Decimals allowed.\r\n" +
		"+HELP\r\n+    Prints this help.\r\n"
	if help != want {
		t.Fatalf("DEBUG HELP = %q", help)
	}
}

func TestDebug_SleepStallsEveryClient(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	start := time.Now()
	a.send(encode("DEBUG", "SLEEP", "0.2"))
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
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("DEBUG SLEEP 0.2 returned after %v", el)
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
