package bench

import (
	"sync/atomic"
)

// registry is the in-process record of who believes they hold which lock.
// A worker records itself after the server granted it a key and clears
// itself before it sends the release, so with a correct server no two
// workers are ever recorded for the same key at once; if one is, the
// server granted a lock that was still held: a violation.
//
// A lease may legitimately end early by expiry: a worker's lease on a key is
// known to last at least until the time it sent its acquire plus the TTL
// (the server counts the TTL from a later instant). A second holder seen
// after that point is counted as a takeover of an expired lease, not a
// violation.
//
// Each check is one compare-and-swap on a slot that, for the uncontended
// workloads, only its own worker touches; slots are laid out so each
// worker's keys are contiguous.
type registry struct {
	slots []slot
}

type slot struct {
	holder   atomic.Int32 // worker id + 1; 0 when free
	leaseEnd atomic.Int64 // ns on the run's monotonic clock
}

func newRegistry(keys int) *registry { return &registry{slots: make([]slot, keys)} }

// acquired records that worker w holds key k, with a lease known to last
// until leaseEnd. It reports false, and records w in place of the other
// holder, when another holder was recorded: the caller counts a violation
// when neither lease could have ended by now (both grants certainly
// overlap), a takeover otherwise. Checking only the other's lease would
// blame a grant whose reply was handled late: a worker descheduled between
// its grant and this call finds a later holder recorded, whose lease is
// still running, though its own grant came first and legitimately ended.
//
// now is read after the other holder's record: both grants are then known
// to have happened before it. A time read earlier could precede the other
// grant (the worker descheduled past its own lease's end in between, and
// the other worker took the expired lock) and blame a correct server.
func (r *registry) acquired(k, w int, leaseEnd int64, now func() int64) (ok, expired bool) {
	s := &r.slots[k]
	me := int32(w + 1)
	if s.holder.CompareAndSwap(0, me) {
		s.leaseEnd.Store(leaseEnd)
		return true, false
	}
	prevEnd := s.leaseEnd.Load()
	t := now()
	s.holder.Store(me)
	s.leaseEnd.Store(leaseEnd)
	return false, t >= prevEnd || t >= leaseEnd
}

// extended moves worker w's known lease end on key k forward.
func (r *registry) extended(k, w int, leaseEnd int64) {
	s := &r.slots[k]
	if s.holder.Load() == int32(w+1) {
		s.leaseEnd.Store(leaseEnd)
	}
}

// releasing clears worker w's record of key k; it must be called before the
// release is sent. It is a no-op when another worker has since been
// recorded (after an expiry or a violation).
func (r *registry) releasing(k, w int) {
	r.slots[k].holder.CompareAndSwap(int32(w+1), 0)
}
