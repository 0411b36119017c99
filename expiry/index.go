package expiry

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/tidwall/btree"
)

// Item is one entry of the index: what expires (Ref) and its monotonic
// deadline.
type Item[T any] struct {
	Deadline int64
	Ref      *T
}

// group is the b-tree's item: the refs due at one deadline. With locks
// taken at a fixed TTL, thousands may share a millisecond's deadline; one
// 16-byte item per ref (as the index once held) cost about 32 bytes a ref,
// since a b-tree fed in increasing order leaves each leaf half full. A
// group costs the tree one item per distinct deadline, and a ref costs
// only its slot in the group's set (13.6 bytes a ref at 1000 a millisecond:
// BenchmarkIndex_Memory).
//
// p is one of:
//   - the group's only ref, a *T: the sparse case costs no more than an item
//     per ref did, and allocates nothing;
//   - a *refSet[T] plus one byte, when the group holds a set. The low bit
//     tells the two apart: a ref with the low bit set (a T of 1-byte
//     alignment) is always kept in a set, never alone. The tag is in the
//     pointer, not in dl, because a deadline may be any int64 (PX up to
//     MaxInt64 minus now; PXAT in the past, after a wall-clock jump, is
//     negative), so dl has no spare bit. A pointer one byte into a
//     refSet is an interior pointer: the GC keeps the set alive by it as
//     by any pointer to a field.
type group struct {
	dl int64
	p  unsafe.Pointer
}

// less orders groups by deadline alone. The index once held an item per
// ref and ordered ties by Ref's address, which never loads what Ref points
// to (ordering ties by the key's bytes did: with thousands of locks taken
// in one millisecond, every comparison in a b-tree node was a cache miss on
// a key, a fifth of the CPU of a pipelined lock release at 1M keys). Refs
// sharing a deadline now share a group, so there is no tie to order: the
// tree compares integers only, and the refs of a group are in no order.
func less(a, b group) bool { return a.dl < b.dl }

// isSet reports whether a group's p is a tagged *refSet.
func isSet(p unsafe.Pointer) bool { return uintptr(p)&1 != 0 }

// setOf returns the set p points one byte into (isSet(p) must hold).
func setOf[T any](p unsafe.Pointer) *refSet[T] { return (*refSet[T])(unsafe.Add(p, -1)) }

// Index orders refs by deadline so that the ones due first are found in
// O(log n), where n is the number of distinct deadlines: the refs due at
// one deadline are one group (see group). A ref is in the index at most
// once; the index keeps it alive. It is not safe for concurrent use.
type Index[T any] struct {
	tr      *btree.BTreeG[group]
	cache   *[cacheSlots]group // recent groups by deadline (see lookup)
	n       int                // refs held, in all groups
	sum     sum128             // the sum of their deadlines (MeanDeadline)
	addHint btree.PathHint     // Add's path, to deadlines before the last
	rmHint  btree.PathHint     // Remove's path
	pfHint  btree.PathHint     // Prefetch's path
}

// cacheSlots is the size of Index's group cache: 4096 groups (64 KiB)
// cover the deadlines of four seconds of locks taken at a fixed TTL.
const cacheSlots = 4096

// NewIndex returns an empty index.
func NewIndex[T any]() *Index[T] {
	return &Index[T]{
		tr:    btree.NewBTreeGOptions(less, btree.Options{NoLocks: true, Degree: 64}),
		cache: new([cacheSlots]group),
	}
}

// lookup returns the group of deadline, from the cache or else the tree
// (searched along hint, and then cached). A lock's release looks its
// group up twice, in Prefetch and in Remove, and the b-tree's search of a
// node, through the generic less, was a twentieth of a pipelined release's
// CPU. The cache is direct-mapped by the deadline's low bits: slot
// dl%cacheSlots holds either nothing (p nil: no group has a nil p) or the
// tree's current group of the deadline it names; every change of a
// group's item goes through put or drop, which keep it so.
func (x *Index[T]) lookup(deadline int64, hint *btree.PathHint) (group, bool) {
	c := &x.cache[uint64(deadline)%cacheSlots]
	if c.p != nil && c.dl == deadline {
		return *c, true
	}
	g, ok := x.tr.GetHint(group{dl: deadline}, hint)
	if ok {
		*c = g
	}
	return g, ok
}

