package engine

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

func TestSet_NXPXOnlyFirstWins(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "lock", "a", "PX", "30000", "NX")
	e.expect("(nil)", "set", "lock", "b", "px", "30000", "nx")
	e.expect("$a", "GET", "lock")
	e.expect(":30000", "PTTL", "lock")
	e.expect(":30", "TTL", "lock")
}

func TestSet_OptionConflictsAreSyntaxErrors(t *testing.T) {
	e := newTestEngine(t)
	for _, args := range [][]string{
		{"SET", "k", "v", "NX", "XX"},
		{"SET", "k", "v", "EX", "1", "PX", "1000"},
		{"SET", "k", "v", "KEEPTTL", "EX", "1"},
		{"SET", "k", "v", "EX"},
		{"SET", "k", "v", "BOGUS"},
		{"SET", "k", "v", "PERSIST"},
	} {
		e.expect("-"+ErrSyntax, args...)
	}
	e.expect("-"+ErrNotInteger, "SET", "k", "v", "EX", "x")
	e.expect("-ERR invalid expire time in 'set' command", "SET", "k", "v", "EX", "0")
	e.expect("-ERR invalid expire time in 'set' command", "SET", "k", "v", "PX", "-5")
	e.expect("-ERR invalid expire time in 'set' command", "SET", "k", "v", "EX", "9223372036854775807")
	e.expect("-ERR invalid expire time in 'setex' command", "SETEX", "k", "0", "v")
	e.expect("+OK", "SET", "k", "v", "EX", "5", "EX", "7") // same kind repeated: last wins
	e.expect(":7", "TTL", "k")
}

func TestSet_GETReturnsOldValueEvenWhenAborted(t *testing.T) {
	e := newTestEngine(t)
	e.expect("(nil)", "SET", "k", "a", "GET")
	e.expect("$a", "SET", "k", "b", "NX", "GET")
	e.expect("$a", "GET", "k")
	e.expect("(nil)", "SET", "missing", "x", "XX", "GET")
	e.expect(":0", "EXISTS", "missing")
}

func TestSet_PlainSetClearsTTLKeepTTLKeeps(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "a", "PX", "1000")
	e.expect("+OK", "SET", "k", "b", "KEEPTTL")
	e.expect(":1000", "PTTL", "k")
	e.expect("+OK", "SET", "k", "c")
	e.expect(":-1", "PTTL", "k")
	e.expect("+OK", "SET", "k", "c", "EX", "10")
	e.expect("$c", "GETSET", "k", "d")
	e.expect(":-1", "TTL", "k")
}

func TestSetNX_IntegerReplies(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "SETNX", "k", "a")
	e.expect(":0", "SETNX", "k", "b")
}

func TestExpiry_LazyAtDeadline(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v", "PX", "100")
	e.clock.Advance(100 * time.Millisecond)
	e.expect("$v", "GET", "k") // alive through the deadline's millisecond, as Redis
	e.expect(":0", "PTTL", "k")
	e.clock.Advance(time.Millisecond)
	e.expect("(nil)", "GET", "k") // gone once now > deadline
	if n, x := e.KeyCount(); n != 0 || x != 0 {
		t.Fatalf("lazy expiry left %d keys, %d deadlines", n, x)
	}
	if got := e.Stats.ExpiredKeys.Load(); got != 1 {
		t.Fatalf("expired_keys = %d, want 1", got)
	}
}

func TestReclaimDue_BoundedBatchesInDeadlineOrder(t *testing.T) {
	e := newTestEngine(t)
	for i := 0; i < 1000; i++ {
		e.expect("+OK", "SET", "k"+strconv.Itoa(i), "v", "PX", strconv.Itoa(1+i%10))
	}
	e.expect("+OK", "SET", "later", "v", "PX", "60000")
	e.expect("+OK", "SET", "forever", "v")
	e.clock.Advance(11 * time.Millisecond)
	total := 0
	for {
		n, next, ok := e.ReclaimDue(256)
		if n > 256 {
			t.Fatalf("batch of %d exceeds bound", n)
		}
		total += n
		if n < 256 {
			if !ok || next != e.clock.Mono()+60000-11 {
				t.Fatalf("next deadline = %d,%v; want the 'later' key's", next, ok)
			}
			break
		}
	}
	if total != 1000 {
		t.Fatalf("reclaimed %d keys, want 1000", total)
	}
	if n, x := e.KeyCount(); n != 2 || x != 1 {
		t.Fatalf("after reclaim: %d keys, %d deadlines; want 2, 1", n, x)
	}
}

