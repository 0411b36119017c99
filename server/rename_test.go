package server

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// renamed is a server with rename-command lines applied as a config file
// would apply them.
func renamed(t *testing.T, extra func(c *Config), lines ...[2]string) *Server {
	t.Helper()
	return RunT(t, WithConfig(func(c *Config) {
		for _, l := range lines {
			if _, err := ApplyDirective(c, "rename-command", l[0], l[1]); err != nil {
				t.Fatal(err)
			}
		}
		if extra != nil {
			extra(c)
		}
	}))
}

// longName is a rename-command name of the kind hardening guides give
// (a random hex string), longer than Lookup's buffer.
const longName = "b840fc02d524045429941cc15f59e41cb7be6c52b840fc02"

// rename-command lines are checked as Redis loads them, in order, against
// the command table as the earlier lines left it, with Redis's errors;
// the names of Redis's commands tumbler does not serve count too.
func TestRenameCommand_Directive(t *testing.T) {
	var cfg Config
	steps := []struct {
		args []string
		err  string
	}{
		{[]string{"CONFIG", "xconfig"}, ""},
		{[]string{"config", "y"}, errNoSuchCommand}, // gone by that name
		{[]string{"XCONFIG", "c2"}, ""},             // case-insensitive
		{[]string{"get", "SET"}, errNameTaken},
		{[]string{"get", "c2"}, errNameTaken},
		{[]string{"get", "xdel"}, errNameTaken}, // a stream command of Redis's
		{[]string{"xadd", "myxadd"}, ""},        // one tumbler does not serve
		{[]string{"myxadd", ""}, ""},
		{[]string{"xadd", "z"}, errNoSuchCommand},
		{[]string{"flushall", ""}, ""},
		{[]string{"flushall", "f"}, errNoSuchCommand},
		{[]string{"config|get", "x"}, errNoSuchCommand},
		{[]string{"nosuch", "x"}, errNoSuchCommand},
		{[]string{"get"}, "Bad directive or wrong number of arguments"},
		{[]string{"get", "a", "b"}, "Bad directive or wrong number of arguments"},
		{[]string{"ping", longName}, ""},
	}
	for _, st := range steps {
		_, err := ApplyDirective(&cfg, "rename-command", st.args...)
		var got string
		if err != nil {
			got = err.(*ConfigError).Reason
		}
		if got != st.err {
			t.Errorf("rename-command %q: %q, want %q", st.args, got, st.err)
		}
	}
	want := []CommandRename{{"CONFIG", "xconfig"}, {"XCONFIG", "c2"}, {"xadd", "myxadd"}, {"myxadd", ""}, {"flushall", ""}, {"ping", longName}}
	if !reflect.DeepEqual(cfg.RenameCommands, want) {
		t.Errorf("renames %q, want %q", cfg.RenameCommands, want)
	}
	// The engine applies them as checked (a Redis command tumbler does not
	// serve renamed too).
	c := dial(t, RunT(t, WithConfig(func(c *Config) { c.RenameCommands = cfg.RenameCommands })).Addr())
	if got := c.do("B840FC02d524045429941cc15f59e41cb7be6c52b840fc02"); got != "+PONG\r\n" {
		t.Errorf("the renamed PING, in another case: %q", got)
	}
	// A Config given to New directly is checked when it starts.
	srv := New(Config{Addr: "127.0.0.1:0", RenameCommands: []CommandRename{{"get", "set"}}})
	if err := srv.Start(); err == nil || !strings.Contains(err.Error(), errNameTaken) {
		t.Errorf("Start = %v, want %q", err, errNameTaken)
		srv.Close()
	}
}

