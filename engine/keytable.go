package engine

import (
	"hash/maphash"
	"math/bits"
)

// keyTable is the keyspace's hash table: key -> *entry. It replaces a Go
// map for the number of dependent memory loads a lookup costs, which at
// a million keys is most of a GET's time (bench/RESULTS.md).
//
// A Go map holding string keys loads a group's control word, then the
// slot's string header, then the key's bytes, then the entry, then the
// value. Here a slot is the key's 64-bit hash (its low 24 bits given to
// the key's access time: kslot) beside the entry pointer, and the entry
// holds its key and (for a string made by SET) its
// value in the same allocation (newEntry): a hit loads the slot,
// then one object.
//
// The layout is extendible hashing, as Go's own maps: a directory indexed
// by the top bits of the hash points to small open-addressing tables
// (linear probing, backward-shift deletion, so no tombstones). A table
// that fills doubles up to ktMaxSlots and then splits in two on its next
// hash bit, so growth never rehashes more than one small table at a time
// and the server never stalls on a resize of the whole keyspace. A table
// under 1/8 full halves; tables are never merged again, so the directory
// keeps its size (8 bytes an entry) after the keys are gone.
//
// Within a table a key's home slot is taken from the hash bits just below
// the ones the directory uses, so the slots of all tables in directory
// order follow the hash order (apart from probe displacement).
//
// It is not safe for concurrent use; the engine's lock guards it. No
// method may be called from inside each's callback except get*.
type keyTable struct {
	lru   *lruClock // the engine's: the access time of keys stored and looked up (nil: none)
	seed  maphash.Seed
	dir   []*ktable // len(dir) == 1<<depth
	depth uint8     // global depth: hash bits the directory uses
	n     int
	sink  uint64 // keeps prefetch's loads from being optimised away
	// maxDensity is the largest table's density (random), 0 until
	// computed again after a table changes size or splits
	maxDensity uint64
}

type ktable struct {
	slots []kslot // power-of-two length
	n     int
	depth uint8 // local depth: the top bits all its keys' hashes share
	shift uint8 // 64 - log2(len(slots))
}

// kslot is empty when ent is nil. Its h is the key's hash (hash) in the
// bits above lruMask, and in those bits the key's access time: Redis's
// 24-bit LRU clock, seconds (OBJECT IDLETIME), kept without a byte more
// per key. Nothing reads a hash's low 24 bits: lookups compare the bits
// above them, homes and the directory take the top bits, tables split on
// bits above them only (splits), and SCAN's cursor ignores them.
type kslot struct {
	h   uint64
	ent *entry
}

// lruMask is the bits of a slot's h that hold the access time.
const lruMask = 1<<24 - 1

// lruClock is the access time to give keys: now, Redis's LRU clock (the
// engine's clock in seconds, 24 bits), and whether a lookup counts as an
// access (not for TYPE, TTL, EXISTS, OBJECT... : Redis's LOOKUP_NOTOUCH).
type lruClock struct {
	now   uint64
	touch bool
}

func (c *lruClock) stamp() uint64 {
	if c == nil {
		return 0
	}
	return c.now
}

// touched sets slot s's access time to now, when lookups touch.
func (c *lruClock) touched(s *kslot) {
	if c != nil && c.touch && s.h&lruMask != c.now {
		s.h = s.h&^lruMask | c.now
	}
}

// hash is key's hash in t, its low 24 bits clear.
func (t *keyTable) hash(key string) uint64 { return maphash.String(t.seed, key) &^ lruMask }

func (t *keyTable) hashBytes(key []byte) uint64 { return maphash.Bytes(t.seed, key) &^ lruMask }

const (
	ktMinSlots = 8
	ktMaxSlots = 4096 // a split moves at most ktMaxSlots*3/4 entries
)

func newKeyTable(lru *lruClock) *keyTable {
	t := &keyTable{seed: maphash.MakeSeed(), lru: lru}
	t.reset()
	return t
}

// reset empties the table.
func (t *keyTable) reset() {
	t.dir = []*ktable{newKtable(ktMinSlots, 0)}
	t.depth = 0
	t.n = 0
	t.maxDensity = 0
}