func TestReclaimDue_WakesOnEarlierDeadline(t *testing.T) {
	e := newTestEngine(t)
	for len(e.Wake()) > 0 {
		<-e.Wake()
	}
	e.expect("+OK", "SET", "a", "v", "PX", "5000")
	select {
	case <-e.Wake():
	default:
		t.Fatal("first deadline must wake the expiry loop")
	}
	e.ReclaimDue(256) // loop plans to sleep until a's deadline
	e.expect("+OK", "SET", "b", "v", "PX", "9000")
	select {
	case <-e.Wake():
		t.Fatal("a later deadline must not wake the loop")
	default:
	}
	e.expect("+OK", "SET", "c", "v", "PX", "10")
	select {
	case <-e.Wake():
	default:
		t.Fatal("an earlier deadline must wake the loop")
	}
}

func TestWallClockJump_DoesNotMoveDeadlines(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "lock", "v", "PX", "30000")
	wall := e.clock.Wall().UnixMilli()
	e.expect("+OK", "SET", "abs", "v", "PXAT", strconv.FormatInt(wall+10000, 10))
	e.clock.JumpWall(time.Hour)
	e.expect(":30000", "PTTL", "lock")
	e.expect(":10000", "PTTL", "abs")
	// absolute times are read against the jumped wall clock
	e.expect(":"+strconv.FormatInt(wall+time.Hour.Milliseconds()+10000, 10), "PEXPIRETIME", "abs")
	e.expect(":1", "PEXPIREAT", "abs", strconv.FormatInt(wall+time.Hour.Milliseconds()+5000, 10))
	e.expect(":5000", "PTTL", "abs")
	e.clock.JumpWall(-2 * time.Hour)
	e.expect("$v", "GET", "lock")
}

// EXPIRETIME rounds to seconds without overflowing for deadlines near
// the int64 maximum, as Redis does (found by compat TestRandomDiff).
func TestExpireTime_RoundsNearInt64Max(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v", "PXAT", "9223372036854775807")
	e.expect(":9223372036854776", "EXPIRETIME", "k")
	e.expect(":9223372036854775807", "PEXPIRETIME", "k")
	e.expect("+OK", "SET", "k", "v", "PXAT", "9223372036854775400")
	e.expect(":9223372036854775", "EXPIRETIME", "k")
}

func TestExpire_FlagsAndConflicts(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "EXPIRE", "missing", "10")
	e.expect("+OK", "SET", "k", "v")
	e.expect(":0", "EXPIRE", "k", "10", "XX")
	e.expect(":0", "EXPIRE", "k", "10", "GT") // no TTL counts as infinite
	e.expect(":1", "EXPIRE", "k", "10", "LT")
	e.expect(":0", "EXPIRE", "k", "20", "NX")
	e.expect(":1", "EXPIRE", "k", "20", "GT")
	e.expect(":0", "EXPIRE", "k", "5", "GT")
	e.expect(":1", "EXPIRE", "k", "5", "lt")
	e.expect(":5", "TTL", "k")
	e.expect("-"+ErrNXXXGTLT, "EXPIRE", "k", "5", "NX", "XX")
	e.expect("-"+ErrGTLT, "EXPIRE", "k", "5", "GT", "LT")
	e.expect("-ERR Unsupported option foo", "EXPIRE", "k", "5", "foo")
	e.expect("-"+ErrNXXXGTLT, "EXPIRE", "k", "x", "NX", "GT") // flags are checked before the number
	e.expect("-ERR invalid expire time in 'expire' command", "EXPIRE", "k", "9223372036854775807")
	e.expect(":1", "PEXPIRE", "k", "0")
	e.expect(":0", "EXISTS", "k")
	e.expect("+OK", "SET", "k", "v", "EX", "100")
	e.expect(":1", "PERSIST", "k")
	e.expect(":0", "PERSIST", "k")
	e.expect(":-1", "TTL", "k")
	e.expect(":-2", "TTL", "missing")
}

