package engine

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// dirtyNow reads the change counter, INFO persistence's
// rdb_changes_since_last_save.
func (te *testEngine) dirtyNow() int64 {
	te.t.Helper()
	info := te.do("INFO", "persistence")
	_, v, ok := strings.Cut(info, "rdb_changes_since_last_save:")
	if !ok {
		te.t.Fatalf("INFO persistence without rdb_changes_since_last_save: %q", info)
	}
	v, _, _ = strings.Cut(v, "\r\n")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		te.t.Fatalf("rdb_changes_since_last_save:%s", v)
	}
	return n
}

// dirtyStep is a command and what it adds to the change counter, as Redis
// 7.0's server.dirty.
type dirtyStep struct {
	cmd  string
	want int64
}

// runDirtySteps runs steps on one client ("" is an empty argument).
func runDirtySteps(t *testing.T, te *testEngine, steps []dirtyStep) {
	t.Helper()
	w := &enginetest.TextWriter{}
	ctx := &Ctx{W: w, Client: &Client{ID: 1}}
	for _, st := range steps {
		var args [][]byte
		for _, a := range strings.Fields(st.cmd) {
			if a == `""` {
				a = ""
			}
			args = append(args, []byte(a))
		}
		before := te.dirtyNow()
		w.Reset()
		ctx.Args = args
		te.Exec(ctx)
		if got := te.dirtyNow() - before; got != st.want {
			t.Errorf("%s (reply %q): dirty +%d, want +%d", st.cmd, w.String(), got, st.want)
		}
	}
}

