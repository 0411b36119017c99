package expiry

import (
	"math"
	"math/rand/v2"
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

func TestIndex_OrdersByDeadlineThenAddress(t *testing.T) {
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
	// The tie at 20 is ordered by address, whatever the order of the adds.
	lo, hi := r["a"], r["b"]
	if uintptr(unsafe.Pointer(hi)) < uintptr(unsafe.Pointer(lo)) {
		lo, hi = hi, lo
	}
	if got[1] != (Item[lock]{20, lo}) || got[2] != (Item[lock]{20, hi}) {
		t.Fatalf("a tie must be ordered by address; got %v", names(got))
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
	for _, it := range got {
		for i, l := range all {
			if l == it.Ref && i%2 == 0 {
				t.Fatalf("removed tie %d was popped", i)
			}
		}
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
			last := int64(0)
			for _, it := range got {
				d, ok := model[it.Ref]
				if !ok || d != it.Deadline || !Expired(d, now) || d < last {
					t.Fatalf("step %d: popped %v at %d (model %d, %v), after %d", step, it.Deadline, now, d, ok, last)
				}
				last = d
				delete(model, it.Ref)
			}
			if len(got) < max {
				for _, d := range model {
					if Expired(d, now) {
						t.Fatalf("step %d: a due ref was left behind", step)
					}
				}
			}
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
