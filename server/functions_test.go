package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// loadLibrary loads code on c and fails the test unless it loads.
func loadLibrary(t *testing.T, c *rawClient, code string) {
	t.Helper()
	if got := c.do("FUNCTION", "LOAD", "REPLACE", code); !strings.HasPrefix(got, "$") {
		t.Fatalf("FUNCTION LOAD: %q", got)
	}
}

// A function that wrote cannot be killed; its client waits for it.
func TestFunction_UnkillableOnceItWrote(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond }))
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	loadLibrary(t, b, "#!lua name=w\nredis.register_function('w', function(keys)\n  redis.call('set', keys[1], 'v')\n  local deadline = tonumber(redis.call('time')[1]) + 1\n  while tonumber(redis.call('time')[1]) <= deadline do end\n  return 'done'\nend)")
	a.send(encode("FCALL", "w", "1", "k"))
	waitFor(t, "a busy function", srv.eng.Busy)
	const unkillable = "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n"
	if got := b.do("FUNCTION", "KILL"); got != unkillable {
		t.Fatalf("FUNCTION KILL: %q", got)
	}
	if got := a.read(); got != bulk("done") {
		t.Fatalf("the function: %q", got)
	}
}

// A node restarted without its data loses its functions, as Redis without
// persistence; one that keeps its data keeps them, as Redis keeps them in
// its RDB.
func TestFunction_Restart(t *testing.T) {
	srv := RunT(t, WithManualClock())
	addr := srv.Addr()
	c := dial(t, addr)
	loadLibrary(t, c, "#!lua name=r\nredis.register_function('r', function() return 'r' end)")
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	c = dial(t, addr)
	if got := c.do("FCALL", "r", "0"); got != bulk("r") {
		t.Fatalf("after Restart(true): %q", got)
	}
	if err := srv.Restart(false); err != nil {
		t.Fatal(err)
	}
	c = dial(t, addr)
	if got := c.do("FCALL", "r", "0"); got != "-ERR Function not found\r\n" {
		t.Fatalf("after Restart(false): %q", got)
	}
}

// CLIENT PAUSE WRITE holds FCALL of a function that may write, and of an
// unknown one (FCALL may replicate); a no-writes function and FCALL_RO
// run.
func TestFunction_ClientPauseWrite(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	loadLibrary(t, a, "#!lua name=p\nredis.register_function{function_name='ro', callback=function() return 'ro' end, flags={'no-writes'}}\nredis.register_function('rw', function() return 'rw' end)")
	a.do("CLIENT", "PAUSE", "10000", "WRITE")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL", "ro", "0"}, bulk("ro")},
		{[]string{"FCALL_RO", "ro", "0"}, bulk("ro")},
		{[]string{"FCALL_RO", "nosuch", "0"}, "-ERR Function not found\r\n"},
		{[]string{"FUNCTION", "LIST", "LIBRARYNAME", "none"}, "*0\r\n"},
	} {
		if got := b.do(tc.args...); got != tc.want {
			t.Fatalf("%q during CLIENT PAUSE WRITE = %q, want %q", tc.args, got, tc.want)
		}
	}
	for i, args := range [][]string{
		{"FCALL", "rw", "0"},
		{"FCALL", "nosuch", "0"},
		{"FUNCTION", "DELETE", "p"},
	} {
		c := dial(t, srv.Addr())
		c.send(encode(args...))
		eventually(t, fmt.Sprintf("%q held", args), func() bool { return srv.waitingCommands() == i+1 })
	}
}

