package engine

import (
	"math"
	"strconv"
)

// Sorted set commands (Redis 7.0's t_zset.c), the ones lock clients use
// (Redisson's fair lock and expirable semaphore keep their queues in
// sorted sets) and the rest of the everyday family: ZADD, ZINCRBY, ZREM,
// ZCARD, ZSCORE, ZMSCORE, ZCOUNT, ZLEXCOUNT, ZRANK, ZREVRANK, the ZRANGE
// family and ZRANGESTORE, ZREMRANGEBY*, ZPOPMIN, ZPOPMAX and ZSCAN. The
// set operations, ZRANDMEMBER, ZMPOP and the blocking pops are in
// cmd_zsetops.go.

func registerZset(e *Engine) {
	z := func(name string, arity int, flags Flag, fn func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Group: "sorted-set", Fn: fn}
	}
	w, r := FlagWrite, FlagReadonly
	e.Register(
		z("zadd", -4, w|FlagDenyOOM|FlagFast, func(c *Ctx) { zaddGeneric(c, false) }),
		z("zincrby", 4, w|FlagDenyOOM|FlagFast, func(c *Ctx) { zaddGeneric(c, true) }),
		z("zrem", -3, w|FlagFast, cmdZRem),
		z("zcard", 2, r|FlagFast, cmdZCard),
		z("zscore", 3, r|FlagFast, cmdZScore),
		z("zmscore", -3, r|FlagFast, cmdZMScore),
		z("zcount", 4, r|FlagFast, cmdZCount),
		z("zlexcount", 4, r|FlagFast, cmdZLexCount),
		z("zrank", -3, r|FlagFast, func(c *Ctx) { zrankGeneric(c, false) }),
		z("zrevrank", -3, r|FlagFast, func(c *Ctx) { zrankGeneric(c, true) }),
		z("zrange", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeAuto, zdirAuto) }),
		z("zrevrange", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeRank, zdirReverse) }),
		z("zrangebyscore", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeScore, zdirForward) }),
		z("zrevrangebyscore", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeScore, zdirReverse) }),
		z("zrangebylex", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeLex, zdirForward) }),
		z("zrevrangebylex", -4, r, func(c *Ctx) { zrangeCommand(c, 1, zrangeLex, zdirReverse) }),
		&Command{Name: "zrangestore", Arity: -5, Flags: w | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "sorted-set",
			Fn: func(c *Ctx) { zrangeCommand(c, 2, zrangeAuto, zdirAuto) }},
		z("zremrangebyscore", 4, w, func(c *Ctx) { zremrangeGeneric(c, zrangeScore) }),
		z("zremrangebyrank", 4, w, func(c *Ctx) { zremrangeGeneric(c, zrangeRank) }),
		z("zremrangebylex", 4, w, func(c *Ctx) { zremrangeGeneric(c, zrangeLex) }),
		z("zpopmin", -2, w|FlagFast, func(c *Ctx) { zpopGeneric(c, false) }),
		z("zpopmax", -2, w|FlagFast, func(c *Ctx) { zpopGeneric(c, true) }),
		z("zscan", -3, r, cmdZScan),
	)
}

// getZset finds the sorted set under key: (nil, nil, true) when missing,
// ok=false after replying WRONGTYPE for another kind.
func getZset(c *Ctx, key []byte, read bool) (ent *entry, z *zset, ok bool) {
	return getTyped[*zset](c, key, read, KindZSet)
}

// createZset adds z under key (missing) and wakes clients waiting for a
// sorted set there (they are served when the command ends). The caller
// calls modified. Requires e.mu.
func (e *Engine) createZset(key []byte, z *zset) *entry {
	ent := newObjEntry(key, nil, &object{kind: KindZSet, v: z})
	e.putNew(ent)
	e.signalReady(ent.key())
	return ent
}

