package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// This file holds the per-connection limits of Redis 7.0, all configurable
// (Config, the config file and CONFIG SET):
//
//   - maxclients: connections past it get "ERR max number of clients
//     reached" and are closed (conn.go, register);
//   - timeout: a connection that sends nothing for that long is closed;
//     connections that can receive pushes (pub/sub, tracking, MONITOR)
//     are exempt, as Redis exempts subscribers;
//   - proto-max-bulk-len, the multibulk count cap and the 64 KB inline
//     limit: protocol errors, checked by framedConn (framer.go);
//   - client-query-buffer-limit: a connection whose incomplete request
//     outgrows it is closed without a reply, as Redis does;
//   - client-output-buffer-limit for normal clients: see OutputBufferLimit.

// OutputBufferLimit is one client class's client-output-buffer-limit. A
// connection whose pending output reaches Hard bytes, or stays at Soft
// bytes or more for longer than SoftSeconds, is closed and the pending
// output dropped. Zero disables a limit.
//
// Pending output is what tumbler has not yet handed to the kernel: the
// replies of the commands of one read, while they are gathered and while
// the client is too slow to take them. Redis does not count its first
// 16 KB of replies (the client's static buffer); tumbler counts every byte.
type OutputBufferLimit struct {
	Hard        uint64
	Soft        uint64
	SoftSeconds int64
}

// OutputBufferLimits are the limits of the client classes, as Redis's
// client-output-buffer-limit sets them. tumbler enforces Normal for
// ordinary connections; PubSub is for subscribed connections; Replica is
// kept and reported only (there are no replicas).
type OutputBufferLimits struct {
	Normal  OutputBufferLimit
	Replica OutputBufferLimit
	PubSub  OutputBufferLimit
}

