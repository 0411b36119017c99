package engine

import (
	crand "crypto/rand"
	"encoding/hex"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tumblerdb/tumbler/expiry"
)

// Version is the Redis version tumbler reports. Clients switch to newer
// commands at 8.x, so it stays on 7.2.
const Version = "7.2.4"

// Kind is the type of a value in the keyspace.
type Kind uint8

// Value kinds, named as TYPE reports them.
const (
	KindString Kind = iota
	KindHash
	KindList
	KindSet
	KindZSet
)

var kindNames = [...]string{"string", "hash", "list", "set", "zset"}

func (k Kind) String() string { return kindNames[k] }

// entry is one key's value. The bytes of its key, and of a string value,
// follow this 16-byte header in the same allocation: a held lock with a
// 12-byte key and a 32-byte token is one 64-byte object, and a lookup that
// finds the entry finds its key and value on the same cache lines. Key
// and str hand the bytes out as strings, so they change only while nothing
// can hold them: a new string value overwrites the old one in place when
// it fits in the entry's allocation and no reply has handed the old one
// to a reader that keeps it (entryShared, overwrite); otherwise it makes a
// new entry (replaceEntry). Any other
// kind of value is an *object stored right after the header, before the
// bytes, and only there (entryHasObj in klen; newObjEntry): a plain string
// pays nothing for it. The entry holds its key for the keyspace table
// (keyTable compares it) and so that the expiry index can hold entries,
// not keys (expiry.Index groups entries by deadline and never loads a key).
type entry struct {
	deadline int64  // monotonic ms; 0 = no deadline
	klen     uint32 // key bytes; entryHasObj, entryShared as below
	vlen     uint32 // string value bytes after the key
}

// entryHeader is the size of entry; entryHasObj marks (in klen) an entry
// whose header is followed by an *object, its bytes beginning after that.
// entryShared marks (in klen) a plain string whose value a reader may
// keep past its command (entry.shared): it is never overwritten in place.
// A key is shorter than entryShared: 1 GiB.
const (
	entryHeader = unsafe.Sizeof(entry{})
	entryHasObj = 1 << 31
	entryShared = 1 << 30
	objSize     = unsafe.Sizeof((*object)(nil))
)

// data is where the entry's bytes begin: after the header, and after the
// obj pointer if there is one (computed without a branch: key is on every
// lookup's path).
func (ent *entry) data() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(ent), entryHeader+uintptr(ent.klen>>31)*objSize)
}

func (ent *entry) keyLen() uint32 { return ent.klen &^ (entryHasObj | entryShared) }

// key returns the key the entry is stored under.
func (ent *entry) key() string {
	n := ent.keyLen()
	if n == 0 {
		return "" // never a pointer past the allocation
	}
	return unsafe.String((*byte)(ent.data()), n)
}

// str returns a string value's bytes ("" for another kind).
func (ent *entry) str() string {
	if ent.vlen == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(ent.data(), ent.keyLen())), ent.vlen)
}

// object is the value of a key that is not a plain string: a hash, a list,
// or a string with the "raw" encoding (APPEND; cmd_object.go).
type object struct {
	kind Kind
	v    any
}

// obj returns the entry's object, nil for a plain string.
func (ent *entry) obj() *object {
	if ent.klen&entryHasObj == 0 {
		return nil
	}
	return *(**object)(unsafe.Add(unsafe.Pointer(ent), entryHeader))
}

func (ent *entry) kind() Kind {
	o := ent.obj()
	if o == nil {
		return KindString
	}
	return o.kind
}

// objValue returns obj's value, nil for a plain string.
func (ent *entry) objValue() any {
	o := ent.obj()
	if o == nil {
		return nil
	}
	return o.v
}

// Stats are counters exported through INFO.
type Stats struct {
	ExpiredKeys     atomic.Int64
	KeyspaceHits    atomic.Int64
	KeyspaceMisses  atomic.Int64
	Commands        atomic.Int64
	ConnsReceived   atomic.Int64
	RejectedConns   atomic.Int64
	ExpiredScanned  atomic.Int64
	ScriptRuns      atomic.Int64
	ConnectedClient atomic.Int64
	// ExpireTimeCap counts the times the active expiry loop stopped
	// reclaiming with due keys left, to let clients run
	// (expired_time_cap_reached_count).
	ExpireTimeCap atomic.Int64
	// EvictedClients counts the connections maxmemory-clients closed.
	EvictedClients atomic.Int64
}

// Config holds the engine's settings.
type Config struct {
	// Clock supplies time; nil means the system clock.
	Clock expiry.Clock
	// BusyThreshold is how long a script may run before other clients get
	// BUSY (Redis's busy-reply-threshold / lua-time-limit). 0 means 5s.
	BusyThreshold time.Duration
	// Databases is how many numbered databases SELECT may choose from
	// (Redis's databases). 0 means 16, Redis's default.
	Databases int
}