func TestIncr_OverflowAndTypes(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "INCR", "n")
	e.expect(":-9", "DECRBY", "n", "10")
	e.expect("+OK", "SET", "n", "9223372036854775807", "EX", "100")
	e.expect("-"+ErrOverflow, "INCR", "n")
	e.expect(":9223372036854775806", "DECR", "n")
	e.expect(":100", "TTL", "n") // INCR keeps the TTL
	e.expect("-"+ErrDecrOverflow, "DECRBY", "n", "-9223372036854775808")
	e.expect("+OK", "SET", "s", "01")
	e.expect("-"+ErrNotInteger, "INCR", "s")
	e.expect("-"+ErrNotInteger, "INCRBY", "n", "+1")
}

func TestDispatch_ArityAndUnknown(t *testing.T) {
	e := newTestEngine(t)
	e.expect("-ERR wrong number of arguments for 'get' command", "get")
	e.expect("-ERR wrong number of arguments for 'set' command", "SET", "k")
	e.expect("-ERR unknown command 'nosuch', with args beginning with: 'a' 'b' ", "nosuch", "a", "b")
	e.expect("-ERR unknown subcommand 'nosuch'. Try SCRIPT HELP.", "script", "nosuch")
	e.expect("-ERR wrong number of arguments for 'script|load' command", "script", "load")
	e.expect("-ERR This instance has cluster support disabled", "CLUSTER", "SLOTS")
	e.expect("-"+ErrDBIndex, "SELECT", "16")
	e.expect("-"+ErrDBIndex, "SELECT", "-1")
	e.expect("+OK", "SELECT", "0")
}

func TestErrUnknownCommand_ClipsLongArguments(t *testing.T) {
	long := strings.Repeat("x", 200)
	got := ErrUnknownCommand([][]byte{[]byte("foo"), []byte(long), []byte("b")})
	want := "ERR unknown command 'foo', with args beginning with: '" + strings.Repeat("x", 128) + "' "
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got = ErrUnknownCommand([][]byte{[]byte("a\r\nb")})
	if strings.ContainsAny(got, "\r\n") {
		t.Fatalf("newlines must be replaced: %q", got)
	}
}

func TestKeysAndScan(t *testing.T) {
	e := newTestEngine(t)
	for i := 0; i < 50; i++ {
		e.expect("+OK", "SET", "lock:"+strconv.Itoa(i), "v")
	}
	e.expect("+OK", "SET", "other", "v", "PX", "1")
	e.clock.Advance(2 * time.Millisecond)
	if got := e.do("KEYS", "lock:1?"); strings.Count(got, "$lock:1") != 10 {
		t.Fatalf("KEYS lock:1? = %s", got)
	}
	seen := map[string]int{}
	cursor := "0"
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("SCAN did not terminate")
		}
		w := &enginetest.TextWriter{}
		e.Exec(&Ctx{Args: [][]byte{[]byte("SCAN"), []byte(cursor), []byte("COUNT"), []byte("7")}, W: w})
		f := strings.Fields(w.String())
		cursor = strings.TrimPrefix(f[1], "$")
		for _, tok := range f[3:] {
			seen[strings.TrimPrefix(tok, "$")]++
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != 50 {
		t.Fatalf("SCAN returned %d distinct keys, want 50 (expired keys excluded)", len(seen))
	}
	e.expect("-"+ErrInvalidCursor, "SCAN", "x")
	e.expect("-"+ErrSyntax, "SCAN", "0", "COUNT", "0")
	// strtoul reads a C string: a NUL ends the cursor
	for _, cur := range []string{"0\x00", "\x00", "0\x00x", "0\x009"} {
		if got := e.do("SCAN", cur, "COUNT", "1000"); !strings.HasPrefix(got, "*2 $0 ") {
			t.Errorf("SCAN %q: %q", cur, got)
		}
		e.expect("*2 $0 *0", "HSCAN", "nohash", cur)
	}
	e.expect("-"+ErrInvalidCursor, "SCAN", " 0\x00")
}

