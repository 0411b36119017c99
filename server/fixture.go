package server

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
	"github.com/tumblerdb/tumbler/engine"
)

// This file holds the test-fixture state of a Server and the hooks through
// which the connection loop consults it: pauses and stalls, injected
// failures, the command log, MONITOR, and the restart delay. The faults
// themselves are in faults.go, MONITOR and CLIENT LIST in monitor.go,
// DEBUG in debug.go.

// fixture is the Server's fault and inspection state (Server.fx).
type fixture struct {
	// Pauses. pmu guards the fields below it; changed is closed (and
	// replaced) whenever one of them changes, waking every waiter.
	pmu          sync.Mutex
	changed      chan struct{}
	anyPause     atomic.Bool   // fast path: false when nothing below is set
	stallUntil   int64         // Pause: end on the server clock (mono ms); 0 = none
	sleeps       int           // DEBUG SLEEPs in progress
	cpUntil      int64         // CLIENT PAUSE end: its first millisecond over (mono ms); 0 = none
	cpAll        bool          // CLIENT PAUSE ALL (else WRITE)
	waiting      int           // commands held by a pause right now (Held)
	replies      int           // of which replies a stall holds (countReplyLocked)
	waitingCh    chan struct{} // closed (and replaced) when waiting changes
	expiryParked bool          // the active expiry loop is held

	latency     atomic.Int64 // SetLatency, ns
	refuseUntil atomic.Int64 // restart delay end (mono ms); 0 = none

	fails failRules
	log   cmdLog

	mmu      sync.Mutex
	monitors atomic.Pointer[[]*client]

	// Restart bookkeeping.
	restartMu  sync.Mutex
	conns      goroutines                              // connection goroutines started by acceptLoop
	counted    sync.Map                                // net.Conn -> *acceptedConn: the ones conns counts
	acceptDone chan struct{}                           // closed when the current accept loop returns; guarded by Server.mu
	listen     func(addr string) (net.Listener, error) // Restart's listen; nil is net.Listen (tests replace it)
	// regMu orders register (held for reading) against closeConnections
	// (for writing): a client registered while the connections are
	// closed is either seen by its walk of the clients, or sees that
	// its connection was closed and leaves (registered).
	regMu sync.RWMutex

	self      engine.Client // the client of the fixture's own calls (Get, Set, Restart)
	hooksOnce sync.Once
	// selves are the clients of the fixture's calls in other databases
	// (DB), each SELECTed once, by database; guarded by selfMu. Like
	// self, they have no Conn (isSelf).
	selfMu sync.Mutex
	selves map[int]*engine.Client
}

// connFixture is a connection's fixture state (client.fx).
type connFixture struct {
	killed   chan struct{} // closed by kill
	dead     atomic.Bool   // set by kill: no command of it runs any more
	killOnce sync.Once
	created  int64        // server clock, mono ms
	last     atomic.Int64 // last interaction (a read of requests), as Redis's lastinteraction
	lastCmd  atomic.Pointer[engine.Command]
	monitor  atomic.Bool
	blocked  atomic.Bool // waiting in a blocking command or held by a pause: CLIENT LIST's 'b'
	held     bool        // a command of it counts as held by a pause (Held); guarded by Server.fx.pmu
	// replyHeld: its reply, held by a stall, counts as a held command
	// (waitStalled) instead; guarded by Server.fx.pmu
	replyHeld bool
	untilRun  bool // held by a pause that has ended: still counted until it has run (heldRan); its goroutine's own
	feed      bool // show the running command to MONITOR once it has run
}

// initFixture is called by New.
func (s *Server) initFixture() {
	s.fx.changed = make(chan struct{})
	s.fx.waitingCh = make(chan struct{})
	s.fx.log.init(s.cfg.CommandLog)
	s.registerFaultCommands()
	s.registerMonitor()
	s.registerDebug()
}

// beginServing starts an accept loop on s.ln and each of the other
// listeners (s.prod.extra: more bind addresses, TLS) and, for a
// (re)start, the restart delay. Start and Restart call it with s.mu held.
func (s *Server) beginServing() {
	s.fx.hooksOnce.Do(s.wrapCommands)
	if d := s.cfg.RestartDelay; d > 0 {
		s.fx.refuseUntil.Store(s.eng.Now() + int64(d/time.Millisecond))
	}
	s.serveListeners()
}