// put sets the tree's group for g.dl, and caches it.
func (x *Index[T]) put(g group, hint *btree.PathHint) {
	x.tr.SetHint(g, hint)
	x.cache[uint64(g.dl)%cacheSlots] = g
}

// uncache forgets deadline's group in the cache, once it left the tree.
func (x *Index[T]) uncache(deadline int64) {
	if c := &x.cache[uint64(deadline)%cacheSlots]; c.dl == deadline {
		*c = group{}
	}
}

// Add records that ref expires at deadline. The caller must remove any
// previous deadline of the same ref first; adding a ref again with the
// deadline it has changes nothing.
//
// Locks taken with one TTL have the latest deadline: they join the tree's
// last group, or start a new one after it, found without a comparison
// (and a new group costs one descent). Any other deadline is looked up,
// on the path Add took last time.
func (x *Index[T]) Add(ref *T, deadline int64) {
	p := unsafe.Pointer(ref)
	last, ok := x.tr.Max()
	if !ok || last.dl < deadline {
		x.insert(ref, deadline)
		x.n++
		x.sum.inc(deadline)
		return
	}
	g := last
	if last.dl != deadline {
		if g, ok = x.lookup(deadline, &x.addHint); !ok {
			x.insert(ref, deadline)
			x.n++
			x.sum.inc(deadline)
			return
		}
	}
	switch {
	case isSet(g.p):
		if !setOf[T](g.p).add(ref) {
			return
		}
	case g.p == p:
		return
	default: // a second ref at this deadline: the group becomes a set
		s := newRefSet[T]()
		s.add((*T)(g.p))
		s.add(ref)
		x.put(group{deadline, s.tagged()}, &x.addHint)
	}
	x.n++
	x.sum.inc(deadline)
}

// insert adds the group of deadline, which is not in the tree, with ref.
func (x *Index[T]) insert(ref *T, deadline int64) {
	p := unsafe.Pointer(ref)
	if isSet(p) { // an odd address cannot stand alone (see group)
		s := newRefSet[T]()
		s.add(ref)
		p = s.tagged()
	}
	x.put(group{deadline, p}, &x.addHint)
}

// Remove forgets the (ref, deadline) pair; it reports whether it was present.
func (x *Index[T]) Remove(ref *T, deadline int64) bool {
	g, ok := x.lookup(deadline, &x.rmHint)
	if !ok {
		return false
	}
	if isSet(g.p) {
		s := setOf[T](g.p)
		if !s.remove(ref) {
			return false
		}
		x.n--
		x.sum.dec(deadline)
		x.settle(s, deadline, &x.rmHint)
		return true
	}
	if g.p != unsafe.Pointer(ref) {
		return false
	}
	x.tr.DeleteHint(group{dl: deadline}, &x.rmHint)
	x.uncache(deadline)
	x.n--
	x.sum.dec(deadline)
	return true
}

// settle tidies the group of deadline after its set s lost refs: an empty
// group leaves the tree, a set down to one ref (at an even address) gives
// way to that ref, and a set far emptier than its table shrinks, so a
// group that drains gives its memory back.
func (x *Index[T]) settle(s *refSet[T], deadline int64, hint *btree.PathHint) {
	switch {
	case s.n == 0:
		x.tr.DeleteHint(group{dl: deadline}, hint)
		x.uncache(deadline)
		return
	case s.n == 1:
		if r := unsafe.Pointer(s.any()); !isSet(r) {
			x.put(group{deadline, r}, hint)
			return
		}
	}
	s.shrinkIfSparse()
}

// Prefetch loads the memory Remove(ref, deadline) will read first, and
// changes nothing: the group's item (in a tree of one item per deadline,
// mostly cached) and, when the group is a set, ref's home slot, the cache
// miss of a removal among thousands of refs sharing a millisecond. A
// caller about to remove several refs prefetches them all first, so their
// misses overlap. The result only keeps the load from being optimised away.
func (x *Index[T]) Prefetch(ref *T, deadline int64) uintptr {
	g, ok := x.lookup(deadline, &x.pfHint)
	if !ok || !isSet(g.p) {
		return 0
	}
	s := setOf[T](g.p)
	return uintptr(unsafe.Pointer(s.slots[s.home(ref)]))
}

