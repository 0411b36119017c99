package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// The faults a lock client must survive, for tests: a stalled server
// (Pause, DEBUG SLEEP, CLIENT PAUSE), slow replies (SetLatency), dropped
// connections (DropConnections, CLIENT KILL), a crash and restart with or
// without its data (Restart, Config.RestartDelay) and failing commands
// (FailNext).

func (s *Server) registerFaultCommands() {
	const admin = engine.FlagNoKeys | engine.FlagNoScript | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale
	subs := s.eng.Lookup([]byte("client")).Subs
	subs["pause"] = &engine.Command{Name: "client|pause", Arity: -3, Flags: admin, Fn: s.cmdClientPause}
	subs["unpause"] = &engine.Command{Name: "client|unpause", Arity: 2, Flags: admin, Fn: s.cmdClientUnpause}
	subs["kill"] = &engine.Command{Name: "client|kill", Arity: -3, Flags: admin, Fn: s.cmdClientKill}
}

// ---- pauses ----

// Pause stalls the server for d, as a process stall or a long GC pause
// would: connections stay open and new ones are accepted, but no command
// is answered (nor run) until the pause ends; replies then come in order.
// Nothing else happens meanwhile either: active expiry holds still and
// pushes (invalidations, including those a fixture Set causes, pub/sub
// messages) wait; all of it happens when the pause ends. Held and
// WaitHeld tell how many commands the pause holds.
// d is measured on the server's clock: real time by default, and on a
// manual clock the pause lasts until Advance has moved the clock d
// forward (Advance ends it, and expires whatever the pause outlived, in
// one step). A new Pause replaces the previous one; d <= 0 ends it, as
// Unpause does. CLIENT PAUSE, by contrast, is Redis's command with Redis's
// rules.
func (s *Server) Pause(d time.Duration) {
	s.fx.pmu.Lock()
	if d <= 0 {
		s.fx.stallUntil = 0
	} else {
		s.fx.stallUntil = s.eng.Now() + ceilMs(d)
		s.fx.anyPause.Store(true)
	}
	s.fx.notifyLocked()
	s.fx.pmu.Unlock()
	s.eng.Kick() // the active expiry loop holds still, and resumes after
}

// Unpause ends a Pause now. It does not end a CLIENT PAUSE.
func (s *Server) Unpause() { s.Pause(0) }

// ceilMs is d in milliseconds, rounded up (without overflowing near
// math.MaxInt64, the usual "forever").
func ceilMs(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}

// notifyLocked wakes everything waiting for a pause to change. Requires pmu.
func (f *fixture) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fixture) notify() {
	f.pmu.Lock()
	f.notifyLocked()
	f.pmu.Unlock()
}

// pauseClass says which CLIENT PAUSE holds a command (a stall holds all).
type pauseClass int

const (
	pauseExempt  pauseClass = iota // none: rejected before running, or a MONITOR client's
	pauseByAll                     // CLIENT PAUSE ALL
	pauseByWrite                   // CLIENT PAUSE WRITE and ALL
)

// pausedLocked reports whether a command of class cls must wait at time
// now, and until when (0: until notified). Requires pmu.
func (f *fixture) pausedLocked(now int64, cls pauseClass) (until int64, paused bool) {
	if f.sleeps > 0 {
		return 0, true
	}
	if f.stallUntil != 0 {
		if now < f.stallUntil {
			return f.stallUntil, true
		}
		f.stallUntil = 0
	}
	if f.cpUntil != 0 {
		if now >= f.cpUntil {
			f.cpUntil = 0
		} else if cls == pauseByWrite || cls == pauseByAll && f.cpAll {
			return f.cpUntil, true
		}
	}
	if f.sleeps == 0 && f.stallUntil == 0 && f.cpUntil == 0 {
		f.anyPause.Store(false)
	}
	return 0, false
}

// stalledLocked reports whether the whole server is stalled at time now
// (DEBUG SLEEP, Pause), and until when (0: until notified). Requires pmu.
func (f *fixture) stalledLocked(now int64) (until int64, stalled bool) {
	if f.sleeps > 0 {
		return 0, true
	}
	if f.stallUntil != 0 && now < f.stallUntil {
		return f.stallUntil, true
	}
	return 0, false
}

