package engine

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, following Redis
// 7.0's src/multi.c and the queueing branch of processCommand in
// src/server.c.
//
// State lives in three places:
//   - Client.tx (a *multiState, allocated on first use): the MULTI flag,
//     the queue and the DIRTY_EXEC flag, touched only by the client's own
//     goroutine; its watched keys and DIRTY_CAS flag, guarded by
//     Engine.watch.mu.
//   - Engine.watch: key -> the clients watching it, guarded by watch.mu, so
//     that a modification flags exactly the watchers of that key.
//   - the onModified hook touchWatched, called under the keyspace lock for
//     every write, expiry and deletion.
//
// Lock order: the keyspace lock, then watch.mu. Nothing takes the keyspace
// lock while holding watch.mu, so DISCARD, UNWATCH, RESET and a closing
// connection (which take only watch.mu) never wait for a busy script.

// Transaction error texts (src/multi.c, src/server.c shared.execaborterr).
const (
	ErrMultiNested   = "ERR MULTI calls can not be nested"
	ErrExecNoMulti   = "ERR EXEC without MULTI"
	ErrDiscardNoMult = "ERR DISCARD without MULTI"
	ErrWatchInMulti  = "ERR WATCH inside MULTI is not allowed"
	ErrExecAbort     = "EXECABORT Transaction discarded because of previous errors."
	ErrNoMulti       = "ERR Command not allowed inside a transaction"
	errNoClient      = "ERR transactions need a client connection"
)

// multiState is one client's transaction and WATCH state (Redis's
// c->mstate, c->watched_keys and the CLIENT_MULTI / CLIENT_DIRTY_EXEC /
// CLIENT_DIRTY_CAS flags).
type multiState struct {
	// Own goroutine only.
	multi     bool     // CLIENT_MULTI: commands are queued
	dirtyExec bool     // CLIENT_DIRTY_EXEC: a command was rejected while queueing
	execing   bool     // EXEC is running the queue: commands must not block
	queue     []queued // the queued commands
	sub       Ctx      // reused context for the queued commands' runs

	// Guarded by Engine.watch.mu.
	dirtyCAS bool          // CLIENT_DIRTY_CAS: a watched key was touched
	watched  []*watchedKey // in WATCH order
	// watchedSet has watched's keys once there are more than
	// watchScanMax: Redis's watchForKey looks for a key already watched
	// through the client's whole list, so WATCH of n keys is O(n²) under
	// the lock (100,000 keys: seconds).
	watchedSet map[dbKey]struct{}
}

// watchScanMax is how many watched keys a WATCH looks through for one
// already watched before it keeps a set of them.
const watchScanMax = 16

// queued is one command waiting for EXEC, with its own copy of the
// arguments (the connection's read buffer is reused).
type queued struct {
	cmd  *Command
	args [][]byte
	// what the command's prepare left, and took, before EXEC took the
	// keyspace lock (prepareQueued)
	prepared any
	prep     time.Duration
}

// precompileQueuedMax bounds the bytes of queued commands EXEC prepares:
// what they compile is held until they run (about five times the
// source), where compiled as each runs it is let go before the next.
// Once the commands prepared (those whose prepare left something: not
// a small or cached script) reach it, the rest compile as they run,
// under the keyspace lock; the first is always prepared. A var for
// tests.
var precompileQueuedMax = 32 << 20