// DefaultDatabases is Redis's default number of databases.
const DefaultDatabases = 16

// database is one numbered keyspace: its keys and their deadlines.
type database struct {
	keys *keyTable
	idx  *expiry.Index[entry]
}

// Engine is the keyspace plus the command table.
type Engine struct {
	mu sync.Mutex

	notifyFlags atomic.Uint32 // notify-keyspace-events (notify.go)

	// keys and idx are the database commands run in, dbs[db]: a command
	// of a client that SELECTed another switches to it (use) and back to
	// database 0 when it ends, so that whoever holds the lock between
	// commands (the expiry loop, a fixture) finds database 0 there.
	keys  *keyTable
	idx   *expiry.Index[entry]
	db    int
	dbs   []database
	clock expiry.Clock
	sys   *expiry.SystemClock // clock, when it is the system clock (one read per command: nowNs)

	// dirty counts the changes to the data set, as Redis's server.dirty:
	// each write command adds what Redis 7.0's adds (a key set, an
	// element pushed, a field deleted...), in its own code, next to its
	// notification. It is INFO's rdb_changes_since_last_save; tumbler
	// never saves, so it only grows. A plain counter: it is changed, and
	// read (INFO is not NoKeys), only under the keyspace lock.
	dirty int64

	cmds map[string]*Command
	// origCmds: the top-level commands by their own names, which ACL
	// rules name (Redis's orig_commands), whatever rename-command did to
	// cmds; renamed: rename-command changed cmds; longNames: a name in
	// cmds is longer than Lookup's buffer; unserved: the names of the
	// commands Redis has and tumbler does not serve, for rename-command
	// (Rename).
	origCmds           map[string]*Command
	unserved           map[string]bool
	renamed, longNames bool
	// aclIDs: each command name's bit in ACL selectors, kept across
	// re-registration (acl.go, Register)
	aclIDs map[string]int
	// aclOnly: Redis 7.0's commands tumbler does not serve, which ACL
	// rules may name (aclUnserved; FinishCommands makes them); aclAll:
	// the served and unserved top-level commands in name order, what ACL
	// rules and descriptions go through (eachACLCommand).
	aclOnly map[string]*Command
	aclAll  []*Command
	acl     ACL
	// callCache and callNext: the names scripts called last (lookupCall),
	// guarded by the keyspace lock.
	callCache [4]callCacheEntry
	callNext  uint8
	cmdGen    uint32 // bumped by Register (resolve)
	cmdList   []*Command
	scripter  Scripter
	info      InfoProvider
	params    configState // CONFIG GET/SET parameters (cmd_config.go)
	mem       memLimit    // maxmemory (memory.go)

	// enc: the encoding thresholds, replaced whole (encoding.go)
	enc atomic.Pointer[EncodingLimits]

	busyThreshold atomic.Int64  // ns
	maxString     atomic.Int64  // proto-max-bulk-len: APPEND's limit; 0 = 512 MB
	scriptStart   atomic.Int64  // unix ns of the running script's start; 0 = none
	gate          sync.Mutex    // guards scriptDone and the clearing of scriptStart
	scriptDone    chan struct{} // created by the first waiter, closed at script end
	killRequested bool          // SCRIPT KILL accepted for the running script; guarded by gate
	yielded       bool          // the running script's lock was released by YieldIfBusy; guarded by gate
	// scriptRW is held for writing by a command that may run a script
	// (Command.exclusive) and for reading by a keyless one (execShared),
	// so that no keyless command runs in the middle of a script. A busy
	// script yields it with the keyspace lock (YieldIfBusy). rwWriter is
	// set by its writer, under it; yieldRW is rwWriter at the script's
	// start (guarded by gate): whether YieldIfBusy has scriptRW to yield.
	scriptRW      sync.RWMutex
	rwWriter      bool
	yieldRW       bool
	busyYield     atomic.Bool   // set while yielded: whoever takes mu must not touch the keyspace
	noReplicas    atomic.Bool   // min-replicas-to-write: writes are refused (replicas.go)
	scriptStarted chan struct{} // signalled by scriptBegin, for the server's busy watcher
	scriptWrote   atomic.Bool
	scriptRun     ScriptRun
	// runFn is the running function (nil for an EVAL's script) and
	// runArgs the FCALL that runs it, for FUNCTION STATS; guarded by gate.
	// fnRunning mirrors runFn != nil for the BUSY reply.
	runFn     *Function
	runArgs   [][]byte
	fnRunning atomic.Bool

	funcs functionState // FUNCTION's libraries and engines (functions.go)

	migrate migrateSockets // MIGRATE's connections to its targets (cmd_migrate.go)

	// lazyHold: until this engine time (monotonic ms; 0: never) lookups
	// leave an expired key in place (HoldLazyExpiry).
	lazyHold atomic.Int64
	// activeOff: DEBUG SET-ACTIVE-EXPIRE 0 (SetActiveExpiry).
	activeOff atomic.Bool

	// wake is signalled when a deadline earlier than nextWake is set, so
	// the active expiry loop can sleep until the next deadline.
	wake     chan struct{}
	nextWake int64

	// onModified hooks are called with the engine lock held after every
	// write to a key, its expiry or deletion included (the hooks of WATCH
	// and client tracking).
	onModified []func(key string)

	watch       watchRegistry // WATCHed keys -> watching clients (multi.go)
	clientHooks               // pub/sub and client tracking (pubsub.go, tracking.go)
	blk         blockState    // clients blocked on keys (blocking.go)

	Stats Stats
	Net   NetCounters           // bytes and calls on client sockets, added by the server (observe.go)
	birth atomic.Pointer[birth] // start time and run_id; a fixture Restart makes a new one (Reborn)

	obs observer // obs: commandstats, errorstats, ops/sec, slow log, script latency (engine/observe.go)

	// ReclaimDue's batch and the hashes of its keys (here, away from the
	// fields every command reads)
	due  []expiry.Item[entry]
	dueH []uint64

	reloadSnap *reloadSnapshot // what DEBUG RELOAD saved last (debug.go)
	qlPacked   atomic.Int64    // DEBUG QUICKLIST-PACKED-THRESHOLD; 0: 1 GB (debug.go)

	writeGate func(c *Ctx, cmd *Command) bool // the host's refusal of writes (SetWriteGate)

	// lru is the access time the running command gives the keys it
	// stores and looks up (keytable.go), set under the lock as each
	// command starts (callAt, WithKeyspace)
	lru lruClock
}