// waitStalled waits while the server is stalled: a stalled process sends
// nothing, so output (replies and pushes alike) waits here. It reports
// false when the connection was killed or closed, or the server closed.
//
// With reply (the connection's own goroutine writes replies), the
// connection counts as held meanwhile (Held, WaitHeld), as one whose
// command waits to run does: a command that ran just before a Pause began
// has its reply held, and its client waits as surely (countReplyLocked).
func (s *Server) waitStalled(c *client, reply bool) bool {
	if !reply {
		return s.waitWhile(s.fx.stalledLocked, c.fx.killed, c.gone)
	}
	counted := false
	held := func(now int64) (int64, bool) {
		until, stalled := s.fx.stalledLocked(now)
		if stalled && !counted {
			counted = s.fx.countReplyLocked(c)
		}
		return until, stalled
	}
	defer func() {
		if counted {
			s.fx.pmu.Lock()
			s.fx.releaseReplyLocked(c) // (unless a kill took it out already)
			s.fx.pmu.Unlock()
		}
	}()
	return s.waitWhile(held, c.fx.killed, c.gone)
}

// countReplyWhileStalled counts c as held, as waitStalled does, when the
// server is stalled now: its own goroutine is about to wait for a write
// that the stall holds (the flusher's, which holds its write lock while a
// push waits in the stall). The func it returns takes the count back.
func (s *Server) countReplyWhileStalled(c *client) (uncount func()) {
	s.fx.pmu.Lock()
	defer s.fx.pmu.Unlock()
	if _, stalled := s.fx.stalledLocked(s.eng.Now()); !stalled || !s.fx.countReplyLocked(c) {
		return func() {}
	}
	return func() {
		s.fx.pmu.Lock()
		s.fx.releaseReplyLocked(c)
		s.fx.pmu.Unlock()
	}
}

// countReplyLocked counts c as held for a reply a stall holds, once: not
// when a command of it counts already (waitTurn, which sends the replies
// before it through here, sendBeforeWait) or it was killed (kill takes
// it out of the count at once). It is a count of its own: the 'b' flag
// and INFO's blocked_clients are for commands that wait to run. It
// reports whether it counted c. Requires pmu.
func (f *fixture) countReplyLocked(c *client) bool {
	if c.fx.held || c.fx.replyHeld || c.fx.dead.Load() {
		return false
	}
	c.fx.replyHeld = true
	f.replies++
	f.setWaitingLocked(f.waiting + 1)
	return true
}

// releaseReplyLocked takes c's held reply, if it counts, out of the
// count. Requires pmu.
func (f *fixture) releaseReplyLocked(c *client) {
	if c.fx.replyHeld {
		c.fx.replyHeld = false
		f.replies--
		f.setWaitingLocked(f.waiting - 1)
	}
}

// waitTurn holds a connection's command while the server is paused for
// it. Once the command counts as held (Held, WaitHeld), the replies before
// it go out (sendBeforeWait: a stall holds them too, so it must count
// first). A command let go still counts until it has run (heldRan): a
// test that waits for Held to reach 0 after Advance knows it has. It
// reports false when the connection was killed, hung up or the server
// closed meanwhile, or a write failed.
func (s *Server) waitTurn(c *client, cls pauseClass) (ok bool) {
	defer func() {
		s.fx.pmu.Lock()
		if ok && c.fx.held {
			c.fx.untilRun = true
		} else {
			s.fx.releaseHeldLocked(c)
		}
		s.fx.pmu.Unlock()
	}()
	held := func(now int64) (int64, bool) {
		until, paused := s.fx.pausedLocked(now, cls)
		// A killed connection's command is no longer held (kill took
		// it out of the count), though it still waits to see the kill.
		if paused && !c.fx.held && !c.fx.dead.Load() {
			// blocked (CLIENT LIST's 'b') before counted (Held, INFO
			// blocked_clients), so that whoever sees the count sees it
			c.fx.blocked.Store(true)
			s.fx.setWaitingLocked(s.fx.waiting + 1)
			c.fx.held = true
		}
		return until, paused
	}
	s.fx.pmu.Lock()
	_, h := held(s.eng.Now())
	s.fx.pmu.Unlock()
	if !h {
		return true
	}
	if !s.sendBeforeWait(c) {
		return false
	}
	s.fx.pmu.Lock()
	_, stalled := s.fx.stalledLocked(s.eng.Now())
	s.fx.pmu.Unlock()
	if stalled {
		// A stall (Pause, DEBUG SLEEP) reads nothing, as a stopped
		// process: a hang-up is seen once it ends, after the command
		// runs, as Redis runs what it read before a DEBUG SLEEP.
		return s.waitWhile(held, c.fx.killed, nil)
	}
	// A client that hangs up while CLIENT PAUSE holds its command is
	// freed at once, as Redis frees a postponed client (it reads the
	// socket while the command waits): it must not keep its connection
	// (maxclients) for the whole pause.
	gone := c.readAheadToLimit(nil)
	defer c.fc.stopReadAhead()
	return s.waitWhile(held, c.fx.killed, gone)
}

