package engine

import (
	"runtime/debug"
	"strconv"
	"unsafe"
)

// The operator's commands of a Redis deployment that tumbler answers as a
// Redis master without persistence or replicas would (ROLE, LASTSAVE,
// SWAPDB of the one database, MEMORY, LATENCY: latencymon.go), and the
// persistence and replication commands, which tumbler refuses with a
// reason instead of "unknown command": redis-cli --rdb, backup cron jobs
// and failover scripts then say what is missing.
func registerAdmin(e *Engine) {
	admin := FlagNoKeys | FlagAdmin | FlagNoScript
	refuse := func(name string, arity int, flags Flag, msg string) *Command {
		return &Command{Name: name, Arity: arity, Flags: admin | flags, Group: "server", Fn: func(c *Ctx) { c.W.WriteError(msg) }}
	}
	e.Register(
		&Command{Name: "role", Arity: 1, Flags: FlagNoKeys | FlagNoScript | FlagLoading | FlagStale | FlagFast, Group: "server", Fn: cmdRole},
		&Command{Name: "lastsave", Arity: 1, Flags: FlagNoKeys | FlagLoading | FlagStale | FlagFast, Group: "server", Fn: cmdLastSave},
		&Command{Name: "swapdb", Arity: 3, Flags: FlagWrite | FlagFast, Group: "server", Fn: cmdSwapDB},
		refuse("save", 1, FlagNoAsyncLoading|FlagNoMulti, ErrNoPersistence("SAVE")),
		refuse("bgsave", -1, FlagNoAsyncLoading, ErrNoPersistence("BGSAVE")),
		refuse("bgrewriteaof", 1, FlagNoAsyncLoading, ErrNoPersistence("BGREWRITEAOF")),
		// redis-cli --rdb takes a backup through SYNC
		refuse("sync", 1, FlagNoAsyncLoading|FlagNoMulti, ErrNoPersistenceOrReplication("SYNC")),
		refuse("psync", -3, FlagNoAsyncLoading|FlagNoMulti, ErrNoPersistenceOrReplication("PSYNC")),
		refuse("replconf", -1, FlagAllowBusy|FlagLoading|FlagStale, ErrNoReplication("REPLCONF")),
		refuse("failover", -1, FlagStale, ErrNoReplication("FAILOVER")),
		&Command{Name: "replicaof", Arity: 3, Flags: admin | FlagStale | FlagNoAsyncLoading, Group: "server", Fn: cmdReplicaOf},
		&Command{Name: "slaveof", Arity: 3, Flags: admin | FlagStale | FlagNoAsyncLoading, Group: "server", Fn: cmdReplicaOf},
		&Command{Name: "memory", Arity: -2, Group: "server", Subs: map[string]*Command{
			"usage":        {Arity: -3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Fn: cmdMemoryUsage},
			"stats":        {Arity: 2, Fn: cmdMemoryStats}, // (under the keyspace lock: it counts keys)
			"doctor":       {Arity: 2, Flags: FlagNoKeys, Fn: cmdMemoryDoctor},
			"malloc-stats": {Arity: 2, Flags: FlagNoKeys, Fn: func(c *Ctx) { c.W.WriteVerbatim("txt", "Stats not supported for the current allocator") }},
			"purge": {Arity: 2, Flags: FlagNoKeys, Fn: func(c *Ctx) {
				c.Eng.mem.releaseMemory()
				debug.FreeOSMemory()
				c.W.WriteStatus(statusOK)
			}},
			"help": HelpCommand(FlagNoKeys, memoryHelp),
		}},
		&Command{Name: "latency", Arity: -2, Group: "server", Subs: map[string]*Command{
			"latest":    {Arity: 2, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyLatest},
			"history":   {Arity: 3, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyHistory},
			"reset":     {Arity: -2, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyReset},
			"doctor":    {Arity: 2, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyDoctor},
			"graph":     {Arity: 3, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyGraph},
			"histogram": {Arity: -2, Flags: admin | FlagLoading | FlagStale, Fn: cmdLatencyHistogram},
			"help":      HelpCommand(FlagNoKeys, latencyHelp),
		}},
	)
}

// ErrNoPersistence is tumbler's reply to a command that would write the
// dataset to disk.
func ErrNoPersistence(cmd string) string {
	return "ERR " + cmd + " is not supported: tumbler has no persistence (a restart starts empty)"
}

// ErrNoPersistenceOrReplication is tumbler's reply to SYNC and PSYNC, which
// both replicas and backups (redis-cli --rdb) send.
func ErrNoPersistenceOrReplication(cmd string) string {
	return "ERR " + cmd + " is not supported: tumbler has no persistence or replication (a restart starts empty)"
}