// lruNow is Redis's LRU clock at engine time now (ms): seconds, in 24
// bits (LRU_CLOCK).
func lruNow(now int64) uint64 { return uint64(now/1000) & lruMask }

// lruBack is the access time idle seconds before clk, as Redis's
// objectSetLRUOrLFU sets it: an idle time past the clock's start (it
// wraps) gives half the clock's span back instead.
func lruBack(clk uint64, idle int64) uint64 {
	if abs := int64(clk) - idle; abs >= 0 {
		return uint64(abs)
	}
	return (clk + lruMask/2) % lruMask
}

// idleSeconds is how long ago, in seconds, a key was last accessed at
// lru, at engine time now: Redis's estimateObjectIdleTime, whose 24-bit
// clock wraps (after 194 days).
func idleSeconds(lru uint64, now int64) int64 {
	clk := lruNow(now)
	if clk >= lru {
		return int64(clk - lru)
	}
	return int64(clk + (lruMask - lru))
}

// New returns an empty engine with the standard command table.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = expiry.NewSystemClock()
	}
	if cfg.Databases <= 0 {
		cfg.Databases = DefaultDatabases
	}
	e := &Engine{
		dbs:      make([]database, cfg.Databases),
		clock:    cfg.Clock,
		cmds:     make(map[string]*Command),
		origCmds: make(map[string]*Command),
		wake:     make(chan struct{}, 1),

		scriptStarted: make(chan struct{}, 1),
		mem:           memLimit{freed: make(chan struct{}, 1)},
	}
	e.dbs[0] = database{keys: newKeyTable(&e.lru), idx: expiry.NewIndex[entry]()} // the others on first use
	e.keys, e.idx = e.dbs[0].keys, e.dbs[0].idx
	e.sys, _ = cfg.Clock.(*expiry.SystemClock)
	e.Reborn()
	e.acl.init(e) // users: the default one (acl.go)
	if cfg.BusyThreshold <= 0 {
		cfg.BusyThreshold = 5 * time.Second
	}
	e.busyThreshold.Store(int64(cfg.BusyThreshold))
	e.SetEncodingLimits(DefaultEncodingLimits())
	e.SetLatencyTracking(true)        // Redis's default: latency-tracking yes
	e.obs.latMon.now = cfg.Clock.Wall // LATENCY's times on the server's clock
	e.SetLatencyPercentiles(defaultLatencyPercentiles)
	registerStandard(e)
	registerMulti(e) // MULTI/EXEC/WATCH commands and WATCH's onModified hook (multi.go)
	e.obs.startMem = heapObjects()
	return e
}

// Clock returns the engine's clock.
func (e *Engine) Clock() expiry.Clock { return e.clock }

// SetBusyThreshold changes the busy-script threshold.
func (e *Engine) SetBusyThreshold(d time.Duration) {
	e.busyThreshold.Store(int64(d))
	// A watcher sleeping until the running script could be busy
	// (ScriptStarted) works out its wait again: a lower threshold may
	// make the script busy now.
	select {
	case e.scriptStarted <- struct{}{}:
	default:
	}
}

