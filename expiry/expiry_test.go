package expiry

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// lock stands for what the engine indexes (its entries).
type lock struct{ name string }

// refs returns one distinct ref per name.
func refs(names ...string) map[string]*lock {
	m := make(map[string]*lock, len(names))
	for _, n := range names {
		m[n] = &lock{n}
	}
	return m
}

func names(items []Item[lock]) []string {
	var s []string
	for _, it := range items {
		s = append(s, it.Ref.name)
	}
	return s
}

func TestIndex_OrdersByDeadline(t *testing.T) {
	r := refs("a", "b", "c")
	x := NewIndex[lock]()
	x.Add(r["b"], 20)
	x.Add(r["a"], 20)
	x.Add(r["c"], 10)
	var got []Item[lock]
	x.Scan(func(it Item[lock]) bool { got = append(got, it); return true })
	if len(got) != 3 || got[0] != (Item[lock]{10, r["c"]}) {
		t.Fatalf("got %v, want c first", names(got))
	}
	// The tie at 20 is in no particular order, but both are there, once.
	tie := map[Item[lock]]bool{got[1]: true, got[2]: true}
	if !tie[Item[lock]{20, r["a"]}] || !tie[Item[lock]{20, r["b"]}] {
		t.Fatalf("the tie at 20 must hold a and b; got %v", names(got))
	}
	if d, ok := x.Next(); !ok || d != 10 {
		t.Fatalf("Next = %d,%v; want 10,true", d, ok)
	}
}

func TestIndex_TiesAreDistinct(t *testing.T) {
	// Many refs with one deadline (locks taken in the same millisecond)
	// are all kept, and each is removed on its own.
	x := NewIndex[lock]()
	all := make([]*lock, 1000)
	for i := range all {
		all[i] = &lock{}
		x.Add(all[i], 7)
	}
	if x.Len() != len(all) {
		t.Fatalf("Len = %d, want %d: tied deadlines must not replace each other", x.Len(), len(all))
	}
	for i, l := range all {
		if i%2 == 0 && !x.Remove(l, 7) {
			t.Fatalf("Remove of tie %d missed", i)
		}
	}
	got := x.PopDue(8, 10000, nil)
	if len(got) != len(all)/2 {
		t.Fatalf("popped %d, want %d", len(got), len(all)/2)
	}
	popped := map[*lock]bool{}
	for _, it := range got {
		for i, l := range all {
			if l == it.Ref && i%2 == 0 {
				t.Fatalf("removed tie %d was popped", i)
			}
		}
		if popped[it.Ref] || it.Deadline != 7 {
			t.Fatalf("popped %p (deadline %d) twice, or with a wrong deadline", it.Ref, it.Deadline)
		}
		popped[it.Ref] = true
	}
	if x.Len() != 0 {
		t.Fatalf("Len = %d after popping every tie", x.Len())
	}
}

func TestIndex_PopDueIsExclusiveAndBounded(t *testing.T) {
	x := NewIndex[lock]()
	all := map[int64]*lock{}
	for i := int64(1); i <= 10; i++ {
		all[i] = &lock{string(rune('a' + i))}
		x.Add(all[i], i*10)
	}
	if got := x.PopDue(9, 100, nil); len(got) != 0 {
		t.Fatalf("nothing is due before the first deadline, got %v", names(got))
	}
	if got := x.PopDue(10, 100, nil); len(got) != 0 {
		t.Fatalf("a key lives through its deadline's millisecond; got %v", names(got))
	}
	if got := x.PopDue(11, 100, nil); len(got) != 1 || got[0].Ref != all[1] {
		t.Fatalf("a key is gone once now > deadline; got %v", names(got))
	}
	if got := x.PopDue(101, 3, nil); len(got) != 3 || got[0].Deadline != 20 || got[2].Deadline != 40 {
		t.Fatalf("PopDue must return the earliest max items in order, got %v", names(got))
	}
	if !x.Remove(all[5], 50) || x.Remove(all[5], 50) {
		t.Fatal("Remove must report presence exactly once")
	}
	if x.Remove(all[6], 61) {
		t.Fatal("Remove must match the deadline too")
	}
	if x.Len() != 5 {
		t.Fatalf("Len = %d, want 5", x.Len())
	}
}

