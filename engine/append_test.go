package engine

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
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
}
