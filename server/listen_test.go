package server

import (
	"net"
	"testing"
	"time"
)

// TestListen_BindFamilies: a bind address listens on its own family only,
// as Redis binds it: 0.0.0.0 takes no IPv6 connection (Go's wildcard
// socket took both, past firewall rules written for IPv4), :: takes no
// IPv4 one, and so "bind 0.0.0.0 ::" (Redis's "* ::*") listens on both
// without the second failing as the port is taken.
func TestListen_BindFamilies(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	reaches := func(host, port string) bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	portOf := func(srv *Server) string {
		_, p, _ := net.SplitHostPort(srv.Addr())
		return p
	}

	v4 := RunT(t, WithConfig(func(c *Config) { c.Addr = "0.0.0.0:0" }))
	if p := portOf(v4); !reaches("127.0.0.1", p) || reaches("::1", p) {
		t.Fatalf("bind 0.0.0.0: IPv4 %v, IPv6 %v; want IPv4 only", reaches("127.0.0.1", p), reaches("::1", p))
	}

	v6 := RunT(t, WithConfig(func(c *Config) { c.Addr = "[::]:0" }))
	if p := portOf(v6); reaches("127.0.0.1", p) || !reaches("::1", p) {
		t.Fatalf("bind ::: IPv4 %v, IPv6 %v; want IPv6 only", reaches("127.0.0.1", p), reaches("::1", p))
	}

	both := RunT(t, WithConfig(func(c *Config) { c.Addr, c.ExtraAddrs = "0.0.0.0:0", []string{"::*"} }))
	if p := portOf(both); !reaches("127.0.0.1", p) || !reaches("::1", p) {
		t.Fatalf("bind * ::*: IPv4 %v, IPv6 %v; want both", reaches("127.0.0.1", p), reaches("::1", p))
	}
	if got := dial(t, net.JoinHostPort("::1", portOf(both))).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING over IPv6: %q", got)
	}
}