// zsetChanged ends a command's changes to the sorted set under key: event
// is notified, an empty set is deleted ("del"), the modification hooks
// run.
func (e *Engine) zsetChanged(key []byte, ent *entry, z *zset, event string) {
	e.collectionChanged(key, ent, z.Len(), NotifyZset, event)
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
// ZINCRBY key increment member
//
// zaddGenericCommand: the options, then every score is parsed before the
// key is looked up; XX on a missing key creates nothing; a NaN sum is an
// error. ZADD replies the members added (with CH, added or changed);
// INCR and ZINCRBY the new score, or nil when NX/XX/GT/LT stopped it.
func zaddGeneric(c *Ctx, incrCmd bool) {
	var nx, xx, gt, lt, ch, incr bool
	incr = incrCmd
	i := 2
	for ; !incrCmd && i < len(c.Args); i++ {
		switch lowerC(c.Args[i]) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		case "ch":
			ch = true
		case "incr":
			incr = true
		default:
			goto scores
		}
	}
scores:
	elements := len(c.Args) - i
	if elements%2 != 0 || elements == 0 {
		c.W.WriteError(ErrSyntax)
		return
	}
	elements /= 2
	if nx && xx {
		c.W.WriteError("ERR XX and NX options at the same time are not compatible")
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.W.WriteError("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && elements > 1 {
		c.W.WriteError("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, elements)
	for j := range scores {
		s, ok := parseScore(c.Args[i+2*j])
		if !ok {
			c.W.WriteError(ErrNotFloat)
			return
		}
		scores[j] = s
	}
	key := c.Args[1]
	ent, z, ok := getZset(c, key, false)
	if !ok {
		return
	}
	var added, updated, processed int64
	var score float64
	lim := c.Eng.limits()
	if z == nil && !xx {
		z = newZset(lim.ZsetMaxListpackEntries == 0 || int64(len(c.Args[i+1])) > lim.ZsetMaxListpackValue)
		ent = c.Eng.createZset(key, z)
	}
	if z != nil {
		for j := 0; j < elements; j++ {
			member := string(c.Args[i+2*j+1])
			score = scores[j]
			cur, exists := z.Score(member)
			switch {
			case exists && nx:
				continue
			case exists:
				if incr {
					score += cur
					if math.IsNaN(score) {
						c.W.WriteError("ERR resulting score is not a number (NaN)")
						c.Eng.zaddDone(key, ent, z, incr, added+updated)
						return
					}
				}
				if (lt && score >= cur) || (gt && score <= cur) {
					continue
				}
				if score != cur {
					z.Set(member, score, lim)
					updated++
				}
			case xx:
				continue
			default:
				z.Set(member, score, lim)
				added++
			}
			processed++
		}
	}
	if incr {
		if processed > 0 {
			c.W.WriteDouble(score)
		} else {
			c.W.WriteNull()
		}
	} else if ch {
		c.W.WriteInt(added + updated)
	} else {
		c.W.WriteInt(added)
	}
	if z != nil {
		c.Eng.zaddDone(key, ent, z, incr, added+updated)
	}
	c.Eng.dirty += added + updated // (not after a NaN: zaddGenericCommand's goto cleanup)
}

// zaddDone ends ZADD/ZINCRBY: the event when something changed.
func (e *Engine) zaddDone(key []byte, ent *entry, z *zset, incr bool, changed int64) {
	if changed == 0 {
		return
	}
	event := "zadd"
	if incr {
		event = "zincr"
	}
	e.zsetChanged(key, ent, z, event)
}

// ZREM key member [member ...]
func cmdZRem(c *Ctx) {
	key := c.Args[1]
	ent, z, ok := getZset(c, key, false)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteInt(0)
		return
	}
	var deleted int64
	for _, m := range c.Args[2:] {
		if z.Del(string(m)) {
			deleted++
			if z.Len() == 0 {
				break
			}
		}
	}
	if deleted > 0 {
		c.Eng.zsetChanged(key, ent, z, "zrem")
		c.Eng.dirty += deleted
	}
	c.W.WriteInt(deleted)
}

// ZCARD key
func cmdZCard(c *Ctx) {
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(z.Len()))
}

// ZSCORE key member
func cmdZScore(c *Ctx) {
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteNull()
		return
	}
	if s, ok := z.Score(string(c.Args[2])); ok {
		c.W.WriteDouble(s)
	} else {
		c.W.WriteNull()
	}
}