// ErrNoReplication is tumbler's reply to a replication command.
func ErrNoReplication(cmd string) string {
	return "ERR " + cmd + " is not supported: tumbler does not replicate"
}

// ROLE: a master with no replicas, at replication offset 0.
func cmdRole(c *Ctx) {
	c.W.WriteArray(3)
	c.W.WriteBulkString("master")
	c.W.WriteInt(0)
	c.W.WriteArray(0)
}

// LASTSAVE: the start of the server, as INFO persistence's
// rdb_last_save_time (Redis's value on a server that never saved).
func cmdLastSave(c *Ctx) { c.W.WriteInt(c.Eng.birth.Load().start.Unix()) }

// REPLICAOF host port | NO ONE (SLAVEOF the same): NO ONE on a master is
// Redis's no-op; following a master is refused.
func cmdReplicaOf(c *Ctx) {
	if EqFold(c.Args[1], "no") && EqFold(c.Args[2], "one") {
		c.W.WriteStatus(statusOK)
		return
	}
	c.W.WriteError(ErrNoReplication(upperASCII(string(c.Args[0]))))
}

// latencyDoctorOff is Redis 7.0's LATENCY DOCTOR while the latency monitor
// is off and has never been on (latencymon.go).
const latencyDoctorOff = `I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use "CONFIG SET latency-monitor-threshold <milliseconds>." in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.` + "\n"

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP",
	"    Prints this help.",
}

// MEMORY USAGE key [SAMPLES count]
//
// An estimate of the Go heap the key holds: its entry, its slot in the
// keyspace table and the expiry index, and its value, whose elements are
// sampled up to count times (default 5, 0 all), as Redis samples them.
func cmdMemoryUsage(c *Ctx) {
	samples := 5
	for i := 3; i < len(c.Args); i++ {
		if !EqFold(c.Args[i], "samples") || i+1 >= len(c.Args) {
			c.W.WriteError(ErrSyntax)
			return
		}
		n, ok := parseInt(c.Args[i+1])
		if !ok {
			c.W.WriteError(ErrNotInteger)
			return
		}
		if n < 0 {
			c.W.WriteError(ErrSyntax)
			return
		}
		samples = int(min(n, 1<<30))
		if n == 0 {
			samples = -1 // all
		}
		i++
	}
	ent := c.Eng.lookup(c.Args[2], c.Now)
	if ent == nil {
		c.W.WriteNull()
		return
	}
	c.W.WriteInt(int64(entryUsage(ent, samples)))
}

// allocSize rounds n up as Go's small size classes do (near enough for an
// estimate: 8, then 16-byte steps, then 1/8 of the size).
func allocSize(n uintptr) uintptr {
	switch {
	case n <= 8:
		return 8
	case n <= 256:
		return (n + 15) &^ 15
	}
	step := uintptr(1)
	for step*16 < n {
		step <<= 1
	}
	return (n + step - 1) &^ (step - 1)
}

// Fixed costs in the estimate: a keyspace table slot (kslot) at the table's
// load, an expiry index item, a string header, a map entry's overhead.
const (
	usageSlot      = 24
	usageDeadline  = 32
	usageStrHeader = 16
	usageMapEntry  = 24
)

// entryUsage estimates the bytes ent holds; samples < 0 walks every element.
func entryUsage(ent *entry, samples int) uintptr {
	n := uintptr(entryHeader) + uintptr(ent.keyLen()) + uintptr(max(ent.vlen, ent.room())) // APPEND's room too
	o := ent.obj()
	if o != nil {
		n += objSize
	}
	total := allocSize(n) + usageSlot
	if ent.deadline != 0 {
		total += usageDeadline
	}
	if o == nil {
		return total
	}
	total += allocSize(unsafe.Sizeof(object{}))
	// each element's bytes, sampled, scaled up to the whole
	sampled := func(count int, each func(yield func(size uintptr) bool)) uintptr {
		var sum uintptr
		seen := 0
		each(func(size uintptr) bool {
			sum += allocSize(size)
			seen++
			return samples < 0 || seen < samples
		})
		if seen == 0 {
			return 0
		}
		return sum * uintptr(count) / uintptr(seen)
	}
	switch v := o.v.(type) {
	case *hash:
		if v.m == nil {
			total += uintptr(cap(v.lp)) * 2 * usageStrHeader
			total += sampled(len(v.lp), func(yield func(uintptr) bool) {
				for _, p := range v.lp {
					if !yield(uintptr(len(p.field)) + uintptr(len(p.value))) {
						return
					}
				}
			})
		} else {
			total += uintptr(len(v.m)) * (2*usageStrHeader + usageMapEntry)
			total += sampled(len(v.m), func(yield func(uintptr) bool) {
				for f, val := range v.m {
					if !yield(uintptr(len(f)) + uintptr(len(val))) {
						return
					}
				}
			})
		}
	case *list:
		total += uintptr(len(v.buf)) * usageStrHeader
		total += sampled(v.n, func(yield func(uintptr) bool) {
			for i := 0; i < v.n; i++ {
				if !yield(uintptr(len(v.At(i)))) {
					return
				}
			}
		})
	case *set:
		total += uintptr(cap(v.list))*usageStrHeader + uintptr(len(v.idx))*(usageStrHeader+8+usageMapEntry)
		total += sampled(len(v.list), func(yield func(uintptr) bool) {
			for _, m := range v.list {
				if !yield(uintptr(len(m))) {
					return
				}
			}
		})
	case *zset:
		// a map entry (member, score) and a tree item (score, member)
		total += uintptr(v.Len()) * (usageStrHeader + 8 + usageMapEntry + usageStrHeader + 8)
		total += sampled(v.Len(), func(yield func(uintptr) bool) {
			for i := 0; i < v.Len(); i++ {
				if !yield(uintptr(len(v.At(i).member))) {
					return
				}
			}
		})
	}
	return total
}

