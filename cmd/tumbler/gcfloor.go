package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The heap floor. Go collects once the heap has grown by GOGC percent
// (100) over what the last collection found live, and not before 4 MB
// (scaled by GOGC likewise). A server whose data is small (a lock
// server's usually is: a few megabytes) therefore collects every two or
// three megabytes allocated, and a workload that makes garbage fast pays
// for each collection's fixed costs over and over: redis-benchmark -t set
// -d 100000 (every SET replaces a 100 KB value) ran about 600 collections
// a second, and with them the pages the heap returned to the system and
// faulted back. keepHeapFloor raises GOGC while the live heap is small, so
// that the next collection comes when the heap reaches floor bytes, and
// lets it back down to 100 as the live heap grows past half the floor:
// from there Go's own pacing is unchanged. Memory held between
// collections is at most the floor's; a quiet server makes no garbage and
// holds nothing more.
//
// While maxmemory is set the floor is at most half of it: used memory
// counts garbage not yet collected (engine/memory.go), which must not by
// itself pass the limit. GOGC in the environment is the operator's: then
// nothing is changed.

// defaultHeapFloor is the heap the binary lets garbage grow to before a
// collection while its live heap is small.
const defaultHeapFloor = 32 << 20

// goHeapMinimum is the runtime's defaultHeapMinimum: the goal is never
// below it times GOGC / 100.
const goHeapMinimum = 4 << 20

// heapFloorPercent returns the GOGC that makes the next goal about floor
// bytes for a live heap of live bytes: Go's goal is the larger of
// live·(1+p/100) and goHeapMinimum·p/100, so p is the smaller of what
// brings the first to floor and what keeps the second within it, and
// never below 100.
func heapFloorPercent(live, floor uint64) int {
	if floor == 0 || live*2 >= floor {
		return 100
	}
	p := floor * 100 / goHeapMinimum
	if live > 0 {
		p = min(p, (floor-live)*100/live)
	}
	return int(max(p, 100))
}

// heapFloor re-computes GOGC after every collection.
type heapFloor struct {
	floor  uint64
	maxmem func() uint64 // maxmemory in bytes; 0 = none

	mu      sync.Mutex
	pct     int // what GOGC was last set to
	stopped bool
	sample  [1]metrics.Sample
}

// gcSentinel is allocated after each collection and dropped at once: its
// cleanup runs after the next one. It holds a pointer so that it is not
// one of the tiny objects the runtime packs together.
type gcSentinel struct{ _ *byte }

// keepHeapFloor starts the heap floor (when GOGC is not in the
// environment). stop ends it and puts GOGC back to 100.
func keepHeapFloor(floor uint64, maxmem func() uint64) (stop func()) {
	if _, set := lookupGOGC(); set || floor == 0 {
		return func() {}
	}
	h := &heapFloor{floor: floor, maxmem: maxmem, pct: 100}
	h.sample[0].Name = "/gc/heap/live:bytes"
	h.adjust()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.stopped = true
		debug.SetGCPercent(100)
	}
}

func lookupGOGC() (string, bool) { return os.LookupEnv("GOGC") }

// adjust sets GOGC for the live heap the last collection found, then
// arranges to be called again after the next one.
func (h *heapFloor) adjust() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	metrics.Read(h.sample[:])
	var live uint64
	if h.sample[0].Value.Kind() == metrics.KindUint64 {
		live = h.sample[0].Value.Uint64()
	}
	floor := h.floor
	if mm := h.maxmem(); mm > 0 {
		floor = min(floor, mm/2)
	}
	if p := heapFloorPercent(live, floor); p != h.pct {
		debug.SetGCPercent(p)
		h.pct = p
	}
	runtime.AddCleanup(new(gcSentinel), func(h *heapFloor) { h.adjust() }, h)
}
