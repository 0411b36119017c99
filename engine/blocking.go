package engine

import (
	clist "container/list"
	"math"
	"sync/atomic"
	"time"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, and for
// sorted sets BZPOPMIN, BZPOPMAX, BZMPOP), with the
// semantics of Redis 7.2:
//
//   - A blocking command that finds nothing to pop registers a Waiter under
//     the keyspace lock and sets Ctx.Blocked. It replies nothing yet. The
//     caller (the server's connection goroutine) then waits, outside the
//     lock, for the waiter's Done channel, its timeout, the end of the
//     connection, or the server's closing, and calls FinishWait, which
//     settles races under the lock and writes the reply.
//   - A command blocks only when it is the top-level command of an Exec
//     whose Ctx has CanBlock set. Inside a script or a transaction (EXEC)
//     it behaves as if its timeout had expired at once: a null array.
//   - When a command creates a list or a sorted set under a key that
//     clients wait for, the key is marked ready. At the end of the top-level command (still
//     under the lock; for a script or EXEC that is after all of it, as in
//     Redis), the waiters of each ready key are served in the order they
//     blocked: each one's command runs again, as Redis 7.2 re-executes it,
//     checking all of its keys in order; its reply is recorded and handed
//     to the waiting goroutine, which writes it to its connection. A
//     command that runs again and still finds nothing keeps waiting.
//   - A script that pushes and pops the same key leaves nothing to serve:
//     waiters are served from the state the script left.

// waitState is where a Waiter stands; it changes only under the lock.
type waitState uint8

const (
	waitBlocked      waitState = iota
	waitServed                 // the command ran again and replied
	waitTimedOut               // its timeout passed
	waitUnblockTime            // CLIENT UNBLOCK id [TIMEOUT]
	waitUnblockError           // CLIENT UNBLOCK id ERROR
	waitGone                   // its connection ended or the server closes
)

// WaitEnd says why a blocked client's wait ended, as its goroutine saw it.
type WaitEnd uint8

// Reasons for FinishWait.
const (
	WaitWoken   WaitEnd = iota // Done was closed
	WaitTimeout                // Timeout elapsed
	WaitGone                   // the client went away (no reply is written)
)

// ErrUnblocked is the reply to a client released by CLIENT UNBLOCK id ERROR.
const ErrUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// Waiter is a client blocked by a blocking command.
type Waiter struct {
	client  *Client
	cmd     *Command
	args    [][]byte // private copy of the command's arguments
	db      int      // the database of its keys
	keys    []string
	kind    Kind             // what it waits for: KindList or KindZSet
	elems   []*clist.Element // w's entry in each key's queue, as keys
	timeout time.Duration
	state   waitState
	stay    bool         // set by the command when it runs again and finds nothing
	firstNs atomic.Int64 // how long the command ran when it blocked (for its latency histogram; set after BlockNoKeys without the lock)
	expired func(Writer) // the reply to a timeout when it is not a null array (BlockNoKeys)
	reply   recorder
	done    chan struct{}
}

// Done is closed when the waiter has been served or released by CLIENT
// UNBLOCK; the waiting goroutine then calls FinishWait.
func (w *Waiter) Done() <-chan struct{} { return w.done }

// ArgvLen is the bytes of the blocked command's arguments (CLIENT LIST's
// argv-mem: Redis keeps a blocked client's arguments).
func (w *Waiter) ArgvLen() int { return ArgvLen(w.args) }

// Timeout is how long the client may wait; 0 means forever.
func (w *Waiter) Timeout() time.Duration { return w.timeout }

// blockState is the engine's part of blocking, guarded by the engine lock.
type blockState struct {
	top      *Command              // top-level command of the running Exec
	waiting  map[dbKey]*clist.List // key -> FIFO of *Waiter
	byClient map[*Client]*Waiter   // for CLIENT UNBLOCK
	ready    []dbKey               // keys made ready, in order
	isReady  map[dbKey]struct{}    // members of ready
	clients  int                   // number of blocked clients
}

// canBlock reports whether the running blocking command may block: it is
// the top-level command of an Exec whose caller can wait, or it is a
// waiter's command running again (then "blocking" means waiting on).
func (c *Ctx) canBlock() bool {
	if c.Blocked != nil {
		return true
	}
	return c.CanBlock && c.Script == nil && c.Cmd != nil && c.Cmd == c.Eng.blk.top &&
		c.Cmd.Flags&FlagBlocking != 0
}

// block makes the client wait for a value of kind (a list or a sorted
// set) under one of keys, for timeout (0: forever). The caller has
// checked canBlock and replied nothing.
func (c *Ctx) block(keys [][]byte, timeout time.Duration, kind Kind) {
	if w := c.Blocked; w != nil {
		w.stay = true // running again and still nothing: keep waiting
		return
	}
	e := c.Eng
	b := &e.blk
	if b.waiting == nil {
		b.waiting = make(map[dbKey]*clist.List)
		b.byClient = make(map[*Client]*Waiter)
		b.isReady = make(map[dbKey]struct{})
	}
	w := &Waiter{client: c.Client, cmd: c.Cmd, db: e.db, kind: kind, timeout: timeout, done: make(chan struct{})}
	w.reply.proto = c.W.Proto()
	w.args = make([][]byte, len(c.Args))
	for i, a := range c.Args {
		w.args[i] = append([]byte(nil), a...)
	}
	for _, k := range keys {
		key := string(k)
		dup := false
		for _, seen := range w.keys {
			if seen == key {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		dk := dbKey{e.db, key}
		q := b.waiting[dk]
		if q == nil {
			q = clist.New()
			b.waiting[dk] = q
		}
		w.keys = append(w.keys, key)
		w.elems = append(w.elems, q.PushBack(w))
	}
	if c.Client != nil {
		b.byClient[c.Client] = w
	}
	b.clients++
	c.Blocked = w
}

// BlockNoKeys makes the client of a command that waits on no key (WAIT,
// WAITAOF) wait for timeout (0: forever), as a blocked Redis client: it
// counts in BlockedClients, CLIENT UNBLOCK releases it, and expired
// writes its reply when the timeout passes or CLIENT UNBLOCK [TIMEOUT]
// ends the wait. It reports false, and nothing waits, where a command
// cannot block (inside a script or a transaction, or for a caller that
// cannot wait): the caller then replies at once, as Redis does there.
// The command must be FlagNoKeys (run without the keyspace lock, which
// BlockNoKeys takes).
func (c *Ctx) BlockNoKeys(timeout time.Duration, expired func(Writer)) bool {
	// EXEC's and a script's commands run with CanBlock unset, or Script set
	if c.Blocked != nil || !c.CanBlock || c.Script != nil || c.Cmd == nil || c.Cmd.Flags&FlagNoKeys == 0 {
		return false
	}
	c.Eng.lockOrBusy(true)
	defer c.Eng.mu.Unlock()
	c.block(nil, timeout, 0)
	c.Blocked.expired = expired
	return true
}

// signalReady marks key ready if clients wait for it. It is called when a
// list or a sorted set is added under key (Redis's dbAdd; not when one
// overwrites a key, as dbOverwrite does not). Requires e.mu.
func (e *Engine) signalReady(key string) {
	if e.blk.waiting == nil {
		return
	}
	e.signalReadyKey(dbKey{e.db, key})
}

// signalReadyKey is signalReady for a key of any database.
func (e *Engine) signalReadyKey(dk dbKey) {
	b := &e.blk
	if b.waiting[dk] == nil {
		return
	}
	if _, ok := b.isReady[dk]; ok {
		return
	}
	b.isReady[dk] = struct{}{}
	b.ready = append(b.ready, dk)
}

// serveBlocked ends the top-level command (no handler run outside it may
// block) and serves the clients waiting on keys it made ready. Requires
// e.mu.
func (e *Engine) serveBlocked() {
	b := &e.blk
	b.top = nil
	if len(b.ready) == 0 {
		return
	}
	now := e.clock.Mono()
	cur := e.db
	defer e.use(cur)
	for len(b.ready) > 0 {
		dk := b.ready[0]
		b.ready[0] = dbKey{}
		b.ready = b.ready[1:]
		delete(b.isReady, dk)
		q := b.waiting[dk]
		if q == nil {
			continue
		}
		e.use(dk.db)
		key := dk.key
		// Serve at most the waiters present now, first blocked first,
		// those waiting for the kind the key now holds (Redis 7.0 serves
		// a ready list's BLOCKED_LIST clients, a sorted set's
		// BLOCKED_ZSET ones).
		n := q.Len()
		for el := q.Front(); el != nil && n > 0; n-- {
			next := el.Next()
			w := el.Value.(*Waiter)
			// (A killed client's waiter is left for its goroutine to
			// remove: it would take the element with it.)
			if w.client != nil && w.client.Killed() {
				el = next
				continue
			}
			if ent := e.lookup([]byte(key), now); ent != nil && ent.kind() == w.kind {
				e.rerun(w, now)
			}
			el = next
		}
	}
	b.ready = nil
}

// rerun runs a waiter's command again, recording its reply; unless the
// command still finds nothing, the waiter is served.
func (e *Engine) rerun(w *Waiter, now int64) {
	w.stay = false
	w.reply.ops = w.reply.ops[:0]
	sub := Ctx{Eng: e, Args: w.args, Now: now, W: &w.reply, Client: w.client, Cmd: w.cmd, Blocked: w}
	// (Not counted again in total_commands_processed: its first run was,
	// as Redis counts a blocked command once.)
	// The waiter's command is the one running (Redis sets current_client
	// to the receiver): the invalidation of a key it writes and tracks,
	// such as BLMOVE's destination, follows its reply (the server sends
	// the client's pending invalidations after FinishWait).
	prev := e.current
	e.current = w.client
	start := e.nowNs()
	dirty := e.dirty
	w.cmd.Fn(&sub)
	if servedUncounted(w.cmd) {
		e.dirty = dirty
	}
	e.current = prev
	if w.stay {
		w.reply.ops = w.reply.ops[:0]
		return
	}
	// Its histogram gets the time it ran, first and last (Redis's
	// updateStatsOnUnblock: the time blocked is not counted).
	served := e.nowNs() - start
	e.recordLatency(&w.cmd.stats, time.Duration(w.firstNs.Load()+served))
	e.LatencySample("command-unblocking", time.Duration(served)) // Redis's updateStatsOnUnblock
	e.release(w, waitServed)
}

// servedUncounted reports whether cmd, served to a blocked client, leaves
// INFO's rdb_changes_since_last_save alone, as in Redis 7.0, whose
// serveClientBlockedOnList pops for BLPOP and BRPOP, and moves for BLMOVE
// and BRPOPLPUSH, without adding to server.dirty (it does add BLMPOP's
// elements, and genericZpopCommand the sorted sets' ones).
func servedUncounted(cmd *Command) bool {
	switch cmd.Name {
	case "blpop", "brpop", "blmove", "brpoplpush":
		return true
	}
	return false
}

// release takes w out of every queue and ends its wait. Requires e.mu.
func (e *Engine) release(w *Waiter, st waitState) {
	b := &e.blk
	for i, key := range w.keys {
		dk := dbKey{w.db, key}
		if q := b.waiting[dk]; q != nil {
			q.Remove(w.elems[i])
			if q.Len() == 0 {
				delete(b.waiting, dk)
			}
		}
	}
	w.elems = nil
	if w.client != nil && b.byClient[w.client] == w {
		delete(b.byClient, w.client)
	}
	b.clients--
	w.state = st
	close(w.done)
}

// FinishWait ends the wait of the client whose command blocked (c.Blocked)
// and writes its reply to c.W: the served command's reply, a null array
// for a timeout, the UNBLOCKED error, or nothing when the client is gone.
// It clears c.Blocked. Call it from the client's own goroutine, without
// holding the engine lock, after Done is closed or for another reason.
func (e *Engine) FinishWait(c *Ctx, why WaitEnd) {
	w := c.Blocked
	if w == nil {
		return
	}
	c.Blocked = nil
	e.lockOrBusy(true)
	if w.state == waitBlocked {
		switch why {
		case WaitTimeout:
			e.release(w, waitTimedOut)
		case WaitGone:
			e.release(w, waitGone)
		default:
			// Woken without a decision: cannot happen, Done is closed
			// only by release. Treat it as a timeout rather than hang.
			e.release(w, waitTimedOut)
		}
	}
	st := w.state
	e.mu.Unlock()
	switch st {
	case waitServed:
		w.reply.replay(c.W)
		// an error the command met when served (BLMOVE's destination of
		// another type) counts as any error reply does
		for _, op := range w.reply.ops {
			if op.kind == recError {
				e.countError(op.s)
				w.cmd.stats.failed.Add(1)
			}
		}
	case waitTimedOut, waitUnblockTime:
		if w.expired != nil {
			w.expired(c.W)
		} else {
			c.W.WriteNullArray()
		}
	case waitUnblockError:
		c.W.WriteError(ErrUnblocked)
		// Redis's unblockClientOnError: an error reply, and a failed call
		e.countError(ErrUnblocked)
		w.cmd.stats.failed.Add(1)
	}
	w.reply.ops = nil
}

// UnblockClient is CLIENT UNBLOCK: it releases cl if it is blocked, as if
// its timeout had passed, or with the UNBLOCKED error, and reports whether
// it was blocked.
func (e *Engine) UnblockClient(cl *Client, withError bool) bool {
	e.lockOrBusy(true)
	defer e.mu.Unlock()
	return e.unblockClient(cl, withError)
}

// UnblockClientFrom is UnblockClient for the command c: inside EXEC, which
// holds the keyspace lock, it does not take it again.
func (e *Engine) UnblockClientFrom(c *Ctx, cl *Client, withError bool) bool {
	if c.InExec() {
		return e.unblockClient(cl, withError)
	}
	return e.UnblockClient(cl, withError)
}

// unblockClient is UnblockClient's work. Requires e.mu.
func (e *Engine) unblockClient(cl *Client, withError bool) bool {
	w := e.blk.byClient[cl]
	if w == nil || w.state != waitBlocked {
		return false
	}
	e.recordLatency(&w.cmd.stats, time.Duration(w.firstNs.Load())) // as Redis's CLIENT UNBLOCK (a timeout does not)
	if withError {
		e.release(w, waitUnblockError)
	} else {
		e.release(w, waitUnblockTime)
	}
	return true
}

// BlockedClients returns how many clients are blocked.
func (e *Engine) BlockedClients() int {
	e.lockOrBusy(true)
	defer e.mu.Unlock()
	n, _ := e.blockedClients()
	return n
}

// blockedClients is BlockedClients under e.mu, with how many of those
// wait with a timeout (INFO's clients_in_timeout_table, Redis's
// clients_timeout_table). A killed client no longer counts, though its
// waiter stays until its goroutine ends the wait (FinishWait): Redis
// frees a killed client at once, blocked or not, and it is served
// nothing meanwhile (serveBlocked).
func (e *Engine) blockedClients() (n, timed int) {
	n = e.blk.clients
	for cl, w := range e.blk.byClient {
		switch {
		case cl.Killed():
			n--
		case w.timeout != 0:
			timed++
		}
	}
	return n, timed
}

// parseBlockTimeout is Redis 7.2's getTimeoutFromObjectOrReply for a
// timeout in seconds: a long double, 0 meaning forever. It returns the
// time to wait.
func parseBlockTimeout(c *Ctx, arg []byte) (time.Duration, bool) {
	sec, ok := parseLongDouble(arg)
	if !ok {
		c.W.WriteError("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms, outOfRange := timeoutMillis(sec)
	if outOfRange {
		c.W.WriteError("ERR timeout is out of range")
		return 0, false
	}
	if ms < 0 {
		c.W.WriteError("ERR timeout is negative")
		return 0, false
	}
	if ms > 0 && ms > math.MaxInt64-c.Eng.clock.Wall().UnixMilli() {
		c.W.WriteError("ERR timeout is out of range") // now + ms would overflow
		return 0, false
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		ms = int64(math.MaxInt64 / time.Millisecond) // about 292 years
	}
	return time.Duration(ms) * time.Millisecond, true
}

// recorder is a Writer that keeps a reply to write later, elsewhere.
type recorder struct {
	proto int
	ops   []recOp
}

type recOp struct {
	kind uint8
	n    int64
	s    string
	f    float64
}

const (
	recStatus = iota
	recError
	recInt
	recBulk
	recNull
	recNullArray
	recArray
	recMap
	recSet
	recBool
	recDouble
	recVerbatim
	recBigNumber
)

var _ Writer = (*recorder)(nil)

func (r *recorder) Proto() int {
	if r.proto == 0 {
		return 2
	}
	return r.proto
}
func (r *recorder) add(op recOp)             { r.ops = append(r.ops, op) }
func (r *recorder) WriteStatus(s string)     { r.add(recOp{kind: recStatus, s: s}) }
func (r *recorder) WriteError(msg string)    { r.add(recOp{kind: recError, s: msg}) }
func (r *recorder) WriteInt(n int64)         { r.add(recOp{kind: recInt, n: n}) }
func (r *recorder) WriteBulk(b []byte)       { r.add(recOp{kind: recBulk, s: string(b)}) }
func (r *recorder) WriteBulkString(s string) { r.add(recOp{kind: recBulk, s: s}) }
func (r *recorder) WriteNull()               { r.add(recOp{kind: recNull}) }
func (r *recorder) WriteNullArray()          { r.add(recOp{kind: recNullArray}) }
func (r *recorder) WriteArray(n int)         { r.add(recOp{kind: recArray, n: int64(n)}) }
func (r *recorder) WriteMap(n int)           { r.add(recOp{kind: recMap, n: int64(n)}) }
func (r *recorder) WriteSet(n int)           { r.add(recOp{kind: recSet, n: int64(n)}) }
func (r *recorder) WriteDouble(f float64)    { r.add(recOp{kind: recDouble, f: f}) }
func (r *recorder) WriteBigNumber(s string)  { r.add(recOp{kind: recBigNumber, s: s}) }
func (r *recorder) WriteBool(v bool) {
	op := recOp{kind: recBool}
	if v {
		op.n = 1
	}
	r.add(op)
}
func (r *recorder) WriteVerbatim(format, s string) {
	r.add(recOp{kind: recVerbatim, s: s, n: int64(len(format))})
	r.ops[len(r.ops)-1].s = format + s
}

// replay writes the recorded reply to w.
func (r *recorder) replay(w Writer) {
	for _, op := range r.ops {
		switch op.kind {
		case recStatus:
			w.WriteStatus(op.s)
		case recError:
			w.WriteError(op.s)
		case recInt:
			w.WriteInt(op.n)
		case recBulk:
			w.WriteBulkString(op.s)
		case recNull:
			w.WriteNull()
		case recNullArray:
			w.WriteNullArray()
		case recArray:
			w.WriteArray(int(op.n))
		case recMap:
			w.WriteMap(int(op.n))
		case recSet:
			w.WriteSet(int(op.n))
		case recBool:
			w.WriteBool(op.n != 0)
		case recDouble:
			w.WriteDouble(op.f)
		case recVerbatim:
			w.WriteVerbatim(op.s[:op.n], op.s[op.n:])
		case recBigNumber:
			w.WriteBigNumber(op.s)
		}
	}
}
