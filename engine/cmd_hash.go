package engine

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
)

func registerHash(e *Engine) {
	const w, r = FlagWrite, FlagReadonly
	h := func(cmd *Command) *Command {
		cmd.FirstKey, cmd.LastKey, cmd.Step, cmd.Group = 1, 1, 1, "hash"
		return cmd
	}
	e.Register(
		h(&Command{Name: "hset", Arity: -4, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { hsetGeneric(c, false) }}),
		h(&Command{Name: "hmset", Arity: -4, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { hsetGeneric(c, true) }}),
		h(&Command{Name: "hsetnx", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Fn: cmdHSetNX}),
		h(&Command{Name: "hget", Arity: 3, Flags: r | FlagFast, Fn: cmdHGet}),
		h(&Command{Name: "hmget", Arity: -3, Flags: r | FlagFast, Fn: cmdHMGet}),
		h(&Command{Name: "hdel", Arity: -3, Flags: w | FlagFast, Fn: cmdHDel}),
		h(&Command{Name: "hexists", Arity: 3, Flags: r | FlagFast, Fn: cmdHExists}),
		h(&Command{Name: "hlen", Arity: 2, Flags: r | FlagFast, Fn: cmdHLen}),
		h(&Command{Name: "hstrlen", Arity: 3, Flags: r | FlagFast, Fn: cmdHStrlen}),
		h(&Command{Name: "hincrby", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Fn: cmdHIncrBy}),
		h(&Command{Name: "hincrbyfloat", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Fn: cmdHIncrByFloat}),
		h(&Command{Name: "hgetall", Arity: 2, Flags: r, Fn: func(c *Ctx) { hgetallGeneric(c, true, true) }}),
		h(&Command{Name: "hkeys", Arity: 2, Flags: r, Fn: func(c *Ctx) { hgetallGeneric(c, true, false) }}),
		h(&Command{Name: "hvals", Arity: 2, Flags: r, Fn: func(c *Ctx) { hgetallGeneric(c, false, true) }}),
		h(&Command{Name: "hscan", Arity: -3, Flags: r, Fn: cmdHScan}),
		h(&Command{Name: "hrandfield", Arity: -2, Flags: r, Fn: cmdHRandField}),
	)
}

// getHash looks key up for a hash command. It returns a nil hash for a
// missing key, and replies WRONGTYPE (ok=false) for another kind.
func getHash(c *Ctx, key []byte, read bool) (ent *entry, h *hash, ok bool) {
	return getTyped[*hash](c, key, read, KindHash)
}

// hashForWrite is Redis's hashTypeLookupWriteOrCreate: the hash under key,
// created if missing; WRONGTYPE (ok=false) for another kind.
func hashForWrite(c *Ctx, key []byte) (*hash, bool) {
	_, h, ok := getHash(c, key, false)
	if !ok {
		return nil, false
	}
	if h == nil {
		h = newHash()
		c.Eng.putNew(newObjEntry(key, nil, &object{kind: KindHash, v: h}))
	}
	return h, true
}

// HSET key field value [field value ...] / HMSET (replies OK)
func hsetGeneric(c *Ctx, hmset bool) {
	if len(c.Args)%2 == 1 {
		c.W.WriteError(ErrWrongArgs(c.Cmd.Name))
		return
	}
	key := c.Args[1]
	h, ok := hashForWrite(c, key)
	if !ok {
		return
	}
	lim := c.Eng.limits()
	var created int64
	for i := 2; i < len(c.Args); i += 2 {
		if h.Set(string(c.Args[i]), string(c.Args[i+1]), lim) {
			created++
		}
	}
	if hmset {
		c.W.WriteStatus(statusOK)
	} else {
		c.W.WriteInt(created)
	}
	c.Eng.modified(string(key))
	c.Eng.notifyBytes(NotifyHash, "hset", key)
	c.Eng.dirty += int64(len(c.Args)-2) / 2 // every field set, new or not
}