// MEMORY STATS: Redis 7.0's fields, in its order, from the figures INFO
// memory reports (memFigures): nothing is held for replication, AOF or
// cluster links, the Go heap's figures stand for jemalloc's, and each
// database with keys has Redis's estimate of its tables' overhead. Ratios
// and percentages are floats, as Redis's are (so they print alike).
func cmdMemoryStats(c *Ctx) {
	f := c.Eng.memFigures() // every database's keys, as Redis's total_keys
	m := f.m
	ratio := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(float32(float64(a) / float64(b)))
	}
	perKey := uint64(0)
	if f.keys > 0 {
		perKey = max(f.net, 1) / uint64(f.keys)
	}
	w := c.W
	w.WriteMap(27 + len(f.dbs))
	num := func(name string, v uint64) {
		w.WriteBulkString(name)
		w.WriteInt(int64(v))
	}
	diff := func(name string, a, b uint64) { // a - b, which may be negative
		w.WriteBulkString(name)
		w.WriteInt(int64(a) - int64(b))
	}
	dbl := func(name string, v float64) {
		w.WriteBulkString(name)
		w.WriteDouble(v)
	}
	num("peak.allocated", m.peak)
	num("total.allocated", m.used)
	num("startup.allocated", f.startup)
	num("replication.backlog", 0)
	num("clients.slaves", 0)
	num("clients.normal", uint64(max(f.clients, 0)))
	num("cluster.links", 0)
	num("aof.buffer", 0)
	num("lua.caches", f.scriptBytes)
	num("functions.caches", uint64(f.fnBytes))
	for _, d := range f.dbs {
		w.WriteBulkString("db." + strconv.Itoa(d.idx))
		w.WriteMap(3)
		num("overhead.hashtable.main", d.main)
		num("overhead.hashtable.expires", d.expires)
		num("overhead.hashtable.slot-to-keys", 0) // no cluster
	}
	num("overhead.total", f.overhead)
	num("keys.count", uint64(f.keys))
	num("keys.bytes-per-key", perKey)
	num("dataset.bytes", f.dataset)
	dbl("dataset.percentage", ratio(f.dataset*100, max(f.net, 1)))
	dbl("peak.percentage", ratio(m.used*100, m.peak))
	num("allocator.allocated", m.used)
	num("allocator.active", m.active)
	num("allocator.resident", m.resident)
	dbl("allocator-fragmentation.ratio", ratio(m.active, m.used))
	diff("allocator-fragmentation.bytes", m.active, m.used)
	dbl("allocator-rss.ratio", ratio(m.resident, m.active))
	diff("allocator-rss.bytes", m.resident, m.active)
	dbl("rss-overhead.ratio", ratio(m.rss, m.resident))
	diff("rss-overhead.bytes", m.rss, m.resident)
	dbl("fragmentation", ratio(m.rss, m.used))
	diff("fragmentation.bytes", m.rss, m.used)
}

// MEMORY DOCTOR: Redis's two reports that apply to a Go heap, the empty
// instance and the healthy one; the others read allocator and replica
// figures tumbler does not have. Redis calls an instance empty under 5 MB
// allocated, which it is for its first thousands of keys; a Go process
// starts with several MB of heap, so the 5 MB are counted from start-up.
func cmdMemoryDoctor(c *Ctx) {
	used := readMemory().used
	if used-min(c.Eng.obs.startMem, used) < 5<<20 {
		c.W.WriteVerbatim("txt", memoryDoctorEmpty)
		return
	}
	c.W.WriteVerbatim("txt", memoryDoctorHealthy)
}

const (
	memoryDoctorEmpty   = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	memoryDoctorHealthy = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
)