// ZMSCORE key member [member ...]
func cmdZMScore(c *Ctx) {
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	c.W.WriteArray(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		if z == nil {
			c.W.WriteNull()
		} else if s, ok := z.Score(string(m)); ok {
			c.W.WriteDouble(s)
		} else {
			c.W.WriteNull()
		}
	}
}

// ZCOUNT key min max
func cmdZCount(c *Ctx) {
	r, ok := parseScoreRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.WriteError(ErrMinMaxNotFloat)
		return
	}
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteInt(0)
		return
	}
	first := z.firstInRange(r)
	if first >= z.Len() {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(z.lastInRange(r) - first + 1))
}

// ZLEXCOUNT key min max
func cmdZLexCount(c *Ctx) {
	r, ok := parseLexRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.WriteError(ErrLexRange)
		return
	}
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteInt(0)
		return
	}
	n := 0
	for i := z.firstInLex(r); i < z.Len() && r.lteMax(z.At(i).member); i++ {
		n++
	}
	c.W.WriteInt(int64(n))
}

// ZRANK key member [WITHSCORE] / ZREVRANK key member [WITHSCORE]
// (WITHSCORE is Redis 7.2's, as tumbler reports 7.2: the rank and the
// score, or a null array)
func zrankGeneric(c *Ctx, reverse bool) {
	withScore := false
	switch {
	case len(c.Args) > 4:
		name := "zrank"
		if reverse {
			name = "zrevrank"
		}
		c.W.WriteError(ErrWrongArgs(name))
		return
	case len(c.Args) == 4:
		if !EqFold(c.Args[3], "withscore") {
			c.W.WriteError(ErrSyntax)
			return
		}
		withScore = true
	}
	none := c.W.WriteNull
	if withScore {
		none = c.W.WriteNullArray
	}
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		none()
		return
	}
	member := string(c.Args[2])
	rank, ok := z.Rank(member)
	if !ok {
		none()
		return
	}
	if reverse {
		rank = z.Len() - 1 - rank
	}
	if !withScore {
		c.W.WriteInt(int64(rank))
		return
	}
	score, _ := z.Score(member)
	c.W.WriteArray(2)
	c.W.WriteInt(int64(rank))
	c.W.WriteDouble(score)
}

// Error texts of the range commands.
const (
	ErrMinMaxNotFloat = "ERR min or max is not a float"
	ErrLexRange       = "ERR min or max not valid string range item"
)

type zrangeType int