// waitWhile waits while held, called with pmu held, reports a hold at
// time now, and until when it lasts (0: until the fixture's state
// changes). It re-checks whenever the state changes or the hold's end
// comes (on a manual clock only the former: Advance changes the state).
// It reports false when killed or gone (either may be nil) or the server's
// done channel closes first.
func (s *Server) waitWhile(held func(now int64) (until int64, held bool), killed, gone <-chan struct{}) bool {
	manual := s.ManualClock() != nil
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.fx.pmu.Lock()
		now := s.eng.Now()
		until, h := held(now)
		changed := s.fx.changed
		s.fx.pmu.Unlock()
		if !h {
			return true
		}
		var tc <-chan time.Time
		if until != 0 && !manual {
			d := time.Duration(until-now) * time.Millisecond
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			tc = timer.C
		}
		select {
		case <-changed:
		case <-tc:
		case <-killed:
			return false
		case <-gone:
			return false
		case <-s.done:
			return false
		}
	}
}

// heldRan takes a command a pause held out of the count once it has run
// (or blocked, or been refused).
func (s *Server) heldRan(c *client) {
	c.fx.untilRun = false
	s.fx.pmu.Lock()
	s.fx.releaseHeldLocked(c)
	s.fx.pmu.Unlock()
}

// releaseHeldLocked takes c's held command, if it has one, out of the
// count. Requires pmu.
func (f *fixture) releaseHeldLocked(c *client) {
	if c.fx.held {
		c.fx.held = false
		f.setWaitingLocked(f.waiting - 1)
		c.fx.blocked.Store(false)
	}
}

// setWaitingLocked sets the count of held commands and wakes WaitHeld.
// Requires pmu.
func (f *fixture) setWaitingLocked(n int) {
	f.waiting = n
	close(f.waitingCh)
	f.waitingCh = make(chan struct{})
}

// waitingCommands returns how many commands are held by a pause (Held):
// waiting to run, or their replies held by a stall.
func (s *Server) waitingCommands() int {
	s.fx.pmu.Lock()
	defer s.fx.pmu.Unlock()
	return s.fx.waiting
}

// pausedCommands returns how many commands wait to run because of a pause
// (INFO's blocked_clients counts them): waitingCommands without the
// replies held.
func (s *Server) pausedCommands() int {
	s.fx.pmu.Lock()
	defer s.fx.pmu.Unlock()
	return s.fx.waiting - s.fx.replies
}

// Held returns how many commands are held right now by a Pause, a CLIENT
// PAUSE or a DEBUG SLEEP: received, and waiting to run (or, the pause
// over, not yet run). Under a Pause or DEBUG SLEEP, which send nothing,
// a command that ran just before the pause began and whose reply waits
// counts too, until the pause ends: its client is held as surely, so
// that a test can Pause a busy client and WaitHeld(1). A connection has
// at most one held command, the first the pause stopped: the commands it
// pipelined behind that one wait behind it and are not counted. Clients
// that send every caller's commands down one connection (a go-redis
// pipeline) therefore count once however many goroutines wait on them;
// rueidis pipelines them over a few connections a node (by default one
// to four, growing with GOMAXPROCS; PipelineMultiplex -1 makes it one),
// and counts once for each it used. A connection closed (DropConnections, CLIENT KILL, Restart)
// stops counting at once; when a pause ends, its commands stop counting
// once they have run (a blocking one once it blocks), a moment after
// Unpause or Advance returns: a test that waits for Held to reach 0 then
// sees their effects (the lock an abandoned SET NX took, say).
func (s *Server) Held() int { return s.waitingCommands() }

// WaitHeld waits until at least n commands are held (see Held: one per
// connection at most), for up to timeout of real time. A test that sends
// a command from another goroutine during a Pause calls it before
// Advance, so that the command is known to have reached the server and
// to be held, rather than to arrive after the pause. It returns an error
// when the timeout passes first, or ErrClosed when the server closes.
func (s *Server) WaitHeld(n int, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.fx.pmu.Lock()
		held, ch := s.fx.waiting, s.fx.waitingCh
		s.fx.pmu.Unlock()
		if held >= n {
			return nil
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Errorf("tumbler: %d commands held after %v, want %d", held, timeout, n)
		case <-s.done:
			return ErrClosed
		}
	}
}