// serveListeners starts an accept loop on s.ln and each of s.prod.extra,
// and a new acceptDone, closed when they have all returned (Start,
// Restart and CONFIG SET's rebind call it with s.mu held).
func (s *Server) serveListeners() {
	done := make(chan struct{})
	s.fx.acceptDone = done // closed when every accept loop has returned
	var loops sync.WaitGroup
	for _, ln := range s.listeners() {
		loops.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer loops.Done()
			s.acceptLoop(ln)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		loops.Wait()
		close(done)
	}()
}

// fixtureAccepted counts a connection acceptLoop is about to serve, so
// that Restart and DropConnections can close it before its goroutine has
// registered it as a client, and Restart can wait for that goroutine.
func (s *Server) fixtureAccepted(nc net.Conn) {
	s.fx.conns.Add(1)
	s.fx.counted.Store(nc, &acceptedConn{})
}

// acceptedConn is the fixture's record of an accepted connection.
type acceptedConn struct {
	closed atomic.Bool // closed by kill or closeConnections: counted once
}

// registered stores c in the client list, and reports false, leaving it
// out, if closeConnections closed its connection before that (Restart,
// DropConnections). Its goroutine may still read a command the client
// sent before the close, which must not run: the client saw its
// connection dropped.
func (s *Server) registered(c *client) bool {
	s.fx.regMu.RLock()
	defer s.fx.regMu.RUnlock()
	if a, ok := s.fx.counted.Load(c.nc); ok && a.(*acceptedConn).closed.Load() {
		return false
	}
	s.clients.Store(c, struct{}{})
	return true
}

// fixtureConnStart sets up a new connection's fixture state.
func (s *Server) fixtureConnStart(c *client) {
	c.fx.killed = make(chan struct{})
	now := s.eng.Now()
	c.fx.created = now
	c.fx.last.Store(now)
}

// fixtureConnEnd runs when a connection's goroutine ends.
func (s *Server) fixtureConnEnd(c *client) {
	if c.fx.monitor.Load() {
		s.removeMonitor(c)
	}
	if _, ok := s.fx.counted.LoadAndDelete(c.nc); ok {
		s.fx.conns.Done()
	}
}

// kill closes a connection from another goroutine (CLIENT KILL,
// DropConnections, Restart); a command of it waiting in a pause gives up.
// The client leaves the client list at once, as Redis frees it: a later
// CLIENT LIST, CLIENT KILL or connected_clients does not see it while its
// goroutine winds down (unregister then finds it gone). It reports
// whether it took the client out of the list (false: it had gone, or
// another kill took it).
func (s *Server) kill(c *client) bool {
	c.fx.dead.Store(true)
	c.Kill() // a command it has blocked on keys is served nothing more
	// Out of the list before anything can wake its goroutine (the killed
	// channel, the socket's close): its unregister must find it gone, or
	// this kill would not count it.
	_, loaded := s.clients.LoadAndDelete(c)
	if loaded {
		s.nconns.Add(-1)
	}
	s.uncountPush(c)
	// Its held command no longer counts (Held, WaitHeld) from now, not
	// from when its goroutine gets to see the kill. (dead is set first:
	// waitTurn, under pmu, does not count a dead connection's command.)
	s.fx.pmu.Lock()
	s.fx.releaseHeldLocked(c)
	s.fx.releaseReplyLocked(c)
	s.fx.pmu.Unlock()
	if a, ok := s.fx.counted.Load(c.nc); ok {
		a.(*acceptedConn).closed.Store(true)
	}
	c.fx.killOnce.Do(func() { close(c.fx.killed) })
	c.closeNC()
	return loaded
}

