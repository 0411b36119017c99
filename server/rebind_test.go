package server

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeTCPPort returns a port free on 127.0.0.1 a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// occupy listens on addr for the rest of the test.
func occupy(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

// pingAt dials addr and checks that a PING is answered there.
func pingAt(t *testing.T, addr string) {
	t.Helper()
	if got := dial(t, addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING at %s = %q", addr, got)
	}
}

// refusedAt checks that the server holding marker (a key set to its own
// name) does not listen at addr. A freed port may already be another
// test's listener: a connection that is made must not reach marker.
func refusedAt(t *testing.T, addr, marker string) {
	t.Helper()
	nc, err := dialErr(addr)
	if err != nil {
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	want := "$" + strconv.Itoa(len(marker)) + "\r\n" + marker + "\r\n"
	if _, err := nc.Write([]byte(encode("GET", marker))); err != nil {
		return
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(nc, got); err == nil && string(got) == want {
		t.Fatalf("the server still listens at %s", addr)
	}
}

// CONFIG SET port and bind move the listeners, as Redis's do: new
// connections come on the new addresses, connections already made stay,
// and an address that cannot be listened on fails the set with Redis's
// error, the server listening where it did. Restart listens again where
// the server listens now.
func TestConfigSet_PortAndBindMoveTheListeners(t *testing.T) {
	srv := RunT(t)
	old := srv.Addr()
	c := dial(t, old)
	marker := t.Name() + strconv.Itoa(freeTCPPort(t))
	c.do("SET", marker, marker)
	p := freeTCPPort(t)
	at := func(host string) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	if got := c.do("CONFIG", "SET", "port", strconv.Itoa(p)); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET port = %q", got)
	}
	pingAt(t, at("127.0.0.1"))
	refusedAt(t, old, marker)
	if got := c.do("CONFIG", "GET", "port"); got != "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(strconv.Itoa(p)))+"\r\n"+strconv.Itoa(p)+"\r\n" {
		t.Fatalf("CONFIG GET port = %q (the connection made before the move stays)", got)
	}
	if got := srv.Addr(); got != at("127.0.0.1") {
		t.Fatalf("Addr() = %s, want %s", got, at("127.0.0.1"))
	}
	if got := c.do("CONFIG", "SET", "port", strconv.Itoa(p)); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET port to the same = %q", got)
	}

	// a port in use: refused, and the server stays where it is
	q := freeTCPPort(t)
	occupy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
	want := "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
	if got := c.do("CONFIG", "SET", "port", strconv.Itoa(q)); got != want {
		t.Fatalf("CONFIG SET port in use = %q, want %q", got, want)
	}
	pingAt(t, at("127.0.0.1"))
	if got := c.do("CONFIG", "GET", "port"); !strings.HasSuffix(got, "\r\n"+strconv.Itoa(p)+"\r\n") {
		t.Fatalf("CONFIG GET port after the failed set = %q", got)
	}

	// bind: a second address, in use at first
	occ, err := net.Listen("tcp4", at("127.0.0.2"))
	if err != nil {
		t.Skipf("127.0.0.2 unavailable: %v", err)
	}
	want = "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n"
	if got := c.do("CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"); got != want {
		t.Fatalf("CONFIG SET bind with an address in use = %q, want %q", got, want)
	}
	pingAt(t, at("127.0.0.1"))
	if got := c.do("CONFIG", "GET", "bind"); got != "*2\r\n$4\r\nbind\r\n$9\r\n127.0.0.1\r\n" {
		t.Fatalf("CONFIG GET bind after the failed set = %q", got)
	}
	occ.Close()
	// an optional address ("-") that is not available is skipped
	if got := c.do("CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2 -10.255.255.254"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind = %q", got)
	}
	pingAt(t, at("127.0.0.1"))
	pingAt(t, at("127.0.0.2"))
	if got := c.do("CONFIG", "SET", "bind", "127.0.0.2"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind back to one = %q", got)
	}
	refusedAt(t, at("127.0.0.1"), marker)
	pingAt(t, at("127.0.0.2"))

	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	pingAt(t, at("127.0.0.2"))
	refusedAt(t, old, marker)
	// and CONFIG GET reports the addresses it came back on
	r := dial(t, at("127.0.0.2"))
	if got, want := r.do("CONFIG", "GET", "bind"), "*2\r\n$4\r\nbind\r\n$9\r\n127.0.0.2\r\n"; got != want {
		t.Fatalf("CONFIG GET bind after Restart = %q, want %q", got, want)
	}
	if got, want := r.do("CONFIG", "GET", "port"), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(strconv.Itoa(p)))+"\r\n"+strconv.Itoa(p)+"\r\n"; got != want {
		t.Fatalf("CONFIG GET port after Restart = %q, want %q", got, want)
	}
}

// CONFIG SET bind "" with no unix socket is accepted, as Redis's
// changeBindAddr accepts it: the server listens nowhere and serves the
// connections it has; a Restart while it listens nowhere comes back
// listening nowhere, and Close works with no listener; a bind set back
// listens on the port it had.
func TestConfigSet_BindEmptyListensNowhere(t *testing.T) {
	srv := RunT(t)
	addr := srv.Addr()
	_, port, _ := net.SplitHostPort(addr)
	marker := t.Name() + port
	srv.Set(marker, marker, 0)
	c := dial(t, addr)
	for _, bind := range []string{"", "-10.255.255.254"} {
		if got := c.do("CONFIG", "SET", "bind", bind); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET bind %q = %q", bind, got)
		}
		refusedAt(t, addr, marker)
		if got := c.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING after bind %q = %q", bind, got)
		}
		if got, want := c.do("CONFIG", "GET", "port"), "*2\r\n$4\r\nport\r\n$"+strconv.Itoa(len(port))+"\r\n"+port+"\r\n"; got != want {
			t.Fatalf("CONFIG GET port after bind %q = %q, want %q", bind, got, want)
		}
	}
	if got := c.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind back = %q", got)
	}
	pingAt(t, addr)
	c = dial(t, addr)
	if got := c.do("CONFIG", "SET", "bind", ""); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind \"\" = %q", got)
	}
	if err := srv.Restart(true); err != nil {
		t.Fatalf("Restart listening nowhere: %v", err)
	}
	refusedAt(t, addr, marker)
	if v, ok := srv.Get(marker); !ok || v != marker {
		t.Fatalf("after Restart: %q, %v", v, ok)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close listening nowhere: %v", err)
	}
}
