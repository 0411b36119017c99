package bench

import (
	"sync"
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
// The two leases of a grant counted as a violation share an overlap: the
// release of either that then finds its lock gone or another's within its
// lease (worker.lostAt) is the same double grant seen again, and claims
// the overlap instead of counting a second violation. The grant's worker
// gets it from acquired; the holder it replaced gets it from releasing.
//
// Each check takes a per-key mutex that, for the uncontended workloads,
// only its own worker takes (one compare-and-swap to lock, one atomic add
// to unlock); slots are laid out so each worker's keys are contiguous.
type registry struct {
	slots []slot

	// displaced holds, for each holder that a grant counted as a
	// violation replaced and that has not yet called releasing, the
	// overlap of the two. It is only touched when that happens (with
	// the key's slot locked), never on a grant or release that finds
	// the slot as it should be.
	mu        sync.Mutex
	displaced map[holding]*overlap
}

type slot struct {
	mu       sync.Mutex
	holder   int32 // worker id + 1; 0 when free
	leaseEnd int64 // ns on the run's monotonic clock
}

// holding is worker w's (believed) hold of key k.
type holding struct{ k, w int }

// overlap is one grant counted as a violation, shared by the two leases
// it overlapped: the first release of either that finds its lock lost
// within its lease claims it, and is not counted again.
type overlap struct{ claimed atomic.Bool }

// overlaps are the grants counted as violations that one lease was part
// of: its own grant (acquired), and the grant that replaced it
// (releasing). Either may be nil.
type overlaps [2]*overlap

// claim reports whether one of os was not claimed yet, claiming it: a
// loss of the lease is then that counted double grant, seen again.
func (os overlaps) claim() bool {
	for _, o := range os {
		if o != nil && o.claimed.CompareAndSwap(false, true) {
			return true
		}
	}
	return false
}

func newRegistry(keys int) *registry {
	return &registry{slots: make([]slot, keys), displaced: map[holding]*overlap{}}
}

// acquired records that worker w holds key k, with a lease known to last
// until leaseEnd. It reports false, and records w in place of the other
// holder, when another holder was recorded: the caller counts a violation
// when neither lease could have ended by now (both grants certainly
// overlap), a takeover otherwise. Checking only the other's lease would
// blame a grant whose reply was handled late: a worker descheduled between
// its grant and this call finds a later holder recorded, whose lease is
// still running, though its own grant came first and legitimately ended.
// For a violation it returns the overlap w's lease now shares with the
// other holder's, which gets it from its releasing.
//
// now is read after the other holder's record: both grants are then known
// to have happened before it. A time read earlier could precede the other
// grant (the worker descheduled past its own lease's end in between, and
// the other worker took the expired lock) and blame a correct server.
func (r *registry) acquired(k, w int, leaseEnd int64, now func() int64) (ok, expired bool, ov *overlap) {
	s := &r.slots[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, prevEnd := s.holder, s.leaseEnd
	s.holder, s.leaseEnd = int32(w+1), leaseEnd
	if prev == 0 {
		return true, false, nil
	}
	t := now()
	if t >= prevEnd || t >= leaseEnd {
		return false, true, nil
	}
	ov = new(overlap)
	r.mu.Lock()
	r.displaced[holding{k, int(prev - 1)}] = ov
	r.mu.Unlock()
	return false, false, ov
}

// extended moves worker w's known lease end on key k forward.
func (r *registry) extended(k, w int, leaseEnd int64) {
	s := &r.slots[k]
	s.mu.Lock()
	if s.holder == int32(w+1) {
		s.leaseEnd = leaseEnd
	}
	s.mu.Unlock()
}

// releasing clears worker w's record of key k; it must be called before the
// release is sent. It changes nothing when another worker has since been
// recorded (after an expiry or a violation); when that grant was counted
// as a violation, it returns the overlap it shares with w's lease.
func (r *registry) releasing(k, w int) *overlap {
	s := &r.slots[k]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder == int32(w+1) {
		s.holder = 0
		return nil
	}
	h := holding{k, w}
	r.mu.Lock()
	defer r.mu.Unlock()
	ov := r.displaced[h]
	delete(r.displaced, h)
	return ov
}
