package server

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Client eviction (maxmemory-clients), as Redis 7.0's: when the memory all
// connections use together reaches the limit, the largest are
// disconnected until it is below again. A connection's memory is what
// CLIENT LIST shows as its tot-mem (client.memUsage): its read buffer and
// the request it holds, a blocked command's arguments, its queued
// transaction, its unwritten replies and pushes, and Redis's estimates of
// what its watched keys, subscriptions and BCAST prefixes cost.
//
// The sum is kept as Redis keeps it: each connection adds what it was
// last measured at (clientMem.acc) and changes that when it is measured
// again. Only while a limit is set; setting one measures every connection
// (refreshClientMem). They are measured:
//   - by their own goroutine (or event loop) before each command
//     (Redis's processCommand; the command's arguments lie in the read
//     buffer and count once), and after each batch, with its replies;
//   - when their reader waits for more of a request (a large argument
//     arriving: Redis's readQueryFromClient);
//   - when a push is appended to their output or written out;
//   - every 100 ms, all of them (Redis's clientsCron): a connection whose
//     goroutine waits (a reply the peer does not read, a blocked command)
//     measures nothing itself.
//
// An eviction pass (evictClients) runs where a measure finds the sum at
// or over the limit, except for pushes, which may be appended under locks
// the pass takes: the command that pushed runs the pass once it has run
// (Redis runs it in its beforeSleep, before any other command), or the
// 100 ms tick does. It takes the connections Redis would:
// every client but those with CLIENT NO-EVICT, the largest first by
// Redis's buckets (powers of two from 32 KB), within a bucket the one
// that entered it first.

// clientEviction is the server's side of maxmemory-clients.
type clientEviction struct {
	limit   atomic.Int64  // bytes (getClientEvictionLimit); 0: no limit
	sum     atomic.Int64  // every connection's acc
	seq     atomic.Uint64 // orders the entries into buckets
	mu      sync.Mutex    // one pass at a time
	pending atomic.Bool   // a push found the sum over the limit (measurePushed)
	// stuck: the last pass evicted every client it could and the sum is
	// still over the limit (NO-EVICT clients hold it). A client measuring
	// itself is then the only one a pass looks at (any other evictable
	// one is newer than the pass, and goes at its own next measure or
	// the tick), so that a pass is not a walk of every client at every
	// command; the warning is logged once.
	stuck atomic.Bool
}

// clientMem is one connection's part of the sum.
type clientMem struct {
	acc    atomic.Int64  // what it adds to the sum
	bucket atomic.Int32  // memBucket(acc)
	since  atomic.Uint64 // clientEviction.seq when it entered that bucket
	gone   atomic.Bool   // closed: it adds nothing any more
	// noEvict is CLIENT NO-EVICT: never evicted, and measured only by the
	// tick, as Redis's updateClientMemUsageAndBucket skips such a client
	// and its clientsCron measures it.
	noEvict atomic.Bool
	// writing is the reply its goroutine is writing (flush), which
	// another goroutine's measure cannot see otherwise.
	writing atomic.Int64
	// subs and prefixes are what Redis estimates its subscriptions and
	// BCAST prefixes cost (pubsubMemOverhead, and the tracking rax's
	// nodes): set where they change.
	subs, prefixes atomic.Int64
}

// Redis's estimates of a connection's bookkeeping: a watched key is a
// list node and a watchedKey (multiStateMemOverhead); a pattern a list
// node; a channel a dict entry and its slot's pointer; a BCAST prefix
// about two rax nodes of 32 bytes (Redis counts its rax's nodes).
const (
	memWatchedKey = 24 + 32
	memPattern    = 24
	memChannel    = 24
	memPrefix     = 2 * 32
)

// channelsMem is what Redis counts for a dict of n channels: an entry
// each, and a pointer for each slot of its table (a power of two, at
// least 4, that has room for n).
func channelsMem(n int) int64 {
	if n == 0 {
		return 0
	}
	slots := max(4, 1<<bits.Len(uint(n-1)))
	return int64(n*memChannel + slots*8)
}

// memBucket is Redis's getMemUsageBucket: log2 of the size, from 2^15
// (everything below 32 KB is bucket 0) to 2^33.
func memBucket(mem int64) int32 {
	b := int32(bits.Len64(uint64(max(mem, 0))))
	return min(max(b, 15), 33) - 15
}

