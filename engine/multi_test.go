package engine

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// Transaction tests. Replies marked "redis 7.0.15:" were observed from
// /usr/bin/redis-server 7.0.15 with a raw RESP client (two connections
// where the case needs them; real sleeps for expiry, and DEBUG
// SET-ACTIVE-EXPIRE 0 where the case needs an expired key still present,
// which is the state these engine tests are in: they run no active
// expiry loop unless they call ReclaimDue).

// txClient is one connection's worth of engine state.
type txClient struct {
	te *testEngine
	cl *Client
	p  int // protocol for replies; 0 = RESP2
}

var nextTestClientID int64

func (te *testEngine) client() *txClient {
	nextTestClientID++
	cl := &Client{ID: nextTestClientID}
	te.t.Cleanup(func() { te.DiscardTransaction(cl) })
	return &txClient{te: te, cl: cl}
}

func (c *txClient) do(args ...string) string {
	w := &enginetest.TextWriter{P: c.p}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	c.te.Exec(&Ctx{Args: bargs, W: w, Client: c.cl})
	return w.String()
}

func (c *txClient) expect(want string, args ...string) {
	c.te.t.Helper()
	if got := c.do(args...); got != want {
		c.te.t.Errorf("%q: got %q, want %q", args, got, want)
	}
}

// noWatchLeft checks that no watch is registered any more.
func (te *testEngine) noWatchLeft() {
	te.t.Helper()
	te.watch.mu.Lock()
	n := len(te.watch.keys)
	te.watch.mu.Unlock()
	if n != 0 || te.WatchedKeys() != 0 {
		te.t.Errorf("watch registry holds %d keys (counter %d); want none", n, te.WatchedKeys())
	}
}

func TestMulti_QueuesThenExecRunsInOrder(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "k", "v")
	c.expect("+QUEUED", "GET", "k")
	c.expect("+QUEUED", "INCR", "n")
	c.expect("+QUEUED", "PING")
	e.expect("(nil)", "GET", "k") // nothing ran yet
	c.expect("*4 +OK $v :1 +PONG", "EXEC")
	c.expect("-"+ErrExecNoMulti, "EXEC") // the transaction is over
	c.expect("$v", "GET", "k")
}

func TestMulti_EmptyExec(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	c.expect("*0", "EXEC") // redis 7.0.15: *0
}

func TestMulti_NestedMultiIsAnErrorThatDoesNotAbort(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	c.expect("-ERR MULTI calls can not be nested", "MULTI")
	c.expect("+QUEUED", "SET", "a", "1")
	c.expect("*1 +OK", "EXEC") // redis 7.0.15: *1 +OK
}

func TestMulti_WithoutMultiErrors(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("-ERR EXEC without MULTI", "EXEC")
	c.expect("-ERR DISCARD without MULTI", "DISCARD")
	c.expect("-ERR EXEC without MULTI", "exec")
}

func TestMulti_DiscardDropsTheQueue(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "k", "v")
	c.expect("+OK", "DISCARD")
	c.expect("-ERR DISCARD without MULTI", "DISCARD")
	c.expect("(nil)", "GET", "k")
}

func TestMulti_QueueingErrorsAbortExec(t *testing.T) {
	for _, bad := range [][]string{
		{"NOSUCHCMD", "x"},           // unknown command
		{"SET", "k"},                 // wrong arity
		{"GET"},                      // wrong arity
		{"CONFIG", "NOSUCH"},         // unknown subcommand
		{"CONFIG", "GET"},            // subcommand arity
		{"MULTI", "x"},               // redis 7.0.15: arity error on MULTI itself flags too
		{"DISCARD", "x"},             // ... and on DISCARD
		{"WATCH"},                    // ... and on WATCH
		{"SCRIPT", "LOAD", "a", "b"}, // container arity
	} {
		e := newTestEngine(t)
		c := e.client()
		c.expect("+OK", "MULTI")
		c.expect("+QUEUED", "SET", "before", "1")
		if got := c.do(bad...); len(got) == 0 || got[0] != '-' {
			t.Fatalf("%q while queueing: got %q, want an error", bad, got)
		}
		c.expect("+QUEUED", "SET", "after", "1") // still answers QUEUED
		c.expect("-EXECABORT Transaction discarded because of previous errors.", "EXEC")
		c.expect("-ERR EXEC without MULTI", "EXEC")
		e.expect(":0", "EXISTS", "before", "after")
	}
}

