package engine

import (
	"bytes"
	"cmp"
	"math"
	"slices"

	"github.com/tumblerdb/tumbler/expiry"
)

func registerKeys(e *Engine) {
	e.Register(
		&Command{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Fn: cmdDel},
		&Command{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Fn: cmdDel},
		&Command{Name: "exists", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Fn: cmdExists},
		&Command{Name: "type", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdType},
		&Command{Name: "expire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdExpire},
		&Command{Name: "pexpire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdPExpire},
		&Command{Name: "expireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdExpireAt},
		&Command{Name: "pexpireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdPExpireAt},
		&Command{Name: "ttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: func(c *Ctx) { ttlGeneric(c, false, false) }},
		&Command{Name: "pttl", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: func(c *Ctx) { ttlGeneric(c, true, false) }},
		&Command{Name: "expiretime", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: func(c *Ctx) { ttlGeneric(c, false, true) }},
		&Command{Name: "pexpiretime", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: func(c *Ctx) { ttlGeneric(c, true, true) }},
		&Command{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdPersist},
		&Command{Name: "keys", Arity: 2, Flags: FlagReadonly, Group: "generic", Fn: cmdKeys},
		&Command{Name: "scan", Arity: -2, Flags: FlagReadonly, Group: "generic", Fn: cmdScan},
		&Command{Name: "dbsize", Arity: 1, Flags: FlagReadonly | FlagFast, Group: "server", Fn: cmdDBSize},
		&Command{Name: "flushdb", Arity: -1, Flags: FlagWrite, Group: "server", Fn: cmdFlush},
		&Command{Name: "flushall", Arity: -1, Flags: FlagWrite, Group: "server", Fn: cmdFlush},
	)
}

// DEL key [key ...] / UNLINK key [key ...]
func cmdDel(c *Ctx) {
	var n int64
	for _, key := range c.Args[1:] {
		if c.Eng.del(key, c.Now) {
			n++
		}
	}
	c.Eng.dirty += n
	c.W.WriteInt(n)
}

// EXISTS key [key ...]
func cmdExists(c *Ctx) {
	var n int64
	for _, key := range c.Args[1:] {
		if c.Eng.lookupRead(key, c.Now) != nil {
			n++
		}
	}
	c.W.WriteInt(n)
}

// TYPE key
func cmdType(c *Ctx) {
	ent := c.Eng.lookupRead(c.Args[1], c.Now) // lookupKeyReadWithFlags: hits, misses, keymiss
	if ent == nil {
		c.W.WriteStatus("none")
		return
	}
	c.W.WriteStatus(ent.kind().String())
}

const (
	expireNX = 1 << iota
	expireXX
	expireGT
	expireLT
)

// EXPIRE key seconds [NX|XX|GT|LT]
func cmdExpire(c *Ctx) { expireGeneric(c, c.Now, true, false) }

// PEXPIRE key milliseconds [NX|XX|GT|LT]
func cmdPExpire(c *Ctx) { expireGeneric(c, c.Now, false, false) }

// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
func cmdExpireAt(c *Ctx) { expireGeneric(c, 0, true, true) }

// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
func cmdPExpireAt(c *Ctx) { expireGeneric(c, 0, false, true) }

// expireGeneric is Redis's expireGenericCommand: relative (basetime = now)
// and absolute (basetime 0, wall time converted to monotonic) expiry
// through one path. Flags are checked before the number; a deadline at or
// before now deletes the key and replies 1.
func expireGeneric(c *Ctx, basetime int64, seconds, absolute bool) {
	var flag int
	nx, xx, gt, lt := false, false, false, false
	for _, opt := range c.Args[3:] {
		switch {
		case eqFold(opt, "nx"):
			flag |= expireNX
			nx = true
		case eqFold(opt, "xx"):
			flag |= expireXX
			xx = true
		case eqFold(opt, "gt"):
			flag |= expireGT
			gt = true
		case eqFold(opt, "lt"):
			flag |= expireLT
			lt = true
		default:
			c.W.WriteError("ERR Unsupported option " + string(cstr(opt))) // %s
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.W.WriteError(ErrNXXXGTLT)
		return
	}
	if gt && lt {
		c.W.WriteError(ErrGTLT)
		return
	}
	when, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	name := c.Cmd.Name
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.W.WriteError(ErrInvalidExpire(name))
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		c.W.WriteError(ErrInvalidExpire(name))
		return
	}
	when += basetime
	if absolute {
		when = c.wallToMono(when)
	}
	key := c.Args[1]
	ent := c.Eng.lookup(key, c.Now)
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	if flag != 0 {
		cur := ent.deadline // 0 = none (Redis's -1)
		switch {
		case flag&expireNX != 0 && cur != 0,
			flag&expireXX != 0 && cur == 0,
			flag&expireGT != 0 && (cur == 0 || when <= cur),
			flag&expireLT != 0 && cur != 0 && when >= cur:
			c.W.WriteInt(0)
			return
		}
	}
	c.Eng.dirty++ // a deadline set, even the one the key had, or the key deleted
	if when <= c.Now {
		c.Eng.del(key, c.Now)
		c.W.WriteInt(1)
		return
	}
	c.Eng.setDeadline(key, ent, when)
	c.Eng.modified(string(key))
	c.Eng.notifyBytes(NotifyGeneric, "expire", key)
	c.W.WriteInt(1)
}

// ttlGeneric is Redis's ttlGenericCommand: -2 for a missing key, -1 for no
// deadline, else the time left (or the absolute Unix time), never negative.
func ttlGeneric(c *Ctx, ms, abs bool) {
	ent := c.Eng.lookupRead(c.Args[1], c.Now) // lookupKeyReadWithFlags: hits, misses, keymiss
	if ent == nil {
		c.W.WriteInt(-2)
		return
	}
	if ent.deadline == 0 {
		c.W.WriteInt(-1)
		return
	}
	var ttl int64
	if abs {
		ttl = c.monoToWall(ent.deadline)
	} else {
		ttl = ent.deadline - c.Now
	}
	if ttl < 0 {
		ttl = 0
	}
	if ms {
		c.W.WriteInt(ttl)
	} else {
		// ttl >= 0: unsigned, the rounding cannot overflow near the
		// int64 maximum (Redis's compiled (ttl+500)/1000 does not either)
		c.W.WriteInt(int64((uint64(ttl) + 500) / 1000))
	}
}

// PERSIST key
func cmdPersist(c *Ctx) {
	ent := c.Eng.lookup(c.Args[1], c.Now)
	if ent == nil || ent.deadline == 0 {
		c.W.WriteInt(0)
		return
	}
	c.Eng.setDeadline(c.Args[1], ent, 0)
	c.Eng.modified(string(c.Args[1]))
	c.Eng.notifyBytes(NotifyGeneric, "persist", c.Args[1])
	c.Eng.dirty++
	c.W.WriteInt(1)
}

// KEYS pattern
func cmdKeys(c *Ctx) {
	pat := c.Args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var out []string
	c.Eng.keys.each(func(ent *entry) bool {
		if expiry.Expired(ent.deadline, c.Now) { // keyIsExpired
			return true
		}
		if all || Match(pat, []byte(ent.key()), false) {
			out = append(out, ent.key())
		}
		return true
	})
	c.W.WriteArray(len(out))
	for _, k := range out {
		c.W.WriteBulkString(k)
	}
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//
// The cursor is a position in the keyspace's hash order: each call
// returns the keys whose hash is at or after the cursor, up to COUNT
// positions, so every key present for the whole iteration is returned at
// least once, as Redis guarantees. The keyspace's tables are laid out in
// hash order (keyTable), so a call reads a table or a few (at most 4096
// slots each), not every key.
func cmdScan(c *Ctx) {
	cur, ok := parseCursor(c.Args[1])
	if !ok {
		c.W.WriteError(ErrInvalidCursor)
		return
	}
	count := int64(10)
	var pat, typ []byte
	for i := 2; i < len(c.Args); i++ {
		rest := len(c.Args) - i - 1
		switch {
		case eqFold(c.Args[i], "count") && rest >= 1:
			n, ok := parseInt(c.Args[i+1])
			if !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			if n < 1 {
				c.W.WriteError(ErrSyntax)
				return
			}
			count = n
			i++
		case eqFold(c.Args[i], "match") && rest >= 1:
			pat = c.Args[i+1]
			i++
		case eqFold(c.Args[i], "type") && rest >= 1:
			typ = c.Args[i+1]
			i++
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	// The keys whose (63-bit) scan hash is at or after the cursor, from
	// whole tables of the keyspace in hash order (keyTable.collectFrom):
	// at least count of them, unless the end comes first.
	var batch []kslot
	end := cur > math.MaxUint64>>1 // past every hash
	if !end {
		batch, end = c.Eng.keys.collectFrom(cur<<1, int(min(count, 1<<20)), nil)
	}
	// nearly sorted already (slots follow hash order but for probe
	// displacement), which pdqsort finishes in about linear time
	slices.SortFunc(batch, func(a, b kslot) int { return cmp.Compare(a.h, b.h) })
	var next uint64
	if int64(len(batch)) > count {
		// cut after the count-th, ties at the bound included
		bound := batch[count-1].h >> 1
		n := int(count)
		for n < len(batch) && batch[n].h>>1 == bound {
			n++
		}
		batch = batch[:n]
		next = bound + 1
	} else if !end {
		next = (batch[len(batch)-1].h >> 1) + 1
	}
	// As Redis's scanGenericCommand: MATCH * is no pattern (the glob does
	// not match * against the empty key), and a key is looked up, which
	// expires it if due, only once it matched the pattern.
	if len(pat) == 1 && pat[0] == '*' {
		pat = nil
	}
	var out []string
	for _, b := range batch {
		k := b.ent.key() // (a view of the entry, which a delete leaves as it is)
		if pat != nil && !Match(pat, []byte(k), false) {
			continue
		}
		var ent *entry
		if typ != nil {
			// lookupKeyReadWithFlags: a keyspace hit or miss, and keymiss
			ent = c.Eng.lookupRead([]byte(k), c.Now)
		} else {
			ent = c.Eng.lookup([]byte(k), c.Now) // expireIfNeeded
		}
		if typ != nil {
			kind := "none"
			if ent != nil {
				kind = ent.kind().String()
			}
			// TYPE none keeps a key the lookup just expired: Redis's
			// expireIfNeeded after its type check finds nothing left
			// to expire. One CLIENT PAUSE left in place it filters.
			if !eqFold(typ, kind) || ent == nil && c.Eng.keys.get([]byte(k)) != nil {
				continue
			}
		} else if ent == nil {
			continue
		}
		out = append(out, k)
	}
	writeScan(c, next, out)
}

// parseCursor parses a SCAN cursor as Redis's parseScanCursorOrReply does
// with strtoul: a leading space, trailing bytes or a value over 64 bits is
// invalid; an optional sign is accepted ("-n" wraps around as in C); no
// digits at all is 0 only for the empty string. strtoul reads a C string:
// a NUL ends the cursor.
func parseCursor(b []byte) (uint64, bool) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, true
	}
	switch b[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return 0, false
	}
	i, neg := 0, false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		i = 1
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		ch := b[i]
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// DBSIZE
func cmdDBSize(c *Ctx) { c.W.WriteInt(int64(c.Eng.keys.len())) }

// FLUSHDB [ASYNC|SYNC] / FLUSHALL [ASYNC|SYNC]
func cmdFlush(c *Ctx) {
	if len(c.Args) > 2 || (len(c.Args) == 2 && !eqFold(c.Args[1], "async") && !eqFold(c.Args[1], "sync")) {
		c.W.WriteError(ErrSyntax)
		return
	}
	e := c.Eng
	e.beginFlush() // tracking: one invalidation for all keys (tracking.go)
	if c.Cmd != nil && c.Cmd.Name == "flushall" {
		e.dirty += int64(e.flushAll())
	} else {
		e.dirty += int64(e.flushDB())
	}
	e.endFlush()
	c.W.WriteStatus(statusOK)
}

// flushDB removes every key of the current database, returning how many
// there were, expired ones not yet reclaimed included (as Redis's
// emptyData). Requires e.mu.
func (e *Engine) flushDB() int {
	old := e.keys
	e.setKeys(newKeyTable(&e.lru))
	e.idx.Clear()
	e.nextWake = 0
	e.mem.flushed.Store(true) // maxmemory: the next check collects (memory.go)
	if old.len() > 0 {
		e.freedMuch() // used_memory: collect soon (memory.go)
	}
	if len(e.onModified) > 0 {
		old.each(func(ent *entry) bool {
			e.modified(ent.key())
			return true
		})
	}
	return old.len()
}