func TestIndex_PopDueRemovesTheEarliestDueInOrder(t *testing.T) {
	x := NewIndex[lock]()
	all := map[int64]*lock{}
	for i := int64(1); i <= 10; i++ {
		all[i] = &lock{string(rune('a' + i))}
		x.Add(all[i], i*10)
	}
	same := &lock{"same"}
	x.Add(same, 30) // a tie on the deadline
	if got := x.PopDue(10, 100, nil); len(got) != 0 || x.Len() != 11 {
		t.Fatalf("a key lives through its deadline's millisecond; popped %v", names(got))
	}
	got := x.PopDue(31, 3, nil)
	if len(got) != 3 || got[0].Ref != all[1] || got[1].Ref != all[2] || got[2].Deadline != 30 {
		t.Fatalf("PopDue must pop the earliest max items in order, got %v", names(got))
	}
	first := got[2].Ref
	got = x.PopDue(31, 100, got[:0])
	if len(got) != 1 || got[0].Deadline != 30 || got[0].Ref == first || (got[0].Ref != same && got[0].Ref != all[3]) {
		t.Fatalf("the rest due at 31 is the other of the tie, got %v", names(got))
	}
	if x.Len() != 7 || x.Remove(same, 30) || x.Remove(all[3], 30) {
		t.Fatalf("popped items must be gone from the index; Len = %d", x.Len())
	}
	if d, _ := x.Next(); d != 40 {
		t.Fatalf("Next = %d after popping, want 40", d)
	}
}

func TestExpired_OneRule(t *testing.T) {
	cases := []struct {
		deadline, now int64
		want          bool
	}{{0, 100, false}, {100, 99, false}, {100, 100, false}, {100, 101, true}}
	for _, c := range cases {
		if got := Expired(c.deadline, c.now); got != c.want {
			t.Errorf("Expired(%d,%d) = %v, want %v", c.deadline, c.now, got, c.want)
		}
	}
}

func TestManualClock_AdvanceAndJump(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	c := NewManualClock(start)
	m0 := c.Mono()
	c.Advance(1500 * time.Millisecond)
	if got := c.Mono() - m0; got != 1500 {
		t.Fatalf("Advance moved mono by %d ms, want 1500", got)
	}
	if got := c.Wall().Sub(start); got != 1500*time.Millisecond {
		t.Fatalf("Advance moved wall by %v", got)
	}
	c.JumpWall(-time.Hour)
	if got := c.Mono() - m0; got != 1500 {
		t.Fatalf("JumpWall must not move mono, moved to %d", got)
	}
	c.Advance(-time.Second)
	if got := c.Mono() - m0; got != 1500 {
		t.Fatalf("negative Advance must be ignored, mono moved to %d", got)
	}
}

func TestManualClock_AdvanceMonoLeavesTheWall(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000).Add(600 * time.Microsecond)
	c := NewManualClock(start)
	m0 := c.Mono()
	c.AdvanceMono(1500 * time.Millisecond)
	c.AdvanceMono(500 * time.Microsecond) // with the start's 0.6 ms, a millisecond turns
	c.AdvanceMono(-time.Second)           // ignored
	if got := c.Mono() - m0; got != 1501 {
		t.Fatalf("AdvanceMono moved mono by %d ms, want 1501", got)
	}
	if !c.Wall().Equal(start) {
		t.Fatalf("AdvanceMono moved the wall clock to %v", c.Wall())
	}
}

func TestManualClock_SubMillisecondStepsAddUp(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000).Add(700 * time.Microsecond)
	c := NewManualClock(start)
	m0 := c.Mono()
	for i := 1; i <= 20; i++ {
		c.Advance(100 * time.Microsecond)
		// the monotonic millisecond turns with the wall clock's
		mono, wall := Read(c)
		if mono-m0 != wall-start.UnixMilli() {
			t.Fatalf("after %d steps of 100µs: mono moved %d ms, wall %d ms", i, mono-m0, wall-start.UnixMilli())
		}
	}
	if got := c.Mono() - m0; got != 2 {
		t.Fatalf("2 ms in steps of 100µs moved mono by %d ms, want 2", got)
	}
	c.Advance(time.Hour + 1500*time.Microsecond)
	if got := c.Mono() - m0; got != 3_600_000+4 {
		t.Fatalf("mono moved %d ms, want 3600004 (2.7 + 1.5 rounds down to 4)", got)
	}
}

func TestSystemClock_MonotonicAndNearWall(t *testing.T) {
	c := NewSystemClock()
	a := c.Mono()
	time.Sleep(5 * time.Millisecond)
	b := c.Mono()
	if b < a+4 {
		t.Fatalf("mono did not advance: %d -> %d", a, b)
	}
	if d := b - c.Wall().UnixMilli(); d < -1000 || d > 1000 {
		t.Fatalf("mono origin should track wall time at start, off by %d ms", d)
	}
}

