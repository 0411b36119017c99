package server

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SetLatency's delay line (faults.go). While a latency is set, or output
// delayed earlier is still to be written, what a connection would write
// (its replies, the pushes its flusher writes, a protocol error's reply)
// is stamped with the time it was ready and queued instead, and a writer
// goroutine of the connection's own writes it once the latency has
// passed since that stamp, in order: the connection's goroutine goes on
// reading and running its commands meanwhile, as on a slow network,
// where a reply is on its way while the next request is served. The
// latency is read as each entry falls due: a SetLatency meanwhile
// (notify wakes the writer) moves what waits, and 0 releases it at once.
//
// The writer starts with the first entry and ends when the queue is
// empty; the connection's goroutine, as it ends (unregister), lets it
// write what is queued (QUIT's +OK, a protocol error's reply, the
// replies to a client that hung up, as a network delivers what was sent
// before a close), unless the connection was killed or broke its output
// limit: then what waits is dropped. The queued bytes are the
// connection's output (omem, client-output-buffer-limit,
// maxmemory-clients: heldOut).
//
// Only the connection's goroutine queues, or, once it can receive
// pushes, whoever holds fmu (its goroutine or its flusher): the check
// that nothing waits, for a write that goes straight out, is not raced.

// delayLine is a connection's queue of delayed output (client.dl).
type delayLine struct {
	mu      sync.Mutex
	q       []delayedOut
	running bool          // its writer runs: it has output, or is writing some
	closed  bool          // the connection ends: nothing more is queued
	idle    chan struct{} // closed when the writer ends (replaced as one starts)
	stop    chan struct{} // closed to drop what waits (abandon)
	held    atomic.Int64  // bytes queued or being written
}

// delayedOut is output ready at at.
type delayedOut struct {
	at   time.Time
	segs [][]byte
	n    int
}

// heldOut is what c's delay line holds: output not yet written.
func (c *client) heldOut() int {
	if dl := c.dl.Load(); dl != nil {
		return int(dl.held.Load())
	}
	return 0
}

// delaying reports whether c's output must go through its delay line
// now: a latency is set, or output delayed before is still to go.
func (c *client) delaying() bool {
	if c.prod.srv == nil {
		return false
	}
	if c.prod.srv.fx.latency.Load() > 0 {
		return true
	}
	dl := c.dl.Load()
	if dl == nil {
		return false
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.running
}

// delayOut queues segs (c's output, handed over: the caller keeps none
// of it) when c's output must be delayed, and reports whether it did;
// false, the caller writes them itself. err is set when the connection's
// output can no longer go out (a delayed write failed, or it ends).
func (c *client) delayOut(segs [][]byte) (queued bool, err error) {
	if !c.delaying() {
		return false, nil
	}
	dl := c.dl.Load()
	if dl == nil {
		// (CompareAndSwap: a framer's error reply, delayErrorReply, is
		// queued without fmu)
		c.dl.CompareAndSwap(nil, &delayLine{})
		dl = c.dl.Load()
	}
	n := 0
	for _, p := range segs {
		n += len(p)
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if dl.closed {
		return true, net.ErrClosed
	}
	dl.q = append(dl.q, delayedOut{at: time.Now(), segs: segs, n: n})
	dl.held.Add(int64(n))
	if !dl.running {
		dl.running = true
		dl.idle = make(chan struct{})
		if dl.stop == nil {
			dl.stop = make(chan struct{})
		}
		go c.prod.srv.writeDelayed(c, dl)
	}
	return true, nil
}

// writeDelayed is c's writer: it writes each entry of dl once the
// latency has passed since it was ready, until the queue is empty.
func (s *Server) writeDelayed(c *client, dl *delayLine) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		dl.mu.Lock()
		if len(dl.q) == 0 {
			dl.running = false
			close(dl.idle)
			dl.mu.Unlock()
			return
		}
		head := dl.q[0]
		dl.mu.Unlock()
		if !s.waitDue(c, dl, head.at, &timer) {
			dl.drop()
			return
		}
		dl.mu.Lock()
		dl.q[0] = delayedOut{}
		dl.q = dl.q[1:]
		dl.mu.Unlock()
		var err error
		for _, p := range head.segs {
			var n int
			n, err = c.nc.Write(p)
			c.fc.net.Wrote(n)
			if err != nil {
				break
			}
		}
		dl.held.Add(-int64(head.n))
		s.measurePushed(c) // written: less memory (evict.go)
		s.evictDue()       // a pass a CONFIG SET made due, after its reply (sendBatch)
		if err != nil {
			c.closeNC() // its goroutine sees the end as it reads
			dl.drop()
			return
		}
	}
}

// waitDue waits until output ready at at is due: the latency (read anew
// whenever it changes) has passed since. It reports false when the
// output is to be dropped instead (the connection killed, abandon).
// Once the server closes, everything is due.
func (s *Server) waitDue(c *client, dl *delayLine, at time.Time, timer **time.Timer) bool {
	for {
		s.fx.pmu.Lock()
		changed := s.fx.changed // (SetLatency notifies)
		s.fx.pmu.Unlock()
		wait := time.Until(at.Add(time.Duration(s.fx.latency.Load())))
		if wait <= 0 {
			return true
		}
		if *timer == nil {
			*timer = time.NewTimer(wait)
		} else {
			(*timer).Reset(wait)
		}
		select {
		case <-(*timer).C:
		case <-changed:
		case <-c.fx.killed:
			return false
		case <-dl.stop:
			return false
		case <-s.done:
			return true
		}
	}
}

// drop empties the queue and ends the writer (which calls it).
func (dl *delayLine) drop() {
	dl.mu.Lock()
	clear(dl.q)
	dl.q = nil
	dl.held.Store(0)
	dl.running = false
	dl.closed = true
	close(dl.idle)
	dl.mu.Unlock()
}

// finishDelayed runs as c's connection ends, before its socket is
// closed: no more output is queued, and what is queued goes out (or is
// dropped, when c was killed or broke its output limit) before it
// returns.
func (c *client) finishDelayed() {
	dl := c.dl.Load()
	if dl == nil {
		return
	}
	c.omu.Lock()
	overLimit := c.ps.killed
	c.omu.Unlock()
	dl.mu.Lock()
	dl.closed = true
	running, idle := dl.running, dl.idle
	if running && (c.fx.dead.Load() || c.dropOut || overLimit) {
		close(dl.stop) // (once: closed stops queueing, so no writer starts again)
	}
	dl.mu.Unlock()
	if running {
		<-idle
	}
}

// flushDelayed is flush for a connection that cannot receive pushes,
// while its output may be delayed: the replies gathered so far go to its
// delay line, and it reports true, or nowhere when nothing is delayed any
// more (false: flush writes them). Queued, they count as its output
// (pendingOutput) rather than as a write under way (writeStart); it is
// measured once they are written (writeDelayed), as Redis measures and
// evicts after it writes.
func (c *client) flushDelayed() (queued bool, err error) {
	segs := make([][]byte, 0, len(c.w.segs)+1)
	segs = append(append(segs, c.w.segs...), slices.Clone(c.w.b))
	if queued, err = c.delayOut(segs); !queued {
		return false, nil
	}
	c.outGen++
	c.w.reset()
	c.mem.busySince.Store(0)
	c.mem.writing.Store(0)
	return true, err
}

// delayErrorReply queues line, a protocol error's reply the framer is about to
// write, behind c's delayed output, when output is delayed (framedConn's
// delayed).
func (c *client) delayErrorReply(line []byte) bool {
	queued, _ := c.delayOut([][]byte{slices.Clone(line)})
	return queued
}