// Len returns the number of refs in the index.
func (x *Index[T]) Len() int { return x.n }

// Next returns the earliest deadline, or ok=false when the index is empty.
func (x *Index[T]) Next() (deadline int64, ok bool) {
	g, ok := x.tr.Min()
	return g.dl, ok
}

// PopDue removes from the index, and appends to dst in deadline order, up
// to max refs whose deadline is past at now (the one expiry rule, Expired:
// a key is gone when now > deadline); refs sharing a deadline come in no
// particular order. Taking the earliest groups off the front of the tree
// costs far less than finding them and deleting each by key (a mass expiry
// reclaims at the speed of this loop); a group that does not fit in max is
// popped in part, and the rest of it stays in the index.
func (x *Index[T]) PopDue(now int64, max int, dst []Item[T]) []Item[T] {
	for max > 0 {
		g, ok := x.tr.Min()
		if !ok || !Expired(g.dl, now) {
			break
		}
		if !isSet(g.p) {
			x.tr.PopMin()
			x.uncache(g.dl)
			dst = append(dst, Item[T]{g.dl, (*T)(g.p)})
			x.n--
			x.sum.dec(g.dl)
			max--
			continue
		}
		s := setOf[T](g.p)
		if int(s.n) <= max {
			x.tr.PopMin()
			x.uncache(g.dl)
			dst = s.appendAll(dst, g.dl)
			x.n -= int(s.n)
			x.sum.add(g.dl, -int64(s.n))
			max -= int(s.n)
			continue
		}
		dst = s.pop(dst, g.dl, max)
		x.n -= max
		x.sum.add(g.dl, -int64(max))
		x.settle(s, g.dl, nil)
		break
	}
	return dst
}

// MeanDeadline returns the mean of the deadlines in the index (INFO
// keyspace's avg_ttl), ok=false when it is empty. The index keeps their
// sum as refs come and go, so this costs nothing per item.
func (x *Index[T]) MeanDeadline() (mean int64, ok bool) {
	if x.n == 0 {
		return 0, false
	}
	return x.sum.div(int64(x.n)), true
}

// CountDue counts the refs whose deadline is past at now (Expired), not
// yet popped: INFO's expired_stale_perc. It visits at most maxGroups
// deadlines and reports whether it saw them all.
func (x *Index[T]) CountDue(now int64, maxGroups int) (n int, complete bool) {
	complete = true
	x.tr.Scan(func(g group) bool {
		if !Expired(g.dl, now) {
			return false
		}
		if maxGroups == 0 {
			complete = false
			return false
		}
		maxGroups--
		if isSet(g.p) {
			n += int(setOf[T](g.p).n)
		} else {
			n++
		}
		return true
	})
	return n, complete
}

// Scan calls fn for every item in deadline order (refs sharing a deadline
// in no particular order) until fn returns false. fn must not change the
// index.
func (x *Index[T]) Scan(fn func(Item[T]) bool) {
	x.tr.Scan(func(g group) bool {
		if !isSet(g.p) {
			return fn(Item[T]{g.dl, (*T)(g.p)})
		}
		for _, r := range setOf[T](g.p).slots {
			if r != nil && !fn(Item[T]{g.dl, r}) {
				return false
			}
		}
		return true
	})
}

// Clear removes every item.
func (x *Index[T]) Clear() {
	x.tr.Clear()
	clear(x.cache[:])
	x.n = 0
	x.sum = sum128{}
	x.addHint, x.rmHint, x.pfHint = btree.PathHint{}, btree.PathHint{}, btree.PathHint{}
}

