package server

import (
	"net"
	"strconv"
	"time"
)

// setKeepAlive sets TCP keepalive on an accepted connection as Redis's
// anetKeepAlive does for tcp-keepalive secs: the first probe after secs
// of silence, the next ones secs/3 apart (at least a second), and the
// connection fails after three unanswered probes, so a client that
// vanished (a host gone, a NAT entry dropped) stops holding a connection
// and its subscriptions and blocked commands. 0 leaves keepalive off, as
// Redis does (the listener's Accept leaves it off: listenClients; a
// listener a test supplies may have Go's 15 s, so it is turned off). Like
// Redis, a value the system refuses (Linux takes at most 32767 s) is not
// an error: the options set before it stay.
func setKeepAlive(nc net.Conn, secs int64) {
	if t, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = t.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	if secs <= 0 {
		_ = tc.SetKeepAlive(false)
		return
	}
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{
		Enable:   true,
		Idle:     time.Duration(secs) * time.Second,
		Interval: time.Duration(max(secs/3, 1)) * time.Second,
		Count:    3,
	})
}

// keepAliveSecs is tcp-keepalive's value (300, Redis's default, if unset).
func keepAliveSecs(c *Config) int64 {
	n, err := strconv.ParseInt(c.param("tcp-keepalive", "300"), 10, 64)
	if err != nil {
		return 300
	}
	return n
}
