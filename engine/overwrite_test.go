package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// keepingWriter keeps the strings it is given, as a script's writer keeps
// a reply as a Lua string that aliases them (and the fixture's, and the
// recorder of a blocked command): it is no CopyingWriter.
type keepingWriter struct {
	Writer // a TextWriter, seen only through Writer's methods
	kept   []string
}

func (w *keepingWriter) WriteBulkString(s string) {
	w.kept = append(w.kept, s)
	w.Writer.WriteBulkString(s)
}

// keep runs a command whose reply w keeps, and returns what it kept.
func (te *testEngine) keep(args ...string) []string {
	te.t.Helper()
	w := &keepingWriter{Writer: &enginetest.TextWriter{}}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	te.Exec(&Ctx{Args: bargs, W: w})
	return w.kept
}

func (te *testEngine) entryOf(key string) *entry {
	te.Lock()
	defer te.Unlock()
	return te.keys.getString(key)
}

func TestSet_OverwritesInPlaceWhatFits(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "aaaa")
	ent := e.entryOf("k")
	e.expect("+OK", "SET", "k", "bbbb")
	e.expect("$bbbb", "GET", "k") // a connection's GET copies: it pins nothing
	if got := e.entryOf("k"); got != ent {
		t.Fatal("a value of the same length made a new entry")
	}
	// 16+1+2 and 16+1+4 bytes both take 24: shorter, in place too
	e.expect("+OK", "SET", "k", "cc")
	if got := e.entryOf("k"); got != ent {
		t.Fatal("a shorter value of the same size made a new entry")
	}
	e.expect("$cc", "GET", "k")
	e.expect(":2", "STRLEN", "k")
	// a value that needs another size is a new entry
	e.expect("+OK", "SET", "k", strings.Repeat("d", 20))
	if got := e.entryOf("k"); got == ent {
		t.Fatal("a value past the entry's room was written in place")
	}
	e.expect("$"+strings.Repeat("d", 20), "GET", "k")
	ent = e.entryOf("k")
	// empty values: 16+1 and 16+1+7 bytes both take 24
	e.expect("+OK", "SET", "k", "")
	e.expect("$", "GET", "k")
	e.expect("+OK", "SET", "k", "eeeeeee")
	e.expect("$eeeeeee", "GET", "k")
	if got := e.entryOf("k"); got == ent {
		t.Fatal("the 20-byte value's entry took a 7-byte one (another size)")
	}
	// INCR goes the same way
	e.expect("+OK", "SET", "n", "10")
	ent = e.entryOf("n")
	e.expect(":11", "INCR", "n")
	e.expect(":1011", "INCRBY", "n", "1000")
	if got := e.entryOf("n"); got != ent {
		t.Fatal("INCR made a new entry for a value of the same size")
	}
	e.expect("$1011", "GET", "n")
}

func TestSet_OverwriteAllocatesNothing(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "lock:1", "token-0123456789abcdef")
	c := &Ctx{Args: [][]byte{[]byte("SET"), []byte("lock:1"), []byte("token-fedcba9876543210")}, W: nopWriter{}}
	if n := testing.AllocsPerRun(100, func() { e.Exec(c) }); n != 0 {
		t.Fatalf("SET over a value of the same length: %v allocations, want 0", n)
	}
	e.expect("$token-fedcba9876543210", "GET", "lock:1")
}