// refSet is the set of refs of a group that has more than one (or one at
// an odd address): open addressing keyed by the ref's address, with linear
// probing and backward-shift deletion (no tombstones: a removal moves the
// refs after it that may move back toward their home slot), in a table
// kept between 1/8 and 3/4 full; a lookup never loads a ref. A table grows
// (or shrinks) to twice the refs it holds (rounded up to its size class),
// so a growing set is about 1/2 to 3/4 full: 11 to 18 bytes a ref. The
// header is 32 bytes: n is a uint32 (a group holds fewer than 2^32 refs).
//
// Tables are not powers of two: a table takes every slot of its
// allocation's size class (see table), and a ref's home is reduced to the
// table's length by a multiply, not a mask. A table of 2^k pointers over
// 512 bytes would not fit its class: the allocator adds an 8-byte header
// to such objects, so 16 KB would take 18 KB (and 32 KB, 40 KB), and with
// the load a doubling table has at 1000 refs (1000 in 2048 slots) a ref
// cost 18.5 bytes instead of about 13.
type refSet[T any] struct {
	slots []*T   // nil: free
	n     uint32 // refs held
	cur   uint32 // where pop's scan resumes
}

// setMin is the smallest table: two refs, half full (32 bytes).
const setMin = 4

// table returns a table of at least want slots: as many as fill the size
// class the allocator rounds it up to (slices.Grow gives that capacity,
// net of any allocation header).
func table[T any](want int) []*T {
	t := slices.Grow([]*T(nil), want)
	return t[:cap(t)]
}

func newRefSet[T any]() *refSet[T] {
	t := table[T](setMin)
	return &refSet[T]{slots: t, cur: uint32(len(t) - 1)}
}

// tagged returns s as a group's p.
func (s *refSet[T]) tagged() unsafe.Pointer { return unsafe.Add(unsafe.Pointer(s), 1) }

// home returns r's first slot: its address times 2^64/φ (Go's allocator
// spaces objects of one size evenly; the multiply spreads those addresses
// over the top bits), scaled to the table's length by the high word of a
// multiply (Lemire's reduction).
func (s *refSet[T]) home(r *T) int {
	hi, _ := bits.Mul64(uint64(uintptr(unsafe.Pointer(r)))*0x9E3779B97F4A7C15, uint64(len(s.slots)))
	return int(hi)
}

// next returns the slot after i, wrapping around.
func (s *refSet[T]) next(i int) int {
	if i++; i == len(s.slots) {
		return 0
	}
	return i
}

// add inserts r, growing the table past 3/4 full; it reports false, and
// changes nothing, if r was there.
func (s *refSet[T]) add(r *T) bool {
	if 4*(int(s.n)+1) > 3*len(s.slots) {
		s.resize(2 * (int(s.n) + 1))
	}
	for i := s.home(r); ; i = s.next(i) {
		switch s.slots[i] {
		case nil:
			s.slots[i] = r
			s.n++
			return true
		case r:
			return false
		}
	}
}

// remove deletes r, reporting whether it was there. It never shrinks the
// table (shrinkIfSparse does).
func (s *refSet[T]) remove(r *T) bool {
	for i := s.home(r); ; i = s.next(i) {
		switch s.slots[i] {
		case nil:
			return false
		case r:
			s.deleteAt(i)
			return true
		}
	}
}

