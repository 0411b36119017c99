package server

import (
	"cmp"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// The event loop serves plain TCP and Unix socket connections as Redis
// does: one goroutine owns a level-triggered epoll set of many
// connections, reads each ready socket once, runs the commands read, and
// writes every reply after the pass. A goroutine per connection costs, on
// every request, a wake-up of that goroutine, a read that finds nothing
// more (the netpoller is edge-triggered, so a goroutine must read until
// EAGAIN before it parks) and two trips through the scheduler: at one
// request per round trip the
// server spent 5–10% more CPU per request than Redis (bench/RESULTS.md).
//
// The loop never waits for anything but input. Whatever may wait runs on
// the connection's own goroutine, which is parked while the loop serves
// the connection and takes it back (loopExit) before: a blocked command
// (BLPOP, WAIT), a script in Lua that is not one of the well-known lock
// scripts (it may run past the busy threshold, and SCRIPT KILL must get
// through), EXEC, DEBUG, any command while a script runs or the server is
// paused (CLIENT PAUSE, Pause, DEBUG SLEEP), replies delayed (SetLatency:
// while one is set, or the connection's delay line has output),
// a connection that receives pushes (SUBSCRIBE, MONITOR, tracking), a
// reply the socket does not take at once, an idle timeout (timeout > 0),
// and every error and the end of the input. After 16 batches on its own
// goroutine a connection that can returns to its loop.
//
// The connection's goroutine waits inside RawConn.Control while the loop
// serves it, so that the descriptor stays open, and its number is never
// reused under the loop, even if the connection is closed meanwhile.
// Closing the connection from elsewhere (CLIENT KILL, Close) shuts the
// socket down (closeNC), so that the loop reads the end of input and
// hands the connection back.
//
// There are GOMAXPROCS loops; a connection goes to loop ID mod their
// number. With nothing ready a loop waits in Go's netpoller on its epoll
// descriptor (readable while any socket in the set is), so it needs no
// thread of its own.

// loopReturnAfter is how many batches a connection handed back to its
// goroutine serves there before it may return to its loop.
const loopReturnAfter = 16

// loopEvents is how many ready sockets a pass takes at most.
const loopEvents = 256

// loopMaxPartial is the most of an incomplete request a loop reads: a
// connection sending a larger one goes to its goroutine, which reads and
// runs it while the loop serves the others.
const loopMaxPartial = 64 << 10

type ioLoop struct {
	s    *Server
	epfd int
	efd  int // eventfd: wakes the loop for its inbox
	file *os.File
	rc   syscall.RawConn

	evs    [loopEvents]syscall.EpollEvent
	n      int
	waitFn func(fd uintptr) bool

	mu       sync.Mutex
	inbox    []*client
	stop     bool
	leaveAll bool // hand every connection back (an idle timeout is set)
	pushWake bool // hand back the connections pushes wait for (loopPushWake)
	dead     bool // the loop has ended: nothing is posted any more

	conns []*client // by slot, the epoll event's Fd
	free  []int32
	out   []*client // connections with replies to write after the pass

	// argument and command arrays of a large batch, lent from one
	// connection's reader to the next's (cmdReader.lendArrays)
	spareArgs [][]byte
	spareCmds []redcon.Command
}

// loopConn is a connection's event-loop state (client.lp).
type loopConn struct {
	state  atomic.Int32 // lpOwn, lpLoop, lpClosed
	l      *ioLoop
	rd     *cmdReader
	slot   int32 // -1 when not in the loop
	back   chan loopExit
	queued bool // in l.out
	away   int  // batches left before it may return (loopReturnAfter)
	unrun  bool // fixtureBefore refused to wait on the loop (loopBatch)
}

// Who serves a connection (loopConn.state).
const (
	lpOwn    = iota // its own goroutine
	lpLoop          // its event loop
	lpClosed        // nobody any more: closed (closeNC)
)

// closeNC closes the connection from any goroutine, an event loop's
// included. While a loop serves it the socket is only shut down: the loop
// reads the end of input and hands the connection back, and its own
// goroutine closes it as it ends (closing it here would wait for that
// while it holds the descriptor).
func (c *client) closeNC() {
	if c.lp.state.Swap(lpClosed) != lpOwn {
		// In a loop, or closed already by someone who may have found it
		// in one: only its own goroutine may close it.
		shutdownConn(c.nc)
		return
	}
	_ = closeConn(c.nc)
}

// loopLeaveFirst is fixtureBefore's question, before it logs or runs
// anything, when a pause is on: is c served by a loop, which must not
// wait? Then the command is left unrun for the goroutine (loopBatch).
func (c *client) loopLeaveFirst() bool {
	if !c.fc.raw.inLoop() {
		return false
	}
	c.lp.unrun = true
	return true
}

// loopExit tells a connection's goroutine where the loop left it.
type loopExit struct {
	kind uint8
	cmds []redcon.Command
	at   int
}

const (
	exitRead  uint8 = iota // read on
	exitBatch              // run cmds[at:] and end the batch (runBatch)
	exitSend               // the batch has ended: write its replies (sendBatch)
	exitClose              // the connection ends
)

// startLoops starts n event loops. Start calls it with s.mu held.
func (s *Server) startLoops(n int) error {
	for i := 0; i < n; i++ {
		l, err := newIOLoop(s)
		if err != nil {
			s.stopLoops()
			s.loops = nil
			return err
		}
		s.loops = append(s.loops, l)
		s.wg.Add(1)
		go l.run()
	}
	return nil
}

// stopLoops hands every connection back to its goroutine and ends the
// loops (Close).
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		_ = l.post(func() { l.stop = true })
	}
}

