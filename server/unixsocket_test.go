package server

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dialUnix is dial for a Unix domain socket.
func dialUnix(t testing.TB, path string) *rawClient {
	t.Helper()
	return dialNet(t, "unix", path)
}

// unixSocketPath is a socket path in a fresh directory, short enough for
// sun_path (108 bytes on Linux) whatever the test's name.
func unixSocketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "t.sock")
}

// withUnixSocket configures path as the unix socket, with mode perm
// (unixsocketperm, octal; "" leaves it unset).
func withUnixSocket(t *testing.T, path, perm string) Option {
	return WithConfig(func(c *Config) {
		c.UnixSocket = path
		if perm != "" {
			if _, err := ApplyDirective(c, "unixsocketperm", perm); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestUnixSocket_ServesAsRedisDescribesIt: unixsocket listens beside TCP,
// replacing a stale file at its path and taking unixsocketperm's mode, and
// its clients are described as Redis 7.0.15 describes them (checked against
// it): addr and laddr are "<path>:0", flags has U, MONITOR writes
// "unix:<path>", CLIENT KILL LADDR finds them. Close removes the file.
func TestUnixSocket_ServesAsRedisDescribesIt(t *testing.T) {
	path := unixSocketPath(t)
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := RunT(t, withUnixSocket(t, path, "700"))

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket file mode %v, want a socket with mode 0700", fi.Mode())
	}

	u := dialUnix(t, path)
	if got := u.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET over the unix socket = %q", got)
	}
	tcp := dial(t, srv.Addr())
	if got := tcp.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET over TCP of the key set over the unix socket = %q", got)
	}
	info := u.do("CLIENT", "INFO")
	for _, want := range []string{" addr=" + path + ":0 ", " laddr=" + path + ":0 ", " flags=U "} {
		if !strings.Contains(info, want) {
			t.Errorf("unix client's CLIENT INFO lacks %q: %q", want, info)
		}
	}
	if info := tcp.do("CLIENT", "INFO"); !strings.Contains(info, " flags=N ") || strings.Contains(info, path) {
		t.Errorf("TCP client's CLIENT INFO = %q, want flags=N and TCP addresses", info)
	}
	if got := tcp.do("CONFIG", "GET", "unixsocket"); got != "*2\r\n$10\r\nunixsocket\r\n$"+itoa(len(path))+"\r\n"+path+"\r\n" {
		t.Errorf("CONFIG GET unixsocket = %q", got)
	}
	if got := tcp.do("CONFIG", "SET", "unixsocket", "/tmp/x.sock"); got != "-ERR CONFIG SET failed (possibly related to argument 'unixsocket') - can't set immutable config\r\n" {
		t.Errorf("CONFIG SET unixsocket = %q", got)
	}

	if got := tcp.do("MONITOR"); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	u.do("PING")
	if line := tcp.read(); !strings.HasSuffix(line, " [0 unix:"+path+"] \"PING\"\r\n") {
		t.Errorf("MONITOR line of the unix client = %q, want [0 unix:%s]", line, path)
	}

	killer := dial(t, srv.Addr())
	if got := killer.do("CLIENT", "KILL", "LADDR", path+":0"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL LADDR %s:0 = %q, want :1", path, got)
	}
	u.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := u.rd.ReadByte(); err == nil {
		t.Fatal("the killed unix client's connection is still open")
	}

	srv.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("after Close the socket file is still there (%v)", err)
	}
}

// TestUnixSocket_Alone: with port 0 and no TLS port, the unix socket is
// the only listener (Redis's "port 0" with unixsocket), and Addr is its
// path; with no unix socket either, Start refuses to listen nowhere.
func TestUnixSocket_Alone(t *testing.T) {
	path := unixSocketPath(t)
	srv := RunT(t, withUnixSocket(t, path, ""), WithConfig(func(c *Config) { c.TLSOnly = true }))
	if srv.Addr() != path {
		t.Fatalf("Addr = %q, want the socket's path %q", srv.Addr(), path)
	}
	if got := dialUnix(t, path).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}

	nowhere := New(Config{Addr: "127.0.0.1:0", TLSOnly: true})
	if err := nowhere.Start(); err == nil || !strings.Contains(err.Error(), "not listen anywhere") {
		nowhere.Close()
		t.Fatalf("Start with port 0 and neither TLS nor a unix socket: %v, want an error", err)
	}
}

