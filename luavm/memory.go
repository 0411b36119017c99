package luavm

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// The memory bound (lua-memory-limit). gopher-lua has no allocation hook,
// so the heap a script builds (a table bomb, a concatenation loop) is
// measured from outside: a watchdog goroutine, while a Lua script runs,
// reads the Go runtime's live heap every memTick and cancels the script
// through its context, as SCRIPT KILL does, once the heap has grown by
// more than the limit since the script started. The cancellation does not
// depend on whether the script has written: a script that wrote and then
// runs away ends in an error like any other, its writes kept (Redis never
// rolls a script back).
//
// The live heap ("/gc/heap/live:bytes") is what the last garbage
// collection found reachable, so a script that only makes garbage is never
// stopped, and growth is seen at the end of the collection that follows
// it. So that this is not the collector's own, GOGC-paced one, the
// watchdog starts a collection itself when the heap's objects, garbage
// included, have grown by the limit since it last looked: the heap may
// still overshoot by what the script allocates while that collection runs
// (a doubling string concatenation, one allocation twice the last, is the
// worst case). What is allocated while that collection marks, it counts
// as live whether it is kept or not: that much is taken off its live heap
// (collect). The baseline is the heap as the run was first seen, bounded
// from above by its objects, garbage included, or measured by a
// collection then when that bound is loose. Reading the metrics takes no
// stop-the-world; the forced collections happen only for a script that
// runs past a tick and allocates that fast, or that starts after much
// allocation since the last collection.
//
// Short scripts pay nothing but a counter increment and a non-blocking
// channel send: the watchdog only ticks while scripts run, and reads the
// heap only for a script it sees running on two consecutive ticks. The
// native path (native.go) allocates nothing and is not watched.

// DefaultMemoryLimit is lua-memory-limit's default: far beyond what any
// lock script needs, small enough that a runaway script cannot take a
// typical host's memory.
const DefaultMemoryLimit = 256 << 20

// memTick is how often the watchdog looks while scripts run.
const memTick = 5 * time.Millisecond

// The runtime metrics the watchdog reads: the heap the last collection
// found reachable, the heap's objects, garbage included, and all bytes
// ever allocated.
const (
	liveHeap    = "/gc/heap/live:bytes"
	heapObjects = "/memory/classes/heap/objects:bytes"
	heapAllocs  = "/gc/heap/allocs:bytes"
)

// SetMemoryLimit sets how much the heap may grow while one script runs,
// in bytes; 0 or less means no limit.
func (vm *VM) SetMemoryLimit(n int64) { vm.memLimit.Store(max(n, 0)) }

// MemoryLimit returns the limit set by SetMemoryLimit.
func (vm *VM) MemoryLimit() int64 { return vm.memLimit.Load() }

// memStart tells the watchdog a Lua run has started; killMu is held.
func (vm *VM) memStart() {
	vm.gen++
	if vm.memLimit.Load() <= 0 {
		return
	}
	vm.watchOnce.Do(func() {
		vm.watchDone = make(chan struct{})
		go vm.watchdog(vm.watchDone)
	})
	select {
	case vm.started <- struct{}{}:
	default:
	}
}