func TestDirty_CountsWhatEachCommandChanges(t *testing.T) {
	for name, steps := range map[string][]dirtyStep{
		"strings": {
			{"SET k v", 1}, {"SET k v NX", 0}, {"SET n v XX", 0}, {"SET k v XX GET", 1}, {"SET k v PX 0", 0}, {"GET k", 0},
			{"GETSET k w", 1}, {"GETDEL k", 1}, {"GETDEL k", 0}, {"SETNX k v", 1}, {"SETNX k v", 0},
			{"MSET a 1 b 2 c 3", 3}, {"MSET a 1 b", 0}, {"MSETNX a 1 d 4", 0}, {"MSETNX d 4 e 5", 2},
			{"APPEND s x", 1}, {"APPEND s y", 1}, {"INCR i", 1}, {"INCRBY i x", 0}, {"INCR s", 0}, {"INCRBYFLOAT f 1.5", 1},
			{"SET g v", 1}, {"GETEX g", 0}, {"GETEX g EX 100", 1}, {"GETEX g PERSIST", 1}, {"GETEX g PERSIST", 0}, {"GETEX g PXAT 1", 1}, {"GETEX g EX 1", 0},
		},
		"bits": {
			{"SETBIT b 7 1", 1}, {"SETBIT b 7 1", 0}, {"SETBIT b 7 0", 1}, {"SETBIT b 20 0", 1}, {"SETBIT b 20 0", 0},
			{"SETRANGE r 2 ab", 1}, {"SETRANGE r 0 \"\"", 0}, {"BITOP OR d b r", 1}, {"BITOP AND d nosuch", 1}, {"BITOP AND d nosuch", 0},
			{"BITFIELD f SET u8 0 1 SET u8 0 1 SET u8 8 0", 3}, {"BITFIELD f SET u8 0 1 SET u8 8 0 GET u8 0", 0}, {"BITFIELD f INCRBY u8 0 1 INCRBY u8 0 0", 1},
			{"BITFIELD f OVERFLOW FAIL INCRBY u8 0 255", 0},
		},
		"keys": {
			{"MSET a 1 b 2", 2}, {"DEL a b nosuch", 2}, {"DEL a", 0}, {"SET k v", 1}, {"EXPIRE k 100", 1}, {"EXPIRE k 100", 1}, {"EXPIRE k 100 NX", 0},
			{"PERSIST k", 1}, {"PERSIST k", 0}, {"EXPIRE nosuch 1", 0}, {"PEXPIRE k -1", 1}, {"SET a 1", 1}, {"RENAME a b", 1}, {"RENAME b b", 0},
			{"RENAMENX b b", 0}, {"COPY b c", 1}, {"COPY b c", 0}, {"COPY b c REPLACE", 1}, {"MOVE c 3", 1}, {"MOVE b 3", 1}, {"MOVE nosuch 3", 0},
			{"SWAPDB 0 3", 1}, {"SWAPDB 2 2", 1}, {"SWAPDB 0 99", 0}, {"FLUSHDB", 2}, {"FLUSHDB", 0}, {"SET x 1", 1}, {"SELECT 5", 0}, {"FLUSHALL", 1},
		},
		"hashes": {
			{"HSET h a 1 b 2", 2}, {"HSET h a 1", 1}, {"HMSET h a 1 c 3", 2}, {"HSETNX h a 1", 0}, {"HSETNX h d 1", 1}, {"HINCRBY h n 1", 1}, {"HINCRBYFLOAT h n 1.5", 1},
			{"HDEL h a nosuch b", 2}, {"HDEL h nosuch", 0}, {"HDEL h c d n", 3}, {"HSET s", 0},
		},
		"lists": {
			{"LPUSH l a b c", 3}, {"RPUSHX l d", 1}, {"LPUSHX nosuch a", 0}, {"LINSERT l BEFORE a z", 1}, {"LINSERT l BEFORE nosuch z", 0},
			{"LSET l 0 y", 1}, {"LSET l 99 y", 0}, {"LREM l 0 nosuch", 0}, {"LREM l 0 y", 1}, {"LTRIM l 0 -1", 0}, {"LTRIM l 1 2", 2},
			{"RPUSH l 1 2 3", 3}, {"LPOP l", 1}, {"LPOP l 0", 0}, {"LPOP l 2", 2}, {"RPOP l 10", 2}, {"RPOP l", 0},
			{"RPUSH s a b c", 3}, {"LMOVE s d LEFT RIGHT", 1}, {"RPOPLPUSH s s", 1}, {"LMPOP 1 s LEFT COUNT 5", 2}, {"LMPOP 1 s LEFT", 0},
			{"RPUSH x 1 2 3", 3}, {"BLPOP x 0", 1}, {"BLMPOP 0 1 x RIGHT COUNT 5", 2}, {"RPUSH y 1", 1}, {"BLMOVE y z LEFT RIGHT 0", 1},
		},
		"sets": {
			{"SADD s 1 2 3", 3}, {"SADD s 1 4", 1}, {"SREM s 1 9", 1}, {"SMOVE s t 2", 2}, {"SADD t 3", 1}, {"SMOVE s t 3", 1}, {"SMOVE s t 9", 0},
			{"SPOP s", 1}, {"SPOP s", 0}, {"SADD p 1 2 3 4", 4}, {"SPOP p 2", 2}, {"SPOP p 10", 2}, {"SPOP p 0", 0},
			{"SADD a 1 2", 2}, {"SINTERSTORE d a a", 1}, {"SDIFFSTORE d a a", 1}, {"SDIFFSTORE d a a", 0}, {"SUNIONSTORE d a", 1},
		},
		"sorted sets": {
			{"ZADD z 1 a 2 b", 2}, {"ZADD z 1 a 2 b", 0}, {"ZADD z 1 a 3 b 4 c", 2}, {"ZADD z NX 9 a 5 d", 1}, {"ZADD z XX 9 a 9 e", 1}, {"ZADD z GT 1 a", 0},
			{"ZADD z INCR 1 a", 1}, {"ZINCRBY z 0 a", 0}, {"ZADD z XX INCR 1 nope", 0}, {"ZADD i +inf m", 1}, {"ZINCRBY i -inf m", 0},
			{"ZREM z a nope", 1}, {"ZREMRANGEBYRANK z 0 0", 1}, {"ZREMRANGEBYSCORE z 100 200", 0}, {"ZPOPMIN z", 1}, {"ZPOPMAX z 5", 1},
			{"ZADD y 1 a 2 b 3 c", 3}, {"ZRANGESTORE r y 0 -1", 1}, {"ZRANGESTORE r y 5 9", 1}, {"ZRANGESTORE r y 5 9", 0},
			{"ZUNIONSTORE u 1 y", 1}, {"ZMPOP 1 y MIN COUNT 2", 2}, {"BZPOPMAX y 0", 1}, {"BZPOPMAX y 0.01", 0},
		},
		"sort": {
			{"RPUSH l 3 1 2", 3}, {"SORT l", 0}, {"SORT l STORE d", 3}, {"SORT l LIMIT 0 1 STORE d", 1}, {"SORT nosuch STORE d", 1}, {"SORT nosuch STORE d", 0},
		},
		"transactions": {
			{"MULTI", 0}, {"SET a 1", 0}, {"INCR a", 0}, {"DEL a", 0}, {"EXEC", 3},
		},
	} {
		t.Run(name, func(t *testing.T) {
			runDirtySteps(t, newTestEngine(t), steps)
		})
	}
}

