package server

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// getReply is CONFIG GET's raw reply for one parameter.
func getReply(name, value string) string {
	return "*2\r\n$" + strconv.Itoa(len(name)) + "\r\n" + name + "\r\n$" + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n"
}

// setErr is CONFIG SET's raw error reply.
func setErr(name, reason string) string {
	return "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason + "\r\n"
}

// configGet runs CONFIG GET pattern and returns the parameters it lists.
func configGet(t *testing.T, c *rawClient, pattern string) map[string]string {
	t.Helper()
	raw := c.do("CONFIG", "GET", pattern)
	rd := bufio.NewReader(strings.NewReader(raw))
	line, _ := rd.ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if line[0] != '*' || err != nil {
		t.Fatalf("CONFIG GET %s: %q", pattern, raw)
	}
	bulk := func() string {
		head, _ := rd.ReadString('\n')
		size, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			t.Fatalf("CONFIG GET %s: %q", pattern, raw)
		}
		return string(b[:size])
	}
	out := map[string]string{}
	for i := 0; i < n/2; i++ {
		k := bulk()
		out[k] = bulk()
	}
	return out
}

// Each kind of parameter reads its words as Redis does, with Redis's
// error texts, and keeps the value as Redis's CONFIG GET writes it.
func TestParams_ParseAsRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		words []string
		want  string // the value after, or the reason it is refused
	}{
		{"hz", []string{"50"}, "50"},
		{"hz", []string{"1000"}, "500"}, // held between 1 and 500
		{"hz", []string{"0"}, "1"},
		{"hz", []string{"-1"}, "argument must be between 0 and 2147483647 inclusive"},
		{"hz", []string{"05"}, "argument couldn't be parsed into an integer"},
		{"hz", []string{"1", "2"}, "wrong number of arguments"},
		{"tcp-keepalive", []string{"60"}, "60"},
		{"io-threads", []string{"129"}, "argument must be between 1 and 128 inclusive"},
		{"databases", []string{"0"}, "argument must be between 1 and 2147483647 inclusive"},
		{"databases", []string{"4"}, "4"},
		{"rdb-key-save-delay", []string{"-2147483648"}, "-2147483648"},
		{"socket-mark-id", []string{"4294967296"}, "argument must be between 0 and 4294967295 inclusive"},
		{"socket-mark-id", []string{"-1"}, "argument must be between 0 and 4294967295 inclusive"},
		{"unixsocketperm", []string{"0700"}, "700"},
		{"unixsocketperm", []string{"1000"}, "argument must be between 0 and 777 inclusive"},
		{"unixsocketperm", []string{"8"}, "argument couldn't be parsed as an octal number"},
		{"unixsocketperm", []string{""}, "0"}, // strtoll takes "" as 0
		{"repl-backlog-size", []string{"2mb"}, "2097152"},
		{"repl-backlog-size", []string{"0"}, "argument must be between 1 and 9223372036854775807 inclusive"},
		{"repl-backlog-size", []string{"5"}, "5"},
		{"repl-backlog-size", []string{"1.5mb"}, "argument must be a memory value"},
		{"cluster-link-sendbuf-limit", []string{"18446744073709551615"}, "18446744073709551615"},
		{"active-defrag-ignore-bytes", []string{"18446744073709551615"}, "argument must be between 1 and 9223372036854775807 inclusive"},
		{"maxmemory-clients", []string{"10%"}, "10%"},
		{"maxmemory-clients", []string{"1kb"}, "1024"},
		{"maxmemory-clients", []string{"101%"}, "percentage argument must be less or equal to 100"},
		{"maxmemory-clients", []string{"-1"}, "argument must be a memory or percent value"},
		{"maxmemory-clients", []string{"18446744073709551615"}, "1%"}, // -1 as ssize_t: Redis's quirk
		{"lazyfree-lazy-eviction", []string{"YES"}, "yes"},
		{"lazyfree-lazy-eviction", []string{"maybe"}, "argument must be 'yes' or 'no'"},
		{"activedefrag", []string{"no"}, "no"},
		{"activedefrag", []string{"yes"}, "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"},
		{"appendfsync", []string{"ALWAYS"}, "always"},
		{"appendfsync", []string{"sometimes"}, "argument(s) must be one of the following: everysec, always, no"},
		{"oom-score-adj", []string{"relative"}, "yes"}, // its first name
		{"repl-diskless-load", []string{"SWAPDB"}, "swapdb"},
		{"repl-diskless-load", []string{"\u017fwapdb"}, "argument(s) must be one of the following: disabled, on-empty-db, swapdb"}, // strcasecmp folds ASCII only
		{"shutdown-on-sigint", []string{"now save"}, "save now"},
		{"shutdown-on-sigint", []string{"default", "now"}, "now"},
		{"shutdown-on-sigint", []string{"save nosave"}, "shutdown options SAVE and NOSAVE can't be used simultaneously"},
		{"shutdown-on-sigint", []string{""}, "argument(s) must be one of the following: default, save, nosave, now, force"},
		{"dbfilename", []string{"a/b.rdb"}, "dbfilename can't be a path, just a filename"},
		{"dbfilename", []string{""}, ""},
		{"appendfilename", []string{""}, "appendfilename can't be empty"},
		{"appenddirname", []string{`a\b`}, "appenddirname can't be a path, just a dirname"},
		{"cluster-announce-hostname", []string{"a_b"}, "Hostnames may only contain alphanumeric characters, hyphens or dots"},
		{"cluster-announce-hostname", []string{strings.Repeat("a", 256)}, "Hostnames must be less than 256 characters"},
		{"cluster-announce-hostname", []string{"node-1.example"}, "node-1.example"},
		{"proc-title-template", []string{"{title}"}, "template format is invalid or contains unknown variables"},
		{"proc-title-template", []string{"{title} {server-mode}"}, "template format is invalid or contains unknown variables"},
		{"proc-title-template", []string{"{nosuch} x"}, "template format is invalid or contains unknown variables"},
		{"proc-title-template", []string{"x {title"}, "template format is invalid or contains unknown variables"},
		{"proc-title-template", []string{"x {"}, "template format is invalid or contains unknown variables"},
		{"proc-title-template", []string{"{title} {port}"}, "{title} {port}"},
		{"proc-title-template", []string{"{{"}, "{{"},
		{"masteruser", []string{"a\x00b"}, "a"},      // a C string
		{"masterauth", []string{"a\x00b"}, "a\x00b"}, // an sds
		{"oom-score-adj-values", []string{"+1 -2 3"}, "1 -2 3"},
		{"oom-score-adj-values", []string{"1", "2"}, "wrong number of arguments"},
		{"oom-score-adj-values", []string{"1 2 2001"}, "Invalid oom-score-adj-values, elements must be between -2000 and 2000."},
		{"oom-score-adj-values", []string{"1 2 x"}, "Invalid oom-score-adj-values, elements must be between -2000 and 2000."},
		{"latency-tracking-info-percentiles", []string{"1 2.5 99.999999 100"}, "1 2.5 99.999999 100"},
		{"latency-tracking-info-percentiles", []string{"1e2 0x10 99.9999999"}, "100 16 100"},
		{"latency-tracking-info-percentiles", []string{""}, ""},
		{"latency-tracking-info-percentiles", []string{"101"}, "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"},
		{"latency-tracking-info-percentiles", []string{"inf"}, "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"},
		{"latency-tracking-info-percentiles", []string{"nan"}, "Invalid latency-tracking-info-percentiles parameters"},
		{"latency-tracking-info-percentiles", []string{"1e400"}, "Invalid latency-tracking-info-percentiles parameters"},
		{"latency-tracking-info-percentiles", []string{"1e-400"}, "Invalid latency-tracking-info-percentiles parameters"},
		{"latency-tracking-info-percentiles", []string{"5x"}, "Invalid latency-tracking-info-percentiles parameters"},
		{"slave-priority", []string{"5"}, "5"},
		{"busy-reply-threshold", []string{"9223372036854775807"}, "9223372036854775807"}, // past a Duration
		{"lua-time-limit", []string{"9223372036854"}, "9223372036854"},
		{"save", []string{"3600 1 300 100"}, ""}, // checked, and nothing saved
		{"save", []string{"3600"}, "Invalid save parameters"},
		{"save", []string{"0 1"}, "Invalid save parameters"},
		{"save", []string{"1 -1"}, "Invalid save parameters"},
		{"appendonly", []string{"maybe"}, "argument must be 'yes' or 'no'"},
		{"appendonly", []string{"yes"}, "no"},
		{"latency-monitor-threshold", []string{"-1"}, "argument must be between 0 and 9223372036854775807 inclusive"},
		{"latency-tracking", []string{"NO"}, "no"},
		{"latency-tracking", []string{"maybe"}, "argument must be 'yes' or 'no'"},
		{"latency-tracking-info-percentiles", []string{"0 50.5"}, "0 50.5"},
		{"dir", []string{"/"}, cwd()},
		{"dir", []string{"/nonexistent"}, "No such file or directory"},
		{"enable-protected-configs", []string{"LOCAL"}, "local"},
		{"list-max-ziplist-entries", []string{"1", "2"}, "Bad directive or wrong number of arguments"},
	} {
		var cfg Config
		got := ""
		if _, err := ApplyDirective(&cfg, tc.name, tc.words...); err != nil {
			got = err.(*ConfigError).Reason
		} else {
			got = directives[tc.name].get(&cfg)
		}
		if got != tc.want {
			t.Errorf("%s %q: got %q, want %q", tc.name, tc.words, got, tc.want)
		}
	}
}