// TestUnixSocket_BackAfterRestartAndRebind: the unix socket comes back
// with the other listeners after a fixture Restart, and still serves after
// CONFIG SET port moved the TCP listener.
func TestUnixSocket_BackAfterRestartAndRebind(t *testing.T) {
	path := unixSocketPath(t)
	srv := RunT(t, withUnixSocket(t, path, "700"))
	if got := dialUnix(t, path).do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET = %q", got)
	}
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	if got := dialUnix(t, path).do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET over the unix socket after Restart = %q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("after Restart the socket file is %v (%v), want mode 0700", fi, err)
	}

	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(probe.Addr().String())
	probe.Close()
	if got := dial(t, srv.Addr()).do("CONFIG", "SET", "port", port); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET port %s = %q", port, got)
	}
	if got := dialUnix(t, path).do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET over the unix socket after CONFIG SET port = %q", got)
	}
	if got := dial(t, "127.0.0.1:"+port).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING on the new port = %q", got)
	}
}

// TestUnixSocket_FromConfigFile: the unixsocket and unixsocketperm
// directives of a redis.conf (as tempredis writes one: port 0 and a
// socket), a relative path taken in dir as Redis takes it after its
// chdir; CONFIG REWRITE writes the socket back quoted, as Redis's
// string options.
func TestUnixSocket_FromConfigFile(t *testing.T) {
	path := unixSocketPath(t)
	dir := filepath.Dir(path)
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("port 0\ndir "+dir+"\nunixsocket t.sock\nunixsocketperm 770\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	warnings, err := LoadConfigFile(conf, &cfg)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "relative paths (aclfile, logfile, pidfile, unixsocket, tls-*)") {
		t.Fatalf("LoadConfigFile: %v, warnings %q (want only dir's)", err, warnings)
	}
	if cfg.UnixSocket != "t.sock" || cfg.Path(cfg.UnixSocket) != path {
		t.Fatalf("UnixSocket %q (path %q), want t.sock in %s", cfg.UnixSocket, cfg.Path(cfg.UnixSocket), dir)
	}
	srv := New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o770 {
		t.Fatalf("socket file %v (%v), want mode 0770", fi, err)
	}
	u := dialUnix(t, path)
	if got := u.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatalf("CONFIG REWRITE = %q", got)
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nunixsocket \"t.sock\"\n") || !strings.Contains(string(b), "\nunixsocketperm 770\n") {
		t.Fatalf("rewritten config lacks the unix socket lines:\n%s", b)
	}
}

// TestUnixSocket_EmptyBind: bind "" is Redis's empty list of bind
// addresses (setConfigBindOption), not its default: no TCP listener, the
// unix socket alone, with the port kept (checked against Redis 7.0.15:
// CONFIG GET bind "", port the configured one; CONFIG REWRITE writes
// bind ""). Before, it listened on every address (* -::*), and CONFIG SET
// bind "" moved a running server's listeners there. CONFIG SET bind ""
// now stops TCP, as Redis's changeBindAddr (with nothing else to listen
// on too: TestConfigSet_BindEmptyListensNowhere).
func TestUnixSocket_EmptyBind(t *testing.T) {
	path := unixSocketPath(t)
	port := freeTCPPort(t)
	dir := filepath.Dir(path)
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("port "+strconv.Itoa(port)+"\nbind \"\"\ndir "+dir+"\nunixsocket t.sock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if _, err := LoadConfigFile(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	srv := New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := dialUnix(t, path)
	u.do("SET", "marker", "marker")
	refusedAt(t, "127.0.0.1:"+strconv.Itoa(port), "marker")
	if got, want := u.do("CONFIG", "GET", "bind"), "*2\r\n$4\r\nbind\r\n$0\r\n\r\n"; got != want {
		t.Fatalf("CONFIG GET bind = %q, want %q", got, want)
	}
	p := strconv.Itoa(port)
	if got, want := u.do("CONFIG", "GET", "port"), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(p))+"\r\n"+p+"\r\n"; got != want {
		t.Fatalf("CONFIG GET port = %q, want %q", got, want)
	}
	if got := u.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatalf("CONFIG REWRITE = %q", got)
	}
	if b, err := os.ReadFile(conf); err != nil || !strings.Contains(string(b), "\nbind \"\"\n") {
		t.Fatalf("rewritten config (%v):\n%s\nwant a line bind \"\"", err, b)
	}

	// on a running server, as Redis's changeBindAddr: TCP stops, the
	// unix socket serves on, and a bind brings TCP back on the port
	path2 := unixSocketPath(t)
	srv2 := RunT(t, withUnixSocket(t, path2, ""))
	addr := srv2.Addr()
	u2 := dialUnix(t, path2)
	u2.do("SET", "marker2", "marker2")
	if got := u2.do("CONFIG", "SET", "bind", ""); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind \"\" = %q", got)
	}
	refusedAt(t, addr, "marker2")
	if got := dialUnix(t, path2).do("GET", "marker2"); got != "$7\r\nmarker2\r\n" {
		t.Fatalf("GET over the unix socket after bind \"\" = %q", got)
	}
	if got, want := u2.do("CONFIG", "GET", "bind"), "*2\r\n$4\r\nbind\r\n$0\r\n\r\n"; got != want {
		t.Fatalf("CONFIG GET bind = %q, want %q", got, want)
	}
	if got := u2.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind 127.0.0.1 = %q", got)
	}
	pingAt(t, addr)
}