// TestSystemClock_MonoTicksWithWall: the monotonic ms and the wall's Unix ms
// tick together (an origin rounded to a whole ms put Mono up to 1 ms behind
// the wall, and a converted PXAT deadline that much early). The origin here
// is 0.9 ms into a millisecond: 0.2 ms later the wall is in the next one.
func TestSystemClock_MonoTicksWithWall(t *testing.T) {
	base := time.Unix(1_700_000_000, 900_000) // .0009 s: 0.9 ms into a ms
	c := &SystemClock{base: base, originNs: base.UnixNano()}
	for _, e := range []time.Duration{0, 99 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond, 1100 * time.Microsecond, 3 * time.Second} {
		if got, want := c.MonoAt(e), base.Add(e).UnixMilli(); got != want {
			t.Errorf("MonoAt(%v) = %d, want the wall's %d", e, got, want)
		}
	}
	before := time.Unix(-1, 900_000) // before 1970: UnixMilli rounds down
	c = &SystemClock{base: before, originNs: before.UnixNano()}
	if got, want := c.MonoAt(0), before.UnixMilli(); got != want {
		t.Errorf("MonoAt(0) before 1970 = %d, want %d", got, want)
	}
	// Read takes both at one instant: equal but for a ms boundary between
	// time.Now's two clock reads. (A clock made for each read: over a
	// longer life the wall clock may be slewed or stepped away from the
	// monotonic one, as CI's once was by 3 ms during this loop.)
	for i := 0; i < 1000; i++ {
		c = NewSystemClock()
		if m, w := Read(c); m != w && m != w-1 && m != w+1 {
			t.Fatalf("Read = %d, %d", m, w)
		}
	}
	m := NewManualClock(time.UnixMilli(5_000))
	m.JumpWall(time.Second)
	if mono, wall := Read(m); mono != 5_000 || wall != 6_000 {
		t.Errorf("Read(manual) = %d, %d, want 5000, 6000", mono, wall)
	}
}

func TestWallMonoConversion(t *testing.T) {
	if got := WallToMono(2_000, 500, 1_000); got != 1_500 {
		t.Fatalf("WallToMono = %d, want 1500", got)
	}
	if got := MonoToWall(1_500, 500, 1_000); got != 2_000 {
		t.Fatalf("MonoToWall = %d, want 2000", got)
	}
	if got := WallToMono(math.MaxInt64, 10, -10); got != math.MaxInt64 {
		t.Fatalf("overflow must saturate, got %d", got)
	}
	if got := WallToMono(math.MinInt64, -10, 10); got != math.MinInt64 {
		t.Fatalf("underflow must saturate, got %d", got)
	}
}

// TestIndex_AgainstAModel runs random adds, removes, reschedules and pops
// against a plain map of ref -> deadline, checking the counts, Next, and
// that pops come in deadline order and are exactly the due refs.
func TestIndex_AgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewIndex[lock]()
	model := map[*lock]int64{}
	pool := make([]*lock, 500)
	for i := range pool {
		pool[i] = &lock{strconv.Itoa(i)}
	}
	now := int64(100)
	for step := 0; step < 200000; step++ {
		l := pool[rng.IntN(len(pool))]
		switch op := rng.IntN(10); {
		case op < 4: // add, or reschedule a held one
			d := now + 1 + rng.Int64N(40) // few distinct deadlines: big ties
			if old, ok := model[l]; ok {
				if !x.Remove(l, old) {
					t.Fatalf("step %d: Remove of a present ref missed", step)
				}
			}
			x.Add(l, d)
			model[l] = d
		case op < 7: // remove, with the right or a wrong deadline
			old, ok := model[l]
			if rng.IntN(4) == 0 {
				if x.Remove(l, old+1) {
					t.Fatalf("step %d: Remove with a wrong deadline succeeded", step)
				}
				continue
			}
			if x.Remove(l, old) != ok {
				t.Fatalf("step %d: Remove reported %v, want %v", step, !ok, ok)
			}
			delete(model, l)
		case op < 9:
			now += rng.Int64N(3)
		default: // pop a batch
			max := 1 + rng.IntN(50)
			got := x.PopDue(now, max, nil)
			checkPopped(t, fmt.Sprintf("step %d", step), model, got, now, max)
		}
		if x.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, x.Len(), len(model))
		}
		if step%1000 == 0 {
			if d, ok := x.Next(); ok {
				for _, md := range model {
					if md < d {
						t.Fatalf("step %d: Next %d but %d is held", step, d, md)
					}
				}
			}
		}
	}
}

