package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// client is one connection's state. The connection's own goroutine runs
// its commands and is the only one to write most fields; mu guards the
// fields other connections read (CLIENT LIST), omu the output buffer once
// the connection can receive pushes (see respWriter).
type client struct {
	engine.Client
	prefetch [][]byte            // keys of the batch being run (prefetchKeys)
	pending  engine.PendingStats // the batch's command counters, until FlushStats
	mu       sync.Mutex
	omu      sync.Mutex
	fmu      sync.Mutex // serialises writes to nc
	nc       net.Conn
	fc       *framedConn
	rd       *cmdReader    // its requests; own goroutine (or its event loop) only
	waiting  atomic.Uint64 // what rd holds while it waits for input (cmdReader.waiting)
	waitArgv atomic.Int64  // and the complete arguments of its partial request (cmdReader.waitArgv)
	blocked  atomic.Int64  // the arguments' bytes of the command it is blocked in (inputMem)
	w        respWriter
	spare    []byte // the other output buffer, swapped in by flushShared
	ctx      engine.Ctx
	addr     string // CLIENT LIST's addr and laddr (connAddrs)
	laddr    string
	unixPath string // the Unix socket it came by; "" for TCP
	fd       int    // the socket's descriptor at accept, for CLIENT LIST; -1 if none
	created  time.Time
	closeNow bool
	kick     chan struct{} // wakes the flusher of a push-capable connection
	parked   atomic.Int32  // whether its goroutine waits for input (pushlater.go)
	convMu   sync.Mutex    // held by adoptPush while it converts the connection
	gone     chan struct{} // closed when the connection ends
	goneOnce sync.Once
	fx       connFixture // test-fixture state (server/fixture.go)
	prod     clientProd  // output limit and auth state (limits.go)

	// inCmd (guarded by omu) is set while the connection's goroutine runs a
	// command of a push-capable connection: pushes from other goroutines
	// then wait in deferred, so they never land inside a multi-part reply.
	inCmd    bool
	deferred []byte
	// pushCounted (guarded by omu): counted in Server.pushConns, until
	// the client leaves (uncountPush)
	pushCounted bool
	// outGen counts the times the output buffer was written out (guarded
	// by omu on a push-capable connection): a command's reply still
	// whole in it can be taken back (panicked).
	outGen uint64
	ps     psConn    // pub/sub, tracking and output-limit state (pubsub.go, tracking.go)
	reply  replyMode // CLIENT REPLY (reply.go); own goroutine only
	lp     loopConn  // event-loop state (eventloop_linux.go)
	mem    clientMem // its part of the clients' memory (evict.go)
	// dl delays its output while SetLatency is set (delayline.go)
	dl atomic.Pointer[delayLine]
	// dropOut: it broke its output limit, and its delayed output goes
	// unwritten (finishDelayed); own goroutine only
	dropOut bool
}

// connAddrs returns a connection's addresses as Redis writes them (its
// connFormatAddr): host:port for TCP, and for a Unix socket the socket's
// path followed by ":0" for both ends; unixPath is that path, "" for TCP.
func connAddrs(nc net.Conn) (addr, laddr, unixPath string) {
	if la := nc.LocalAddr(); la != nil && la.Network() == "unix" {
		p := la.String()
		return p + ":0", p + ":0", p
	}
	return nc.RemoteAddr().String(), nc.LocalAddr().String(), ""
}