func TestMulti_RuntimeErrorsAreReturnedInTheArray(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "SET", "s", "notanumber")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "a", "1", "XX", "NX") // syntax errors show only when run
	c.expect("+QUEUED", "INCR", "s")
	c.expect("+QUEUED", "SET", "b", "2")
	c.expect("+QUEUED", "EVAL", "return redis.call('nosuch')", "0") // no scripter in engine tests
	c.expect("*4 -ERR syntax error -ERR value is not an integer or out of range +OK -ERR scripting is not available", "EXEC")
	c.expect("$2", "GET", "b") // the commands after a failing one still ran
}

func TestMulti_ExecRejectedAbortsWithReason(t *testing.T) {
	// redis 7.0.15 (rejectCommand → execCommandAbort), with or without MULTI:
	//   EXEC x -> -EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command
	e := newTestEngine(t)
	c := e.client()
	const abort = "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"
	c.expect(abort, "EXEC", "x")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "k", "v")
	c.expect(abort, "exec", "x", "y")
	c.expect("-ERR EXEC without MULTI", "EXEC") // discarded
	e.expect("(nil)", "GET", "k")

	// the rejected EXEC also drops the watches (discardTransaction)
	c.expect("+OK", "WATCH", "w")
	c.expect(abort, "EXEC", "x")
	e.noWatchLeft()
}

func TestMulti_ExecRejectedForAuthAbortsWithReason(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.cl.NeedsAuth = true
	// redis 7.0.15 with requirepass, unauthenticated:
	c.expect("-EXECABORT Transaction discarded because of: NOAUTH Authentication required.", "EXEC")
	c.expect("-NOAUTH Authentication required.", "MULTI")
	c.expect("-NOAUTH Authentication required.", "DISCARD")
	c.expect("-NOAUTH Authentication required.", "WATCH", "a")
	c.expect("-NOAUTH Authentication required.", "UNWATCH")
}

func TestMulti_NoMultiCommandsAreRefused(t *testing.T) {
	e := newTestEngine(t)
	e.Register(&Command{Name: "testnomulti", Arity: 1, Flags: FlagNoKeys | FlagNoMulti, Fn: func(c *Ctx) { c.W.WriteStatus("RAN") }})
	c := e.client()
	c.expect("+RAN", "TESTNOMULTI")
	c.expect("+OK", "MULTI")
	c.expect("-ERR Command not allowed inside a transaction", "TESTNOMULTI")
	c.expect("-EXECABORT Transaction discarded because of previous errors.", "EXEC")
}

func TestMulti_QueuedArgumentsAreCopied(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	buf := []byte("SETkeyval")
	args := [][]byte{buf[0:3], buf[3:6], buf[6:9]}
	w := &enginetest.TextWriter{}
	e.Exec(&Ctx{Args: args, W: w, Client: c.cl})
	if w.String() != "+QUEUED" {
		t.Fatalf("queue: %q", w.String())
	}
	copy(buf, "XXXXXXXXX") // the connection reuses its read buffer
	c.expect("*1 +OK", "EXEC")
	e.expect("$val", "GET", "key")
}

func TestMulti_ExecRunsUnderOneLock(t *testing.T) {
	// While a transaction increments n 200 times, another client must see
	// n only before or after all of them.
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	const n = 200
	for round := 0; round < 20; round++ {
		a.expect("+OK", "SET", "n", "0")
		a.expect("+OK", "MULTI")
		for i := 0; i < n; i++ {
			a.expect("+QUEUED", "INCR", "n")
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got := b.do("GET", "n"); got != "$0" && got != "$"+strconv.Itoa(n) {
					t.Errorf("saw %s in the middle of a transaction", got)
					return
				}
			}
		}()
		if got := a.do("EXEC"); len(got) < 4 || got[:4] != "*200" {
			t.Fatalf("EXEC = %.40q", got)
		}
		close(stop)
		wg.Wait()
	}
}

func TestMulti_ExecDeniesBlocking(t *testing.T) {
	e := newTestEngine(t)
	e.Register(&Command{Name: "testblock", Arity: 1, Fn: func(c *Ctx) {
		if c.DenyBlocking() {
			c.W.WriteStatus("DENIED")
		} else {
			c.W.WriteStatus("MAYBLOCK")
		}
	}})
	c := e.client()
	c.expect("+MAYBLOCK", "TESTBLOCK")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "TESTBLOCK")
	c.expect("*1 +DENIED", "EXEC")
	c.expect("+MAYBLOCK", "TESTBLOCK")
}