// TestUnixSocket_EmptyBindKeepsAPickedPort: CONFIG SET bind "" on a
// server that picked its port (Addr :0, as RunT) keeps that port, as
// Redis keeps its port: CONFIG GET port and INFO's tcp_port still name it,
// and a later bind listens on it again. CONFIG GET port said 0.
func TestUnixSocket_EmptyBindKeepsAPickedPort(t *testing.T) {
	path := unixSocketPath(t)
	srv := RunT(t, withUnixSocket(t, path, ""))
	addr := srv.Addr()
	_, p, _ := net.SplitHostPort(addr)
	want := "*2\r\n$4\r\nport\r\n$" + strconv.Itoa(len(p)) + "\r\n" + p + "\r\n"
	u := dialUnix(t, path)
	if got := u.do("CONFIG", "SET", "bind", ""); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind \"\" = %q", got)
	}
	if got := u.do("CONFIG", "GET", "port"); got != want {
		t.Fatalf("CONFIG GET port after bind \"\" = %q, want %q", got, want)
	}
	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	u = dialUnix(t, path)
	if got := u.do("CONFIG", "GET", "port"); got != want {
		t.Fatalf("CONFIG GET port after bind \"\" and Restart = %q, want %q", got, want)
	}
	if got := u.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind 127.0.0.1 = %q", got)
	}
	pingAt(t, addr)
	if got := u.do("CONFIG", "GET", "port"); got != want {
		t.Fatalf("CONFIG GET port after bind 127.0.0.1 = %q, want %q", got, want)
	}
}

// TestUnixSocket_EmptyBindPortZero: under an empty bind CONFIG SET port 0
// and back is taken, as by Redis 7.0.15 (changeListenPort: there is no
// TCP listener to move), and CONFIG GET port follows it. It was refused
// as a switch of plain TCP on or off (Unable to listen on this port).
func TestUnixSocket_EmptyBindPortZero(t *testing.T) {
	path := unixSocketPath(t)
	RunT(t, withUnixSocket(t, path, ""))
	u := dialUnix(t, path)
	port := freeTCPPort(t)
	p := strconv.Itoa(port)
	for _, step := range [][2]string{
		{"bind", ""}, {"port", "0"}, {"port", p}, {"bind", "127.0.0.1"},
	} {
		if got := u.do("CONFIG", "SET", step[0], step[1]); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET %s %q = %q", step[0], step[1], got)
		}
		if step == [2]string{"port", "0"} {
			if got, want := u.do("CONFIG", "GET", "port"), "*2\r\n$4\r\nport\r\n$1\r\n0\r\n"; got != want {
				t.Fatalf("CONFIG GET port after port 0 = %q, want %q", got, want)
			}
		}
	}
	pingAt(t, "127.0.0.1:"+p)
	if got, want := u.do("CONFIG", "GET", "port"), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(p))+"\r\n"+p+"\r\n"; got != want {
		t.Fatalf("CONFIG GET port = %q, want %q", got, want)
	}
}