// serveConn runs one connection: read every complete command available,
// run them in order, then flush the replies once (redcon's model, with the
// loop in our hands so that other goroutines can push to the connection).
// id is the connection's CLIENT ID, taken in accept order.
func (s *Server) serveConn(nc net.Conn, id int64) {
	s.eng.Stats.ConnsReceived.Add(1)
	setKeepAlive(nc, s.prod.limits.keepAlive.Load()) // as Redis's createClient
	fc := newFramedConn(nc, nil)
	fc.net = s.eng.Net.Stripe(id) // INFO's network counters (engine/observe.go)
	c := &client{nc: nc, fc: fc, fd: connFD(nc), created: time.Now(), gone: make(chan struct{})}
	c.ps.adopt = make(chan struct{}, 1)
	c.addr, c.laddr, c.unixPath = connAddrs(nc)
	c.ID = id
	c.NeedsAuth = s.authRequired() // (auth.go)
	c.ACL = s.eng.ACL().Default()
	c.prod.srv = s
	fc.lim, fc.idleExempt = &s.prod.limits, c.idleExempt // (limits.go)
	fc.delayed = c.delayErrorReply                       // fixture: SetLatency (delayline.go)
	c.Conn = c
	c.w = respWriter{proto: 2, mu: &c.omu, seal: true}
	c.w.relimit = func() int { return s.replyLimitLocked(c) } // (under omu once shared: respWriter.lock)
	c.ctx = engine.Ctx{Eng: s.eng, W: &c.w, Client: &c.Client, Pending: &c.pending}
	c.ctx.CanBlock = true // blocking.go: this goroutine waits for blocked commands
	fc.needsAuth = func() bool { return c.NeedsAuth }
	s.fixtureConnStart(c)     // fixture: CLIENT LIST age/idle/cmd, kill signal (server/fixture.go)
	defer s.fixtureConnEnd(c) // fixture: leaves MONITOR, counted for Restart

	if !s.register(c) {
		return
	}
	defer s.unregister(c)
	// What a batch cut short counted (an output limit broken, a failed
	// read): counted before the connection is seen to end, deferred last
	// so that it runs first.
	defer s.eng.FlushStats(&c.ctx)
	// Its input pauses a mass expiry (expireLoop).
	s.probe.add(nc)
	if !s.admit(c) { // TLS handshake, protected mode (auth.go)
		return
	}

	rd := newCmdReader(fc) // in-place parsing, no allocation per command (reader.go)
	rd.waiting, rd.waitArgv, c.rd = &c.waiting, &c.waitArgv, rd
	rd.onWait = func() { s.measure(c, false) } // a request growing counts (evict.go)
	fc.raw = newRawReader(nc)                  // plain TCP or Unix socket: read(2) and write(2) without the scheduler's bookkeeping (rawread.go)
	for {
		s.pushIfWanted(c) // pushes wait for it (pushlater.go)
		// Served by the event loop, while it can (eventloop_linux.go):
		// this goroutine waits until the loop hands the connection back.
		if s.loopMayServe(c, rd) {
			if !s.loopServe(c, rd) {
				return
			}
			continue
		}
		rd.trim() // the last batch has run (reader.go)
		if !c.park() {
			continue
		}
		cmds, err := rd.ReadCommands()
		c.unpark()
		if err != nil {
			s.readFailed(c, err)
			return
		}
		if !s.serveBatch(c, cmds) {
			return
		}
	}
}

// serveBatch runs a batch of commands read together, in order, then
// flushes their replies once (redcon's model, with the loop in our hands
// so that other goroutines can push to the connection). It reports false
// when the connection ends.
func (s *Server) serveBatch(c *client, cmds []redcon.Command) bool {
	s.beginBatch(c, cmds)
	return s.runBatch(c, cmds, 0)
}

// beginBatch starts a batch: its clock reading, and the prefetch of its
// keys.
func (s *Server) beginBatch(c *client, cmds []redcon.Command) {
	// CLIENT LIST idle: the last read (once a batch, not a command: a clock
	// read costs); the same read starts the first command's timing.
	c.fx.last.Store(s.eng.StartBatch(&c.ctx))
	c.w.limit = s.replyLimit(c)   // client-output-buffer-limit, within a reply (limits.go)
	s.fx.log.addBatch(s, c, cmds) // fixture: Commands (server/fixture.go)
	s.busy(c)                     // maxmemory-clients: measured by itself until its replies are out (evict.go)
	if len(cmds) > 1 {
		var leaving uint32
		c.prefetch, leaving = prefetchKeys(c.prefetch[:0], cmds)
		s.eng.Prefetch(c.DB(), c.prefetch, leaving)
		clear(c.prefetch) // do not keep the read buffer's slices
	}
}