// SetProtoMaxBulkLen sets proto-max-bulk-len, the longest string APPEND
// may make (n <= 0: Redis's default, 512 MB).
func (e *Engine) SetProtoMaxBulkLen(n int64) { e.maxString.Store(n) }

// stringFits reports whether a string of size plus add bytes is within
// proto-max-bulk-len (Redis's checkStringLength).
func (e *Engine) stringFits(size, add int) bool {
	limit := e.maxString.Load()
	if limit <= 0 {
		limit = 512 << 20
	}
	return int64(size)+int64(add) <= limit
}

// BusyThreshold returns the busy-script threshold.
func (e *Engine) BusyThreshold() time.Duration { return time.Duration(e.busyThreshold.Load()) }

// SetScripter installs the script runner used by EVAL and friends.
func (e *Engine) SetScripter(s Scripter) { e.scripter = s }

// SetInfoProvider installs the source of INFO's server-level sections.
func (e *Engine) SetInfoProvider(p InfoProvider) { e.info = p }

// AddOnModified adds a key-modification hook (see Engine.onModified). Call
// it before the engine serves commands.
func (e *Engine) AddOnModified(fn func(key string)) { e.onModified = append(e.onModified, fn) }

// Lock and Unlock expose the keyspace lock to embedders that inspect or
// change data directly (test fixtures). Commands take it themselves. Lock
// waits for a busy script to end.
func (e *Engine) Lock()   { e.lockOrBusy(true) }
func (e *Engine) Unlock() { e.mu.Unlock() }

// ScriptRunning reports whether a script is running in Lua now, busy or
// not (a native run of a lock script does not count): a command may then
// wait for it.
func (e *Engine) ScriptRunning() bool { return e.scriptStart.Load() != 0 }

// Busy reports whether a script has been running for longer than the busy
// threshold.

func (e *Engine) Busy() bool {
	s := e.scriptStart.Load()
	return s != 0 && time.Now().UnixNano()-s >= e.busyThreshold.Load()
}

// ---- keyspace primitives; all require e.mu held ----

// lookup returns the live entry for key, expiring it lazily if its deadline
// has passed.
func (e *Engine) lookup(key []byte, now int64) *entry {
	ent := e.keys.lookup(key) // an access, unless the command is noTouch
	if ent == nil {
		return nil
	}
	if expiry.Expired(ent.deadline, now) {
		if now < e.lazyHold.Load() {
			return nil // CLIENT PAUSE: missing, but left in place (HoldLazyExpiry)
		}
		e.expireKey(string(key), ent)
		return nil
	}
	return ent
}

// HoldLazyExpiry makes lookups before engine time until (monotonic ms; 0
// ends the hold) report an expired key missing but leave it in place, as
// Redis's expireIfNeeded does while clients are paused: CLIENT PAUSE keeps
// the dataset still (the server holds the active expiry then too). A key
// such a lookup left is reclaimed when a command adds one under its name
// (putNew), or by the first lookup or active expiry after the hold.
func (e *Engine) HoldLazyExpiry(until int64) { e.lazyHold.Store(until) }

// SetActiveExpiry turns the active expiry on or off (DEBUG
// SET-ACTIVE-EXPIRE): while it is off, ReclaimDue deletes nothing.
func (e *Engine) SetActiveExpiry(on bool) { e.activeOff.Store(!on) }

// ActiveExpiry reports whether the active expiry is on.
func (e *Engine) ActiveExpiry() bool { return !e.activeOff.Load() }

// putNew adds ent under a key that lookup reported missing. During a
// HoldLazyExpiry the expired entry lookup left may still be there: put
// hands it back, and it is reclaimed here, so that the expiry index never
// holds a replaced entry. (Whether the hold is on is not asked: it may
// end, from another goroutine, between the lookup and this put.)
func (e *Engine) putNew(ent *entry) {
	if old := e.keys.put(ent); old != nil {
		if old.deadline != 0 {
			e.idx.Remove(old, old.deadline)
		}
		e.Stats.ExpiredKeys.Add(1) // (the caller reports the key modified)
	}
	e.notify(NotifyNew, "new", ent.key())
}

func (e *Engine) lookupRead(key []byte, now int64) *entry {
	ent := e.lookupCounted(key, now)
	if ent == nil {
		e.notifyBytes(NotifyKeyMiss, "keymiss", key)
	}
	return ent
}

// lookupCounted is lookup counting a keyspace hit or miss, without the
// keymiss event: Redis's LOOKUP_NONOTIFY (OBJECT's lookups).
func (e *Engine) lookupCounted(key []byte, now int64) *entry {
	ent := e.lookup(key, now)
	if ent == nil {
		e.Stats.KeyspaceMisses.Add(1)
	} else {
		e.Stats.KeyspaceHits.Add(1)
	}
	return ent
}