func TestCatRepr_AsSdscatrepr(t *testing.T) {
	if got, want := catRepr("a\"b\\c\n\r\t\a\b\x01\xff "), `"a\"b\\c\n\r\t\a\b\x01\xff "`; got != want {
		t.Fatalf("catRepr = %s, want %s", got, want)
	}
}

// readRedisConfig reads testdata/redis70-config.txt: Redis's parameters,
// their defaults, and which are hidden.
func readRedisConfig(t *testing.T) (values map[string]string, hidden map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "redis70-config.txt"))
	if err != nil {
		t.Fatal(err)
	}
	values, hidden = map[string]string{}, map[string]bool{}
	inHidden := false
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "# hidden" {
			inHidden = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		values[name] = value
		hidden[name] = inHidden
	}
	return values, hidden
}

// tumblerDefaults are the parameters whose default in tumbler is not
// Redis's, and why.
var tumblerDefaults = map[string]string{
	"port": "the test server's port",
	"bind": "tumbler listens on 127.0.0.1 by default, Redis on * -::* (protected mode)",
	"dir":  "the working directory, in either",
	"save": "tumbler keeps no data on disk",
}

// Every Redis 7.0 parameter is a CONFIG parameter with Redis's default
// (but for tumblerDefaults), the hidden ones only when named; CONFIG GET *
// lists Redis's others and tumbler's own.
func TestParams_RedisDefaults(t *testing.T) {
	redis, hidden := readRedisConfig(t)
	if len(redis) < 190 {
		t.Fatalf("only %d parameters in testdata", len(redis))
	}
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "" }))
	c := dial(t, srv.Addr())
	all := configGet(t, c, "*")
	for name, want := range redis {
		_, listed := all[name]
		if listed == hidden[name] {
			t.Errorf("%s: listed by CONFIG GET * %v, hidden %v", name, listed, hidden[name])
		}
		got := configGet(t, c, name)
		if _, ok := got[name]; !ok {
			t.Errorf("%s: not a CONFIG parameter", name)
			continue
		}
		if got[name] != want && tumblerDefaults[name] == "" {
			t.Errorf("%s: %q, Redis's default is %q", name, got[name], want)
		}
	}
	var own []string
	for name := range all {
		if _, ok := redis[name]; !ok {
			own = append(own, name)
		}
	}
	sort.Strings(own)
	if strings.Join(own, " ") != "event-loop lua-memory-limit metrics-addr restart-delay" {
		t.Errorf("tumbler's own parameters: %q", own)
	}
	if all["dir"] != cwd() || all["save"] != "" || all["databases"] != "16" || all["latency-tracking"] != "yes" {
		t.Errorf("dir %q save %q databases %q latency-tracking %q", all["dir"], all["save"], all["databases"], all["latency-tracking"])
	}
}