// fixtureBefore runs before each command of a connection: it logs the
// command, waits out pauses, and answers injected failures and the
// restrictions of MONITOR mode itself. It reports whether the command
// should run; when it should not, the reply is written (or the connection
// is gone).
func (s *Server) fixtureBefore(c *client) bool {
	// A killed client runs nothing more, as Redis's processInputBuffer
	// stops at CLIENT_CLOSE_ASAP: a socket an event loop had when it was
	// killed is only shut down, and Linux still hands over the bytes
	// received before that.
	if c.fx.dead.Load() {
		c.closeNow = true
		return false
	}
	// Read once: a pause that begins after this read does not hold the
	// command (nor may it make an event loop wait), and FailWhen's
	// predicates installed after it do not see it (unless a pause holds
	// the command: see below).
	paused := s.fx.anyPause.Load()
	preds := s.fx.fails.preds.Load()
	if (paused || preds) && c.loopLeaveFirst() {
		// An event loop never waits, nor runs a predicate (which may
		// block, or call Restart: take): the goroutine will.
		return false
	}
	args := c.ctx.Args
	cmd := s.lookupCmd(c)
	c.fx.lastCmd.Store(cmd)

	// Only commands Redis would get to run can be paused or shown to
	// MONITOR: unknown commands, arity errors, protected commands refused
	// by their enable-*-command (Guard) and unauthenticated calls are
	// answered at once.
	valid := cmd != nil && arityOK(cmd, len(args)) && (cmd.Guard == nil || cmd.Guard(&c.ctx) == "") &&
		!(c.NeedsAuth && cmd.Flags&engine.FlagNoAuth == 0) &&
		c.Client.Allows(cmd, args) // ACL: a refused command is not shown either (engine/acl.go)
	if paused {
		// what ran before this command counts while it waits, as in
		// Redis (INFO sees it; CONFIG RESETSTAT clears it)
		s.eng.FlushStats(&c.ctx)
		ok := s.waitTurn(c, s.pauseClassOf(c, cmd, valid))
		c.ctx.Unchain() // a pause is not the command's time
		if !ok {
			c.closeNow = true
			return false
		}
		// The predicates installed while it was held see it, as the
		// FailNext failures queued meanwhile do: it runs now, on its
		// goroutine (loopLeaveFirst), where a predicate may run.
		preds = s.fx.fails.preds.Load()
	}
	if valid && c.fx.monitor.Load() && touchesKeyspace(cmd) {
		c.w.WriteError("ERR Replica can't interact with the keyspace")
		return false
	}
	msg, fail := s.fx.fails.take(s, c, args, preds)
	if preds && (c.fx.dead.Load() || s.closing.Load()) {
		// A predicate called Restart, DropConnections or Close (or
		// another goroutine did meanwhile): the connection is gone, and
		// its command does not run.
		c.closeNow = true
		return false
	}
	if fail {
		s.eng.Reject(&c.ctx, cmd, msg) // a rejection: flags an open MULTI, as Redis's rejectCommand
		return false
	}
	// Redis shows scripts to MONITOR before they run (so that their
	// commands follow them), everything else once it has run.
	c.fx.feed = false
	// A command queued by MULTI is shown when EXEC runs it (wrapCommands).
	if valid && s.monitoring() && !skipMonitor(cmd) && !c.ctx.WouldQueue(cmd) {
		if feedsBefore(cmd) {
			s.feedMonitors(c, c.DB(), args)
		} else {
			c.fx.feed = true
		}
	}
	return true
}

// sendBeforeWait writes the replies of the commands a connection ran
// before one that a pause holds (waitTurn), as Redis does: a postponed
// client's output buffer goes out in beforeSleep like any other (a
// pipelined GET answered before the SET after it waits). It reports false
// when the connection ends.
func (s *Server) sendBeforeWait(c *client) bool {
	if !c.w.shared && c.w.size() == 0 { // (a shared buffer is not read unlocked)
		return true
	}
	s.afterBatch(c) // tracking: BCAST invalidations first, as in beforeSleep (tracking.go)
	s.replyStall(c) // a stall holds them (a stopped process sends nothing); SetLatency delays them (flush)
	return c.flush() == nil
}

// fixtureAfter runs after a command that fixtureBefore let through.
func (s *Server) fixtureAfter(c *client) {
	if c.fx.feed && s.monitoring() {
		s.feedMonitors(c, c.DB(), c.ctx.Args) // the database after the command (a SELECT's new one), as Redis's call()
	}
}

