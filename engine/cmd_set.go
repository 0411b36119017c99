package engine

import (
	"math"
)

// Set commands (Redis 7.0's t_set.c): SADD, SREM, SMOVE, SISMEMBER,
// SMISMEMBER, SCARD, SMEMBERS, SPOP, SRANDMEMBER, SINTER, SINTERCARD,
// SUNION, SDIFF and their STORE forms, SSCAN.

func registerSet(e *Engine) {
	s := func(name string, arity int, flags Flag, first, last int, fn func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: 1, Group: "set", Fn: fn}
	}
	w, r := FlagWrite, FlagReadonly
	e.Register(
		s("sadd", -3, w|FlagDenyOOM|FlagFast, 1, 1, cmdSAdd),
		s("srem", -3, w|FlagFast, 1, 1, cmdSRem),
		s("smove", 4, w|FlagFast, 1, 2, cmdSMove),
		s("sismember", 3, r|FlagFast, 1, 1, cmdSIsMember),
		s("smismember", -3, r|FlagFast, 1, 1, cmdSMIsMember),
		s("scard", 2, r|FlagFast, 1, 1, cmdSCard),
		s("smembers", 2, r, 1, 1, func(c *Ctx) { setOpGeneric(c, c.Args[1:], nil, setOpInter) }),
		s("spop", -2, w|FlagFast, 1, 1, cmdSPop),
		s("srandmember", -2, r, 1, 1, cmdSRandMember),
		s("sinter", -2, r, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[1:], nil, setOpInter) }),
		s("sunion", -2, r, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[1:], nil, setOpUnion) }),
		s("sdiff", -2, r, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[1:], nil, setOpDiff) }),
		s("sinterstore", -3, w|FlagDenyOOM, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[2:], c.Args[1], setOpInter) }),
		s("sunionstore", -3, w|FlagDenyOOM, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[2:], c.Args[1], setOpUnion) }),
		s("sdiffstore", -3, w|FlagDenyOOM, 1, -1, func(c *Ctx) { setOpGeneric(c, c.Args[2:], c.Args[1], setOpDiff) }),
		&Command{Name: "sintercard", Arity: -3, Flags: r, Keys: numkeysKeys(0, 1), Group: "set", Fn: cmdSInterCard},
		s("sscan", -3, r, 1, 1, cmdSScan),
	)
}

// getSet finds the set under key: (nil, nil, true) when missing,
// ok=false after replying WRONGTYPE for another kind.
func getSet(c *Ctx, key []byte, read bool) (ent *entry, s *set, ok bool) {
	return getTyped[*set](c, key, read, KindSet)
}

// createSet adds an empty set under key, its encoding chosen by first.
func (e *Engine) createSet(key []byte, first string) (*entry, *set) {
	s := newSet(first)
	ent := newObjEntry(key, nil, &object{kind: KindSet, v: s})
	e.putNew(ent)
	return ent, s
}

// SADD key member [member ...]
func cmdSAdd(c *Ctx) {
	key := c.Args[1]
	_, s, ok := getSet(c, key, false)
	if !ok {
		return
	}
	if s == nil {
		_, s = c.Eng.createSet(key, string(c.Args[2]))
	}
	lim := c.Eng.limits()
	var added int64
	for _, m := range c.Args[2:] {
		if s.Add(string(m), lim) {
			added++
		}
	}
	if added > 0 {
		c.Eng.modified(string(key))
		c.Eng.notifyBytes(NotifySet, "sadd", key)
	}
	c.Eng.dirty += added
	c.W.WriteInt(added)
}

// SREM key member [member ...]
func cmdSRem(c *Ctx) {
	key := c.Args[1]
	ent, s, ok := getSet(c, key, false)
	if !ok {
		return
	}
	if s == nil {
		c.W.WriteInt(0)
		return
	}
	var deleted int64
	for _, m := range c.Args[2:] {
		if s.Del(string(m)) {
			deleted++
			if s.Len() == 0 {
				break
			}
		}
	}
	if deleted > 0 {
		c.Eng.setChanged(key, ent, s, "srem")
		c.Eng.dirty += deleted
	}
	c.W.WriteInt(deleted)
}

// setChanged ends a command's removals from the set under key: event is
// notified, an empty set is deleted ("del"), the modification hooks run.
func (e *Engine) setChanged(key []byte, ent *entry, s *set, event string) {
	e.collectionChanged(key, ent, s.Len(), NotifySet, event)
}