// deleteAt empties slot i, then moves back each ref of the run after it
// whose home is not between the hole and the ref (cyclically), so every
// ref stays reachable from its home without crossing a free slot.
func (s *refSet[T]) deleteAt(i int) {
	size := len(s.slots)
	for j := s.next(i); s.slots[j] != nil; j = s.next(j) {
		fromHome, fromHole := j-s.home(s.slots[j]), j-i
		if fromHome < 0 {
			fromHome += size
		}
		if fromHole < 0 {
			fromHole += size
		}
		if fromHome >= fromHole {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = nil
	s.n--
}

// pop removes k refs (k < s.n), appending them to dst with deadline dl.
// It scans down from where the last pop stopped, circularly, so popping a
// big set in batches does not rescan the slots it emptied: the slots it has
// passed stay free (a deletion only moves refs from the run after the hole,
// which is behind the scan, except at its first slot, which it checks
// again), so one turn finds every ref.
func (s *refSet[T]) pop(dst []Item[T], dl int64, k int) []Item[T] {
	i := min(int(s.cur), len(s.slots)-1)
	for k > 0 && s.n > 0 {
		if r := s.slots[i]; r != nil {
			dst = append(dst, Item[T]{dl, r})
			s.deleteAt(i) // a ref may move into slot i: look again
			k--
			continue
		}
		if i == 0 {
			i = len(s.slots)
		}
		i--
	}
	s.cur = uint32(i)
	return dst
}

// appendAll appends every ref to dst with deadline dl (and leaves s as it
// is: the caller drops it).
func (s *refSet[T]) appendAll(dst []Item[T], dl int64) []Item[T] {
	for _, r := range s.slots {
		if r != nil {
			dst = append(dst, Item[T]{dl, r})
		}
	}
	return dst
}

// any returns a ref of s, or nil if it is empty.
func (s *refSet[T]) any() *T {
	for _, r := range s.slots {
		if r != nil {
			return r
		}
	}
	return nil
}

// shrinkIfSparse moves the refs to a table of about twice their number
// once the table is under 1/8 full, unless a pop has begun (cur is below
// the top slot): the set is then due, and the expiry loop is draining it.
// Its refs left are those of the slots below cur, so their homes span a
// narrow band of hashes, and a smaller table would take them all in a
// fraction of its slots as one long probe run: each insert and removal
// then walks the run. Shrinking at every batch made popping a mass expiry
// cost six times what the pops themselves do
// (BenchmarkIndex_PopDueMassExpiry).
func (s *refSet[T]) shrinkIfSparse() {
	if s.cur != uint32(len(s.slots)-1) {
		return
	}
	if len(s.slots) > setMin && 8*int(s.n) < len(s.slots) {
		s.resize(max(setMin, 2*int(s.n)))
	}
}

// resize moves the refs to a table of at least want slots.
func (s *refSet[T]) resize(want int) {
	old := s.slots
	s.slots = table[T](want)
	for _, r := range old {
		if r == nil {
			continue
		}
		i := s.home(r)
		for s.slots[i] != nil {
			i = s.next(i)
		}
		s.slots[i] = r
	}
	s.cur = uint32(len(s.slots) - 1)
}

// Expired reports the one expiry rule used everywhere: a deadline of 0 means
// none; otherwise the key is gone once now > deadline. Like Redis
// (keyIsExpired: now > when), a key lives through its deadline's
// millisecond: with millisecond clocks, now >= deadline would let a PX N
// lock set late in a millisecond go after N-1 ms and a little.
func Expired(deadline, now int64) bool { return deadline != 0 && now > deadline }

// sum128 is a signed 128-bit sum of int64 values: a million deadlines
// near 2^62 do not overflow it.
type sum128 struct {
	hi int64
	lo uint64
}

// inc adds v: the index's common case, small enough to inline.
func (s *sum128) inc(v int64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, uint64(v), 0)
	s.hi += int64(c) + v>>63 // v sign-extended to 128 bits
}

// dec subtracts v.
func (s *sum128) dec(v int64) {
	var b uint64
	s.lo, b = bits.Sub64(s.lo, uint64(v), 0)
	s.hi -= int64(b) + v>>63
}

// add adds v*k.
func (s *sum128) add(v, k int64) {
	neg := (v < 0) != (k < 0)
	mv, mk := uint64(v), uint64(k)
	if v < 0 {
		mv = -mv
	}
	if k < 0 {
		mk = -mk
	}
	hi, lo := bits.Mul64(mv, mk)
	if neg { // two's complement of the 128-bit product
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	var c uint64
	s.lo, c = bits.Add64(s.lo, lo, 0)
	s.hi += int64(hi) + int64(c)
}

// div returns s/n rounded toward zero, for n > 0 and a quotient that fits
// an int64 (a mean of int64 values does).
func (s sum128) div(n int64) int64 {
	hi, lo := uint64(s.hi), s.lo
	neg := s.hi < 0
	if neg {
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
	}
	q, _ := bits.Div64(hi, lo, uint64(n))
	if neg {
		return -int64(q)
	}
	return int64(q)
}
