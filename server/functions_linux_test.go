package server

// The function tests that run on an event loop (runOneLoop, inLoop and the
// loop's hand-back counters live in the Linux-only eventloop_test.go and
// eventloop_linux.go); the rest are in functions_test.go.

import (
	"strings"
	"testing"
	"time"
)

const (
	busyFunction = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
	busyScript   = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
)

// A busy function, run off an event loop: the loop's other clients get
// BUSY naming FUNCTION KILL, FUNCTION STATS shows it, SCRIPT KILL refuses
// it and FUNCTION KILL stops it. A busy EVAL is the other way round.
func TestFunction_BusyStatsAndKill(t *testing.T) {
	srv := runOneLoop(t, func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond })
	loadLibrary(t, dial(t, srv.Addr()), "#!lua name=spin\nredis.register_function('spin', function(keys, args)\n  while true do end\nend)")
	a, b, k := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	inLoop(t, srv, a)
	inLoop(t, srv, b)
	inLoop(t, srv, k)

	a.send(encode("FCALL", "spin", "1", "key", "arg"))
	waitFor(t, "a busy function", srv.eng.Busy)
	for _, args := range [][]string{{"GET", "x"}, {"EVAL", "return 1", "0"}, {"FCALL", "spin", "0"}, {"SHUTDOWN"}} {
		if got := b.do(args...); got != busyFunction {
			t.Fatalf("%q during a busy function: %q", args, got)
		}
	}
	stats := k.do("FUNCTION", "STATS")
	const head = "*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*5\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n1\r\n$3\r\nkey\r\n$3\r\narg\r\n$11\r\nduration_ms\r\n:"
	if !strings.HasPrefix(stats, head) || !strings.HasSuffix(stats, "\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n") {
		t.Fatalf("FUNCTION STATS during a busy function: %q", stats)
	}
	if got := k.do("SCRIPT", "KILL"); got != busyFunction {
		t.Fatalf("SCRIPT KILL of a function: %q", got)
	}
	if got := k.do("FUNCTION", "KILL"); got != "+OK\r\n" {
		t.Fatalf("FUNCTION KILL: %q", got)
	}
	if got := a.read(); got != "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:3.\r\n" {
		t.Fatalf("the killed function: %q", got)
	}
	if got := b.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("after FUNCTION KILL: %q", got)
	}

	a.send(encode("EVAL", "while true do end", "0"))
	waitFor(t, "a busy script", srv.eng.Busy)
	for _, args := range [][]string{{"GET", "x"}, {"FUNCTION", "KILL"}, {"FUNCTION", "STATS"}} {
		if got := k.do(args...); got != busyScript {
			t.Fatalf("%q during a busy EVAL: %q", args, got)
		}
	}
	if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	if got := a.read(); !strings.HasPrefix(got, "-ERR Script killed by user") {
		t.Fatalf("the killed script: %q", got)
	}
	if got := k.do("FUNCTION", "KILL"); got != "-NOTBUSY No scripts in execution right now.\r\n" {
		t.Fatalf("FUNCTION KILL with nothing running: %q", got)
	}
}

// FCALL, FCALL_RO and FUNCTION LOAD and RESTORE (which run a library's
// code, for up to half a second) leave the event loop; FUNCTION LIST and
// DUMP stay.
func TestFunction_LongCommandsLeaveTheLoop(t *testing.T) {
	srv := runOneLoop(t)
	c := dial(t, srv.Addr())
	for _, tc := range []struct {
		args   []string
		leaves bool
	}{
		{[]string{"FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return 1 end)"}, true},
		{[]string{"FUNCTION", "LIST"}, false},
		{[]string{"FUNCTION", "DUMP"}, false},
		{[]string{"FUNCTION", "RESTORE", "x"}, true},
		{[]string{"FCALL", "f", "0"}, true},
		{[]string{"FCALL_RO", "f", "0"}, true},
		{[]string{"function", "stats"}, true},
		{[]string{"function", "kill"}, true},
		{[]string{"FUNCTION", "DELETE", "l"}, false},
	} {
		inLoop(t, srv, c)
		left := srv.loopStats.leaves[exitBatch].Load()
		c.do(tc.args...)
		if n := srv.loopStats.leaves[exitBatch].Load() - left; (n == 1) != tc.leaves {
			t.Errorf("%q: %d hand-backs", tc.args, n)
		}
		for i := 0; i < loopReturnAfter; i++ {
			c.do("PING")
		}
	}
}
