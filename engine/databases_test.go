package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// as runs one command for client cl (whose SELECT lasts across commands)
// and returns its rendered reply.
func (te *testEngine) as(cl *Client, args ...string) string {
	te.t.Helper()
	w := &enginetest.TextWriter{}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	te.Exec(&Ctx{Args: bargs, W: w, Client: cl})
	return w.String()
}

func (te *testEngine) expectAs(cl *Client, want string, args ...string) {
	te.t.Helper()
	if got := te.as(cl, args...); got != want {
		te.t.Errorf("%q: got %q, want %q", args, got, want)
	}
}

// Between commands the current database is 0, whatever a command SELECTed
// (directly, in a script, in a transaction), so the holders of the lock
// outside commands (the expiry loop, fixtures, INFO) find it there; the
// client's selection persists in Client.DB.
func TestDatabases_CurrentIsZeroBetweenCommands(t *testing.T) {
	te := newTestEngine(t)
	cl := &Client{ID: 1}
	check := func(step string, wantClient int) {
		t.Helper()
		te.Lock()
		db := te.db
		te.Unlock()
		if db != 0 {
			t.Fatalf("after %s: current database %d between commands", step, db)
		}
		if cl.DB() != wantClient {
			t.Fatalf("after %s: client database %d, want %d", step, cl.DB(), wantClient)
		}
	}
	te.expectAs(cl, "+OK", "SELECT", "5")
	check("SELECT 5", 5)
	te.expectAs(cl, "+OK", "SET", "k", "five")
	check("SET", 5)
	te.expectAs(cl, ":1", "EXISTS", "k")
	te.expect(":0", "EXISTS", "k") // no client: database 0
	te.expectAs(cl, "-ERR DB index is out of range", "SELECT", "16")
	check("a refused SELECT", 5)
	te.expectAs(cl, "+OK", "MULTI")
	te.expectAs(cl, "+QUEUED", "SELECT", "6")
	te.expectAs(cl, "+QUEUED", "SET", "k", "six")
	te.as(cl, "EXEC")
	check("EXEC with SELECT 6", 6)
	te.expectAs(cl, "$six", "GET", "k")
	te.expectAs(cl, "+PONG", "PING") // (a no-keys command: runs without the lock)
	check("PING", 6)
	te.expectAs(cl, "+OK", "SWAPDB", "6", "0")
	check("SWAPDB", 6)
	te.expectAs(cl, ":0", "EXISTS", "k")
	te.expect(":1", "EXISTS", "k")
	if keys, _ := te.KeyCount(); keys != 2 {
		t.Fatalf("KeyCount = %d, want 2 (databases 0 and 5)", keys)
	}
	cl.ResetDB()
	check("ResetDB", 0)
	te.expectAs(cl, "$six", "GET", "k")
}

// A database is made on its first use: an engine with 16 pays for one.
func TestDatabases_MadeOnFirstUse(t *testing.T) {
	te := newTestEngine(t)
	cl := &Client{ID: 1}
	used := func() (n int) {
		te.Lock()
		defer te.Unlock()
		for i := range te.dbs {
			if te.dbs[i].keys != nil {
				n++
			}
		}
		return n
	}
	if n := used(); n != 1 {
		t.Fatalf("%d databases made at start, want 1", n)
	}
	te.expectAs(cl, ":0", "DBSIZE")
	te.expectAs(cl, "+OK", "SELECT", "9")
	te.expectAs(cl, ":0", "DBSIZE")
	te.expect("+OK", "SWAPDB", "3", "4") // two unused databases trade nothing
	te.expect("+OK", "FLUSHALL")
	if n := used(); n != 2 {
		t.Fatalf("%d databases made, want 2 (0 and 9)", n)
	}
	te.expect("=# Keyspace\r\n", "INFO", "keyspace")
}

// Config.Databases sets how many there are.
func TestDatabases_Configured(t *testing.T) {
	e := New(Config{Databases: 4})
	if e.Databases() != 4 {
		t.Fatalf("Databases() = %d", e.Databases())
	}
	te := &testEngine{Engine: e, t: t}
	cl := &Client{ID: 1}
	te.expectAs(cl, "+OK", "SELECT", "3")
	te.expectAs(cl, "-ERR DB index is out of range", "SELECT", "4")
	te.expectAs(cl, "-ERR DB index is out of range", "MOVE", "k", "4")
	te.expectAs(cl, "-ERR DB index is out of range", "SWAPDB", "0", "4")
	te.expectAs(cl, "-ERR DB index is out of range", "COPY", "a", "b", "DB", "4")
	if d := New(Config{}).Databases(); d != DefaultDatabases {
		t.Fatalf("default Databases() = %d", d)
	}
}

