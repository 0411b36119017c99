package diff

import (
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// Client-side caching with a REDIRECT: the invalidations the target gets,
// byte for byte (Redis's sendTrackingMessage): a push when it speaks
// RESP3, subscribed or not, CLIENT REPLY OFF or not, blocked in BLPOP or
// not; nothing once it is back to RESP2 without a subscription;
// tracking-redir-broken to a RESP3 tracking client once the target is
// gone. Each case its own keys (the
// cases run at the same time); the flush has servers of its own. A
// target's ID is named in replies only where it is meant (no integer
// replies but IDs: one could equal an ID).
func TestWire_TrackingRedirect(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	// (HELLO's own reply goes unsent: its version is tumbler's own)
	const hello3 = "CLIENT REPLY OFF\r\nHELLO 3\r\nCLIENT REPLY ON\r\n"
	inval := func(key string) string { return ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\n" + key + "\r\n" }
	c := func(conn int, send string) wireStep { return wireStep{conn: conn, send: send} }
	wireDiff(t, redis, tumbler, []wireCase{
		{name: "resp3 target, resp2 tracker", oracle: inval("ka1"), steps: []wireStep{
			c(0, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET ka1\r\n"),
			c(2, "SET ka1 x\r\n"), c(0, ""), c(0, "PING\r\n")}},
		{name: "resp3 target, resp3 tracker", oracle: inval("kb1"), steps: []wireStep{
			c(0, hello3), c(1, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET kb1\r\n"),
			c(2, "SET kb1 x\r\n"), c(0, ""), c(1, "")}},
		{name: "resp3 target with client reply off", oracle: inval("kc1"), steps: []wireStep{
			c(0, hello3), c(0, "CLIENT REPLY OFF\r\n"), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"),
			c(1, "GET kc1\r\n"), c(2, "SET kc1 x\r\n"), c(0, ""), c(0, "CLIENT REPLY ON\r\n")}},
		{name: "resp3 target, bcast", oracle: inval("kd1"), steps: []wireStep{
			c(0, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0} BCAST PREFIX kd\r\n"),
			c(2, "SET kd1 x\r\n"), c(0, "")}},
		{name: "target back to resp2", oracle: inval("ke1"), steps: []wireStep{
			c(0, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET ke1\r\n"),
			c(2, "SET ke1 x\r\n"), c(0, ""), c(0, "CLIENT REPLY OFF\r\nHELLO 2\r\nCLIENT REPLY ON\r\n"), c(1, "GET ke1\r\n"),
			c(2, "SET ke1 y\r\n"), c(0, ""), c(0, "PING\r\n")}},
		{name: "target turns resp3 after the redirect", oracle: inval("kf1"), steps: []wireStep{
			c(0, "PING\r\n"), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET kf1\r\n"), c(0, hello3),
			c(2, "SET kf1 x\r\n"), c(0, "")}},
		{name: "resp3 target blocked", oracle: inval("kh1"), steps: []wireStep{
			c(0, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET kh1\r\n"),
			c(0, "BLPOP kh:list 0\r\n"), c(2, "SET kh1 x\r\n"), c(0, ""),
			c(2, "CLIENT REPLY OFF\r\nRPUSH kh:list a\r\nCLIENT REPLY ON\r\n"), c(0, "")}},
		{name: "target gone", oracle: "tracking-redir-broken", steps: []wireStep{
			c(0, "PING\r\n"), c(1, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET kg1\r\n"),
			{conn: 0, close: true}, c(2, "SET kg1 x\r\n"), c(1, ""), c(1, "CLIENT TRACKINGINFO\r\n")}},
	})
}

func TestWire_TrackingRedirectFlush(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	c := func(conn int, send string) wireStep { return wireStep{conn: conn, send: send} }
	const hello3 = "CLIENT REPLY OFF\r\nHELLO 3\r\nCLIENT REPLY ON\r\n"
	wireDiff(t, redis, tumbler, []wireCase{
		{name: "flushall", oracle: ">2\r\n$10\r\ninvalidate\r\n$-1\r\n", steps: []wireStep{
			c(0, hello3), c(1, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(1, "GET k\r\n"),
			c(2, "FLUSHALL\r\n"), c(0, ""),
			c(3, hello3), c(3, "CLIENT TRACKING on REDIRECT {id0}\r\n"), c(3, "GET k\r\n"),
			c(2, "FLUSHALL\r\n"), c(0, "")}},
	})
}
