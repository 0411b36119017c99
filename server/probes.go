package server

import (
	"math"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// Connection probes: commands clients send to learn what kind of server
// they talk to, answered as a standalone Redis 7.2 without replicas or an
// append-only file answers them. (CLUSTER lives in the engine; CLIENT
// MAINT_NOTIFICATIONS is unknown to 7.2 and gets the engine's
// unknown-subcommand error.)

func (s *Server) registerProbes() {
	const probe = engine.FlagNoKeys | engine.FlagFast | engine.FlagLoading | engine.FlagStale
	s.eng.Register(
		&engine.Command{Name: "readonly", Arity: 1, Flags: probe, Group: "cluster", Fn: clusterDisabled},
		&engine.Command{Name: "readwrite", Arity: 1, Flags: probe, Group: "cluster", Fn: clusterDisabled},
		&engine.Command{Name: "wait", Arity: 3, Flags: engine.FlagNoKeys, Group: "generic", Fn: s.cmdWait},
		&engine.Command{Name: "waitaof", Arity: 4, Flags: engine.FlagNoKeys | engine.FlagNoScript, Group: "generic", Fn: s.cmdWaitAOF},
	)
	const conn = engine.FlagNoKeys | engine.FlagNoScript | engine.FlagLoading | engine.FlagStale
	subs := s.eng.Lookup([]byte("client")).Subs
	subs["no-evict"] = &engine.Command{Name: "client|no-evict", Arity: 3, Flags: conn | engine.FlagAdmin, Fn: func(c *engine.Ctx) {
		clientOnOff(c, func(me *client, on bool) {
			if on != me.mem.noEvict.Swap(on) {
				s.noEvictChanged(me, on) // its part of the sum moves (evict.go)
			}
		})
	}}
	subs["reply"] = &engine.Command{Name: "client|reply", Arity: 3, Flags: conn, Fn: s.cmdClientReply}
	subs["no-touch"] = &engine.Command{Name: "client|no-touch", Arity: 3, Flags: conn, Fn: func(c *engine.Ctx) {
		clientOnOff(c, func(me *client, on bool) { me.ps.noTouch, me.NoTouch = on, on })
	}}
}

// READONLY / READWRITE
func clusterDisabled(c *engine.Ctx) { c.W.WriteError(engine.ErrClusterDisabled) }

// clientOnOff parses CLIENT NO-EVICT|NO-TOUCH ON|OFF and sets the flag
// under the client's mu (CLIENT LIST reads it).
func clientOnOff(c *engine.Ctx, set func(me *client, on bool)) {
	var on bool
	switch {
	case engine.EqFold(c.Args[2], "on"):
		on = true
	case engine.EqFold(c.Args[2], "off"):
	default:
		c.W.WriteError(engine.ErrSyntax)
		return
	}
	me := cl(c)
	me.mu.Lock()
	set(me, on)
	me.mu.Unlock()
	c.W.WriteStatus("OK")
}

// parseTimeout is Redis's getTimeoutFromObjectOrReply in milliseconds:
// 0 means no timeout.
func parseTimeout(c *engine.Ctx, arg []byte) (time.Duration, bool) {
	ms, ok := engine.ParseInt(arg)
	if !ok {
		c.W.WriteError("ERR timeout is not an integer or out of range")
		return 0, false
	}
	if ms < 0 {
		c.W.WriteError("ERR timeout is negative")
		return 0, false
	}
	if ms > math.MaxInt64-c.Eng.Clock().Wall().UnixMilli() { // the server's wall clock, as BLPOP's and CLIENT PAUSE's
		c.W.WriteError("ERR timeout is out of range")
		return 0, false
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, true // centuries: as good as none
	}
	return time.Duration(ms) * time.Millisecond, true
}

// WAIT numreplicas timeout
//
// No replica ever acknowledges: with numreplicas <= 0 (or inside a script
// or a transaction, where Redis does not block) the reply is 0 at once;
// otherwise WAIT blocks for the timeout (0: forever), then replies 0. It
// blocks as BLPOP does (blocking.go): INFO's blocked_clients and CLIENT
// LIST's 'b' count it, CLIENT UNBLOCK ends it (0, or the UNBLOCKED
// error), and on a manual clock its timeout passes when Advance moves the
// clock past it.
func (s *Server) cmdWait(c *engine.Ctx) {
	n, ok := engine.ParseInt(c.Args[1])
	if !ok {
		c.W.WriteError(engine.ErrNotInteger)
		return
	}
	timeout, ok := parseTimeout(c, c.Args[2])
	if !ok {
		return
	}
	if n > 0 && c.BlockNoKeys(timeout, waitExpired) {
		return
	}
	waitExpired(c.W)
}

// WAITAOF numlocal numreplicas timeout
//
// appendonly is off: numlocal 1 is refused, as Redis 7.2 refuses it; with
// numreplicas 0 the reply is [0, 0] at once, otherwise after the timeout.
func (s *Server) cmdWaitAOF(c *engine.Ctx) {
	local, ok := engine.ParseInt(c.Args[1])
	if !ok {
		c.W.WriteError(engine.ErrNotInteger)
		return
	}
	if local < 0 || local > 1 {
		c.W.WriteError("ERR value is out of range, value must between 0 and 1")
		return
	}
	replicas, ok := engine.ParseInt(c.Args[2])
	if !ok || replicas < 0 {
		c.W.WriteError("ERR value is out of range, must be positive")
		return
	}
	timeout, ok := parseTimeout(c, c.Args[3])
	if !ok {
		return
	}
	if local != 0 {
		c.W.WriteError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
		return
	}
	if replicas > 0 && c.BlockNoKeys(timeout, waitAOFExpired) {
		return
	}
	waitAOFExpired(c.W)
}

// waitExpired is WAIT's reply: no replica acknowledged.
func waitExpired(w engine.Writer) { w.WriteInt(0) }

// waitAOFExpired is WAITAOF's reply: no fsync, no replica.
func waitAOFExpired(w engine.Writer) {
	w.WriteArray(2)
	w.WriteInt(0)
	w.WriteInt(0)
}
