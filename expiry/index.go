package expiry

import "github.com/tidwall/btree"

// Item is one entry of the index: a key and its monotonic deadline.
type Item struct {
	Deadline int64
	Key      string
}

func less(a, b Item) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return a.Key < b.Key
}

// Index orders keys by (deadline, key) so that the keys due first are found
// in O(log n). It is not safe for concurrent use.
type Index struct {
	tr *btree.BTreeG[Item]
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{tr: btree.NewBTreeGOptions(less, btree.Options{NoLocks: true, Degree: 64})}
}

// Add records that key expires at deadline. The caller must remove any
// previous deadline of the same key first.
func (x *Index) Add(key string, deadline int64) { x.tr.Set(Item{deadline, key}) }

// Remove forgets the (key, deadline) pair; it reports whether it was present.
func (x *Index) Remove(key string, deadline int64) bool {
	_, ok := x.tr.Delete(Item{deadline, key})
	return ok
}

// Len returns the number of keys in the index.
func (x *Index) Len() int { return x.tr.Len() }

// Next returns the earliest deadline, or ok=false when the index is empty.
func (x *Index) Next() (deadline int64, ok bool) {
	it, ok := x.tr.Min()
	return it.Deadline, ok
}

// PopDue removes from the index, and appends to dst in deadline order, up
// to max keys whose deadline is past at now (the one expiry rule, Expired:
// a key is gone when now > deadline). Taking the earliest items off the
// front of the tree costs far less than finding them and deleting each by
// key (a mass expiry reclaims at the speed of this loop).
func (x *Index) PopDue(now int64, max int, dst []Item) []Item {
	for n := 0; n < max; n++ {
		it, ok := x.tr.Min()
		if !ok || !Expired(it.Deadline, now) {
			break
		}
		x.tr.PopMin()
		dst = append(dst, it)
	}
	return dst
}

// Scan calls fn for every item in deadline order until fn returns false.
func (x *Index) Scan(fn func(Item) bool) { x.tr.Scan(fn) }

// Clear removes every item.
func (x *Index) Clear() { x.tr.Clear() }

// Expired reports the one expiry rule used everywhere: a deadline of 0 means
// none; otherwise the key is gone once now > deadline. Like Redis
// (keyIsExpired: now > when), a key lives through its deadline's
// millisecond: with millisecond clocks, now >= deadline would let a PX N
// lock set late in a millisecond go after N-1 ms and a little.
func Expired(deadline, now int64) bool { return deadline != 0 && now > deadline }