func TestMulti_ExecNullArrayPerProtocol(t *testing.T) {
	e := newTestEngine(t)
	for _, p := range []int{2, 3} {
		c := e.client()
		c.p = p
		c.expect("+OK", "WATCH", "k")
		e.expect("+OK", "SET", "k", "x")
		c.expect("+OK", "MULTI")
		c.expect("+QUEUED", "GET", "k")
		c.expect("(nilarray)", "EXEC") // the server writes *-1 (RESP2) or _ (RESP3)
	}
}

// ---- WATCH ----

func TestWatch_OtherClientsWriteAbortsExec(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "SET", "k", "1")
	a.expect("+OK", "WATCH", "k")
	b.expect("+OK", "SET", "k", "2")
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "SET", "k", "3")
	a.expect("(nilarray)", "EXEC")
	a.expect("$2", "GET", "k") // the transaction did not run
	e.noWatchLeft()
}

// Many keys: a key watched again is watched once, in the same or another
// WATCH and database, past the count where a set of them is kept; a
// touched one among them aborts EXEC; and the set goes with the watches.
func TestWatch_ManyKeys(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	const n = 50_000 // quadratic in a scan of the watched keys: over a billion compares
	args := []string{"WATCH"}
	for i := range n {
		args = append(args, "k"+strconv.Itoa(i))
	}
	args = append(args, "k0", "k"+strconv.Itoa(n-1))
	a.expect("+OK", args...)
	a.expect("+OK", "WATCH", "k7", "k"+strconv.Itoa(n/2), "extra")
	if got := a.cl.WatchedCount(); got != n+1 {
		t.Fatalf("WatchedCount %d, want %d", got, n+1)
	}
	a.expect("+OK", "SELECT", "1")
	a.expect("+OK", "WATCH", "k7") // another database: another key
	if got := a.cl.WatchedCount(); got != n+2 {
		t.Fatalf("WatchedCount %d after a key of database 1, want %d", got, n+2)
	}
	b.expect("+OK", "SET", "k"+strconv.Itoa(n-3), "x")
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "PING")
	a.expect("(nilarray)", "EXEC")
	e.noWatchLeft()
	a.expect("+OK", "WATCH", "k1", "k1")
	if got := a.cl.WatchedCount(); got != 1 {
		t.Fatalf("WatchedCount %d after the watches ended and one key is watched twice, want 1", got)
	}
}

func TestWatch_UntouchedKeyExecRuns(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "SET", "k", "1")
	a.expect("+OK", "WATCH", "k", "missing")
	b.expect("+OK", "SET", "other", "2")
	b.expect("$1", "GET", "k")                     // reads do not touch
	b.expect(":0", "DEL", "missing")               // deleting nothing touches nothing
	b.expect(":0", "EXPIRE", "missing", "10")      // nor does expiring a missing key
	b.expect(":0", "PERSIST", "k")                 // nor a PERSIST that changes nothing
	b.expect(":0", "PEXPIRE", "k", "100", "XX")    // nor an expire refused by its flag
	b.expect("(nil)", "SET", "k", "9", "NX")       // nor an aborted SET NX
	b.expect("(nil)", "SET", "missing", "9", "XX") // nor an aborted SET XX
	b.expect(":0", "SETNX", "k", "9")              // nor SETNX on an existing key
	b.expect(":0", "EXISTS", "missing")            //
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "SET", "k", "3")
	a.expect("*1 +OK", "EXEC")
	a.expect("$3", "GET", "k")
	e.noWatchLeft()
}