// loopsLeave hands every connection back (an idle timeout was set).
func (s *Server) loopsLeave() {
	for _, l := range s.loops {
		_ = l.post(func() { l.leaveAll = true })
	}
}

func newIOLoop(s *Server) (*ioLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	r1, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if e != 0 {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("eventfd2", e)
	}
	efd := int(r1)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: -1}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, efd, &ev); err != nil {
		syscall.Close(efd)
		syscall.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	// Non-blocking, so that os.NewFile puts it in Go's poller.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(efd)
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	l := &ioLoop{s: s, epfd: epfd, efd: efd, file: os.NewFile(uintptr(epfd), "epoll")}
	if l.rc, err = l.file.SyscallConn(); err != nil {
		l.file.Close()
		syscall.Close(efd)
		return nil, err
	}
	l.waitFn = l.poll
	return l, nil
}

// poll is the netpoller's callback: it takes the ready events without
// waiting, and asks to wait (false) when there are none. RawConn.Read
// resets the descriptor's readiness only before its first call, so
// readiness arriving after a poll that found nothing is not lost.
func (l *ioLoop) poll(fd uintptr) bool {
	r1, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd,
		uintptr(unsafe.Pointer(&l.evs[0])), uintptr(len(l.evs)), 0, 0, 0)
	if e != 0 {
		l.n = 0
		return e != syscall.EINTR && e != syscall.EAGAIN
	}
	l.n = int(r1)
	return l.n > 0
}

func (l *ioLoop) run() {
	defer l.s.wg.Done()
	defer l.end()
	for {
		if err := l.rc.Read(l.waitFn); err != nil {
			return
		}
		if !l.pass() {
			return
		}
	}
}

// end hands every connection back, refuses any posted later, and closes
// the loop's descriptors.
func (l *ioLoop) end() {
	l.handBackAll()
	l.mu.Lock()
	l.dead = true
	in := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, c := range in {
		l.leave(c, loopExit{kind: exitRead})
	}
	_ = l.file.Close()
	_ = syscall.Close(l.efd)
}