func (e *Engine) expireKey(key string, ent *entry) {
	e.removeKey(key, ent)
	e.Stats.ExpiredKeys.Add(1)
	e.notify(NotifyExpired, "expired", key)
	e.modified(key)
}

func (e *Engine) removeKey(key string, ent *entry) {
	if ent.deadline != 0 {
		e.idx.Remove(ent, ent.deadline)
	}
	e.keys.delete(key)
}

// del deletes key if it is live, reporting whether it was.
func (e *Engine) del(key []byte, now int64) bool {
	ent := e.lookup(key, now)
	if ent == nil {
		return false
	}
	e.removeKey(ent.key(), ent)
	e.notify(NotifyGeneric, "del", ent.key())
	e.modified(ent.key())
	if freesMuch(ent) {
		e.freedMuch() // used_memory: collect soon (memory.go)
	}
	return true
}

// setString stores a string value. With keepTTL the deadline of an existing
// key is kept; otherwise it becomes deadline (0 = none).
func (e *Engine) setString(key, val []byte, deadline int64, keepTTL bool, now int64) {
	e.setStringAt(key, e.lookup(key, now), val, deadline, keepTTL)
}

// setStringAt is setString for a caller that has just looked key up: ent is
// what lookup returned. val is copied.
func (e *Engine) setStringAt(key []byte, ent *entry, val []byte, deadline int64, keepTTL bool) {
	if ent != nil && ent.overwrite(val) {
		if !keepTTL {
			e.setDeadline(key, ent, deadline)
		}
		if !e.lru.touch {
			// a new value's access time is now, as a new object's in
			// Redis; the lookup that found ent set it unless it may not
			e.keys.stampNow(ent)
		}
		e.modified(ent.key())
		return
	}
	nu := newEntry(key, val)
	if ent == nil {
		e.putNew(nu)
		if deadline != 0 {
			e.setDeadlineKey(nu.key(), nu, deadline)
		}
	} else {
		if keepTTL {
			deadline = ent.deadline
		}
		e.replaceEntry(ent, nu, deadline)
	}
	e.modified(nu.key())
}

// replaceEntry puts nu in old's place, with deadline (0 = none): a new
// value that old cannot take in place (entry.overwrite).
func (e *Engine) replaceEntry(old, nu *entry, deadline int64) {
	if old.deadline != 0 {
		e.idx.Remove(old, old.deadline)
	}
	e.keys.put(nu)
	if deadline != 0 {
		e.setDeadlineKey(nu.key(), nu, deadline)
	}
}

// setDeadline changes ent's deadline, keeping the index in step.
func (e *Engine) setDeadline(key []byte, ent *entry, deadline int64) {
	if ent.deadline == deadline {
		return
	}
	if ent.deadline != 0 {
		e.idx.Remove(ent, ent.deadline)
	}
	ent.deadline = 0
	if deadline != 0 {
		e.setDeadlineKey(ent.key(), ent, deadline)
	}
}