// evictionLimit is getClientEvictionLimit: maxmemory-clients in bytes, or
// as a percentage of maxmemory (none while maxmemory is 0), and never
// below 128 KB; 0 when there is no limit.
func evictionLimit(c *Config) int64 {
	v := c.param("maxmemory-clients", "0")
	var n int64
	if p, ok := strings.CutSuffix(v, "%"); ok {
		pct, _ := strconv.ParseInt(p, 10, 64)
		if c.MaxMemory == 0 || pct <= 0 {
			return 0
		}
		n = int64(float64(c.MaxMemory) * float64(pct) / 100)
	} else {
		n, _ = strconv.ParseInt(v, 10, 64)
	}
	if n <= 0 {
		return 0
	}
	return max(n, 128<<10)
}

// setEvictionLimit installs a new limit (applyLive). A new limit measures
// every connection (the sum is not kept without one); CONFIG SET then
// runs a pass.
func (s *Server) setEvictionLimit(n int64) {
	if old := s.evict.limit.Swap(n); n != 0 && old == 0 {
		s.refreshClientMem()
	}
}

// refreshClientMem measures every connection.
func (s *Server) refreshClientMem() {
	s.clients.Range(func(k, _ any) bool {
		s.account(k.(*client), false)
		return true
	})
}

// account measures c, with the reader's and the command's state when its
// own goroutine calls (self), and updates the sum. It reports whether the
// sum is at or over the limit.
func (s *Server) account(c *client, self bool) bool {
	lim := s.evict.limit.Load()
	if lim == 0 || c.mem.gone.Load() {
		return false
	}
	m := c.memUsage(self)
	ev := &s.evict
	sum := ev.sum.Add(m - c.mem.acc.Swap(m))
	if c.mem.gone.Load() { // unaccounted meanwhile: take it out again
		sum = ev.sum.Add(-c.mem.acc.Swap(0))
	}
	if b := memBucket(m); c.mem.bucket.Load() != b || c.mem.since.Load() == 0 {
		c.mem.bucket.Store(b)
		c.mem.since.Store(ev.seq.Add(1))
	}
	return sum >= lim
}

// unaccount takes a closing connection out of the sum.
func (s *Server) unaccount(c *client) {
	c.mem.gone.Store(true)
	s.evict.sum.Add(-c.mem.acc.Swap(0))
}

// measure is account followed by a pass when the sum is over the limit.
// It reports whether c itself was evicted.
func (s *Server) measure(c *client, self bool) bool {
	lim := s.evict.limit.Load()
	if lim == 0 {
		return false
	}
	if !c.mem.noEvict.Load() {
		s.account(c, self)
	}
	if s.evict.sum.Load() >= lim {
		s.evictClients(false, c)
	}
	return c.fx.dead.Load()
}

// measurePushed measures a connection whose output another goroutine
// changed; a pass, if due, is left to afterPushes or the tick.
func (s *Server) measurePushed(c *client) {
	if s.evict.limit.Load() != 0 && !c.mem.noEvict.Load() && s.account(c, false) {
		s.evict.pending.Store(true)
	}
}

// afterPushes runs the pass a command's pushes made due, once the command
// has run.
func (s *Server) afterPushes() {
	if s.evict.pending.Load() && s.evict.pending.Swap(false) {
		s.evictClients(false, nil)
	}
}

// evictionTick is the 100 ms pass: every connection measured, and
// evicted down to the limit.
func (s *Server) evictionTick() {
	if s.evict.limit.Load() == 0 {
		return
	}
	s.evict.pending.Store(false)
	s.refreshClientMem()
	s.evictClients(true, nil)
}