func TestGetRange(t *testing.T) {
	e := newTestEngine(t)
	e.expect("$", "GETRANGE", "missing", "0", "-1")
	e.expect("+OK", "SET", "k", "Hello World")
	e.expect("$Hello", "GETRANGE", "k", "0", "4")
	e.expect("$World", "GETRANGE", "k", "-5", "-1")
	e.expect("$", "GETRANGE", "k", "-1", "-5")
	e.expect("$Hello World", "GETRANGE", "k", "0", "100")
	e.expect("$", "GETRANGE", "k", "20", "30")
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*", "anything", true}, {"lock:*", "lock:1", true}, {"lock:*", "lack:1", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h[ae]llo", "hallo", true},
		{"h[^e]llo", "hello", false}, {"h[a-b]llo", "hbllo", true}, {"h\\*llo", "h*llo", true},
		{"h\\*llo", "hello", false}, {"*a*b", "xxaxxb", true}, {"", "", true}, {"a", "", false},
	}
	for _, c := range cases {
		if got := Match([]byte(c.pat), []byte(c.s), false); got != c.want {
			t.Errorf("Match(%q,%q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestParseInt_Strict(t *testing.T) {
	good := map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808}
	for s, want := range good {
		if got, ok := parseInt([]byte(s)); !ok || got != want {
			t.Errorf("parseInt(%q) = %d,%v", s, got, ok)
		}
	}
	for _, s := range []string{"", "+1", "01", "-0", " 1", "1 ", "9223372036854775808", "1.5", "-"} {
		if _, ok := parseInt([]byte(s)); ok {
			t.Errorf("parseInt(%q) must fail", s)
		}
	}
}

func TestBusy_OnlyAllowBusyCommandsPass(t *testing.T) {
	e := newTestEngine(t)
	e.SetBusyThreshold(time.Millisecond)
	e.scriptStart.Store(time.Now().Add(-time.Second).UnixNano())
	defer e.scriptStart.Store(0)
	e.expect("-"+ErrBusy, "GET", "k")
	e.expect("-"+ErrBusy, "PING")
	e.SetScripter(nil)
	e.scriptWrote.Store(true)
	e.expect("-"+ErrUnkillable, "SCRIPT", "KILL")
}

func TestAuth_NoAuthBeforeCommands(t *testing.T) {
	e := newTestEngine(t)
	w := &enginetest.TextWriter{}
	e.Exec(&Ctx{Args: [][]byte{[]byte("GET"), []byte("k")}, W: w, Client: &Client{NeedsAuth: true}})
	if got := w.String(); got != "-"+ErrNoAuth {
		t.Fatalf("got %q", got)
	}
	w = &enginetest.TextWriter{}
	e.Exec(&Ctx{Args: [][]byte{[]byte("GET")}, W: w, Client: &Client{NeedsAuth: true}})
	if got := w.String(); got != "-ERR wrong number of arguments for 'get' command" {
		t.Fatalf("arity is checked before auth, as in Redis; got %q", got)
	}
}

type stubScripter struct{ killed int }

func (s *stubScripter) Run(c *Ctx, sha, body []byte, keys, argv [][]byte) bool { return true }
func (s *stubScripter) Load(body []byte, prepared any) (string, string)        { return "", "" }
func (s *stubScripter) Exists(sha []byte) bool                                 { return false }
func (s *stubScripter) Flush()                                                 {}
func (s *stubScripter) Kill()                                                  { s.killed++ }

func TestScriptKill_OrderedWithFirstWrite(t *testing.T) {
	e := newTestEngine(t)
	st := &stubScripter{}
	e.SetScripter(st)
	e.SetBusyThreshold(time.Millisecond)
	run := &ScriptRun{}
	sc := &Ctx{Eng: e.Engine, Script: run, Now: e.Now()}
	e.scriptBegin(nil, nil)
	e.scriptStart.Store(time.Now().Add(-time.Second).UnixNano()) // past the threshold
	e.expect("+OK", "SCRIPT", "KILL")
	if st.killed != 1 {
		t.Fatalf("scripter.Kill called %d times", st.killed)
	}
	w := &enginetest.TextWriter{}
	e.Lock()
	sc.Call([][]byte{[]byte("SET"), []byte("k"), []byte("v")}, w)
	e.Unlock()
	if w.String() != "-"+ErrScriptKilled {
		t.Fatalf("a write after SCRIPT KILL must fail, got %q", w.String())
	}
	e.scriptEnd()
	e.expect(":0", "EXISTS", "k")

	// and a script that wrote first cannot be killed
	run = &ScriptRun{}
	sc = &Ctx{Eng: e.Engine, Script: run, Now: e.Now()}
	e.scriptBegin(nil, nil)
	w.Reset()
	e.Lock()
	sc.Call([][]byte{[]byte("SET"), []byte("k"), []byte("v")}, w)
	e.Unlock()
	e.scriptStart.Store(time.Now().Add(-time.Second).UnixNano())
	e.expect("-"+ErrUnkillable, "SCRIPT", "KILL")
	e.scriptEnd()
	if st.killed != 1 {
		t.Fatalf("an unkillable script was killed")
	}
}

func TestScriptKill_WaitsForThresholdThenNotBusyIfScriptEnded(t *testing.T) {
	e := newTestEngine(t)
	st := &stubScripter{}
	e.SetScripter(st)
	e.scriptBegin(nil, nil) // running, far from the 5 s threshold
	start := time.Now()     // before the script's end is set going: the bound cannot fail for a late start
	go func() {
		time.Sleep(50 * time.Millisecond)
		e.scriptEnd()
	}()
	e.expect("-"+ErrNotBusy, "SCRIPT", "KILL")
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("SCRIPT KILL must wait for the running script (returned after %v)", waited)
	}
	if st.killed != 0 {
		t.Fatal("a script that ended below the busy threshold must not be killed")
	}
}

