package server

import (
	"os"
	"strings"
	"testing"
)

// CONFIG REWRITE writes client-output-buffer-limit as redis-server
// 7.0.15 does (rewriteConfigClientOutputBufferLimitOption): a line per
// class, normal, replica, pubsub, memory values in gb/mb/kb when they
// divide; each line takes the place of the next client-output-buffer-limit
// line of the file (whatever class that one named), lines of the file
// left over are blanked, and a class left over is appended only when it
// is not its default. CONFIG GET keeps printing bytes and "slave". The
// files below are byte for byte what redis-server wrote for the same
// file and CONFIG SET, but for the lines it writes for the parameters
// tumbler keeps (save, dir) and its latency-tracking-info-percentiles,
// and for bind (the test's server listens on 127.0.0.1, where that
// redis-server listened on its default).
func TestConfigRewrite_ClientOutputBufferLimitAsRedis(t *testing.T) {
	const users = "user default on nopass ~* &* +@all\n"
	for _, c := range []struct {
		name, file, set, get, want string
	}{
		{"set, not in the file", "port 0\n", "pubsub 64mb 16mb 90",
			"normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90",
			"port 0\n\n" + rewriteSignature + "\nbind 127.0.0.1\nclient-output-buffer-limit pubsub 64mb 16mb 90\n" + users},
		{"a pubsub line in the file", "port 0\nclient-output-buffer-limit pubsub 64mb 16mb 90\ntimeout 0\n", "",
			"normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90",
			"port 0\nclient-output-buffer-limit normal 0 0 0\ntimeout 0\n\n" + rewriteSignature + "\nbind 127.0.0.1\nclient-output-buffer-limit pubsub 64mb 16mb 90\n" + users},
		{"a default line in the file", "port 0\nclient-output-buffer-limit pubsub 32mb 8mb 60\ntimeout 0\n", "",
			"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
			"port 0\nclient-output-buffer-limit normal 0 0 0\ntimeout 0\n\n" + rewriteSignature + "\nbind 127.0.0.1\n" + users},
		{"more lines than classes", "port 0\nclient-output-buffer-limit replica 1000 1536 5\n# c\nclient-output-buffer-limit normal 0 0 0\n" +
			"client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit normal 0 0 0\n", "",
			"normal 0 0 0 slave 1000 1536 5 pubsub 33554432 8388608 60",
			"port 0\nclient-output-buffer-limit normal 0 0 0\n# c\nclient-output-buffer-limit replica 1000 1536 5\n" +
				"client-output-buffer-limit pubsub 32mb 8mb 60\n\n" + rewriteSignature + "\nbind 127.0.0.1\n" + users},
		{"two classes set", "port 0\n", "normal 1gb 1025mb 0 slave 1000 1536 5",
			"normal 1073741824 1074790400 0 slave 1000 1536 5 pubsub 33554432 8388608 60",
			"port 0\n\n" + rewriteSignature + "\nbind 127.0.0.1\nclient-output-buffer-limit normal 1gb 1025mb 0\nclient-output-buffer-limit replica 1000 1536 5\n" + users},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeConf(t, "cobl.conf", c.file)
			var cfg Config
			if _, err := LoadConfigFile(path, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg.Addr, cfg.TLSOnly = "127.0.0.1:0", false // the test's own port
			srv := RunT(t, WithConfig(func(cf *Config) { *cf = cfg }))
			cl := dial(t, srv.Addr())
			if c.set != "" {
				if got := cl.do("CONFIG", "SET", "client-output-buffer-limit", c.set); got != "+OK\r\n" {
					t.Fatal(got)
				}
			}
			if got := cl.do("CONFIG", "GET", "client-output-buffer-limit"); got != getReply("client-output-buffer-limit", c.get) {
				t.Errorf("CONFIG GET %q, want %q", got, getReply("client-output-buffer-limit", c.get))
			}
			if got := cl.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			if data, _ := os.ReadFile(path); string(data) != c.want {
				t.Fatalf("rewritten file\n%s\nwant\n%s", data, c.want)
			}
			var back Config
			if _, err := LoadConfigFile(path, &back); err != nil {
				t.Fatal(err)
			}
			if got := directives["client-output-buffer-limit"].get(&back); got != c.get {
				t.Fatalf("reloaded %q, want %q", got, c.get)
			}
		})
	}
}

// CONFIG REWRITE writes bind when it is not Redis's default ("* -::*",
// the binary's): a file without it listens on every address, so a bind
// narrowed by CONFIG SET (or a flag) must be kept, and the default is
// not written, as redis-server does.
func TestConfigRewrite_BindAgainstRedisDefault(t *testing.T) {
	path := writeConf(t, "bind.conf", "port 0\n")
	var cfg Config
	if _, err := LoadConfigFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.ExtraAddrs, cfg.TLSOnly = "*:0", []string{"-::*"}, false // the binary's default; a free port
	srv := RunT(t, WithConfig(func(cf *Config) { *cf = cfg }))
	cl := dial(t, srv.Addr())
	rewrite := func() string {
		t.Helper()
		if got := cl.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
			t.Fatal(got)
		}
		data, _ := os.ReadFile(path)
		return string(data)
	}
	if got := rewrite(); strings.Contains(got, "bind") {
		t.Errorf("the default bind written:\n%s", got)
	}
	if got := cl.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := rewrite(); !strings.Contains(got, "\nbind 127.0.0.1\n") {
		t.Errorf("bind 127.0.0.1 not written:\n%s", got)
	}
	var again Config
	if _, err := LoadConfigFile(path, &again); err != nil || hostOf(again.Addr) != "127.0.0.1" {
		t.Errorf("the rewritten file binds %q (%v), want 127.0.0.1", again.Addr, err)
	}
}

// CONFIG REWRITE finds a file's lines by directive name in ASCII case
// only, as Redis's rewriteConfigReadOldFile (sdstolower): a line whose
// name has a Kelvin sign (U+212A) for its k, added to the file after the
// start, is no tcp-keepalive line to take the place of (Redis keeps it,
// commented out), and tcp-keepalive is appended.
func TestConfigRewrite_NamesFoldASCIIOnly(t *testing.T) {
	srv, path := runConfFile(t, "fold.conf", "port 0\ntimeout 10\n")
	kelvin := "tcp-\u212aeepalive 300"
	if err := os.WriteFile(path, []byte("port 0\ntimeout 10\n"+kelvin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	for _, args := range [][]string{{"CONFIG", "SET", "tcp-keepalive", "60"}, {"CONFIG", "REWRITE"}} {
		if got := c.do(args...); got != "+OK\r\n" {
			t.Fatalf("%q = %q", args, got)
		}
	}
	data, _ := os.ReadFile(path)
	_, after, signed := strings.Cut(string(data), rewriteSignature)
	if !strings.Contains(string(data), kelvin+"\n") || !signed || !strings.Contains(after, "\ntcp-keepalive 60\n") {
		t.Fatalf("rewritten file\n%s\nwant the %q line kept and tcp-keepalive 60 appended", data, kelvin)
	}
}