// prepareQueued is EXEC's prepare (Command.prepare): the queued commands'
// own, before the keyspace lock is taken for the transaction (an EVAL's
// large script compiles then, as it would outside MULTI). It returns
// their total time, EXEC's too.
func prepareQueued(c *Ctx) time.Duration {
	if !c.inMulti() {
		return 0
	}
	tx := c.Client.tx
	e := c.Eng
	e.watch.mu.Lock()
	doomed := tx.dirtyExec || tx.dirtyCAS // (EXEC will discard it: nothing to compile for)
	e.watch.mu.Unlock()
	if doomed {
		return 0
	}
	var total time.Duration
	held := 0 // the bytes of the commands whose prepares left something
	q := tx.queue
	for i := range q {
		if q[i].cmd.prepare == nil || held >= precompileQueuedMax {
			continue // (past the budget: compiled as it runs)
		}
		tmp := Ctx{Eng: c.Eng, Args: q[i].args, Client: c.Client}
		q[i].prep = q[i].cmd.prepare(&tmp)
		q[i].prepared = tmp.Prepared
		total += q[i].prep
		if tmp.Prepared != nil {
			for _, a := range q[i].args {
				held += len(a)
			}
		}
	}
	return total
}

// watchedKey is Redis's watchedKey: one (client, key) pair, listed both in
// the client's watched slice and in the engine's per-key list.
type watchedKey struct {
	dbKey  // the key and its database
	client *Client
	// expired is set when the key existed but had already expired when
	// WATCH was called (Redis's wk->expired): that key's lazy or active
	// deletion is then no logical change and does not abort EXEC.
	expired bool
}

// watchRegistry maps each watched key to its watchers (Redis's
// db->watched_keys).
type watchRegistry struct {
	mu   sync.Mutex
	keys map[dbKey][]*watchedKey
	// n is len(keys), read without mu by the modification hook: keys are
	// only added under the keyspace lock, which the hook holds, so a zero
	// it reads is never stale.
	n atomic.Int64
}

// registerMulti adds the transaction commands (flags, arity and summaries
// from Redis 7.0's src/commands/*.json; MULTI, DISCARD and UNWATCH need no
// keyspace lock) and WATCH's modification hook.
func registerMulti(e *Engine) {
	const tx = FlagNoScript | FlagLoading | FlagStale
	e.Register(
		&Command{Name: "multi", Arity: 1, Flags: tx | FlagFast | FlagAllowBusy | FlagNoKeys, Group: "transactions",
			Summary: "Mark the start of a transaction block", Fn: cmdMulti},
		&Command{Name: "exec", Arity: 1, Flags: tx | FlagSkipSlowlog, Group: "transactions", exclusive: true, // it may run scripts, and its commands run as one
			Summary: "Execute all commands issued after MULTI", Fn: cmdExec, prepare: prepareQueued},
		&Command{Name: "discard", Arity: 1, Flags: tx | FlagFast | FlagAllowBusy | FlagNoKeys, Group: "transactions",
			Summary: "Discard all commands issued after MULTI", Fn: cmdDiscard},
		&Command{Name: "watch", Arity: -2, Flags: tx | FlagFast | FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions",
			Summary: "Watch the given keys to determine execution of the MULTI/EXEC block", Fn: cmdWatch},
		&Command{Name: "unwatch", Arity: 1, Flags: tx | FlagFast | FlagAllowBusy | FlagNoKeys, Group: "transactions",
			Summary: "Forget about all watched keys", Fn: cmdUnwatch},
	)
	e.watch.keys = make(map[dbKey][]*watchedKey)
	e.AddOnModified(e.touchWatched)
}

// txOf returns cl's transaction state, allocating it on first use. Only
// cl's own goroutine calls it.
func txOf(cl *Client) *multiState {
	if cl.tx == nil {
		cl.tx = &multiState{}
	}
	return cl.tx
}

// inMulti reports whether c's client has an open MULTI.
func (c *Ctx) inMulti() bool {
	return c.Client != nil && c.Client.tx != nil && c.Client.tx.multi
}

// DenyBlocking reports whether a blocking command (BLPOP and friends) must
// not block and must instead reply as if its timeout had passed: inside a
// script, and inside EXEC (Redis sets CLIENT_DENY_BLOCKING for the run of
// the queue, src/multi.c execCommand). A command handler that would park
// the client (Ctx.Blocked, when blocking commands exist) must check this
// first: EXEC holds the keyspace lock for the whole queue.
func (c *Ctx) DenyBlocking() bool {
	return c.Script != nil || (c.Client != nil && c.Client.tx != nil && c.Client.tx.execing)
}