// checkIndex verifies the index's structure against the rules of group and
// refSet: groups in increasing deadline order, each holding at least one
// ref; a set's table no smaller than setMin and as long as its allocation
// allows, at most 3/4 full and, when larger than setMin, at least 1/8 full
// (it shrinks as it drains, unless a pop has begun: see shrinkIfSparse);
// its count the refs in its table, each reachable from its home
// slot without crossing a free one (what backward-shift deletion keeps); a
// set of one ref only for a ref at an odd address (an even one stands
// alone); and Len the refs of all groups.
func checkIndex[T any](t *testing.T, x *Index[T]) {
	t.Helper()
	refs, first, last := 0, true, int64(0)
	bad := ""
	sum := new(big.Int) // of the deadlines, for MeanDeadline
	x.tr.Scan(func(g group) bool {
		k := int64(1)
		if isSet(g.p) {
			k = int64(setOf[T](g.p).n)
		}
		sum.Add(sum, new(big.Int).Mul(big.NewInt(g.dl), big.NewInt(k)))
		if !first && g.dl <= last {
			bad = "groups out of deadline order at " + strconv.FormatInt(g.dl, 10)
			return false
		}
		first, last = false, g.dl
		if g.p == nil {
			bad = "a group without refs"
			return false
		}
		if !isSet(g.p) {
			refs++
			return true
		}
		s := setOf[T](g.p)
		size, held := len(s.slots), 0
		if size < setMin || size != cap(s.slots) {
			bad = "a set's table has " + strconv.Itoa(size) + " slots"
			return false
		}
		for i, r := range s.slots {
			if r == nil {
				continue
			}
			held++
			for j := s.home(r); j != i; j = s.next(j) {
				if s.slots[j] == nil {
					bad = "a ref is past a free slot from its home"
					return false
				}
			}
		}
		switch {
		case held != int(s.n) || held == 0:
			bad = "a set holds " + strconv.Itoa(held) + " refs, counts " + strconv.Itoa(int(s.n))
		case 4*held > 3*size:
			bad = "a set is over 3/4 full"
		case size > setMin && 8*held < size && s.cur == uint32(size-1):
			bad = "a set under 1/8 full was not shrunk"
		case held == 1 && !isSet(unsafe.Pointer(s.any())):
			bad = "a set holds one ref at an even address"
		}
		refs += held
		return bad == ""
	})
	if bad != "" {
		t.Fatal(bad)
	}
	if refs != x.Len() {
		t.Fatalf("the groups hold %d refs, Len is %d", refs, x.Len())
	}
	mean, ok := x.MeanDeadline()
	if ok != (refs > 0) {
		t.Fatalf("MeanDeadline ok=%v with %d refs", ok, refs)
	}
	if ok {
		if want := new(big.Int).Quo(sum, big.NewInt(int64(refs))); want.Int64() != mean || !want.IsInt64() {
			t.Fatalf("MeanDeadline = %d, the deadlines' mean is %s", mean, want)
		}
	}
	for i, c := range x.cache {
		if c.p == nil {
			continue
		}
		if g, ok := x.tr.Get(group{dl: c.dl}); uint64(c.dl)%cacheSlots != uint64(i) || !ok || g.p != c.p {
			t.Fatalf("cache slot %d holds deadline %d's group %p; the tree has %p (present %v)", i, c.dl, c.p, g.p, ok)
		}
	}
}

// contents returns what Scan visits as ref -> deadline, failing if a ref
// comes twice or deadlines go backwards.
func contents[T any](t *testing.T, x *Index[T]) map[*T]int64 {
	t.Helper()
	m := map[*T]int64{}
	first, last := true, int64(0)
	x.Scan(func(it Item[T]) bool {
		if _, dup := m[it.Ref]; dup || (!first && it.Deadline < last) {
			t.Fatalf("Scan gave %p twice, or deadline %d after %d", it.Ref, it.Deadline, last)
		}
		m[it.Ref] = it.Deadline
		first, last = false, it.Deadline
		return true
	})
	return m
}