// pass serves the ready sockets, then writes the replies. It reports false
// when the loop stops.
func (l *ioLoop) pass() bool {
	for i := 0; i < l.n; i++ {
		slot := l.evs[i].Fd
		if slot < 0 {
			if !l.mail() {
				l.flushOut()
				return false
			}
			continue
		}
		if c := l.conns[slot]; c != nil {
			l.serveInput(c)
		}
	}
	if h := l.s.loopStats.beforeFlush.Load(); h != nil && len(l.out) > 0 {
		(*h)() // tests: what happens between a pass's commands and its writes
	}
	l.flushOut()
	return true
}

// post runs fn under the inbox lock and wakes the loop. It reports false,
// having done nothing, once the loop has ended.
func (l *ioLoop) post(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return false
	}
	fn()
	one := uint64(1)
	_, _ = syscall.Write(l.efd, (*[8]byte)(unsafe.Pointer(&one))[:])
	return true
}

// mail takes the inbox: new connections, and requests to hand every
// connection back or to stop. It reports false when the loop stops.
func (l *ioLoop) mail() bool {
	var b [8]byte
	_, _ = syscall.Read(l.efd, b[:])
	l.mu.Lock()
	in := l.inbox
	l.inbox = nil
	stop, leaveAll, pushWake := l.stop, l.leaveAll, l.pushWake
	l.leaveAll, l.pushWake = false, false
	l.mu.Unlock()
	// In the order they connected, not that of their goroutines' posts:
	// sockets added with input waiting are served in the order added, so
	// that the first requests of connections made one after another run
	// in that order, as Redis, with one thread, runs them.
	slices.SortFunc(in, func(a, b *client) int { return cmp.Compare(a.ID, b.ID) })
	for _, c := range in {
		l.add(c)
	}
	if stop || leaveAll {
		l.handBackAll()
	} else if pushWake {
		for _, c := range l.conns {
			if c != nil && c.ps.wantPush.Load() {
				l.leave(c, loopExit{kind: exitRead})
			}
		}
	}
	return !stop
}

// loopPushWake asks c's event loop, if it serves c, to hand c back to its
// goroutine, which makes it push-capable for the pushes that wait for it
// (pushlater.go). One that the loop is yet to add is handed back as it
// is added.
func (s *Server) loopPushWake(c *client) {
	if len(s.loops) == 0 {
		return
	}
	l := s.loops[uint64(c.ID)%uint64(len(s.loops))]
	_ = l.post(func() { l.pushWake = true })
}

// add registers a connection its goroutine sent (enter).
func (l *ioLoop) add(c *client) {
	if l.s.prod.limits.idle.Load() > 0 || l.s.closing.Load() || c.ps.wantPush.Load() {
		l.leave(c, loopExit{kind: exitRead})
		return
	}
	var slot int32
	if n := len(l.free); n > 0 {
		slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		slot = int32(len(l.conns))
		l.conns = append(l.conns, nil)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: slot}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fc.raw.lfd, &ev); err != nil {
		l.free = append(l.free, slot)
		l.leave(c, loopExit{kind: exitRead})
		return
	}
	l.conns[slot] = c
	c.lp.slot = slot
}

// handBackAll hands every connection back, those in the inbox too.
func (l *ioLoop) handBackAll() {
	for _, c := range l.conns {
		if c != nil {
			l.leave(c, loopExit{kind: exitRead})
		}
	}
	l.mu.Lock()
	in := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, c := range in {
		l.leave(c, loopExit{kind: exitRead})
	}
}

// leave hands a connection back to its goroutine: from here on the loop
// does not touch it.
func (l *ioLoop) leave(c *client, ex loopExit) {
	l.s.loopStats.leaves[ex.kind].Add(1)
	if ex.kind == exitRead && c.w.size() > 0 {
		ex.kind = exitSend // replies of this pass not written yet
	}
	if c.lp.slot >= 0 {
		_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fc.raw.lfd, nil)
		l.conns[c.lp.slot] = nil
		l.free = append(l.free, c.lp.slot)
		c.lp.slot = -1
	}
	c.lp.queued = false
	c.fc.raw.lfd = -1
	c.lp.back <- ex
}

