package engine

import (
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// APPEND grows a string in place, with room as sds's greedy policy, so a
// string built by appends costs amortized O(1) per APPEND: a new entry
// only when the room runs out (10000 appends of 1 KB took 96 s when each
// copied the whole value, 0.2 s with room; Redis 0.15 s).
func TestAppend_GrowsInPlaceWithRoom(t *testing.T) {
	e := newTestEngine(t)
	var want strings.Builder
	entries := map[*entry]bool{}
	for i := 0; i < 2000; i++ {
		part := strings.Repeat(string(rune('a'+i%26)), 1+i%7)
		want.WriteString(part)
		e.expect(":"+strconv.Itoa(want.Len()), "APPEND", "s", part)
		entries[e.keys.get([]byte("s"))] = true
	}
	e.expect("$"+want.String(), "GET", "s")
	e.expect("$raw", "OBJECT", "ENCODING", "s")
	// twice the length each time: about log2(8000) entries, not 2000
	if len(entries) > 16 {
		t.Fatalf("2000 appends made %d entries: the room is not used", len(entries))
	}
	ent := e.keys.get([]byte("s"))
	if r := ent.room(); r < ent.vlen || r > 2*ent.vlen {
		t.Fatalf("room %d for %d bytes", r, ent.vlen)
	}
}

// Beyond 1 MB the room grows by 1 MB (SDS_MAX_PREALLOC), not by doubling.
func TestAppend_RoomPastOneMegabyte(t *testing.T) {
	e := newTestEngine(t)
	big := strings.Repeat("x", 3<<20)
	e.expect(":"+strconv.Itoa(len(big)), "APPEND", "s", big) // a new key: exact, as SET
	e.expect(":"+strconv.Itoa(len(big)+1), "APPEND", "s", "y")
	if r, n := e.keys.get([]byte("s")).room(), len(big)+1; r != uint32(n+1<<20) {
		t.Fatalf("room %d for %d bytes, want %d", r, n, n+1<<20)
	}
}

// A value read before an APPEND in place never changes: APPEND writes only
// past the bytes a reader can hold.
func TestAppend_ReadValuesStay(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "APPEND", "s", "a")
	e.expect(":2", "APPEND", "s", "b") // grown: room to spare from here on
	held := e.keys.get([]byte("s")).str()
	for i := 0; i < 50; i++ {
		e.do("APPEND", "s", "c")
		if held != "ab" {
			t.Fatalf("a value read before APPEND became %q", held)
		}
	}
}

// COPY and RENAME share the string's object, not its room: an APPEND to
// either key never writes into the other's bytes.
func TestAppend_CopyAndRenameHaveNoRoom(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "APPEND", "a", "1")
	e.expect(":2", "APPEND", "a", "2")
	e.expect(":1", "COPY", "a", "b")
	e.expect(":3", "APPEND", "b", "y")
	e.expect(":3", "APPEND", "a", "3")
	e.expect("$123", "GET", "a")
	e.expect("$12y", "GET", "b")
	e.expect("+OK", "RENAME", "a", "c")
	e.expect(":4", "APPEND", "c", "4")
	e.expect(":4", "APPEND", "b", "z")
	e.expect("$1234", "GET", "c")
	e.expect("$12yz", "GET", "b")
	for _, k := range []string{"b", "c"} {
		e.expect("$raw", "OBJECT", "ENCODING", k)
	}
}

// An APPEND in place is a write like any other: TTL kept, WATCH touched,
// the append event published.
func TestAppend_InPlaceIsAWrite(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.client(), e.client()
	a.expect("+OK", "SET", "s", "x", "EX", "100")
	a.expect(":2", "APPEND", "s", "y") // grown
	grown := e.keys.get([]byte("s"))
	a.expect("+OK", "WATCH", "s")
	p := &recPublisher{}
	e.SetPublisher(p)
	flags, _ := ParseKeyspaceEvents("K$")
	e.SetNotifyKeyspaceEvents(flags)
	b.expect(":3", "APPEND", "s", "z")
	if e.keys.get([]byte("s")) != grown {
		t.Fatal("the APPEND made a new entry: the in-place path is not tested")
	}
	a.expect("+OK", "MULTI")
	a.expect("+QUEUED", "PING")
	a.expect("(nilarray)", "EXEC")
	e.noWatchLeft()
	if want := []string{"publish __keyspace@0__:s append"}; !reflect.DeepEqual(p.calls, want) {
		t.Fatalf("published %q, want %q", p.calls, want)
	}
	e.expect(":100", "TTL", "s")
}