// CLIENT PAUSE timeout [WRITE|ALL]
func (s *Server) cmdClientPause(c *engine.Ctx) {
	if len(c.Args) > 4 {
		c.W.WriteError(errSubcommandSyntax(c.Args))
		return
	}
	all := true
	if len(c.Args) == 4 {
		switch {
		case engine.EqFold(c.Args[3], "write"):
			all = false
		case engine.EqFold(c.Args[3], "all"):
		default:
			c.W.WriteError("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := engine.ParseInt(c.Args[2])
	if !ok {
		c.W.WriteError("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.W.WriteError("ERR timeout is negative")
		return
	}
	if ms > math.MaxInt64-s.cfg.Clock.Wall().UnixMilli() {
		// Redis 7.2's getTimeoutFromObjectOrReply, as for WAIT
		// (parseTimeout): its wall clock plus the timeout would overflow.
		// (7.0's sum wraps to an end in the past, and pauses nothing.)
		c.W.WriteError("ERR timeout is out of range")
		return
	}
	// end is the first millisecond the pause is over: as Redis's ends
	// once its end time is past (updateClientPauseTypeAndEndTime:
	// p->end < server.mstime), it lives through its last millisecond, as
	// a key does through its deadline's and BLPOP through its timeout's.
	var end int64
	if ms > 0 {
		end = c.Now + ms + 1
		if end < c.Now {
			end = 1<<63 - 1
		}
	}
	f := &s.fx
	f.pmu.Lock()
	if f.cpUntil != 0 && c.Now < f.cpUntil {
		// A pause in progress: the most restrictive mode and the later end win.
		f.cpAll = f.cpAll || all
		f.cpUntil = max(f.cpUntil, end)
	} else if end > c.Now {
		f.cpAll, f.cpUntil = all, end
	}
	if f.cpUntil != 0 {
		f.anyPause.Store(true)
	}
	s.eng.HoldLazyExpiry(f.cpUntil) // reads leave expired keys in place (Redis's expireIfNeeded)
	f.notifyLocked()
	f.pmu.Unlock()
	s.eng.Kick() // the active expiry loop holds still while clients are paused
	c.W.WriteStatus("OK")
}

// CLIENT UNPAUSE
func (s *Server) cmdClientUnpause(c *engine.Ctx) {
	s.fx.pmu.Lock()
	s.fx.cpUntil = 0
	s.eng.HoldLazyExpiry(0)
	s.fx.notifyLocked()
	s.fx.pmu.Unlock()
	c.W.WriteStatus("OK")
}

// errSubcommandSyntax is Redis's addReplySubcommandSyntaxError: the
// subcommand printed with %.128s, up to a NUL byte.
func errSubcommandSyntax(args [][]byte) string { return engine.ErrSubcommandSyntax(args) }

func upper(b []byte) string {
	out := []byte(string(b))
	for i, ch := range out {
		if 'a' <= ch && ch <= 'z' {
			out[i] = ch - 'a' + 'A'
		}
	}
	return string(out)
}

// WaitBlocked waits until at least n clients are blocked (BLPOP, BRPOP,
// BLMOVE, BLMPOP, BZPOPMIN, BZMPOP..., WAIT, WAITAOF: INFO's blocked_clients,
// less the commands a pause holds, which Held counts), for up to timeout of
// real time. A test that sends a blocking command from another goroutine
// calls it before Advance, so that the timeout is known to count from
// before the clock moved. It returns an error when the timeout passes
// first, or ErrClosed when the server closes.
func (s *Server) WaitBlocked(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		// (the engine lock: a busy script makes this wait for it)
		blocked := s.eng.BlockedClients()
		if blocked >= n {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("tumbler: %d clients blocked after %v, want %d", blocked, timeout, n)
		}
		select {
		case <-tick.C:
		case <-s.done:
			return ErrClosed
		}
	}
}

// ---- latency ----

// SetLatency delays every reply by d (real time), as a slow network
// would: a delay line. Each batch of replies a connection produces for
// one read of pipelined commands is written d after it is ready, and so
// is each batch of pushes (invalidations, pub/sub messages, MONITOR
// lines), in order. A command runs when it arrives, as ever (its effects
// are seen at once, from other connections too); only its reply waits,
// while the connection goes on reading and running the commands sent
// after it: a client that sends several callers' commands down one
// connection without waiting for replies (rueidis, go-redis's pipelines)
// gets each reply d after its command reached the server, however many
// are in flight. A blocked command's reply (BLPOP) is ready when it is
// served, and one a pause holds once it has run. A new latency applies
// to the replies that wait too (d after they were ready); 0 removes it
// and sends them at once. A new connection's handshake (HELLO, AUTH,
// SELECT) is delayed too: a client whose timeouts are shorter than d
// never gets connected. To model a node whose lock replies are slow, let
// the client connect (a PING) before setting the latency. A stall (Pause,
// DEBUG SLEEP) holds output before it enters the delay line: what waits
// in the line when one begins was sent, and still arrives during it.
//
// The replies that wait count as the connection's output (CLIENT LIST's
// omem, client-output-buffer-limit, maxmemory-clients): a client that
// pipelines without reading makes them grow, as it makes Redis's output
// buffer grow. A connection that ends (QUIT, or its client hangs up)
// still sends them first; one that is killed (CLIENT KILL,
// DropConnections, Restart) or breaks its output limit drops them; once
// the server closes they go out at once.
func (s *Server) SetLatency(d time.Duration) {
	s.fx.latency.Store(int64(max(d, 0)))
	s.fx.notify() // the delay lines wait anew (delayline.go)
}

// ---- connections ----

// DropConnections closes every client connection, as a network failure
// would; the server keeps listening. It returns how many it closed.
func (s *Server) DropConnections() int { return s.closeConnections() }

// DropClient closes the connection of the client whose CLIENT ID is id,
// as a network failure would, and reports whether it was open. A
// CommandRecord's ClientID names the client that sent a command: a test
// can cut off one lock holder and leave the rest connected.
func (s *Server) DropClient(id int64) bool {
	dropped := false
	s.clients.Range(func(k, _ any) bool {
		if c := k.(*client); c.ID == id {
			dropped = s.kill(c)
			return false
		}
		return true
	})
	return dropped
}

// closeConnections closes every connection accepted so far that no kill
// has closed yet, and returns how many. It walks the accept loop's record
// (fixtureAccepted) as well as the registered clients: a connection
// accepted a moment ago may not be a client yet, and closing its socket
// (which registered then refuses) is what keeps it from ever running a
// command. Killing the clients
// releases commands held by a pause.
func (s *Server) closeConnections() int {
	s.fx.regMu.Lock() // no client registers meanwhile (registered)
	defer s.fx.regMu.Unlock()
	n := 0
	clients := make(map[net.Conn]bool)
	// Clients first: kill only shuts down the socket of one an event
	// loop serves (closeNC), where Close would wait for the loop.
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		clients[c.nc] = true
		if s.kill(c) {
			n++
		}
		return true
	})
	s.fx.counted.Range(func(k, v any) bool {
		if nc := k.(net.Conn); !clients[nc] && v.(*acceptedConn).closed.CompareAndSwap(false, true) {
			_ = closeConn(nc)
			n++
		}
		return true
	})
	return n
}

// CLIENT KILL addr:port
// CLIENT KILL [ID id] [TYPE type] [USER user] [ADDR addr] [LADDR addr] [SKIPME yes|no] ...
func (s *Server) cmdClientKill(c *engine.Ctx) {
	me := cl(c)
	var addr, laddr, user, typ string
	var id int64
	skipme := true
	oldForm := len(c.Args) == 3
	if oldForm {
		addr = string(c.Args[2])
		skipme = false // with the old form a client may kill itself
	} else {
		for i := 2; i < len(c.Args); i += 2 {
			opt := c.Args[i]
			if i+1 >= len(c.Args) {
				c.W.WriteError(engine.ErrSyntax)
				return
			}
			val := c.Args[i+1]
			switch {
			case engine.EqFold(opt, "id"):
				n, ok := engine.ParseInt(val)
				if !ok || n < 1 {
					c.W.WriteError("ERR client-id should be greater than 0")
					return
				}
				id = n
			case engine.EqFold(opt, "type"):
				t, ok := clientTypeByName(val)
				if !ok {
					c.W.WriteError("ERR Unknown client type '" + string(engine.CStr(val)) + "'") // %s
					return
				}
				typ = t
			case engine.EqFold(opt, "addr"):
				addr = string(val)
			case engine.EqFold(opt, "laddr"):
				laddr = string(val)
			case engine.EqFold(opt, "user"):
				if !s.userExists(string(val)) {
					c.W.WriteError("ERR No such user '" + string(val) + "'")
					return
				}
				user = string(val)
			case engine.EqFold(opt, "skipme"):
				switch {
				case engine.EqFold(val, "yes"):
					skipme = true
				case engine.EqFold(val, "no"):
					skipme = false
				default:
					c.W.WriteError(engine.ErrSyntax)
					return
				}
			default:
				c.W.WriteError(engine.ErrSyntax)
				return
			}
		}
	}
	killed := 0
	s.clients.Range(func(k, _ any) bool {
		o := k.(*client)
		switch {
		case addr != "" && o.addr != addr,
			laddr != "" && o.laddr != laddr,
			typ != "" && s.clientType(o) != typ,
			id != 0 && o.ID != id,
			user != "" && s.clientUser(o) != user,
			o == me && skipme:
			return true
		}
		if o == me {
			me.closeNow = true // after this reply
			me.omu.Lock()
			me.ps.closing = true // and no push from now on (deliver)
			me.omu.Unlock()
		} else if !s.kill(o) {
			return true // gone already: closed by itself or evicted meanwhile
		}
		killed++
		return true
	})
	if !oldForm {
		c.W.WriteInt(int64(killed))
	} else if killed == 0 {
		c.W.WriteError("ERR No such client")
	} else {
		c.W.WriteStatus("OK")
	}
	if me.closeNow && c.InExec() {
		// Killed itself in a transaction: as in Redis, whose client then
		// takes no more output (CLIENT_CLOSE_AFTER_REPLY), the rest of
		// EXEC's replies are dropped, after the array header EXEC wrote
		// for them (a malformed reply, as Redis's).
		c.RestOfExec = discardWriter{proto: me.w.proto}
	}
}

// clientTypeByName maps a CLIENT KILL/LIST TYPE argument to a type.
func clientTypeByName(b []byte) (string, bool) {
	for _, t := range []string{"normal", "slave", "replica", "pubsub", "master"} {
		if engine.EqFold(b, t) {
			if t == "slave" {
				t = "replica"
			}
			return t, true
		}
	}
	return "", false
}

func (s *Server) clientUser(c *client) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return userOf(c)
}