func newKtable(slots int, depth uint8) *ktable {
	return &ktable{
		slots: make([]kslot, slots),
		depth: depth,
		shift: uint8(64 - bits.TrailingZeros(uint(slots))),
	}
}

func (t *keyTable) len() int { return t.n }

// table returns the table for hash h. A shift by 64 yields 0 in Go, so a
// directory of depth 0 needs no special case.
func (t *keyTable) table(h uint64) *ktable { return t.dir[h>>(64-t.depth)] }

// home is h's first slot in tb: the hash bits below tb's local depth.
func (tb *ktable) home(h uint64) int { return int(((h &^ lruMask) << tb.depth) >> tb.shift) }

// find returns the index of key's slot in tb, or -1.
func (tb *ktable) find(h uint64, key string) int {
	mask := len(tb.slots) - 1
	for i := tb.home(h); ; i = (i + 1) & mask {
		s := &tb.slots[i]
		if s.ent == nil {
			return -1
		}
		if s.h&^lruMask == h && s.ent.key() == key {
			return i
		}
	}
}

// get returns the entry stored under key, or nil. It is not an access
// (lookup is).
func (t *keyTable) get(key []byte) *entry { return t.getAt(key, nil) }

// lookup is get as an access: the key's access time becomes lru's now,
// when lru touches.
func (t *keyTable) lookup(key []byte) *entry { return t.getAt(key, t.lru) }

func (t *keyTable) getAt(key []byte, lru *lruClock) *entry {
	h := t.hashBytes(key)
	tb := t.table(h)
	// string(key) in a comparison does not allocate.
	mask := len(tb.slots) - 1
	for i := tb.home(h); ; i = (i + 1) & mask {
		s := &tb.slots[i]
		if s.ent == nil {
			return nil
		}
		if s.h&^lruMask == h && s.ent.key() == string(key) {
			lru.touched(s)
			return s.ent
		}
	}
}

// stampNow sets the access time of ent's slot to now, as put does.
func (t *keyTable) stampNow(ent *entry) {
	key := ent.key()
	h := t.hash(key)
	tb := t.table(h)
	if i := tb.find(h, key); i >= 0 {
		tb.slots[i].h = h | t.lru.stamp()
	}
}

// idle returns the access time of key's slot (ok false if it has none).
func (t *keyTable) idle(key []byte) (lru uint64, ok bool) {
	h := t.hashBytes(key)
	tb := t.table(h)
	if i := tb.find(h, string(key)); i >= 0 {
		return tb.slots[i].h & lruMask, true
	}
	return 0, false
}

// setIdle sets the access time of key's slot.
func (t *keyTable) setIdle(key string, lru uint64) {
	h := t.hash(key)
	tb := t.table(h)
	if i := tb.find(h, key); i >= 0 {
		tb.slots[i].h = h | lru&lruMask
	}
}

// getString is get for a string key.
func (t *keyTable) getString(key string) *entry {
	h := t.hash(key)
	tb := t.table(h)
	if i := tb.find(h, key); i >= 0 {
		return tb.slots[i].ent
	}
	return nil
}

// put stores ent under ent.key(), replacing any entry already there,
// which it returns (nil if none).
func (t *keyTable) put(ent *entry) *entry {
	return t.putHashed(t.hash(ent.key()), ent)
}

// putHashed is put for an entry whose key hashes to h (hash). The key's
// access time becomes now, as a new object's in Redis.
func (t *keyTable) putHashed(h uint64, ent *entry) *entry {
	tb := t.table(h)
	if i := tb.find(h, ent.key()); i >= 0 {
		old := tb.slots[i].ent
		tb.slots[i] = kslot{h | t.lru.stamp(), ent}
		return old
	}
	// a split can leave one half still full: loop (grow doubles a table
	// whose entries a split would not separate, so this ends)
	for (tb.n+1)*4 > len(tb.slots)*3 {
		t.grow(tb, h)
		tb = t.table(h)
	}
	tb.insert(h|t.lru.stamp(), ent)
	t.n++
	return nil
}

// insert places an entry known to be absent; tb has room.
func (tb *ktable) insert(h uint64, ent *entry) {
	mask := len(tb.slots) - 1
	i := tb.home(h)
	for tb.slots[i].ent != nil {
		i = (i + 1) & mask
	}
	tb.slots[i] = kslot{h, ent}
	tb.n++
}