func (e *Engine) setDeadlineKey(key string, ent *entry, deadline int64) {
	ent.deadline = deadline
	e.idx.Add(ent, deadline)
	if e.nextWake == 0 || deadline < e.nextWake {
		e.nextWake = deadline
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

func (e *Engine) modified(key string) {
	for _, fn := range e.onModified {
		fn(key)
	}
}

// ---- active expiry ----

// Wake returns a channel that receives when a deadline earlier than the
// expiry loop's next planned wake-up is set, or when Kick is called.
func (e *Engine) Wake() <-chan struct{} { return e.wake }

// Kick wakes the active expiry loop (after a manual clock moves).
func (e *Engine) Kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// ReclaimDue deletes up to max keys whose deadline has passed, in deadline
// order, under one short hold of the lock. It returns how many it deleted
// and the next deadline still in the index (ok=false when there is none).
// The caller loops while n == max, yielding between batches, so a mass
// expiry never holds the lock for long. While HoldLazyExpiry holds, or
// SetActiveExpiry(false), it deletes nothing.
func (e *Engine) ReclaimDue(max int) (n int, next int64, ok bool) {
	if !e.lockOrBusy(false) {
		return 0, 0, false // a busy script has the keyspace; retry when woken
	}
	defer e.mu.Unlock()
	start := time.Now()
	defer func() { e.obs.expireNs.Add(int64(time.Since(start))) }() // expire_cycle_cpu_milliseconds
	now := e.clock.Mono()
	// CLIENT PAUSE and DEBUG SET-ACTIVE-EXPIRE 0 hold the active expiry.
	// The server parks its loop when it sees either, but a pass that began
	// before may be waiting for the lock while one is set (by EXEC, say,
	// under this lock): read here under the lock, they keep that pass from
	// reclaiming.
	held := now < e.lazyHold.Load() || e.activeOff.Load()
	next, ok = 0, false
	defer e.use(0) // (between commands the current database is 0)
	for i := range e.dbs {
		d := &e.dbs[i]
		if d.expires() == 0 {
			continue
		}
		if n < max && !held {
			e.use(i) // notifications and WATCH name the key's database
			n += e.reclaimDue(now, max-n)
		}
		if t, has := d.idx.Next(); has && (!ok || t < next) {
			next, ok = t, true
		}
	}
	if ok {
		e.nextWake = next
	} else {
		e.nextWake = 0
	}
	return n, next, ok
}

// reclaimDue deletes up to max keys of the current database whose
// deadline has passed at now, in deadline order.
//
// A mass expiry's due entries lie anywhere in memory, and so do their
// slots in the key table: deleting them one by one waited for two cache
// misses a key, most of a reclaim's time. So the batch is read in passes
// whose loads do not depend on each other, and their misses overlap: the
// entries (hashing their keys), then their home slots, then the deletes,
// which find both in the cache (BenchmarkReclaimDue_MassExpiry).
func (e *Engine) reclaimDue(now int64, max int) int {
	due := e.idx.PopDue(now, max, e.due[:0]) // off the index already
	var sink uint32
	for _, it := range due {
		sink += it.Ref.klen
	}
	e.keys.sink += uint64(sink)
	hs := e.dueH[:0]
	for _, it := range due {
		hs = append(hs, e.keys.hash(it.Ref.key()))
	}
	e.keys.touchHomes(hs)
	for i, it := range due {
		// The index holds exactly the entries in the table that have a
		// deadline (CheckInvariants), so the entry is the key's.
		ent := it.Ref
		e.keys.deleteEntry(hs[i], ent)
		e.Stats.ExpiredKeys.Add(1)
		e.notify(NotifyExpired, "expired", ent.key())
		e.modified(ent.key())
		due[i].Ref = nil // do not keep it alive in the buffer
	}
	e.due, e.dueH = due[:0], hs[:0]
	return len(due)
}

// ---- inspection for embedders and invariant checks ----

// CheckInvariants verifies that every key with a deadline is in the expiry
// index exactly once and that the index holds nothing else. It returns a
// description of the first violation, or "".
func (e *Engine) CheckInvariants() string {
	e.Lock()
	defer e.mu.Unlock()
	defer e.use(0)
	for i := range e.dbs {
		if e.dbs[i].keys == nil {
			continue // never used
		}
		e.use(i)
		if bad := e.checkDB(); bad != "" {
			if i != 0 {
				bad = "db" + strconv.Itoa(i) + ": " + bad
			}
			return bad
		}
	}
	return ""
}

// checkDB is CheckInvariants for the current database.
func (e *Engine) checkDB() string {
	withDeadline := 0
	bad := ""
	e.keys.each(func(ent *entry) bool {
		if e.keys.getString(ent.key()) != ent {
			bad = "entry for key " + ent.key() + " is not found under it"
			return false
		}
		if ent.deadline != 0 {
			withDeadline++
		}
		return true
	})
	if bad != "" {
		return bad
	}
	if msg := e.keys.check(); msg != "" {
		return msg
	}
	seen := make(map[*entry]bool, e.idx.Len())
	e.idx.Scan(func(it expiry.Item[entry]) bool {
		ent := it.Ref
		if seen[ent] {
			bad = "key " + ent.key() + " is in the expiry index twice"
			return false
		}
		seen[ent] = true
		if e.keys.getString(ent.key()) != ent {
			bad = "expiry index holds an entry not in the keyspace, key " + ent.key()
			return false
		}
		if ent.deadline != it.Deadline {
			bad = "expiry index deadline differs for key " + ent.key()
			return false
		}
		return true
	})
	if bad != "" {
		return bad
	}
	if withDeadline != e.idx.Len() {
		return "keys with deadlines and expiry index sizes differ"
	}
	return ""
}

// KeyCount returns the number of keys in all databases (including any
// expired keys not yet reclaimed) and how many have a deadline.
func (e *Engine) KeyCount() (keys, expires int) {
	e.Lock()
	defer e.mu.Unlock()
	return e.keyCount()
}

// keyCount is KeyCount with the lock held.
func (e *Engine) keyCount() (keys, expires int) {
	for i := range e.dbs {
		keys += e.dbs[i].size()
		expires += e.dbs[i].expires()
	}
	return keys, expires
}

// objEntryWith is an entry with an object, allocated together with room
// for its bytes; the GC sees its obj pointer.
type objEntryWith[B any] struct {
	entry
	obj *object
	b   B
}

// allocObjEntry returns a zero entry with room for an obj pointer followed,
// in the same allocation, by at least n bytes. Up to 232 bytes it picks a
// fixed type per Go size class (24 bytes of header and obj + b: 32 to 256
// bytes); beyond, a struct type made once per size step by reflect (sizes
// round up by an eighth at most).
func allocObjEntry(n int) *entry {
	switch {
	case n <= 8:
		return &new(objEntryWith[[8]byte]).entry
	case n <= 24:
		return &new(objEntryWith[[24]byte]).entry
	case n <= 40:
		return &new(objEntryWith[[40]byte]).entry
	case n <= 56:
		return &new(objEntryWith[[56]byte]).entry
	case n <= 72:
		return &new(objEntryWith[[72]byte]).entry
	case n <= 88:
		return &new(objEntryWith[[88]byte]).entry
	case n <= 104:
		return &new(objEntryWith[[104]byte]).entry
	case n <= 136:
		return &new(objEntryWith[[136]byte]).entry
	case n <= 168:
		return &new(objEntryWith[[168]byte]).entry
	case n <= 232:
		return &new(objEntryWith[[232]byte]).entry
	}
	return (*entry)(reflect.New(bigEntryType(n)).UnsafePointer())
}

var bigEntryTypes sync.Map // rounded byte count -> reflect.Type

// bigEntryType returns struct{ H entry; O *object; B [m]byte } for the
// smallest step m >= n: steps are 1/8 of the power of two below n, so at
// most 8 types exist per doubling and none wastes more than an eighth.
func bigEntryType(n int) reflect.Type {
	step := 1 << (bits.Len(uint(n)) - 4) // n >= 233: step >= 16
	m := (n + step - 1) &^ (step - 1)
	if t, ok := bigEntryTypes.Load(m); ok {
		return t.(reflect.Type)
	}
	t := reflect.StructOf([]reflect.StructField{
		{Name: "H", Type: reflect.TypeOf(entry{})},
		{Name: "O", Type: reflect.TypeOf((*object)(nil))},
		{Name: "B", Type: reflect.ArrayOf(m, reflect.TypeOf(byte(0)))},
	})
	bigEntryTypes.Store(m, t)
	return t
}

// newEntry returns an entry for key holding the string val; both are
// copied. A plain string's entry holds no pointer (it has no obj, and never
// gets one: a value of another kind is a new entry), so it is allocated as
// pointer-free memory, which the GC never scans: at a million locks that
// is a million objects less to mark each cycle. Every entry that has an
// obj is made by newObjEntry instead. Its allocation is plainSize bytes.
func newEntry(key, val []byte) *entry {
	checkEntrySize(key, val)
	// From 16 bytes on, Go's size classes are 8-byte multiples: asking for
	// the rounded size costs nothing, is aligned for the header, and is
	// room overwrite may count on.
	b := make([]byte, plainSize(len(key), len(val)))
	ent := (*entry)(unsafe.Pointer(unsafe.SliceData(b)))
	fillEntry(ent, 0, key, val)
	return ent
}

// plainSize is the allocation of a plain string entry with klen key bytes
// and vlen value bytes (newEntry).
func plainSize(klen, vlen int) int {
	return (int(entryHeader) + klen + vlen + 7) &^ 7
}

// maxKeyLen is the longest key an entry holds: its length must stay
// below entryShared. (A var for the tests, which cannot make a key of
// 1 GiB.)
var maxKeyLen = entryShared - 1

// maxValueLen is the longest value an entry holds (vlen is 32 bits). (A
// var for the tests, which cannot make a value of 4 GiB.)
var maxValueLen = min(maxEntryValue, math.MaxInt)

// longKeys reports whether c may have a key longer than an entry holds,
// for tooLongKey to look at: only a script's call can, or a client's when
// proto-max-bulk-len lets an argument be that long (it cannot by default:
// the rest cost one load and compare).
func (e *Engine) longKeys(c *Ctx) bool {
	if c.Script == nil && !e.stringFits(maxKeyLen, 1) {
		return false
	}
	for _, a := range c.Args {
		if len(a) > maxKeyLen {
			return true
		}
	}
	return false
}

// tooLongKey reports whether one of cmd's keys in args is longer than an
// entry holds (maxKeyLen). Making its entry would fail, and some commands
// get there after a change they would leave half done (LMOVE pops its
// element before it creates the destination), so such a command is
// refused before it runs. A key that long needs proto-max-bulk-len raised
// past it, or a script whose memory limit allows it (longKeys).
func tooLongKey(cmd *Command, args [][]byte) bool {
	for _, k := range aclKeys(cmd, args, nil) {
		if k.pos < len(args) && len(args[k.pos]) > maxKeyLen {
			return true
		}
	}
	return false
}

// overwrite makes val ent's value in place, and reports whether it could:
// when ent is a plain string whose value no reader keeps (entryShared)
// and val fits in its allocation. Then the new value costs no allocation,
// and the old one leaves no garbage for the GC (plain SET over existing
// keys: the GC had a tenth of the server's CPU at a million keys). The
// room is what plainSize of the current value gives, so that it never
// needs storing: a value that would need less is written only as long
// as it still needs the same size.
func (ent *entry) overwrite(val []byte) bool {
	if ent.klen&(entryHasObj|entryShared) != 0 {
		return false
	}
	k := int(ent.klen)
	if plainSize(k, len(val)) != plainSize(k, int(ent.vlen)) {
		return false
	}
	if len(val) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(ent), int(entryHeader)+k)), len(val)), val)
	}
	ent.vlen = uint32(len(val))
	return true
}

