package server

// Pushes to a connection that cannot receive them yet (client tracking's
// REDIRECT target, which need not have subscribed, tracked or monitored
// anything: Redis pushes invalidations to any RESP3 client it names).
//
// A connection's own goroutine (or its event loop) writes its output
// without a lock until enablePush makes it push-capable, and only its
// owner may make that change. So a push to it from elsewhere (deliver) is
// queued in c.ps.early, under omu, and the connection is asked to become
// push-capable (wantPush): by its goroutine, which checks at the top of
// its read loop and, in a blocked command's wait, is woken (c.ps.adopt);
// by its event loop, asked to hand it back (loopPushWake);
// or, while its goroutine waits for input (parked), by adoptPush on the
// caller's behalf. enablePush moves what was queued into the output, in
// order, and the flusher sends it. Nothing of this runs on the request
// path but one atomic load and one store and compare-and-swap around each
// read of a connection served by its goroutine.

// Who may touch a connection's output (client.parked).
const (
	parkRunning  = iota // its goroutine or event loop
	parkReading         // its goroutine waits for input: adoptPush may convert it
	parkAdopting        // adoptPush converts it: its goroutine waits (convMu)
)

// queueEarly queues a frame for c, which is not push-capable: it reports
// whether c must be asked to become so (the first frame). Requires omu.
func (c *client) queueEarly(frame []byte) bool {
	c.ps.early = append(c.ps.early, frame...)
	return c.ps.wantPush.CompareAndSwap(false, true)
}

// adoptPush makes c push-capable for the frames queued in c.ps.early:
// itself if c's goroutine waits for input (parkReading), else through
// whoever serves c, who checks wantPush (pushIfWanted, the event loop's
// mail). Runs on a goroutine of its own: the caller of deliver may hold
// the keyspace lock.
func (s *Server) adoptPush(c *client) {
	c.convMu.Lock()
	if c.parked.CompareAndSwap(parkReading, parkAdopting) {
		s.enableIdlePush(c)
		c.parked.Store(parkReading)
		c.convMu.Unlock()
		return
	}
	c.convMu.Unlock()
	select { // waiting in a blocked command (waitBlocked)
	case c.ps.adopt <- struct{}{}:
	default:
	}
	s.loopPushWake(c) // in its event loop: handed back (eventloop_linux.go)
}

// enableIdlePush is enablePush between two of c's commands: the queued
// frames go out at once.
func (s *Server) enableIdlePush(c *client) {
	s.enablePush(c)
	c.endCmd() // (enablePush assumes a command runs: its frames wait in deferred)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// pushIfWanted is called by c's goroutine before it reads: it makes c
// push-capable when a push waits for it (early).
func (s *Server) pushIfWanted(c *client) {
	if c.ps.wantPush.Load() && !c.w.shared {
		s.enableIdlePush(c)
	}
}

// park marks c's goroutine as waiting for input: adoptPush may make c
// push-capable meanwhile. It reports false, not parked, when a push
// waits already (pushIfWanted must run first). (wantPush is cleared as
// c becomes push-capable: c.w.shared is not for reading here, adoptPush
// may be setting it.)
func (c *client) park() bool {
	c.parked.Store(parkReading)
	if c.ps.wantPush.Load() {
		c.unpark()
		return false
	}
	return true
}

// unpark ends park, once adoptPush, if it began, is done.
func (c *client) unpark() {
	if c.parked.CompareAndSwap(parkReading, parkRunning) {
		return
	}
	c.convMu.Lock() // (adoptPush holds it while parkAdopting)
	c.parked.Store(parkRunning)
	c.convMu.Unlock()
}