// serveInput reads a ready connection and runs the commands read.
func (l *ioLoop) serveInput(c *client) {
	rd := c.lp.rd
	if (l.spareArgs != nil || l.spareCmds != nil) && rd.borrowArrays(l.spareArgs, l.spareCmds) {
		l.spareArgs, l.spareCmds = nil, nil
	}
	cmds, err := rd.ReadCommands()
	if err == errWouldBlock {
		l.takeArrays(rd) // (no command read: nothing refers to them)
		if rd.partial() > loopMaxPartial || c.fc.hasPending() {
			// A large request, or an error or input the framer holds
			// that no readiness will bring the loop back for.
			l.leave(c, loopExit{kind: exitRead})
			return
		}
		rd.dropIdle() // a read of blank lines only: nothing left to hold
		return
	}
	if err != nil { // the end of input, an error, or a reply to write
		l.takeArrays(rd)
		l.leave(c, loopExit{kind: exitRead})
		return
	}
	if ex, stay := l.s.loopBatch(c, cmds); !stay {
		if ex.kind == exitBatch {
			rd.shrink() // its goroutine may wait with it (reader.go)
		} else {
			l.takeArrays(rd) // the batch has run, or never will (exitClose)
		}
		l.leave(c, ex)
		return
	}
	rd.trim() // the batch has run (reader.go)
	if c.fc.hasPending() || rd.errNext || rd.partial() > loopMaxPartial {
		// More to read without waiting for input, which the loop is
		// woken by: the goroutine's way (exitSend writes the replies).
		l.takeArrays(rd)
		l.leave(c, loopExit{kind: exitSend})
		return
	}
	rd.dropIdle() // it waits for input here: its buffer serves the loop's next (reader.go)
	l.takeArrays(rd)
	switch {
	case c.w.size() > 0 && !c.lp.queued:
		c.lp.queued = true
		l.out = append(l.out, c)
	case c.w.size() == 0 && !c.lp.queued:
		l.s.written(c) // nothing to write (CLIENT REPLY OFF): the batch is done (evict.go)
	}
}

// takeArrays keeps the arrays of rd's batch for the loop's next, when
// they are large (cmdReader.lendArrays): the larger of them and those it
// has.
func (l *ioLoop) takeArrays(rd *cmdReader) {
	args, cmds := rd.lendArrays()
	if cap(args) > cap(l.spareArgs) {
		l.spareArgs = args
	}
	if cap(cmds) > cap(l.spareCmds) {
		l.spareCmds = cmds
	}
}

// flushOut writes the replies of the pass.
func (l *ioLoop) flushOut() {
	if len(l.out) == 0 {
		l.s.evictDue() // maxmemory-clients: a pass CONFIG SET made due (evict.go)
		return
	}
	now := l.s.eng.Now()
	// A pause or a latency that began during the pass holds replies
	// back: their goroutines hold them (sendBatch).
	hold := l.s.fx.anyPause.Load() || l.s.fx.latency.Load() > 0
	for _, c := range l.out {
		if !c.lp.queued { // handed back meanwhile
			continue
		}
		if hold || len(c.w.segs) > 0 {
			// a large reply (respWriter.segs) too: its goroutine writes
			// it, most likely waiting for room
			l.leave(c, loopExit{kind: exitSend})
			continue
		}
		c.lp.queued = false
		b := c.w.b
		n, err := c.fc.raw.loopWrite(b)
		c.fc.net.Wrote(n)
		c.outGen++
		switch {
		case err != nil:
			c.w.b = b[:0]
			l.leave(c, loopExit{kind: exitClose})
			continue
		case n < len(b):
			c.w.b = b[:copy(b, b[n:])]
			l.leave(c, loopExit{kind: exitSend}) // its goroutine waits for room
			continue
		}
		if cap(b) > 1<<20 {
			c.w.b = nil // do not pin a big reply's buffer
		} else {
			c.w.b = b[:0]
		}
		c.fx.last.Store(now) // a reply written, as Redis's writeToClient
		l.s.written(c)       // and so less memory (evict.go)
	}
	clear(l.out)
	l.out = l.out[:0]
	l.s.evictDue()   // maxmemory-clients: a pass CONFIG SET made due (evict.go)
	l.s.kickExpiry() // served: a paused mass expiry may go on (expireLoop)
}