func TestWatch_EveryKindOfModificationAborts(t *testing.T) {
	mods := [][]string{
		{"SET", "k", "same"}, // even the same value: signalModifiedKey always touches
		{"SET", "k", "x", "KEEPTTL"},
		{"DEL", "k"},
		{"UNLINK", "k"},
		{"GETDEL", "k"},
		{"EXPIRE", "k", "100"},
		{"PEXPIRE", "k", "0"}, // deletes it
		{"EXPIREAT", "k", "99999999999"},
		{"APPEND", "k", "x"},
		{"INCR", "n"},
		{"GETSET", "k", "x"},
		{"GETEX", "k", "PX", "1000"},
		{"MSET", "a", "1", "k", "2"},
		{"SETRANGE", "k", "0", "x"},
		{"FLUSHALL"},
		{"FLUSHDB"},
	}
	for _, mod := range mods {
		if e := newTestEngine(t); e.Lookup([]byte(mod[0])) == nil {
			continue // command not in this build
		}
		for _, self := range []bool{false, true} {
			e := newTestEngine(t)
			a, b := e.client(), e.client()
			a.expect("+OK", "SET", "k", "same")
			a.expect("+OK", "SET", "n", "1")
			a.expect("+OK", "WATCH", "k", "n")
			writer := b
			if self {
				writer = a // the watching client's own write before MULTI counts too
			}
			if got := writer.do(mod...); len(got) > 0 && got[0] == '-' {
				t.Fatalf("%q: %s", mod, got)
			}
			a.expect("+OK", "MULTI")
			a.expect("+QUEUED", "PING")
			if got := a.do("EXEC"); got != "(nilarray)" {
				t.Errorf("%q (self=%v) then EXEC = %q, want a null array", mod, self, got)
			}
			e.noWatchLeft()
		}
	}
}

func TestWatch_FlushallOnlyTouchesKeysThatExisted(t *testing.T) {
	// redis 7.0.15: WATCH k (missing); FLUSHALL; MULTI; EXEC -> *0
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	b.expect("+OK", "SET", "other", "1")
	a.expect("+OK", "WATCH", "k")
	b.expect("+OK", "FLUSHALL")
	a.expect("+OK", "MULTI")
	a.expect("*0", "EXEC")
}

func TestWatch_InsideMultiIsAnErrorThatDoesNotAbort(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "MULTI")
	c.expect("-ERR WATCH inside MULTI is not allowed", "WATCH", "x")
	c.expect("+QUEUED", "SET", "a", "2")
	c.expect("*1 +OK", "EXEC") // redis 7.0.15: *1 +OK
	e.noWatchLeft()
}

func TestWatch_TransactionsOwnWritesDoNotAbortIt(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "WATCH", "k")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "k", "1")
	c.expect("+QUEUED", "SET", "k", "2")
	c.expect("*2 +OK +OK", "EXEC")
}

func TestWatch_ExecDiscardUnwatchAndResetClearWatches(t *testing.T) {
	end := map[string]func(c *txClient){
		"EXEC":    func(c *txClient) { c.expect("+OK", "MULTI"); c.expect("*0", "EXEC") },
		"DISCARD": func(c *txClient) { c.expect("+OK", "MULTI"); c.expect("+OK", "DISCARD") },
		"UNWATCH": func(c *txClient) { c.expect("+OK", "UNWATCH") },
		"RESET":   func(c *txClient) { c.te.DiscardTransaction(c.cl) },
	}
	for name, fn := range end {
		e := newTestEngine(t)
		a, b := e.client(), e.client()
		a.expect("+OK", "WATCH", "k", "j")
		fn(a)
		e.noWatchLeft()
		b.expect("+OK", "SET", "k", "changed")
		a.expect("+OK", "MULTI")
		a.expect("+QUEUED", "GET", "k")
		if got := a.do("EXEC"); got != "*1 $changed" {
			t.Errorf("after %s the old watch still aborted EXEC: %q", name, got)
		}
	}
}

func TestWatch_AbortedExecClearsWatchesAndDirtiness(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "WATCH", "k")
	b.expect("+OK", "SET", "k", "1")
	a.expect("+OK", "MULTI")
	a.expect("(nilarray)", "EXEC")
	a.expect("+OK", "MULTI")
	a.expect("*0", "EXEC") // a fresh transaction is clean
}

func TestWatch_UnwatchClearsDirtiness(t *testing.T) {
	// redis 7.0.15: WATCH a; SET a 3 (same client); UNWATCH; MULTI; EXEC -> *0
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "WATCH", "a")
	c.expect("+OK", "SET", "a", "3")
	c.expect("+OK", "UNWATCH")
	c.expect("+OK", "MULTI")
	c.expect("*0", "EXEC")
}

func TestWatch_DirtyClientDoesNotWatchMore(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "WATCH", "a")
	c.expect("+OK", "SET", "a", "1") // dirty: all of c's watches are dropped
	e.noWatchLeft()
	c.expect("+OK", "WATCH", "b", "c") // "no point in watching": OK, nothing registered
	e.noWatchLeft()
	c.expect("+OK", "MULTI")
	c.expect("(nilarray)", "EXEC")
}

