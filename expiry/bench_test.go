package expiry

import (
	"fmt"
	"strconv"
	"testing"
)

// benchKeys returns n locks keyed by 12 bytes, as tumbler-bench's fill
// makes (the index holds refs; the engine's refs are its entries).
func benchKeys(n int) []*lock {
	keys := make([]*lock, n)
	for i := range keys {
		keys[i] = &lock{fmt.Sprintf("lk:%09d", i)}
	}
	return keys
}

// benchIndex returns an index holding keys with deadlines spread over 30 s
// from base, like locks taken with PX 30000 over time; deadlines[i] is the
// deadline of keys[i].
func benchIndex(keys []*lock, base int64) (*Index[lock], []int64) {
	x := NewIndex[lock]()
	deadlines := make([]int64, len(keys))
	for i, k := range keys {
		deadlines[i] = base + int64(i*7919%30000)
		x.Add(k, deadlines[i])
	}
	return x, deadlines
}

var benchSizes = []int{1_000, 100_000, 1_000_000}

// BenchmarkIndex_AddRemove is a lock cycle's cost in the index: a lock
// taken with a TTL (Add) then released (Remove), with n other locks held.
func BenchmarkIndex_AddRemove(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			keys := benchKeys(n + 1)
			x, _ := benchIndex(keys[:n], 1_700_000_000_000)
			k := keys[n]
			d := int64(1_700_000_030_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x.Add(k, d)
				if !x.Remove(k, d) {
					b.Fatal("Remove missed")
				}
			}
		})
	}
}

// BenchmarkIndex_Reschedule is a watchdog extension (PEXPIRE of a held
// lock): the old deadline is removed and a later one added.
func BenchmarkIndex_Reschedule(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			keys := benchKeys(n)
			x, deadlines := benchIndex(keys, 1_700_000_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % n
				if !x.Remove(keys[j], deadlines[j]) {
					b.Fatal("Remove missed")
				}
				deadlines[j] += 30_000
				x.Add(keys[j], deadlines[j])
			}
		})
	}
}

// BenchmarkIndex_PopDueReclaim is one active-expiry batch as ReclaimDue
// runs it: take the 20 earliest due keys off the index, and add as many
// new ones (so the index keeps its size), as a pass over a steady
// population of locks does.
func BenchmarkIndex_PopDueReclaim(b *testing.B) {
	const batch = 20
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			keys := benchKeys(n)
			x, _ := benchIndex(keys, 1) // deadline 0 would mean none
			var dst []Item[lock]
			next := int64(30_001)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst = x.PopDue(next, batch, dst[:0])
				if len(dst) != batch {
					b.Fatalf("%d due, want %d", len(dst), batch)
				}
				for _, it := range dst {
					x.Add(it.Ref, next)
					next++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
		})
	}
}

// BenchmarkIndex_Next is the expiry loop's "when is the next deadline?".
func BenchmarkIndex_Next(b *testing.B) {
	x, _ := benchIndex(benchKeys(100_000), 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := x.Next(); !ok {
			b.Fatal("empty")
		}
	}
}

// BenchmarkExpired is the one expiry predicate, called on every key access.
func BenchmarkExpired(b *testing.B) {
	n := 0
	for i := 0; i < b.N; i++ {
		if Expired(int64(i&1023), 512) {
			n++
		}
	}
	if n < 0 {
		b.Fatal(n)
	}
}