// A renamed command answers to its new name only, in any case, from
// clients and scripts; a command renamed to "" is unknown. It keeps its
// own name where Redis shows it (arity errors, COMMAND INFO, INFO
// commandstats); ACL rules name commands by their own names.
func TestRenameCommand_Served(t *testing.T) {
	plain := dial(t, RunT(t).Addr())
	srv := renamed(t, nil, [2]string{"config", "xconfig"}, [2]string{"flushall", ""}, [2]string{"exec", "myexec"},
		[2]string{"ping", longName}, [2]string{"del", "mydel"}, [2]string{"client", "myclient"})
	c := dial(t, srv.Addr())
	doSteps(t, c, []wireStep{
		{[]string{"flushall"}, "-ERR unknown command 'flushall', with args beginning with: \r\n"},
		{[]string{"config", "get", "maxmemory"}, "-ERR unknown command 'config', with args beginning with: 'get' 'maxmemory' \r\n"},
		{[]string{"xconfig", "get", "maxmemory"}, "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"},
		{[]string{"XConfig", "GET", "maxmemory"}, "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"},
		{[]string{"xconfig"}, "-ERR wrong number of arguments for 'config' command\r\n"},
		{[]string{"xconfig", "nosuch"}, "-ERR unknown subcommand 'nosuch'. Try XCONFIG HELP.\r\n"},
		{[]string{"myclient", "unblock"}, "-ERR wrong number of arguments for 'client|unblock' command\r\n"},
		{[]string{"myclient", "unblock", "1", "timeout", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'unblock'. Try MYCLIENT HELP.\r\n"},
		{[]string{longName}, "+PONG\r\n"},
		{[]string{strings.ToUpper(longName), "hi"}, "$2\r\nhi\r\n"},
		{[]string{"ping"}, "-ERR unknown command 'ping', with args beginning with: \r\n"},
		{[]string{"eval", "return redis.call('xconfig', 'get', 'maxmemory')", "0"}, // noscript, as CONFIG
			"-ERR This Redis command is not allowed from script script: 641993eb1298f155112bf4e41f238172d8341781, on @user_script:1.\r\n"},
		{[]string{"eval", "return redis.call('MyDel', 'nokey')", "0"}, ":0\r\n"},
	})
	for _, name := range []string{"xconfig", "config", "flushall"} {
		got := c.do("command", "info", name)
		want := plain.do("command", "info", "config")
		if name != "xconfig" {
			want = "*1\r\n$-1\r\n"
		}
		if got != want {
			t.Errorf("COMMAND INFO %s = %.80q..., want %.80q...", name, got, want)
		}
	}
	countOf := func(r *rawClient) int {
		n, _ := parseIntReply(r.do("command", "count"))
		return n
	}
	if got, want := countOf(c), countOf(plain)-1; got != want { // flushall gone; the others renamed
		t.Errorf("COMMAND COUNT %d, want %d", got, want)
	}
	// Scripts call commands by their new names; the old ones are unknown,
	// in the lock scripts tumbler runs natively as in Lua.
	c.do("set", "k", "tok")
	for _, script := range []string{
		"return redis.call('flushall')",
		"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
	} {
		if got := c.do("eval", script, "1", "k", "tok"); !strings.HasPrefix(got, "-ERR Unknown Redis command called from script script: ") {
			t.Errorf("%s: %q", script, got)
		}
	}
	doSteps(t, c, []wireStep{
		{[]string{"get", "k"}, "$3\r\ntok\r\n"},
		{[]string{"eval", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('mydel', KEYS[1]) else return 0 end", "1", "k", "tok"}, ":1\r\n"},
		{[]string{"exists", "k"}, ":0\r\n"},
	})
	if info := c.do("info", "commandstats"); !strings.Contains(info, "cmdstat_config|get:calls=2,") || strings.Contains(info, "xconfig") || !strings.Contains(info, "cmdstat_del:calls=2,") {
		t.Errorf("INFO commandstats shows the new names:\n%s", info)
	}
	doSteps(t, c, []wireStep{
		{[]string{"multi"}, "+OK\r\n"},
		{[]string{"flushall"}, "-ERR unknown command 'flushall', with args beginning with: \r\n"},
		{[]string{"exec"}, "-ERR unknown command 'exec', with args beginning with: \r\n"},
		{[]string{"myexec"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"multi"}, "+OK\r\n"},
		{[]string{"set", "k", "tok"}, "+QUEUED\r\n"},
		{[]string{"myexec"}, "*1\r\n+OK\r\n"},
		{[]string{"multi"}, "+OK\r\n"},
		{[]string{"myexec", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"myexec"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"acl", "setuser", "u", "on", "+config", "+flushall"}, "+OK\r\n"},
		{[]string{"acl", "setuser", "u", "+xconfig"}, "-ERR Error in ACL SETUSER modifier '+xconfig': Unknown command or category name in ACL\r\n"},
		{[]string{"acl", "dryrun", "u", "xconfig", "get", "port"}, "+OK\r\n"},
		{[]string{"acl", "dryrun", "u", "config", "get", "port"}, "-ERR Command 'config' not found\r\n"},
	})
}

func parseIntReply(r string) (int, bool) {
	if !strings.HasPrefix(r, ":") {
		return 0, false
	}
	n := 0
	for _, ch := range strings.TrimSuffix(r[1:], "\r\n") {
		n = n*10 + int(ch-'0')
	}
	return n, true
}

// MONITOR and the slow log hide a renamed AUTH's and HELLO's passwords,
// as Redis's commands redact their own arguments whatever their name.
func TestRenameCommand_CredentialsStayRedacted(t *testing.T) {
	srv := renamed(t, func(c *Config) { c.SlowlogLogSlowerThan = ptr(int64(0)) },
		[2]string{"auth", "myauth"}, [2]string{"hello", "myhello"}, [2]string{"monitor", "mymon"})
	m := dial(t, srv.Addr())
	if got := m.do("mymon"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c := dial(t, srv.Addr())
	c.do("myauth", "secretpw")
	c.do("myhello", "2", "auth", "default", "secret2")
	for _, want := range []string{`"myauth" "(redacted)"`, `"myhello" "2" "auth" "(redacted)" "(redacted)"`} {
		if got := m.read(); !strings.HasSuffix(got, "] "+want+"\r\n") {
			t.Errorf("monitor: %q, want %s", got, want)
		}
	}
	log := c.do("slowlog", "get")
	if strings.Contains(log, "secret") || strings.Count(log, "(redacted)") != 3 {
		t.Errorf("SLOWLOG GET shows a password:\n%s", log)
	}
}

// A renamed EVAL is handed off the event loop as EVAL is: a script that
// runs on does not stop the loop's other clients, which get BUSY, and a
// renamed SCRIPT KILL ends it.
func TestRenameCommand_ScriptLeavesTheLoop(t *testing.T) {
	srv := renamed(t, func(c *Config) { c.EventLoops, c.LuaTimeLimit = 1, 50*time.Millisecond },
		[2]string{"eval", "myeval"}, [2]string{"script", "myscript"})
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	b.do("ping")
	a.send(encode("myeval", "while true do end", "0"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := b.do("ping")
		if strings.HasPrefix(got, "-BUSY") {
			break
		}
		if got != "+PONG\r\n" || time.Now().After(deadline) {
			t.Fatalf("PING during the script: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := b.do("myscript", "kill"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	if got := a.read(); !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL") {
		t.Errorf("the script's reply: %q", got)
	}
}

// A renamed CLIENT keeps a CLIENT CACHING YES window open across its own
// subcommands, as CLIENT does.
func TestRenameCommand_CachingWindow(t *testing.T) {
	srv := renamed(t, nil, [2]string{"client", "myclient"})
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "myclient", "tracking", "on", "optin")
	a.expectDo("+OK\r\n", "myclient", "caching", "yes")
	a.expectDo("_\r\n", "myclient", "getname")
	a.expectDo("_\r\n", "get", "k")
	b.expectDo("+OK\r\n", "set", "k", "1")
	a.expect(inval3("k"))
}

// CONFIG REWRITE keeps rename-command lines as written, as Redis keeps
// the lines it does not rewrite.
func TestRenameCommand_RewriteKeepsTheLines(t *testing.T) {
	path := writeConf(t, "rename.conf", "port 0\nrename-command CONFIG xconfig\nrename-command flushall \"\"\nmaxmemory 1mb\n")
	var cfg Config
	if _, err := LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false // a free port
	c := dial(t, RunT(t, WithConfig(func(cf *Config) { *cf = cfg })).Addr())
	if got := c.do("xconfig", "set", "maxmemory", "2mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("xconfig", "rewrite"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	data, _ := os.ReadFile(path)
	if got := string(data); !strings.HasPrefix(got, "port 0\nrename-command CONFIG xconfig\nrename-command flushall \"\"\nmaxmemory 2mb\n") {
		t.Errorf("rewritten:\n%s", got)
	}
	var again Config
	if _, err := LoadConfigFile(path, &again); err != nil || !reflect.DeepEqual(again.RenameCommands, cfg.RenameCommands) {
		t.Errorf("read back: %q, %v", again.RenameCommands, err)
	}
}

// A renamed container's HELP names it as it was sent, in upper case, as
// Redis's addReplyHelp prints argv[0].
func TestRenameCommand_HelpNamesTheNewName(t *testing.T) {
	srv := renamed(t, nil, [2]string{"config", "myconfig"}, [2]string{"client", "myclient"},
		[2]string{"slowlog", "myslowlog"}, [2]string{"pubsub", "mypubsub"}, [2]string{"function", "myfunction"})
	c := dial(t, srv.Addr())
	for _, name := range []string{"myconfig", "MyClient", "myslowlog", "mypubsub", "myfunction", "object", "script"} {
		got := c.do(name, "help")
		want := "+" + strings.ToUpper(name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
		if _, rest, _ := strings.Cut(got, "\r\n"); !strings.HasPrefix(rest, want) {
			t.Errorf("%s HELP: %.100q, want it to begin %q", name, got, want)
		}
	}
}

// A renamed container's name is put in upper case as Redis's sdstoupper
// does, ASCII letters only, in the wrong-arguments error: a byte that is
// no UTF-8 stays as it was sent.
func TestRenameCommand_OddBytesInErrors(t *testing.T) {
	srv := renamed(t, nil, [2]string{"slowlog", "sl\xffow"})
	c := dial(t, srv.Addr())
	doSteps(t, c, []wireStep{
		{[]string{"sl\xffow", "get", "x", "y"}, "-ERR unknown subcommand or wrong number of arguments for 'get'. Try SL\xffOW HELP.\r\n"},
		{[]string{"sl\xffow", "nosuch"}, "-ERR unknown subcommand 'nosuch'. Try SL\xffOW HELP.\r\n"},
	})
}

// A lock script whose command names rename-command gave to other
// commands runs in Lua, which calls those commands, as Redis does: the
// native program, which expects GET's and PEXPIRE's replies, declines
// (it panicked on TTL's integer, and on SET's status after SET ran).
func TestRenameCommand_LockScriptCallsTheRenamedCommands(t *testing.T) {
	const release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	const extend = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
	c := dial(t, renamed(t, nil, [2]string{"get", "myget"}, [2]string{"ttl", "get"}).Addr())
	doSteps(t, c, []wireStep{
		{[]string{"set", "lock", "tok"}, "+OK\r\n"},
		{[]string{"eval", release, "1", "lock", "tok"}, ":0\r\n"}, // GET is TTL: -1, not the token
		{[]string{"evalsha", "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4", "1", "lock", "tok"}, ":0\r\n"},
		{[]string{"myget", "lock"}, "$3\r\ntok\r\n"},
	})
	c = dial(t, renamed(t, nil, [2]string{"pexpire", "mypexpire"}, [2]string{"set", "pexpire"}).Addr())
	doSteps(t, c, []wireStep{
		{[]string{"pexpire", "lock", "tok"}, "+OK\r\n"},
		{[]string{"eval", extend, "1", "lock", "tok", "1000"}, "+OK\r\n"}, // PEXPIRE is SET
		{[]string{"get", "lock"}, "$4\r\n1000\r\n"},
		{[]string{"pttl", "lock"}, ":-1\r\n"},
	})
}

// COMMAND INFO and COMMAND DOCS find a command by a new name that is no
// ASCII (any byte, as Redis's dict compares names with strcasecmp), and
// fold ASCII letters only: the Kelvin sign is no "k".
func TestRenameCommand_InfoFindsOddNames(t *testing.T) {
	c := dial(t, renamed(t, nil, [2]string{"object", "obj\xe9"}, [2]string{"get", "G\xc3\x89T"}).Addr())
	for _, name := range []string{"obj\xe9", "OBJ\xe9", "obj\xe9|help", "G\xc3\x89T", "g\xc3\x89t"} {
		if got := c.do("command", "info", name); !strings.HasPrefix(got, "*1\r\n*10\r\n") {
			t.Errorf("COMMAND INFO %q: %.60q, want the command", name, got)
		}
		if got := c.do("command", "docs", name); !strings.HasPrefix(got, "*2\r\n") {
			t.Errorf("COMMAND DOCS %q: %.60q, want the command", name, got)
		}
	}
	doSteps(t, c, []wireStep{
		{[]string{"command", "info", "g\xc3\xa9t"}, "*1\r\n$-1\r\n"},
		{[]string{"command", "info", "\u212aeys"}, "*1\r\n$-1\r\n"},
		{[]string{"command", "docs", "\u212aeys"}, "*0\r\n"},
	})
}