const (
	zrangeAuto zrangeType = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

type zdirection int

const (
	zdirAuto zdirection = iota
	zdirForward
	zdirReverse
)

// zrangeCommand is zrangeGenericCommand: ZRANGE with its options, the
// fixed forms ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX (the source
// key at argStart 1), and ZRANGESTORE dst src ... (argStart 2), which
// takes every ZRANGE option but WITHSCORES and stores the range.
func zrangeCommand(c *Ctx, argStart int, rt zrangeType, dir zdirection) {
	store := argStart == 2
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := argStart + 3; j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		switch opt := lowerC(c.Args[j]); {
		case !store && opt == "withscores":
			withScores = true
		case opt == "limit" && left >= 2:
			var ok bool
			if offset, ok = parseLong(c, c.Args[j+1]); !ok {
				return
			}
			if limit, ok = parseLong(c, c.Args[j+2]); !ok {
				return
			}
			j += 2
		case dir == zdirAuto && opt == "rev":
			dir = zdirReverse
		case rt == zrangeAuto && opt == "bylex":
			rt = zrangeLex
		case rt == zrangeAuto && opt == "byscore":
			rt = zrangeScore
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	if dir == zdirAuto {
		dir = zdirForward
	}
	if rt == zrangeAuto {
		rt = zrangeRank
	}
	reverse := dir == zdirReverse
	if limit != -1 && rt == zrangeRank {
		c.W.WriteError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	if withScores && rt == zrangeLex {
		c.W.WriteError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	minArg, maxArg := c.Args[argStart+1], c.Args[argStart+2]
	if reverse && rt != zrangeRank {
		minArg, maxArg = maxArg, minArg // the range is given as max, min
	}
	var start, end int64
	var sr scoreRange
	var lr lexRange
	var ok bool
	switch rt {
	case zrangeRank:
		if start, ok = parseLong(c, minArg); !ok {
			return
		}
		if end, ok = parseLong(c, maxArg); !ok {
			return
		}
	case zrangeScore:
		if sr, ok = parseScoreRange(minArg, maxArg); !ok {
			c.W.WriteError(ErrMinMaxNotFloat)
			return
		}
	case zrangeLex:
		if lr, ok = parseLexRange(minArg, maxArg); !ok {
			c.W.WriteError(ErrLexRange)
			return
		}
	}
	_, z, ok := getZset(c, c.Args[argStart], true)
	if !ok {
		return
	}
	if z == nil {
		if store {
			c.Eng.zsetStore(c, c.Args[1], nil, false, "zrangestore")
		} else {
			c.W.WriteArray(0)
		}
		return
	}
	var ranks []int // the items in the range, by rank, in reply order
	switch rt {
	case zrangeRank:
		s, e, empty := clampRange(start, end, int64(z.Len()))
		if !empty {
			for i := s; i <= e; i++ {
				if reverse {
					ranks = append(ranks, z.Len()-1-i)
				} else {
					ranks = append(ranks, i)
				}
			}
		}
	case zrangeScore:
		if offset > 0 && offset >= int64(z.Len()) {
			break
		}
		if reverse {
			ranks = z.walk(z.lastInRange(sr), -1, offset, limit, func(it zitem) bool { return sr.gteMin(it.score) })
		} else {
			ranks = z.walk(z.firstInRange(sr), 1, offset, limit, func(it zitem) bool { return sr.lteMax(it.score) })
		}
	case zrangeLex:
		if offset > 0 && offset >= int64(z.Len()) {
			break
		}
		if reverse {
			ranks = z.walk(z.lastInLex(lr), -1, offset, limit, func(it zitem) bool { return lr.gteMin(it.member) })
		} else {
			ranks = z.walk(z.firstInLex(lr), 1, offset, limit, func(it zitem) bool { return lr.lteMax(it.member) })
		}
	}
	items := make([]zitem, len(ranks))
	for i, r := range ranks {
		items[i] = z.At(r)
	}
	if store {
		// zrangeResultBeginStore: a skip list from the start for a rank
		// range known to pass zset-max-listpack-entries members, else
		// the compact encoding, converted as members are added
		big := rt == zrangeRank && int64(len(items)) > c.Eng.limits().ZsetMaxListpackEntries
		c.Eng.zsetStore(c, c.Args[1], items, big, "zrangestore")
		return
	}
	writeZitems(c, items, withScores)
}

// writeZitems replies members, with their scores if withScores: one flat
// array in RESP2, an array of [member, score] pairs in RESP3.
func writeZitems(c *Ctx, items []zitem, withScores bool) {
	nested := withScores && c.W.Proto() > 2
	if withScores && !nested {
		c.W.WriteArray(2 * len(items))
	} else {
		c.W.WriteArray(len(items))
	}
	for _, it := range items {
		if nested {
			c.W.WriteArray(2)
		}
		c.W.WriteBulkString(it.member)
		if withScores {
			c.W.WriteDouble(it.score)
		}
	}
}

// zsetStore ends ZRANGESTORE and the STORE set operations (setKey): a
// sorted set of items, added in order to a set of the skip list encoding
// when big (else the compact one, converted as it grows), replaces dst,
// which loses its TTL; the reply is its size, then event is notified.
// With no items dst is deleted ("del") after the reply of 0.
func (e *Engine) zsetStore(c *Ctx, dst []byte, items []zitem, big bool, event string) {
	old := e.lookup(dst, c.Now)
	if len(items) == 0 {
		c.W.WriteInt(0)
		if old != nil {
			e.removeKey(old.key(), old)
			e.modified(old.key())
			e.notifyBytes(NotifyGeneric, "del", dst)
			e.dirty++
		}
		return
	}
	z := newZset(big)
	lim := e.limits()
	for _, it := range items {
		z.Set(it.member, it.score, lim)
	}
	if old != nil {
		nu := newObjEntry(dst, nil, &object{kind: KindZSet, v: z})
		e.replaceEntry(old, nu, 0)
	} else {
		e.createZset(dst, z)
	}
	e.modified(string(dst))
	c.W.WriteInt(int64(z.Len()))
	e.notifyBytes(NotifyZset, event, dst)
	e.dirty++
}

// walk returns the ranks from start (an index in range, or out of the
// set for none) stepping by step, after skipping offset of them (a
// negative offset skips them all, as Redis's "while (offset--)" does),
// while in holds, at most limit of them (negative: no limit).
func (z *zset) walk(start, step int, offset, limit int64, in func(zitem) bool) []int {
	i := start
	for ; i >= 0 && i < z.Len() && offset != 0; offset-- {
		i += step
	}
	var out []int
	for ; i >= 0 && i < z.Len() && limit != 0; limit-- {
		if !in(z.At(i)) {
			break
		}
		out = append(out, i)
		i += step
	}
	return out
}

// ZREMRANGEBYSCORE key min max / ZREMRANGEBYRANK key start stop /
// ZREMRANGEBYLEX key min max
func zremrangeGeneric(c *Ctx, rt zrangeType) {
	var start, end int64
	var sr scoreRange
	var lr lexRange
	var ok bool
	switch rt {
	case zrangeRank:
		if start, ok = parseLong(c, c.Args[2]); !ok {
			return
		}
		if end, ok = parseLong(c, c.Args[3]); !ok {
			return
		}
	case zrangeScore:
		if sr, ok = parseScoreRange(c.Args[2], c.Args[3]); !ok {
			c.W.WriteError(ErrMinMaxNotFloat)
			return
		}
	case zrangeLex:
		if lr, ok = parseLexRange(c.Args[2], c.Args[3]); !ok {
			c.W.WriteError(ErrLexRange)
			return
		}
	}
	key := c.Args[1]
	ent, z, ok := getZset(c, key, false)
	if !ok {
		return
	}
	if z == nil {
		c.W.WriteInt(0)
		return
	}
	var victims []zitem
	switch rt {
	case zrangeRank:
		if s, e, empty := clampRange(start, end, int64(z.Len())); !empty {
			for i := s; i <= e; i++ {
				victims = append(victims, z.At(i))
			}
		}
	case zrangeScore:
		for i := z.firstInRange(sr); i < z.Len() && sr.lteMax(z.At(i).score); i++ {
			victims = append(victims, z.At(i))
		}
	case zrangeLex:
		for i := z.firstInLex(lr); i < z.Len() && lr.lteMax(z.At(i).member); i++ {
			victims = append(victims, z.At(i))
		}
	}
	for _, it := range victims {
		z.Del(it.member)
	}
	if len(victims) > 0 {
		event := map[zrangeType]string{zrangeRank: "zremrangebyrank", zrangeScore: "zremrangebyscore", zrangeLex: "zremrangebylex"}[rt]
		c.Eng.zsetChanged(key, ent, z, event)
	}
	c.Eng.dirty += int64(len(victims))
	c.W.WriteInt(int64(len(victims)))
}

// ZPOPMIN key [count] / ZPOPMAX key [count]
//
// genericZpopCommand: a flat array of member, score pairs; in RESP3 with
// a count, an array of [member, score] pairs.
func zpopGeneric(c *Ctx, max bool) {
	if len(c.Args) > 3 {
		c.W.WriteError(ErrSyntax)
		return
	}
	count := int64(-1)
	if len(c.Args) == 3 {
		n, ok := parsePositive(c, c.Args[2], "")
		if !ok {
			return
		}
		count = n
	}
	nested := c.W.Proto() > 2 && count != -1
	key := c.Args[1]
	ent, z, ok := getZset(c, key, false)
	if !ok {
		return
	}
	if z == nil || count == 0 {
		c.W.WriteArray(0)
		return
	}
	zpopReply(c, key, ent, z, max, count, nested, false)
}

// zpopReply is the popping half of genericZpopCommand: up to count items
// (-1: one) leave z, from its highest scores when max, and are replied:
// a flat array of member, score pairs, or (nested) an array of [member,
// score] pairs; with emitKey the key comes first (flat: BZPOPMIN's
// [key, member, score]; nested: ZMPOP's [key, [[member, score] ...]]).
// The event follows the reply's header, as in Redis; an emptied set is
// deleted.
func zpopReply(c *Ctx, key []byte, ent *entry, z *zset, max bool, count int64, nested, emitKey bool) {
	if count == -1 {
		count = 1
	}
	n := min(count, int64(z.Len()))
	switch {
	case !nested && !emitKey:
		c.W.WriteArray(int(n) * 2)
	case nested && !emitKey:
		c.W.WriteArray(int(n))
	case !nested && emitKey:
		c.W.WriteArray(int(n)*2 + 1)
		c.W.WriteBulk(key)
	default:
		c.W.WriteArray(2)
		c.W.WriteBulk(key)
		c.W.WriteArray(int(n))
	}
	event := "zpopmin"
	if max {
		event = "zpopmax"
	}
	c.Eng.notifyBytes(NotifyZset, event, key)
	c.Eng.dirty += n // (served to a blocked client too: genericZpopCommand)
	for ; n > 0; n-- {
		i := 0
		if max {
			i = z.Len() - 1
		}
		it := z.At(i)
		z.Del(it.member)
		if nested {
			c.W.WriteArray(2)
		}
		c.W.WriteBulkString(it.member)
		c.W.WriteDouble(it.score)
	}
	if z.Len() == 0 {
		c.Eng.removeKey(string(key), ent)
		c.Eng.notifyBytes(NotifyGeneric, "del", key)
	}
	c.Eng.modified(string(key))
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]
//
// A compact sorted set comes whole in one reply, cursor 0, as Redis
// replies one; a skip list is paged, COUNT members a call (scansnap.go).
// Members come with their scores as d2string writes them.
func cmdZScan(c *Ctx) {
	cur, ok := parseCursor(c.Args[2])
	if !ok {
		c.W.WriteError(ErrInvalidCursor)
		return
	}
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil {
		writeWholeScan(c, nil)
		return
	}
	pat, count, ok := scanArgs(c, 3)
	if !ok {
		return
	}
	var out []string
	add := func(m string, score float64) {
		if pat == nil || Match(pat, []byte(m), false) {
			out = append(out, m, z.scoreText(score))
		}
	}
	if !z.big {
		for i := 0; i < z.Len(); i++ {
			it := z.At(i)
			add(it.member, it.score)
		}
		writeWholeScan(c, out)
		return
	}
	sn := snapFor(cur, &z.snap, z.m, z.adds)
	next := sn.page(cur, count, func(m string) {
		if score, ok := z.m[m]; ok {
			add(m, score)
		}
	})
	if next == 0 {
		z.snap = nil
	}
	writeScan(c, next, out)
}

// scoreText is a score as ZSCAN reads it from the set: the compact
// encoding stores a whole score within ±2^62 as an integer (zzlInsertAt's
// double2ll), the skip list keeps the double (d2string).
func (z *zset) scoreText(f float64) string {
	if !z.big && f == math.Trunc(f) && math.Abs(f) <= 1<<62 {
		return strconv.FormatInt(int64(f), 10)
	}
	return d2string(f)
}

// d2string is Redis's d2string: inf, -inf, and %.17g (which writes an
// integral score as an integer, and -0 as -0). It is also the text of a
// double reply in RESP2 (addReplyDouble), as scripts read it
// (FormatDouble).
func d2string(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// FormatDouble is the text Redis 7.0 gives a double: d2string.
func FormatDouble(f float64) string { return d2string(f) }
