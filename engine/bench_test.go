package engine

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

func benchEngine(b *testing.B, keys int) *Engine {
	e := New(Config{})
	w := &enginetest.TextWriter{}
	for i := 0; i < keys; i++ {
		e.Exec(&Ctx{Args: [][]byte{[]byte("SET"), []byte("lock:" + strconv.Itoa(i)), []byte("v")}, W: w})
		w.Reset()
	}
	return e
}

// nopWriter discards replies, so benchmarks measure dispatch alone.
type nopWriter struct{}

func (nopWriter) Proto() int                { return 2 }
func (nopWriter) CopiesReplies()            {} // keeps nothing, as a connection's writer
func (nopWriter) WriteStatus(string)        {}
func (nopWriter) WriteError(string)         {}
func (nopWriter) WriteInt(int64)            {}
func (nopWriter) WriteBulk([]byte)          {}
func (nopWriter) WriteBulkString(string)    {}
func (nopWriter) WriteNull()                {}
func (nopWriter) WriteNullArray()           {}
func (nopWriter) WriteArray(int)            {}
func (nopWriter) WriteMap(int)              {}
func (nopWriter) WriteSet(int)              {}
func (nopWriter) WriteBool(bool)            {}
func (nopWriter) WriteDouble(float64)       {}
func (nopWriter) WriteVerbatim(_, _ string) {}
func (nopWriter) WriteBigNumber(_ string)   {}