// watchdog is the goroutine behind the memory bound. It sleeps until a
// run starts, then ticks every memTick until it finds no script running.
func (vm *VM) watchdog(done <-chan struct{}) {
	sample := []metrics.Sample{{Name: liveHeap}, {Name: heapObjects}, {Name: heapAllocs}}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-vm.started:
		}
		var gen, base, objBase uint64
		armed := false
		for {
			timer.Reset(memTick)
			select {
			case <-done:
				timer.Stop()
				return
			case <-timer.C:
			}
			vm.killMu.Lock()
			running, g := vm.running, vm.gen
			vm.killMu.Unlock()
			limit := vm.memLimit.Load()
			if !running || limit <= 0 {
				break
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 || sample[2].Value.Kind() != metrics.KindUint64 {
				return // the metrics are gone: no bound rather than a wrong one
			}
			live, objects := sample[0].Value.Uint64(), sample[1].Value.Uint64()
			if !armed || g != gen {
				// First sight of this run: its baseline. What it built
				// before this tick is at most memTick's worth. The last
				// collection's live heap may be stale by all that was
				// allocated since (a server that has just taken many
				// keys): a script was stopped for them. The heap's
				// objects, garbage included, bound what is live from
				// above; past a quarter of the limit over that live
				// heap, a collection now tells it exactly.
				gen, armed = g, true
				base, objBase = objects, objects
				if objects > live && objects-live > uint64(limit)/4 {
					base, objBase = collect(sample)
				}
				continue
			}
			if objects > objBase && objects-objBase > uint64(limit) {
				// The heap, garbage included, grew by the limit: collect
				// now rather than at the collector's own pace, so that
				// growth shows in the live heap before it doubles again.
				// Only such a collection's live heap is compared: one the
				// collector ran by itself counts whatever was allocated
				// while it marked, by how much no one can tell.
				live, objBase = collect(sample)
				if live > base && live-base > uint64(limit) {
					vm.memKill(g)
				}
			}
		}
	}
}

// collect runs a collection and returns the live heap it found and the
// heap's objects after it. What was allocated while it marked is not in
// that live heap: the collector marks it live whether it is kept or not
// (a script making garbage fast, with a heap that took long to mark, was
// stopped for it); what is kept of it shows at the next collection.
func collect(sample []metrics.Sample) (live, objects uint64) {
	allocs := sample[2].Value.Uint64()
	runtime.GC()
	metrics.Read(sample)
	live, objects = sample[0].Value.Uint64(), sample[1].Value.Uint64()
	return live - min(live, sample[2].Value.Uint64()-allocs), objects
}

// memKill cancels run gen if it is still the one running.
func (vm *VM) memKill(gen uint64) {
	vm.killMu.Lock()
	if vm.running && vm.gen == gen && vm.cancel != nil && !vm.memKilled {
		vm.memKilled = true
		vm.cancel()
	}
	vm.killMu.Unlock()
}

// stopWatchdog ends the watchdog goroutine, if it was started.
func (vm *VM) stopWatchdog() {
	vm.watchOnce.Do(func() {}) // no watchdog may start after this
	if vm.watchDone != nil {
		close(vm.watchDone)
		vm.watchDone = nil
	}
}

// memoryError is the reply to a script stopped by the memory bound.
func memoryError(w where, limit int64, err error) string {
	return engine.ErrScriptMemory + " (lua-memory-limit is " + strconv.FormatInt(limit, 10) + " bytes)" + w.at(lineOf(err, w.chunk))
}

// resetState replaces the Lua state after a run stopped by the memory
// bound. What the script built stays reachable from the old state (stale
// registers above the stack top, stale call frames holding its closures)
// until later scripts happen to overwrite them; a fresh state (about
// 200 µs, paid only here) lets the collector take it all now. Called with
// the keyspace lock held, so no run uses the scripts' functions.
func (vm *VM) resetState() {
	old := vm.L
	vm.killMu.Lock() // initState makes a new context
	vm.ro = make(map[*lua.LTable]bool)
	vm.roReal = make(map[*lua.LTable]*lua.LTable)
	vm.initState()
	vm.killMu.Unlock()
	old.Close()
	vm.mu.RLock()
	for _, s := range vm.bySHA {
		s.fn = nil // bound to the old state's environment
	}
	vm.mu.RUnlock()
	vm.stateGen++ // functions are made again from their library's code (functions.go)
}

// sizeLimit is the largest string a library function may build in one
// call: Redis's largest string, or the memory limit when that is smaller.
func (vm *VM) sizeLimit() int {
	if n := vm.memLimit.Load(); n > 0 && n < maxStringLen {
		return int(n)
	}
	return maxStringLen
}