// replyStall holds a connection's replies back while the server is
// stalled, before its goroutine flushes them (see holdOutput). A
// push-capable connection's flushes hold their output back themselves
// (flushShared).
func (s *Server) replyStall(c *client) {
	if c.w.shared || c.w.size() == 0 || !s.fx.anyPause.Load() {
		return
	}
	s.holdOutput(c, true)
}

// holdOutput holds a connection's output back while the server is
// stalled (Pause, DEBUG SLEEP: a stopped process sends nothing, pushes
// included). reply says the connection's own goroutine writes it,
// replies to its commands among it: the stall then counts the
// connection as held (waitStalled). SetLatency's delay comes after, as
// the output is written (delayline.go).
func (s *Server) holdOutput(c *client, reply bool) {
	if s.fx.anyPause.Load() {
		s.waitStalled(c, reply)
	}
}

// lookupCmd resolves c's command to a command or subcommand, or nil.
func (s *Server) lookupCmd(c *client) *engine.Command {
	args := c.ctx.Args
	if len(args) == 0 {
		return nil
	}
	cmd := s.eng.LookupFor(&c.ctx)
	if cmd == nil || cmd.Subs == nil || len(args) < 2 {
		return cmd
	}
	if sub := cmd.Subs[engine.LowerASCII(string(args[1]))]; sub != nil {
		return sub
	}
	return nil
}

func arityOK(cmd *engine.Command, n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity
}

// mayReplicate lists the commands Redis flags may-replicate: CLIENT PAUSE
// WRITE holds them like writes.
var mayReplicate = map[string]bool{"eval": true, "evalsha": true, "fcall": true, "pfcount": true, "publish": true, "spublish": true}

// pauseClassOf says which CLIENT PAUSE holds cmd. MONITOR clients are
// exempt, as Redis exempts replicas; WRITE holds writes, may-replicate
// commands and an EXEC whose queue has one (Redis: mstate.cmd_flags).
func (s *Server) pauseClassOf(c *client, cmd *engine.Command, valid bool) pauseClass {
	switch {
	case !valid || c.fx.monitor.Load():
		return pauseExempt
	case s.pausedByWrite(cmd, c.ctx.Args), cmd.Name == "exec" && c.AnyQueued(s.pausedByWrite):
		return pauseByWrite
	}
	return pauseByAll
}

// pausedByWrite reports whether CLIENT PAUSE WRITE holds cmd with args.
// A script's shebang flags decide for EVAL, EVALSHA and their _RO forms,
// and a function's flags for FCALL and FCALL_RO, as in Redis: one flagged
// no-writes is neither a write nor may-replicate, one without is a write.
func (s *Server) pausedByWrite(cmd *engine.Command, args [][]byte) bool {
	switch cmd.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		if len(args) > 1 {
			return s.vm.MayWrite(strings.HasPrefix(cmd.Name, "evalsha"), strings.HasSuffix(cmd.Name, "_ro"), args[1])
		}
	case "fcall", "fcall_ro":
		if len(args) > 1 {
			if fl, ok := s.eng.FunctionFlags(args[1]); ok {
				return fl.Writes()
			}
		}
	}
	return cmd.Flags&engine.FlagWrite != 0 || mayReplicate[cmd.Name]
}

// touchesKeyspace reports whether a MONITOR client is refused cmd.
func touchesKeyspace(cmd *engine.Command) bool {
	return cmd.Flags&(engine.FlagWrite|engine.FlagReadonly) != 0 || mayReplicate[cmd.Name]
}

// wrapCommands wraps every command's handler once, before the server
// first serves, so that commands run inside scripts (and any other nested
// call) are shown to MONITOR as [0 lua] and obey the restart delay.
// Commands registered after Start are not wrapped.
func (s *Server) wrapCommands() {
	var wrap func(cmd *engine.Command)
	wrap = func(cmd *engine.Command) {
		for _, sub := range cmd.Subs {
			wrap(sub)
		}
		fn := cmd.Fn
		if fn == nil {
			return
		}
		write := writeDelayed(cmd)
		name, feed, before := cmd.Name, !skipMonitor(cmd), feedsBefore(cmd)
		cmd.Fn = func(c *engine.Ctx) {
			// A script's command, and a command EXEC runs from its
			// queue, is shown as Redis's call() shows it: once it has
			// run, in the database it ran in (after a SELECT, the new
			// one); a script EXEC runs is shown before it runs.
			var from *client // nil: a script's command ("lua")
			mon := feed && s.monitoring()
			if mon && c.Script == nil {
				if mon = c.InExec(); mon {
					from = cl(c)
				}
			}
			if mon && before && from != nil {
				s.feedMonitors(from, s.eng.CurrentDB(), c.Args)
				mon = false
			}
			if !(write && s.refuseWrite(c, name)) {
				fn(c)
			}
			if mon {
				s.feedMonitors(from, s.eng.CurrentDB(), c.Args)
			}
		}
	}
	for _, cmd := range s.eng.Commands() {
		wrap(cmd)
	}
	s.eng.SetWriteGate(s.refusesWrite)
}

