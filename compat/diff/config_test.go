package diff

import (
	"bytes"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// The configuration parameters, compared with a redis-server of the
// test's own (it changes parameters, so it shares none): CONFIG GET *
// names and values, then for every parameter CONFIG SET of values valid
// and not, and CONFIG GET after each accepted one. Replies must be
// Redis's byte for byte, but for the parameters below. Both servers
// listen on ports 7300-7399.

// configValueDiffs are the parameters whose CONFIG GET * value is not
// Redis's, and why.
var configValueDiffs = map[string]string{
	"port":       "each server has its own port",
	"dir":        "each server's working directory (Redis's is its --dir, tumbler's the test's)",
	"databases":  "tumbler has one database (1); Redis's default is 16",
	"maxclients": "Redis lowers it to what the open-files limit allows; tumbler reports what it was given",
}

// tumblerOwnParams are tumbler's parameters that Redis does not have
// (docs/configuration.md).
var tumblerOwnParams = map[string]bool{"lua-memory-limit": true, "event-loop": true, "metrics-addr": true, "restart-delay": true}

// hiddenParams are Redis's HIDDEN_CONFIG parameters, which CONFIG GET *
// does not list.
var hiddenParams = []string{"use-exit-on-panic", "rdb-key-save-delay", "key-load-delay", "watchdog-period", "loading-process-events-interval-bytes"}

// setDiff is how tumbler's CONFIG SET of a parameter may differ.
type setDiff int

const (
	// setNever: the parameter is not set on either server.
	setNever setDiff = iota
	// tumblerRefuses: tumbler refuses values Redis accepts (it keeps its
	// own value); when both refuse, the errors must be the same.
	tumblerRefuses
	// redisApplyFails: Redis accepts the value and then fails to apply it
	// to the process where the host does not let it; tumbler applies
	// nothing and accepts.
	redisApplyFails
)

var configSetDiffs = map[string]struct {
	how    setDiff
	reason string
}{
	"port":                 {setNever, "moves the server's listener"},
	"bind":                 {setNever, "moves the server's listener"},
	"save":                 {tumblerRefuses, "tumbler keeps no data on disk: only save \"\""},
	"appendonly":           {tumblerRefuses, "tumbler keeps no data on disk: only appendonly no"},
	"maxmemory-policy":     {tumblerRefuses, "tumbler never evicts keys: only noeviction"},
	"tls-replication":      {redisApplyFails, "Redis configures TLS for yes, which fails without certificate files"},
	"tls-cluster":          {redisApplyFails, "Redis configures TLS for yes, which fails without certificate files"},
	"oom-score-adj":        {redisApplyFails, "Redis writes /proc/self/oom_score_adj, which the host may not allow"},
	"oom-score-adj-values": {redisApplyFails, "Redis writes /proc/self/oom_score_adj, which the host may not allow"},
	"maxclients":           {setNever, "Redis adjusts the open-files limit for it, one setrlimit per 16 clients: a large value takes minutes (config.txt checks its bounds)"},
}

// configCandidates are the values every parameter is set to: numbers at
// and past the usual bounds, memory values, yes and no, words.
var configCandidates = []string{
	"", "yes", "no", "Yes", "0", "1", "-1", "2", "5", "100", "999", "65535", "65536",
	"2147483647", "2147483648", "-2147483649", "4294967295", "4294967296",
	"9223372036854775807", "9223372036854775808", "18446744073709551615",
	"05", "+5", " 5", "1.5", "abc", "1kb", "2MB", "1gb", "1tb", "10%", "100%", "101%", "-5%",
	"0777", "0800", "x y", "1 2", "1 2 3", "a/b", `a\b`, "node-1.example", "a_b",
	"{title} {port}", "{title}", "{nosuch} x", "local",
}

// configSpecialCandidates are more values for the multi-word parameters.
var configSpecialCandidates = map[string][]string{
	"save":                              {"3600 1 300 100", "60", "0 1", "1 -1", "3600 ", "3600  1"},
	"oom-score-adj-values":              {"0 200 800", "-2000 0 2000", "1 2 2001", "+1 -2 3", "1 2 x", "1  2 3"},
	"latency-tracking-info-percentiles": {"50 99 99.9", "1 2.5 99.999999 100", "1e2 0x10 99.9999999", "nan", "inf", "1e400", "5x", "0 -0"},
	"shutdown-on-sigint":                {"now save", "save nosave", "default now", "NOW force", "now  force"},
	"shutdown-on-sigterm":               {"now save", "save nosave", "default now", "NOW force"},
	"client-output-buffer-limit": {"normal 0 0 ", "normal 0 0 9999999999", "pubsub 1mb 512kb 10", "replica 64mb 16mb 60",
		"master 1 2 3", "normal 1x 0 0", "normal 0 0 -1", "normal 0 0 1.5", "normal 1 2"},
	"notify-keyspace-events": {"KEA", "gx$E", "Q", "AKE"},
}

// unsafeOnOracle are values not sent to Redis: they would start
// persistence work (tumbler refuses them, as configSetDiffs says).
var unsafeOnOracle = map[[2]string]bool{{"appendonly", "yes"}: true, {"appendonly", "Yes"}: true}

func TestConfigParamsDiff(t *testing.T) {
	rc, tc := dialConfigPair(t)

	// ---- CONFIG GET *: the same names and values ----
	rAll, tAll := configGetAll(t, rc), configGetAll(t, tc)
	if len(rAll) < 190 {
		t.Fatalf("Redis lists only %d parameters", len(rAll))
	}
	for name, want := range rAll {
		got, ok := tAll[name]
		switch {
		case !ok:
			t.Errorf("CONFIG GET *: tumbler lacks %s (Redis: %q)", name, want)
		case got != want && configValueDiffs[name] == "":
			t.Errorf("CONFIG GET *: %s is %q, Redis's %q", name, got, want)
		}
	}
	for name := range tAll {
		if _, ok := rAll[name]; !ok && !tumblerOwnParams[name] {
			t.Errorf("CONFIG GET *: tumbler lists %s, which Redis does not", name)
		}
	}
	for _, name := range hiddenParams {
		if _, ok := tAll[name]; ok {
			t.Errorf("CONFIG GET *: tumbler lists the hidden %s", name)
		}
		compareConfig(t, rc, tc, "CONFIG", "GET", name)
	}

	// ---- CONFIG SET of every parameter ----
	names := append(append([]string(nil), hiddenParams...), sortedKeys(rAll)...)
	compared := 0
	for _, name := range names {
		diff, known := configSetDiffs[name]
		if known && diff.how == setNever {
			continue
		}
		rOrig, tOrig := getOne(t, rc, name), getOne(t, tc, name)
		for _, v := range append(append([]string{rOrig}, configCandidates...), append(configSpecialCandidates[name], enumCandidates(t, rc, name)...)...) {
			if unsafeOnOracle[[2]string{name, v}] {
				continue
			}
			args := []string{"CONFIG", "SET", name, v}
			want, got := do(t, rc, args...), do(t, tc, args...)
			compared++
			if string(want) != string(got) {
				if !known || !tolerated(diff.how, want, got) {
					t.Errorf("%q:\n redis:   %q\n tumbler: %q", args, want, got)
				}
			} else if string(want) == "+OK\r\n" {
				compareConfig(t, rc, tc, "CONFIG", "GET", name)
			}
			// back to where each server was
			if string(want) == "+OK\r\n" {
				restore(t, rc, name, rOrig)
			}
			if string(got) == "+OK\r\n" {
				restore(t, tc, name, tOrig)
			}
		}
	}
	if compared < 5000 {
		t.Fatalf("only %d CONFIG SETs compared", compared)
	}
	// Every parameter is as it was: nothing above leaked.
	if again := configGetAll(t, rc); !sameMap(again, rAll) {
		t.Errorf("Redis's parameters changed during the test")
	}
	if again := configGetAll(t, tc); !sameMap(again, tAll) {
		t.Errorf("tumbler's parameters changed during the test")
	}
}

// Sequences of CONFIG commands: the protected parameters with
// enable-protected-configs local (a loopback client may: dbfilename is set
// and checked as Redis does; dir stays tumbler's working directory), the
// order of the name checks, and Redis's adjustments after a CONFIG SET in
// the order of its pairs.
func TestConfigSequencesDiff(t *testing.T) {
	rc, tc := dialConfigPair(t, "enable-protected-configs", "local")
	for _, args := range [][]string{
		{"CONFIG", "SET", "hz", "x", "tcp-backlog", "5"},
		{"CONFIG", "SET", "tcp-backlog", "5", "nosuch", "1"},
		{"CONFIG", "SET", "slave-priority", "1", "replica-priority", "2"},
		{"CONFIG", "GET", "slave-priority"},
		{"CONFIG", "SET", "watchdog-period", "100", "hz", "1"},
		{"CONFIG", "GET", "watchdog-period"},
		{"CONFIG", "SET", "watchdog-period", "0", "hz", "10"},
		{"CONFIG", "SET", "hz", "1", "watchdog-period", "100"},
		{"CONFIG", "GET", "watchdog-period"},
		{"CONFIG", "SET", "watchdog-period", "2000"},
		{"CONFIG", "GET", "watchdog-period"},
		{"CONFIG", "SET", "watchdog-period", "0", "hz", "10", "replica-priority", "100"},
		{"CONFIG", "GET", "enable-protected-configs"},
		{"CONFIG", "SET", "dbfilename", "x.rdb"},
		{"CONFIG", "GET", "dbfilename"},
		{"CONFIG", "SET", "dbfilename", "a/x.rdb"},
		{"CONFIG", "SET", "dbfilename", ""},
		{"CONFIG", "GET", "dbfilename"},
		{"CONFIG", "SET", "dbfilename", "dump.rdb"},
		{"CONFIG", "SET", "dir", "."},
		{"CONFIG", "SET", "dir", "x", "y", "z"},
		{"CONFIG", "SET", "enable-protected-configs", "yes"},
	} {
		compareConfig(t, rc, tc, args...)
	}
	// Redis changes directory; tumbler refuses (configSetDiffs).
	want, got := do(t, rc, "CONFIG", "SET", "dir", os.TempDir()), do(t, tc, "CONFIG", "SET", "dir", os.TempDir())
	if string(want) != "+OK\r\n" || !strings.Contains(string(got), "tumbler writes no data files and never changes directory") {
		t.Errorf("CONFIG SET dir %s:\n redis:   %q\n tumbler: %q", os.TempDir(), want, got)
	}
}

// CONFIG REWRITE writes the parameters tumbler does not act on (and the
// strings it does: requirepass, logfile, pidfile) as Redis does: in place (an old name under the new one), appended when not the
// default, strings quoted, memory values in units, a string without value
// left out. Redis's file order of appended lines is its hash table's, so
// each parameter's lines are compared, not their places.
func TestConfigRewriteDiff(t *testing.T) {
	dir := t.TempDir()
	conf := "# settings\n\n\n   # indented\nhz 10\nmasterauth x\nslave-priority 5\nappendfsync everysec\ntcp-keepalive 300\nrepl-timeout 60\nrepl-timeout 70\n" +
		"requirepass old\nlogfile \"\"\npidfile " + dir + "/r.pid\n"
	rPath, tPath := dir+"/redis.conf", dir+"/tumbler.conf"
	for _, p := range []string{rPath, tPath} {
		if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := dial(startRedis73(t, rPath))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.close)
	var cfg server.Config
	if _, err := server.LoadConfigFile(tPath, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort73(t)))
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) { *c = cfg }))
	tc, err := dial(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.close)
	set := []string{"CONFIG", "SET", "hz", "50", "masterauth", "", "tcp-keepalive", "60", "maxmemory-clients", "10%",
		"repl-backlog-size", "2mb", "shutdown-on-sigterm", "now force", "masteruser", `a"b`, "cluster-announce-ip", "1.2.3.4",
		"appendfsync", "always", "lazyfree-lazy-user-del", "yes", "proc-title-template", "{title} x",
		"cluster-link-sendbuf-limit", "1kb", "active-defrag-ignore-bytes", "200mb", "hll-sparse-max-bytes", "1000",
		"replica-announce-ip", "", "ignore-warnings", "", "acl-pubsub-default", "allchannels", "latency-tracking-info-percentiles", "",
		"requirepass", "new"}
	compareConfig(t, rc, tc, "AUTH", "old")
	compareConfig(t, rc, tc, set...)
	compareConfig(t, rc, tc, "CONFIG", "REWRITE")
	names := map[string]bool{"slave-priority": true, "replica-priority": true, "repl-timeout": true, "logfile": true, "pidfile": true}
	for i := 2; i < len(set); i += 2 {
		names[set[i]] = true
	}
	want, got := linesOf(t, rPath, names), linesOf(t, tPath, names)
	for name := range names {
		if strings.Join(want[name], "|") != strings.Join(got[name], "|") {
			t.Errorf("CONFIG REWRITE of %s:\n redis:   %q\n tumbler: %q", name, want[name], got[name])
		}
	}
	if len(want["hz"]) != 1 || want["hz"][0] != "hz 50" {
		t.Fatalf("Redis's file: %q", want)
	}
	// The file's own lines are laid out alike, up to the appended ones:
	// trimmed, a later line of a directive or one with no value now
	// blanked, blank lines never two in a row, one before the signature.
	head := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := strings.Cut(string(data), "# Generated by CONFIG REWRITE\n")
		return h
	}
	if r, tu := head(rPath), head(tPath); r != tu {
		t.Errorf("CONFIG REWRITE, the file's own lines:\n redis:   %q\n tumbler: %q", r, tu)
	}
}