// newObjEntry returns an entry for key holding obj (and, for a string with
// an encoding marker, val), allocated with its pointer visible to the GC.
func newObjEntry(key, val []byte, obj *object) *entry {
	checkEntrySize(key, val)
	ent := allocObjEntry(len(key) + len(val))
	*(**object)(unsafe.Add(unsafe.Pointer(ent), entryHeader)) = obj
	fillEntry(ent, entryHasObj, key, val)
	return ent
}

func checkEntrySize(key, val []byte) { checkEntryLens(len(key), len(val)) }

func checkEntryLens(klen, vlen int) {
	if klen > maxKeyLen || vlen > maxValueLen {
		panic("string exceeds maximum allowed size") // the server replies it as an error
	}
}

// fillEntry copies key and val into ent's bytes; flag is entryHasObj for
// an entry whose obj is already stored.
func fillEntry(ent *entry, flag uint32, key, val []byte) {
	ent.klen, ent.vlen = uint32(len(key))|flag, uint32(len(val))
	if n := len(key) + len(val); n > 0 {
		b := unsafe.Slice((*byte)(ent.data()), n)
		copy(b, key)
		copy(b[len(key):], val)
	}
}

// Prefetch is a hint before a pipelined batch of commands runs: it brings
// the keyspace's memory for keys into the CPU cache with their loads
// overlapped (keyTable.prefetch), so that the commands, run one by one,
// find it there. Bit i of leaving says that keys[i]'s command will likely
// remove or change its deadline (a release, DEL, an extend): for those it
// also loads the key's place in the expiry index (a search there is wasted
// on the many commands that only read a key, or are refused, as a lock
// acquire on a held key). It has no effect on any reply or key. It never
// waits for the keyspace lock: when another holder has it, it does nothing.
// db is the database of the keys, the client's (Client.DB).
func (e *Engine) Prefetch(db int, keys [][]byte, leaving uint32) {
	if len(keys) < 2 || !e.mu.TryLock() {
		return
	}
	defer e.mu.Unlock()
	if e.busyYield.Load() { // a busy script owns the keyspace (lockOrBusy)
		return
	}
	if db != 0 {
		e.use(db)
		defer e.use(0) // between commands the current database is 0
	}
	var found [32]*entry
	e.keys.prefetch(keys, &found)
	if leaving == 0 {
		return
	}
	// where the release's DEL, say, will remove the deadline: its cache
	// miss among the locks of its millisecond
	var sink uintptr
	for i, ent := range found[:min(len(keys), len(found))] {
		if leaving&(1<<i) != 0 && ent != nil && ent.deadline != 0 {
			sink += e.idx.Prefetch(ent, ent.deadline)
		}
	}
	e.keys.sink += uint64(sink)
}

// birth is what a Redis process gets when it starts: its start time
// (uptime, LASTSAVE, rdb_last_save_time) and its run_id.
type birth struct {
	start  time.Time // on the engine's clock: its wall reading (LASTSAVE)
	mono   int64     // and its monotonic one (INFO's uptime)
	runID  string
	replID string // master_replid: its own random id, as Redis's changeReplicationId
}

// Reborn gives the engine a new start time and run_id, as a restarted
// process has (a fixture's Restart), and empties the logs a process keeps
// in memory: the slow log (its entry ids from 0 again), LATENCY's events
// and the ACL LOG.
func (e *Engine) Reborn() {
	mono, wall := expiry.Read(e.clock)
	e.birth.Store(&birth{start: time.UnixMilli(wall), mono: mono, runID: newRunID(), replID: newRunID()})
	l := &e.obs.slowlog
	l.mu.Lock()
	l.entries, l.nextID = nil, 0
	l.mu.Unlock()
	e.obs.latMon.reset(nil, true)
	e.acl.ResetLog()
}

// newRunID is 40 random hex digits, as Redis's getRandomHexChars: each
// server has its own, and a restarted one a new one.
func newRunID() string {
	var b [20]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