// runModel drives x through rounds of bursts of adds to a few nearby
// deadlines (thousands of refs each, growing sets; some due already, to
// groups a pop may have taken part of), reschedules, removes
// (present with the right deadline, present with a wrong one, absent from a
// deadline that has a group), and PopDue batches of various sizes (which
// pop sets in part), against a plain map of ref -> deadline. After each
// round it checks the structure, Scan against the model, Next, and Scan's
// early stop; every 40 rounds it clears the index.
func runModel[T any](t *testing.T, seed uint64, pool []*T, rounds int, spread int64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	x := NewIndex[T]()
	model := map[*T]int64{}
	now := int64(1000)
	pick := func() *T { return pool[rng.IntN(len(pool))] }
	for round := 0; round < rounds; round++ {
		for n := rng.IntN(len(pool)); n > 0; n-- { // a burst
			r, d := pick(), now+1+rng.Int64N(spread)
			if rng.IntN(4) == 0 { // due already (SET PXAT in the past), maybe to a group popped in part
				d = now - rng.Int64N(2)
			}
			if old, ok := model[r]; ok {
				if rng.IntN(8) == 0 {
					x.Add(r, old) // again, with its deadline: no change
					continue
				}
				if !x.Remove(r, old) {
					t.Fatalf("round %d: Remove of a present ref missed", round)
				}
			}
			x.Add(r, d)
			model[r] = d
		}
		if x.Len() != len(model) {
			t.Fatalf("round %d: Len %d after adds, model %d", round, x.Len(), len(model))
		}
		for n := rng.IntN(len(pool) / 2); n > 0; n-- {
			r := pick()
			old, ok := model[r]
			switch {
			case rng.IntN(3) == 0: // a wrong deadline, likely some group's
				wrong := now + 1 + rng.Int64N(spread)
				if ok && wrong == old {
					wrong++
				}
				if x.Remove(r, wrong) {
					t.Fatalf("round %d: Remove with a wrong deadline succeeded", round)
				}
			case !ok: // absent, from a deadline that likely has a group
				if x.Remove(r, now+1+rng.Int64N(spread)) {
					t.Fatalf("round %d: Remove of an absent ref succeeded", round)
				}
			default:
				if !x.Remove(r, old) {
					t.Fatalf("round %d: Remove of a present ref missed", round)
				}
				delete(model, r)
			}
		}
		if x.Len() != len(model) {
			t.Fatalf("round %d: Len %d after removes, model %d", round, x.Len(), len(model))
		}
		now += rng.Int64N(spread)
		for n := rng.IntN(4); n > 0; n-- {
			max := []int{1, 3, 64, 256, 1000, 5000}[rng.IntN(6)]
			got := x.PopDue(now, max, nil)
			if len(got) > max {
				t.Fatalf("round %d: popped %d, max %d", round, len(got), max)
			}
			checkPopped(t, fmt.Sprintf("round %d", round), model, got, now, max)
		}
		checkIndex(t, x)
		got := contents(t, x)
		if len(got) != len(model) {
			t.Fatalf("round %d: Scan gave %d refs, model %d", round, len(got), len(model))
		}
		least, any := int64(0), false
		for r, d := range model {
			if got[r] != d {
				t.Fatalf("round %d: Scan gave deadline %d, model %d", round, got[r], d)
			}
			if !any || d < least {
				least, any = d, true
			}
		}
		if d, ok := x.Next(); ok != any || d != least {
			t.Fatalf("round %d: Next = %d,%v; want %d,%v", round, d, ok, least, any)
		}
		if x.Len() > 0 {
			stop, calls := 1+rng.IntN(x.Len()), 0
			x.Scan(func(Item[T]) bool { calls++; return calls < stop })
			if calls != stop {
				t.Fatalf("round %d: Scan made %d calls, fn returned false at %d", round, calls, stop)
			}
		}
		if round%40 == 39 {
			x.Clear()
			clear(model)
			if _, ok := x.Next(); ok || x.Len() != 0 || len(contents(t, x)) != 0 {
				t.Fatalf("round %d: Clear left refs", round)
			}
		}
	}
}

// TestIndex_ManyRefsPerDeadlineAgainstAModel is the model test with
// thousands of refs per deadline, as at 1M locks a second.
func TestIndex_ManyRefsPerDeadlineAgainstAModel(t *testing.T) {
	pool := make([]*lock, 12000)
	for i := range pool {
		pool[i] = &lock{strconv.Itoa(i)}
	}
	runModel(t, 1, pool, 120, 4)
	runModel(t, 2, pool, 60, 60) // sparser: singles and small sets
	// Deadlines over 25 times the group cache: many share a cache slot.
	runModel(t, 5, pool, 40, 25*cacheSlots)
}

// TestIndex_OddAddressesAgainstAModel runs the model with refs at odd
// addresses (a T of 1-byte alignment), which are kept in sets even alone.
func TestIndex_OddAddressesAgainstAModel(t *testing.T) {
	buf := make([]byte, 8000)
	pool := make([]*byte, len(buf))
	odd := 0
	for i := range buf {
		pool[i] = &buf[i]
		if uintptr(unsafe.Pointer(pool[i]))&1 != 0 {
			odd++
		}
	}
	if odd != len(buf)/2 {
		t.Fatalf("%d of %d refs at odd addresses", odd, len(buf))
	}
	runModel(t, 3, pool, 80, 3)
	runModel(t, 4, pool, 40, 3000) // mostly one ref per deadline

	x := NewIndex[byte]()
	x.Add(pool[1], 5) // alone, but odd: a set of one
	if g, _ := x.tr.Min(); !isSet(g.p) || x.Len() != 1 {
		t.Fatal("a ref at an odd address must be kept in a set")
	}
	if x.Remove(pool[3], 5) || !x.Remove(pool[1], 5) || x.tr.Len() != 0 || x.Len() != 0 {
		t.Fatal("Remove of the odd ref must remove its group")
	}
}

