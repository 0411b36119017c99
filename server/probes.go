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
	if ms > math.MaxInt64-time.Now().UnixMilli() {
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
// No replica ever acknowledges: with numreplicas <= 0 (or inside a script,
// where Redis does not block) the reply is 0 at once; otherwise WAIT
// blocks for the timeout (0: until the server closes), then replies 0.
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
	if n > 0 && c.Script == nil {
		s.block(cl(c), timeout)
	}
	c.W.WriteInt(0)
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
	if replicas > 0 {
		s.block(cl(c), timeout)
	}
	c.W.WriteArray(2)
	c.W.WriteInt(0)
	c.W.WriteInt(0)
}

// block holds the connection for d (0: until the server closes), as a
// blocked Redis client waits. Pushes (pub/sub messages, invalidations)
// still go out meanwhile: no reply has been started.
func (s *Server) block(me *client, d time.Duration) {
	me.endCmd()
	defer me.beginCmd()
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	// A client that hangs up or is killed meanwhile is freed at once, as
	// Redis frees it: it must not hold a connection (maxclients) until the
	// timeout, which may be never.
	gone := me.fc.startReadAhead()
	defer me.fc.stopReadAhead()
	select {
	case <-tc:
	case <-s.done:
	case <-me.fx.killed:
	case <-gone:
		me.closeNow = true
	}
}