// SMOVE source destination member
func cmdSMove(c *Ctx) {
	src, dst, m := c.Args[1], c.Args[2], string(c.Args[3])
	sent := c.Eng.lookup(src, c.Now)
	dent := c.Eng.lookup(dst, c.Now)
	if sent == nil {
		c.W.WriteInt(0)
		return
	}
	if sent.kind() != KindSet || (dent != nil && dent.kind() != KindSet) {
		c.W.WriteError(ErrWrongType)
		return
	}
	ss := sent.obj().v.(*set)
	if sent == dent {
		if ss.Has(m) {
			c.W.WriteInt(1)
		} else {
			c.W.WriteInt(0)
		}
		return
	}
	if !ss.Del(m) {
		c.W.WriteInt(0)
		return
	}
	c.Eng.setChanged(src, sent, ss, "srem")
	c.Eng.dirty++
	var ds *set
	if dent == nil {
		_, ds = c.Eng.createSet(dst, m)
	} else {
		ds = dent.obj().v.(*set)
	}
	if ds.Add(m, c.Eng.limits()) {
		c.Eng.dirty++ // a second key changed
		c.Eng.modified(string(dst))
		c.Eng.notifyBytes(NotifySet, "sadd", dst)
	}
	c.W.WriteInt(1)
}

// SISMEMBER key member
func cmdSIsMember(c *Ctx) {
	_, s, ok := getSet(c, c.Args[1], true)
	if !ok {
		return
	}
	if s != nil && s.Has(string(c.Args[2])) {
		c.W.WriteInt(1)
	} else {
		c.W.WriteInt(0)
	}
}

// SMISMEMBER key member [member ...]
func cmdSMIsMember(c *Ctx) {
	_, s, ok := getSet(c, c.Args[1], true)
	if !ok {
		return
	}
	c.W.WriteArray(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		if s != nil && s.Has(string(m)) {
			c.W.WriteInt(1)
		} else {
			c.W.WriteInt(0)
		}
	}
}

// SCARD key
func cmdSCard(c *Ctx) {
	_, s, ok := getSet(c, c.Args[1], true)
	if !ok {
		return
	}
	if s == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(s.Len()))
}

// spopMoveStrategyMul is Redis's SPOP_MOVE_STRATEGY_MUL: SPOP with a
// count builds a new set of the members that stay when they are fewer
// than a fifth of those it pops.
const spopMoveStrategyMul = 5

// SPOP key [count]
func cmdSPop(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(ErrSyntax)
		return
	}
	key := c.Args[1]
	if len(c.Args) == 2 {
		ent, s, ok := getSet(c, key, false)
		if !ok {
			return
		}
		if s == nil {
			c.W.WriteNull()
			return
		}
		m := s.randomMember()
		s.Del(m)
		c.Eng.notifyBytes(NotifySet, "spop", key)
		c.W.WriteBulkString(m) // before the del event, as Redis
		c.Eng.setEmptied(key, ent, s)
		c.Eng.dirty++
		return
	}
	count, ok := parsePositive(c, c.Args[2], "")
	if !ok {
		return
	}
	ent, s, ok := getSet(c, key, false)
	if !ok {
		return
	}
	if s == nil || count == 0 {
		c.W.WriteSet(0)
		return
	}
	c.Eng.notifyBytes(NotifySet, "spop", key) // before the reply, as Redis
	c.Eng.dirty += min(count, int64(s.Len()))
	var popped []string
	switch remaining := int64(s.Len()) - count; {
	case remaining <= 0:
		// the whole set, as sunionDiffGenericCommand replies it, after its
		// read lookup counts a keyspace hit
		popped = rebuilt(s.list, c.Eng.limits())
		c.Eng.Stats.KeyspaceHits.Add(1)
		for _, m := range popped {
			s.Del(m)
		}
	case remaining*spopMoveStrategyMul > count:
		for ; count > 0; count-- {
			m := s.randomMember()
			s.Del(m)
			popped = append(popped, m)
		}
	default:
		// Most of the set goes: as Redis, draw the members that stay
		// into a new set (created for the first of them, so an intset
		// again when it is an integer) and reply what is left of the old
		// one, in its order.
		var kept *set
		lim := c.Eng.limits()
		for ; remaining > 0; remaining-- {
			m := s.randomMember()
			if kept == nil {
				kept = newSet(m)
			}
			kept.Add(m, lim)
			s.Del(m)
		}
		popped = s.Members()
		*s = *kept
	}
	c.W.WriteSet(len(popped))
	for _, m := range popped {
		c.W.WriteBulkString(m)
	}
	c.Eng.setEmptied(key, ent, s)
}