// refusing reports the end of the restart delay, and the time now, when
// it refuses c's writes (until 0: it does not).
func (s *Server) refusing(c *engine.Ctx) (until, now int64) {
	until = s.fx.refuseUntil.Load()
	if until == 0 || isSelf(c.Client) {
		return 0, 0
	}
	now = c.Now
	if now == 0 {
		now = s.eng.Now()
	}
	if now >= until {
		s.fx.refuseUntil.CompareAndSwap(until, 0)
		return 0, 0
	}
	return until, now
}

// refusesWrite reports whether wrapCommands's wrapper refuses cmd from c
// now, or (cmd nil) would refuse a write (engine.SetWriteGate: a native
// lock script leaves such a call to Lua).
func (s *Server) refusesWrite(c *engine.Ctx, cmd *engine.Command) bool {
	if cmd != nil && !writeDelayed(cmd) {
		return false
	}
	until, _ := s.refusing(c)
	return until != 0
}

// writeDelayed reports whether the restart delay holds cmd back: writes
// of keys (FUNCTION LOAD and the like write functions, not keys).
func writeDelayed(cmd *engine.Command) bool {
	return cmd.Flags&engine.FlagWrite != 0 && !strings.HasPrefix(cmd.Name, "function|")
}

// refuseWrite answers a write during the restart delay and reports
// whether it did. Lock grants (SET NX, SETNX, MSETNX) get the reply of a
// lock held by someone else; every other write gets an error.
func (s *Server) refuseWrite(c *engine.Ctx, name string) bool {
	until, now := s.refusing(c)
	if until == 0 {
		return false
	}
	switch name {
	case "set":
		for _, a := range c.Args[3:] {
			if engine.EqFold(a, "nx") {
				c.W.WriteNull()
				return true
			}
		}
	case "setnx", "msetnx":
		c.W.WriteInt(0)
		return true
	}
	c.W.WriteError("ERR restart delay: this node restarted and refuses writes for another " +
		strconv.FormatInt(until-now, 10) + " ms, so that a lock it forgot is not granted twice")
	return true
}

// ---- injected failures ----

type failRule struct {
	name string // lower-case command name; "" matches any command
	sub  string // lower-case subcommand name; "" matches any
	n    int
	msg  string
}

// failRules holds the injected failures: the FailNext queue, whose rules
// are consumed in the order given, and the FailWhen predicates.
type failRules struct {
	any   atomic.Bool // fast path: false when there are neither rules nor predicates
	preds atomic.Bool // there are predicates: a command leaves its event loop to see them (fixtureBefore)
	mu    sync.Mutex
	rules []failRule
	fns   []*failPred
}

// failPred is one FailWhen predicate; a pointer, so that its stop
// function removes this one and no other.
type failPred struct {
	fn func(CommandRecord) (string, bool)
}

func (f *failRules) anyLocked() {
	f.any.Store(len(f.rules) > 0 || len(f.fns) > 0)
	f.preds.Store(len(f.fns) > 0)
}

func (f *failRules) add(name, sub string, n int, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n <= 0 {
		return
	}
	f.rules = append(f.rules, failRule{name: name, sub: sub, n: n, msg: failMsg(msg)})
	f.anyLocked()
}

// failMsg is the error an injected failure replies: msg without a
// leading '-' (the reply adds one), or a default.
func failMsg(msg string) string {
	if msg = strings.TrimPrefix(msg, "-"); msg == "" {
		msg = "ERR injected failure"
	}
	return msg
}