// Reject refuses the command in c with msg as the dispatcher refuses one
// before running it (see reject): inside MULTI the transaction is flagged
// and EXEC replies EXECABORT; a refused EXEC discards the transaction.
// cmd is the command refused, nil if unknown. For layers that refuse
// commands before Exec (the server's injected failures).
func (e *Engine) Reject(c *Ctx, cmd *Command, msg string) { e.reject(c, cmd, msg) }

// reject replies msg to a command refused before running (unknown, wrong
// arity, NOAUTH, BUSY: Redis's rejectCommand). Inside MULTI it flags the
// transaction so that EXEC fails with EXECABORT (flagTransaction); a
// rejected EXEC itself discards the transaction and replies EXECABORT with
// the reason (execCommandAbort), with or without a MULTI.
func (e *Engine) reject(c *Ctx, cmd *Command, msg string) {
	if cmd != nil && cmd.Name == "exec" || cmd == nil && len(c.Args) > 0 && eqFold(e.CommandName(c.Args[0]), "exec") {
		if c.Client != nil && c.Client.tx != nil {
			e.discardTransaction(c.Client)
		}
		// Redis builds these reasons without the "ERR " its reply
		// functions add (an arity error reads "...because of: wrong
		// number of arguments for 'exec' command"); shared errors such as
		// BUSY and NOAUTH keep their code. The error counted is the
		// EXECABORT (execCommandAbort).
		msg = "EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR ")
		e.rejectStats(cmd, msg) // obs: rejected_calls, errorstats (observe.go)
		c.W.WriteError(msg)
		return
	}
	e.rejectStats(cmd, msg)
	if c.inMulti() {
		c.Client.tx.dirtyExec = true
	}
	c.W.WriteError(msg)
}

// queue is the queueing branch of processCommand: inside MULTI every
// command except EXEC, DISCARD, MULTI, WATCH, QUIT and RESET
// (WouldQueue) is checked (existence, arity, auth and busy already
// were), stored and answered +QUEUED.
func (e *Engine) queue(c *Ctx, cmd *Command) {
	tx := c.Client.tx
	if cmd.Flags&FlagNoMulti != 0 {
		tx.dirtyExec = true
		c.W.WriteError(ErrNoMulti)
		return
	}
	// A transaction already doomed by an error keeps answering QUEUED but
	// stores nothing (queueMultiCommand; Redis also skips storing once
	// DIRTY_CAS is set, which lives under watch.mu here and is not worth
	// the lock: EXEC drops the queue either way).
	if !tx.dirtyExec {
		tx.queue = append(tx.queue, queued{cmd: cmd, args: copyArgs(c.Args)})
		c.Client.multiLen.Store(int32(len(tx.queue) + 1))
		c.Client.multiMem.Add(int64(ArgvLen(c.Args) + 8*len(c.Args)))
	}
	c.W.WriteStatus("QUEUED")
}

// WouldQueue reports whether cmd, sent now on c's connection, is queued by
// its open MULTI rather than run (MONITOR shows it only when EXEC runs it).
func (c *Ctx) WouldQueue(cmd *Command) bool {
	if !c.inMulti() {
		return false
	}
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return false
	}
	return true
}

// watchInMulti reports whether cmd is a WATCH sent inside MULTI, which
// reads no key, only refuses: as Redis answers it at once, even while a
// script is busy (it is allow-busy), it needs no keyspace lock.
func (c *Ctx) watchInMulti(cmd *Command) bool {
	return cmd.Name == "watch" && c.inMulti()
}

// InExec reports whether c is a command EXEC runs from its queue (not a
// script's command).
func (c *Ctx) InExec() bool {
	return c.Script == nil && c.Client != nil && c.Client.tx != nil && c.Client.tx.execing
}