// An empty APPEND still makes the value raw, as Redis's
// dbUnshareStringValue (int and embstr values become raw).
func TestAppend_EmptyMakesRaw(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "n", "123")
	e.expect("$int", "OBJECT", "ENCODING", "n")
	e.expect(":3", "APPEND", "n", "")
	e.expect("$raw", "OBJECT", "ENCODING", "n")
	e.expect(":3", "APPEND", "n", "")
	e.expect("$123", "GET", "n")
	// an empty embstr too: the appended length fits the no room it has
	e.expect("+OK", "SET", "e", "")
	e.expect("$embstr", "OBJECT", "ENCODING", "e")
	e.expect(":0", "APPEND", "e", "")
	e.expect("$raw", "OBJECT", "ENCODING", "e")
	e.expect(":1", "APPEND", "e", "x")
	e.expect("$x", "GET", "e")
}

// SETBIT, SETRANGE and BITFIELD edit a value in place once it is theirs:
// a thousand edits of a 1 MB bitmap allocate far less than one copy of it
// each (they copied it whole every time: 10000 SETBITs took seconds, as
// APPEND once did). A read that hands the value out (GET) makes the next
// edit copy it once, and what the reader holds never changes.
func TestBitEdits_InPlace(t *testing.T) {
	te := newTestEngine(t)
	const size = 1 << 20
	te.expect("+OK", "SET", "bm", strings.Repeat("\x00", size))
	te.expect(":0", "SETBIT", "bm", "0", "1") // the first edit copies the value once
	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	for _, tc := range []struct {
		name string
		args func(i int) []string
	}{
		{"SETBIT", func(i int) []string { return []string{"SETBIT", "bm", strconv.Itoa(i * 8000), "1"} }},
		{"SETRANGE", func(i int) []string { return []string{"SETRANGE", "bm", strconv.Itoa(i * 1000), "xy"} }},
		{"BITFIELD", func(i int) []string { return []string{"BITFIELD", "bm", "INCRBY", "u8", strconv.Itoa(i * 8000), "1"} }},
	} {
		n := allocated(func() {
			for i := range 1000 {
				te.do(tc.args(i)...)
			}
		})
		if n > size {
			t.Errorf("1000 %s on a 1 MB value allocated %d bytes: copies of the value", tc.name, n)
		}
	}
	// a reader's string does not change under later edits
	held := heldString{Writer: &enginetest.TextWriter{}}
	te.Exec(&Ctx{Args: [][]byte{[]byte("GET"), []byte("bm")}, W: &held})
	before := strings.Clone(held.s)
	te.expect(":0", "SETBIT", "bm", "0", "1")
	te.expect(":1048576", "SETRANGE", "bm", "1", "\xff\xff")
	if held.s != before {
		t.Fatal("an edit changed a value a reader held")
	}
	if got := te.do("GETBIT", "bm", "0"); got != ":1" {
		t.Fatalf("GETBIT after the edit = %q", got)
	}
}

// heldString keeps a bulk reply as the writer was given it (a script's
// writer does, without a copy): no CopyingWriter.
type heldString struct {
	Writer // a TextWriter, seen only through Writer's methods
	s      string
}

func (w *heldString) WriteBulkString(s string) { w.s = s }

// COPY and RENAME of a value edited in place give a plain raw string: the
// new key neither keeps the old entry (and its room) alive nor shares its
// exposed mark, so reading the copy does not make the source's next edit
// copy the value.
func TestBitEdits_CopyAndRename(t *testing.T) {
	te := newTestEngine(t)
	te.expect(":0", "SETBIT", "src", strconv.Itoa(8<<20-1), "1") // 1 MB, edited in place from now on
	te.expect(":1", "COPY", "src", "cp")
	te.expect("+OK", "RENAME", "src", "moved")
	te.expect(":1", "COPY", "moved", "cp2")
	for _, k := range []string{"cp", "moved", "cp2"} {
		te.Lock()
		ent := te.keys.getString(k)
		g, grown := ent.objValue().(*grownString)
		te.Unlock()
		if grown && g.owner != ent {
			t.Fatalf("%s shares another entry's grownString", k)
		}
		if enc := te.do("OBJECT", "ENCODING", k); enc != "$raw" {
			t.Fatalf("OBJECT ENCODING %s = %q", k, enc)
		}
	}
	te.do("GET", "cp2") // exposes cp2, not moved
	var a, b runtime.MemStats
	te.expect(":0", "SETBIT", "moved", "0", "1") // moved's first edit: a copy of its own
	runtime.ReadMemStats(&a)
	for i := range 1000 {
		te.do("SETBIT", "moved", strconv.Itoa(i*8), "1")
	}
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 1<<20 {
		t.Fatalf("1000 SETBITs after a read of a copy allocated %d bytes", n)
	}
	te.expect("$\x00", "GETRANGE", "cp2", "0", "0")
}
