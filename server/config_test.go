package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/luavm"
)

func TestSplitArgs_AsSdssplitargs(t *testing.T) {
	cases := []struct {
		in   string
		want []string // nil with ok=false: an error
		ok   bool
	}{
		{"port 6379", []string{"port", "6379"}, true},
		{"  a \t b  ", []string{"a", "b"}, true},
		{`requirepass "a b"`, []string{"requirepass", "a b"}, true},
		{`x "a\nb\r\t\b\a\"\\\q"`, []string{"x", "a\nb\r\t\b\a\"\\q"}, true},
		{`x "\x41\x6a\x7"`, []string{"x", "Ajx7"}, true},
		{`x 'it\'s' 'a\nb'`, []string{"x", "it's", `a\nb`}, true},
		{`x ""`, []string{"x", ""}, true},
		{`x ab"cd"`, []string{"x", "abcd"}, true},
		{`x "ab"cd`, nil, false},
		{`x 'ab'cd`, nil, false},
		{`x "abc`, nil, false},
		{`x 'abc`, nil, false},
		{"x\va", []string{"x\va"}, true}, // \v separates only between words
		{"", nil, true},
	}
	for _, c := range cases {
		got, ok := splitArgs(c.in)
		if ok != c.ok || (ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestMemToULL_AsRedis(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"100", 100, true}, {"100b", 100, true},
		{"1k", 1000, true}, {"1kb", 1024, true}, {"1KB", 1024, true}, {"1m", 1000000, true},
		{"1mb", 1 << 20, true}, {"1g", 1000000000, true}, {"1gb", 1 << 30, true}, {"2Gb", 2 << 30, true},
		{"-1", 0, false}, {"1.5gb", 0, false}, {"1tb", 0, false}, {"abc", 0, false}, {"+1", 0, false},
		{"99999999999999999999", ^uint64(0), true},
	}
	for _, c := range cases {
		got, ok := memToULL(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("memToULL(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func writeConf(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runConfFile writes text to a config file called name, loads it and
// runs a server of it on the test's own port, until the test ends. It
// returns the server and the file's path.
func runConfFile(t *testing.T, name, text string) (*Server, string) {
	t.Helper()
	path := writeConf(t, name, text)
	var cfg Config
	if _, err := LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false // the test's own port
	return RunT(t, WithConfig(func(c *Config) { *c = cfg })), path
}

// CONFIG REWRITE writes memory values as Redis's
// rewriteConfigFormatMemory: the largest unit that divides them.
func TestFormatMemory_AsRedisRewrite(t *testing.T) {
	for v, want := range map[int64]string{
		0: "0", 64: "64", 1000: "1000", 1024: "1kb", 1536: "1536", 3 << 20: "3mb",
		1<<30 + 1<<20: "1025mb", 2 << 30: "2gb", 512 << 20: "512mb",
	} {
		if got := formatMemory(v); got != want {
			t.Errorf("formatMemory(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestLoadConfigFile_EveryDirective(t *testing.T) {
	path := writeConf(t, "tumbler.conf", `# a comment
   # an indented comment

PORT 7000
bind 0.0.0.0 -::1
requirepass "s3 cret"
user alice on >pw1 >pw2 ~* &* +@all
user bob off #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 allkeys allcommands
user carol on nopass ~* +@all
protected-mode no
timeout 30
maxclients 50
maxmemory 100mb
maxmemory-policy noeviction
proto-max-bulk-len 2mb
client-query-buffer-limit 64mb
client-output-buffer-limit normal 1mb 512kb 10
client-output-buffer-limit pubsub 64mb 16mb 90
lua-time-limit 100
busy-reply-threshold 250
slowlog-log-slower-than 0
slowlog-max-len 5
tls-port 7443
tls-cert-file /c.pem
tls-key-file /k.pem
tls-ca-cert-file /ca.pem
tls-ca-cert-dir /cadir
tls-auth-clients optional
tls-protocols "TLSv1.2 TLSv1.3"
loglevel warning
logfile /tmp/t.log
metrics-addr 127.0.0.1:9121
restart-delay 1500
event-loop no
daemonize no
cluster-enabled no
hash-max-ziplist-entries 100
hash-max-listpack-value 1kb
set-max-intset-entries 5
zset-max-listpack-entries 7
zset-max-ziplist-value 8
list-max-ziplist-size -3
list-compress-depth 1
`)
	var cfg Config
	warnings, err := LoadConfigFile(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	want := Config{
		Addr: "0.0.0.0:7000", ExtraAddrs: []string{"-::1"}, RequirePass: "s3 cret",
		Users: []User{
			{Name: "alice", Rules: []string{"on", ">pw1", ">pw2", "~*", "&*", "+@all"}},
			{Name: "bob", Rules: []string{"off", "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8", "allkeys", "allcommands"}},
			{Name: "carol", Rules: []string{"on", "nopass", "~*", "+@all"}},
		},
		NoProtectedMode: true, Timeout: 30 * time.Second, MaxClients: 50, MaxMemory: 100 << 20,
		ProtoMaxBulkLen: 2 << 20, ClientQueryBufferLimit: 64 << 20,
		OutputBufferLimits: OutputBufferLimits{
			Normal:  OutputBufferLimit{Hard: 1 << 20, Soft: 512 << 10, SoftSeconds: 10},
			Replica: DefaultOutputBufferLimits().Replica,
			PubSub:  OutputBufferLimit{Hard: 64 << 20, Soft: 16 << 20, SoftSeconds: 90},
		},
		LuaTimeLimit:         250 * time.Millisecond,
		SlowlogLogSlowerThan: ptr(int64(0)), SlowlogMaxLen: ptr(int64(5)),
		TLSAddr: ":7443", TLSCertFile: "/c.pem", TLSKeyFile: "/k.pem", TLSCACertFile: "/ca.pem",
		TLSCACertDir: "/cadir", TLSAuthClients: "optional", TLSProtocols: "TLSv1.2 TLSv1.3",
		LogLevel: "warning", LogFile: "/tmp/t.log", MetricsAddr: "127.0.0.1:9121",
		RestartDelay: 1500 * time.Millisecond, NoEventLoop: true, ConfigFile: path,
		Encodings: &engine.EncodingLimits{
			HashMaxListpackEntries: 100, HashMaxListpackValue: 1024, SetMaxIntsetEntries: 5,
			ZsetMaxListpackEntries: 7, ZsetMaxListpackValue: 8, ListMaxListpackSize: -3, ListCompressDepth: 1,
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config\n got %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigFile_ErrorsNameFileLineAndReason(t *testing.T) {
	cases := []struct{ line, reason string }{
		{"nosuchdirective 1", "Bad directive or wrong number of arguments"},
		{"port", "wrong number of arguments"},
		{"port 1 2", "wrong number of arguments"},
		{"port abc", "argument couldn't be parsed into an integer"},
		{"port 70000", "argument must be between 0 and 65535 inclusive"},
		{"timeout -1", "argument must be between 0 and 2147483647 inclusive"},
		{"maxclients 0", "argument must be between 1 and 4294967295 inclusive"},
		{"maxmemory lots", "argument must be a memory value"},
		{"maxmemory -1", "argument must be a memory value"},
		{"maxmemory-policy lru", "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"},
		{"maxmemory-policy allkeys-lru", "tumbler never evicts keys (they are locks): only noeviction is supported"},
		{"proto-max-bulk-len 1000", "argument must be between 1048576 and 9223372036854775807 inclusive"},
		{"client-query-buffer-limit 1kb", "argument must be between 1048576 and 9223372036854775807 inclusive"},
		{"client-output-buffer-limit normal 0 0", "Wrong number of arguments in buffer limit configuration."},
		{"client-output-buffer-limit master 0 0 0", "Invalid client class specified in buffer limit configuration."},
		{"client-output-buffer-limit normal 1x 0 0", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"client-output-buffer-limit normal 0 0 -1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"protected-mode maybe", "argument must be 'yes' or 'no'"},
		{"loglevel loud", "argument(s) must be one of the following: debug, verbose, notice, warning"},
		{"tls-auth-clients sometimes", "argument(s) must be one of the following: no, yes, optional"},
		{`requirepass "abc`, "Unbalanced quotes in configuration line"},
		{`requirepass "abc"def`, "Unbalanced quotes in configuration line"},
		{"user", "Bad directive or wrong number of arguments"},
		// Redis names the word at the bad rule's index counted from
		// "user" (argv[j] for rule j): kept, as redis-server prints it.
		{"user alice on #abc ~* +@all", "Error in user declaration 'alice': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"user alice on >x badrule ~*", "Error in user declaration 'on': Syntax error"},
		{"user alice on ~x* ~y %X~z", "Error in user declaration '~x*': Syntax error"},
		{"user alice allkeys ~x", "Error in user declaration 'alice': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{"replicaof 10.0.0.1 6379", "tumbler does not replicate"},
		{"slaveof 10.0.0.1 6379", "tumbler does not replicate"},
		{"cluster-enabled yes", "tumbler has no cluster mode"},
		{"rename-command CONFIG", "Bad directive or wrong number of arguments"},
		{"rename-command nosuch x", "No such command in rename-command"},
		{"loadmodule /x.so", "tumbler does not load modules"},
		{"mymodule.opt 1", "tumbler does not load modules, so it has no module configs"},
		{"daemonize perhaps", "argument must be 'yes' or 'no'"},
		{"restart-delay soon", "argument must be a duration (500ms, 2s) or a number of milliseconds"},
		{"include", "Bad directive or wrong number of arguments"},
	}
	for _, c := range cases {
		path := writeConf(t, "bad.conf", "port 7000\n# comment\n\n  "+c.line+"  \nport 7001\n")
		var cfg Config
		_, err := LoadConfigFile(path, &cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v, want a *ConfigError", c.line, err)
			continue
		}
		if ce.File != path || ce.Line != 4 || ce.Text != c.line || ce.Reason != c.reason {
			t.Errorf("%q: got %s:%d %q %q\nwant reason %q", c.line, ce.File, ce.Line, ce.Text, ce.Reason, c.reason)
		}
		want := "\n*** FATAL CONFIG FILE ERROR (tumbler 7.2.4) ***\nReading the configuration file " + path +
			", at line 4\n>>> '" + c.line + "'\n" + c.reason
		if err.Error() != want {
			t.Errorf("%q: message\n%s\nwant\n%s", c.line, err.Error(), want)
		}
	}
}

func TestLoadConfigFile_DuplicateUserAndMissingFile(t *testing.T) {
	path := writeConf(t, "u.conf", "user a on >x ~* +@all\nuser a on >y ~* +@all\n")
	var cfg Config
	_, err := LoadConfigFile(path, &cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Reason != "Error in user declaration 'a': Duplicate user found. A user can only be defined once in config files" {
		t.Fatalf("duplicate user: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "none.conf")
	_, err = LoadConfigFile(missing, &cfg)
	if !errors.As(err, &ce) || ce.Reason != "Fatal error, can't open config file '"+missing+"': No such file or directory" {
		t.Fatalf("missing file: %v", err)
	}
}

func TestLoadConfigFile_IncludeAndLaterLinesWin(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(inc, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(inc, "a.conf"), []byte("timeout 5\nmaxclients 7\n"), 0o600)
	os.WriteFile(filepath.Join(inc, "b.conf"), []byte("maxclients 8\n"), 0o600)
	main := filepath.Join(dir, "main.conf")
	os.WriteFile(main, []byte("maxclients 1\ninclude "+filepath.Join(inc, "*.conf")+"\ninclude "+filepath.Join(dir, "empty.d", "*.conf")+"\ntimeout 9\n"), 0o600)
	var cfg Config
	if _, err := LoadConfigFile(main, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxClients != 8 || cfg.Timeout != 9*time.Second {
		t.Fatalf("maxclients %d timeout %v; want 8 and 9s", cfg.MaxClients, cfg.Timeout)
	}
	// An error inside an included file names that file and its line.
	os.WriteFile(filepath.Join(inc, "b.conf"), []byte("\nmaxclients none\n"), 0o600)
	_, err := LoadConfigFile(main, &cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.File != filepath.Join(inc, "b.conf") || ce.Line != 2 {
		t.Fatalf("error in an included file: %v", err)
	}
	// An include loop stops.
	loop := filepath.Join(dir, "loop.conf")
	os.WriteFile(loop, []byte("include "+loop+"\n"), 0o600)
	if _, err := LoadConfigFile(loop, &cfg); !errors.As(err, &ce) || !strings.Contains(ce.Reason, "include nesting too deep") {
		t.Fatalf("include loop: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// wireStep is a command and the raw reply it must get.
type wireStep struct {
	cmd  []string
	want string
}

// doSteps sends each step's command in turn and stops the test at the
// first reply that differs.
func doSteps(t *testing.T, c *rawClient, steps []wireStep) {
	t.Helper()
	for _, st := range steps {
		if got := c.do(st.cmd...); got != st.want {
			t.Fatalf("%q = %q, want %q", st.cmd, got, st.want)
		}
	}
}

// The slow log's settings from Config take effect, and CONFIG SET
// changes them.
func TestConfig_SlowlogSettings(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.SlowlogLogSlowerThan, c.SlowlogMaxLen = ptr(int64(0)), ptr(int64(2))
	}))
	c := dial(t, srv.Addr())
	c.do("SLOWLOG", "RESET")
	for i := 0; i < 3; i++ {
		c.do("SET", "k", "v")
	}
	if got := c.do("SLOWLOG", "LEN"); got != ":2\r\n" {
		t.Fatalf("SLOWLOG LEN with every command logged, at most 2 = %q", got)
	}
	if got := c.do("CONFIG", "SET", "slowlog-log-slower-than", "-1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c.do("SLOWLOG", "RESET")
	c.do("SET", "k", "v")
	if got := c.do("SLOWLOG", "LEN"); got != ":0\r\n" {
		t.Fatalf("SLOWLOG LEN with the log off = %q", got)
	}
}

// Parameters tumbler does not act on are accepted; a value other than
// the default is a warning, and so is a value other than tumbler's for
// those that say what tumbler does (save, dir).
func TestLoadConfigFile_PersistenceDirectivesWarn(t *testing.T) {
	dir := t.TempDir() // an existing directory, as Redis's chdir needs
	path := writeConf(t, "p.conf", "save 3600 1 300 100\nappendonly no\nappendfsync everysec\ndbfilename dump.rdb\ndir "+dir+"\ndaemonize yes\ndatabases 16\nappendfsync always\nsave \"\"\nlist-max-ziplist-entries 5\n")
	var cfg Config
	warnings, err := LoadConfigFile(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		path + ":1: tumbler keeps no data on disk: 'save 3600 1 300 100' is ignored",
		path + ":5: tumbler writes no data files and never changes directory: 'dir " + dir + "' only says where relative paths (aclfile, logfile, pidfile, unixsocket, tls-*) are",
		path + ":8: 'appendfsync' is accepted but has no effect in tumbler (CONFIG GET reports it)",
		path + ":10: 'list-max-ziplist-entries' is not supported by tumbler and is ignored",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings\n got %q\nwant %q", warnings, want)
	}
	if !cfg.Daemonize { // (the binary daemonizes: cmd/tumbler)
		t.Fatal("daemonize yes not kept")
	}
}

// Redis's own sample config (Debian's /etc/redis/redis.conf when
// redis-server is installed) loads, with warnings for what tumbler
// ignores. It is only parsed: starting a server with it would write to
// its logfile.
func TestLoadConfigFile_RedisSampleConfig(t *testing.T) {
	const sample = "/etc/redis/redis.conf"
	if _, err := os.Stat(sample); err != nil {
		t.Skip("no " + sample)
	}
	var cfg Config
	warnings, err := LoadConfigFile(sample, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6379" || len(warnings) == 0 {
		t.Fatalf("addr %q, %d warnings", cfg.Addr, len(warnings))
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, sample+":") {
			t.Errorf("warning without file:line: %q", w)
		}
	}
}

func TestApplyDirective_FlagsLikeLines(t *testing.T) {
	var cfg Config
	if _, err := ApplyDirective(&cfg, "bind", "127.0.0.1 -::1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyDirective(&cfg, "client-output-buffer-limit", "normal 1mb 1mb 0 pubsub 0 0 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyDirective(&cfg, "Port", "0"); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6379" || !reflect.DeepEqual(cfg.ExtraAddrs, []string{"-::1"}) || !cfg.TLSOnly ||
		cfg.OutputBufferLimits.Normal.Hard != 1<<20 || cfg.OutputBufferLimits.PubSub != (OutputBufferLimit{}) {
		t.Fatalf("config %+v", cfg)
	}
	// A user given again replaces the earlier one (flags override the file).
	ApplyDirective(&cfg, "user", "alice", "on", ">a", "~*", "+@all")
	ApplyDirective(&cfg, "user", "alice on >b ~* +@all")
	if len(cfg.Users) != 1 || !reflect.DeepEqual(cfg.Users[0].Rules, []string{"on", ">b", "~*", "+@all"}) {
		t.Fatalf("users %+v", cfg.Users)
	}
	_, err := ApplyDirective(&cfg, "maxmemory", "x")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.File != "" || ce.Text != "maxmemory x" || !strings.Contains(err.Error(), "Reading the command line\n>>> 'maxmemory x'\nargument must be a memory value") {
		t.Fatalf("flag error: %v", err)
	}
}

// CONFIG SET changes the live settings, all of a command's pairs or none.
func TestConfigSet_LiveAndAtomic(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	steps := []wireStep{
		{[]string{"CONFIG", "SET", "timeout", "30", "maxclients", "77", "maxmemory", "1gb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "timeout"}, "*2\r\n$7\r\ntimeout\r\n$2\r\n30\r\n"},
		{[]string{"CONFIG", "GET", "maxclients"}, "*2\r\n$10\r\nmaxclients\r\n$2\r\n77\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "*2\r\n$9\r\nmaxmemory\r\n$10\r\n1073741824\r\n"},
		// A bad value anywhere leaves every parameter as it was.
		{[]string{"CONFIG", "SET", "timeout", "40", "maxclients", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n"},
		{[]string{"CONFIG", "GET", "timeout"}, "*2\r\n$7\r\ntimeout\r\n$2\r\n30\r\n"},
		{[]string{"CONFIG", "SET", "timeout", "40", "tcp-backlog", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'tcp-backlog') - can't set immutable config\r\n"},
		// even to the value it has, as Redis; tumbler's own start-up
		// parameters take the value they have, and nothing else
		{[]string{"CONFIG", "SET", "tcp-backlog", "511"}, "-ERR CONFIG SET failed (possibly related to argument 'tcp-backlog') - can't set immutable config\r\n"},
		{[]string{"CONFIG", "SET", "event-loop", "yes", "metrics-addr", "", "restart-delay", "0"}, "+OK\r\n"},
		{[]string{"CONFIG", "SET", "timeout", "40", "event-loop", "no"}, "-ERR CONFIG SET failed (possibly related to argument 'event-loop') - can't set immutable config\r\n"},
		{[]string{"CONFIG", "SET", "restart-delay", "1s"}, "-ERR CONFIG SET failed (possibly related to argument 'restart-delay') - can't set immutable config\r\n"},
		{[]string{"CONFIG", "SET", "metrics-addr", "127.0.0.1:0"}, "-ERR CONFIG SET failed (possibly related to argument 'metrics-addr') - can't set immutable config\r\n"},
		// so does an address that cannot be listened on (rebind.go)
		{[]string{"CONFIG", "SET", "timeout", "40", "bind", "10.255.255.254"}, "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n"},
		{[]string{"CONFIG", "SET", "timeout", "40", "nosuch", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"},
		{[]string{"CONFIG", "SET", "timeout", "40", "TIMEOUT", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'TIMEOUT') - duplicate parameter\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - tumbler never evicts keys (they are locks): only noeviction is supported\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory-policy", "NoEviction"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "timeout"}, "*2\r\n$7\r\ntimeout\r\n$2\r\n30\r\n"},
		{[]string{"CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "client-output-buffer-limit"}, "*2\r\n$26\r\nclient-output-buffer-limit\r\n$59\r\nnormal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0\r\n"},
		{[]string{"CONFIG", "SET", "lua-time-limit", "1234"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "busy-reply-threshold"}, "*2\r\n$20\r\nbusy-reply-threshold\r\n$4\r\n1234\r\n"},
		{[]string{"CONFIG", "SET", "busy-reply-threshold", "0"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "lua-time-limit"}, "*2\r\n$14\r\nlua-time-limit\r\n$1\r\n0\r\n"},
		{[]string{"CONFIG", "SET", "busy-reply-threshold", "1234"}, "+OK\r\n"},
		{[]string{"CONFIG", "REWRITE"}, "-ERR The server is running without a config file\r\n"},
	}
	doSteps(t, c, steps)
	if l := srv.live(); l.Timeout != 30*time.Second || l.MaxClients != 77 || srv.Engine().MaxMemory() != 1<<30 || srv.Engine().BusyThreshold() != 1234*time.Millisecond {
		t.Fatalf("live settings not applied: %+v", l)
	}
}

func TestConfigRewrite_WritesLiveSettings(t *testing.T) {
	srv, path := runConfFile(t, "rw.conf", "# my settings\nport 0\ntimeout 10\nsave 60 1\ntimeout 11\nmaxclients 100\n")
	c := dial(t, srv.Addr())
	if got := c.do("CONFIG", "SET", "timeout", "20", "maxmemory", "64mb", "requirepass", "p w"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	data, _ := os.ReadFile(path)
	// As Redis lays it out: the second timeout line blanked, and a blank
	// line (the file's last newline) before what is appended.
	want := "# my settings\nport 0\ntimeout 20\nsave 60 1\n\nmaxclients 100\n\n" + rewriteSignature +
		"\nbind 127.0.0.1\nmaxmemory 64mb\nrequirepass \"p w\"\n" +
		"user default on #" + sha256Hex("p w") + " ~* &* +@all\n" // requirepass is the default user's password
	if string(data) != want {
		t.Fatalf("rewritten file\n%s\nwant\n%s", data, want)
	}
	var back Config
	if _, err := LoadConfigFile(path, &back); err != nil {
		t.Fatal(err)
	}
	if back.Timeout != 20*time.Second || back.MaxMemory != 64<<20 || back.RequirePass != "p w" || back.MaxClients != 100 {
		t.Fatalf("reloaded %+v", back)
	}
	// A second rewrite changes nothing but the blank line the file's
	// last newline makes at its end, as in Redis; a third nothing.
	for range 2 {
		if got := c.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
			t.Fatal(got)
		}
		if again, _ := os.ReadFile(path); string(again) != want+"\n" {
			t.Fatalf("rewritten again\n%q\nwant\n%q", again, want+"\n")
		}
	}
}

// The encoding thresholds are live: CONFIG SET reaches the engine, under
// either name; the old name of a directive in the config file is
// rewritten under the new one, as Redis 7.0 does (and lua-time-limit as
// busy-reply-threshold).
func TestConfig_EncodingThresholds(t *testing.T) {
	path := writeConf(t, "enc.conf", "port 0\nhash-max-ziplist-entries 100\nlua-time-limit 100\n"+
		"zset-max-ziplist-value 10\nzset-max-listpack-value 20\nlist-max-ziplist-entries 5\n")
	var cfg Config
	warnings, err := LoadConfigFile(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{path + ":6: 'list-max-ziplist-entries' is not supported by tumbler and is ignored"}; !reflect.DeepEqual(warnings, want) {
		t.Fatalf("warnings %q", warnings)
	}
	cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false // the test's own port
	srv := RunT(t, WithConfig(func(c *Config) { *c = cfg }))
	if l := srv.Engine().EncodingLimits(); l.HashMaxListpackEntries != 100 || l.ZsetMaxListpackValue != 20 || l.SetMaxIntsetEntries != 512 {
		t.Fatalf("engine limits %+v", l)
	}
	c := dial(t, srv.Addr())
	steps := []wireStep{
		{[]string{"CONFIG", "GET", "hash-max-listpack-entries"}, "*2\r\n$25\r\nhash-max-listpack-entries\r\n$3\r\n100\r\n"},
		{[]string{"CONFIG", "SET", "hash-max-listpack-value", "1kb", "set-max-intset-entries", "5", "list-compress-depth", "2", "list-max-ziplist-size", "7"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "hash-max-ziplist-value"}, "*2\r\n$22\r\nhash-max-ziplist-value\r\n$4\r\n1024\r\n"},
		{[]string{"CONFIG", "SET", "set-max-intset-entries", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'set-max-intset-entries') - argument must be between 0 and 9223372036854775807 inclusive\r\n"},
		{[]string{"CONFIG", "SET", "hash-max-ziplist-entries", "1", "hash-max-listpack-entries", "0"}, "+OK\r\n"},
		{[]string{"HSET", "h", "f", "v"}, ":1\r\n"},
		{[]string{"OBJECT", "ENCODING", "h"}, "$9\r\nhashtable\r\n"},
		{[]string{"CONFIG", "SET", "hash-max-listpack-entries", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "REWRITE"}, "+OK\r\n"},
	}
	doSteps(t, c, steps)
	data, _ := os.ReadFile(path)
	want := "port 0\nhash-max-listpack-entries 100\nbusy-reply-threshold 100\nzset-max-listpack-value 20\n\nlist-max-ziplist-entries 5\n\n" +
		rewriteSignature + "\nbind 127.0.0.1\nhash-max-listpack-value 1kb\nlist-compress-depth 2\nlist-max-listpack-size 7\nset-max-intset-entries 5\n" +
		"user default on nopass ~* &* +@all\n"
	if string(data) != want {
		t.Fatalf("rewritten file\n%s\nwant\n%s", data, want)
	}
}

// The thresholds are flags of the binary too.
func TestApplyDirective_EncodingThresholds(t *testing.T) {
	var cfg Config
	for _, d := range [][2]string{{"zset-max-ziplist-entries", "3"}, {"list-max-listpack-size", "-1"}} {
		if w, err := ApplyDirective(&cfg, d[0], d[1]); err != nil || w != "" {
			t.Fatalf("%s: %q, %v", d[0], w, err)
		}
	}
	want := engine.DefaultEncodingLimits()
	want.ZsetMaxListpackEntries, want.ListMaxListpackSize = 3, -1
	if cfg.Encodings == nil || *cfg.Encodings != want {
		t.Fatalf("encodings %+v", cfg.Encodings)
	}
	_, err := ApplyDirective(&cfg, "hash-max-ziplist-value", "x")
	if err == nil || !strings.Contains(err.Error(), ">>> 'hash-max-ziplist-value x'\nargument must be a memory value") {
		t.Fatalf("flag error: %v", err)
	}
}

// CONFIG SET loglevel filters the server's logs whatever the Logger.
func TestConfigSet_LogLevelFilters(t *testing.T) {
	var buf syncBuffer
	srv := RunT(t, WithConfig(func(c *Config) { c.Logger = newTestLogger(&buf) }))
	if srv.Logger().Enabled(context.Background(), -4) {
		t.Fatal("debug enabled at notice")
	}
	c := dial(t, srv.Addr())
	if got := c.do("CONFIG", "SET", "loglevel", "debug"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if !srv.Logger().Enabled(context.Background(), -8) {
		t.Fatal("debug disabled at debug")
	}
	c.do("CONFIG", "SET", "loglevel", "warning")
	srv.Logger().Info("hidden")
	srv.Logger().Warn("shown")
	if s := buf.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "shown") {
		t.Fatalf("log %q", s)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
}

// lua-memory-limit: 256mb by default, live, 0 turns it off; a script past
// it fails and the server goes on serving.
func TestConfigLuaMemoryLimit(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	bomb := "local t = {}\nwhile true do t[#t+1] = string.rep('x', 1000) end"
	steps := []wireStep{
		{[]string{"CONFIG", "GET", "lua-memory-limit"}, "*2\r\n$16\r\nlua-memory-limit\r\n$9\r\n268435456\r\n"},
		{[]string{"CONFIG", "SET", "lua-memory-limit", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'lua-memory-limit') - argument must be a memory value\r\n"},
		{[]string{"CONFIG", "SET", "lua-memory-limit", "0"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "lua-memory-limit"}, "*2\r\n$16\r\nlua-memory-limit\r\n$1\r\n0\r\n"},
		{[]string{"CONFIG", "SET", "lua-memory-limit", "16mb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "lua-memory-limit"}, "*2\r\n$16\r\nlua-memory-limit\r\n$8\r\n16777216\r\n"},
		{[]string{"EVAL", bomb, "0"}, "-ERR Script used too much memory (lua-memory-limit is 16777216 bytes) script: " + luavm.SHA1Hex([]byte(bomb)) + ", on @user_script:2.\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k"}, "+OK\r\n"},
	}
	doSteps(t, c, steps)
	if got := srv.vm.MemoryLimit(); got != 16<<20 {
		t.Fatalf("VM limit %d", got)
	}
	var cfg Config
	if _, err := ApplyDirective(&cfg, "lua-memory-limit", "0"); err != nil || luaMemoryLimit(&cfg) != 0 {
		t.Fatalf("lua-memory-limit 0: %v, %d", err, luaMemoryLimit(&cfg))
	}
	if _, err := ApplyDirective(&cfg, "lua-memory-limit", "64mb"); err != nil || luaMemoryLimit(&cfg) != 64<<20 {
		t.Fatalf("lua-memory-limit 64mb: %v, %d", err, luaMemoryLimit(&cfg))
	}
}

// C's strtoll, as Redis's save, oom-score-adj-values and output buffer
// limits read numbers with it.
func TestCStrtoll(t *testing.T) {
	for _, tc := range []struct {
		in       string
		base     int
		v        int64
		rest     string
		overflow bool
	}{
		{"", 10, 0, "", false},
		{" ", 10, 0, " ", false},
		{"-", 10, 0, "-", false},
		{" +42", 10, 42, "", false},
		{"-42x", 10, -42, "x", false},
		{"9223372036854775807", 10, 1<<63 - 1, "", false},
		{"9223372036854775808", 10, 1<<63 - 1, "", true},
		{"-9223372036854775808", 10, -1 << 63, "", false},
		{"-99999999999999999999", 10, -1 << 63, "", true},
		{"0777", 8, 511, "", false},
		{"78", 8, 7, "8", false},
	} {
		v, rest, overflow := cStrtoll(tc.in, tc.base)
		if v != tc.v || rest != tc.rest || overflow != tc.overflow {
			t.Errorf("cStrtoll(%q, %d) = %d %q %v, want %d %q %v", tc.in, tc.base, v, rest, overflow, tc.v, tc.rest, tc.overflow)
		}
	}
}

// The output buffer limits' seconds are read as Redis reads them:
// strtoll into an int, so "" is 0 and a number past 32 bits wraps.
func TestOutputLimits_SecondsAsRedis(t *testing.T) {
	var l OutputBufferLimits
	if reason := parseOutputLimits(&l, []string{"normal", "0", "0", ""}); reason != "" || l.Normal.SoftSeconds != 0 {
		t.Fatalf("empty seconds: %q %+v", reason, l.Normal)
	}
	if reason := parseOutputLimits(&l, []string{"normal", "0", "0", "9999999999"}); reason != "" || l.Normal.SoftSeconds != 1410065407 {
		t.Fatalf("wrapped seconds: %q %+v", reason, l.Normal)
	}
	if reason := parseOutputLimits(&l, []string{"normal", "0", "0", "2147483648"}); reason == "" {
		t.Fatalf("seconds wrapping to a negative int accepted: %+v", l.Normal)
	}
}

// DEBUG CONFIG-REWRITE-FORCE-ALL writes every setting, defaults included,
// as Redis's: the file then starts a server with the same settings
// (Redis's "CONFIG REWRITE sanity" test restarts from it). Without a
// config file it fails as Redis's does.
func TestDebugConfigRewriteForceAll(t *testing.T) {
	c := dial(t, RunT(t).Addr())
	if got := c.do("DEBUG", "CONFIG-REWRITE-FORCE-ALL"); got != "-ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address\r\n" {
		t.Fatalf("without a config file: %q", got)
	}
	path := writeConf(t, "all.conf", "port 0\ntimeout 10\n")
	var cfg Config
	if _, err := LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false // the test's own port
	cfg.EnableDebugCommand = "yes"
	srv := RunT(t, WithConfig(func(c *Config) { *c = cfg }))
	c = dial(t, srv.Addr())
	if got := c.do("CONFIG", "SET", "maxmemory", "64mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("DEBUG", "CONFIG-REWRITE-FORCE-ALL"); got != "+OK\r\n" {
		t.Fatalf("DEBUG CONFIG-REWRITE-FORCE-ALL = %q", got)
	}
	data, _ := os.ReadFile(path)
	for _, line := range []string{"timeout 10", "maxmemory 64mb", "hz 10", "maxmemory-policy noeviction", "busy-reply-threshold 5000"} {
		if !strings.Contains("\n"+string(data), "\n"+line+"\n") {
			t.Errorf("the rewritten file lacks %q:\n%s", line, data)
		}
	}
	var back Config
	if _, err := LoadConfigFile(path, &back); err != nil {
		t.Fatalf("the rewritten file does not load: %v", err)
	}
	back.Addr, back.TLSOnly = "127.0.0.1:0", false
	again := dial(t, RunT(t, WithConfig(func(c *Config) { *c = back })).Addr())
	for _, name := range []string{"timeout", "maxmemory", "hz", "save", "appendonly", "maxmemory-policy"} {
		if a, b := c.do("CONFIG", "GET", name), again.do("CONFIG", "GET", name); a != b {
			t.Errorf("CONFIG GET %s: %q before, %q from the rewritten file", name, a, b)
		}
	}
}