func TestWatch_SameKeyTwiceAndManyWatchers(t *testing.T) {
	e := newTestEngine(t)
	cs := []*txClient{e.client(), e.client(), e.client()}
	for _, c := range cs {
		c.expect("+OK", "WATCH", "k", "k", "j")
		c.expect("+OK", "WATCH", "k")
	}
	if n := e.WatchedKeys(); n != 2 {
		t.Fatalf("WatchedKeys = %d, want 2", n)
	}
	e.watch.mu.Lock()
	nk := len(e.watch.keys[dbKey{0, "k"}])
	e.watch.mu.Unlock()
	if nk != 3 {
		t.Fatalf("k has %d watchers, want 3 (one per client)", nk)
	}
	e.expect("+OK", "SET", "k", "x")
	e.noWatchLeft() // every watcher dirty, all their watches dropped
	for _, c := range cs {
		c.expect("+OK", "MULTI")
		c.expect("(nilarray)", "EXEC")
	}
}

// ---- WATCH and expiry ----

func TestWatch_KeyExpiringAfterWatchAbortsExec(t *testing.T) {
	// redis 7.0.15, real sleeps: SET k v PX 100; WATCH k; sleep 200ms;
	// MULTI; EXEC -> *-1, both with active expiry on (the key is reclaimed
	// and its deletion touches the watch) and with DEBUG
	// SET-ACTIVE-EXPIRE 0 (DBSIZE still 1 at EXEC: isWatchedKeyExpired).
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "SET", "k", "v", "PX", "100")
	c.expect("+OK", "WATCH", "k")
	e.clock.Advance(101 * time.Millisecond)
	if n, _ := e.KeyCount(); n != 1 {
		t.Fatalf("the expired key must still be present for this case (keys=%d)", n)
	}
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SET", "k", "new")
	c.expect("(nilarray)", "EXEC")
	e.expect("(nil)", "GET", "k")
	e.noWatchLeft()
}

func TestWatch_KeyReclaimedByActiveExpiryAbortsExec(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "SET", "k", "v", "PX", "100")
	c.expect("+OK", "WATCH", "k")
	e.clock.Advance(101 * time.Millisecond)
	if n, _, _ := e.ReclaimDue(16); n != 1 {
		t.Fatalf("ReclaimDue reclaimed %d keys", n)
	}
	e.noWatchLeft() // touched: c is dirty and unwatched
	c.expect("+OK", "MULTI")
	c.expect("(nilarray)", "EXEC")
}

func TestWatch_KeyNotYetExpiredAtExecRuns(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "SET", "k", "v", "PX", "100")
	c.expect("+OK", "WATCH", "k")
	e.clock.Advance(99 * time.Millisecond)
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "GET", "k")
	c.expect("*1 $v", "EXEC")
}

// At its deadline's millisecond a key still lives (keyIsExpired: now >
// when), for WATCH and EXEC as for GET: EXEC then runs, and a key watched
// then expiring a millisecond later aborts it.
func TestWatch_KeyLivesThroughItsDeadlineMillisecond(t *testing.T) {
	e := newTestEngine(t)
	c := e.client()
	c.expect("+OK", "SET", "k", "v", "PX", "100")
	c.expect("+OK", "WATCH", "k")
	e.clock.Advance(100 * time.Millisecond) // now == deadline
	c.expect("$v", "GET", "k")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "GET", "k")
	c.expect("*1 $v", "EXEC")

	c.expect("+OK", "SET", "k", "v", "PX", "100")
	e.clock.Advance(100 * time.Millisecond)
	c.expect("+OK", "WATCH", "k") // live: watched without the expired flag
	c.expect("*1 $k", "KEYS", "*")
	e.clock.Advance(time.Millisecond)
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "GET", "k")
	c.expect("(nilarray)", "EXEC")
}