// A config file is read as Redis reads it: the same file gives both
// servers the same parameters (several words on a line or in one quoted
// word, old names, values Redis holds or keeps as given).
func TestConfigFileDiff(t *testing.T) {
	conf := "hz 1000\nmaxmemory-clients 10%\nunixsocketperm 0700\noom-score-adj-values \"1 2 3\"\n" +
		"latency-tracking-info-percentiles 50 99.99\nshutdown-on-sigint now save\nshutdown-on-sigterm \"force now\"\n" +
		"watchdog-period 100\nrepl-backlog-size 5\nslave-priority 5\nmasterauth x\nsyslog-ident tumbler\n" +
		"tcp-backlog 100\nio-threads 4\nsocket-mark-id 7\nappendfsync ALWAYS\nlist-max-ziplist-entries 5\n" +
		"latency-tracking-info-percentiles \"\"\nreplica-announce-ip 10.0.0.1\nproc-title-template \"{title} {port}\"\n"
	path := t.TempDir() + "/both.conf"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, err := dial(startRedis73(t, path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.close)
	var cfg server.Config
	if _, err := server.LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort73(t)))
	tc, err := dial(server.RunT(t, server.WithConfig(func(c *server.Config) { *c = cfg })).Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.close)
	want, got := configGetAll(t, rc), configGetAll(t, tc)
	for name, v := range want {
		if got[name] != v && configValueDiffs[name] == "" {
			t.Errorf("%s: tumbler %q, Redis %q", name, got[name], v)
		}
	}
	for _, name := range hiddenParams {
		compareConfig(t, rc, tc, "CONFIG", "GET", name)
	}
	if want["hz"] != "500" || want["io-threads"] != "4" {
		t.Fatalf("Redis read hz %q io-threads %q", want["hz"], want["io-threads"])
	}
}

