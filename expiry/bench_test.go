package expiry

import (
	"fmt"
	"runtime"
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

// BenchmarkIndex_Memory reports what the index costs per ref it holds
// (B/ref: the live heap it adds, measured after a GC) with 1M refs added in
// increasing deadline order, as locks taken with one TTL are: perMs refs
// share each millisecond's deadline (1000 at 1M locks a second; 1 when
// every lock has a deadline of its own).
func BenchmarkIndex_Memory(b *testing.B) {
	const n = 1_000_000
	for _, perMs := range []int{1000, 1} {
		b.Run("perMs="+strconv.Itoa(perMs), func(b *testing.B) {
			keys := benchKeys(n)
			var perRef float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				before := liveHeap()
				b.StartTimer()
				x := NewIndex[lock]()
				for j, k := range keys {
					x.Add(k, 1_700_000_000_000+int64(j/perMs))
				}
				b.StopTimer()
				perRef = float64(liveHeap()-before) / n
				if x.Len() != n {
					b.Fatalf("Len = %d", x.Len())
				}
				b.StartTimer()
			}
			b.ReportMetric(perRef, "B/ref")
		})
	}
}

// liveHeap returns the bytes of live heap objects after a full GC.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkIndex_PopDueDense is the active expiry of locks taken at 1M a
// second (1000 share each millisecond's deadline): the server's batches of
// 256 come off the index, and as many locks are taken again 30 s later, so
// the index keeps its 1M refs.
func BenchmarkIndex_PopDueDense(b *testing.B) {
	const n, perMs, batch = 1_000_000, 1000, 256
	keys := benchKeys(n)
	x := NewIndex[lock]()
	for j, k := range keys {
		x.Add(k, 1+int64(j/perMs))
	}
	var dst []Item[lock]
	added := n
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := 2 + int64((added-n)/perMs) // the earliest deadline is due
		dst = x.PopDue(now, batch, dst[:0])
		if len(dst) == 0 {
			b.Fatalf("nothing due at %d", now)
		}
		for _, it := range dst {
			x.Add(it.Ref, 1+int64(added/perMs))
			added++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(added-n), "ns/key")
}

// BenchmarkIndex_ReleaseBatch16 is the index's share of pipelined releases
// of random locks among 1M taken at a fixed TTL (700 a millisecond, as
// bench-compare's pipelined SET NX PX takes them): each batch of 16 is
// prefetched, then removed, as the server runs a batch (Engine.Prefetch,
// then DEL); the released locks are taken again at the latest deadline
// (timed too: the timer's stop and start cost more than an Add). ns/op is
// per release and retake.
func BenchmarkIndex_ReleaseBatch16(b *testing.B) {
	const n, perMs, batch = 1_000_000, 700, 16
	keys := benchKeys(n)
	x := NewIndex[lock]()
	deadlines := make([]int64, n)
	for i, k := range keys {
		deadlines[i] = 1_700_000_000_000 + int64(i/perMs)
		x.Add(k, deadlines[i])
	}
	next := deadlines[n-1] + 1
	order := make([]int, n)
	for i := range order { // a permutation: 618_033 (≈ n/φ) is coprime with n
		order[i] = i * 618_033 % n
	}
	var sink uintptr
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		js := order[i%n : i%n+batch]
		for _, j := range js {
			sink += x.Prefetch(keys[j], deadlines[j])
		}
		for _, j := range js {
			if !x.Remove(keys[j], deadlines[j]) {
				b.Fatal("Remove missed")
			}
		}
		for _, j := range js {
			deadlines[j] = next
			x.Add(keys[j], next)
		}
		next++
	}
	_ = sink
}

// BenchmarkIndex_PopDueMassExpiry is the index's share of a mass expiry:
// 1M locks whose deadlines fall within 100 ms (10,000 share each
// millisecond), all due, popped in the server's batches of 256 until
// none is left. ns/key is the cost of popping one lock.
func BenchmarkIndex_PopDueMassExpiry(b *testing.B) {
	const n, perMs, batch = 1_000_000, 10_000, 256
	keys := benchKeys(n)
	var dst []Item[lock]
	popped := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		x := NewIndex[lock]()
		for j, k := range keys {
			x.Add(k, 1+int64(j/perMs))
		}
		b.StartTimer()
		for {
			dst = x.PopDue(1<<40, batch, dst[:0])
			popped += len(dst)
			if len(dst) < batch {
				break
			}
		}
		if x.Len() != 0 {
			b.Fatalf("%d left after the pops", x.Len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(popped), "ns/key")
}