func TestScriptKill_WaitsForThresholdThenKills(t *testing.T) {
	e := newTestEngine(t)
	st := &stubScripter{}
	e.SetScripter(st)
	e.SetBusyThreshold(80 * time.Millisecond)
	start := time.Now() // before the script begins: a late start cannot fail the bound
	e.scriptBegin(nil, nil)
	defer e.scriptEnd()
	e.expect("+OK", "SCRIPT", "KILL")
	if waited := time.Since(start); waited < 60*time.Millisecond {
		t.Fatalf("SCRIPT KILL acted before the threshold (after %v)", waited)
	}
	if st.killed != 1 {
		t.Fatalf("Kill called %d times", st.killed)
	}
}

// While HoldLazyExpiry holds (CLIENT PAUSE), a lookup reports an expired
// key missing but leaves it in place, and expired_keys does not count it;
// a write under its name reclaims it first, keeping the expiry index in
// step; after the hold the next lookup reclaims the rest.
func TestHoldLazyExpiry_LeavesExpiredKeysInPlace(t *testing.T) {
	e := newTestEngine(t)
	for _, k := range []string{"s", "l", "h", "r"} {
		e.expect("+OK", "SET", k, "v", "PX", "100")
	}
	e.clock.Advance(200 * time.Millisecond)
	e.HoldLazyExpiry(e.clock.Mono() + 10_000)
	for _, k := range []string{"s", "l", "h", "r"} {
		e.expect("(nil)", "GET", k)
	}
	e.expect(":-2", "PTTL", "r")
	e.expect(":0", "DEL", "r")
	e.expect(":0", "EXISTS", "r")
	if n, _ := e.KeyCount(); n != 4 {
		t.Fatalf("%d keys during the hold, want the 4 expired ones left in place", n)
	}
	if n := e.Stats.ExpiredKeys.Load(); n != 0 {
		t.Fatalf("expired_keys = %d during the hold", n)
	}
	// writes under an expired key's name replace it, whatever its kind
	e.expect("+OK", "SET", "s", "w", "PX", "100000")
	e.expect(":1", "LPUSH", "l", "x")
	e.expect(":1", "HSET", "h", "f", "x")
	e.expect("$w", "GET", "s")
	e.expect(":1", "LLEN", "l")
	if n := e.Stats.ExpiredKeys.Load(); n != 3 {
		t.Fatalf("expired_keys = %d after three writes over expired keys, want 3", n)
	}
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
	e.HoldLazyExpiry(0)
	e.expect("(nil)", "GET", "r")
	if n, _ := e.KeyCount(); n != 3 {
		t.Fatalf("%d keys after the hold, want 3", n)
	}
	if n := e.Stats.ExpiredKeys.Load(); n != 4 {
		t.Fatalf("expired_keys = %d after the hold, want 4", n)
	}
}

// A write whose lookup found an expired key left in place by the hold,
// and that adds its entry after the hold ended (CLIENT UNPAUSE runs on
// another goroutine, without the keyspace lock), still reclaims the old
// entry: the expiry index must not keep it, or its reclaim would delete
// the new key by name.
func TestHoldLazyExpiry_EndingBetweenLookupAndWrite(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v", "PX", "100")
	e.clock.Advance(200 * time.Millisecond)
	e.HoldLazyExpiry(e.clock.Mono() + 10_000)
	e.Lock()
	now := e.clock.Mono()
	ent := e.lookup([]byte("k"), now)
	e.HoldLazyExpiry(0) // the pause ends here
	e.setStringAt([]byte("k"), ent, []byte("new"), 0, false)
	e.Unlock()
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
	e.clock.Advance(time.Second)
	e.ReclaimDue(100)
	e.expect("$new", "GET", "k")
}

