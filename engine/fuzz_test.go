package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
	"github.com/tumblerdb/tumbler/expiry"
)

// FuzzExec sends arbitrary argument vectors (NUL-separated in the input)
// through the dispatcher, several to a connection so that MULTI, WATCH
// and blocking commands interact. It must never panic, every command must
// write exactly one reply (or block, and write one when its wait ends) and
// the keyspace invariants must hold after each.
func FuzzExec(f *testing.F) {
	for _, s := range []string{
		"SET\x00lock\x00tok\x00PX\x0030000\x00NX", "GET\x00lock", "DEL\x00lock", "SET\x00k\x00v\x00NX\x00XX",
		"SET\x00k\x00v\x00EX\x00-1", "PEXPIRE\x00k\x00100\x00GT\x00LT", "INCR\x00n", "INCRBY\x00n\x009223372036854775807",
		"HSET\x00h\x00f\x00v", "LPUSH\x00l\x00a\x00b", "BLPOP\x00l\x000", "BLPOP\x00empty\x001", "MULTI", "EXEC",
		"WATCH\x00k", "DISCARD", "SCAN\x000\x00COUNT\x00-1", "KEYS\x00*", "SET\x00k\x00v\x00IFEQ\x00v", "OBJECT\x00ENCODING\x00k",
		"CONFIG\x00GET\x00*", "COMMAND\x00INFO\x00get", "EVAL\x00return 1\x000", "TTL\x00k", "EXPIRETIME\x00k",
		"GETEX\x00k\x00PERSIST", "CLIENT\x00SETNAME\x00a b", "", "\x00", "NOSUCH", "get",
		"ZADD\x00z\x001\x00a\x002\x00b", "ZUNIONSTORE\x00d\x002\x00z\x00s\x00WEIGHTS\x002\x00-inf\x00AGGREGATE\x00MAX",
		"ZINTER\x002\x00z\x00z\x00WITHSCORES", "ZDIFFSTORE\x00z\x001\x00z", "ZRANGESTORE\x00d\x00z\x00(1\x00+inf\x00BYSCORE\x00LIMIT\x000\x001",
		"ZRANDMEMBER\x00z\x00-5\x00WITHSCORES", "ZMPOP\x001\x00z\x00MIN\x00COUNT\x002", "BZPOPMIN\x00z\x000", "BZMPOP\x000.01\x001\x00z\x00MAX",
		"ZRANGE\x00z\x00[a\x00+\x00BYLEX\x00REV", "ZINCRBY\x00z\x00inf\x00a", "SADD\x00s\x001\x00x", "SINTERSTORE\x00d\x00s\x00z",
		"SPOP\x00s\x003", "SRANDMEMBER\x00s\x00-3", "SINTERCARD\x001\x00s\x00LIMIT\x001", "HRANDFIELD\x00h\x00-2\x00WITHVALUES",
		"RENAME\x00z\x00l", "COPY\x00z\x00d\x00REPLACE", "INCRBYFLOAT\x00f\x001e308", "LMPOP\x001\x00l\x00LEFT", "BLMOVE\x00l\x00l\x00LEFT\x00RIGHT\x000",
		"FCALL\x00f\x001\x00k", "FUNCTION\x00LOAD\x00#!lua name=l\nredis.register_function('f', function() end)", "FUNCTION\x00LIST\x00WITHCODE",
		"FUNCTION\x00RESTORE\x00" + string(dumpFooter([]byte("\xf5\x09#!x name=l"))) + "\x00REPLACE", "FUNCTION\x00STATS", "FUNCTION\x00KILL",
		"SETBIT\x00k\x008388607\x001", "SETRANGE\x00k\x001048575\x00x", "BITCOUNT\x00k\x00-9223372036854775808\x00-1\x00BIT",
		"BITPOS\x00k\x000\x003\x00-1\x00BIT", "BITOP\x00XOR\x00d\x00k\x00n\x00d", "BITFIELD\x00k\x00OVERFLOW\x00SAT\x00INCRBY\x00i64\x00#3\x00-9223372036854775808",
		"BITFIELD_RO\x00k\x00GET\x00u63\x008388600", "LCS\x00k\x00v\x00IDX\x00MINMATCHLEN\x001\x00WITHMATCHLEN",
	} {
		f.Add([]byte(s), []byte("SET\x00k\x00v"), []byte("GET\x00k"))
	}
	clk := expiry.NewManualClock(time.UnixMilli(1_700_000_000_000))
	e := New(Config{Clock: clk})
	e.SetProtoMaxBulkLen(1 << 20) // a fuzzed bit offset makes at most a 1 MB string, not 512 MB
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		if len(a)+len(b)+len(c) > 4096 {
			return
		}
		e.Exec(&Ctx{Args: [][]byte{[]byte("FLUSHALL")}, W: &enginetest.TextWriter{}})
		cl := &Client{ID: 1}
		for _, in := range [][]byte{a, b, c, []byte("EXEC"), []byte("UNWATCH")} {
			args := bytes.Split(in, []byte{0})
			w := &countWriter{}
			ctx := &Ctx{Args: args, W: w, Client: cl}
			e.Exec(ctx)
			if ctx.Blocked != nil {
				if w.n != 0 {
					t.Fatalf("%q blocked after writing %d replies", in, w.n)
				}
				e.FinishWait(ctx, WaitTimeout)
			}
			if w.n != 1 {
				t.Fatalf("%q wrote %d top-level replies", in, w.n)
			}
			clk.Advance(time.Millisecond)
			if msg := e.CheckInvariants(); msg != "" {
				t.Fatalf("after %q: %s", in, msg)
			}
		}
	})
}

// countWriter counts top-level replies: aggregates count when their last
// element is written.
type countWriter struct {
	n       int
	pending []int
}

func (w *countWriter) value() {
	for len(w.pending) > 0 {
		i := len(w.pending) - 1
		if w.pending[i]--; w.pending[i] > 0 {
			return
		}
		w.pending = w.pending[:i]
	}
	w.n++
}

func (w *countWriter) agg(n int) {
	if n <= 0 {
		w.value()
		return
	}
	w.pending = append(w.pending, n)
}

func (w *countWriter) Proto() int                { return 2 }
func (w *countWriter) WriteStatus(string)        { w.value() }
func (w *countWriter) WriteError(string)         { w.value() }
func (w *countWriter) WriteInt(int64)            { w.value() }
func (w *countWriter) WriteBulk([]byte)          { w.value() }
func (w *countWriter) WriteBulkString(string)    { w.value() }
func (w *countWriter) WriteNull()                { w.value() }
func (w *countWriter) WriteNullArray()           { w.value() }
func (w *countWriter) WriteArray(n int)          { w.agg(n) }
func (w *countWriter) WriteMap(n int)            { w.agg(2 * n) }
func (w *countWriter) WriteSet(n int)            { w.agg(n) }
func (w *countWriter) WriteBool(bool)            { w.value() }
func (w *countWriter) WriteDouble(float64)       { w.value() }
func (w *countWriter) WriteVerbatim(_, _ string) { w.value() }
func (w *countWriter) WriteBigNumber(_ string)   { w.value() }