// linesOf returns a config file's lines by directive, for the names
// asked.
func linesOf(t *testing.T, path string, names map[string]bool) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if names[name] {
			out[name] = append(out[name], line)
		}
	}
	return out
}

// tolerated reports whether a reply pair differs only as configSetDiffs
// allows.
func tolerated(how setDiff, want, got []byte) bool {
	wantOK, gotOK := string(want) == "+OK\r\n", string(got) == "+OK\r\n"
	switch how {
	case tumblerRefuses:
		return wantOK && !gotOK
	case redisApplyFails:
		return !wantOK && gotOK
	}
	return false
}

// enumCandidates are an enum parameter's names, from Redis's error for a
// bad value, each alone and for a multi-word one also two together.
func enumCandidates(t *testing.T, c *conn, name string) []string {
	t.Helper()
	reply := string(do(t, c, "CONFIG", "SET", name, "no-such-value"))
	_, list, ok := strings.Cut(strings.TrimSuffix(reply, "\r\n"), "must be one of the following: ")
	if !ok {
		return nil
	}
	names := strings.Split(list, ", ")
	out := append([]string(nil), names...)
	for i := 1; i < len(names); i++ {
		out = append(out, names[i-1]+" "+names[i], strings.ToUpper(names[i]))
	}
	return out
}