// TestIndex_GroupGrowsShrinksAndTurnsSingle follows one deadline's group
// from one ref to a set of 5000 and back, by removes and partial pops: its
// table grows and shrinks (checkIndex checks the load each time), and one
// ref left stands alone again.
func TestIndex_GroupGrowsShrinksAndTurnsSingle(t *testing.T) {
	x := NewIndex[lock]()
	all := make([]*lock, 5000)
	for i := range all {
		all[i] = &lock{strconv.Itoa(i)}
	}
	slots := func() int {
		t.Helper()
		g, ok := x.tr.Get(group{dl: 9})
		if !ok || !isSet(g.p) {
			t.Fatalf("deadline 9 holds no set (%v)", ok)
		}
		return len(setOf[lock](g.p).slots)
	}
	single := func(want *lock) {
		t.Helper()
		if g, ok := x.tr.Get(group{dl: 9}); !ok || g.p != unsafe.Pointer(want) {
			t.Fatal("deadline 9 must hold its one ref alone")
		}
	}
	x.Add(all[0], 9)
	single(all[0])
	x.Add(all[1], 9)
	if n := slots(); n != setMin {
		t.Fatalf("a set of two has %d slots, want %d", n, setMin)
	}
	grown := setMin
	for _, r := range all[2:] {
		x.Add(r, 9)
		if n := slots(); n != grown {
			if n < grown {
				t.Fatal("an add shrank the table")
			}
			grown = n
			checkIndex(t, x)
		}
	}
	checkIndex(t, x)
	if x.Len() != 5000 || x.tr.Len() != 1 || grown < 5000*4/3 {
		t.Fatalf("5000 refs: %d slots, Len %d, %d groups", grown, x.Len(), x.tr.Len())
	}
	for _, r := range all[1000:] {
		if !x.Remove(r, 9) {
			t.Fatal("Remove missed")
		}
	}
	checkIndex(t, x) // at least 1/8 full: it shrank
	if n := slots(); n >= grown {
		t.Fatalf("1000 refs left: %d slots, as many as for 5000", n)
	}
	before := slots()
	got := x.PopDue(10, 990, nil) // in part: the set is due, and keeps its table
	checkIndex(t, x)
	if n := slots(); len(got) != 990 || n != before || x.Len() != 10 {
		t.Fatalf("10 refs left: popped %d, %d slots (%d before), Len %d", len(got), n, before, x.Len())
	}
	left := contents(t, x)
	for r := range left {
		if len(left) > 1 {
			x.Remove(r, 9)
			delete(left, r)
		}
	}
	for r := range left {
		single(r)
		x.Add(all[4999], 9)
		slots()
		if got = x.PopDue(10, 1, got[:0]); len(got) != 1 {
			t.Fatal("PopDue(1) must pop one")
		}
		if got[0].Ref == r {
			r = all[4999]
		}
		single(r) // a partial pop to one ref turns the set back too
		checkIndex(t, x)
		if got = x.PopDue(10, 5, got[:0]); len(got) != 1 || got[0].Ref != r {
			t.Fatal("the last ref must pop")
		}
	}
	if _, ok := x.Next(); ok || x.Len() != 0 {
		t.Fatal("the index must be empty")
	}
}

// longestRun returns the longest run of occupied slots in s, counting a
// run that wraps past the table's end as one.
func longestRun[T any](s *refSet[T]) int {
	best, run := 0, 0
	for _, r := range append(s.slots, s.slots...) { // twice: the wrap
		if r == nil {
			run = 0
			continue
		}
		run++
		best = max(best, run)
	}
	return min(best, len(s.slots))
}

// TestIndex_PopsKeepProbeRunsShort pops a group of 20,000 refs in the
// expiry loop's batches of 256, and removes some of its refs between the
// pops (a GET finding an expired key deletes it): no run of occupied
// slots may grow longer than the longest the set had before the pops.
// The refs a pop leaves are those of the slots below where it stopped,
// homed in a narrow band of hashes; a set that shrank to a table about
// twice their number (as a set drained by removals does) put them all
// in one run as long as the set, and every later pop and removal walked
// it: BenchmarkIndex_PopDueMassExpiry cost six times as much.
func TestIndex_PopsKeepProbeRunsShort(t *testing.T) {
	const n, batch = 20_000, 256
	x := NewIndex[lock]()
	all := make([]*lock, n)
	for i := range all {
		all[i] = &lock{strconv.Itoa(i)}
		x.Add(all[i], 9)
	}
	set := func() *refSet[lock] {
		t.Helper()
		g, ok := x.tr.Get(group{dl: 9})
		if !ok || !isSet(g.p) {
			t.Fatalf("deadline 9 holds no set (%v)", ok)
		}
		return setOf[lock](g.p)
	}
	limit := longestRun(set())
	popped := map[*lock]bool{}
	for round := 0; x.Len() > batch; round++ {
		for _, it := range x.PopDue(10, batch, nil) {
			popped[it.Ref] = true
		}
		if round%4 == 0 { // a removal between pops, of a ref still held
			for _, r := range all {
				if !popped[r] {
					if !x.Remove(r, 9) {
						t.Fatal("Remove missed a ref still held")
					}
					popped[r] = true
					break
				}
			}
		}
		checkIndex(t, x)
		if got := longestRun(set()); got > limit {
			t.Fatalf("after %d pops, %d refs left: a run of %d slots (at most %d before the pops)", round+1, x.Len(), got, limit)
		}
	}
	for _, it := range x.PopDue(10, batch, nil) {
		popped[it.Ref] = true
	}
	if x.Len() != 0 || len(popped) != n {
		t.Fatalf("Len %d after the last pop, %d distinct refs popped or removed", x.Len(), len(popped))
	}
}

