package engine

import (
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrOOM is Redis's reply to a command flagged denyoom while used memory
// is over maxmemory (shared.oomerr; the policy is always noeviction).
const ErrOOM = "OOM command not allowed when used memory > 'maxmemory'."

// memSampleEvery is how old a used-memory sample may be before the next
// denyoom command takes a new one.
const memSampleEvery = 100 * time.Millisecond

// memMetric is what tumbler counts as used memory: the bytes of heap
// objects, live or not yet swept (runtime.MemStats.HeapAlloc, which INFO
// reports as used_memory), read through runtime/metrics, which does not
// stop the world.
const memMetric = "/memory/classes/heap/objects:bytes"

// memLimit is maxmemory with the noeviction policy: while the sampled heap
// is over the limit, commands flagged denyoom are refused with ErrOOM.
type memLimit struct {
	max       atomic.Uint64 // bytes; 0 = no limit
	used      atomic.Uint64 // last sample
	sampledAt atomic.Int64  // unix ns of the last sample; 0 = none yet
	mu        sync.Mutex    // one sampler at a time
	sample    [1]metrics.Sample

	// forced collections (collectAndCheck)
	gcMu        sync.Mutex  // one at a time; guards gcAt and gcFull
	gcAt        int64       // unix ns when the last one ended; 0 = none yet
	gcFull      bool        // the heap was still over maxmemory after it
	flushed     atomic.Bool // every key was removed since
	collections atomic.Int64

	freed chan struct{} // FreedMuch: a command dropped a lot of data (cap 1)

	releaseMu sync.Mutex
	release   []func() // OnReleaseMemory
}

// OnReleaseMemory registers fn, called before the engine forces a garbage
// collection (a maxmemory check that found used memory over the limit,
// CollectFreed after a FLUSHALL or a large DEL, MEMORY PURGE): memory its
// embedder keeps for reuse, which counts as used memory, should go then,
// so that the collection frees it too.
func (e *Engine) OnReleaseMemory(fn func()) {
	e.mem.releaseMu.Lock()
	defer e.mem.releaseMu.Unlock()
	e.mem.release = append(e.mem.release, fn)
}

// releaseMemory calls the OnReleaseMemory functions.
func (m *memLimit) releaseMemory() {
	m.releaseMu.Lock()
	fns := m.release
	m.releaseMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Memory a command frees shows in used_memory only after Go's next
// collection, which comes when the heap has grown by half again: after a
// FLUSHALL or the UNLINK of a large set on a server that then goes
// quiet, INFO memory went on reporting the data for up to two minutes
// (Go's periodic collection), where Redis's used_memory drops at once.
// So such a command signals FreedMuch, and the server collects soon
// after unless Go has collected meanwhile (Engine.CollectFreed).

// lazyfreeThreshold is Redis's LAZYFREE_THRESHOLD: a value of more
// elements than this is freed in the background by UNLINK; here, a key
// whose removal signals FreedMuch (and a string of 64 KB or more).
const lazyfreeThreshold = 64

// freesMuch reports whether dropping ent's value frees enough to signal.
func freesMuch(ent *entry) bool {
	switch v := ent.objValue().(type) {
	case *set:
		return v.Len() > lazyfreeThreshold
	case *hash:
		return v.Len() > lazyfreeThreshold
	case *list:
		return v.Len() > lazyfreeThreshold
	case *zset:
		return v.Len() > lazyfreeThreshold
	}
	return ent.vlen >= 64<<10
}

// freedMuch signals FreedMuch (without waiting: one signal pending is
// enough).
func (e *Engine) freedMuch() {
	select {
	case e.mem.freed <- struct{}{}:
	default:
	}
}

// FreedMuch receives after a command dropped much data: FLUSHALL or
// FLUSHDB of keys, or DEL, UNLINK (or another deletion of a whole key)
// of a value of more than 64 elements or 64 KB.
func (e *Engine) FreedMuch() <-chan struct{} { return e.mem.freed }

// GCCycles is how many collections Go has completed.
func GCCycles() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// CollectFreed runs a collection, unless Go has completed two since
// cycles (GCCycles, read when FreedMuch received), and samples used
// memory after it. One is not enough: it may have begun before the
// command dropped its data, and marked it live (then nothing would
// collect it on a quiet server, with used_memory showing it, for up to
// Go's two minutes); of two, the second began after.
func (e *Engine) CollectFreed(cycles uint64) {
	if GCCycles()-cycles >= 2 {
		return
	}
	m := &e.mem
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	m.releaseMemory()
	runtime.GC()
	m.resample()
	m.collections.Add(1)
}

// resample samples the heap now, whenever the last sample was taken.
func (m *memLimit) resample() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sample[0].Name = memMetric
	metrics.Read(m.sample[:])
	if m.sample[0].Value.Kind() == metrics.KindUint64 {
		m.used.Store(m.sample[0].Value.Uint64())
	}
	now := time.Now().UnixNano()
	m.sampledAt.Store(now)
	return now
}

// SetMaxMemory sets maxmemory in bytes; 0 removes the limit.
func (e *Engine) SetMaxMemory(n uint64) { e.mem.max.Store(n) }

// MaxMemory returns maxmemory in bytes (0 = no limit).
func (e *Engine) MaxMemory() uint64 { return e.mem.max.Load() }

// UsedMemory returns the heap in use as last sampled, taking a new sample
// when the last one is older than memSampleEvery.
func (e *Engine) UsedMemory() uint64 {
	m := &e.mem
	now := time.Now().UnixNano()
	if last := m.sampledAt.Load(); last != 0 && now-last < int64(memSampleEvery) {
		return m.used.Load()
	}
	if !m.mu.TryLock() {
		if m.sampledAt.Load() != 0 {
			return m.used.Load() // someone is sampling; the old value will do
		}
		m.mu.Lock() // the first sample: wait for it
	}
	defer m.mu.Unlock()
	if last := m.sampledAt.Load(); last == 0 || now-last >= int64(memSampleEvery) {
		m.sample[0].Name = memMetric
		metrics.Read(m.sample[:])
		if m.sample[0].Value.Kind() == metrics.KindUint64 {
			m.used.Store(m.sample[0].Value.Uint64())
		}
		m.sampledAt.Store(time.Now().UnixNano())
	}
	return m.used.Load()
}

// ScriptFlagger is implemented by a Scripter that knows a script's
// flags: ScriptFlags returns the shebang flags of the script EVAL (arg is
// the body) or EVALSHA (evalsha; arg is the SHA) runs, ok false when it
// has none (Redis then keeps the command's own flags).
type ScriptFlagger interface {
	ScriptFlags(evalsha bool, arg []byte) (fl ScriptFlag, ok bool)
}

// scriptFlags returns the flags of the script or function cmd (EVAL,
// EVALSHA, FCALL or their _RO forms) with args runs, which decide for it
// where the command's own flags would (evalGetCommandFlags,
// fcallGetCommandFlags); ok is false for another command, a script
// without a shebang or one not found.
func (e *Engine) scriptFlags(cmd *Command, args [][]byte) (fl ScriptFlag, ok bool) {
	if !cmd.stats.script || len(args) < 2 {
		return 0, false
	}
	if strings.HasPrefix(cmd.Name, "fcall") {
		return e.FunctionFlags(args[1])
	}
	if sf, is := e.scripter.(ScriptFlagger); is {
		return sf.ScriptFlags(strings.Contains(cmd.Name, "sha"), args[1])
	}
	return 0, false
}

// denyOOM reports whether cmd with args is refused over maxmemory: its
// flag says so, or, for a script command, the flags of the script or the
// function it runs do (Redis's evalGetCommandFlags and
// fcallGetCommandFlags). Scripts are asked only when maxmemory is set.
func (e *Engine) denyOOM(cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagDenyOOM != 0 {
		return true
	}
	if e.mem.max.Load() == 0 {
		return false
	}
	fl, ok := e.scriptFlags(cmd, args)
	return ok && fl.DenyOOM()
}

// denyOOMCall is denyOOM for the command c runs: an EXEC is refused when
// a command it queued would be (Redis's mstate.cmd_flags), and inside
// MULTI every command but EXEC, DISCARD, QUIT and RESET, denyoom or not:
// queueing may use any amount of memory (processCommand's
// reject_cmd_on_oom).
func (e *Engine) denyOOMCall(c *Ctx, cmd *Command) bool {
	if cmd.Name == "exec" {
		return e.mem.max.Load() != 0 && c.Client != nil && c.Client.AnyQueued(e.denyOOM)
	}
	if e.denyOOM(cmd, c.Args) {
		return true
	}
	if e.mem.max.Load() == 0 || !c.inMulti() {
		return false
	}
	switch cmd.Name {
	case "discard", "quit", "reset":
		return false
	}
	return true
}

// OutOfMemory reports whether maxmemory is set and used memory exceeds it.
// Used memory counts garbage not yet collected, and Go collects when the
// heap has doubled since the last collection, so the heap of a server
// whose data never grew can pass maxmemory by garbage alone. Once it does,
// only refused commands run, which allocate nothing, and no collection
// comes until Go's periodic one (two minutes): every write was refused
// meanwhile, although a FLUSHALL had freed everything. So a sample over
// the limit is checked by a collection (collectAndCheck) before writes are
// refused, unless one ran just before.
func (e *Engine) OutOfMemory() bool {
	max := e.mem.max.Load()
	return max != 0 && e.UsedMemory() > max && e.mem.collectAndCheck(max, true)
}

// collectForScript runs before a script, outside the keyspace lock: a
// script without flags is checked for maxmemory only at its first write,
// under the lock, where no collection may run, so a sample over the
// limit is checked by a collection here first (as OutOfMemory would).
// Otherwise a server whose clients only run scripts would refuse their
// writes until some other command collected.
func (e *Engine) collectForScript() {
	if max := e.mem.max.Load(); max != 0 && e.UsedMemory() > max {
		e.mem.collectAndCheck(max, true)
	}
}

// outOfMemoryLocked is OutOfMemory under the keyspace lock (a script's
// first write): it never collects there, as every other client would
// wait for it, and takes the last sample as it is. The next command
// checked outside the lock collects.
func (e *Engine) outOfMemoryLocked() bool {
	max := e.mem.max.Load()
	return max != 0 && e.UsedMemory() > max && e.mem.collectAndCheck(max, false)
}

// Forced collections, while the sampled heap is over maxmemory: at most
// one every memGCEvery, and one every memGCEveryFull while the last one
// found the live heap itself over the limit (the server is full: it
// refuses writes until data is deleted, and need not collect ten times a
// second to see that).
const (
	memGCEvery     = memSampleEvery
	memGCEveryFull = time.Second
)

// collectAndCheck runs a garbage collection, unless one ran less than
// memGCEvery ago (memGCEveryFull while full) or collect is false, then
// samples the heap again, and reports whether it is still over max. One
// collection at a time: callers meanwhile wait for its result.
func (m *memLimit) collectAndCheck(max uint64, collect bool) bool {
	if !collect {
		return true // the sample says over
	}
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	every := memGCEvery
	if m.gcFull {
		every = memGCEveryFull
	}
	if m.flushed.Swap(false) {
		every = 0 // FLUSHALL/FLUSHDB freed the data: see at once
	}
	if last := m.gcAt; last != 0 && time.Now().UnixNano()-last < int64(every) {
		return m.used.Load() > max // the sample taken after that collection, or since
	}
	m.releaseMemory()
	runtime.GC()
	m.gcAt = m.resample()
	m.gcFull = m.used.Load() > max
	m.collections.Add(1)
	return m.gcFull
}