func restore(t *testing.T, c *conn, name, value string) {
	t.Helper()
	if r := do(t, c, "CONFIG", "SET", name, value); string(r) != "+OK\r\n" {
		t.Fatalf("restoring %s to %q: %q", name, value, r)
	}
}

func do(t *testing.T, c *conn, args ...string) []byte {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return r
}

// compareConfig sends args to both servers; the replies must be the same.
func compareConfig(t *testing.T, rc, tc *conn, args ...string) {
	t.Helper()
	if want, got := do(t, rc, args...), do(t, tc, args...); string(want) != string(got) {
		t.Errorf("%q:\n redis:   %q\n tumbler: %q", args, want, got)
	}
}

func getOne(t *testing.T, c *conn, name string) string {
	t.Helper()
	raw := do(t, c, "CONFIG", "GET", name)
	_, elems, ok := Elements(raw)
	if !ok || len(elems) != 2 {
		t.Fatalf("CONFIG GET %s: %q", name, raw)
	}
	v, _ := bulkText(elems[1])
	return v
}

func configGetAll(t *testing.T, c *conn) map[string]string {
	t.Helper()
	raw := do(t, c, "CONFIG", "GET", "*")
	_, elems, ok := Elements(raw)
	if !ok || len(elems)%2 != 0 {
		t.Fatalf("CONFIG GET *: %q", raw)
	}
	out := map[string]string{}
	for i := 0; i < len(elems); i += 2 {
		k, _ := bulkText(elems[i])
		v, _ := bulkText(elems[i+1])
		out[k] = v
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// dialConfigPair starts a redis-server and a tumbler, both on ports
// 7300-7399 with the same directives (name value pairs) and Redis's
// enable-debug-command no, and connects to each. The Redis connection
// is never evicted (maxmemory-clients).
func dialConfigPair(t *testing.T, directives ...string) (redis, tumbler *conn) {
	t.Helper()
	var err error
	if redis, err = dial(startRedis73(t, "", directives...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(redis.close)
	if r := do(t, redis, "CLIENT", "NO-EVICT", "on"); string(r) != "+OK\r\n" {
		t.Fatalf("CLIENT NO-EVICT: %q", r)
	}
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) {
		c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort73(t)))
		c.EnableDebugCommand = ""
		for i := 0; i+1 < len(directives); i += 2 {
			if _, err := server.ApplyDirective(c, directives[i], directives[i+1]); err != nil {
				t.Fatal(err)
			}
		}
	}))
	if tumbler, err = dial(srv.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tumbler.close)
	return redis, tumbler
}

// freePort73 returns a port from 7300-7399 that nothing listens on now.
func freePort73(t *testing.T) int {
	t.Helper()
	start := rand.Intn(100)
	for i := 0; i < 100; i++ {
		port := 7300 + (start+i)%100
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free port in 7300-7399")
	return 0
}

// startRedis73 runs redis-server on a port of 7300-7399, in a directory
// of its own, with the config file conf (if not "") and the extra
// directives, until the test ends.
func startRedis73(t *testing.T, conf string, extra ...string) string {
	t.Helper()
	bin := proc.RedisBinary(t)
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort73(t)
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir(), "--logfile", ""}
		if conf != "" {
			args = append([]string{conf}, args...)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			args = append(args, "--"+extra[i], extra[i+1])
		}
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		proc.DieWithParent(cmd) // even if this test binary crashes
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if waitListening(addr, exited) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return addr
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("cannot start redis-server %s: %s", strings.Join(args, " "), out.String())
		}
	}
	return ""
}
