package server

import (
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine"
)

// A command that panics gets "ERR internal error" and the connection goes
// on as before: its next error reply, its scripts and other clients are
// served. (A panic used to leave the connection's writer wrapped in the
// command's error counter, and its next error reply recursed until the
// process died of a stack overflow.)
func TestPanickingCommand_ConnectionGoesOn(t *testing.T) {
	var log syncBuffer
	srv := RunT(t, WithConfig(func(c *Config) { c.Logger = newTestLogger(&log) }))
	srv.eng.Register(
		&engine.Command{Name: "testpanic", Arity: 1, Flags: engine.FlagWrite, Fn: func(c *engine.Ctx) { panic("test") }},
		&engine.Command{Name: "testpanicnokeys", Arity: 1, Flags: engine.FlagNoKeys, Fn: func(c *engine.Ctx) { panic("test") }},
	)
	c, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	c.do("SET", "s", "str")
	for _, args := range [][]string{
		{"TESTPANIC"}, {"TESTPANICNOKEYS"},
		{"EVAL", "return redis.call('testpanic')", "0"},
		{"EVAL", "redis.call('select', 1) return redis.call('testpanic')", "0"},
	} {
		// (in a script, the Lua interpreter makes the panic the script's error)
		if got := c.do(args...); !strings.HasPrefix(got, "-ERR internal error") && !(args[0] == "EVAL" && strings.HasPrefix(got, "-ERR test script: ")) {
			t.Fatalf("%q = %q", args, got)
		}
		for _, step := range []struct {
			args []string
			want string
		}{
			{[]string{"INCR", "s"}, "-ERR value is not an integer or out of range\r\n"},
			{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "s"}, "-ERR value is not an integer or out of range script: "},
			{[]string{"EVAL", "return 1", "0"}, ":1\r\n"},
			{[]string{"GET", "s"}, "$3\r\nstr\r\n"}, // in database 0
			{[]string{"PING"}, "+PONG\r\n"},
		} {
			if got := c.do(step.args...); !strings.HasPrefix(got, step.want) {
				t.Fatalf("after %q: %q = %q, want %q", args, step.args, got, step.want)
			}
		}
		if got := other.do("EVAL", "return 2", "0"); got != ":2\r\n" {
			t.Fatalf("after %q, another client's EVAL = %q", args, got)
		}
	}
	if n := strings.Count(log.String(), "panic serving command"); n != 2 {
		t.Fatalf("%d panics logged, want 2 (the scripts' are their errors):\n%s", n, log.String())
	}
}

// A command that panics after writing part of its reply (EXEC, its array
// header) has that part taken back: EXEC's reply is the error alone, and
// the stream stays in step (it announced three elements and sent one).
// Under CLIENT REPLY OFF the error is not sent either.
func TestPanickingCommand_PartialReplyTakenBack(t *testing.T) {
	srv := RunT(t)
	srv.eng.Register(&engine.Command{Name: "testpanic", Arity: 1, Flags: engine.FlagWrite, Fn: func(c *engine.Ctx) { panic("test") }})
	c := dial(t, srv.Addr())
	c.do("MULTI")
	c.do("PING")
	c.do("TESTPANIC")
	c.do("PING")
	if got := c.do("EXEC"); got != "-ERR internal error\r\n" {
		t.Fatalf("EXEC with a panicking command = %q", got)
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after = %q", got)
	}
	c.send(encode("CLIENT", "REPLY", "OFF") + encode("TESTPANIC") + encode("CLIENT", "REPLY", "ON"))
	if got := c.read(); got != "+OK\r\n" {
		t.Fatalf("after a panic under CLIENT REPLY OFF, the first reply = %q, want REPLY ON's +OK", got)
	}
}