// HSETNX key field value
func cmdHSetNX(c *Ctx) {
	key := c.Args[1]
	h, ok := hashForWrite(c, key)
	if !ok {
		return
	}
	if _, exists := h.Get(string(c.Args[2])); exists {
		c.W.WriteInt(0)
		return
	}
	h.Set(string(c.Args[2]), string(c.Args[3]), c.Eng.limits())
	c.W.WriteInt(1)
	c.Eng.modified(string(key))
	c.Eng.notifyBytes(NotifyHash, "hset", key)
	c.Eng.dirty++
}

// HGET key field
func cmdHGet(c *Ctx) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	writeHashField(c, h, c.Args[2])
}

func writeHashField(c *Ctx, h *hash, field []byte) {
	if h == nil {
		c.W.WriteNull()
		return
	}
	if v, ok := h.Get(string(field)); ok {
		c.W.WriteBulkString(v)
	} else {
		c.W.WriteNull()
	}
}

// HMGET key field [field ...]
func cmdHMGet(c *Ctx) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	c.W.WriteArray(len(c.Args) - 2)
	for _, f := range c.Args[2:] {
		writeHashField(c, h, f)
	}
}

// HDEL key field [field ...]
func cmdHDel(c *Ctx) {
	key := c.Args[1]
	ent, h, ok := getHash(c, key, false)
	if !ok {
		return
	}
	if h == nil {
		c.W.WriteInt(0)
		return
	}
	var deleted int64
	removed := false
	for _, f := range c.Args[2:] {
		if h.Del(string(f)) {
			deleted++
			if h.Len() == 0 {
				c.Eng.removeKey(string(key), ent)
				removed = true
				break
			}
		}
	}
	if deleted > 0 {
		c.Eng.modified(string(key))
		c.Eng.notifyBytes(NotifyHash, "hdel", key)
		if removed {
			c.Eng.notifyBytes(NotifyGeneric, "del", key)
		}
		c.Eng.dirty += deleted
	}
	c.W.WriteInt(deleted)
}

// HEXISTS key field
func cmdHExists(c *Ctx) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.W.WriteInt(0)
		return
	}
	if _, ok := h.Get(string(c.Args[2])); ok {
		c.W.WriteInt(1)
	} else {
		c.W.WriteInt(0)
	}
}

// HLEN key
func cmdHLen(c *Ctx) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(h.Len()))
}

// HSTRLEN key field
func cmdHStrlen(c *Ctx) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	if h == nil {
		c.W.WriteInt(0)
		return
	}
	v, _ := h.Get(string(c.Args[2]))
	c.W.WriteInt(int64(len(v)))
}