func (f *failRules) addPred(fn func(CommandRecord) (string, bool)) (stop func()) {
	p := &failPred{fn: fn}
	f.mu.Lock()
	f.fns = append(f.fns, p)
	f.anyLocked()
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if i := slices.Index(f.fns, p); i >= 0 {
			f.fns = slices.Delete(slices.Clone(f.fns), i, i+1) // take may be ranging over the old one
			f.anyLocked()
		}
	}
}

func (f *failRules) clear() {
	f.mu.Lock()
	f.rules, f.fns = nil, nil
	f.anyLocked()
	f.mu.Unlock()
}

// pending counts the failures the queue has left to give.
func (f *failRules) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.rules {
		n += r.n
	}
	return n
}

// take consumes the first queued rule matching the command, if any, and
// otherwise, when withPreds, asks the predicates in the order they were
// installed. The predicates run without the lock, so that one may
// install or stop another (or itself).
func (f *failRules) take(s *Server, c *client, args [][]byte, withPreds bool) (string, bool) {
	if !f.any.Load() {
		return "", false
	}
	f.mu.Lock()
	for i := range f.rules {
		r := &f.rules[i]
		if r.name != "" && !engine.EqFold(args[0], r.name) ||
			r.sub != "" && (len(args) < 2 || !engine.EqFold(args[1], r.sub)) {
			continue
		}
		msg := r.msg
		if r.n--; r.n == 0 {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			f.anyLocked()
		}
		f.mu.Unlock()
		return msg, true
	}
	preds := f.fns // never changed in place: add appends, stop copies
	f.mu.Unlock()
	if len(preds) == 0 || !withPreds {
		return "", false
	}
	// The connection's goroutine (never an event loop's: fixtureBefore)
	// is away while the predicates run, and its push flusher if it has
	// one (enablePush: it ends when the connection does): a predicate may
	// call Restart or Close, which wait for every other (goroutines).
	id, own := goroutineID(), 1
	if c.w.shared {
		own = 2
	}
	s.wg.leave(id, own)
	s.fx.conns.leave(id, 1)
	defer s.wg.back(id, own)
	defer s.fx.conns.back(id, 1)
	rec := newRecord(s, c, args)
	for _, p := range preds {
		if msg, fail := p.fn(rec); fail {
			return failMsg(msg), true
		}
	}
	return "", false
}

// ---- command log ----

// CommandRecord is one command a client sent, as Commands reports it.
type CommandRecord struct {
	// Time is the server clock's wall time when the command arrived (the
	// manual clock's, when the server runs on one).
	Time time.Time
	// ClientID is the connection's CLIENT ID; Addr its address.
	ClientID int64
	Addr     string
	// ClientName is the connection's name (CLIENT SETNAME, HELLO ...
	// SETNAME), "" if it has none: as the command arrived in Commands,
	// as it is about to run in FailWhen. A pooled
	// client opens many connections, each with its own ClientID, but
	// names them all alike when told to (go-redis's Options.ClientName,
	// rueidis's ClientOption.ClientName): FailWhen can pick every command
	// of one client by it.
	ClientName string
	// Args are the command and its arguments, exactly as sent: AUTH and
	// HELLO ... AUTH keep their passwords (MONITOR redacts them), so that
	// a test can check what its client sent.
	Args []string
}

// Name returns the command name in lower case ("set", "evalsha"): ASCII
// lower case, as Redis compares command names (a name renamed to letters
// that are no ASCII keeps them as sent).
func (r CommandRecord) Name() string {
	if len(r.Args) == 0 {
		return ""
	}
	return engine.LowerASCII(r.Args[0])
}

// String returns the arguments separated by spaces.
func (r CommandRecord) String() string { return strings.Join(r.Args, " ") }

// clientName returns c's name (CLIENT SETNAME).
func (c *client) clientName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Name
}

// newRecord copies a command as it arrived from client c.
func newRecord(s *Server, c *client, args [][]byte) CommandRecord {
	return newRecordAt(s.cfg.Clock.Wall(), c, c.clientName(), args)
}