// loopMayServe reports whether c may be served by its event loop now.
func (s *Server) loopMayServe(c *client, rd *cmdReader) bool {
	if len(s.loops) == 0 || c.fc.raw == nil || c.w.shared || c.fx.monitor.Load() ||
		s.prod.limits.idle.Load() > 0 || c.fc.hasPending() || rd.errNext || c.closeNow {
		return false
	}
	if c.dl.Load() != nil && c.delaying() {
		return false // its delayed output goes first, in order (delayline.go)
	}
	if c.lp.away > 0 {
		c.lp.away--
		return false
	}
	return true
}

// loopServe hands c to its event loop and waits until the loop hands it
// back, then finishes what the loop left. It reports false when the
// connection ends.
func (s *Server) loopServe(c *client, rd *cmdReader) bool {
	c.lp.away = loopReturnAfter
	if !c.lp.state.CompareAndSwap(lpOwn, lpLoop) {
		return true // closed meanwhile: served here, to its end
	}
	l := s.loops[uint64(c.ID)%uint64(len(s.loops))]
	if c.lp.back == nil {
		c.lp.back = make(chan loopExit, 1)
	}
	c.lp.l, c.lp.rd, c.lp.slot = l, rd, -1
	rd.once = true
	defer func() { rd.once = false }()
	var ex loopExit
	// Inside Control the descriptor stays open, whoever closes the
	// connection: the loop never touches a number reused meanwhile.
	err := c.fc.raw.rc.Control(func(fd uintptr) {
		c.fc.raw.lfd = int(fd)
		if !l.post(func() { l.inbox = append(l.inbox, c) }) {
			c.fc.raw.lfd = -1 // the loop has ended (Close)
			return
		}
		ex = <-c.lp.back
	})
	c.lp.state.CompareAndSwap(lpLoop, lpOwn)
	if err != nil {
		return true // closed: the next read says so
	}
	switch ex.kind {
	case exitRead:
		return true
	case exitBatch:
		return s.runBatch(c, ex.cmds, ex.at)
	case exitSend:
		return s.sendBatch(c)
	}
	return false
}

// loopBatch is serveBatch in the event loop. It reports false, with where
// to go on, when the connection must go back to its goroutine.
func (s *Server) loopBatch(c *client, cmds []redcon.Command) (loopExit, bool) {
	s.loopStats.batches.Add(1)
	s.beginBatch(c, cmds)
	for i, cmd := range cmds {
		if s.mayWait(c, cmd.Args) {
			return loopExit{kind: exitBatch, cmds: cmds, at: i}, false
		}
		s.handle(c, cmd)
		if c.lp.unrun {
			// A pause began after mayWait: the command has not run
			// (fixtureBefore), and waits on the goroutine.
			c.lp.unrun = false
			return loopExit{kind: exitBatch, cmds: cmds, at: i}, false
		}
		if c.ctx.Blocked != nil {
			return loopExit{kind: exitBatch, cmds: cmds, at: i}, false
		}
		if s.outputOverLimit(c) { // client-output-buffer-limit (limits.go): nothing more is sent
			return loopExit{kind: exitClose}, false
		}
		if c.closeNow {
			break
		}
	}
	s.endBatch(c)
	if c.closeNow || c.w.shared || s.fx.anyPause.Load() || s.fx.latency.Load() > 0 {
		return loopExit{kind: exitSend}, false
	}
	return loopExit{}, true
}