// TestIndex_RemoveAbsentChangesNothing removes, from a deadline holding one
// ref, a small set and a big one, a ref that is not there: Remove must
// report false and leave every slot as it was. Prefetch, of refs present
// and absent, must change nothing either.
func TestIndex_RemoveAbsentChangesNothing(t *testing.T) {
	for _, n := range []int{1, 2, 1000} {
		x := NewIndex[lock]()
		held := make([]*lock, n)
		for i := range held {
			held[i] = &lock{}
			x.Add(held[i], 5)
		}
		other := &lock{}
		x.Add(other, 6)
		g, _ := x.tr.Get(group{dl: 5})
		var before []*lock
		if isSet(g.p) {
			before = append(before, setOf[lock](g.p).slots...)
		}
		for _, try := range []struct {
			r  *lock
			dl int64
		}{{&lock{}, 5}, {&lock{}, 4}, {other, 5}, {held[0], 6}, {held[n-1], 7}} {
			x.Prefetch(try.r, try.dl)
			if x.Remove(try.r, try.dl) {
				t.Fatalf("%d held: Remove of an absent pair at %d reported true", n, try.dl)
			}
		}
		for _, r := range held {
			x.Prefetch(r, 5)
		}
		if x.Len() != n+1 || x.tr.Len() != 2 {
			t.Fatalf("%d held: Len %d, %d groups after absent removes", n, x.Len(), x.tr.Len())
		}
		g2, _ := x.tr.Get(group{dl: 5})
		if g2 != g {
			t.Fatalf("%d held: the group changed", n)
		}
		if isSet(g.p) {
			s := setOf[lock](g.p)
			if int(s.n) != n || len(s.slots) != len(before) {
				t.Fatalf("%d held: the set changed size", n)
			}
			for i := range before {
				if s.slots[i] != before[i] {
					t.Fatalf("%d held: slot %d changed", n, i)
				}
			}
		}
		checkIndex(t, x)
		for _, r := range held {
			if !x.Remove(r, 5) {
				t.Fatalf("%d held: a held ref was lost", n)
			}
		}
	}
}

// TestIndex_AddIsIdempotent: adding a ref again with the deadline it has
// (alone, or in a set) changes nothing.
func TestIndex_AddIsIdempotent(t *testing.T) {
	x := NewIndex[lock]()
	a, b := &lock{"a"}, &lock{"b"}
	x.Add(a, 3)
	x.Add(a, 3)
	if x.Len() != 1 || len(contents(t, x)) != 1 {
		t.Fatalf("a ref added twice alone: Len %d", x.Len())
	}
	x.Add(b, 3)
	x.Add(b, 3)
	x.Add(a, 3)
	if x.Len() != 2 || len(contents(t, x)) != 2 {
		t.Fatalf("refs added twice to a set: Len %d", x.Len())
	}
	checkIndex(t, x)
}

// TestIndex_AnyInt64Deadline: deadlines are any int64 but 0 (PX near
// MaxInt64 minus now; PXAT in the past after a wall-clock jump gives a
// negative one), including those with bit 62 set, alone and in sets.
func TestIndex_AnyInt64Deadline(t *testing.T) {
	dls := []int64{math.MinInt64, -1<<62 - 1, -1 << 62, -5, -1, 1, 1<<62 - 1, 1 << 62, 1<<62 + 1, math.MaxInt64 - 1, math.MaxInt64}
	x := NewIndex[lock]()
	want := map[*lock]int64{}
	for i, d := range dls {
		for j := 0; j <= i%3; j++ { // one, two or three refs
			r := &lock{}
			x.Add(r, d)
			want[r] = d
		}
	}
	checkIndex(t, x)
	got := contents(t, x)
	for r, d := range want {
		if got[r] != d {
			t.Fatalf("deadline %d came back as %d", d, got[r])
		}
	}
	if d, _ := x.Next(); d != math.MinInt64 {
		t.Fatalf("Next = %d", d)
	}
	removed, never := 0, 0
	for r, d := range want {
		if d == 1<<62 {
			if x.Remove(r, d^1<<62) || !x.Remove(r, d) || x.Remove(r, d) {
				t.Fatal("Remove at 1<<62 must find exactly that deadline")
			}
			removed++
		}
		if d == math.MaxInt64 {
			never++
		}
	}
	due := x.PopDue(math.MaxInt64, 100, nil)
	for i, it := range due {
		if it.Deadline == math.MaxInt64 || want[it.Ref] != it.Deadline || (i > 0 && it.Deadline < due[i-1].Deadline) {
			t.Fatalf("popped deadline %d (ref's %d) after %d", it.Deadline, want[it.Ref], due[max(i-1, 0)].Deadline)
		}
	}
	if len(due) != len(want)-removed-never || x.Len() != never || removed == 0 || never == 0 {
		t.Fatalf("popped %d of %d (%d removed), Len %d, want %d never due", len(due), len(want), removed, x.Len(), never)
	}
}