// The active expiry reclaims due keys in every database, and reports the
// earliest deadline left in any.
func TestDatabases_ReclaimDueEveryDatabase(t *testing.T) {
	te := newTestEngine(t)
	cl := &Client{ID: 1}
	for _, db := range []string{"0", "3", "15"} {
		te.expectAs(cl, "+OK", "SELECT", db)
		te.expectAs(cl, "+OK", "SET", "lock", "tok", "PX", "100")
		te.expectAs(cl, "+OK", "SET", "later", "tok", "PX", "5000")
	}
	te.expectAs(cl, "+OK", "SELECT", "7")
	te.expectAs(cl, "+OK", "SET", "soonest", "tok", "PX", "3000")
	te.clock.Advance(200 * time.Millisecond)
	n, next, ok := te.ReclaimDue(100)
	if n != 3 {
		t.Fatalf("reclaimed %d, want 3 (one per database)", n)
	}
	if want := te.Now() + 2800; !ok || next != want {
		t.Fatalf("next deadline %d %v, want %d (database 7's)", next, ok, want)
	}
	for _, db := range []string{"0", "3", "15"} {
		te.expectAs(cl, "+OK", "SELECT", db)
		te.expectAs(cl, ":0", "EXISTS", "lock")
		te.expectAs(cl, ":1", "EXISTS", "later")
	}
	if keys, expires := te.KeyCount(); keys != 4 || expires != 4 {
		t.Fatalf("KeyCount = %d, %d; want 4, 4", keys, expires)
	}
	// a budget smaller than what is due: the rest on the next call
	te.clock.Advance(10000 * time.Millisecond)
	if n, _, ok := te.ReclaimDue(2); n != 2 || !ok {
		t.Fatalf("ReclaimDue(2) = %d, %v", n, ok)
	}
	if n, _, ok := te.ReclaimDue(100); n != 2 || ok {
		t.Fatalf("second ReclaimDue = %d, %v; want the last 2 and none left", n, ok)
	}
	if st := te.Stats.ExpiredKeys.Load(); st != 7 {
		t.Fatalf("expired_keys = %d, want 7", st)
	}
}

// INFO keyspace: each database with keys, with its own counts and average
// time to live.
func TestDatabases_InfoKeyspace(t *testing.T) {
	te := newTestEngine(t)
	cl := &Client{ID: 1}
	te.expectAs(cl, "+OK", "SET", "a", "1")
	te.expectAs(cl, "+OK", "SELECT", "12")
	te.expectAs(cl, "+OK", "SET", "b", "1", "PX", "10000")
	te.expectAs(cl, "+OK", "SET", "c", "1", "PX", "20000")
	te.expectAs(cl, "+OK", "SET", "d", "1")
	info := te.as(cl, "INFO", "keyspace")
	for _, want := range []string{"db0:keys=1,expires=0,avg_ttl=0", "db12:keys=3,expires=2,avg_ttl=15000"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO keyspace lacks %q:\n%s", want, info)
		}
	}
	if strings.Count(info, "db") != 2 {
		t.Errorf("INFO keyspace lists other databases:\n%s", info)
	}
}

// SWAPDB and a watched key that had expired at WATCH (Redis's
// touchAllWatchedKeysInDb): its watcher is touched only if the key turns
// live; an expired key swapped in for a missing one is no change either.
func TestDatabases_SwapWatchedExpired(t *testing.T) {
	te := newTestEngine(t)
	w := &Client{ID: 1}
	other := &Client{ID: 2}
	run := func(setup func(), wantExec string) {
		t.Helper()
		te.expect("+OK", "FLUSHALL")
		setup()
		te.expectAs(w, "+OK", "MULTI")
		te.expectAs(w, "+QUEUED", "PING")
		if got := te.as(w, "EXEC"); got != wantExec {
			t.Errorf("EXEC: %q, want %q", got, wantExec)
		}
	}
	expired := func(db string) {
		te.expectAs(other, "+OK", "SELECT", db)
		te.expectAs(other, "+OK", "SET", "k", "v", "PX", "10")
		te.clock.Advance(20 * time.Millisecond)
	}
	// watched while expired; swapped for nothing: no logical change
	run(func() {
		expired("0")
		te.expectAs(w, "+OK", "WATCH", "k")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "*1 +PONG")
	// watched while expired; swapped for another expired key: unchanged
	run(func() {
		expired("0")
		expired("1")
		te.expectAs(w, "+OK", "WATCH", "k")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "*1 +PONG")
	// watched while expired; swapped for a live key: touched
	run(func() {
		expired("0")
		te.expectAs(other, "+OK", "SELECT", "1")
		te.expectAs(other, "+OK", "SET", "k", "live")
		te.expectAs(w, "+OK", "WATCH", "k")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "(nilarray)")
	// watched while missing; an expired key swapped in: no logical change
	run(func() {
		te.expectAs(w, "+OK", "WATCH", "k")
		expired("1")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "*1 +PONG")
	// watched while missing; a live key swapped in: touched
	run(func() {
		te.expectAs(w, "+OK", "WATCH", "k")
		te.expectAs(other, "+OK", "SELECT", "1")
		te.expectAs(other, "+OK", "SET", "k", "live")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "(nilarray)")
	// watched in database 2: a swap of 0 and 1 does not reach it
	run(func() {
		te.expectAs(w, "+OK", "SELECT", "2")
		te.expectAs(other, "+OK", "SELECT", "2")
		te.expectAs(other, "+OK", "SET", "k", "live")
		te.expectAs(w, "+OK", "WATCH", "k")
		te.expectAs(other, "+OK", "SWAPDB", "0", "1")
	}, "*1 +PONG")
	if n := te.WatchedKeys(); n != 0 {
		t.Fatalf("%d watched keys left", n)
	}
}

// Prefetch in another database leaves the current one at 0.
func TestDatabases_PrefetchOtherDatabase(t *testing.T) {
	te := newTestEngine(t)
	cl := &Client{ID: 1}
	te.expectAs(cl, "+OK", "SELECT", "4")
	te.expectAs(cl, "+OK", "SET", "a", "1", "PX", "1000")
	te.expectAs(cl, "+OK", "SET", "b", "1")
	te.Prefetch(4, [][]byte{[]byte("a"), []byte("b"), []byte("c")}, ^uint32(0))
	te.Lock()
	db := te.db
	te.Unlock()
	if db != 0 {
		t.Fatalf("current database %d after Prefetch", db)
	}
	te.expectAs(cl, "$1", "GET", "b")
}
