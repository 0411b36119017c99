package expiry

import (
	"unsafe"

	"github.com/tidwall/btree"
)

// Item is one entry of the index: what expires (Ref) and its monotonic
// deadline.
type Item[T any] struct {
	Deadline int64
	Ref      *T
}

// less orders items by deadline, and ties by Ref's address. Go's heap
// objects never move, so the order of live refs is fixed; and comparing
// addresses never loads what Ref points to. (Ordering ties by the key's
// bytes did: with thousands of locks taken in one millisecond, every
// comparison in a b-tree node was a cache miss on a key, a fifth of the CPU
// of a pipelined lock release at 1M keys.)
func less[T any](a, b Item[T]) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return uintptr(unsafe.Pointer(a.Ref)) < uintptr(unsafe.Pointer(b.Ref))
}

// Index orders refs by (deadline, address) so that the ones due first are
// found in O(log n). A ref is in the index at most once; the index keeps
// it alive. It is not safe for concurrent use.
type Index[T any] struct {
	tr *btree.BTreeG[Item[T]]
}

// NewIndex returns an empty index.
func NewIndex[T any]() *Index[T] {
	return &Index[T]{tr: btree.NewBTreeGOptions(less[T], btree.Options{NoLocks: true, Degree: 64})}
}

// Add records that ref expires at deadline. The caller must remove any
// previous deadline of the same ref first.
func (x *Index[T]) Add(ref *T, deadline int64) { x.tr.Set(Item[T]{deadline, ref}) }

// Remove forgets the (ref, deadline) pair; it reports whether it was present.
func (x *Index[T]) Remove(ref *T, deadline int64) bool {
	_, ok := x.tr.Delete(Item[T]{deadline, ref})
	return ok
}

// Len returns the number of keys in the index.
func (x *Index[T]) Len() int { return x.tr.Len() }

// Next returns the earliest deadline, or ok=false when the index is empty.
func (x *Index[T]) Next() (deadline int64, ok bool) {
	it, ok := x.tr.Min()
	return it.Deadline, ok
}

// PopDue removes from the index, and appends to dst in deadline order, up
// to max refs whose deadline is past at now (the one expiry rule, Expired:
// a key is gone when now > deadline). Taking the earliest items off the
// front of the tree costs far less than finding them and deleting each by
// key (a mass expiry reclaims at the speed of this loop).
func (x *Index[T]) PopDue(now int64, max int, dst []Item[T]) []Item[T] {
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
func (x *Index[T]) Scan(fn func(Item[T]) bool) { x.tr.Scan(fn) }

// Clear removes every item.
func (x *Index[T]) Clear() { x.tr.Clear() }

// Expired reports the one expiry rule used everywhere: a deadline of 0 means
// none; otherwise the key is gone once now > deadline. Like Redis
// (keyIsExpired: now > when), a key lives through its deadline's
// millisecond: with millisecond clocks, now >= deadline would let a PX N
// lock set late in a millisecond go after N-1 ms and a little.
func Expired(deadline, now int64) bool { return deadline != 0 && now > deadline }