// userExists reports whether an ACL user of that name (case-sensitive)
// exists.
func (s *Server) userExists(name string) bool { return s.eng.ACL().User(name) != nil }

// ---- restart ----

// Restart simulates a crash and restart of the server on the same
// address: the listeners and every connection close (clients see their
// connections drop and, until the server listens again, connections
// refused), then the server listens on the same ports again (its other
// bind addresses and its TLS port too, with TLS). With keepData
// false the keyspace and the functions (FUNCTION LOAD) come back empty,
// as on a node without persistence; with keepData true both are kept
// (deadlines keep running), as Redis keeps functions with its data. Either
// way the process-level state is fresh: no Pause, CLIENT PAUSE or MONITOR,
// active expiry on, an empty script cache (Redis 7 does not persist
// scripts, so clients see NOSCRIPT and fall back to EVAL), the settings
// the server started with (CONFIG SET changes are lost, as a restarted
// Redis reads its config file again), INFO's counters, commandstats,
// latency histograms, the slow log, LATENCY's events and the ACL LOG
// cleared, and a new run_id, with uptime (and LASTSAVE) counted from the
// restart. The command log, latency (SetLatency), pending FailNext
// failures, FailWhen predicates and the clock survive: they belong to
// the test. Config.RestartDelay starts
// again.
func (s *Server) Restart(keepData bool) error { return s.RestartAfter(0, keepData) }