// DefaultOutputBufferLimits returns Redis's defaults: normal 0 0 0,
// replica 256mb 64mb 60, pubsub 32mb 8mb 60. A Config whose
// OutputBufferLimits is the zero value gets these.
func DefaultOutputBufferLimits() OutputBufferLimits {
	return OutputBufferLimits{
		Replica: OutputBufferLimit{Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
		PubSub:  OutputBufferLimit{Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
	}
}

// String formats the limits as CONFIG GET client-output-buffer-limit does.
func (l OutputBufferLimits) String() string {
	f := func(name string, c OutputBufferLimit) string {
		return name + " " + strconv.FormatUint(c.Hard, 10) + " " + strconv.FormatUint(c.Soft, 10) + " " + strconv.FormatInt(c.SoftSeconds, 10)
	}
	return f("normal", l.Normal) + " " + f("slave", l.Replica) + " " + f("pubsub", l.PubSub)
}

// obufState is one connection's progress towards its soft limit.
type obufState struct {
	softSince time.Time // when pending output was first seen at the soft limit; zero when below
}

// over reports whether pending bytes of output break l at now, as Redis's
// checkClientOutputBufferLimits decides: at or over the hard limit, or at
// or over the soft limit for more than SoftSeconds since a check first saw
// it there (a check below the soft limit starts the count again).
func (st *obufState) over(l OutputBufferLimit, pending int, now time.Time) bool {
	n := uint64(pending)
	if l.Hard != 0 && n >= l.Hard {
		return true
	}
	if l.Soft == 0 || n < l.Soft {
		st.softSince = time.Time{}
		return false
	}
	if st.softSince.IsZero() {
		st.softSince = now
		return false
	}
	return now.Sub(st.softSince) > time.Duration(l.SoftSeconds)*time.Second
}

// clientProd is a connection's part of the limits and authentication
// state (one field of client).
type clientProd struct {
	srv  *Server
	obuf obufState
	// A write of a connection without raw writes (TLS) that waits longer
	// than writeStallAfter starts the read-ahead (writeWaiting): stall
	// fires, and reports on stalled once the read-ahead runs.
	stall   *time.Timer
	stalled chan struct{}
}

// writeStallAfter is how long a write of a TLS connection may wait for
// room before its input is read meanwhile (writeWaiting).
const writeStallAfter = 10 * time.Millisecond

// outputOverLimit is called by a connection's goroutine after each
// command: it reports whether the replies gathered so far break the normal
// class's limit, and logs why. The caller then drops them and closes the
// connection. Connections that can receive pushes are checked as their
// pushes are (pushOverLimit).
func (s *Server) outputOverLimit(c *client) bool {
	if c.w.shared {
		c.omu.Lock()
		// closed already by a push over the limit (another goroutine's):
		// the rest of the batch does not run, as Redis runs nothing more
		// for a client it closes ASAP
		killed := c.ps.killed
		kill := !killed && s.pushOverLimit(c) // its class's limit, as a push's (pubsub.go)
		if !killed && !kill && c.w.over {
			// a reply cut at the limit (replyLimit), whose output the
			// flusher may have taken meanwhile: closed as pushOverLimit
			// closes
			c.ps.killed, kill = true, true
			c.w.drop()
			c.deferred = nil
		}
		c.omu.Unlock()
		if kill {
			s.closeOverLimit(c)
		}
		return kill || killed
	}
	l := s.live().OutputBufferLimits.Normal
	if !c.w.over { // (a reply cut at the limit: closed whatever the limit now)
		if l.Hard == 0 && l.Soft == 0 {
			return false
		}
		// (with the replies SetLatency delays: delayline.go)
		if !c.prod.obuf.over(l, c.w.size()+c.heldOut(), time.Now()) {
			return false
		}
	}
	s.log.Warn("client scheduled to be closed ASAP for overcoming of output buffer limits", "addr", c.addr, "class", "normal", "pending", c.w.size()+c.heldOut())
	c.dropOut = true // nor does what its delay line holds (finishDelayed)
	return true
}

// replyLimit is the hard output buffer limit of c's class (normal, or
// pubsub while it is subscribed), for its writer to stop at
// (respWriter.limit): 0 for none.
func (s *Server) replyLimit(c *client) int {
	if !c.w.shared {
		return s.replyLimitLocked(c)
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	return s.replyLimitLocked(c)
}

// replyLimitLocked is replyLimit for a caller that holds c's omu, or is
// its own goroutine while it cannot receive pushes (nobody else writes
// its pub/sub state then).
func (s *Server) replyLimitLocked(c *client) int {
	lim := s.live().OutputBufferLimits
	l := lim.Normal
	if c.ps.pubsub {
		l = lim.PubSub
	}
	if l.Hard == 0 || l.Hard > math.MaxInt {
		return 0
	}
	return int(l.Hard)
}

// errOutputLimit ends a connection that broke its output buffer limit.
var errOutputLimit = errors.New("tumbler: output buffer limit reached")

// writeOutAll writes a batch of replies, segs then b (respWriter.segs),
// to a connection that cannot receive pushes. Under a normal-class soft
// limit, a client that leaves Soft bytes or more unread for longer than
// SoftSeconds is disconnected. (A TLS connection whose write times out
// cannot be written again, so it is closed even when less than Soft
// remains.)
func (c *client) writeOutAll(segs [][]byte, b []byte) error {
	var l OutputBufferLimit
	if c.prod.srv != nil {
		l = c.prod.srv.live().OutputBufferLimits.Normal
	}
	left := len(b)
	for _, p := range segs {
		left += len(p)
	}
	if l.Soft == 0 || uint64(left) < l.Soft {
		for _, p := range segs {
			if _, err := c.write(p); err != nil {
				return err
			}
		}
		if len(b) == 0 {
			return nil
		}
		_, err := c.write(b)
		return err
	}
	deadline := time.Now().Add(time.Duration(l.SoftSeconds) * time.Second)
	armed := false
	defer func() {
		if armed {
			_ = c.nc.SetWriteDeadline(time.Time{})
		}
	}()
	for i := 0; i <= len(segs); i++ {
		p := b
		if i < len(segs) {
			p = segs[i]
		}
		for len(p) > 0 {
			over := uint64(left) >= l.Soft
			if over != armed {
				if over {
					_ = c.nc.SetWriteDeadline(deadline)
				} else {
					_ = c.nc.SetWriteDeadline(time.Time{})
				}
				armed = over
			}
			n, err := c.write(p)
			p, left = p[n:], left-n
			if err == nil {
				continue
			}
			var ne net.Error
			if armed && errors.As(err, &ne) && ne.Timeout() {
				if uint64(left) >= l.Soft {
					c.prod.srv.log.Warn("client scheduled to be closed ASAP for overcoming of output buffer limits", "addr", c.addr, "class", "normal", "pending", left)
					return errOutputLimit
				}
				continue
			}
			return err
		}
	}
	return nil
}

// write writes b to the connection: first without waiting when the raw
// read loop serves it (rawread.go), then, for what the socket did not
// take, with net.Conn.Write, which waits for room and honours deadlines.
func (c *client) write(b []byte) (int, error) {
	r := c.fc.raw
	if r == nil {
		n, err := c.writeWaiting(b)
		c.fc.net.Wrote(n)
		return n, err
	}
	n, err := r.write(b)
	if err != nil || n == len(b) {
		c.fc.net.Wrote(n)
		return n, err
	}
	// The socket is full. Its client may be sending more requests, and
	// read no reply until it has sent them all (redis-py's and Jedis's
	// pipelines do): waiting for room alone, each end would wait for the
	// other forever. So its input is read meanwhile and kept for the
	// parser, as Redis goes on filling its query buffer (up to
	// client-query-buffer-limit, past which Redis closes the client too).
	if c.fc.aheadDone == nil {
		c.readAheadWhileWriting()
		defer c.fc.stopReadAhead()
	}
	m, err := c.nc.Write(b[n:])
	c.fc.net.Wrote(n + m)
	return n + m, err
}

// readAheadWhileWriting starts the read-ahead of a connection whose write
// waits for room (write).
func (c *client) readAheadWhileWriting() {
	c.readAheadToLimit(func() {
		breakWrite(c.nc) // the write waiting for room fails
	})
}

// readAheadToLimit starts the read-ahead of a connection whose command or
// reply waits (a blocked command, a paused one, a write waiting for
// room), and returns its gone channel (readAhead). Redis reads such a
// client's socket on into its query buffer, up to
// client-query-buffer-limit: past it the client is closed, and so is it
// here (after atLimit, when not nil). maxmemory-clients counts what was
// read (aheadMem), measured after each read, as Redis measures a client
// after each read (and evicts before its next wait for events).
func (c *client) readAheadToLimit(atLimit func()) <-chan struct{} {
	if c.fc.unauth() {
		// The unauthenticated limits (framer.go) apply to input only as
		// it is parsed: until then, a client that has not authenticated
		// may send readAheadMax, and reading stops past it.
		return c.fc.readAhead(aheadBound{limit: func() int { return readAheadMax }})
	}
	s := c.prod.srv
	return c.fc.readAhead(aheadBound{
		limit: func() int { return int(min(c.fc.lim.queryBuf(), math.MaxInt)) },
		atLimit: func() error {
			c.fc.lim.queryBufHit(c.nc, int64(c.fc.ahead.n))
			if atLimit != nil {
				atLimit()
			}
			return errQueryBufLimit
		},
		read: func() {
			if s.evict.limit.Load() != 0 {
				s.measurePushed(c)
				s.afterPushes() // a pass, if the sum is over the limit (evict.go)
			}
		},
	})
}

// breakWrite makes a write that waits for room on nc fail, from another
// goroutine, by shutting the socket down (under TLS, the one beneath:
// closing the TLS connection would wait for the write).
func breakWrite(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if sc, ok := nc.(interface {
		CloseRead() error
		CloseWrite() error
	}); ok {
		_ = sc.CloseWrite()
		_ = sc.CloseRead()
	}
}

// writeWaiting is net.Conn.Write for a connection without raw writes,
// which cannot tell whether a write will wait (a TLS connection's write
// cannot be tried without waiting, nor retried after a timeout): past
// writeStallAfter a timer starts the read-ahead, as write does at once.
// The connection's goroutine, waiting in the write, touches no read-ahead
// state meanwhile; stalled hands that state back.
func (c *client) writeWaiting(b []byte) (int, error) {
	if c.fc.aheadDone != nil { // a read-ahead runs already
		return c.nc.Write(b)
	}
	if c.prod.stall == nil {
		c.prod.stalled = make(chan struct{}, 1)
		c.prod.stall = time.AfterFunc(writeStallAfter, func() {
			c.readAheadWhileWriting()
			c.prod.stalled <- struct{}{}
		})
	} else {
		c.prod.stall.Reset(writeStallAfter)
	}
	n, err := c.nc.Write(b)
	if !c.prod.stall.Stop() {
		<-c.prod.stalled
		c.fc.stopReadAhead()
	}
	return n, err
}

// protoLimits are the limits every connection's framer reads; the server
// holds one, updated by CONFIG SET. A nil *protoLimits gives the defaults.
type protoLimits struct {
	maxBulk      atomic.Int64 // proto-max-bulk-len
	maxMultibulk atomic.Int64 // Config.MaxMultibulkLen
	maxQueryBuf  atomic.Int64 // client-query-buffer-limit
	idle         atomic.Int64 // timeout, ns; 0 = none
	keepAlive    atomic.Int64 // tcp-keepalive, s, for connections accepted next (keepalive.go)
	log          *slog.Logger
}

func (l *protoLimits) bulk() uint64 {
	if l == nil {
		return framerMaxBulk
	}
	return uint64(l.maxBulk.Load())
}

func (l *protoLimits) multibulk() uint64 {
	if l == nil {
		return framerMaxMultibulk
	}
	return uint64(l.maxMultibulk.Load())
}

func (l *protoLimits) queryBuf() int64 {
	if l == nil {
		return framerQueryBufLimit
	}
	return l.maxQueryBuf.Load()
}

// queryBufHit logs a connection closed for its query buffer.
func (l *protoLimits) queryBufHit(nc net.Conn, n int64) {
	if l != nil && l.log != nil {
		l.log.Warn("Closing client that reached max query buffer length", "addr", nc.RemoteAddr().String(), "qbuf", n)
	}
}

// errQueryBufLimit is what framedConn.Read returns once a client's query
// buffer outgrew client-query-buffer-limit; no reply is sent.
var errQueryBufLimit = fmt.Errorf("%w: query buffer limit reached", errProtocolLimit)

// idleExempt reports whether the idle timeout (timeout) spares c, as
// Redis's clientsCronHandleTimeout spares MONITOR and clients with
// subscriptions (CLIENT_PUBSUB: none once they unsubscribed from
// everything), and as tumbler spares a client-tracking connection
// (docs/configuration.md). A blocked client reads nothing meanwhile.
func (c *client) idleExempt() bool {
	return c.mem.subs.Load() > 0 || c.fx.monitor.Load() || c.ps.tracking.Load()
}

// armIdle sets (or clears) the read deadline of the idle timeout before
// each read from the connection.
func (c *framedConn) armIdle() {
	d := time.Duration(c.lim.idle.Load())
	if d > 0 && (c.idleExempt == nil || !c.idleExempt()) {
		_ = c.Conn.SetReadDeadline(time.Now().Add(d))
		c.idleArmed = true
	} else if c.idleArmed {
		_ = c.Conn.SetReadDeadline(time.Time{})
		c.idleArmed = false
	}
}