// A value a reader keeps never changes: the first SET after such a read
// makes a new entry, and the next ones go in place again.
func TestSet_OverwriteLeavesWhatAReaderKeptAlone(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "old1")
	e.expect("+OK", "SET", "j", "oldj")
	kept := map[string][]string{
		"GET":      e.keep("GET", "k"),
		"MGET":     e.keep("MGET", "j", "k"),
		"GETRANGE": e.keep("GETRANGE", "k", "1", "2"),
		"GETEX":    e.keep("GETEX", "k"),
	}
	old := e.entryOf("k")
	e.expect("+OK", "SET", "k", "new1")
	e.expect("+OK", "SET", "j", "newj")
	if e.entryOf("k") == old {
		t.Fatal("a value a reader kept was overwritten in place")
	}
	want := map[string][]string{"GET": {"old1"}, "MGET": {"oldj", "old1"}, "GETRANGE": {"ld"}, "GETEX": {"old1"}}
	for cmd, w := range want {
		if strings.Join(kept[cmd], " ") != strings.Join(w, " ") {
			t.Errorf("%s's kept reply is now %q, want %q", cmd, kept[cmd], w)
		}
	}
	nu := e.entryOf("k")
	e.expect("+OK", "SET", "k", "new2")
	if e.entryOf("k") != nu {
		t.Fatal("the new entry, which no reader holds, was not written in place")
	}

	// SET ... GET hands the old value to the reader and overwrites it in
	// the same command
	e.expect("+OK", "SET", "g", "old3")
	got := e.keep("SET", "g", "new3", "GET")
	e.expect("$new3", "GET", "g")
	if len(got) != 1 || got[0] != "old3" {
		t.Fatalf("SET GET's kept reply is %q, want old3", got)
	}
	// the same through a writer that copies: in place, the reply the old value
	e.expect("$new3", "SET", "g", "new4", "GET")
	e.expect("$new4", "GET", "g")
}

// SORT ... GET ... STORE keeps the values it looks up in the list it
// stores: they must not change with the keys.
func TestSet_OverwriteAfterSortStore(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "RPUSH", "l", "1")
	e.expect("+OK", "SET", "v_1", "aaaa")
	e.expect(":1", "SORT", "l", "BY", "nosort", "GET", "v_*", "STORE", "dst")
	e.expect("+OK", "SET", "v_1", "bbbb")
	e.expect("*1 $aaaa", "LRANGE", "dst", "0", "-1")
}

func TestSet_OverwriteKeepsTheExpiryIndexInStep(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "aaaa", "PX", "100")
	ent := e.entryOf("k")
	e.expect("+OK", "SET", "k", "bbbb") // no TTL now
	e.expect(":-1", "PTTL", "k")
	e.expect("+OK", "SET", "k", "cccc", "PX", "100")
	e.expect("+OK", "SET", "k", "dddd", "KEEPTTL")
	e.expect(":100", "PTTL", "k")
	e.expect("+OK", "SET", "j", "jjjj", "PX", "50")
	e.expect("+OK", "SET", "j", "JJJJ", "PX", "5000") // a later deadline
	if e.entryOf("k") != ent {
		t.Fatal("not written in place: the test does not test the in-place path")
	}
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
	e.clock.Advance(200 * time.Millisecond)
	e.ReclaimDue(100)
	if e.entryOf("k") != nil {
		t.Fatal("the key overwritten with KEEPTTL was not reclaimed at its deadline")
	}
	if e.entryOf("j") == nil {
		t.Fatal("the key was reclaimed at the deadline its overwrite replaced")
	}
	e.expect("$JJJJ", "GET", "j")
	if n := e.Stats.ExpiredKeys.Load(); n != 1 {
		t.Fatalf("expired_keys %d, want 1", n)
	}
}

// A SET's new value has an access time of now (Redis's new object), also
// from a client whose lookups do not touch keys (CLIENT NO-TOUCH).
func TestSet_OverwriteIsANewAccessEvenWithoutTouch(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "aaaa")
	ent := e.entryOf("k")
	e.clock.Advance(10 * time.Second)
	e.expect(":10", "OBJECT", "IDLETIME", "k")
	w := &enginetest.TextWriter{}
	e.Exec(&Ctx{Args: [][]byte{[]byte("SET"), []byte("k"), []byte("bbbb")}, W: w, Client: &Client{NoTouch: true}})
	if w.String() != "+OK" {
		t.Fatal(w.String())
	}
	if e.entryOf("k") != ent {
		t.Fatal("not written in place: the test does not test the in-place path")
	}
	e.expect(":0", "OBJECT", "IDLETIME", "k")
}