// grow makes room in tb, the table for hash h: it doubles a small table
// in place, or splits a full-sized one on its next hash bit.
func (t *keyTable) grow(tb *ktable, h uint64) {
	t.maxDensity = 0
	if len(tb.slots) < ktMaxSlots || !tb.splits() {
		bigger := newKtable(len(tb.slots)*2, tb.depth)
		tb.moveTo(bigger, bigger)
		*tb = *bigger
		return
	}
	if tb.depth == t.depth {
		// double the directory: each table now has two entries
		dir := make([]*ktable, 2*len(t.dir))
		for i, x := range t.dir {
			dir[2*i], dir[2*i+1] = x, x
		}
		t.dir = dir
		t.depth++
	}
	lo := newKtable(len(tb.slots), tb.depth+1)
	hi := newKtable(len(tb.slots), tb.depth+1)
	tb.moveTo(lo, hi)
	// tb owns a run of 1<<(t.depth-tb.depth) directory entries, the one
	// for h among them; the lower half goes to lo, the upper to hi.
	span := 1 << (t.depth - tb.depth)
	first := int(h>>(64-t.depth)) &^ (span - 1)
	for i := 0; i < span; i++ {
		if i < span/2 {
			t.dir[first+i] = lo
		} else {
			t.dir[first+i] = hi
		}
	}
}

// splits reports whether tb should split rather than double: whether
// its entries' hashes differ within the 16 bits below its local depth, so
// that splitting (perhaps a few times) separates them. Hashes that agree
// on all of them (a collision no random seed makes) would double the
// directory without end; their table grows past ktMaxSlots instead.
func (tb *ktable) splits() bool {
	if tb.depth >= 48 {
		return false
	}
	// the 16 bits below the depth, above the access time's: a split
	// on an access time's bit would put a key where lookups never look
	mask := uint64(0xffff) << (48 - tb.depth) &^ lruMask
	first, have, diff := uint64(0), false, uint64(0)
	for _, s := range tb.slots {
		if s.ent != nil {
			if !have {
				first, have = s.h, true
			}
			diff |= s.h ^ first
		}
	}
	return diff&mask != 0
}

// moveTo inserts tb's entries into lo or hi by the hash bit below tb's
// local depth (lo == hi to rehash into one table).
func (tb *ktable) moveTo(lo, hi *ktable) {
	bit := uint64(1) << (63 - tb.depth)
	for _, s := range tb.slots {
		if s.ent == nil {
			continue
		}
		if s.h&bit == 0 {
			lo.insert(s.h, s.ent)
		} else {
			hi.insert(s.h, s.ent)
		}
	}
}

// delete removes key, reporting whether it was there.
func (t *keyTable) delete(key string) bool {
	h := t.hash(key)
	tb := t.table(h)
	i := tb.find(h, key)
	if i < 0 {
		return false
	}
	t.deleteAt(tb, i)
	return true
}

// touchHomes loads the home slots of hashes hs into the CPU cache, in a
// loop of independent loads whose misses overlap. It changes nothing.
func (t *keyTable) touchHomes(hs []uint64) {
	var sink uint64
	for _, h := range hs {
		tb := t.table(h)
		sink += tb.slots[tb.home(h)].h
	}
	t.sink += sink
}

// deleteEntry removes ent, whose key hashes to h, reporting whether it was
// there. It finds ent's slot by the entry's address: it never compares
// keys.
func (t *keyTable) deleteEntry(h uint64, ent *entry) bool {
	tb := t.table(h)
	mask := len(tb.slots) - 1
	for i := tb.home(h); ; i = (i + 1) & mask {
		switch tb.slots[i].ent {
		case nil:
			return false
		case ent:
			t.deleteAt(tb, i)
			return true
		}
	}
}