// setEmptied ends a pop: an empty set is deleted ("del", after the
// reply), and the modification hooks run.
func (e *Engine) setEmptied(key []byte, ent *entry, s *set) {
	if s.Len() == 0 {
		e.removeKey(string(key), ent)
		e.notifyBytes(NotifyGeneric, "del", key)
	}
	e.modified(string(key))
}

// rebuilt returns members in the order of a set built from them, as
// Redis replies a result it builds (an intset, so sorted, when every
// member is an integer and there are at most set-max-intset-entries).
func rebuilt(members []string, lim *EncodingLimits) []string {
	if len(members) == 0 {
		return nil
	}
	return setOf(members, lim).Members()
}

// setOf builds a set of members (at least one), its encoding chosen as
// SADD would choose it.
func setOf(members []string, lim *EncodingLimits) *set {
	s := newSet(members[0])
	for _, m := range members {
		s.Add(m, lim)
	}
	return s
}

// SRANDMEMBER key [count]
func cmdSRandMember(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(ErrSyntax)
		return
	}
	if len(c.Args) == 2 {
		_, s, ok := getSet(c, c.Args[1], true)
		if !ok {
			return
		}
		if s == nil {
			c.W.WriteNull()
			return
		}
		c.W.WriteBulkString(s.randomMember())
		return
	}
	n, ok := parseRangeLong(c, c.Args[2], -math.MaxInt64, math.MaxInt64, "")
	if !ok {
		return
	}
	_, s, ok := getSet(c, c.Args[1], true)
	if !ok {
		return
	}
	if s == nil || n == 0 {
		c.W.WriteArray(0)
		return
	}
	if n < 0 { // repeats allowed
		count := -n
		if count > 1<<24 {
			c.W.WriteError("ERR value is out of range")
			return
		}
		c.W.WriteArray(int(count))
		for ; count > 0; count-- {
			c.W.WriteBulkString(s.randomMember())
		}
		return
	}
	if n >= int64(s.Len()) {
		members := s.Members()
		c.W.WriteArray(len(members))
		for _, m := range members {
			c.W.WriteBulkString(m)
		}
		return
	}
	picked := make(map[string]struct{}, n)
	for int64(len(picked)) < n {
		picked[s.randomMember()] = struct{}{}
	}
	c.W.WriteArray(len(picked))
	for m := range picked {
		c.W.WriteBulkString(m)
	}
}

type setOp int

const (
	setOpInter setOp = iota
	setOpUnion
	setOpDiff
)

