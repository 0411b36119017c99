package engine

import (
	"strconv"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// chainScripter runs every script natively: two calls of a command that
// sleeps, as a native lock script calls GET then DEL.
type chainScripter struct{}

func (chainScripter) Run(c *Ctx, sha, body []byte, keys, argv [][]byte) bool { return false }
func (chainScripter) Load(body []byte, prepared any) (string, string)        { return "", "" }
func (chainScripter) Exists(sha []byte) bool                                 { return true }
func (chainScripter) Flush()                                                 {}
func (chainScripter) Kill()                                                  {}
func (chainScripter) RunNative(c *Ctx, sha, body []byte, keys, argv [][]byte) bool {
	for i := 0; i < 2; i++ {
		c.Call([][]byte{[]byte("napx")}, &enginetest.TextWriter{})
	}
	return true
}

// TestCommandStats_NativeScriptTimesChain: a native script's calls take
// their start from the clock read that ended the call before (Ctx.Call),
// so their times must still add up: each call at least its own sleep, not
// its predecessor's too, and the script at least the sum of its calls. A
// start carried over from a stale read would count a sleep twice.
func TestCommandStats_NativeScriptTimesChain(t *testing.T) {
	te := newTestEngine(t)
	sc := chainScripter{}
	if _, ok := Scripter(sc).(NativeRunner); !ok {
		t.Fatal("test scripter is not a NativeRunner")
	}
	te.SetScripter(sc)
	const nap = 200 * time.Millisecond // (the bound below allows one nap of preemption)
	var slept time.Duration            // what the naps took, measured by themselves
	te.Register(&Command{Name: "napx", Arity: 1, Flags: FlagNoKeys, Group: "server", Fn: func(c *Ctx) {
		start := time.Now()
		time.Sleep(nap)
		slept += time.Since(start)
		c.W.WriteInt(1)
	}})
	for round := 0; round < 3; round++ {
		if got := te.do("EVALSHA", "0123456789012345678901234567890123456789", "0"); got != "" && got[0] == '-' {
			t.Fatalf("EVALSHA: %s", got)
		}
		evalsha, napx := te.Lookup([]byte("evalsha")), te.Lookup([]byte("napx"))
		script, calls := evalsha.stats.nanos.Load(), napx.stats.nanos.Load()
		n := napx.stats.calls.Load()
		if n != int64(2*(round+1)) {
			t.Fatalf("round %d: napx counted %d calls, want %d", round, n, 2*(round+1))
		}
		// A start carried over from before the call's predecessor would
		// count that nap twice: a whole nap more than the naps took. (A
		// bound on the naps' own time, which a busy machine stretches,
		// made this test flaky.)
		if calls < int64(n)*int64(nap) || calls >= int64(slept+nap) {
			t.Fatalf("round %d: %d naps of %v timed %v in all, where they took %v: a call's start was not its own",
				round, n, nap, time.Duration(calls), slept)
		}
		if script < calls {
			t.Fatalf("round %d: the scripts took %v, less than their calls' %v", round, time.Duration(script), time.Duration(calls))
		}
	}
}

// TestCommandStats_NativeScriptEndDoesNotLeak: a native script's time
// ends with its last call's clock read (no read of its own); the next
// command on the same connection must still be timed in full.
func TestCommandStats_NativeScriptEndDoesNotLeak(t *testing.T) {
	te := newTestEngine(t)
	te.SetScripter(chainScripter{})
	const nap = 50 * time.Millisecond
	te.Register(&Command{Name: "napx", Arity: 1, Flags: FlagNoKeys, Group: "server", Fn: func(c *Ctx) {
		time.Sleep(nap)
		c.W.WriteInt(1)
	}})
	c := &Ctx{} // one connection's context, reused as the server does
	run := func(args ...string) {
		c.Args = nil
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		c.W = &enginetest.TextWriter{}
		te.Exec(c)
	}
	run("EVALSHA", "0123456789012345678901234567890123456789", "0")
	napx := te.Lookup([]byte("napx"))
	before := napx.stats.nanos.Load()
	run("NAPX")
	if d := time.Duration(napx.stats.nanos.Load() - before); d < nap {
		t.Fatalf("NAPX after a native script was timed %v, less than its %v nap", d, nap)
	}
	if script := te.Lookup([]byte("evalsha")).stats.nanos.Load(); script < 2*int64(nap) {
		t.Fatalf("the script was timed %v, less than its calls' %v", time.Duration(script), 2*nap)
	}
}

// TestLookup_AnyCase: command names match in any case; names no command
// has, and names longer than any, match nothing.
func TestLookup_AnyCase(t *testing.T) {
	te := newTestEngine(t)
	get := te.Lookup([]byte("get"))
	if get == nil || get.Name != "get" {
		t.Fatal("get not found")
	}
	for _, n := range []string{"GET", "Get", "gEt"} {
		if te.Lookup([]byte(n)) != get {
			t.Fatalf("Lookup(%q) is not GET", n)
		}
	}
	if c := te.Lookup([]byte("EVALSHA")); c == nil || c.Name != "evalsha" {
		t.Fatal("EVALSHA not found")
	}
	for _, n := range []string{"", "ge", "GETX", "g\xc3\xa9t", "GET" + string(make([]byte, 40))} {
		if te.Lookup([]byte(n)) != nil {
			t.Fatalf("Lookup(%q) found a command", n)
		}
	}
}

// TestLookupCall_SeesRegister: a script's calls find their command
// through the list of names called last (lookupCall), in the case they
// are spelled, and a command registered again under a listed name is the
// one called after.
func TestLookupCall_SeesRegister(t *testing.T) {
	te := newTestEngine(t)
	te.SetScripter(chainScripter{})
	version := 0
	reg := func(v int) {
		te.Register(&Command{Name: "napx", Arity: 1, Flags: FlagNoKeys, Group: "server", Fn: func(c *Ctx) {
			version = v
			c.W.WriteInt(int64(v))
		}})
	}
	reg(1)
	for i := 0; i < 3; i++ {
		te.do("EVALSHA", "0123456789012345678901234567890123456789", "0")
		if version != 1 {
			t.Fatalf("run %d called version %d", i, version)
		}
	}
	reg(2)
	te.do("EVALSHA", "0123456789012345678901234567890123456789", "0")
	if version != 2 {
		t.Fatalf("after Register, a script called version %d", version)
	}
	// other names and cases, more than the list holds, then napx again
	w := &enginetest.TextWriter{}
	c := &Ctx{Eng: te.Engine, Script: &ScriptRun{}, W: w}
	te.Lock()
	for _, name := range []string{"GET", "get", "Get", "EXISTS", "exists", "STRLEN", "strlen"} {
		c.Call([][]byte{[]byte(name), []byte("k")}, w)
	}
	c.Call([][]byte{[]byte("NAPX")}, w)
	c.Call([][]byte{[]byte("nosuchcmd")}, w)
	te.Unlock()
	if got := w.String(); got != "(nil) (nil) (nil) :0 :0 :0 :0 :2 -ERR Unknown Redis command called from script" {
		t.Fatalf("calls replied %q", got)
	}
}

// TestResolve_LastCommandSeesRegister: a client's Ctx finds the command it
// sent last by its spelling (resolve), and a command registered again
// under that name is the one run after. Other names, other spellings, a
// name too long to keep, and unknown names all still resolve as Lookup.
func TestResolve_LastCommandSeesRegister(t *testing.T) {
	te := newTestEngine(t)
	version := 0
	reg := func(v int) {
		te.Register(&Command{Name: "napx", Arity: 1, Flags: FlagNoKeys, Group: "server", Fn: func(c *Ctx) {
			version = v
			c.W.WriteInt(int64(v))
		}})
	}
	w := &enginetest.TextWriter{}
	c := &Ctx{W: w}
	run := func(args ...string) {
		c.Args = c.Args[:0]
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		te.Exec(c)
	}
	reg(1)
	run("napx")
	run("napx")
	reg(2)
	run("napx")
	run("NAPX")
	run("SET", "k", "v")
	run("SET", "k", "w")
	run("set", "k", "x")
	run("GET", "k")
	run("GETX", "k")
	run("GETX", "k")
	long := "averylongcommandname" // longer than the kept spelling
	run(long)
	run(long)
	run("napx")
	if version != 2 {
		t.Fatalf("after Register, version %d ran", version)
	}
	want := ":1 :1 :2 :2 +OK +OK +OK $x " +
		"-ERR unknown command 'GETX', with args beginning with: 'k'  " +
		"-ERR unknown command 'GETX', with args beginning with: 'k'  " +
		"-ERR unknown command '" + long + "', with args beginning with:  " +
		"-ERR unknown command '" + long + "', with args beginning with:  :2"
	if got := w.String(); got != want {
		t.Fatalf("replied\n%q\nwant\n%q", got, want)
	}
}

// usecOf returns a command's total time in commandstats.
func usecOf(t *testing.T, e *Engine, name string) int64 {
	t.Helper()
	us := int64(-1)
	e.CommandStats(func(st CommandStat) {
		if st.Name == name {
			us = st.Usec
		}
	})
	if us < 0 {
		t.Fatalf("%s not in commandstats", name)
	}
	return us
}

// In a batch (StartBatch) a command's timing starts where the previous
// one's ended, but never across a wait: one the caller marks (Unchain),
// or one for the keyspace lock another client held.
func TestStartBatch_WaitsAreNotACommandsTime(t *testing.T) {
	for _, clock := range []string{"system", "manual"} {
		t.Run(clock, func(t *testing.T) {
			var e *Engine
			if clock == "system" {
				e = New(Config{})
			} else {
				e = newTestEngine(t).Engine
			}
			w := &enginetest.TextWriter{}
			c := &Ctx{W: w}
			run := func(args ...string) {
				c.Args = c.Args[:0]
				for _, a := range args {
					c.Args = append(c.Args, []byte(a))
				}
				e.Exec(c)
			}
			// far above a trivial command's time even when a loaded
			// machine stalls it (the bounds below are the pause)
			const pause = 250 * time.Millisecond
			e.StartBatch(c)
			run("GET", "a")
			time.Sleep(pause)
			c.Unchain()
			run("GET", "a")
			// the keyspace lock held by another client meanwhile
			e.Lock()
			go func() {
				time.Sleep(pause)
				e.Unlock()
			}()
			run("STRLEN", "a")
			e.EndBatch(c)
			if us := usecOf(t, e, "get") + usecOf(t, e, "strlen"); us >= pause.Microseconds() {
				t.Fatalf("GET and STRLEN took %d µs in commandstats: a wait was counted", us)
			}
			// outside a batch a stale end is never a start
			time.Sleep(pause)
			run("EXISTS", "a")
			if us := usecOf(t, e, "exists"); us >= pause.Microseconds() {
				t.Fatalf("EXISTS took %d µs after a batch ended", us)
			}
		})
	}
}

// TestStartBatch_AbsoluteDeadlinesAreExact: in a batch a command's c.Now
// can be older than the command itself (its start is where the command
// before ended; a goroutine preempted between the two is not told). A
// PXAT or PEXPIREAT converted with that c.Now against a fresh wall reading
// came early by the pause: a lock set to expire at t was gone before t.
// The deadline must read back exactly (to the ms the clocks' roundings
// allow) from outside the batch, whatever happened in it.
func TestStartBatch_AbsoluteDeadlinesAreExact(t *testing.T) {
	e := New(Config{}) // the system clock: only it has real pauses
	w := &enginetest.TextWriter{}
	c := &Ctx{W: w}
	run := func(args ...string) string {
		w.Reset()
		c.Args = c.Args[:0]
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		e.Exec(c)
		return w.String()
	}
	const pause = 40 * time.Millisecond
	at := time.Now().Add(time.Hour).UnixMilli()
	e.StartBatch(c)
	run("GET", "a")
	time.Sleep(pause) // no Unchain: a preemption between two commands
	if got := run("SET", "lock", "tok", "PXAT", strconv.FormatInt(at, 10)); got != "+OK" {
		t.Fatalf("SET PXAT: %q", got)
	}
	run("SET", "lock2", "tok")
	time.Sleep(pause)
	run("PEXPIREAT", "lock2", strconv.FormatInt(at, 10))
	e.EndBatch(c)
	for _, k := range []string{"lock", "lock2"} {
		got := run("PEXPIRETIME", k)
		want := ":" + strconv.FormatInt(at, 10)
		if got != want {
			t.Errorf("PEXPIRETIME %s = %q, want %q: the deadline moved by a pause in the batch", k, got, want)
		}
	}
}

// TestStartBatch_BusyWaitIsNotACommandsTime: a command that may run while
// a script is busy (WATCH, MULTI: FlagAllowBusy) and finds the keyspace
// lock handed over by that script waits for the script to end. The wait
// is not the command's time (commandstats, the slow log), and the
// command's time (c.Now) is read after it, not carried over from the
// command before in the batch.
func TestStartBatch_BusyWaitIsNotACommandsTime(t *testing.T) {
	e := New(Config{}) // the system clock: the wait is real
	e.SetScripter(&stubScripter{})
	e.SetBusyThreshold(time.Millisecond)
	w := &enginetest.TextWriter{}
	c := &Ctx{W: w, Client: &Client{}}
	run := func(args ...string) string {
		w.Reset()
		c.Args = c.Args[:0]
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		e.Exec(c)
		return w.String()
	}
	const pause = 60 * time.Millisecond
	e.StartBatch(c)
	run("GET", "a")
	// a script takes the lock and runs past the busy threshold
	e.Lock()
	e.scriptBegin(nil, nil)
	e.scriptStart.Store(time.Now().Add(-time.Second).UnixNano())
	e.YieldIfBusy()
	if !e.busyYield.Load() {
		t.Fatal("the script did not yield the lock")
	}
	ended := make(chan int64, 1)
	go func() {
		time.Sleep(pause)
		ended <- e.Now()
		e.scriptEnd()
		e.Unlock()
	}()
	if got := run("WATCH", "x"); got != "+OK" {
		t.Fatalf("WATCH: %q", got)
	}
	e.EndBatch(c)
	if end := <-ended; c.Now < end {
		t.Errorf("WATCH ran at %d, before the script it waited for ended (%d): its time was stale", c.Now, end)
	}
	if us := usecOf(t, e, "watch"); us >= pause.Microseconds() {
		t.Errorf("WATCH took %d µs in commandstats: the wait for the busy script was counted", us)
	}
}
