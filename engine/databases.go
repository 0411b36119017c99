package engine

import (
	"strconv"

	"github.com/tumblerdb/tumbler/expiry"
)

// Numbered databases (SELECT, SWAPDB, MOVE, COPY ... DB).
//
// Each database is a keyspace of its own with its own expiry index
// (database). A client's commands run in the database it SELECTed
// (Client.DB): the command switches the engine's current keyspace (e.keys,
// e.idx) to it when it starts, under the keyspace lock, and back to
// database 0 when it ends. Everything keyed by a key name and not by a
// database (WATCH, blocked clients) keys on dbKey; keyspace notifications
// name the current database. Client tracking, as in Redis, ignores the
// database.
//
// Inside a script SELECT changes the database for the rest of the script
// only (Redis 7): the caller's selection is restored when the script ends.
// Inside MULTI it changes the client's selection at once, for the commands
// queued after it, as in Redis.

// dbKey names a key in one database.
type dbKey struct {
	db  int
	key string
}

// use makes database n the current one, making it on first use (an
// empty expiry index holds a 64 KB cache). Requires e.mu.
func (e *Engine) use(n int) {
	if n == e.db {
		return
	}
	d := &e.dbs[n]
	if d.keys == nil {
		d.keys, d.idx = newKeyTable(&e.lru), expiry.NewIndex[entry]()
	}
	e.keys, e.idx, e.db = d.keys, d.idx, n
}

// size is how many keys the database holds, expires how many of them
// have a deadline, and getString the entry of a key (nil: none), whether
// or not the database was ever used.
func (d *database) size() int {
	if d.keys == nil {
		return 0
	}
	return d.keys.len()
}

func (d *database) expires() int {
	if d.idx == nil {
		return 0
	}
	return d.idx.Len()
}

func (d *database) getString(key string) *entry {
	if d.keys == nil {
		return nil
	}
	return d.keys.getString(key)
}

// setKeys replaces the current database's key table (FLUSHDB).
func (e *Engine) setKeys(t *keyTable) {
	e.keys = t
	e.dbs[e.db].keys = t
}

// CurrentDB is the database the running command works in (a script's
// SELECT included). It requires the keyspace lock: for hooks that run
// inside a command.
func (e *Engine) CurrentDB() int { return e.db }

// Databases returns how many databases there are (CONFIG GET databases).
func (e *Engine) Databases() int { return len(e.dbs) }

// DB returns the database the client has SELECTed. It may be read from any
// goroutine (CLIENT LIST).
func (cl *Client) DB() int { return int(cl.db.Load()) }

// ResetDB selects database 0 for the client (RESET). Call it from the
// client's own goroutine, between its commands.
func (cl *Client) ResetDB() { cl.db.Store(0) }

// enterDB switches to the database c's client has selected, at the start
// of its command. Requires e.mu.
func (e *Engine) enterDB(c *Ctx) {
	if cl := c.Client; cl != nil {
		if n := cl.db.Load(); n != 0 {
			e.use(int(n))
		}
	}
}

// restoreDB switches back to the database of c's client after a script
// that may have SELECTed another. Requires e.mu.
func (e *Engine) restoreDB(c *Ctx) {
	n := 0
	if c.Client != nil {
		n = int(c.Client.db.Load())
	}
	e.use(n)
}

// parseDBIndex reads a database number as Redis's getIntFromObjectOrReply
// then selectDb do: an integer that fits an int, then one in range. It
// writes the error and reports false otherwise.
func parseDBIndex(c *Ctx, arg []byte) (int, bool) {
	n, ok := parseInt(arg)
	switch {
	case !ok:
		c.W.WriteError(ErrNotInteger)
		return 0, false
	case n != int64(int32(n)):
		c.W.WriteError(ErrIntRange)
		return 0, false
	case n < 0 || n >= int64(len(c.Eng.dbs)):
		c.W.WriteError(ErrDBIndex)
		return 0, false
	}
	return int(n), true
}

// SELECT index
func cmdSelect(c *Ctx) {
	n, ok := parseDBIndex(c, c.Args[1])
	if !ok {
		return
	}
	if c.Script == nil && c.Client != nil {
		c.Client.db.Store(int32(n))
	}
	c.Eng.use(n)
	c.W.WriteStatus(statusOK)
}

// SWAPDB index1 index2
//
// The two databases trade their keys; clients stay where they are, so each
// sees the other's keys from now on. As Redis's swapdbCommand: the
// watchers of a key present in either database before or after are
// touched (touchAllWatchedKeysInDb), and clients blocked on a key that now
// holds what they wait for are served.
func cmdSwapDB(c *Ctx) {
	e := c.Eng
	var ids [2]int64
	for i, msg := range []string{"ERR invalid first DB index", "ERR invalid second DB index"} {
		n, ok := parseInt(c.Args[1+i])
		if !ok || n != int64(int32(n)) {
			c.W.WriteError(msg)
			return
		}
		ids[i] = n
	}
	for _, n := range ids {
		if n < 0 || n >= int64(len(e.dbs)) {
			c.W.WriteError(ErrDBIndex)
			return
		}
	}
	a, b := int(ids[0]), int(ids[1])
	if a != b {
		cur := e.db
		e.touchSwapped(a, b, c.Now)
		e.touchSwapped(b, a, c.Now)
		e.dbs[a], e.dbs[b] = e.dbs[b], e.dbs[a]
		e.db = -1 // the current keyspace may have moved: reload it
		e.use(cur)
		e.readyAfterSwap(a)
		e.readyAfterSwap(b)
	}
	e.dirty++ // (a database swapped with itself too)
	c.W.WriteStatus(statusOK)
}