// copyArgs copies args into one allocation.
func copyArgs(args [][]byte) [][]byte {
	buf := make([]byte, 0, ArgvLen(args))
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}

// MULTI
func cmdMulti(c *Ctx) {
	if c.Client == nil {
		c.W.WriteError(errNoClient)
		return
	}
	tx := txOf(c.Client)
	if tx.multi {
		// multiCommand replies with addReplyError: the transaction is
		// not flagged, a later EXEC still runs.
		c.W.WriteError(ErrMultiNested)
		return
	}
	tx.multi = true
	c.Client.multiLen.Store(1)
	c.Client.multiMem.Store(0)
	c.W.WriteStatus(statusOK)
}

// DISCARD
func cmdDiscard(c *Ctx) {
	if !c.inMulti() {
		c.W.WriteError(ErrDiscardNoMult)
		return
	}
	c.Eng.discardTransaction(c.Client)
	c.W.WriteStatus(statusOK)
}

// EXEC
//
// Runs under the keyspace lock (taken once by Engine.Exec), so the queued
// commands run with no other command interleaved, all at the EXEC's clock
// reading (Redis freezes server.mstime for nested call()s).
func cmdExec(c *Ctx) {
	if !c.inMulti() {
		c.W.WriteError(ErrExecNoMulti)
		return
	}
	e, cl := c.Eng, c.Client
	tx := cl.tx

	e.watch.mu.Lock()
	// "EXEC with expired watched key is disallowed": a watched key that
	// was live at WATCH and has passed its deadline without being
	// reclaimed yet (isWatchedKeyExpired).
	if !tx.dirtyCAS && e.watchedKeyExpired(tx, c.Now) {
		tx.dirtyCAS = true
	}
	dirtyCAS := tx.dirtyCAS
	e.watch.mu.Unlock()

	if tx.dirtyExec || dirtyCAS {
		if tx.dirtyExec {
			c.W.WriteError(ErrExecAbort)
		} else {
			c.W.WriteNullArray()
		}
		e.discardTransaction(cl)
		return
	}

	// Unwatch before running: the transaction's own writes must not
	// touch its watches ("Unwatch ASAP").
	e.watch.mu.Lock()
	e.unwatchAllLocked(cl)
	e.watch.mu.Unlock()

	q := tx.queue
	tx.queue = nil
	tx.execing = true
	defer func() {
		tx.execing = false
		tx.sub = Ctx{}
		e.discardTransaction(cl)
	}()
	e.FlushStats(c) // a queued INFO sees the client's commands before EXEC; queued ones count at once (no Pending)
	c.W.WriteArray(len(q))
	// A queued command's error replies are counted as its own (its call
	// wraps the writer in its own errTap), not again as EXEC's, and EXEC
	// does not fail by them: the queued commands write past EXEC's errTap.
	w := c.W
	if t, ok := w.(*errTap); ok {
		w = t.Writer
	}
	sub := &tx.sub
	for i := range q {
		*sub = Ctx{Eng: e, Args: q[i].args, Now: c.Now, W: w, Client: cl, Cmd: q[i].cmd, Prepared: q[i].prepared, prep: q[i].prep}
		q[i].prepared = nil // (let go once it has run)
		// ACL permissions are checked again: they may have changed since
		// the command was queued (acl.go).
		if cl.ACL != nil {
			if r := cl.ACL.rules.Load(); !r.full {
				if res, _ := e.aclDenied(cl, sub.Args, q[i].cmd, r, aclCtxMulti); res != aclOK {
					e.countError(execNoPermText(res))
					w.WriteError(execNoPermText(res))
					q[i] = queued{}
					continue
				}
			}
		}
		// A blocking command (BLPOP) never parks here: it sees
		// sub.DenyBlocking() and answers as if its timeout had passed.
		// When blocking exists (Ctx.Blocked), a queued command must never
		// set it; Redis asserts the same (serverAssert CLIENT_BLOCKED == 0).
		e.call(sub, q[i].cmd)      // obs: counted and timed like any command (observe.go)
		e.Stats.Commands.Add(1)    // once it has run, as Redis's call()
		e.trackRead(sub, q[i].cmd) // tracking: reads inside EXEC count for the client (tracking.go)
		if sub.RestOfExec != nil {
			w = sub.RestOfExec
		}
		q[i] = queued{}
	}
}