// TestIndex_MeanDeadlineAndCountDue: the mean follows adds, removes and
// pops, without overflow at the ends of int64; CountDue counts the refs
// past their deadline, sets included, and stops at its group budget.
func TestIndex_MeanDeadlineAndCountDue(t *testing.T) {
	x := NewIndex[lock]()
	if _, ok := x.MeanDeadline(); ok {
		t.Fatal("an empty index has no mean")
	}
	a, b, c, d := &lock{}, &lock{}, &lock{}, &lock{}
	x.Add(a, 1000)
	x.Add(b, 1000) // a set of two
	x.Add(c, 4000)
	if m, _ := x.MeanDeadline(); m != 2000 {
		t.Fatalf("mean = %d, want 2000", m)
	}
	if n, all := x.CountDue(1000, 10); n != 0 || !all { // due only once now > deadline
		t.Fatalf("CountDue(1000) = %d, %v", n, all)
	}
	if n, all := x.CountDue(1001, 10); n != 2 || !all {
		t.Fatalf("CountDue(1001) = %d, %v; want the set's 2", n, all)
	}
	if n, all := x.CountDue(5000, 1); n != 2 || all {
		t.Fatalf("CountDue(5000, one group) = %d, %v; want 2, incomplete", n, all)
	}
	if n, all := x.CountDue(5000, 2); n != 3 || !all {
		t.Fatalf("CountDue(5000) = %d, %v", n, all)
	}
	x.Remove(c, 4000)
	x.Add(d, -3000)
	if m, _ := x.MeanDeadline(); m != -333 { // (1000+1000-3000)/3, toward zero
		t.Fatalf("mean = %d, want -333", m)
	}
	x.PopDue(1001, 10, nil)
	if m, _ := x.MeanDeadline(); x.Len() != 0 {
		t.Fatalf("left %d refs, mean %d", x.Len(), m)
	}
	for i := 0; i < 1000; i++ {
		x.Add(&lock{}, math.MaxInt64-int64(i%3))
	}
	x.Add(&lock{}, math.MinInt64)
	checkIndex(t, x)
	x.Clear()
	if _, ok := x.MeanDeadline(); ok {
		t.Fatal("a cleared index has no mean")
	}
	x.Add(a, 7)
	if m, _ := x.MeanDeadline(); m != 7 {
		t.Fatalf("after Clear the sum restarts: mean %d", m)
	}
}

// gcRef is a ref with contents a collected and reused object would lose.
type gcRef struct {
	id   int
	sum  [6]int64
	name string
}

// TestIndex_KeepsRefsAlive: refs reachable only through the index, alone
// and in sets, survive collections while other objects of their size are
// allocated, with their contents intact.
func TestIndex_KeepsRefsAlive(t *testing.T) {
	const n = 30000
	x := NewIndex[gcRef]()
	for i := 0; i < n; i++ {
		r := &gcRef{id: i, name: "ref" + strconv.Itoa(i)}
		for j := range r.sum {
			r.sum[j] = int64(i*7 + j)
		}
		d := int64(1 + i) // the first 1000 alone
		if i >= 1000 {
			d = int64(2000 + i%7) // the rest in 7 sets
		}
		x.Add(r, d)
	}
	var junk [][]*gcRef
	for round := 0; round < 5; round++ {
		runtime.GC()
		js := make([]*gcRef, n)
		for i := range js {
			js[i] = &gcRef{id: -1, sum: [6]int64{-1, -1, -1, -1, -1, -1}, name: "junk"}
		}
		junk = append(junk, js)
	}
	seen := make([]bool, n)
	x.Scan(func(it Item[gcRef]) bool {
		r := it.Ref
		if r.id < 0 || r.id >= n || seen[r.id] || r.name != "ref"+strconv.Itoa(r.id) {
			t.Fatalf("a ref came back as id %d, name %q", r.id, r.name)
		}
		for j, v := range r.sum {
			if v != int64(r.id*7+j) {
				t.Fatalf("ref %d lost its contents", r.id)
			}
		}
		seen[r.id] = true
		return true
	})
	for i, ok := range seen {
		if !ok {
			t.Fatalf("ref %d is gone", i)
		}
	}
	runtime.KeepAlive(junk)
}

// checkPopped checks a PopDue batch against the model (ref -> deadline)
// and removes the popped refs from it: each popped ref was there with
// that deadline, due, in deadline order; and a batch short of max left no
// due ref behind.
func checkPopped[T any](t *testing.T, where string, model map[*T]int64, got []Item[T], now int64, max int) {
	t.Helper()
	for i, it := range got {
		d, ok := model[it.Ref]
		if !ok || d != it.Deadline || !Expired(d, now) || (i > 0 && d < got[i-1].Deadline) {
			t.Fatalf("%s: popped deadline %d at %d (model %d, %v)", where, it.Deadline, now, d, ok)
		}
		delete(model, it.Ref)
	}
	if len(got) < max {
		for _, d := range model {
			if Expired(d, now) {
				t.Fatalf("%s: a due ref was left behind", where)
			}
		}
	}
}
