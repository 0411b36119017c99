package diff

import (
	"net"
	"strconv"
	"testing"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// TestConfigSetPortAndBind compares CONFIG SET port and bind with
// redis-server's: refused, with Redis's error and the setting unchanged,
// for a port another socket holds and for an address no interface has
// (taken when a leading "-" makes it optional, first or not);
// a free port moves the server there (each its own), and the connection
// that asked stays.
func TestConfigSetPortAndBind(t *testing.T) {
	rc, tc := dialBoth(t)
	held, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := strconv.Itoa(held.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"CONFIG", "SET", "port", busy},
		{"CONFIG", "SET", "bind", "10.255.255.254"},
		{"CONFIG", "SET", "bind", "127.0.0.1 10.255.255.254"},
		{"CONFIG", "GET", "bind"},
		// an optional address the host lacks, first too: skipped
		{"CONFIG", "SET", "bind", "-10.255.255.254 127.0.0.1"},
		{"CONFIG", "GET", "bind"},
		{"PING"},
	} {
		if r, g := string(do(t, rc, args...)), string(do(t, tc, args...)); r != g {
			t.Errorf("%q:\n redis:   %q\n tumbler: %q", args, r, g)
		}
	}
	for name, c := range map[string]*conn{"redis": rc, "tumbler": tc} {
		free, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
		free.Close()
		if got := string(do(t, c, "CONFIG", "SET", "port", p)); got != "+OK\r\n" {
			t.Fatalf("%s: CONFIG SET port %s = %q", name, p, got)
		}
		if got, want := string(do(t, c, "CONFIG", "GET", "port")), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(p))+"\r\n"+p+"\r\n"; got != want {
			t.Errorf("%s: CONFIG GET port = %q, want %q", name, got, want)
		}
		moved, err := dial(net.JoinHostPort("127.0.0.1", p))
		if err != nil {
			t.Fatalf("%s: not listening on the new port: %v", name, err)
		}
		if got := string(do(t, moved, "PING")); got != "+PONG\r\n" {
			t.Errorf("%s: PING on the new port = %q", name, got)
		}
		moved.close()
	}
}

// TestConfigSetBindEmpty compares CONFIG SET bind "" on a server with no
// unix socket with redis-server's: accepted (changeBindAddr listens on
// no address, and that is no failure), the server stays up and listens
// nowhere, serving the connection that asked, whose CONFIG GET bind is
// empty and port unchanged; bind set to optional addresses the host lacks
// is accepted the same way; and a bind set back from that connection
// listens again, on the same port.
func TestConfigSetBindEmpty(t *testing.T) {
	servers := []struct{ name, addr string }{
		{"redis", proc.StartRedis(t)},
		{"tumbler", server.RunT(t).Addr()},
	}
	conns := make([]*conn, len(servers))
	for i, sv := range servers {
		c, err := dial(sv.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.close)
		conns[i] = c
	}
	same := func(args ...string) {
		t.Helper()
		if r, g := string(do(t, conns[0], args...)), string(do(t, conns[1], args...)); r != g {
			t.Errorf("%q:\n redis:   %q\n tumbler: %q", args, r, g)
		}
	}
	refused := func(when string) {
		t.Helper()
		for _, sv := range servers {
			if c, err := net.Dial("tcp", sv.addr); err == nil {
				c.Close()
				t.Errorf("%s %s: a new connection to %s was accepted", sv.name, when, sv.addr)
			}
		}
	}
	for _, bind := range []string{"", "-10.255.255.254", "-10.255.255.254 -10.255.255.253"} {
		same("CONFIG", "SET", "bind", bind)
		same("PING")
		same("CONFIG", "GET", "bind")
		refused("after bind " + strconv.Quote(bind))
		for i, sv := range servers {
			_, port, _ := net.SplitHostPort(sv.addr)
			if got, want := string(do(t, conns[i], "CONFIG", "GET", "port")), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(port))+"\r\n"+port+"\r\n"; got != want {
				t.Errorf("%s: CONFIG GET port = %q, want %q", sv.name, got, want)
			}
		}
	}
	same("CONFIG", "SET", "bind", "")
	same("CONFIG", "SET", "bind", "127.0.0.1")
	same("CONFIG", "GET", "bind")
	for _, sv := range servers {
		c, err := dial(sv.addr)
		if err != nil {
			t.Fatalf("%s: not listening again on %s: %v", sv.name, sv.addr, err)
		}
		if got := string(do(t, c, "PING")); got != "+PONG\r\n" {
			t.Errorf("%s: PING = %q", sv.name, got)
		}
		c.close()
	}
}