// deleteAt empties slot i of tb.
func (t *keyTable) deleteAt(tb *ktable, i int) {
	// Backward-shift deletion: pull later entries of the probe run into
	// the hole when their home slot allows it, so that every entry stays
	// reachable from its home without tombstones.
	mask := len(tb.slots) - 1
	for j := (i + 1) & mask; tb.slots[j].ent != nil; j = (j + 1) & mask {
		k := tb.home(tb.slots[j].h)
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		var stays bool
		if i <= j {
			stays = i < k && k <= j
		} else {
			stays = i < k || k <= j
		}
		if !stays {
			tb.slots[i] = tb.slots[j]
			i = j
		}
	}
	tb.slots[i] = kslot{}
	tb.n--
	t.n--
	if tb.n*8 < len(tb.slots) && len(tb.slots) > ktMinSlots {
		// Under 1/8 full: halve it (to under 1/4 full, so it does not
		// grow again soon), as Redis shrinks a dict, so that a burst of
		// keys does not keep its memory once they are gone.
		smaller := newKtable(len(tb.slots)/2, tb.depth)
		tb.moveTo(smaller, smaller)
		*tb = *smaller
		t.maxDensity = 0
	}
}

// each calls fn for every entry until fn returns false. fn must not
// change the table.
func (t *keyTable) each(fn func(*entry) bool) {
	for i, tb := range t.dir {
		// a table of local depth d fills 1<<(depth-d) directory entries:
		// visit it at the first of them only
		if i&(1<<(t.depth-tb.depth)-1) != 0 {
			continue
		}
		for _, s := range tb.slots {
			if s.ent != nil && !fn(s.ent) {
				return
			}
		}
	}
}

// random returns an entry chosen at random, every entry equally likely,
// or nil when the table is empty; rnd gives the random numbers.
//
// A draw picks a table as a random hash would (by the bits the directory
// uses) and a slot in it at random, and takes the entry there if the slot
// is full. A table's slot is so drawn with a chance of its share of the
// directory over its slot count, which differs between tables (a table
// of a lower local depth covers more of the directory with as many
// slots; a small table doubles before it splits): the draw is kept with
// the table's slot density over the largest one's (density), so that
// every slot, and so every entry, is as likely. A keyspace left sparse
// by deletions (tables halve only under 1/8 full, and the directory never
// shrinks) may make most draws miss: after randomDraws of them, an entry
// is chosen by its rank instead, walking the tables' counts.
func (t *keyTable) random(rnd func() uint64) *entry {
	if t.n == 0 {
		return nil
	}
	if t.maxDensity == 0 {
		for i, tb := range t.dir {
			if i&(1<<(t.depth-tb.depth)-1) == 0 {
				t.maxDensity = max(t.maxDensity, tb.density())
			}
		}
	}
	for range randomDraws {
		r := rnd()
		tb := t.table(r)
		if d := tb.density(); d < t.maxDensity && rnd()%t.maxDensity >= d {
			continue
		}
		if s := tb.slots[int(r&uint64(len(tb.slots)-1))]; s.ent != nil {
			return s.ent
		}
	}
	k := int(rnd() % uint64(t.n))
	for i, tb := range t.dir {
		if i&(1<<(t.depth-tb.depth)-1) != 0 {
			continue // a table is counted at its first directory entry
		}
		if k >= tb.n {
			k -= tb.n
			continue
		}
		for _, s := range tb.slots {
			if s.ent == nil {
				continue
			}
			if k == 0 {
				return s.ent
			}
			k--
		}
	}
	return nil // not reached while the counts agree
}

// density is tb's slots per unit of hash range (in units of 2^-64 of the
// whole range; it saturates past a table grown by hashes no split separates).
func (tb *ktable) density() uint64 {
	n := uint64(len(tb.slots))
	if bits.LeadingZeros64(n) <= int(tb.depth) {
		return 1 << 63
	}
	return n << tb.depth
}

// randomDraws is how many slots random draws before it counts.
const randomDraws = 32