// CONFIG SET and GET of the parameters tumbler does not act on: Redis's
// checks, immutable, protected, hidden and alias names; the fixed ones
// keep tumbler's value.
func TestParams_ConfigSetGet(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	before := srv.live()
	doSteps(t, c, []wireStep{
		{[]string{"CONFIG", "GET", "hz"}, getReply("hz", "10")},
		{[]string{"CONFIG", "SET", "hz", "50", "tcp-keepalive", "60", "repl-backlog-size", "2mb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "hz"}, getReply("hz", "50")},
		{[]string{"CONFIG", "GET", "tcp-keepalive"}, getReply("tcp-keepalive", "60")},
		{[]string{"CONFIG", "GET", "repl-backlog-size"}, getReply("repl-backlog-size", "2097152")},
		// all or nothing
		{[]string{"CONFIG", "SET", "hz", "20", "tcp-keepalive", "x"}, setErr("tcp-keepalive", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "GET", "hz"}, getReply("hz", "50")},
		{[]string{"CONFIG", "SET", "hz", "1000"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "hz"}, getReply("hz", "500")},
		// aliases share the value
		{[]string{"CONFIG", "SET", "slave-priority", "7"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "replica-priority"}, getReply("replica-priority", "7")},
		{[]string{"CONFIG", "GET", "slave-priority"}, getReply("slave-priority", "7")},
		// multi-word values, split at each space
		{[]string{"CONFIG", "SET", "shutdown-on-sigterm", "now force"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "shutdown-on-sigterm"}, getReply("shutdown-on-sigterm", "now force")},
		{[]string{"CONFIG", "SET", "oom-score-adj-values", "0  200 800"}, setErr("oom-score-adj-values", "wrong number of arguments")},
		{[]string{"CONFIG", "SET", "latency-tracking-info-percentiles", ""}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "latency-tracking-info-percentiles"}, getReply("latency-tracking-info-percentiles", "")},
		// immutable and protected
		{[]string{"CONFIG", "SET", "tcp-backlog", "100"}, setErr("tcp-backlog", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "databases", "1"}, setErr("databases", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "replicaof", "no one"}, setErr("replicaof", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "hz", "bad", "dbfilename", "x.rdb"}, setErr("dbfilename", "can't set protected config")},
		{[]string{"CONFIG", "SET", "dir", "/tmp"}, setErr("dir", "can't set protected config")},
		// hidden: only by name
		{[]string{"CONFIG", "GET", "watchdog-*"}, "*0\r\n"},
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "0")},
		{[]string{"CONFIG", "SET", "watchdog-period", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "100")},
		// acted on (the latency monitor: engine/latencymon.go)
		{[]string{"CONFIG", "SET", "latency-monitor-threshold", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "latency-monitor-threshold"}, getReply("latency-monitor-threshold", "100")},
		{[]string{"CONFIG", "SET", "latency-monitor-threshold", "0"}, "+OK\r\n"},
		// fixed: tumbler's value only
		{[]string{"CONFIG", "SET", "save", ""}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "save", "60 1"}, setErr("save", `tumbler keeps no data on disk: only save "" is supported`)},
		{[]string{"CONFIG", "SET", "save", "60"}, setErr("save", "Invalid save parameters")},
		{[]string{"CONFIG", "SET", "appendonly", "NO"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "appendonly", "yes"}, setErr("appendonly", "tumbler keeps no data on disk: only appendonly no is supported")},
		{[]string{"CONFIG", "GET", "save"}, getReply("save", "")},
		{[]string{"CONFIG", "GET", "appendonly"}, getReply("appendonly", "no")},
		{[]string{"CONFIG", "GET", "replicaof"}, getReply("replicaof", "")},
	})
	// CONFIG SET installed a copy: the settings read before are unchanged.
	if v := before.param("hz", "10"); v != "10" {
		t.Fatalf("a CONFIG SET changed the earlier settings: hz %q", v)
	}
	if v := srv.live().param("hz", "10"); v != "500" {
		t.Fatalf("live hz %q", v)
	}
}