// The restart delay refuses a function's writes, not FUNCTION LOAD: the
// library holds no lock.
func TestFunction_RestartDelay(t *testing.T) {
	srv := RunT(t, WithManualClock(), WithRestartDelay(30*time.Second))
	c := dial(t, srv.Addr())
	loadLibrary(t, c, "#!lua name=d\nredis.register_function('acquire', function(keys) return redis.call('set', keys[1], 'me', 'NX', 'PX', 1000) end)\nredis.register_function('extend', function(keys) return redis.call('pexpire', keys[1], 1000) end)")
	if got := c.do("FCALL", "acquire", "1", "lock"); got != "$-1\r\n" {
		t.Fatalf("a lock grant in a function during the delay: %q", got)
	}
	if got := c.do("FCALL", "extend", "1", "lock"); !strings.HasPrefix(got, "-ERR restart delay") {
		t.Fatalf("a write in a function during the delay: %q", got)
	}
	if got := c.do("FUNCTION", "DELETE", "d"); got != "+OK\r\n" {
		t.Fatalf("FUNCTION DELETE during the delay: %q", got)
	}
}

// MONITOR shows FCALL before the commands its function runs.
func TestFunction_Monitor(t *testing.T) {
	srv := monitorServer(t)
	m := dial(t, srv.Addr())
	if got := m.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := dial(t, srv.Addr())
	from := "[0 " + c.conn.LocalAddr().String() + "]"
	c.do("FUNCTION", "LOAD", "#!lua name=m\nredis.register_function('m', function(keys) return redis.call('get', keys[1]) end)")
	c.do("FCALL", "m", "1", "kk")
	c.do("FCALL", "nosuch", "0")
	ts := "+1339518083.107412 "
	for i, w := range []string{
		ts + from + ` "FUNCTION" "LOAD" "#!lua name=m\nredis.register_function('m', function(keys) return redis.call('get', keys[1]) end)"`,
		ts + from + ` "FCALL" "m" "1" "kk"`,
		ts + `[0 lua] "get" "kk"`,
		ts + from + ` "FCALL" "nosuch" "0"`,
	} {
		if got := m.read(); got != w+"\r\n" {
			t.Fatalf("line %d = %q\nwant %q", i, got, w+"\r\n")
		}
	}
}

// Keys read inside a function are tracked for its caller, as a script's.
func TestFunction_TrackingKeysRead(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	loadLibrary(t, b, "#!lua name=t\nredis.register_function{function_name='get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}")
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("_\r\n", "FCALL_RO", "get", "1", "k1")
	a.expectDo("_\r\n", "FCALL", "get", "1", "k2")
	b.expectDo("+OK\r\n", "MSET", "k1", "1", "k2", "2")
	a.expect(inval3("k1"))
	a.expect(inval3("k2"))
	a.expectDo("+PONG\r\n", "PING")
}

// Over maxmemory a function that may write is refused before it runs,
// unless flagged allow-oom; a no-writes one runs.
func TestFunction_MaxMemory(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	loadLibrary(t, c, "#!lua name=o\nredis.register_function('w', function(keys) return redis.call('set', keys[1], 'v') end)\n"+
		"redis.register_function{function_name='oom', callback=function(keys) return redis.call('set', keys[1], 'v') end, flags={'allow-oom'}}\n"+
		"redis.register_function{function_name='ro', callback=function(keys) return redis.call('exists', keys[1]) end, flags={'no-writes'}}")
	payload := c.do("FUNCTION", "DUMP")
	payload = payload[strings.Index(payload, "\r\n")+2 : len(payload)-2]
	c.do("CONFIG", "SET", "maxmemory", "1")
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL", "w", "1", "k"}, oom},
		{[]string{"FCALL", "oom", "1", "k"}, "+OK\r\n"},
		{[]string{"FCALL", "ro", "1", "k"}, ":1\r\n"},
		{[]string{"FCALL_RO", "ro", "1", "k"}, ":1\r\n"},
		{[]string{"FUNCTION", "FLUSH"}, "+OK\r\n"},
		{[]string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('x', function() end)"}, oom},
		{[]string{"FUNCTION", "RESTORE", payload}, oom},
		{[]string{"CONFIG", "SET", "maxmemory", "0"}, "+OK\r\n"},
		{[]string{"FUNCTION", "RESTORE", payload}, "+OK\r\n"},
	} {
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
}