// setOpGeneric is SINTER/SUNION/SDIFF (and SMEMBERS, an intersection of
// one set), replying a set, or with dst their STORE forms, storing the
// result (an empty one deletes dst) and replying its size. Every key is
// type-checked; a missing key is an empty set.
func setOpGeneric(c *Ctx, keys [][]byte, dst []byte, op setOp) {
	lim := c.Eng.limits()
	sets := make([]*set, len(keys))
	empty := false
	for i, k := range keys {
		ent := c.Eng.lookupRead(k, c.Now)
		if ent == nil {
			empty = true
			continue
		}
		if ent.kind() != KindSet {
			c.W.WriteError(ErrWrongType)
			return
		}
		sets[i] = ent.obj().v.(*set)
	}
	var members []string
	switch {
	case op == setOpInter && empty:
	case op == setOpInter:
		smallest := sets[0]
		for _, s := range sets[1:] {
			if s.Len() < smallest.Len() {
				smallest = s
			}
		}
	next:
		for _, m := range smallest.Members() {
			for _, s := range sets {
				if s != smallest && !s.Has(m) {
					continue next
				}
			}
			members = append(members, m)
		}
	case op == setOpUnion:
		var acc *set
		for _, s := range sets {
			if s == nil {
				continue
			}
			for _, m := range s.list {
				if acc == nil {
					acc = newSet(m)
				}
				acc.Add(m, lim)
			}
		}
		if acc != nil {
			members = acc.Members()
		}
	case op == setOpDiff:
		if sets[0] != nil {
			for _, m := range sets[0].list {
				in := false
				for _, s := range sets[1:] {
					if s != nil && s.Has(m) {
						in = true
						break
					}
				}
				if !in {
					members = append(members, m)
				}
			}
			members = rebuilt(members, lim) // built as a set: an intset is sorted
		}
	}
	if dst == nil {
		c.W.WriteSet(len(members))
		for _, m := range members {
			c.W.WriteBulkString(m)
		}
		return
	}
	// setKey: an existing destination is overwritten (no "new" event,
	// no TTL kept); an empty result deletes it instead.
	e := c.Eng
	old := e.lookup(dst, c.Now)
	if len(members) == 0 {
		// SINTERSTORE with a missing key deletes the destination before
		// replying; an empty result of the others replies first (Redis's
		// two paths)
		early := op == setOpInter && empty
		if !early {
			c.W.WriteInt(0)
		}
		if old != nil {
			e.removeKey(old.key(), old)
			e.modified(old.key())
			e.notifyBytes(NotifyGeneric, "del", dst)
			e.dirty++
		}
		if early {
			c.W.WriteInt(0)
		}
		return
	}
	s := setOf(members, lim)
	nu := newObjEntry(dst, nil, &object{kind: KindSet, v: s})
	if old != nil {
		e.replaceEntry(old, nu, 0)
	} else {
		e.putNew(nu)
	}
	e.modified(nu.key())
	c.W.WriteInt(int64(len(members)))
	e.notifyBytes(NotifySet, []string{"sinterstore", "sunionstore", "sdiffstore"}[op], dst)
	e.dirty++
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdSInterCard(c *Ctx) {
	numkeys, ok := parseRangeLong(c, c.Args[1], 1, math.MaxInt64, "numkeys should be greater than 0")
	if !ok {
		return
	}
	if numkeys > int64(len(c.Args)-2) {
		c.W.WriteError("ERR Number of keys can't be greater than number of args")
		return
	}
	limit := int64(0)
	for j := 2 + int(numkeys); j < len(c.Args); j++ {
		if eqFold(c.Args[j], "limit") && j+1 < len(c.Args) {
			j++
			n, ok := parseRangeLong(c, c.Args[j], 0, math.MaxInt64, "LIMIT can't be negative")
			if !ok {
				return
			}
			limit = n
		} else {
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	keys := c.Args[2 : 2+numkeys]
	sets := make([]*set, len(keys))
	empty := false
	for i, k := range keys {
		ent := c.Eng.lookupRead(k, c.Now)
		if ent == nil {
			empty = true
			continue
		}
		if ent.kind() != KindSet {
			c.W.WriteError(ErrWrongType)
			return
		}
		sets[i] = ent.obj().v.(*set)
	}
	if empty {
		c.W.WriteInt(0)
		return
	}
	smallest := sets[0]
	for _, s := range sets[1:] {
		if s.Len() < smallest.Len() {
			smallest = s
		}
	}
	var n int64
next:
	for _, m := range smallest.list {
		for _, s := range sets {
			if s != smallest && !s.Has(m) {
				continue next
			}
		}
		n++
		if limit > 0 && n >= limit {
			break
		}
	}
	c.W.WriteInt(n)
}

// SSCAN key cursor [MATCH pattern] [COUNT count]
//
// An intset comes whole in one reply with cursor 0, as Redis replies it.
// A hashtable set is scanned about COUNT members a call, as Redis scans
// its dict, from the end of its member list down: the cursor is how many
// positions are left to visit below. A removal moves the last member into
// the hole (set.Del), which is never from below the cursor to above it,
// and members added go to the end, so a member present for the whole
// iteration is returned at least once (a moved one may come twice), as
// SCAN's contract says. MATCH filters the members a call visits.
func cmdSScan(c *Ctx) {
	cur, ok := parseCursor(c.Args[2])
	if !ok {
		c.W.WriteError(ErrInvalidCursor)
		return
	}
	_, s, ok := getSet(c, c.Args[1], true)
	if !ok {
		return
	}
	if s == nil {
		writeWholeScan(c, nil)
		return
	}
	pat, count, ok := scanArgs(c, 3)
	if !ok {
		return
	}
	var out []string
	if s.intset {
		for _, m := range s.Members() {
			if pat == nil || Match(pat, []byte(m), false) {
				out = append(out, m)
			}
		}
		writeWholeScan(c, out)
		return
	}
	pos := uint64(len(s.list))
	if cur != 0 && cur < pos {
		pos = cur
	}
	stop := uint64(0)
	if pos > uint64(count) {
		stop = pos - uint64(count)
	}
	for i := pos; i > stop; i-- {
		if m := s.list[i-1]; pat == nil || Match(pat, []byte(m), false) {
			out = append(out, m)
		}
	}
	writeScan(c, stop, out)
}