// runBatch runs cmds[i:] and ends the batch. When the event loop hands a
// connection back in the middle of a batch, cmds[i] may have run already
// and left its client blocked (c.ctx.Blocked): then it waits, and the
// batch goes on after it.
func (s *Server) runBatch(c *client, cmds []redcon.Command, i int) bool {
	for ; i < len(cmds); i++ {
		if c.ctx.Blocked == nil {
			s.handle(c, cmds[i])
			if c.fx.untilRun { // a pause held it: Held counts it until now
				s.heldRan(c)
			}
		}
		if c.ctx.Blocked != nil {
			s.eng.FlushStats(&c.ctx)
			if c.reply.blocked { // CLIENT REPLY OFF/SKIP: its reply goes nowhere either (reply.go)
				c.ctx.W = discardWriter{proto: c.w.proto}
			}
			c.blocked.Store(int64(c.ctx.Blocked.ArgvLen()))
			s.waitBlocked(c) // blocking.go: BLPOP and friends wait here
			c.blocked.Store(0)
			c.ctx.W = &c.w
			s.afterBlocked(c) // tracking: invalidations of its own writes, after its reply (tracking.go)
			c.ctx.Unchain()
		}
		if s.outputOverLimit(c) { // client-output-buffer-limit (limits.go): nothing more is sent
			return false
		}
		if c.closeNow {
			break
		}
	}
	s.endBatch(c)
	return s.sendBatch(c)
}

// endBatch counts a batch's commands and queues what is due after it.
func (s *Server) endBatch(c *client) {
	s.unwritten(c) // maxmemory-clients: the batch's replies count until written (evict.go)
	s.eng.EndBatch(&c.ctx)
	s.eng.FlushStats(&c.ctx) // before any reply goes out: whoever sees one sees its command counted
	s.afterBatch(c)          // tracking: BCAST invalidations, as Redis's beforeSleep (tracking.go)
}

// sendBatch writes a batch's replies. It reports false when the
// connection ends.
func (s *Server) sendBatch(c *client) bool {
	s.replyStall(c)                   // fixture: Pause, DEBUG SLEEP (server/fixture.go)
	if c.w.shared || c.w.size() > 0 { // (a shared buffer is not read unlocked)
		// Let the other connections that have input run their batches
		// before this one writes: the writes then go out back to back,
		// as Redis sends its replies in beforeSleep after a whole
		// event-loop pass. Writing after each batch instead wakes the
		// peer on every write (bench/RESULTS.md: a third of the kernel
		// time of a pipelined GET was waking the client).
		runtime.Gosched()
	}
	err := c.flush()
	if dl := c.dl.Load(); dl == nil || dl.held.Load() == 0 {
		s.evictDue() // maxmemory-clients: a pass CONFIG SET made due (evict.go)
	} // (else once its delay line has written the replies: writeDelayed)
	if err != nil || c.closeNow {
		return false
	}
	// Served: a paused mass expiry may go on (expireLoop).
	s.kickExpiry()
	c.fx.last.Store(s.eng.Now()) // and a reply written, as Redis's writeToClient (after a wait: BLPOP, pauses)
	return true
}

// register admits a new connection, or refuses it past maxclients.
func (s *Server) register(c *client) bool {
	if int(s.nconns.Add(1)) > s.live().MaxClients || s.closing.Load() {
		s.nconns.Add(-1)
		s.eng.Stats.RejectedConns.Add(1)
		c.w.WriteError("ERR max number of clients reached")
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = c.flush()
		c.finishDelayed()
		_ = c.nc.Close()
		return false
	}
	if !s.registered(c) { // fixture: dropped before it got here (fixture.go)
		s.nconns.Add(-1)
		_ = c.nc.Close()
		return false
	}
	if s.closing.Load() { // Close ran between the check and the Store
		s.unregister(c)
		return false
	}
	return true
}

func (s *Server) unregister(c *client) {
	c.finishDelayed() // fixture: what SetLatency delays goes out first (delayline.go)
	_ = c.nc.Close()
	s.eng.DiscardTransaction(&c.Client) // drop its WATCHes (Redis freeClient → unwatchAllKeys)
	c.goneOnce.Do(func() { close(c.gone) })
	if _, loaded := s.clients.LoadAndDelete(c); loaded {
		s.nconns.Add(-1)
	}
	s.uncountPush(c)
	s.unaccount(c)  // maxmemory-clients (evict.go)
	s.connClosed(c) // pub/sub and tracking state (pubsub.go)
}

// uncountPush takes a client that leaves (unregister, kill) out of
// pushConns, once.
func (s *Server) uncountPush(c *client) {
	c.omu.Lock()
	if c.pushCounted {
		c.pushCounted = false
		s.pushConns.Add(-1)
	}
	c.omu.Unlock()
}

