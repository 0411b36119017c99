package engine

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// HSCAN of a hashtable-encoded hash and ZSCAN of a skiplist-encoded
// sorted set page their members, about COUNT a call, as Redis pages its
// dicts. Their Go maps have no stable positions, so a call reads a
// snapshot of the member names in the order of a fixed hash of each name
// (scanSnap); the cursor is the hash of the next name to visit (0: the
// end). A name the snapshot holds is returned while it is still a member
// and skipped once it is not.
//
// SCAN's contract, that a member present for the whole iteration is
// returned, holds because every snapshot read was taken while all such
// members were there: an iteration that starts (cursor 0) takes a new
// snapshot unless no member was added since the last one was taken
// (then that one holds every member there is), and a later call that
// finds none takes one too. Members added after the snapshot may or may
// not be returned, as the contract allows. A snapshot costs 24 bytes a
// member while an iteration goes on; the call that ends one drops it.

// scanSeed fixes the scan order of names for the process's life, so that
// a cursor means the same to every snapshot.
var scanSeed = maphash.MakeSeed()

// scanEntry is a name and its place in the scan order.
type scanEntry struct {
	h    uint64
	name string
}

// scanSnap is the names of a collection in scan order.
type scanSnap struct {
	adds    uint64 // the collection's adds when it was taken
	entries []scanEntry
}

// scanHashOf is name's place in the scan order; never 0, the cursor that
// starts and ends an iteration.
func scanHashOf(name string) uint64 { return max(maphash.String(scanSeed, name), 1) }

// newScanSnap takes a snapshot of m's names.
func newScanSnap[V any](m map[string]V, adds uint64) *scanSnap {
	sn := &scanSnap{adds: adds, entries: make([]scanEntry, 0, len(m))}
	for name := range m {
		sn.entries = append(sn.entries, scanEntry{scanHashOf(name), name})
	}
	slices.SortFunc(sn.entries, func(a, b scanEntry) int { return cmp.Compare(a.h, b.h) })
	return sn
}

// snapFor returns the snapshot a call with cursor cur reads: *cur if it
// may serve (see above), else a new one stored there.
func snapFor[V any](cur uint64, snap **scanSnap, m map[string]V, adds uint64) *scanSnap {
	if *snap == nil || (cur == 0 && (*snap).adds != adds) {
		*snap = newScanSnap(m, adds)
	}
	return *snap
}

// page calls visit with up to count names from cursor cur on, and
// returns the next cursor (0 when the snapshot is done).
func (sn *scanSnap) page(cur uint64, count int64, visit func(name string)) uint64 {
	i, _ := slices.BinarySearchFunc(sn.entries, cur, func(e scanEntry, c uint64) int { return cmp.Compare(e.h, c) })
	for n := int64(0); i < len(sn.entries) && n < count; i, n = i+1, n+1 {
		visit(sn.entries[i].name)
	}
	if i < len(sn.entries) {
		return sn.entries[i].h
	}
	return 0
}