// WATCH key [key ...]
func cmdWatch(c *Ctx) {
	if c.Client == nil {
		c.W.WriteError(errNoClient)
		return
	}
	tx := txOf(c.Client)
	if tx.multi {
		c.W.WriteError(ErrWatchInMulti)
		return
	}
	e := c.Eng
	e.watch.mu.Lock()
	// "No point in watching if the client is already dirty."
	if !tx.dirtyCAS {
		for _, k := range c.Args[1:] {
			e.watchKey(c.Client, tx, k, c.Now)
		}
	}
	e.watch.mu.Unlock()
	c.W.WriteStatus(statusOK)
}

// UNWATCH
func cmdUnwatch(c *Ctx) {
	if cl := c.Client; cl != nil && cl.tx != nil {
		e := c.Eng
		e.watch.mu.Lock()
		e.unwatchAllLocked(cl)
		cl.tx.dirtyCAS = false
		e.watch.mu.Unlock()
	}
	c.W.WriteStatus(statusOK)
}

// DiscardTransaction drops cl's MULTI state and watches (Redis's
// discardTransaction). The server calls it for RESET and when a
// connection closes (freeClient unwatches all keys). It may be called from
// cl's own goroutine at any time, without the keyspace lock.
func (e *Engine) DiscardTransaction(cl *Client) {
	if cl != nil && cl.tx != nil {
		e.discardTransaction(cl)
	}
}

func (e *Engine) discardTransaction(cl *Client) {
	tx := cl.tx
	tx.multi, tx.dirtyExec = false, false
	tx.queue = nil
	cl.multiLen.Store(0)
	cl.multiMem.Store(0)
	e.watch.mu.Lock()
	tx.dirtyCAS = false
	e.unwatchAllLocked(cl)
	e.watch.mu.Unlock()
}

// watchKey adds key to cl's watches unless already there (watchForKey).
// Requires the keyspace lock and watch.mu.
func (e *Engine) watchKey(cl *Client, tx *multiState, key []byte, now int64) {
	if tx.watchedSet != nil {
		if _, ok := tx.watchedSet[dbKey{e.db, string(key)}]; ok {
			return
		}
	} else {
		for _, wk := range tx.watched {
			if wk.db == e.db && wk.key == string(key) {
				return
			}
		}
	}
	k := dbKey{e.db, string(key)}
	wk := &watchedKey{dbKey: k, client: cl}
	// keyIsExpired: present but past its deadline, without deleting it.
	if ent := e.keys.getString(k.key); ent != nil && expiry.Expired(ent.deadline, now) {
		wk.expired = true
	}
	list, ok := e.watch.keys[k]
	e.watch.keys[k] = append(list, wk)
	if !ok {
		e.watch.n.Add(1)
	}
	tx.watched = append(tx.watched, wk)
	switch {
	case tx.watchedSet != nil:
		tx.watchedSet[k] = struct{}{}
	case len(tx.watched) > watchScanMax:
		tx.watchedSet = make(map[dbKey]struct{}, 2*len(tx.watched))
		for _, w := range tx.watched {
			tx.watchedSet[w.dbKey] = struct{}{}
		}
	}
	cl.watchN.Store(int32(len(tx.watched)))
}