// HINCRBY key field increment
func cmdHIncrBy(c *Ctx) {
	incr, ok := parseInt(c.Args[3])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	key := c.Args[1]
	h, ok := hashForWrite(c, key)
	if !ok {
		return
	}
	field := string(c.Args[2])
	var cur int64
	if v, exists := h.Get(field); exists {
		n, ok := parseInt([]byte(v))
		if !ok {
			c.W.WriteError("ERR hash value is not an integer")
			return
		}
		cur = n
	}
	if (incr < 0 && cur < 0 && incr < minInt64-cur) || (incr > 0 && cur > 0 && incr > maxInt64-cur) {
		c.W.WriteError(ErrOverflow)
		return
	}
	cur += incr
	h.Set(field, strconv.FormatInt(cur, 10), c.Eng.limits())
	c.W.WriteInt(cur)
	c.Eng.modified(string(key))
	c.Eng.notifyBytes(NotifyHash, "hincrby", key)
	c.Eng.dirty++
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// HINCRBYFLOAT key field increment
//
// The arithmetic is Redis's: long double, printed with "%.17Lf" and
// trailing zeros removed (see longdouble.go).
func cmdHIncrByFloat(c *Ctx) {
	incr, ok := parseLongDouble(c.Args[3])
	if !ok {
		c.W.WriteError(ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.W.WriteError("ERR value is NaN or Infinity")
		return
	}
	key := c.Args[1]
	h, ok := hashForWrite(c, key)
	if !ok {
		return
	}
	field := string(c.Args[2])
	cur := new(big.Float)
	if v, exists := h.Get(field); exists {
		if cur, ok = parseLongDouble([]byte(v)); !ok {
			c.W.WriteError("ERR hash value is not a float")
			return
		}
	}
	sum := addLongDouble(cur, incr)
	if ldOverflows(sum) {
		c.W.WriteError(ErrIncrNaNOrInf)
		return
	}
	s := formatLongDoubleHuman(sum)
	h.Set(field, s, c.Eng.limits())
	c.W.WriteBulkString(s)
	c.Eng.modified(string(key))
	c.Eng.notifyBytes(NotifyHash, "hincrbyfloat", key)
	c.Eng.dirty++
}

// HGETALL key (a map), HKEYS key, HVALS key (arrays)
func hgetallGeneric(c *Ctx, keys, vals bool) {
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if keys && vals {
		c.W.WriteMap(n)
	} else {
		c.W.WriteArray(n)
	}
	if h == nil {
		return
	}
	h.Each(func(f, v string) {
		if keys {
			c.W.WriteBulkString(f)
		}
		if vals {
			c.W.WriteBulkString(v)
		}
	})
}

// writeWholeScan replies a key's SCAN done in one call: cursor 0 and
// every item.
func writeWholeScan(c *Ctx, items []string) { writeScan(c, 0, items) }

// writeScan replies a SCAN call: the next cursor and the items.
func writeScan(c *Ctx, next uint64, items []string) {
	c.W.WriteArray(2)
	c.W.WriteBulkString(strconv.FormatUint(next, 10))
	c.W.WriteArray(len(items))
	for _, s := range items {
		c.W.WriteBulkString(s)
	}
}

// scanArgs parses the MATCH and COUNT options of a key's SCAN
// (scanGenericCommand) from argument start: the MATCH pattern, nil for
// none or "*", and the COUNT, 10 by default; ok=false after replying the
// error.
func scanArgs(c *Ctx, start int) (pat []byte, count int64, ok bool) {
	count = 10
	for i := start; i < len(c.Args); i++ {
		rest := len(c.Args) - i - 1
		switch {
		case eqFold(c.Args[i], "count") && rest >= 1:
			n, ok := parseInt(c.Args[i+1])
			if !ok {
				c.W.WriteError(ErrNotInteger)
				return nil, 0, false
			}
			if n < 1 {
				c.W.WriteError(ErrSyntax)
				return nil, 0, false
			}
			count = n
			i++
		case eqFold(c.Args[i], "match") && rest >= 1:
			pat = c.Args[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
			i++
		default:
			c.W.WriteError(ErrSyntax)
			return nil, 0, false
		}
	}
	return pat, count, true
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
//
// As Redis 7.0's hscanCommand and scanGenericCommand: the cursor is parsed
// first, a missing key is an empty scan, then the options (TYPE is
// SCAN's only). A compact (listpack) hash comes whole, with cursor 0,
// whatever the cursor and COUNT, as Redis returns it; a hashtable is
// paged, COUNT fields a call (scansnap.go). MATCH filters on the field.
func cmdHScan(c *Ctx) {
	cur, ok := parseCursor(c.Args[2])
	if !ok {
		c.W.WriteError(ErrInvalidCursor)
		return
	}
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	if h == nil {
		writeWholeScan(c, nil)
		return
	}
	pat, count, ok := scanArgs(c, 3)
	if !ok {
		return
	}
	var out []string
	add := func(f, v string) {
		if pat == nil || Match(pat, []byte(f), false) {
			out = append(out, f, v)
		}
	}
	if h.m == nil {
		h.Each(add)
		writeWholeScan(c, out)
		return
	}
	sn := snapFor(cur, &h.snap, h.m, h.adds)
	next := sn.page(cur, count, func(f string) {
		if v, ok := h.m[f]; ok {
			add(f, v)
		}
	})
	if next == 0 {
		h.snap = nil
	}
	writeScan(c, next, out)
}

// randMaxCount bounds |count| for HRANDFIELD and ZRANDMEMBER: Redis 7.0
// builds any reply a negative count asks for (-9223372036854775807 runs
// it out of memory unless an output limit stops it); tumbler builds a
// reply whole before writing it, so it refuses counts past 2^24 elements.
const randMaxCount = 1 << 24

// parseRandCount parses the count of HRANDFIELD and ZRANDMEMBER
// (c.Args[2]) and the word that may follow it (WITHVALUES, WITHSCORES),
// as hrandfieldCommand and zrandmemberCommand do: a count within
// ±LONG_MAX, nothing but the word after it, and with the word a count
// within ±LONG_MAX/2.
func parseRandCount(c *Ctx, word string) (l int64, with, ok bool) {
	if l, ok = parseRangeLong(c, c.Args[2], -math.MaxInt64, math.MaxInt64, ""); !ok {
		return 0, false, false
	}
	if len(c.Args) > 4 || (len(c.Args) == 4 && !eqFold(c.Args[3], word)) {
		c.W.WriteError(ErrSyntax)
		return 0, false, false
	}
	with = len(c.Args) == 4
	if with && (l < -math.MaxInt64/2 || l > math.MaxInt64/2) {
		c.W.WriteError("ERR value is out of range")
		return 0, false, false
	}
	return l, with, true
}

// randCount splits a non-zero count of HRANDFIELD or ZRANDMEMBER, drawn
// from size items, into how many and whether distinct, refusing a count
// past randMaxCount that does not ask for all of them.
func randCount(c *Ctx, l, size int64) (count int64, uniq, ok bool) {
	count, uniq = l, true
	if l < 0 {
		count, uniq = -l, false
	}
	if count > randMaxCount && !(uniq && count >= size) {
		c.W.WriteError("ERR value is out of range")
		return 0, false, false
	}
	return count, uniq, true
}

// HRANDFIELD key [count [WITHVALUES]]
//
// As Redis 7.0's hrandfieldCommand: without a count, one random field (nil
// for a missing key); with one, a positive count gives distinct fields (the
// whole hash, in order, when count >= its size; from a compact hash, in
// its order), a negative one -count fields that may repeat, in random
// order. WITHVALUES adds each value (RESP3: [field, value] pairs).
func cmdHRandField(c *Ctx) {
	if len(c.Args) < 3 {
		_, h, ok := getHash(c, c.Args[1], true)
		if !ok {
			return
		}
		if h == nil {
			c.W.WriteNull()
			return
		}
		pairs := h.pairs()
		c.W.WriteBulkString(pairs[rand.IntN(len(pairs))].field)
		return
	}
	l, withValues, ok := parseRandCount(c, "withvalues")
	if !ok {
		return
	}
	_, h, ok := getHash(c, c.Args[1], true)
	if !ok {
		return
	}
	if h == nil || l == 0 {
		c.W.WriteArray(0)
		return
	}
	count, uniq, ok := randCount(c, l, int64(h.Len()))
	if !ok {
		return
	}
	pairs := h.pairs()
	var pick []hashPair
	switch {
	case !uniq || count == 1: // random, repeats allowed: written as drawn
		writeRandFieldHeader(c, int(count), withValues)
		for i := int64(0); i < count; i++ {
			writeRandField(c, pairs[rand.IntN(len(pairs))], withValues)
		}
		return
	case count >= int64(len(pairs)): // the whole hash, in its order
		pick = pairs
	case h.m == nil: // distinct, in the compact hash's order
		idx := rand.Perm(len(pairs))[:count]
		slices.Sort(idx)
		for _, i := range idx {
			pick = append(pick, pairs[i])
		}
	default: // distinct, in random order
		for _, i := range rand.Perm(len(pairs))[:count] {
			pick = append(pick, pairs[i])
		}
	}
	writeRandFieldHeader(c, len(pick), withValues)
	for _, p := range pick {
		writeRandField(c, p, withValues)
	}
}

// writeRandFieldHeader and writeRandField write HRANDFIELD's reply: n
// fields, or with values n pairs (flat in RESP2, [field, value] in RESP3).
func writeRandFieldHeader(c *Ctx, n int, withValues bool) {
	if withValues && c.W.Proto() == 2 {
		c.W.WriteArray(2 * n)
	} else {
		c.W.WriteArray(n)
	}
}

func writeRandField(c *Ctx, p hashPair, withValues bool) {
	if withValues && c.W.Proto() > 2 {
		c.W.WriteArray(2)
	}
	c.W.WriteBulkString(p.field)
	if withValues {
		c.W.WriteBulkString(p.value)
	}
}