// CONFIG SET adjusts repl-backlog-size and watchdog-period as Redis's
// apply functions do, in the order of the pairs: the watchdog's floor is
// two ticks of the hz in force, the new one only if hz came first.
func TestParams_ApplyInPairsOrder(t *testing.T) {
	c := dial(t, RunT(t).Addr())
	doSteps(t, c, []wireStep{
		{[]string{"CONFIG", "SET", "repl-backlog-size", "5"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "repl-backlog-size"}, getReply("repl-backlog-size", "16384")},
		{[]string{"CONFIG", "SET", "watchdog-period", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "200")},
		{[]string{"CONFIG", "SET", "watchdog-period", "0"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "watchdog-period", "100", "hz", "1"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "200")},
		{[]string{"CONFIG", "SET", "watchdog-period", "0", "hz", "10"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "hz", "1", "watchdog-period", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "2000")},
		{[]string{"CONFIG", "SET", "watchdog-period", "2000"}, "+OK\r\n"}, // unchanged
		{[]string{"CONFIG", "GET", "watchdog-period"}, getReply("watchdog-period", "2000")},
	})
}

// enable-protected-configs lets CONFIG SET change dbfilename (and ask for
// dir, which stays the working directory): yes for every client, local
// for loopback ones.
func TestParams_ProtectedConfigs(t *testing.T) {
	for _, mode := range []string{"yes", "local"} {
		srv := RunT(t, WithConfig(func(c *Config) {
			if _, err := ApplyDirective(c, "enable-protected-configs", mode); err != nil {
				t.Fatal(err)
			}
		}))
		c := dial(t, srv.Addr())
		doSteps(t, c, []wireStep{
			{[]string{"CONFIG", "GET", "enable-protected-configs"}, getReply("enable-protected-configs", mode)},
			{[]string{"CONFIG", "SET", "dbfilename", "x.rdb"}, "+OK\r\n"},
			{[]string{"CONFIG", "GET", "dbfilename"}, getReply("dbfilename", "x.rdb")},
			{[]string{"CONFIG", "SET", "dbfilename", "a/x.rdb"}, setErr("dbfilename", "dbfilename can't be a path, just a filename")},
			{[]string{"CONFIG", "SET", "dir", "."}, "+OK\r\n"},
			{[]string{"CONFIG", "SET", "dir", "/"}, setErr("dir", "tumbler writes no data files and never changes directory: only dir "+cwd()+" is supported")},
			{[]string{"CONFIG", "SET", "enable-protected-configs", "no"}, setErr("enable-protected-configs", "can't set immutable config")},
		})
		srv.prod.isLocal = func(net.Addr) bool { return false }
		want := "+OK\r\n"
		if mode == "local" {
			want = setErr("dbfilename", "can't set protected config")
		}
		if got := c.do("CONFIG", "SET", "dbfilename", "y.rdb"); got != want {
			t.Fatalf("%s, remote client: %q, want %q", mode, got, want)
		}
	}
}