// mayWait reports whether c's command may wait for something other than
// the keyspace lock, or run long: the event loop hands its connection
// back first. Inside MULTI a command is only queued (WATCH refused), but
// for EXEC.
func (s *Server) mayWait(c *client, args [][]byte) bool {
	if s.fx.anyPause.Load() || s.eng.ScriptRunning() {
		return true
	}
	name := s.cmdName(args[0]) // (rename-command: the command's own name)
	if c.InMulti() {
		return len(name) == 4 && eqLower(name, "exec")
	}
	switch len(name) {
	case 4:
		if eqLower(name, "eval") {
			return !s.isLockScript(args, false)
		}
		return eqLower(name, "exec") // (WAIT blocks as BLPOP does: runBatch waits)
	case 5:
		// WATCH waits out a busy script rather than answering BUSY
		// (allow-busy, as in Redis): SCRIPT KILL must get through.
		return eqLower(name, "debug") || eqLower(name, "fcall") || eqLower(name, "watch")
	case 6:
		// SCRIPT KILL waits for a script to become busy; a large
		// SCRIPT LOAD compiles, in its turn (engine.Precompiler), for
		// as long as an EVAL of it would, unless it is cached. MEMORY
		// PURGE collects the whole heap, without the keyspace lock.
		if len(args) == 2 && len(args[1]) == 5 && eqLower(name, "memory") {
			return eqLower(args[1], "purge")
		}
		if !eqLower(name, "script") || len(args) < 2 || len(args[1]) != 4 {
			return false
		}
		return eqLower(args[1], "kill") || (len(args) == 3 && eqLower(args[1], "load") &&
			len(args[2]) >= engine.PrecompileMin && !s.vm.CachedBody(args[2]))
	case 7:
		if eqLower(name, "evalsha") {
			return !s.isLockScript(args, true)
		}
		if engine.EqFold(name, "eval_ro") {
			return !s.isLockScript(args, false)
		}
		return false
	case 8:
		// FUNCTION LOAD and RESTORE run a library's code (up to
		// engine.FunctionLoadTimeout); KILL and STATS wait for a script
		// to become busy, as SCRIPT KILL.
		if eqLower(name, "function") {
			return len(args) > 1 && (engine.EqFold(args[1], "load") || engine.EqFold(args[1], "restore") ||
				engine.EqFold(args[1], "kill") || engine.EqFold(args[1], "stats"))
		}
		return engine.EqFold(name, "fcall_ro")
	case 10:
		return engine.EqFold(name, "evalsha_ro") && !s.isLockScript(args, true)
	}
	return false
}

// isLockScript reports whether an EVAL or EVALSHA runs a cached lock
// script (luavm.VM.IsLockScript): short, in either of its paths.
func (s *Server) isLockScript(args [][]byte, bySHA bool) bool {
	if len(args) < 2 {
		return true // an arity error
	}
	if bySHA {
		return s.vm.IsLockScript(args[1], nil)
	}
	return s.vm.IsLockScript(nil, args[1])
}

// shutdownConn shuts a TCP or Unix socket down (closeConn).
func shutdownConn(nc net.Conn) {
	sc := plainSocket(nc)
	if sc == nil {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
}

// loopCount is how many event loops Start starts: Config.EventLoops, or
// GOMAXPROCS.
func loopCount(cfg *Config) int {
	if cfg.EventLoops > 0 {
		return cfg.EventLoops
	}
	return runtime.GOMAXPROCS(0)
}

// loopStats counts the event loops' work (tests).
type loopStats struct {
	batches atomic.Int64    // batches run in a loop
	leaves  [4]atomic.Int64 // connections handed back, by loopExit kind

	beforeFlush atomic.Pointer[func()] // run by a pass with replies, before it writes them
}
