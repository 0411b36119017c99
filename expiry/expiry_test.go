package expiry

import (
	"math"
	"testing"
	"time"
)

func TestIndex_OrdersByDeadlineThenKey(t *testing.T) {
	x := NewIndex()
	x.Add("b", 20)
	x.Add("a", 20)
	x.Add("c", 10)
	var got []Item
	x.Scan(func(it Item) bool { got = append(got, it); return true })
	want := []Item{{10, "c"}, {20, "a"}, {20, "b"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if d, ok := x.Next(); !ok || d != 10 {
		t.Fatalf("Next = %d,%v; want 10,true", d, ok)
	}
}

func TestIndex_PopDueIsExclusiveAndBounded(t *testing.T) {
	x := NewIndex()
	for i := int64(1); i <= 10; i++ {
		x.Add(string(rune('a'+i)), i*10)
	}
	if got := x.PopDue(9, 100, nil); len(got) != 0 {
		t.Fatalf("nothing is due before the first deadline, got %v", got)
	}
	if got := x.PopDue(10, 100, nil); len(got) != 0 {
		t.Fatalf("a key lives through its deadline's millisecond; got %v", got)
	}
	if got := x.PopDue(11, 100, nil); len(got) != 1 {
		t.Fatalf("a key is gone once now > deadline; got %v", got)
	}
	if got := x.PopDue(101, 3, nil); len(got) != 3 || got[0].Deadline != 20 || got[2].Deadline != 40 {
		t.Fatalf("PopDue must return the earliest max items in order, got %v", got)
	}
	if !x.Remove(string(rune('a'+5)), 50) || x.Remove(string(rune('a'+5)), 50) {
		t.Fatal("Remove must report presence exactly once")
	}
	if x.Len() != 5 {
		t.Fatalf("Len = %d, want 5", x.Len())
	}
}

func TestIndex_PopDueRemovesTheEarliestDueInOrder(t *testing.T) {
	x := NewIndex()
	for i := int64(1); i <= 10; i++ {
		x.Add(string(rune('a'+i)), i*10)
	}
	x.Add("same", 30) // a tie on the deadline: ordered by key
	if got := x.PopDue(10, 100, nil); len(got) != 0 || x.Len() != 11 {
		t.Fatalf("a key lives through its deadline's millisecond; popped %v", got)
	}
	got := x.PopDue(31, 3, nil)
	if len(got) != 3 || got[0].Deadline != 10 || got[1].Deadline != 20 || got[2].Key != string(rune('a'+3)) {
		t.Fatalf("PopDue must pop the earliest max items in order, got %v", got)
	}
	got = x.PopDue(31, 100, got[:0])
	if len(got) != 1 || got[0].Key != "same" {
		t.Fatalf("the rest due at 31 is the tie, got %v", got)
	}
	if x.Len() != 7 || x.Remove("same", 30) {
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
