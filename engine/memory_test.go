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

// A command that drops much data signals FreedMuch (a FLUSHALL or
// FLUSHDB of keys, a whole key of more than 64 elements or of 64 KB),
// and CollectFreed then collects unless Go has collected since: with
// collections off, used memory shows the garbage until it runs.
func TestFreedMuch_SignalsAndCollects(t *testing.T) {
	te := newTestEngine(t)
	signalled := func() bool {
		select {
		case <-te.FreedMuch():
			return true
		default:
			return false
		}
	}
	members := func(n int) []string {
		args := []string{"SADD", "s"}
		for i := range n {
			args = append(args, "m"+strconv.Itoa(i))
		}
		return args
	}
	for _, tc := range []struct {
		setup []string
		free  []string
		want  bool
	}{
		{[]string{"SET", "k", "v"}, []string{"DEL", "k"}, false},
		{members(64), []string{"UNLINK", "s"}, false},
		{members(65), []string{"UNLINK", "s"}, true},
		{members(65), []string{"DEL", "s"}, true},
		{members(65), []string{"GETDEL", "nothing"}, false},
		{[]string{"SET", "k", string(make([]byte, 64<<10-1))}, []string{"DEL", "k"}, false},
		{[]string{"SET", "k", string(make([]byte, 64<<10))}, []string{"UNLINK", "k"}, true},
		{[]string{"RPUSH", "l", "a"}, []string{"FLUSHALL"}, true},
		{[]string{"PING"}, []string{"FLUSHALL"}, false}, // nothing to flush
		{[]string{"SET", "k", "v"}, []string{"FLUSHDB", "ASYNC"}, true},
	} {
		te.do(tc.setup...)
		signalled() // (the setup's own)
		te.do(tc.free...)
		if got := signalled(); got != tc.want {
			t.Errorf("%.20q then %q: FreedMuch %v, want %v", tc.setup, tc.free, got, tc.want)
		}
		te.do("FLUSHALL")
		signalled()
	}

	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	base := te.heapNow()
	for i := 0; i < 64; i++ {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	garbage = nil
	if used := te.heapNow(); used < base+32<<20 {
		t.Fatalf("heap %d, base %d: the test made no garbage", used, base)
	}
	n := te.mem.collections.Load()
	te.CollectFreed(GCCycles() - 2) // Go collected twice since: nothing to do
	if te.mem.collections.Load() != n {
		t.Fatalf("CollectFreed collected after two collections of Go's")
	}
	te.CollectFreed(GCCycles() - 1) // once: it may have begun before the data was dropped
	if te.mem.collections.Load() != n+1 {
		t.Fatalf("CollectFreed did not collect after one collection of Go's")
	}
	te.CollectFreed(GCCycles())
	if te.mem.collections.Load() != n+2 {
		t.Fatalf("CollectFreed did not collect")
	}
	if used := te.UsedMemory(); used > base+16<<20 { // (the sample CollectFreed took)
		t.Errorf("used memory %d after CollectFreed, base %d", used, base)
	}
}