// RestartAfter is Restart with the server down for d of real time: from
// the moment its connections drop until it listens again, connecting is
// refused, as while a crashed node is being brought back. It returns
// once the server listens again (ErrClosed if it was closed meanwhile).
// A client that redials on its own may outlast a short d and see no
// error at all: go-redis retries a dial DialerRetries times (5 by
// default, with backoff), then talks to the restarted, empty node. Set
// DialerRetries: 1, or make d longer than the retries, to see the outage.
func (s *Server) RestartAfter(d time.Duration, keepData bool) error {
	self := goroutineID()
	defer s.fx.conns.calling(self)() // (before the lock: a predicate's Restart waits for another's)
	s.fx.restartMu.Lock()
	defer s.fx.restartMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if !s.started {
		s.mu.Unlock()
		return errors.New("tumbler: Restart before Start")
	}
	lns, acceptDone := s.listeners(), s.fx.acceptDone
	s.mu.Unlock()

	for _, ln := range lns {
		_ = ln.Close()
	}
	<-acceptDone // no connection is accepted from here on
	s.closeConnections()
	// Wait for every old connection's goroutine to return. A crash stops a
	// running script too: keep killing whatever script a dying connection
	// runs (one may have started just before its connection was closed).
	// (A FailWhen predicate that called this Restart is not waited for:
	// goroutines.)
	tick := time.NewTicker(5 * time.Millisecond)
	for {
		s.vm.Kill()
		done, changed := s.fx.conns.state(self)
		if done {
			break
		}
		select {
		case <-changed:
		case <-tick.C:
		}
	}
	tick.Stop()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-s.done:
			return ErrClosed
		}
	}

	s.fx.pmu.Lock()
	s.fx.stallUntil, s.fx.cpUntil = 0, 0
	s.eng.HoldLazyExpiry(0)
	s.fx.notifyLocked()
	s.fx.pmu.Unlock()
	s.eng.SetActiveExpiry(true)
	s.vm.Flush()
	// A restarted Redis reads its configuration again (CONFIG SET changes
	// are lost) and starts its statistics and slow log afresh.
	s.prod.mu.Lock()
	start := s.cfg
	// It listens where it listened (below), a CONFIG SET port or bind
	// included, and CONFIG GET says so.
	now := s.live()
	start.Addr, start.ExtraAddrs, start.TLSOnly, start.TLSAddr, start.NoBind = now.Addr, now.ExtraAddrs, now.TLSOnly, now.TLSAddr, now.NoBind
	s.applyLive(&start)
	if s.prod.tlsLive.Load() != nil { // the started-with certificates, as a new process loads them
		if tc, err := buildTLSConfig(&start); err == nil {
			s.prod.tlsLive.Store(tc)
		} else {
			s.log.Error("restart: cannot configure TLS with the started-with settings; keeping the live ones", "err", err)
		}
	}
	s.setOOMScoreAdj(&start)                    // as a new redis-server process sets it (oomscore.go)
	if msg := s.startUsers(&start); msg != "" { // the configured users again (acl.go)
		s.log.Error("cannot load the configured users", "err", msg)
	}
	s.prod.mu.Unlock()
	s.eng.ResetStats()
	s.eng.SlowlogReset()
	s.eng.Reborn() // a new process: its own run_id, uptime from zero
	if !keepData {
		s.call("flushall")
		s.call("function", "flush") // Redis keeps functions with its data, in the RDB
	}

	// Every listener comes back on its address: the other bind addresses
	// and the TLS port (with its TLS configuration) too.
	nls := make([]net.Listener, 0, len(lns))
	closeAll := func() {
		for _, nl := range nls {
			_ = nl.Close()
		}
	}
	for _, ln := range lns {
		var nl net.Listener
		var err error
		if isUnixListener(ln) {
			nl, err = listenUnix(ln.Addr().String(), unixSocketPerm(&start))
		} else {
			nl, err = s.relisten(ln.Addr().String())
		}
		if err != nil {
			closeAll()
			return err
		}
		if tl, ok := ln.(*tlsListener); ok {
			nl = &tlsListener{Listener: tls.NewListener(nl, tl.cfg), cfg: tl.cfg}
		}
		nls = append(nls, nl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		closeAll()
		return ErrClosed
	}
	s.setListeners(nls) // (none, when CONFIG SET left it listening nowhere)
	s.beginServing()
	return nil
}

