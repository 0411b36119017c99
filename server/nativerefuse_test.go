package server

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// The well-known lock scripts run natively (luavm/native.go) only when
// none of their calls would be refused; a refused call (the restart
// delay, ACL, min-replicas-to-write) leaves the script to Lua, so the
// reply, the ACL log and the statistics are the Lua run's. Each case runs
// on a server with native runs and on one without.
func TestNativeLockScripts_RefusedCallsAsInLua(t *testing.T) {
	scripts := []string{
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`,
		`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`,
		"local val = redis.call(\"GET\", KEYS[1])\nif val == ARGV[1] then\n\treturn redis.call(\"DEL\", KEYS[1])\nelseif val == false then\n\treturn -1\nelse\n\treturn 0\nend\n",
		"local token = redis.call('get', KEYS[1])\nif not token or token ~= ARGV[1] then\n  return 0\nend\nredis.call('del', KEYS[1])\nreturn 1\n",
		"local token = redis.call('get', KEYS[1])\nif not token or token ~= ARGV[1] then\n  return 0\nend\nredis.call('pexpire', KEYS[1], ARGV[2])\nreturn 1\n",
	}
	users := []User{
		{Name: "nodel", Rules: []string{"on", "nopass", "~*", "+@all", "-del"}},
		{Name: "reader", Rules: []string{"on", "nopass", "%R~*", "+@all"}},
		{Name: "other", Rules: []string{"on", "nopass", "~other:*", "+@all"}},
	}
	usec := regexp.MustCompile(`usec(_per_call)?=[0-9.]+`)
	// run's setup runs twice: with the server before the connection is
	// made, then with the connection
	auth := func(user string) func(*Server, *rawClient) {
		return func(_ *Server, c *rawClient) {
			if c != nil {
				if got := c.do("AUTH", user, "x"); got != "+OK\r\n" {
					t.Fatalf("AUTH %s = %q", user, got)
				}
			}
		}
	}
	info := func(c *rawClient, section string) string {
		r := c.do("INFO", section)
		return usec.ReplaceAllString(r[strings.Index(r, "\r\n")+2:], "usec")
	}
	run := func(luaOnly bool, setup func(srv *Server, c *rawClient)) string {
		srv := RunT(t, WithManualClock(), WithRestartDelay(10*time.Second), WithConfig(func(c *Config) { c.Users = users }))
		srv.vm.SetLuaOnly(luaOnly)
		srv.Advance(10 * time.Second) // no restart delay unless a case restarts
		setup(srv, nil)
		c := dial(t, srv.Addr())
		setup(nil, c)
		var out strings.Builder
		for _, body := range scripts {
			for _, tok := range []string{"tok", "other"} {
				srv.Set("lock", "tok", time.Minute)
				out.WriteString(c.do("EVAL", body, "1", "lock", tok, "5000"))
				got, _ := srv.Get("lock")
				out.WriteString(" lock=" + got + "\n")
			}
		}
		c.do("AUTH", "default", "x") // (the default user has no password)
		acl := c.do("ACL", "LOG")
		out.WriteString("ACL LOG " + acl[:strings.Index(acl, "\r\n")] + "\n")
		out.WriteString(info(c, "commandstats") + info(c, "errorstats"))
		return out.String()
	}
	for _, tc := range []struct {
		name  string
		setup func(srv *Server, c *rawClient)
	}{
		{"plain", func(*Server, *rawClient) {}},
		{"restart delay", func(srv *Server, _ *rawClient) {
			if srv != nil {
				if err := srv.Restart(true); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"ACL -del", auth("nodel")},
		{"ACL read-only keys", auth("reader")},
		{"ACL other keys", auth("other")},
		{"min-replicas-to-write", func(_ *Server, c *rawClient) {
			if c != nil {
				c.do("CONFIG", "SET", "min-replicas-to-write", "1")
			}
		}},
	} {
		native, lua := run(false, tc.setup), run(true, tc.setup)
		if native != lua {
			t.Errorf("%s:\nnative:\n%s\nlua:\n%s", tc.name, native, lua)
		}
	}
}

// SCRIPT KILL's request belongs to the script it stopped: a native lock
// script after it runs, and releases the lock (the request outlived the
// killed script, so the native program's DEL was refused with "Script
// killed by user": ERR internal error, the lock kept; found by a review).
func TestNativeLockScripts_AfterScriptKill(t *testing.T) {
	for _, luaOnly := range []bool{false, true} {
		srv := RunT(t, WithConfig(func(c *Config) { c.LuaTimeLimit = 50 * time.Millisecond }))
		srv.vm.SetLuaOnly(luaOnly)
		a, k := dial(t, srv.Addr()), dial(t, srv.Addr())
		a.send(encode("EVAL", "while true do end", "0"))
		eventually(t, "a busy script", srv.eng.Busy)
		if got := k.do("SCRIPT", "KILL"); got != "+OK\r\n" {
			t.Fatalf("SCRIPT KILL: %q", got)
		}
		if got := a.read(); !strings.HasPrefix(got, "-ERR Script killed by user") {
			t.Fatalf("the killed script: %q", got)
		}
		a.do("SET", "lock", "tok")
		const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
		if got := a.do("EVAL", release, "1", "lock", "tok"); got != ":1\r\n" {
			t.Errorf("luaOnly=%v: release after SCRIPT KILL = %q, want :1", luaOnly, got)
		}
		if got := a.do("EXISTS", "lock"); got != ":0\r\n" {
			t.Errorf("luaOnly=%v: EXISTS lock = %q", luaOnly, got)
		}
	}
}