func TestWatch_KeyAlreadyExpiredAtWatch(t *testing.T) {
	// A key present but already past its deadline when WATCH runs is
	// watched with the "expired" flag: its deletion is no logical change.
	// Each row was observed on redis 7.0.15 with DEBUG SET-ACTIVE-EXPIRE 0:
	// SET k v PX 50; sleep 100ms; WATCH k; <between>; MULTI; EXEC.
	cases := []struct {
		name    string
		between func(e *testEngine, self, other *txClient)
		want    string
	}{
		{"nothing", func(e *testEngine, self, other *txClient) {}, "*0"},
		{"own GET deletes it lazily", func(e *testEngine, self, other *txClient) { self.expect("(nil)", "GET", "k") }, "*0"},
		{"other DEL of the expired key", func(e *testEngine, self, other *txClient) { other.expect(":0", "DEL", "k") }, "*0"},
		{"FLUSHALL", func(e *testEngine, self, other *txClient) { other.expect("+OK", "FLUSHALL") }, "*0"},
		{"active expiry", func(e *testEngine, self, other *txClient) { e.ReclaimDue(16) }, "*0"},
		{"other SET recreates it", func(e *testEngine, self, other *txClient) { other.expect("+OK", "SET", "k", "x") }, "(nilarray)"},
		{"own SET recreates it", func(e *testEngine, self, other *txClient) { self.expect("+OK", "SET", "k", "v2") }, "(nilarray)"},
		{"deleted, then recreated", func(e *testEngine, self, other *txClient) {
			other.expect("(nil)", "GET", "k")
			other.expect("+OK", "SET", "k", "x")
		}, "(nilarray)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t)
			self, other := e.client(), e.client()
			self.expect("+OK", "SET", "k", "v", "PX", "50")
			e.clock.Advance(100 * time.Millisecond)
			self.expect("+OK", "WATCH", "k")
			tc.between(e, self, other)
			self.expect("+OK", "MULTI")
			self.expect(tc.want, "EXEC")
			e.noWatchLeft()
		})
	}
}

func TestWatch_LiveAndExpiredAtWatchWatchersOfOneKey(t *testing.T) {
	// redis 7.0.15 (active expiry off): c0 WATCHes k while live; k expires;
	// c1 WATCHes k (expired flag); c1 GET k deletes it: c0's EXEC -> *-1,
	// c1's EXEC -> *0.
	e := newTestEngine(t)
	c0, c1 := e.client(), e.client()
	c0.expect("+OK", "SET", "k", "v", "PX", "100")
	c0.expect("+OK", "WATCH", "k")
	e.clock.Advance(200 * time.Millisecond)
	c1.expect("+OK", "WATCH", "k")
	c1.expect("(nil)", "GET", "k")
	c1.expect("+OK", "MULTI")
	c1.expect("*0", "EXEC")
	c0.expect("+OK", "MULTI")
	c0.expect("(nilarray)", "EXEC")
	e.noWatchLeft()
}

func TestWatch_ExpiredWhilePresentThenFlushallAborts(t *testing.T) {
	// redis 7.0.15 (active expiry off): SET k v PX 100; WATCH k; sleep
	// 200ms; other client FLUSHALL; MULTI; EXEC -> *-1.
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "SET", "k", "v", "PX", "100")
	a.expect("+OK", "WATCH", "k")
	e.clock.Advance(200 * time.Millisecond)
	b.expect("+OK", "FLUSHALL")
	a.expect("+OK", "MULTI")
	a.expect("(nilarray)", "EXEC")
}

// ---- the StackExchange.Redis lock pattern, in one engine ----

func TestWatch_StackExchangeLockExtendAndRelease(t *testing.T) {
	// LockExtend: WATCH k; GET k; (token matches) MULTI; PEXPIRE k ms;
	// EXEC. LockRelease: the same with DEL. On a token mismatch: UNWATCH.
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "SET", "lock", "tokA", "PX", "1000", "NX")

	a.expect("+OK", "WATCH", "lock")
	a.expect("$tokA", "GET", "lock")
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "PEXPIRE", "lock", "5000")
	a.expect("*1 :1", "EXEC")
	a.expect(":5000", "PTTL", "lock")

	// b does not hold it: sees another token, UNWATCHes
	b.expect("+OK", "WATCH", "lock")
	b.expect("$tokA", "GET", "lock")
	b.expect("+OK", "UNWATCH")

	// a's release races with b's takeover after expiry: a loses
	a.expect("+OK", "WATCH", "lock")
	a.expect("$tokA", "GET", "lock")
	e.clock.Advance(5*time.Second + time.Millisecond)
	b.expect("+OK", "SET", "lock", "tokB", "PX", "1000", "NX")
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "DEL", "lock")
	a.expect("(nilarray)", "EXEC")
	a.expect("$tokB", "GET", "lock")
	e.noWatchLeft()
}