// CONFIG REWRITE writes the parameters as Redis does: in place, under
// the new name for an alias, strings quoted, memory values in units, a
// string without value left out, the others appended when not their
// default. The fixed ones' lines stay as they were.
func TestParams_Rewrite(t *testing.T) {
	path := writeConf(t, "params.conf", "port 0\nhz 10\nmasterauth x\nsave 60 1\nslave-priority 5\nappendonly yes\n")
	var cfg Config
	if _, err := LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false
	srv := RunT(t, WithConfig(func(c *Config) { *c = cfg }))
	c := dial(t, srv.Addr())
	if got := c.do("CONFIG", "SET", "hz", "50", "masterauth", "", "tcp-keepalive", "60", "oom-score-adj", "relative",
		"maxmemory-clients", "10%", "repl-backlog-size", "2mb", "shutdown-on-sigterm", "now force",
		"masteruser", "a\"b", "latency-tracking-info-percentiles", "", "unixsocketperm", "0"); got != setErr("unixsocketperm", "can't set immutable config") {
		t.Fatal(got)
	}
	if got := c.do("CONFIG", "SET", "hz", "50", "masterauth", "", "tcp-keepalive", "60", "oom-score-adj", "relative",
		"maxmemory-clients", "10%", "repl-backlog-size", "2mb", "shutdown-on-sigterm", "now force",
		"masteruser", "a\"b", "latency-tracking-info-percentiles", ""); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	data, _ := os.ReadFile(path)
	want := "port 0\nhz 50\n\nsave 60 1\nreplica-priority 5\nappendonly yes\n\n" + rewriteSignature + "\nbind 127.0.0.1\n" + // masterauth's line blanked
		"latency-tracking-info-percentiles \"\"\nmasteruser \"a\\\"b\"\nmaxmemory-clients 10%\n" +
		"oom-score-adj yes\nrepl-backlog-size 2mb\nshutdown-on-sigterm now force\ntcp-keepalive 60\n" +
		"user default on nopass ~* &* +@all\n" // the live users, as Redis always writes them
	if string(data) != want {
		t.Fatalf("rewritten file\n%s\nwant\n%s", data, want)
	}
	var back Config
	if _, err := LoadConfigFile(path, &back); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"hz": "50", "masterauth": "", "masteruser": `a"b`, "maxmemory-clients": "10%",
		"repl-backlog-size": "2097152", "latency-tracking-info-percentiles": "", "replica-priority": "5", "oom-score-adj": "yes"} {
		if got := directives[name].get(&back); got != v {
			t.Errorf("reloaded %s = %q, want %q", name, got, v)
		}
	}
}

// Config.Path reads a relative path against dir, as Redis (which changes
// to dir) opens it; absolute paths, and any path without dir, as given.
func TestConfig_PathRelativeToDir(t *testing.T) {
	var c Config
	dir := t.TempDir() // dir must exist, as for Redis's chdir
	if _, err := ApplyDirective(&c, "dir", dir); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"users.acl": dir + "/users.acl", "tls/a.crt": dir + "/tls/a.crt", "/etc/x.acl": "/etc/x.acl", "": ""} {
		if got := c.Path(p); got != want {
			t.Errorf("Path(%q) = %q, want %q", p, got, want)
		}
	}
	if got := (&Config{}).Path("users.acl"); got != "users.acl" {
		t.Errorf("without dir: %q", got)
	}
}
