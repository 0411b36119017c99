package server

import (
	"errors"
	"net"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file is the server's side of blocking commands (BLPOP and friends;
// the engine's side is engine/blocking.go).
//
// A command that must wait leaves its Waiter in c.ctx.Blocked when
// engine.Exec returns. The connection's goroutine then flushes the replies
// of the commands before it, and waits, without the engine lock, for the
// first of: the waiter is served (or released by CLIENT UNBLOCK), its
// timeout (on the server's clock: a manual clock's Advance moves it), the
// client going away, the server closing. engine.FinishWait
// settles the race between these under the engine lock and writes the
// reply; then the rest of the pipeline runs.
//
// While it waits the goroutine keeps reading the socket (framedConn's
// read-ahead), so that a client that disconnects is noticed at once and
// taken out of the queues, rather than being handed an element it will
// never read. Bytes read meanwhile (pipelined commands) are kept for the
// parser, up to client-query-buffer-limit, past which the client is
// closed, as Redis closes a blocked client whose query buffer outgrows it
// (readAheadToLimit).

// registerBlocking adds CLIENT UNBLOCK.
func (s *Server) registerBlocking() {
	const conn = engine.FlagNoKeys | engine.FlagNoScript
	s.eng.Lookup([]byte("client")).Subs["unblock"] = &engine.Command{
		Name: "client|unblock", Group: "connection", Arity: -3, Flags: conn | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale,
		Fn: s.cmdClientUnblock,
	}
}

// waitBlocked waits for c's blocked command to end and writes its reply.
func (s *Server) waitBlocked(c *client) {
	w := c.ctx.Blocked
	c.fx.blocked.Store(true) // CLIENT LIST's 'b', before anyone can see the client wait
	defer c.fx.blocked.Store(false)
	if err := c.flush(); err != nil {
		s.eng.FinishWait(&c.ctx, engine.WaitGone)
		c.closeNow = true
		return
	}
	gone := c.readAheadToLimit(nil)
	var timeout <-chan time.Time
	var deadline int64 // on a manual clock: the timeout's end, server clock ms
	if d := w.Timeout(); d > 0 {
		if s.ManualClock() != nil {
			deadline = c.ctx.Now + ceilMs(d) // the blocking command's time
		} else {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
	}
	why := engine.WaitWoken
wait:
	for {
		// On a manual clock the timeout passes when Advance moves the
		// clock beyond it (as in Redis, a wait lives through its last
		// millisecond): Advance notifies the fixture's changed channel.
		var changed <-chan struct{}
		if deadline != 0 {
			s.fx.pmu.Lock()
			changed = s.fx.changed
			s.fx.pmu.Unlock()
			if s.eng.Now() > deadline {
				why = engine.WaitTimeout
				break
			}
		}
		select {
		case <-w.Done():
		case <-timeout:
			why = engine.WaitTimeout
		case <-changed:
			continue wait
		case <-c.ps.adopt: // pushes wait for it: sent while it waits, as Redis's (pushlater.go)
			s.pushIfWanted(c)
			continue wait
		case <-gone:
			why = engine.WaitGone
		case <-s.done:
			why = engine.WaitGone
		}
		break
	}
	c.fc.stopReadAhead()
	// Pushes arriving while the reply is written follow it, as during
	// any command (beginCmd): they must not split it.
	c.beginCmd()
	s.eng.FinishWait(&c.ctx, why)
	c.endCmd()
	if why == engine.WaitGone {
		c.closeNow = true
	}
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
func (s *Server) cmdClientUnblock(c *engine.Ctx) {
	if len(c.Args) > 4 {
		c.W.WriteError("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try " + upper(c.Args[0]) + " HELP.")
		return
	}
	withError := false
	if len(c.Args) == 4 {
		switch {
		case engine.EqFold(c.Args[3], "timeout"):
		case engine.EqFold(c.Args[3], "error"):
			withError = true
		default:
			c.W.WriteError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := engine.ParseInt(c.Args[2])
	if !ok {
		c.W.WriteError(engine.ErrNotInteger)
		return
	}
	var target *client
	s.clients.Range(func(k, _ any) bool {
		if cl := k.(*client); cl.ID == id {
			target = cl
			return false
		}
		return true
	})
	if target != nil && s.eng.UnblockClientFrom(c, &target.Client, withError) {
		c.W.WriteInt(1)
	} else {
		c.W.WriteInt(0)
	}
}

// readAheadMax bounds what a client that has not authenticated may send
// while it waits (readAheadToLimit): past it, reading stops until the
// wait ends.
const readAheadMax = 1 << 20

// aheadBound is what a read-ahead keeps to.
type aheadBound struct {
	// limit is the most it keeps, read before each read, so that a
	// CONFIG SET of the limit applies at once, as Redis checks it after
	// each read.
	limit func() int
	// atLimit, when not nil, is called once more than limit is kept (as
	// Redis, which closes a client whose query buffer is over the limit,
	// not at it): what was kept is dropped, and the read-ahead ends as if
	// the connection had failed with atLimit's error. When nil, reading
	// stops once limit is kept.
	atLimit func() error
	// read, when not nil, is called after each read that got bytes.
	read func()
}

// readAhead reads the connection in the background while its client
// waits, keeping the bytes for Read, within b. The returned channel is
// closed when the connection fails or ends. Call stopReadAhead before
// the next Read.
func (c *framedConn) readAhead(b aheadBound) <-chan struct{} {
	gone := make(chan struct{})
	if c.rerr != nil || c.aheadErr != nil {
		close(gone) // the client had already gone when its command blocked
		return gone
	}
	if c.idleArmed {
		// A blocked client is exempt from the idle timeout, as in Redis.
		_ = c.Conn.SetReadDeadline(time.Time{})
		c.idleArmed = false
	}
	done := make(chan struct{})
	c.aheadDone = done
	c.aheadStop.Store(false)
	go func() {
		defer close(done)
		for {
			if lim := b.limit(); b.atLimit == nil && c.ahead.n >= lim {
				return // until the wait ends
			} else if b.atLimit != nil && c.ahead.n > lim {
				c.aheadErr = b.atLimit()
				c.ahead = aheadBuf{} // dropped, as Redis frees such a client's query buffer
				c.aheadMem.Store(0)
				close(gone)
				return
			}
			room := c.ahead.room()
			n, err := c.Conn.Read(room)
			c.net.Read(n)
			c.ahead.wrote(n)
			c.aheadMem.Store(packWaiting(c.ahead.n, len(room)-n))
			if n > 0 && b.read != nil {
				b.read()
			}
			if err != nil {
				var ne net.Error
				if c.aheadStop.Load() && errors.As(err, &ne) && ne.Timeout() {
					return // stopped by stopReadAhead
				}
				c.aheadErr = err
				close(gone)
				return
			}
		}
	}()
	return gone
}

// stopReadAhead ends the background read started by readAhead,
// interrupting it with a read deadline in the past, and waits for it.
func (c *framedConn) stopReadAhead() {
	if c.aheadDone == nil {
		return
	}
	c.aheadStop.Store(true)
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
	<-c.aheadDone
	_ = c.Conn.SetReadDeadline(time.Time{})
	c.aheadDone = nil
	c.aheadMem.Store(0) // the connection's goroutine counts c.ahead now (held)
}

// readConn reads from the connection, first what the read-ahead kept.
func (c *framedConn) readConn(p []byte) (int, error) {
	if c.ahead.n > 0 {
		return c.ahead.read(p), nil
	}
	if c.aheadErr != nil {
		return 0, c.aheadErr
	}
	var n int
	var err error
	if c.raw != nil {
		n, err = c.raw.read(p) // (rawread.go)
	} else {
		n, err = c.Conn.Read(p)
	}
	c.net.Read(n)
	return n, err
}

// aheadBuf holds what a read-ahead read, in chunks that grow from
// aheadChunkMin to aheadChunkMax bytes. A read-ahead may hold up to
// client-query-buffer-limit (a gigabyte by default): in one slice grown
// by append, each growth would copy it all and hold the old copy until
// the GC frees it, and nothing would be freed before the last byte was
// taken. Chunks are never copied, and each is freed once Read took it.
type aheadBuf struct {
	chunks [][]byte // the bytes, in order; the last may have room after them
	n      int      // bytes held
}

const (
	aheadChunkMin = 4 << 10
	aheadChunkMax = 1 << 20
)

// room returns the free space after the last chunk's bytes, adding a
// chunk, twice the last one's size up to aheadChunkMax, when it has none.
func (a *aheadBuf) room() []byte {
	if k := len(a.chunks); k > 0 {
		if last := a.chunks[k-1]; len(last) < cap(last) {
			return last[len(last):cap(last)]
		}
	}
	size := aheadChunkMin
	if k := len(a.chunks); k > 0 {
		size = min(2*cap(a.chunks[k-1]), aheadChunkMax)
	}
	a.chunks = append(a.chunks, make([]byte, 0, size))
	return a.chunks[len(a.chunks)-1][:size]
}

// wrote adds n bytes written into room's space.
func (a *aheadBuf) wrote(n int) {
	if n > 0 {
		last := &a.chunks[len(a.chunks)-1]
		*last = (*last)[:len(*last)+n]
		a.n += n
	}
}

// read moves the first bytes held into p, freeing each chunk it empties.
func (a *aheadBuf) read(p []byte) int {
	n := 0
	for n < len(p) && len(a.chunks) > 0 {
		m := copy(p[n:], a.chunks[0])
		n += m
		if a.chunks[0] = a.chunks[0][m:]; len(a.chunks[0]) == 0 {
			a.chunks[0] = nil
			a.chunks = a.chunks[1:]
		}
	}
	a.n -= n
	if len(a.chunks) == 0 {
		a.chunks = nil
	}
	return n
}