// A key is at most 1 GiB: the bit above its length in the entry marks a
// value a reader keeps (entryShared).
func TestEntry_KeyLengthLimit(t *testing.T) {
	if maxKeyLen != entryShared-1 {
		t.Fatal(maxKeyLen)
	}
	checkEntryLens(maxKeyLen, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("a key of 1 GiB was accepted")
		}
	}()
	checkEntryLens(maxKeyLen+1, 0)
}

// A command with a key longer than an entry holds is refused before it
// runs: LMOVE would pop its element and then fail to create the
// destination, and the element would be lost. (The limit is lowered to
// test it: a key of 1 GiB is too much to make here.)
func TestLongKey_RefusedBeforeTheCommandRuns(t *testing.T) {
	e := newTestEngine(t)
	defer func(n int) { maxKeyLen = n }(maxKeyLen)
	e.expect(":2", "RPUSH", "src", "a", "b")
	maxKeyLen = 8         // (below proto-max-bulk-len's 512 MB, as a raised one is above 1 GiB)
	long := "destination" // 11 bytes
	e.expect("-"+ErrStringTooLong, "LMOVE", "src", long, "LEFT", "LEFT")
	e.expect("-"+ErrStringTooLong, "SET", long, "v")
	e.expect("-"+ErrStringTooLong, "SORT", "src", "ALPHA", "STORE", long)
	e.expect("-"+ErrStringTooLong, "MSET", "k", "v", long, "v")
	e.expect("*2 $a $b", "LRANGE", "src", "0", "-1")
	e.expect(":0", "EXISTS", "k")
	// a long value is no key
	e.expect("+OK", "SET", "k", "value-longer-than-8")
	e.expect("$value-longer-than-8", "GET", "k")
	e.expect("$a", "LMOVE", "src", "dst", "LEFT", "LEFT")
}

// A script can make a key of any length (a Lua string is not bound by
// proto-max-bulk-len): its calls are checked whatever that says.
func TestLongKey_RefusedInAScript(t *testing.T) {
	e := newTestEngine(t)
	defer func(n int) { maxKeyLen = n }(maxKeyLen)
	e.SetScripter(&stubScripter{})
	e.expect(":2", "RPUSH", "src", "a", "b")
	maxKeyLen = 8
	e.SetProtoMaxBulkLen(8) // no client argument can be longer than a key
	sc := &Ctx{Eng: e.Engine, Script: &ScriptRun{}, Now: e.Now()}
	w := &enginetest.TextWriter{}
	func() {
		e.scriptBegin(nil, nil)
		defer e.scriptEnd()
		e.Lock()
		defer e.Unlock()
		sc.Call([][]byte{[]byte("LMOVE"), []byte("src"), []byte("destination"), []byte("LEFT"), []byte("LEFT")}, w)
	}()
	if w.String() != "-"+ErrStringTooLong {
		t.Fatalf("got %q", w.String())
	}
	e.SetProtoMaxBulkLen(0)
	e.expect("*2 $a $b", "LRANGE", "src", "0", "-1")
}

// A value longer than an entry holds (4 GiB) fails where its entry is
// made: MSET and MSETNX check them all before they set the first.
func TestLongValue_MSetRefusedBeforeItSets(t *testing.T) {
	e := newTestEngine(t)
	defer func(n int) { maxValueLen = n }(maxValueLen)
	maxValueLen = 8
	long := "value-longer-than-8"
	e.expect("-"+ErrStringTooLong, "MSET", "k", "v", "k2", long)
	e.expect("-"+ErrStringTooLong, "MSETNX", "k", "v", "k2", long)
	e.expect(":0", "EXISTS", "k", "k2")
	e.expect("+OK", "MSET", "k", "v", "k2", "12345678")
	e.expect("*2 $v $12345678", "MGET", "k", "k2")
	// MSETNX answers 0 for a key that is there before it looks at values, as Redis
	e.expect(":0", "MSETNX", "k", "v", "k3", long)
	e.expect(":0", "EXISTS", "k3")
}