// memUsage is the connection's memory, what maxmemory-clients limits
// (getClientMemoryUsage): CLIENT LIST's tot-mem, but for the arguments
// of the command its own goroutine runs (self). Those lie in its read
// buffer, which qbuf counts, so they are not added again (Redis copies
// small arguments out of its query buffer, and CLIENT LIST shows them
// apart, as tumbler's does; before a command runs Redis counts what the
// client held when last measured, not its arguments on top of its
// request). A blocked command's arguments are a copy, and those of a
// partial request stand for the part of the buffer qbuf leaves out: both
// count. Its own goroutine counts the replies its batch has gathered so
// far too.
func (c *client) memUsage(self bool) int64 {
	qbuf, free, argv := c.inputMem(self)
	out := c.pendingOutput() + int(c.mem.writing.Load())
	if self {
		argv = 0
		if !c.w.shared {
			out += len(c.w.b)
		}
	}
	return int64(qbuf+free+argv+out) + c.MultiMem() + c.overhead()
}

// overhead is what Redis estimates the connection's watched keys,
// subscriptions and BCAST prefixes cost.
func (c *client) overhead() int64 {
	return int64(c.WatchedCount())*memWatchedKey + c.mem.subs.Load() + c.mem.prefixes.Load()
}

// evictClients disconnects connections, the largest first, until the sum
// is below the limit (evictClients). Unless forced, while the last pass
// found nothing more to evict (clientEviction.stuck), it looks at self
// only (nil: nothing).
func (s *Server) evictClients(force bool, self *client) {
	ev := &s.evict
	over := func() bool {
		lim := ev.limit.Load()
		return lim != 0 && ev.sum.Load() >= lim
	}
	if !over() {
		ev.stuck.Store(false)
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !over() {
		return
	}
	if !force && ev.stuck.Load() {
		if self != nil && !self.mem.noEvict.Load() && !self.fx.dead.Load() {
			s.evictOne(self)
		}
		return
	}
	type candidate struct {
		c      *client
		bucket int32
		since  uint64
	}
	var cands []candidate
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		if !c.mem.noEvict.Load() && !c.fx.dead.Load() {
			cands = append(cands, candidate{c, c.mem.bucket.Load(), c.mem.since.Load()})
		}
		return true
	})
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.bucket != b.bucket {
			return cmp.Compare(b.bucket, a.bucket)
		}
		return cmp.Compare(a.since, b.since)
	})
	for _, x := range cands {
		if !over() {
			ev.stuck.Store(false)
			return
		}
		s.evictOne(x.c)
	}
	if over() && !ev.stuck.Swap(true) {
		s.log.Warn("Over client maxmemory after evicting all evictable clients")
	}
}

// evictOne disconnects c, as evictClients does each client. Requires the
// pass's mu.
func (s *Server) evictOne(c *client) {
	s.log.Info("Evicting client: " + s.clientLine(c, false))
	s.kill(c)
	s.unaccount(c)
	s.eng.Stats.EvictedClients.Add(1)
}

// ClientsMemory is INFO's mem_clients_normal: what every connection uses,
// as CLIENT LIST's tot-mem counts it. With maxmemory-clients set it is the
// sum eviction keeps (every connection measured within 100 ms, as Redis's
// clientsCron keeps its figure); without, the connections are measured
// now.
func (s *Server) ClientsMemory() int64 {
	if s.evict.limit.Load() != 0 {
		return s.evict.sum.Load()
	}
	var sum int64
	s.clients.Range(func(k, _ any) bool {
		sum += k.(*client).memUsage(false)
		return true
	})
	return sum
}

// evictionBuckets is DEBUG CLIENT-EVICTION's report: for each of Redis's
// buckets, the evictable connections in it and what they were last
// measured at.
func (s *Server) evictionBuckets() string {
	const buckets = 19 // CLIENT_MEM_USAGE_BUCKETS
	var sums, counts [buckets]int64
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		if !c.mem.noEvict.Load() && !c.fx.dead.Load() {
			b := c.mem.bucket.Load()
			sums[b] += c.mem.acc.Load()
			counts[b]++
		}
		return true
	})
	var sb strings.Builder
	for j := range buckets {
		if j == 0 {
			sb.WriteString("bucket          0")
		} else {
			fmt.Fprintf(&sb, "bucket %10d", uint64(1)<<(j-1+15))
		}
		if j == buckets-1 {
			sb.WriteString("+            : ")
		} else {
			fmt.Fprintf(&sb, " - %10d: ", uint64(1)<<(j+15)-1)
		}
		fmt.Fprintf(&sb, "tot-mem: %10d, clients: %d\n", sums[j], counts[j])
	}
	return sb.String()
}