// restartListenFor bounds how long Restart tries to listen again.
const restartListenFor = time.Second

// relisten listens on the address the server had before Restart. Another
// listener may take the port in the moment it is free: while the address
// is in use, relisten tries again, for up to restartListenFor.
func (s *Server) relisten(addr string) (net.Listener, error) {
	listen := s.fx.listen
	if listen == nil {
		listen = listenClients
	}
	deadline := time.Now().Add(restartListenFor)
	for {
		nl, err := listen(addr)
		if err == nil {
			return nl, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return nil, fmt.Errorf("tumbler: restart: cannot listen on %s again (another listener took the port while the server was down?): %w", addr, err)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-s.done:
			return nil, ErrClosed
		}
	}
}

// ---- injected failures ----

// FailNext makes the next n commands, whatever they are, fail with the
// error msg instead of running ("ERR boom", "OOM command not allowed when
// used memory > 'maxmemory'."; the first word is the error code clients
// see, the leading '-' is added). Some clients act on some codes rather
// than report them: go-redis v9 retries READONLY, LOADING, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN, NOREPLICAS and "ERR max number of clients
// reached" (its MaxRetries, 3 by default), so a test that injects one
// of those once sees the retry succeed. Connection handshakes count too: use
// FailNextCmd to aim at one command. Failures queue up behind earlier
// ones and are consumed in order, from every client; commands run inside
// scripts are not affected. A failure is a rejection, as Redis's
// (READONLY, OOM): inside MULTI it dooms the transaction, whose EXEC then
// replies EXECABORT, and a failed EXEC replies "EXECABORT Transaction
// discarded because of: " and msg (less a leading "ERR ", as Redis words
// it), and discards the transaction. A leading '-' in msg is dropped: the
// reply has one.
func (s *Server) FailNext(n int, msg string) { s.fx.fails.add("", "", n, msg) }

