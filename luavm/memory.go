package luavm

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// The memory bound (lua-memory-limit). gopher-lua has no allocation hook,
// so the heap a script builds (a table bomb, a concatenation loop) is
// measured from outside: a watchdog goroutine, while a Lua script runs,
// reads the Go runtime's heap every memTick, and has the script measure
// it when it may have grown by the limit since the script started; past
// the limit the script is cancelled through its context, as SCRIPT KILL
// does. The cancellation does not depend on whether the script has
// written: a script that wrote and then runs away ends in an error like
// any other, its writes kept (Redis never rolls a script back).
//
// The measure is the live heap ("/gc/heap/live:bytes"), what a garbage
// collection found reachable, so a script that only makes garbage is
// never stopped. The collection is one the script itself runs, paused
// where gopher-lua checks the run's context before each instruction
// (runContext.Done): the script allocates nothing while it is marked, so
// the live heap is what it holds, and the collector has every core. (The
// watchdog used to collect beside the running script: under GOMAXPROCS=1
// the collector had a quarter of the one core, a 250 MB table of string
// keys took it 40 s to mark while the script went on growing it, and
// what the script allocated meanwhile, taken off the live heap as
// garbage the collection could not tell from kept memory, hid the
// growth: the script grew the heap past 9 GB. Unpinned, it took 5 to
// 33 s and 0.6 to 1.3 GB of RSS under the 256 MB default.) What other goroutines
// allocate while it marks is still taken off (collect).
//
// The watchdog asks for a measure when the heap's objects, garbage
// included, pass next: first the baseline plus the limit; after a
// measure, the live heap it found plus what is left of the limit, or half
// the limit when less is left, so that a script close to the limit and
// making garbage is not collected over and over (it pays one collection
// each half of the limit it allocates). The heap, its garbage included,
// so stays within about 1.5 times the limit over the baseline, plus what
// a script allocates in a tick, and a script past the limit is stopped
// by at most half the limit more (a table of string keys, under the
// 256 MB default: 4 to 7 s and 430 MB of RSS, with one core as with
// two). The baseline is the heap as the run was first seen, bounded from
// above by its objects, garbage included, or measured by a collection
// then when that bound is loose. Reading the metrics takes no stop-the-world; the
// collections happen only for a script that runs past a tick and
// allocates that fast, or that starts after much allocation since the
// last collection. A script inside one long library call measures when
// the call checks for SCRIPT KILL (runContext.Err), or after it.
//
// Short scripts pay nothing but a counter increment and a non-blocking
// channel send: the watchdog only ticks while scripts run, and reads the
// heap only for a script it sees running on two consecutive ticks. The
// context's check before each instruction is one load of a flag (and
// replaces context.WithCancel's Done, which cost as much). The native
// path (native.go) allocates nothing and is not watched.

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

// memWatch is the memory bound's state for the run the watchdog last
// saw; mu guards it, and is held while the run measures.
type memWatch struct {
	mu     sync.Mutex
	gen    uint64 // the run
	base   uint64 // its baseline: the live heap as it started
	next   uint64 // the heap's objects past which it is measured
	rebase bool   // the measure asked for is the baseline
	sample []metrics.Sample
}

// memSamples returns the samples of the runtime metrics the memory bound
// reads.
func memSamples() []metrics.Sample {
	return []metrics.Sample{{Name: liveHeap}, {Name: heapObjects}, {Name: heapAllocs}}
}

// watchdog is the goroutine behind the memory bound. It sleeps until a
// run starts, then ticks every memTick until it finds no script running.
func (vm *VM) watchdog(done <-chan struct{}) {
	sample := memSamples()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-vm.started:
		}
		for {
			timer.Reset(memTick)
			select {
			case <-done:
				timer.Stop()
				return
			case <-timer.C:
			}
			vm.killMu.Lock()
			running, g, ctx := vm.running, vm.gen, vm.rctx
			vm.killMu.Unlock()
			limit := vm.memLimit.Load()
			if !running || limit <= 0 {
				break
			}
			w := &vm.mem
			w.mu.Lock() // (read after a measure that was under way, not before it)
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 || sample[2].Value.Kind() != metrics.KindUint64 {
				w.mu.Unlock()
				return // the metrics are gone: no bound rather than a wrong one
			}
			live, objects := sample[0].Value.Uint64(), sample[1].Value.Uint64()
			if w.gen != g {
				// First sight of this run: its baseline. What it built
				// before this tick is at most memTick's worth. The last
				// collection's live heap may be stale by all that was
				// allocated since (a server that has just taken many
				// keys): a script was stopped for them. The heap's
				// objects, garbage included, bound what is live from
				// above; past a quarter of the limit over that live
				// heap, the run measures it exactly.
				w.gen, w.base, w.next = g, objects, objects+uint64(limit)
				w.rebase = objects > live && objects-live > uint64(limit)/4
				if w.rebase {
					ctx.measure.Store(true)
				}
			} else if objects > w.next {
				// The heap, garbage included, may hold more than the
				// limit: the run measures now rather than at the
				// collector's own pace.
				ctx.measure.Store(true)
			}
			w.mu.Unlock()
		}
	}
}

// memMeasure is the measure the watchdog asked for, on the running
// script's goroutine: a collection, and the script stopped when the heap
// it holds has passed the limit.
func (vm *VM) memMeasure(c *runContext) {
	c.measure.Store(false)
	vm.killMu.Lock()
	g, stopped := vm.gen, vm.memKilled || vm.killed || vm.timedOut
	vm.killMu.Unlock()
	limit := uint64(max(vm.memLimit.Load(), 0))
	w := &vm.mem
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != g || stopped || limit == 0 {
		return // asked for an earlier run, or nothing to measure
	}
	if w.sample == nil {
		w.sample = memSamples()
	}
	metrics.Read(w.sample)
	live, objects := collect(w.sample)
	switch {
	case w.rebase:
		w.rebase = false
		w.base, w.next = live, objects+limit
	case live > w.base && live-w.base > limit:
		vm.memKill(g)
	default:
		w.next = objects + max(w.base+limit-live, limit/2)
	}
}

// runContext is the context of the Lua state: gopher-lua checks Done
// before every instruction, and the library functions that can run long
// check Err, which is where a run measures its heap when the watchdog
// asks.
type runContext struct {
	vm      *VM
	done    chan struct{} // closed by cancel
	closed  atomic.Bool
	measure atomic.Bool // the watchdog asks the run to measure
}

func (c *runContext) Done() <-chan struct{} {
	if c.measure.Load() {
		c.vm.memMeasure(c)
	}
	return c.done
}

func (c *runContext) Err() error {
	if c.closed.Load() {
		return context.Canceled
	}
	if c.measure.Load() {
		c.vm.memMeasure(c)
		if c.closed.Load() {
			return context.Canceled
		}
	}
	return nil
}

func (*runContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*runContext) Value(any) any               { return nil }

// cancel stops the run; called with killMu held.
func (c *runContext) cancel() {
	if !c.closed.Swap(true) {
		close(c.done)
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