// closeConn closes a connection from any goroutine. A TCP socket is shut
// down first: an event loop reading its own descriptor of the socket
// (eventloop_linux.go) then reads the end of input, and the peer sees
// the connection end even while that descriptor is open.
func closeConn(nc net.Conn) error {
	shutdownConn(nc)
	if _, ok := nc.(*tls.Conn); ok {
		// Its Close sends close_notify, and waits up to 5 s for room
		// to: an event loop (CLIENT KILL) or a publisher must not.
		go nc.Close()
		return nil
	}
	return nc.Close()
}

// readFailed handles the end of a connection's input. framedConn has
// already replied to the protocol errors it detects; redcon's own (an
// inline request with unbalanced quotes) get their reply here.
func (s *Server) readFailed(c *client, err error) {
	if errors.Is(err, errProtocolLimit) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return
	}
	c.w.WriteError("ERR " + err.Error())
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_ = c.flush()
}

// handle runs one command. A panic in a handler becomes an error reply:
// the server never goes down for one bad command.
func (s *Server) handle(c *client, cmd redcon.Command) {
	if c.closeNow || s.closing.Load() {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.panicked(c, cmd, r, -1, 0)
		}
	}()
	c.ctx.Args = cmd.Args
	// maxmemory-clients, with this command's arguments: a client over it
	// runs nothing more (processCommand's evictClients; evict.go)
	if s.evict.limit.Load() != 0 && s.measure(c, true) {
		c.closeNow = true
		c.ctx.Args = nil
		return
	}
	if s.fixtureBefore(c) { // fixture: command log, pauses, FailNext, MONITOR (server/fixture.go)
		func() {
			c.beginCmd()
			defer c.endCmd()
			mark, gen := c.outMark()
			defer func() {
				if r := recover(); r != nil {
					s.panicked(c, cmd, r, mark, gen)
				}
			}()
			if c.reply.suppressed() { // CLIENT REPLY OFF/SKIP (reply.go)
				c.ctx.W = discardWriter{proto: c.w.proto}
				defer func() { c.ctx.W = &c.w }()
				c.reply.blocked = true
			} else {
				c.reply.blocked = false
			}
			s.eng.Exec(&c.ctx)
			if s.cutShort.Load() {
				// SHUTDOWN NOSAVE stopped a busy script (this command's,
				// or another's): as Redis exits there, the client gets
				// no reply, not the script's "killed" error.
				c.takeBack(mark, gen)
				c.closeNow = true
				return
			}
			s.afterCommand(c) // tracking: invalidations due after the reply (tracking.go)
			s.afterPushes()   // maxmemory-clients: the pass its pushes made due (evict.go)
		}()
		c.reply.next()
		s.fixtureAfter(c)
	}
	c.ctx.Args = nil
}

// panicked answers a command that panicked, and logs it: the server goes
// on. The command's context is put back in order, and the part of its
// reply it wrote (an EXEC's array header, say) is taken back, from mark
// on, if none of it has been sent (gen is still outGen), for "ERR
// internal error" in its place (nothing under CLIENT REPLY OFF or SKIP).
// If some of it has been sent, the reply stream cannot be mended: the
// connection is closed. mark -1: the panic came before the command ran.
func (s *Server) panicked(c *client, cmd redcon.Command, r any, mark int, gen uint64) {
	buf := make([]byte, 4096)
	buf = buf[:runtime.Stack(buf, false)]
	s.log.Error("panic serving command", "cmd", string(cmd.Args[0]), "panic", fmt.Sprint(r), "stack", string(buf))
	c.ctx.Recovered(&c.w) // not left inside the command (its writer's wrapper, its script)
	if mark >= 0 && !c.takeBack(mark, gen) {
		c.closeNow = true
		return
	}
	if !c.reply.suppressed() {
		c.w.WriteError("ERR internal error")
	}
}

// outMark is where the next command's reply will start in the output
// buffer, and the buffer's generation (outGen).
func (c *client) outMark() (int, uint64) {
	if c.w.shared {
		c.omu.Lock()
		defer c.omu.Unlock()
	}
	return c.w.size(), c.outGen
}

// takeBack drops the output written since mark, if none of it has been
// sent, and reports whether it could.
func (c *client) takeBack(mark int, gen uint64) bool {
	if c.w.shared {
		c.omu.Lock()
		defer c.omu.Unlock()
	}
	if c.outGen != gen || c.w.size() < mark {
		return false
	}
	c.w.truncate(mark)
	return true
}