func BenchmarkScan100kKeysCount10(b *testing.B) {
	e := benchEngine(b, 100_000)
	c := &Ctx{Args: [][]byte{[]byte("SCAN"), []byte("0"), []byte("COUNT"), []byte("10")}, W: nopWriter{}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

func BenchmarkGet(b *testing.B) {
	e := benchEngine(b, 1000)
	c := &Ctx{Args: [][]byte{[]byte("GET"), []byte("lock:7")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

func BenchmarkSetNXPX(b *testing.B) {
	e := benchEngine(b, 0)
	c := &Ctx{Args: [][]byte{[]byte("set"), []byte("lock:1"), []byte("token-0123456789abcdef"), []byte("px"), []byte("30000"), []byte("nx")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

// BenchmarkSet_Overwrite is a plain SET over an existing key, as
// redis-benchmark's SET over its key range: the new value goes in place
// (entry.overwrite), 0 allocations.
func BenchmarkSet_Overwrite(b *testing.B) {
	e := benchEngine(b, 1000)
	c := &Ctx{Args: [][]byte{[]byte("SET"), []byte("lock:7"), []byte("token-0123456789abcdef")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

// BenchmarkSetNXPX_Users is SET NX PX from a client authenticated as the
// default user (full access: the ACL check is one branch) and as a user
// restricted to lock:* keys (the check runs: its cost and allocations).
func BenchmarkSetNXPX_Users(b *testing.B) {
	e := benchEngine(b, 0)
	if msg, _ := e.ACL().SetUser("locker", []string{"on", "~lock:*", "+@all", "-@dangerous"}); msg != "" {
		b.Fatal(msg)
	}
	for _, u := range []*ACLUser{e.ACL().Default(), e.ACL().User("locker")} {
		b.Run(u.Name, func(b *testing.B) {
			c := &Ctx{Args: [][]byte{[]byte("set"), []byte("lock:1"), []byte("token-0123456789abcdef"), []byte("px"), []byte("30000"), []byte("nx")},
				W: nopWriter{}, Client: &Client{ACL: u}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Exec(c)
			}
		})
	}
}

// BenchmarkReclaimDue_MassExpiry is the active expiry of a mass expiry:
// 1M locks whose deadlines have all passed, reclaimed in batches of 256 as
// the server's expiry loop does. ns/key is the cost of reclaiming one lock.
func BenchmarkReclaimDue_MassExpiry(b *testing.B) {
	const n, batch = 1_000_000, 256
	clk := expiry.NewManualClock(time.Unix(1_700_000_000, 0))
	e := New(Config{Clock: clk})
	c := &Ctx{W: nopWriter{}}
	tok := []byte("0123456789abcdef0123456789abcdef")
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("lk:%09d", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	reclaimed := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j, k := range keys {
			c.Args = [][]byte{[]byte("SET"), k, tok, []byte("PX"), []byte(strconv.Itoa(10_000 + j/10_000))}
			e.Exec(c)
		}
		clk.Advance(time.Hour)
		b.StartTimer()
		for {
			got, _, _ := e.ReclaimDue(batch)
			reclaimed += got
			if got < batch {
				break
			}
		}
	}
	if reclaimed != n*b.N {
		b.Fatalf("reclaimed %d keys, want %d", reclaimed, n*b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reclaimed), "ns/key")
}

// BenchmarkLockCycle is one granted acquire (SET NX PX on a free key) and
// its release (DEL): the keyspace work of a lock. A grant stores the key,
// the token and the entry in one object (newEntry), so it allocates
// once; the release, the refused acquire (BenchmarkSetNXPX) and GET
// allocate nothing.
func BenchmarkLockCycle(b *testing.B) {
	e := benchEngine(b, 0)
	// Another lock held meanwhile, as on any busy server: the expiry index
	// is never empty, so it does not build a new root for every grant.
	e.Exec(&Ctx{Args: [][]byte{[]byte("set"), []byte("lock:other"), []byte("t"), []byte("px"), []byte("3600000")}, W: nopWriter{}})
	set := &Ctx{Args: [][]byte{[]byte("set"), []byte("lock:1"), []byte("token-0123456789abcdef"), []byte("px"), []byte("30000"), []byte("nx")}, W: nopWriter{}}
	del := &Ctx{Args: [][]byte{[]byte("del"), []byte("lock:1")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(set)
		e.Exec(del)
	}
}

// BenchmarkGetBatch16_1MKeys runs pipelined batches of 16 GETs of random
// keys among a million, as the server does for one connection's batch:
// with Engine.Prefetch before the batch (what the server does) and
// without. At this size every lookup misses the CPU cache; the prefetch
// overlaps the misses of the whole batch.
func BenchmarkGetBatch16_1MKeys(b *testing.B) {
	const n = 1_000_000
	e := New(Config{})
	c := &Ctx{W: nopWriter{}}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%09d", i))
		c.Args = [][]byte{[]byte("SET"), keys[i], []byte("xxx")}
		e.Exec(c)
	}
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", prefetch), func(b *testing.B) {
			batch := make([][]byte, 16)
			ctxs := make([]Ctx, 16)
			for j := range ctxs {
				ctxs[j] = Ctx{Args: [][]byte{[]byte("GET"), nil}, W: nopWriter{}}
			}
			x := uint64(88172645463325252)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 16 {
				for j := range batch {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					batch[j] = keys[x%n]
					ctxs[j].Args[1] = batch[j]
				}
				if prefetch {
					e.Prefetch(0, batch, 0)
				}
				for j := range ctxs {
					e.Exec(&ctxs[j])
				}
			}
		})
	}
}

// BenchmarkNetStripe_ReadWrote is what the server adds to a request's
// socket read and reply write for INFO's network counters; Parallel has
// every goroutine on a stripe of its own, as connections spread over them.
func BenchmarkNetStripe_ReadWrote(b *testing.B) {
	var n NetCounters
	s := n.Stripe(1)
	for i := 0; i < b.N; i++ {
		s.Read(40)
		s.Wrote(7)
	}
}

func BenchmarkNetStripe_ReadWroteParallel(b *testing.B) {
	var n NetCounters
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		s := n.Stripe(next.Add(1))
		for pb.Next() {
			s.Read(40)
			s.Wrote(7)
		}
	})
}

// BenchmarkSetLargeValue is SET of a 100 KB value over the same key: the
// new entry's allocation and copy (newLargeEntry), and the old one's
// collection.
func BenchmarkSetLargeValue(b *testing.B) {
	e := benchEngine(b, 0)
	c := &Ctx{Args: [][]byte{[]byte("SET"), []byte("k"), make([]byte, 100_000)}, W: nopWriter{}}
	b.ReportAllocs()
	b.SetBytes(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}