// check verifies the table's structure: every entry is found from its
// home slot, the counts agree, and the directory is consistent. It returns
// a description of the first violation, or "".
func (t *keyTable) check() string {
	if len(t.dir) != 1<<t.depth {
		return "keytable: directory size disagrees with its depth"
	}
	total := 0
	for i, tb := range t.dir {
		if tb.depth > t.depth {
			return "keytable: a table is deeper than the directory"
		}
		span := 1 << (t.depth - tb.depth)
		first := i &^ (span - 1)
		if t.dir[first] != tb {
			return "keytable: a table's directory entries are not one aligned run"
		}
		if i != first {
			continue
		}
		n := 0
		for j, s := range tb.slots {
			if s.ent == nil {
				continue
			}
			n++
			if s.h&^lruMask != t.hash(s.ent.key()) {
				return "keytable: stored hash differs for key " + s.ent.key()
			}
			if int(s.h>>(64-t.depth))&^(span-1) != first {
				return "keytable: key " + s.ent.key() + " is in the wrong table"
			}
			if tb.find(s.h&^lruMask, s.ent.key()) != j {
				return "keytable: key " + s.ent.key() + " is not reachable from its home slot"
			}
		}
		if n != tb.n {
			return "keytable: a table's count is wrong"
		}
		total += n
	}
	if total != t.n {
		return "keytable: the total count is wrong"
	}
	return ""
}

// prefetch loads the slots, then the entries, of up to 32 keys into the
// CPU cache, in two passes of independent loads: the misses of all keys
// overlap, where looking each key up in turn waits for two misses per key.
// found[i] is set to keys[i]'s entry, if it has one. It changes nothing.
func (t *keyTable) prefetch(keys [][]byte, found *[32]*entry) {
	var hs [32]uint64
	n := min(len(keys), len(hs))
	for i := 0; i < n; i++ {
		hs[i] = t.hashBytes(keys[i])
	}
	var sink uint64
	for _, h := range hs[:n] {
		tb := t.table(h)
		sink += tb.slots[tb.home(h)].h
	}
	for j, h := range hs[:n] {
		tb := t.table(h)
		mask := len(tb.slots) - 1
		for i := tb.home(h); ; i = (i + 1) & mask {
			s := &tb.slots[i]
			if s.ent == nil {
				break
			}
			if s.h&^lruMask == h {
				// the entry, then the ends of its key and value,
				// which can lie on the next cache line
				k, v := s.ent.key(), s.ent.str()
				if len(k) > 0 {
					sink += uint64(k[len(k)-1])
				}
				if len(v) > 0 {
					sink += uint64(v[len(v)-1])
				}
				found[j] = s.ent
				break
			}
		}
	}
	t.sink += sink
}

// collectFrom appends entries whose hash is at least lo, in slot order
// (each as its hash, without the access time, and its entry),
// table by table in hash order, until it holds at least min of them or has
// passed the last table; end reports the latter. Whatever it appends
// includes every entry whose hash lies between lo and the largest hash it
// appended. This is SCAN's walk: a cursor is a hash, so it stays valid
// while tables grow and split, and a call reads about min slots.
//
// Within a table, home slots follow hash order and an entry sits at its
// home or later in the same run of occupied slots (a run may wrap past the
// table's end to its start). So the walk starts at lo's home and may stop
// at any empty slot once it holds min entries: every entry with a smaller
// hash lies before that slot.
func (t *keyTable) collectFrom(lo uint64, min int, dst []kslot) (out []kslot, end bool) {
	for {
		tb := t.table(lo)
		for i := tb.home(lo); i < len(tb.slots); i++ {
			s := tb.slots[i]
			if s.ent == nil {
				if len(dst) >= min {
					return dst, false
				}
			} else if s.h&^lruMask >= lo && tb.home(s.h) <= i {
				// neither displaced here from before lo nor wrapped
				// here from the table's end (taken below)
				dst = append(dst, kslot{s.h &^ lruMask, s.ent})
			}
		}
		// at the end of the table: a run that wrapped to its start holds
		// entries whose home is near the end (an entry there with a
		// smaller home has a hash below lo)
		for i := 0; i < len(tb.slots) && tb.slots[i].ent != nil; i++ {
			if s := tb.slots[i]; s.h&^lruMask >= lo && tb.home(s.h) > i {
				dst = append(dst, kslot{s.h &^ lruMask, s.ent})
			}
		}
		// tb's run of directory entries and so its hash range; a shift
		// to 1<<64 wraps to 0, making hi the largest hash
		span := uint64(1) << (t.depth - tb.depth)
		first := (lo >> (64 - t.depth)) &^ (span - 1)
		hi := (first+span)<<(64-t.depth) - 1
		if hi == ^uint64(0) {
			return dst, true
		}
		if len(dst) >= min {
			return dst, false
		}
		lo = hi + 1
	}
}