// The hold stops the active expiry as well, at the keyspace lock (as does
// SetActiveExpiry(false)): a pass
// that was already on its way when EXEC set a pause (CI caught one taking
// the lock just after) must leave the expired keys in place, and still
// report the next deadline.
func TestHoldLazyExpiry_HoldsReclaimDue(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v", "PX", "100")
	e.clock.Advance(200 * time.Millisecond)
	e.HoldLazyExpiry(e.clock.Mono() + 10_000)
	n, next, ok := e.ReclaimDue(100)
	if n != 0 || !ok || next > e.clock.Mono() {
		t.Fatalf("ReclaimDue during the hold = %d, %d, %v; want 0 and the past deadline", n, next, ok)
	}
	if keys, _ := e.KeyCount(); keys != 1 {
		t.Fatalf("%d keys during the hold, want the expired one left in place", keys)
	}
	e.HoldLazyExpiry(0)
	e.SetActiveExpiry(false) // DEBUG SET-ACTIVE-EXPIRE 0 holds it the same way
	if n, _, ok := e.ReclaimDue(100); n != 0 || !ok {
		t.Fatalf("ReclaimDue with active expiry off = %d, %v; want 0 and the deadline", n, ok)
	}
	e.SetActiveExpiry(true)
	if n, _, ok := e.ReclaimDue(100); n != 1 || ok {
		t.Fatalf("ReclaimDue after the hold = %d, %v; want 1 and no next deadline", n, ok)
	}
}

// COMMAND LIST lists subcommands after their container, filters by
// FILTERBY PATTERN (case-insensitive glob on the full name), ACLCAT and
// MODULE (none here), and refuses other arguments as Redis 7.0 does.
func TestCommandList_FilterByAndSubcommands(t *testing.T) {
	te := newTestEngine(t)
	all := te.do("COMMAND", "LIST")
	for _, name := range []string{"get", "script", "script|load", "command|list"} {
		if !strings.Contains(all+" ", " $"+name+" ") {
			t.Errorf("COMMAND LIST lacks %q: %s", name, all)
		}
	}
	te.expect("*6 $get $getbit $getdel $getex $getrange $getset", "COMMAND", "LIST", "FILTERBY", "PATTERN", "get*")
	te.expect("*2 $script|flush $script|load", "COMMAND", "list", "filterby", "pattern", "SCRIPT|[fl]*")
	te.expect("*0", "COMMAND", "LIST", "FILTERBY", "MODULE", "get")
	te.expect("*0", "COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuchcategory")
	if got := te.do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "Scripting"); !strings.Contains(got, " $eval ") || !strings.Contains(got, " $script|load") || strings.Contains(got, " $get ") {
		t.Errorf("FILTERBY ACLCAT scripting: %s", got)
	}
	for _, args := range [][]string{
		{"COMMAND", "LIST", "foo"},
		{"COMMAND", "LIST", "FILTERBY"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN", "x", "y"},
		{"COMMAND", "LIST", "FILTERBY", "bogus", "x"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN", "x", "FILTERBY", "PATTERN", "y"},
	} {
		te.expect("-ERR syntax error", args...)
	}
}

// CONFIG HELP and COMMAND HELP are Redis 7.0's texts (COMMAND's without
// GETKEYS and GETKEYSANDFLAGS, which tumbler lacks); HELP takes no
// argument. compat/diff/testdata/config.txt diffs CONFIG HELP against
// redis-server.
func TestHelp_ConfigAndCommand(t *testing.T) {
	te := newTestEngine(t)
	for _, tc := range []struct {
		cmd         string
		n           int
		first, last string
	}{
		{"CONFIG", 11, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "    Prints this help."},
		{"COMMAND", 21, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "    Prints this help."},
	} {
		got := te.do(tc.cmd, "HELP")
		if !strings.HasPrefix(got, "*"+strconv.Itoa(tc.n)+" +"+tc.first+" ") || !strings.HasSuffix(got, "+"+tc.last) {
			t.Errorf("%s HELP: %q", tc.cmd, got)
		}
		te.expect("-ERR wrong number of arguments for '"+strings.ToLower(tc.cmd)+"|help' command", tc.cmd, "HELP", "x")
	}
	if got := te.do("COMMAND", "HELP"); !strings.Contains(got, "+GETKEYSANDFLAGS <full-command> ") {
		t.Errorf("COMMAND HELP lacks GETKEYSANDFLAGS: %q", got)
	}
}
