package diff

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// renames are rename-command lines of the kind hardening guides give,
// and some that reach further: a removed command, renamed ones, a name
// longer than 32 bytes, a renamed command renamed again, and a Redis
// command tumbler does not serve.
var renames = [][2]string{
	{"CONFIG", "xconfig"}, {"flushall", ""}, {"FLUSHDB", ""}, {"exec", "myexec"},
	{"ping", "b840fc02d524045429941cc15f59e41cb7be6c52b840fc02"},
	{"del", "mydel"}, {"client", "myclient"}, {"auth", "myauth"},
	{"script", "s1"}, {"s1", "myscript"}, {"xadd", ""},
}

// renamedCommands run on one connection of each server; every reply must
// be Redis's, byte for byte.
var renamedCommands = [][]string{
	{"flushall"}, {"flushdb"}, {"FlushAll", "async"},
	{"config", "get", "maxmemory"},
	{"xconfig", "get", "maxmemory"}, {"XCONFIG", "GET", "maxmemory"},
	{"xconfig"}, {"xconfig", "nosuch"}, {"xconfig", "set", "maxmemory"},
	{"b840fc02d524045429941cc15f59e41cb7be6c52b840fc02"},
	{"B840FC02d524045429941CC15F59E41CB7BE6C52B840FC02", "hi"},
	{"b840fc02d524045429941cc15f59e41cb7be6c52b840fc02", "a", "b"},
	{"ping"},
	{"myclient", "nosuch"}, {"myclient", "unblock"}, {"myclient", "unblock", "1", "timeout", "x"},
	{"myclient", "getname"}, {"client", "getname"},
	{"myauth", "x"}, {"auth", "x"}, {"myauth", "a", "b", "c"},
	{"s1", "flush"}, {"script", "flush"}, {"myscript", "load", "return 1"}, {"myscript", "kill"},
	{"xconfig", "help"}, {"MyScript", "help"}, // HELP names the container as sent
	{"xadd", "s", "*", "f", "v"},
	// transactions: an unknown command queued, EXEC by its old name, a
	// renamed EXEC with the wrong arity
	{"multi"}, {"flushall"}, {"set", "a", "1"}, {"myexec"},
	{"multi"}, {"set", "a", "1"}, {"exec"}, {"myexec"},
	{"multi"}, {"set", "a", "2"}, {"myexec"},
	{"multi"}, {"myexec", "x"}, {"myexec"},
	// scripts: new names work, old ones are unknown, the lock scripts too
	{"set", "lock", "tok"},
	{"eval", "return redis.call('flushall')", "0"},
	{"eval", "return redis.call('xconfig', 'get', 'port')", "0"},
	{"eval", "return redis.pcall('ping')", "0"},
	{"eval", "return redis.call('B840FC02D524045429941CC15F59E41CB7BE6C52B840FC02')", "0"},
	{"eval", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", "1", "lock", "tok"},
	{"evalsha", "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4", "1", "lock", "tok"},
	{"get", "lock"},
	{"eval", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('mydel', KEYS[1]) else return 0 end", "1", "lock", "tok"},
	{"get", "lock"},
	{"set", "lock", "tok"},
	{"eval", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end", "1", "lock", "tok", "100000"},
	// COMMAND: a renamed command shows its own name; a removed one is gone
	{"command", "info", "myexec", "exec", "flushall", "b840fc02d524045429941cc15f59e41cb7be6c52b840fc02"},
	{"command", "getkeys", "mydel", "a", "b"},
	{"command", "getkeys", "del", "a"},
	{"command", "list", "filterby", "pattern", "flush*"},
	{"command", "list", "filterby", "pattern", "my*"},
	// ACL: rules name commands by their own names
	{"acl", "setuser", "u", "on", "+xconfig"},
	{"acl", "setuser", "u", "on", "nopass", "+config", "+flushall", "+ping", "~*"},
	{"acl", "dryrun", "u", "xconfig", "get", "port"},
	{"acl", "dryrun", "u", "config", "get", "port"},
	{"acl", "dryrun", "u", "flushall"},
	{"acl", "dryrun", "u", "b840fc02d524045429941cc15f59e41cb7be6c52b840fc02"},
	{"acl", "dryrun", "u", "mydel", "k"},
	{"acl", "cat", "keyspace"},
}

// rename-command against redis-server: the same lines give the same
// replies, INFO commandstats counts under the same (own) names, and
// MONITOR and the slow log hide a renamed AUTH's arguments as AUTH's.
func TestRenameCommandDiff(t *testing.T) {
	var conf strings.Builder
	for _, r := range renames {
		conf.WriteString("rename-command " + r[0] + " " + server.QuoteConfigArg(r[1]) + "\n")
	}
	conf.WriteString("slowlog-log-slower-than 0\n")
	path := filepath.Join(t.TempDir(), "rename.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := dial(startRedis73(t, path))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	var cfg server.Config
	if _, err := server.LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	tumbler := server.RunT(t, server.WithConfig(func(c *server.Config) { *c = cfg })).Addr()
	tc, err := dial(tumbler)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.close()
	unordered := func(args []string) bool {
		return strings.EqualFold(args[0], "acl") && strings.EqualFold(args[1], "cat") ||
			strings.EqualFold(args[0], "command") && strings.EqualFold(args[1], "list")
	}
	for _, args := range renamedCommands {
		r, g := do(t, rc, args...), do(t, tc, args...)
		if unordered(args) {
			r, g = []byte(sortedLines(r)), []byte(sortedLines(g))
		}
		if string(r) != string(g) {
			t.Errorf("%q:\n redis:   %q\n tumbler: %q", args, r, g)
		}
	}
	// the commands counted by their own names (calls, rejections, failures)
	stats := func(c *conn) string {
		reply := do(t, c, "info", "commandstats")
		_, body, _ := strings.Cut(string(reply), "\r\n") // the length differs with the times
		return sortedLines(cmdstatUsec.ReplaceAll([]byte(body), nil))
	}
	if r, g := stats(rc), stats(tc); r != g {
		t.Errorf("INFO commandstats:\n redis:\n%s\n tumbler:\n%s", r, g)
	}
	// a renamed AUTH's arguments stay hidden
	for _, c := range []*conn{rc, tc} {
		do(t, c, "slowlog", "reset")
	}
	monitored := map[*conn]string{}
	for _, c := range []*conn{rc, tc} {
		m, err := dial(c.c.RemoteAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer m.close()
		if got := string(do(t, m, "monitor")); got != "+OK\r\n" {
			t.Fatalf("MONITOR: %q", got)
		}
		do(t, c, "myauth", "secretpw")
		do(t, c, "myauth", "user", "secretpw")
		do(t, c, "hello", "2", "auth", "default", "secretpw")
		do(t, c, "echo", "end")
		rd := bufio.NewReader(m.c)
		m.c.SetDeadline(time.Now().Add(ioTimeout))
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the monitor: %v", err)
			}
			line = monitorMask.ReplaceAllString(line, "")
			if strings.Contains(line, `"end"`) {
				break
			}
			monitored[c] += line
		}
	}
	if r, g := monitored[rc], monitored[tc]; r != g || strings.Count(r, "(redacted)") != 5 {
		t.Errorf("MONITOR:\n redis:   %q\n tumbler: %q", r, g)
	}
	slowlog := func(c *conn) string {
		var args []string
		for _, a := range bulkStrings(do(t, c, "slowlog", "get", "3")) {
			if !strings.Contains(a, "127.0.0.1:") {
				args = append(args, a)
			}
		}
		return strings.Join(args, " ")
	}
	if r, g := slowlog(rc), slowlog(tc); r != g || strings.Count(r, "(redacted)") != 2 { // HELLO (a failed AUTH is not logged)
		t.Errorf("SLOWLOG GET:\n redis:   %q\n tumbler: %q", r, g)
	}
}

var cmdstatUsec = regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)

// sortedLines is a reply's lines, sorted: for replies whose order is
// Redis's hash table's (ACL CAT, COMMAND LIST, INFO commandstats).
func sortedLines(b []byte) string {
	lines := strings.Split(string(b), "\r\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