func newRecordAt(at time.Time, c *client, name string, args [][]byte) CommandRecord {
	rec := CommandRecord{Time: at, ClientID: c.ID, Addr: c.addr, ClientName: name, Args: make([]string, len(args))}
	for i, a := range args {
		rec.Args[i] = string(a)
	}
	return rec
}

// cmdLog is a ring of the last commands received.
type cmdLog struct {
	mu   sync.Mutex
	buf  []CommandRecord
	next int
	full bool
}

func (l *cmdLog) init(n int) {
	if n > 0 {
		l.buf = make([]CommandRecord, n)
	}
}

// addBatch logs the commands a connection has just read together, as
// they arrive: a command pipelined behind one a pause holds is logged,
// with its arrival time, before it runs.
func (l *cmdLog) addBatch(s *Server, c *client, cmds []redcon.Command) {
	if l.buf == nil {
		return
	}
	at, name := s.cfg.Clock.Wall(), c.clientName()
	l.mu.Lock()
	for _, cmd := range cmds {
		l.buf[l.next] = newRecordAt(at, c, name, cmd.Args)
		if l.next++; l.next == len(l.buf) {
			l.next, l.full = 0, true
		}
	}
	l.mu.Unlock()
}

func (l *cmdLog) snapshot() []CommandRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []CommandRecord
	if l.full {
		out = append(out, l.buf[l.next:]...)
	}
	return append(out, l.buf[:l.next]...)
}

func (l *cmdLog) reset() {
	l.mu.Lock()
	clear(l.buf)
	l.next, l.full = 0, false
	l.mu.Unlock()
}

// Commands returns the commands clients sent, oldest first: the last
// Config.CommandLog of them (RunT keeps 1024 by default). Commands run by
// scripts are not included; every command received is, whether it ran,
// failed or was failed by FailNext. It returns nil when the log is off.
func (s *Server) Commands() []CommandRecord { return s.fx.log.snapshot() }

// ResetCommands empties the command log.
func (s *Server) ResetCommands() { s.fx.log.reset() }

// ---- inspection ----
//
// Get, TTL, Keys and Set work in database 0, where clients are unless
// they SELECT another; DB(n) has them for database n.

// DBView is the fixture's inspection of one database (Server.DB).
type DBView struct {
	s  *Server
	cl *engine.Client
}

// DB returns the inspection helpers for database n, as for a lock client
// configured with that database index. It panics when n is out of range
// (Config's databases, 16 by default).
func (s *Server) DB(n int) DBView {
	return DBView{s, s.selfIn(n)}
}

// Get, TTL, Keys and Set are Server's, in the view's database.
func (v DBView) Get(key string) (val string, ok bool) { return v.s.get(v.cl, key) }
func (v DBView) TTL(key string) time.Duration         { return v.s.ttl(v.cl, key) }
func (v DBView) Keys() []string                       { return v.s.keys(v.cl) }
func (v DBView) Set(key, val string, ttl time.Duration) {
	v.s.set(v.cl, key, val, ttl)
}

// selfIn returns the fixture's client in database db.
func (s *Server) selfIn(db int) *engine.Client {
	if db == 0 {
		return &s.fx.self
	}
	s.fx.selfMu.Lock()
	cl := s.fx.selves[db]
	s.fx.selfMu.Unlock()
	if cl != nil {
		return cl
	}
	if db < 0 || db >= s.eng.Databases() {
		panic("tumbler: DB(" + strconv.Itoa(db) + "): the server has databases 0 to " + strconv.Itoa(s.eng.Databases()-1))
	}
	cl = &engine.Client{}
	// (SELECTed without selfMu held: a call takes the keyspace lock, and
	// refuseWrite, under that lock, never takes selfMu)
	if w := s.callAs(cl, "select", strconv.Itoa(db)); w.kind != '+' {
		panic("tumbler: DB(" + strconv.Itoa(db) + "): SELECT: " + w.str)
	}
	s.fx.selfMu.Lock()
	defer s.fx.selfMu.Unlock()
	if old := s.fx.selves[db]; old != nil {
		return old // another goroutine made one first
	}
	if s.fx.selves == nil {
		s.fx.selves = make(map[int]*engine.Client)
	}
	s.fx.selves[db] = cl
	return cl
}

