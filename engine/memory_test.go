package engine

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// garbage is where the tests below make the heap grow: set, then cleared.
var garbage [][]byte

// heapNow samples the heap afresh, as a command would 100 ms later.
func (te *testEngine) heapNow() uint64 {
	te.mem.sampledAt.Store(0)
	return te.UsedMemory()
}

// With the heap over maxmemory by garbage alone (collections off, as when
// only refused commands run and nothing allocates), a write is not
// refused: a collection runs first and the heap is sampled again. Found
// by Redis's lazyfree unit: after a FLUSHALL that emptied a full server,
// writes were refused for two minutes, until Go's periodic collection.
func TestMaxMemory_GarbageIsCollectedBeforeRefusing(t *testing.T) {
	te := newTestEngine(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	base := te.heapNow()
	te.SetMaxMemory(base + 32<<20)
	for i := 0; i < 64; i++ {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	garbage = nil // 64 MiB of garbage, never collected by itself now
	if used := te.heapNow(); used <= te.MaxMemory() {
		t.Fatalf("heap %d not over maxmemory %d: the test made no garbage", used, te.MaxMemory())
	}
	n := te.mem.collections.Load()
	te.expect("+OK", "SET", "k", "v")
	if te.mem.collections.Load() != n+1 {
		t.Errorf("collections %d, want %d", te.mem.collections.Load(), n+1)
	}
	// Garbage over the limit again right after it: within memGCEvery the
	// sample decides (the write is refused), with no second collection.
	for i := 0; i < 64; i++ {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	garbage = nil
	if used := te.heapNow(); used <= te.MaxMemory() {
		t.Fatalf("heap %d not over maxmemory %d the second time", used, te.MaxMemory())
	}
	te.mem.gcAt = time.Now().UnixNano() // as if it had just collected (making garbage takes time)
	te.expect("-"+ErrOOM, "SET", "k", "v")
	if te.mem.collections.Load() != n+1 {
		t.Errorf("a second collection ran within memGCEvery")
	}
	te.mem.gcAt -= int64(memGCEvery) // memGCEvery later
	te.expect("+OK", "SET", "k", "v")
	if te.mem.collections.Load() != n+2 {
		t.Errorf("collections %d after memGCEvery, want %d", te.mem.collections.Load(), n+2)
	}
}

// With the live heap itself over maxmemory, writes are refused after the
// collection, and the next collection waits memGCEveryFull; once the data
// is gone (FLUSHALL), the next collection lets writes in again. A script's
// first write, checked under the keyspace lock, never collects.
func TestMaxMemory_LiveDataIsRefused(t *testing.T) {
	te := newTestEngine(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	base := te.heapNow()
	val := string(make([]byte, 1<<20))
	for i := 0; i < 32; i++ {
		if got := te.do("SET", "big:"+strconv.Itoa(i), val); got != "+OK" {
			t.Fatalf("SET big:%d: %s", i, got)
		}
	}
	val = ""
	runtime.GC()
	te.SetMaxMemory(base + 16<<20)
	te.heapNow()
	n := te.mem.collections.Load()
	te.expect("-"+ErrOOM, "SET", "k", "v")
	if te.mem.collections.Load() != n+1 || !te.mem.gcFull {
		t.Fatalf("collections %d (want %d), full %v", te.mem.collections.Load(), n+1, te.mem.gcFull)
	}
	te.mem.gcAt = time.Now().UnixNano()    // (a slow machine must not let memGCEveryFull pass here)
	te.expect("-"+ErrOOM, "SET", "k", "v") // within memGCEveryFull: the sample decides
	if te.mem.collections.Load() != n+1 {
		t.Fatalf("collected again within memGCEveryFull")
	}
	te.expect(":1", "DEL", "big:0")
	te.expect("-"+ErrOOM, "SET", "k", "v") // still within memGCEveryFull
	if !te.outOfMemoryLocked() || te.mem.collections.Load() != n+1 {
		t.Fatalf("the locked check collected, or did not see the sample over")
	}
	te.mem.gcAt -= int64(memGCEveryFull) // a second later
	te.expect("-"+ErrOOM, "SET", "k", "v")
	if te.mem.collections.Load() != n+2 || !te.mem.gcFull {
		t.Fatalf("collections %d (want %d), full %v", te.mem.collections.Load(), n+2, te.mem.gcFull)
	}
	// FLUSHALL frees the data: the next write collects at once.
	te.expect("+OK", "FLUSHALL")
	te.heapNow()
	te.expect("+OK", "SET", "k", "v")
	if te.mem.collections.Load() != n+3 || te.mem.gcFull {
		t.Fatalf("collections %d (want %d), full %v", te.mem.collections.Load(), n+3, te.mem.gcFull)
	}
}