// unwatchAllLocked removes all of cl's watches (unwatchAllKeys). Requires
// watch.mu.
func (e *Engine) unwatchAllLocked(cl *Client) {
	tx := cl.tx
	for _, wk := range tx.watched {
		list := e.watch.keys[wk.dbKey]
		for i, x := range list {
			if x == wk {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(e.watch.keys, wk.dbKey)
			e.watch.n.Add(-1)
		} else {
			e.watch.keys[wk.dbKey] = list
		}
	}
	clear(tx.watched)
	tx.watched = tx.watched[:0]
	tx.watchedSet = nil
	cl.watchN.Store(0)
}

// watchedKeyExpired is isWatchedKeyExpired: whether a key that was not
// already expired at WATCH is now present and past its deadline. Requires
// the keyspace lock and watch.mu.
func (e *Engine) watchedKeyExpired(tx *multiState, now int64) bool {
	for _, wk := range tx.watched {
		if wk.expired {
			continue
		}
		if ent := e.dbs[wk.db].getString(wk.key); ent != nil && expiry.Expired(ent.deadline, now) {
			return true
		}
	}
	return false
}

// touchWatched is the key-modification hook (touchWatchedKey; FLUSHALL
// calls it for every key it removed, as touchAllWatchedKeysInDb touches
// the watched keys that existed). Every watcher of key gets DIRTY_CAS and
// loses all its watches, except one that watched the key when it had
// already expired: the deletion of that key is no logical change, so its
// flag is cleared instead. Called with the keyspace lock held; costs one
// atomic load when nothing is watched.
func (e *Engine) touchWatched(key string) {
	if e.watch.n.Load() == 0 {
		return
	}
	e.watch.mu.Lock()
	defer e.watch.mu.Unlock()
	dk := dbKey{e.db, key}
	list := e.watch.keys[dk]
	for i := 0; i < len(list); {
		wk := list[i]
		if wk.expired {
			if e.keys.getString(key) == nil {
				wk.expired = false
			}
			// A write to the still-present expired key cannot happen
			// here: every write path deletes an expired key first
			// (lookup), and that deletion clears the flag. Redis stops
			// the loop (break) in that case; skipping only this watcher
			// is the same for it and does not drop the others.
			i++
			continue
		}
		wk.client.tx.dirtyCAS = true
		// unwatchAllLocked removes list[i] (a client watches a key once),
		// shifting the rest down: stay at i.
		e.unwatchAllLocked(wk.client)
		list = e.watch.keys[dk]
	}
}

// WatchedKeys returns how many distinct keys some client WATCHes (for
// tests and fixtures: a closed connection must leave none behind).
func (e *Engine) WatchedKeys() int { return int(e.watch.n.Load()) }

// InMulti reports whether the client is inside MULTI (its commands are
// queued). Only the client's own goroutine may call it.
func (cl *Client) InMulti() bool { return cl.tx != nil && cl.tx.multi }

// MultiCount is CLIENT LIST's multi field: the commands queued for EXEC,
// -1 outside MULTI. Any goroutine may call it.
func (cl *Client) MultiCount() int { return int(cl.multiLen.Load()) - 1 }

// MultiMem is CLIENT LIST's multi-mem: the bytes of the commands queued
// for EXEC, as Redis counts them (their arguments, and 8 bytes for each
// argument's pointer). It may be called from any goroutine.
func (cl *Client) MultiMem() int64 { return cl.multiMem.Load() }

// WatchedCount is how many keys the client watches. It may be called from
// any goroutine.
func (cl *Client) WatchedCount() int { return int(cl.watchN.Load()) }

// ArgvLen is the bytes of args (Redis's argv_len_sum: CLIENT LIST's
// argv-mem).
func ArgvLen(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

// AnyQueued reports whether some command queued for EXEC satisfies pred
// (as Redis consults mstate.cmd_flags: CLIENT PAUSE WRITE holds an EXEC
// whose queue writes). Only the client's own goroutine may call it.
func (cl *Client) AnyQueued(pred func(cmd *Command, args [][]byte) bool) bool {
	if cl.tx == nil || !cl.tx.multi {
		return false
	}
	for _, q := range cl.tx.queue {
		if pred(q.cmd, q.args) {
			return true
		}
	}
	return false
}