// FailNextCmd is FailNext for commands named name only (case-insensitive
// in ASCII, as Redis compares names: "set", "evalsha"; "client" for every
// CLIENT subcommand, "client|id" for one); other commands run normally.
// A command renamed (Config.RenameCommands) is named by its new name. The name is the one sent: most lock
// clients release and extend with EVALSHA (redsync, redislock, Redisson),
// falling back to EVAL after NOSCRIPT, so aim at "evalsha" (or at both,
// or use FailWhen). It panics when name is not a command the server
// serves, which would never match.
func (s *Server) FailNextCmd(name string, n int, msg string) {
	// ASCII case only, as Redis compares command names (strcasecmp): a
	// command renamed to a name that is no ASCII is found by that name
	cmd, sub, _ := strings.Cut(engine.LowerASCII(name), "|")
	c := s.eng.Lookup([]byte(cmd))
	if c != nil && sub != "" {
		c = c.Subs[sub]
	}
	if c == nil || strings.ContainsAny(name, " \t") {
		panic(fmt.Sprintf("tumbler: FailNextCmd(%q): no such command (a subcommand is \"container|sub\": \"client|id\")", name))
	}
	s.fx.fails.add(cmd, sub, n, msg)
}

// FailWhen makes every command for which fn reports true fail with the
// error fn returns ("" is "ERR injected failure"), as FailNext does, until
// the returned stop is called (or ClearFailures). fn sees each command a
// client sends as Commands records it, and decides from its name, its
// arguments or its client: fail only the release of one lock, only one
// client's commands, or every write after some point. It is consulted
// after the FailNext queue, and predicates in the order installed: the
// first to report true decides. It is called from the connections'
// goroutines (never an event loop's), concurrently: it must be safe for
// that, and should be quick (it holds its client's connection). It may
// call any of the Server's methods (Get, FailNext, stop, DropClient...),
// Restart and Close included, to crash the node as a command arrives:
// that command then does not run, its connection gone. (Its client sees
// the connection drop before such a Restart has finished, so the data
// may still be there when the client's error comes back: a test that
// looks at the server then should wait for a signal fn sends once
// Restart has returned.) It must not wait
// for another command of its own connection. A panic in fn answers the
// command with "ERR internal error". Commands run inside scripts are not
// shown to it. A call begun when stop is called may still end, and fail
// its command, after stop returns. A command that a pause (Pause, CLIENT
// PAUSE, DEBUG SLEEP) holds meets the predicates installed by the time
// the pause lets it run, as it meets the FailNext failures queued by then:
// a test can Pause, WaitHeld, then decide how the held command fails.
func (s *Server) FailWhen(fn func(cmd CommandRecord) (msg string, fail bool)) (stop func()) {
	return s.fx.fails.addPred(fn)
}

// PendingFailures counts the failures FailNext and FailNextCmd queued and
// not yet used (FailWhen's are not counted): a test can check that the
// failure it queued went to the command it meant, not to a connection's
// handshake (go-redis v9 sends HELLO first on every new connection, and
// goes on in RESP2 when it fails).
func (s *Server) PendingFailures() int { return s.fx.fails.pending() }

// ClearFailures drops the failures FailNext and FailNextCmd queued and
// not yet used, and every FailWhen predicate.
func (s *Server) ClearFailures() { s.fx.fails.clear() }
