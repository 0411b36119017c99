package server

import (
	"strconv"
	"syscall"
	"testing"
)

// keepAliveOf reads the server side of the connection whose CLIENT ID is
// id: SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL and TCP_KEEPCNT.
func keepAliveOf(t *testing.T, srv *Server, id string) [4]int {
	t.Helper()
	var got [4]int
	found := false
	srv.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		if c.fd < 0 || strconv.FormatInt(c.ID, 10) != id {
			return true
		}
		found = true
		for i, o := range []struct{ level, opt int }{
			{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
		} {
			v, err := syscall.GetsockoptInt(c.fd, o.level, o.opt)
			if err != nil {
				t.Fatalf("getsockopt %d/%d: %v", o.level, o.opt, err)
			}
			got[i] = v
		}
		return false
	})
	if !found {
		t.Fatalf("no connection with ID %s", id)
	}
	return got
}

// tcp-keepalive sets each accepted connection's TCP keepalive as Redis's
// anetKeepAlive: the first probe after the value's seconds, the next a
// third of it apart (at least 1), three probes; 0 leaves it off (Go's
// Accept would turn it on with 15 s). CONFIG SET applies to connections
// accepted after it, as in Redis; a value Linux refuses (over 32767)
// leaves keepalive on with the system's timing, as with Redis.
func TestTCPKeepAlive_SetsAcceptedSockets(t *testing.T) {
	srv := RunT(t)
	ctl := dial(t, srv.Addr())
	idOf := func(c *rawClient) string {
		t.Helper()
		r := c.do("CLIENT", "ID")
		return r[1 : len(r)-2]
	}
	sys := keepAliveOf(t, srv, idOf(ctl)) // the default, 300
	if want := [4]int{1, 300, 100, 3}; sys != want {
		t.Fatalf("tcp-keepalive 300 (default): SO_KEEPALIVE, idle, interval, count = %v, want %v", sys, want)
	}
	for _, tc := range []struct {
		secs string
		want [4]int
	}{
		{"60", [4]int{1, 60, 20, 3}},
		{"2", [4]int{1, 2, 1, 3}},
		{"0", [4]int{0, -1, -1, -1}}, // off: idle, interval and count unchecked
	} {
		if got := ctl.do("CONFIG", "SET", "tcp-keepalive", tc.secs); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET tcp-keepalive %s: %q", tc.secs, got)
		}
		c := dial(t, srv.Addr())
		got := keepAliveOf(t, srv, idOf(c))
		if tc.want[1] < 0 {
			got[1], got[2], got[3] = -1, -1, -1
		}
		if got != tc.want {
			t.Fatalf("tcp-keepalive %s: SO_KEEPALIVE, idle, interval, count = %v, want %v", tc.secs, got, tc.want)
		}
	}
	if got := keepAliveOf(t, srv, idOf(ctl)); got != sys {
		t.Fatalf("a connection accepted before CONFIG SET changed: %v, had %v", got, sys)
	}
	// Linux refuses an idle time over 32767 s; Redis ignores the failure,
	// and so the socket keeps keepalive on with the system's idle time.
	ctl.do("CONFIG", "SET", "tcp-keepalive", "40000")
	c := dial(t, srv.Addr())
	if got := keepAliveOf(t, srv, idOf(c)); got[0] != 1 || got[1] == 40000 || got[1] == 15 {
		t.Fatalf("tcp-keepalive 40000: SO_KEEPALIVE, idle = %d, %d: want on with the system's idle (not Go's 15)", got[0], got[1])
	}
}
