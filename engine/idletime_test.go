package engine

import (
	"strconv"
	"testing"
	"time"
)

// OBJECT IDLETIME counts the seconds since a key's last access, on the
// engine's clock: a command that reads or writes a key accesses it, and
// TYPE, TTL, EXISTS, OBJECT, SCAN, KEYS and RANDOMKEY do not (Redis's
// LOOKUP_NOTOUCH, and the commands that read its dictionary directly).
// RESTORE IDLETIME sets it; a key made anew (SET, RESTORE, DEBUG RELOAD's
// load) starts at 0.
func TestObjectIdletime_TracksAccess(t *testing.T) {
	te := newTestEngine(t)
	idle := func(key, want string) {
		t.Helper()
		te.expect(":"+want, "OBJECT", "IDLETIME", key)
	}
	te.expect("+OK", "SET", "k", "v")
	te.expect(":3", "RPUSH", "l", "a", "b", "c")
	idle("k", "0")
	te.clock.Advance(5 * time.Second)
	idle("k", "5")
	for _, args := range [][]string{
		{"TYPE", "k"}, {"TTL", "k"}, {"PTTL", "k"}, {"EXPIRETIME", "k"}, {"EXISTS", "k"},
		{"OBJECT", "ENCODING", "k"}, {"OBJECT", "REFCOUNT", "k"}, {"SCAN", "0"}, {"KEYS", "*"},
		{"RANDOMKEY"}, {"MEMORY", "USAGE", "k"}, {"DBSIZE"},
	} {
		te.do(args...)
		idle("k", "5") // not an access
	}
	te.expect("$v", "GET", "k")
	idle("k", "0")
	idle("l", "5")
	te.expect(":3", "LLEN", "l")
	idle("l", "0")
	te.clock.Advance(2 * time.Second)
	te.expect(":1", "TOUCH", "l")
	idle("l", "0")
	idle("k", "2")
	// a write accesses the key
	te.clock.Advance(3 * time.Second)
	te.expect(":1", "EXPIRE", "k", "1000")
	idle("k", "0")
	idle("l", "3")
	// a key set over another starts afresh
	te.clock.Advance(time.Second)
	te.expect("+OK", "SET", "l", "new")
	idle("l", "0")

	// RESTORE IDLETIME sets it; it then grows with the clock
	dump := te.do("DUMP", "k")
	if len(dump) < 2 || dump[0] != '$' {
		t.Fatalf("DUMP k = %q", dump)
	}
	te.expect("+OK", "RESTORE", "r", "0", dump[1:], "IDLETIME", "1000")
	idle("r", "1000")
	te.clock.Advance(10 * time.Second)
	idle("r", "1010")
	te.expect("+OK", "RESTORE", "r2", "0", dump[1:])
	idle("r2", "0")
	// an idle time past the 24-bit clock's start: half its span back, as
	// Redis's objectSetLRUOrLFU gives it
	clk := lruNow(te.clock.Mono())
	te.expect("+OK", "RESTORE", "r3", "0", dump[1:], "IDLETIME", strconv.FormatUint(clk+100, 10))
	idle("r3", strconv.FormatUint(lruMask-lruMask/2, 10))

	// a missing key is a null; an expired one is missing
	te.expect("(nil)", "OBJECT", "IDLETIME", "nokey")
	te.expect("+OK", "SET", "e", "v", "PX", "10")
	te.clock.Advance(time.Second)
	te.expect("(nil)", "OBJECT", "IDLETIME", "e")
}

// The 24-bit clock wraps after 194 days: an access just before the wrap
// is a few seconds old just after it, as Redis's estimateObjectIdleTime
// computes it.
func TestIdleSeconds_AcrossTheClockWrap(t *testing.T) {
	const wrapMs = int64(lruMask+1) * 1000 // engine time where the clock is 0 again
	before := lruNow(wrapMs - 3000)
	if before != lruMask-2 {
		t.Fatalf("the clock 3 s before the wrap is %d", before)
	}
	if got := idleSeconds(before, wrapMs+4000); got != 6 {
		t.Fatalf("idle across the wrap: %d s, want 6 (Redis's formula counts 7 s as 6 there)", got)
	}
	if got := idleSeconds(5, 12000); got != 7 {
		t.Fatalf("idle: %d, want 7", got)
	}
}
