package engine

import (
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
// flags: DenyOOM reports whether EVAL (arg is the body) or EVALSHA
// (evalsha; arg is the SHA) is refused over maxmemory before it runs.
type ScriptFlagger interface {
	DenyOOM(evalsha bool, arg []byte) bool
}

// denyOOM reports whether cmd with args is refused over maxmemory: its
// flag says so, or, for a script command, the script's own flags do
// (Redis's evalGetCommandFlags). Scripts are asked only when maxmemory
// is set.
func (e *Engine) denyOOM(cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagDenyOOM != 0 {
		return true
	}
	if !cmd.stats.script || len(args) < 2 || e.mem.max.Load() == 0 {
		return false
	}
	sf, ok := e.scripter.(ScriptFlagger)
	return ok && sf.DenyOOM(strings.Contains(cmd.Name, "sha"), args[1])
}

// OutOfMemory reports whether maxmemory is set and used memory exceeds it.
func (e *Engine) OutOfMemory() bool {
	max := e.mem.max.Load()
	return max != 0 && e.UsedMemory() > max
}