// beginCmd and endCmd bracket a command on a push-capable connection:
// pushes from other goroutines arriving meanwhile are appended after the
// command's reply (see client.inCmd).
func (c *client) beginCmd() {
	if !c.w.shared {
		return
	}
	c.omu.Lock()
	c.inCmd = true
	c.omu.Unlock()
}

func (c *client) endCmd() {
	if !c.w.shared {
		return
	}
	c.omu.Lock()
	c.inCmd = false
	if len(c.deferred) > 0 {
		c.w.appendRaw(c.deferred)
		c.deferred = c.deferred[:0]
	}
	c.omu.Unlock()
}

// flush writes the replies gathered so far.
func (c *client) flush() error {
	srv := c.prod.srv
	if c.w.shared {
		err := c.flushShared(true)
		if srv != nil {
			srv.written(c) // (evict.go)
		}
		return err
	}
	if c.w.size() == 0 {
		if srv != nil {
			srv.written(c) // a batch with nothing to write (evict.go)
		}
		return nil
	}
	if srv != nil && srv.evict.limit.Load() != 0 {
		c.writeStart() // seen by the others' measures once slow (evict.go)
	}
	if srv != nil && (srv.fx.latency.Load() > 0 || c.dl.Load() != nil) {
		if queued, err := c.flushDelayed(); queued { // fixture: SetLatency (delayline.go)
			return err
		}
	}
	err := c.writeOutAll(c.w.segs, c.w.b) // output buffer limit for slow readers (limits.go)
	c.outGen++
	c.w.reset()
	if srv != nil {
		srv.written(c) // written: less memory (evict.go)
	}
	return err
}

// flushShared swaps the output buffer out under omu, so pushers are never
// held up by the socket, and writes it. fmu keeps writes in order. own
// says the connection's goroutine writes (flush), which reads its input
// while the write waits for room (client.write); the flusher, which
// writes pushes while that goroutine may be reading, writes plainly.
func (c *client) flushShared(own bool) error {
	if own && !c.fmu.TryLock() {
		// The flusher writes pushes, and may wait for room while the
		// client sends before it reads: read its input meanwhile. Not
		// while a stall or pause holds the flusher (holdOutput): a
		// stalled server reads nothing, as a stopped process.
		if c.fc.aheadDone == nil && !c.prod.srv.fx.anyPause.Load() {
			c.readAheadWhileWriting()
			c.fmu.Lock()
			c.fc.stopReadAhead()
		} else if c.prod.srv.fx.anyPause.Load() {
			// The flusher may be holding a push in a stall: this reply
			// waits as long, and counts as held meanwhile (Held).
			uncount := c.prod.srv.countReplyWhileStalled(c)
			c.fmu.Lock()
			uncount()
		} else {
			c.fmu.Lock()
		}
	} else if !own {
		c.fmu.Lock()
	}
	defer c.fmu.Unlock()
	c.omu.Lock()
	segs, out := c.w.segs, c.w.b
	size := c.w.size()
	c.w.b, c.w.segs, c.w.segLen = c.spare[:0], nil, 0
	c.outGen++
	c.ps.inflight = size // counted by the pub/sub output limit (pubsub.go)
	c.omu.Unlock()
	if size == 0 {
		c.spare = out
		return nil
	}
	// fixture: stalls hold pushes too (server/fixture.go), and
	// SetLatency delays them (delayline.go)
	c.prod.srv.holdOutput(c, own)
	if queued, err := c.delayOut(append(segs, out)); queued {
		c.omu.Lock()
		c.ps.inflight = 0 // (counted by heldOut now)
		c.omu.Unlock()
		c.prod.srv.measurePushed(c)
		c.spare = nil // (out is the delay line's)
		return err
	}
	var err error
	for _, p := range append(segs, out) {
		if len(p) == 0 {
			continue
		}
		if own {
			_, err = c.write(p)
		} else {
			var n int
			n, err = c.nc.Write(p)
			c.fc.net.Wrote(n)
		}
		if err != nil {
			break
		}
	}
	c.omu.Lock()
	c.ps.inflight = 0
	c.omu.Unlock()
	c.prod.srv.measurePushed(c) // written: less memory (evict.go)
	if cap(out) > 1<<20 {
		out = nil
	}
	c.spare = out[:0]
	return err
}

