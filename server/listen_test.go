package server

import (
	"net"
	"strings"
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

// TestListen_OptionalAddresses: a bind address is skipped as Redis's
// listenToPort skips it, the first as well as the others: an optional
// one ("-") the host does not have (10.255.255.1 is no address here);
// a required one the host does not have stops the start, as does an
// optional one whose port is taken; with every address skipped the
// server listens nowhere and does not start. CONFIG GET bind gives the
// addresses as written.
func TestListen_OptionalAddresses(t *testing.T) {
	const absent = "10.255.255.1"
	if ln, err := net.Listen("tcp4", absent+":0"); err == nil {
		ln.Close()
		t.Skipf("%s is an address of this host", absent)
	}
	srv := RunT(t, WithConfig(func(c *Config) {
		c.Addr, c.ExtraAddrs = net.JoinHostPort("-"+absent, "0"), []string{"127.0.0.1"}
	}))
	c := dial(t, srv.Addr())
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING: %q", got)
	}
	if got := c.do("CONFIG", "GET", "bind"); got != "*2\r\n$4\r\nbind\r\n$23\r\n-"+absent+" 127.0.0.1\r\n" {
		t.Fatalf("CONFIG GET bind: %q", got)
	}

	start := func(addr string, extra ...string) error {
		s := New(Config{Addr: addr, ExtraAddrs: extra})
		err := s.Start()
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := start(net.JoinHostPort(absent, "0"), "127.0.0.1"); err == nil || !strings.Contains(err.Error(), "cannot listen on "+absent) {
		t.Errorf("a required address the host lacks: %v, want the start refused", err)
	}
	if err := start(net.JoinHostPort("-"+absent, "0")); err == nil || !strings.Contains(err.Error(), "configured to not listen anywhere") {
		t.Errorf("only an optional address the host lacks: %v, want the start refused", err)
	}
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	if err := start(net.JoinHostPort("-127.0.0.1", port)); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("an optional address whose port is taken: %v, want the start refused", err)
	}
}