// isSelf reports whether cl is one of the fixture's own clients: every
// connection's client has its Conn, theirs have none.
func isSelf(cl *engine.Client) bool { return cl != nil && cl.Conn == nil }

// Get returns the value of a string key, as GET would; ok is false when
// the key does not exist (or has expired, or holds another type).
func (s *Server) Get(key string) (val string, ok bool) { return s.get(&s.fx.self, key) }

func (s *Server) get(cl *engine.Client, key string) (val string, ok bool) {
	w := s.callAs(cl, "get", key)
	if w.kind != '$' {
		return "", false
	}
	return w.str, true
}

// TTL returns the time key has left, as PTTL does, with PTTL's sentinels
// as durations (like go-redis): -1 (time.Duration(-1)) when the key has
// no deadline, -2 when it does not exist.
func (s *Server) TTL(key string) time.Duration { return s.ttl(&s.fx.self, key) }

func (s *Server) ttl(cl *engine.Client, key string) time.Duration {
	w := s.callAs(cl, "pttl", key)
	if w.n < 0 {
		return time.Duration(w.n)
	}
	return time.Duration(w.n) * time.Millisecond
}

// Keys returns every live key, sorted.
func (s *Server) Keys() []string { return s.keys(&s.fx.self) }

func (s *Server) keys(cl *engine.Client) []string {
	w := s.callAs(cl, "keys", "*")
	slices.Sort(w.arr)
	return w.arr
}

// Set sets a string key, with a deadline ttl from now (on the server's
// clock, rounded up to a whole millisecond) when ttl > 0. It bypasses the
// restart delay and is not logged.
func (s *Server) Set(key, val string, ttl time.Duration) { s.set(&s.fx.self, key, val, ttl) }

func (s *Server) set(cl *engine.Client, key, val string, ttl time.Duration) {
	if ttl > 0 {
		ms := ceilMs(ttl)
		s.callAs(cl, "set", key, val, "px", strconv.FormatInt(ms, 10))
		return
	}
	s.callAs(cl, "set", key, val)
}

// call runs one command as the fixture itself and captures its reply.
func (s *Server) call(args ...string) *captureWriter { return s.callAs(&s.fx.self, args...) }

// callAs runs one command as cl, one of the fixture's own clients.
func (s *Server) callAs(cl *engine.Client, args ...string) *captureWriter {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	w := &captureWriter{}
	s.eng.Exec(&engine.Ctx{Eng: s.eng, Args: bs, W: w, Client: cl})
	return w
}

// captureWriter keeps the simple replies the fixture's own calls need.
type captureWriter struct {
	kind byte // '$' bulk, ':' integer, '-' error, '_' null, '+' status
	str  string
	n    int64
	arr  []string
}

func (w *captureWriter) Proto() int           { return 2 }
func (w *captureWriter) WriteStatus(s string) { w.kind, w.str = '+', s }
func (w *captureWriter) WriteError(m string)  { w.kind, w.str = '-', m }
func (w *captureWriter) WriteInt(n int64)     { w.kind, w.n = ':', n }
func (w *captureWriter) WriteBulk(b []byte)   { w.WriteBulkString(string(b)) }
func (w *captureWriter) WriteBulkString(s string) {
	if w.kind == '*' {
		w.arr = append(w.arr, s)
		return
	}
	w.kind, w.str = '$', s
}
func (w *captureWriter) WriteNull()       { w.kind = '_' }
func (w *captureWriter) WriteNullArray()  { w.kind = '_' }
func (w *captureWriter) WriteArray(n int) { w.kind, w.arr = '*', make([]string, 0, n) }
func (w *captureWriter) WriteMap(n int)   { w.WriteArray(2 * n) }
func (w *captureWriter) WriteSet(n int)   { w.WriteArray(n) }
func (w *captureWriter) WriteBool(v bool) { w.WriteInt(map[bool]int64{true: 1}[v]) }
func (w *captureWriter) WriteDouble(f float64) {
	w.WriteBulkString(strconv.FormatFloat(f, 'g', 17, 64))
}
func (w *captureWriter) WriteVerbatim(_, s string) { w.WriteBulkString(s) }
func (w *captureWriter) WriteBigNumber(s string)   { w.WriteBulkString(s) }