// MOVE key db
func cmdMove(c *Ctx) {
	e := c.Eng
	db, ok := parseDBIndex(c, c.Args[2])
	if !ok {
		return
	}
	src := e.db
	if db == src {
		c.W.WriteError(ErrSameObject)
		return
	}
	key := c.Args[1]
	ent := e.lookup(key, c.Now)
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	e.use(db)
	defer e.use(src)
	if e.lookup(key, c.Now) != nil {
		c.W.WriteInt(0)
		return
	}
	// The entry itself moves, its bytes and object as they are, and its
	// deadline with it. In Redis's order: added to the destination (its
	// "new" event, blocked clients), deleted from the source, then both
	// keys touched and the two events.
	deadline := ent.deadline
	e.putNew(ent) // (the destination: e.use(db) above)
	e.use(src)
	e.removeKey(ent.key(), ent)
	e.use(db)
	ent.deadline = 0
	if deadline != 0 {
		e.setDeadlineKey(ent.key(), ent, deadline)
	}
	if k := ent.kind(); k == KindList || k == KindZSet {
		e.signalReady(ent.key())
	}
	e.use(src)
	e.modified(ent.key())
	e.use(db)
	e.modified(ent.key())
	e.use(src)
	e.notify(NotifyGeneric, "move_from", ent.key())
	e.use(db)
	e.notify(NotifyGeneric, "move_to", ent.key())
	e.dirty++
	c.W.WriteInt(1)
}

// flushAll empties every database (FLUSHALL), returning how many keys
// there were. Requires e.mu, between beginFlush and endFlush.
func (e *Engine) flushAll() (n int) {
	defer e.use(e.db)
	for i := range e.dbs {
		if e.dbs[i].size() > 0 {
			e.use(i)
			n += e.flushDB()
		}
	}
	return n
}

// keyspacePrefix and keyeventPrefix are the channel prefixes of the
// current database's keyspace notifications.
func (e *Engine) keyspacePrefix() string {
	if e.db == 0 {
		return "__keyspace@0__:"
	}
	return "__keyspace@" + strconv.Itoa(e.db) + "__:"
}

func (e *Engine) keyeventPrefix() string {
	if e.db == 0 {
		return "__keyevent@0__:"
	}
	return "__keyevent@" + strconv.Itoa(e.db) + "__:"
}

// touchSwapped touches, before SWAPDB gives database emptied the keys of
// database with, the watchers of emptied's keys that are present in
// either, as Redis's touchAllWatchedKeysInDb: a watcher of a key that had
// expired at WATCH is touched only if the key becomes a live one. Requires
// e.mu.
func (e *Engine) touchSwapped(emptied, with int, now int64) {
	if e.watch.n.Load() == 0 {
		return
	}
	e.watch.mu.Lock()
	defer e.watch.mu.Unlock()
	em, rw := &e.dbs[emptied], &e.dbs[with]
	var dirty []*Client
	for dk, list := range e.watch.keys {
		if dk.db != emptied {
			continue
		}
		inEmptied := em.getString(dk.key) != nil
		repl := rw.getString(dk.key)
		if !inEmptied && repl == nil {
			continue
		}
		for _, wk := range list {
			switch {
			case wk.expired && repl == nil:
				wk.expired = false // an expired key now deleted: no logical change
				continue
			case wk.expired && expiry.Expired(repl.deadline, now):
				continue // an expired key stays expired
			case !wk.expired && !inEmptied && expiry.Expired(repl.deadline, now):
				wk.expired = true // a missing key replaced by an expired one
				continue
			}
			if tx := wk.client.tx; !tx.dirtyCAS {
				tx.dirtyCAS = true
				dirty = append(dirty, wk.client)
			}
		}
	}
	for _, cl := range dirty {
		e.unwatchAllLocked(cl) // a dirty transaction's watches are moot
	}
}

// readyAfterSwap marks ready the keys of database db that clients wait
// on and that exist after SWAPDB (Redis's scanDatabaseForReadyKeys): the
// waiters of a key now holding what they wait for are then served.
// Requires e.mu.
func (e *Engine) readyAfterSwap(db int) {
	d := &e.dbs[db]
	for dk := range e.blk.waiting {
		if dk.db == db && d.getString(dk.key) != nil {
			e.signalReadyKey(dk)
		}
	}
}