// enablePush makes the connection able to receive pushes from other
// goroutines: its writes take omu from now on and a flusher goroutine
// sends what others append. Only the connection's own goroutine calls it,
// or adoptPush while that goroutine waits for input (pushlater.go).
func (s *Server) enablePush(c *client) {
	if c.w.shared {
		return
	}
	// The flusher may write this connection's replies while a batch of
	// its commands still runs, so each command counts as it ends rather
	// than once a batch (engine.PendingStats).
	s.eng.FlushStats(&c.ctx)
	c.ctx.Pending = nil
	c.omu.Lock()
	c.w.shared = true
	c.inCmd = true           // enabled from inside a command: see beginCmd
	if len(c.ps.early) > 0 { // pushed before (pushlater.go)
		c.deferred = append(c.deferred, c.ps.early...)
		c.ps.early = nil
	}
	c.ps.wantPush.Store(false)
	c.pushCounted = true
	s.pushConns.Add(1)
	c.kick = make(chan struct{}, 1)
	c.omu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-c.gone:
				return
			case <-c.kick:
				if err := c.flushShared(false); err != nil {
					c.closeNC()
					return
				}
			}
		}
	}()
}

// push appends a frame built by fn to a push-capable connection's output
// (fn gets a writer in the connection's protocol) and wakes its flusher.
// It may be called from any goroutine, including under the keyspace lock.
func (c *client) push(fn func(w *respWriter)) {
	c.omu.Lock()
	dst := &c.w.b
	if c.inCmd {
		dst = &c.deferred
	}
	pw := respWriter{b: *dst, proto: c.w.proto}
	fn(&pw)
	*dst = pw.b
	srv := c.prod.srv
	kill := srv != nil && srv.pushOverLimit(c) // client-output-buffer-limit (pubsub.go)
	c.omu.Unlock()
	if kill {
		srv.closeOverLimit(c)
		return
	}
	if srv != nil {
		srv.measurePushed(c) // (evict.go)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// setProto changes the connection's protocol (HELLO, RESET).
func (c *client) setProto(p int) {
	c.omu.Lock()
	c.w.proto = p
	c.omu.Unlock()
}

// isEval reports whether name is EVAL or EVALSHA, in any case.
func isEval(name []byte) bool {
	return (len(name) == 4 || len(name) == 7) && eqLower(name, "evalsha"[:len(name)])
}

// prefetchKeys appends the key each command of a pipelined batch will most
// likely look up first, for Engine.Prefetch: the second argument, or the
// first key of EVAL and EVALSHA. A wrong guess costs a hash and a load,
// never a wrong reply, so no command table lookup is spent on it. Long
// arguments (script bodies, values) are skipped. Bit i of the mask it
// returns marks dst[i] as the key of a command that will likely remove or
// change its deadline (a lock script, DEL, an expire: Engine.Prefetch).
func prefetchKeys(dst [][]byte, cmds []redcon.Command) ([][]byte, uint32) {
	var leaving uint32
	for _, cmd := range cmds {
		a := cmd.Args
		if len(a) < 2 {
			continue
		}
		k, leaves := a[1], false
		if isEval(a[0]) {
			if len(a) < 4 || len(a[2]) != 1 || a[2][0] < '1' || a[2][0] > '9' {
				continue // no keys
			}
			k, leaves = a[3], true // a lock script: a release or an extend
		} else {
			leaves = changesDeadline(a[0])
		}
		if len(k) <= 64 {
			if leaves && len(dst) < 32 {
				leaving |= 1 << len(dst)
			}
			dst = append(dst, k)
		}
	}
	return dst, leaving
}

// changesDeadline reports whether name, in any case, is a command that
// removes or changes its key's deadline when the key has one: DEL, UNLINK,
// GETDEL, EXPIRE, PEXPIRE, PERSIST.
func changesDeadline(name []byte) bool {
	switch len(name) {
	case 3:
		return eqLower(name, "del")
	case 6:
		return eqLower(name, "unlink") || eqLower(name, "getdel") || eqLower(name, "expire")
	case 7:
		return eqLower(name, "pexpire") || eqLower(name, "persist")
	}
	return false
}

// eqLower reports whether b is lower, a lower-case ASCII word of b's
// length, in any case (|0x20 lowers letters and matches nothing else).
func eqLower(b []byte, lower string) bool {
	for i, c := range b {
		if c|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// connFD returns the descriptor of nc's socket (under TLS, the
// underlying connection's), or -1 for a connection without one.
func connFD(nc net.Conn) int {
	if t, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(f uintptr) { fd = int(f) }) != nil {
		return -1
	}
	return fd
}
