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
	"time"
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
//     buffer and count once), and after each batch, once its replies are
//     written (with the replies while their write is slow);
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
// that entered it first, as last measured: a connection whose goroutine
// runs a batch or writes its replies is measured by itself once they are
// out, not by the tick, for up to 100 ms (busyFor), so a client gets the
// replies of the commands that made it large before it is evicted, as a
// Redis client does unless another client's command runs in the same
// event-loop iteration.

// clientEviction is the server's side of maxmemory-clients.
type clientEviction struct {
	limit   atomic.Int64  // bytes (getClientEvictionLimit); 0: no limit
	sum     atomic.Int64  // every connection's acc and kept
	kept    atomic.Int64  // the CLIENT NO-EVICT connections' part of sum
	seq     atomic.Uint64 // orders the entries into buckets
	mu      sync.Mutex    // one pass at a time
	pending atomic.Bool   // a push found the sum over the limit (measurePushed)
	due     atomic.Int32  // CONFIG SET changed the limit: a full pass (evictDue, dueSet)
	warned  atomic.Bool   // the warning logged since the sum was last under
}

// clientMem is one connection's part of the sum.
type clientMem struct {
	acc    atomic.Int64  // what it adds to the sum, evictable
	kept   atomic.Int64  // what it adds to the sum with CLIENT NO-EVICT
	bucket atomic.Int32  // memBucket(acc)
	since  atomic.Uint64 // clientEviction.seq when it entered that bucket
	gone   atomic.Bool   // closed: it adds nothing any more
	// noEvict is CLIENT NO-EVICT: never evicted, and measured only by the
	// tick, as Redis's updateClientMemUsageAndBucket skips such a client
	// and its clientsCron measures it.
	noEvict atomic.Bool
	// busySince is when its goroutine (or event loop) began the batch it
	// runs, until its replies are written (unix ns; 0: not busy), and
	// writing the replies it is about to write or writing. Until that
	// has taken busyFor, only the client measures itself (the tick
	// does not), and the replies do not count: what Redis's write
	// leaves in the buffer counts, and one the peer takes at once
	// leaves nothing.
	busySince atomic.Int64
	writing   atomic.Int64
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

// setEvictionLimit installs a new limit (applyLive). The sum is not kept
// without one: removing the limit takes every connection out of it, so
// that no share measured before stays in it (a pass run when a limit is
// set again, before every connection is measured anew, would evict by
// it), and a new limit measures every connection; CONFIG SET then runs a
// pass.
func (s *Server) setEvictionLimit(n int64) {
	old := s.evict.limit.Swap(n)
	switch {
	case n != 0 && old == 0:
		s.refreshClientMem()
	case n == 0 && old != 0:
		s.clients.Range(func(k, _ any) bool {
			s.addMem(k.(*client), 0, 0)
			return true
		})
	}
}

// refreshClientMem measures every connection but those in the middle of
// a batch (isBusy), which measure themselves once its replies are out:
// what a batch's commands make a client hold (a transaction, watched
// keys) counts from then, so that it gets their replies before it is
// evicted for it, as a client of Redis does whose replies go out in the
// same event-loop iteration (the cron never runs inside it).
func (s *Server) refreshClientMem() {
	s.clients.Range(func(k, _ any) bool {
		if c := k.(*client); !c.isBusy() {
			s.account(c, false)
		}
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
	acc, kept := m, int64(0)
	if c.mem.noEvict.Load() {
		acc, kept = 0, m
	}
	sum := s.addMem(c, acc, kept)
	if c.mem.gone.Load() { // unaccounted meanwhile: take it out again
		sum = s.addMem(c, 0, 0)
	}
	if b := memBucket(m); c.mem.bucket.Load() != b || c.mem.since.Load() == 0 {
		c.mem.bucket.Store(b)
		c.mem.since.Store(s.evict.seq.Add(1))
	}
	return sum >= lim
}

// addMem makes acc and kept c's parts of the sum, and returns the sum.
// Each part is swapped in, and the sums changed by the difference, so
// that measures of one client by several goroutines at once leave the
// sums the total of what each client last recorded.
func (s *Server) addMem(c *client, acc, kept int64) int64 {
	ev := &s.evict
	dk := kept - c.mem.kept.Swap(kept)
	if dk != 0 {
		ev.kept.Add(dk)
	}
	return ev.sum.Add(acc - c.mem.acc.Swap(acc) + dk)
}

// unaccount takes a closing connection out of the sum.
func (s *Server) unaccount(c *client) {
	c.mem.gone.Store(true)
	s.addMem(c, 0, 0)
}

// noEvictChanged is CLIENT NO-EVICT turned on or off: the client's
// memory moves to the other part of the sum. Turned off, it enters its
// bucket anew (Redis's updateClientMemUsageAndBucket puts it at the
// bucket's tail); turned on, it leaves the buckets.
func (s *Server) noEvictChanged(c *client, on bool) {
	if !on {
		c.mem.since.Store(0)
	}
	s.account(c, true)
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

// busyFor is how long a connection's batch and the write of its replies
// may take before the tick measures it as it is: the tick's interval, so
// that the tick counts a write a slow peer holds up (or a command that
// blocks).
const busyFor = 100 * time.Millisecond

// busy marks c's batch begun (beginBatch), while a limit is set.
func (s *Server) busy(c *client) {
	if s.evict.limit.Load() != 0 {
		c.mem.busySince.Store(time.Now().UnixNano())
	}
}

// unwritten records, once a batch has run, the replies c is about to
// write (writeStart): they count only if their write is slow. c is
// measured once they are written (written), with what the batch left (a
// transaction queued, keys watched), and the pass runs then: Redis
// evicts after it writes its replies (beforeSleep), so a client gets its
// replies before it is evicted for what its commands made it hold, and
// replies the peer takes at once evict nobody.
func (s *Server) unwritten(c *client) {
	if s.evict.limit.Load() != 0 && !c.mem.noEvict.Load() && !c.w.shared {
		c.writeStart() // (a push-capable client's output counts as it is: pendingOutput)
	}
}

// writeStart records the replies c's goroutine is about to write, for the
// others' measures.
func (c *client) writeStart() {
	c.mem.writing.Store(int64(c.w.size()))
	if c.mem.busySince.Load() == 0 {
		c.mem.busySince.Store(time.Now().UnixNano())
	}
}

// written measures c again once its replies went out, from its own
// goroutine or event loop, as Redis's writeToClient does after each
// write (an idle client does not go on counting a reply it was sent),
// and runs the pass Redis's beforeSleep runs after writing.
func (s *Server) written(c *client) {
	if c.mem.busySince.Load() != 0 {
		c.mem.busySince.Store(0)
	}
	if c.mem.writing.Load() != 0 {
		c.mem.writing.Store(0)
	}
	if s.evict.limit.Load() != 0 {
		s.measure(c, true)
	}
}

// isBusy reports whether c's goroutine runs a batch, or writes its
// replies, and has for less than busyFor: the tick does not measure it.
func (c *client) isBusy() bool {
	t := c.mem.busySince.Load()
	return t != 0 && time.Now().UnixNano()-t < int64(busyFor)
}

// slowOutput is the replies c's goroutine is writing, once it has been
// busy for busyFor (0: none, or not yet).
func (c *client) slowOutput() int {
	n := c.mem.writing.Load()
	if n == 0 || c.isBusy() {
		return 0
	}
	return int(n)
}

// afterPushes runs the pass a command's pushes made due, once the command
// has run.
func (s *Server) afterPushes() {
	if s.evict.pending.Load() && s.evict.pending.Swap(false) {
		s.evictClients(false, nil)
	}
}

// evictDue runs the full pass a CONFIG SET made due, where replies have
// just been written: the caller's own goroutine (or event loop) runs it
// once its +OK is out, so that it sees the pass done when it sends its
// next command, and is itself evicted only after its reply, as in Redis.
func (s *Server) evictDue() {
	if s.evict.due.Load() != dueNone && s.evict.due.Swap(dueNone) != dueNone {
		s.evictClients(true, nil)
	}
}

// The states of clientEviction.due.
const (
	dueNone   = iota
	dueSet    // a CONFIG SET runs or its reply is to be written
	dueWaited // and a tick has left the pass to it once
)

// evictionTick is the 100 ms pass: every connection measured, and
// evicted down to the limit. A pass a CONFIG SET made due is left to its
// caller for one tick: the caller is measured as the limit is set
// (refreshClientMem), before its batch is marked busy, and the tick
// evicting it then would cut off its +OK, which Redis writes before its
// pass (its cron measures, beforeSleep evicts after the replies).
func (s *Server) evictionTick() {
	if s.evict.limit.Load() == 0 {
		return
	}
	s.evict.pending.Store(false)
	s.refreshClientMem()
	if s.evict.due.CompareAndSwap(dueSet, dueWaited) {
		return
	}
	s.evict.due.Store(dueNone)
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
	out := c.pendingOutput() + c.slowOutput()
	if self {
		argv = 0
		if !c.w.shared && c.mem.writing.Load() == 0 {
			out += c.w.size() // the replies so far of a batch that runs
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
// is below the limit (evictClients). While the CLIENT NO-EVICT
// connections alone hold the limit, every evictable connection is to go
// (Redis's pass empties every bucket): then a pass for a connection that
// measured itself (self, not forced) evicts just that one, if it may,
// rather than walk every client at every command; the others go at their
// own next command, or at the next pass without a self (pushes, the
// tick).
func (s *Server) evictClients(force bool, self *client) {
	ev := &s.evict
	over := func() bool {
		lim := ev.limit.Load()
		return lim != 0 && ev.sum.Load() >= lim
	}
	if !over() {
		ev.warned.Store(false)
		return
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !over() {
		return
	}
	if !force && self != nil && ev.kept.Load() >= ev.limit.Load() {
		if !self.mem.noEvict.Load() && !self.fx.dead.Load() {
			s.evictOne(self)
		}
		s.warnOver()
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
			return
		}
		s.evictOne(x.c)
	}
	if over() {
		s.warnOver()
	}
}

// warnOver logs, once until the sum is under the limit again, that
// evicting every evictable client did not bring it under.
func (s *Server) warnOver() {
	if !s.evict.warned.Swap(true) {
		s.log.Warn("Over client maxmemory after evicting all evictable clients")
	}
}

// evictOne disconnects c, as evictClients does each client. A client
// that went meanwhile (it closed, CLIENT KILL) is not counted or logged.
// Requires the pass's mu.
func (s *Server) evictOne(c *client) {
	line := s.clientLine(c, false)
	// Counted before it leaves the client list, so that whoever sees it
	// gone sees it counted; taken back if it had gone already.
	s.eng.Stats.EvictedClients.Add(1)
	killed := s.kill(c)
	s.unaccount(c) // (either way it is gone)
	if !killed {
		s.eng.Stats.EvictedClients.Add(-1)
		return
	}
	s.log.Info("Evicting client: " + line)
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