// Reclaiming a key past its deadline, lazily or actively, is no change
// of the data set (Redis 7.0's deleteExpiredKeyAndPropagate adds nothing);
// FLUSHDB counts a key not yet reclaimed, as emptyData does.
func TestDirty_ExpiryAddsNothing(t *testing.T) {
	te := newTestEngine(t)
	runDirtySteps(t, te, []dirtyStep{{"SET a v PX 10", 1}, {"SET b v PX 10", 1}, {"SET c v PX 10", 1}})
	te.clock.Advance(11 * time.Millisecond)
	runDirtySteps(t, te, []dirtyStep{{"GET a", 0}, {"SET b v2 NX", 1}, {"DBSIZE", 0}})
	before := te.dirtyNow()
	if n, _, _ := te.ReclaimDue(100); n != 1 {
		t.Fatalf("reclaimed %d keys, want 1 (a was reclaimed on access, b replaced, c is due)", n)
	}
	runDirtySteps(t, te, []dirtyStep{{"SET d v PX 10", 1}})
	te.clock.Advance(11 * time.Millisecond)
	if n, _, _ := te.ReclaimDue(100); n != 1 {
		t.Fatalf("reclaimed %d keys, want 1", n)
	}
	if got := te.dirtyNow() - before; got != 1 {
		t.Errorf("dirty +%d across active expiry, want +1 (the SET)", got)
	}
}

// Serving a blocked client counts as Redis 7.0 does: BLPOP's element and
// BLMOVE's move not at all (serveClientBlockedOnList), BLMPOP's and the
// sorted sets' elements each.
func TestDirty_BlockedClientsServed(t *testing.T) {
	for _, tc := range []struct {
		block, push string
		want        int64 // the push and the serving together
	}{
		{"BLPOP q 0", "RPUSH q a b", 2},
		{"BRPOP q 0", "RPUSH q a b", 2},
		{"BLMOVE q d LEFT RIGHT 0", "RPUSH q a b", 2},
		{"BRPOPLPUSH q d 0", "RPUSH q a b", 2},
		{"BLMPOP 0 1 q LEFT COUNT 5", "RPUSH q a b", 4},
		{"BZPOPMIN q 0", "ZADD q 1 a 2 b", 3},
		{"BZMPOP 0 1 q MAX COUNT 5", "ZADD q 1 a 2 b", 4},
	} {
		te := newTestEngine(t)
		a, b := te.blockingClient(1), te.blockingClient(2)
		if got := a.run(strings.Fields(tc.block)...); got != "" {
			t.Fatalf("%s replied %q, want it blocked", tc.block, got)
		}
		before := te.dirtyNow()
		b.run(strings.Fields(tc.push)...)
		if !isClosed(a.ctx.Blocked.Done()) {
			t.Fatalf("%s: not served by %s", tc.block, tc.push)
		}
		a.finish(WaitWoken)
		if got := te.dirtyNow() - before; got != tc.want {
			t.Errorf("%s served by %s: dirty +%d, want +%d", tc.block, tc.push, got, tc.want)
		}
	}
}

// The counter starts at 0 and nothing resets it (tumbler never saves).
func TestDirty_StartsAtZeroNeverReset(t *testing.T) {
	te := newTestEngine(t)
	if got := te.dirtyNow(); got != 0 {
		t.Fatalf("new engine: rdb_changes_since_last_save:%d", got)
	}
	te.do("MSET", "a", "1", "b", "2")
	te.do("RPUSH", "l", "x", "y", "z")
	te.do("CONFIG", "RESETSTAT")
	te.do("FLUSHALL")
	if got := te.dirtyNow(); got != 8 { // 2 + 3, and FLUSHALL 3 keys
		t.Errorf("rdb_changes_since_last_save:%d, want 8", got)
	}
}
