package luavm

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine"
)

// testMemLimit keeps the memory tests' heap small.
const testMemLimit = 32 << 20

func liveHeapNow() uint64 {
	s := []metrics.Sample{{Name: liveHeap}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// memoryReply is the error a script stopped by the memory bound gets.
func memoryReply(body, line string) string { return memoryReplyAt(testMemLimit, body, line) }

// memoryReplyAt is memoryReply for a limit of limit bytes.
func memoryReplyAt(limit int, body, line string) string {
	return "-" + engine.ErrScriptMemory + " (lua-memory-limit is " + strconv.Itoa(limit) +
		" bytes) script: " + SHA1Hex([]byte(body)) + ", on @user_script:" + line + "."
}

func TestMemoryLimit_StopsRunawayScripts(t *testing.T) {
	for _, tc := range []struct {
		name, body, line string
	}{
		{"table of strings", "local t={}\nwhile true do t[#t+1]=string.rep('x',1000) end", "2"},
		{"concatenation loop", "local t, s, i = {}, string.rep('x', 100), 0\nwhile true do i=i+1; t[i]=s..i end", "2"},
		{"table of numbers", "local t, i = {}, 0\nwhile true do i=i+1; t[i]=i*0.5 end", "2"},
		{"nested tables", "local t = {}\nwhile true do t = {t, {1, 2, 3}} end", "2"},
		{"pcall cannot swallow it", "local t={}\nwhile true do pcall(function() for i=1,1000 do t[#t+1]=string.rep('y',100) end end) end", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.vm.SetMemoryLimit(testMemLimit)
			defer f.vm.Close()
			runtime.GC()
			before := liveHeapNow()
			f.expect(memoryReply(tc.body, tc.line), "EVAL", tc.body, "0")
			f.expect(":7", "EVAL", "return 7", "0")
			f.expect("+OK", "SET", "after", "1")
			// What the script built is garbage now, its registers cleared.
			runtime.GC()
			if after := liveHeapNow(); after > before+testMemLimit/4 {
				t.Errorf("live heap %d after the script, %d before: the script's memory is still reachable", after, before)
			}
		})
	}
}

// withoutWatchdog stops vm's memory watchdog (or keeps it from ever
// starting), so that a test sees only the checks a script's own calls
// make: the watchdog samples the live heap on its own tick and may stop a
// script first that holds more than the limit for a moment (operands
// beside their result). Only for scripts whose memory stays finite should
// those checks break.
func withoutWatchdog(vm *VM) { vm.stopWatchdog() }

// A doubling concatenation makes each allocation as large as all before
// it, one Go call the watchdog cannot interrupt: the chain refuses itself
// once it would pass the limit, before it is built (coerce.go).
func TestMemoryLimit_StopsDoublingConcatenation(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(4 << 20)
	withoutWatchdog(f.vm)
	defer f.vm.Close()
	body := "local s = 'x'\nfor i = 1, 24 do s = s .. s end return #s" // 16 MB were the chain not refused
	want := "-ERR user_script:2: not enough memory script: " + SHA1Hex([]byte(body)) + ", on @user_script:2."
	f.expect(want, "EVAL", body, "0")
	f.expect(":7", "EVAL", "return 7", "0")
}

// A chain of concatenations is one allocation, made after its operands
// are evaluated: past the size limit it fails before it is built, however
// many operands it has (s..s..s..s of a 256 MB s built a 1 GB string
// past a 256 MB lua-memory-limit, and 24 of them killed a server with 6
// GB of address space). Chains nested in an operand count on their own,
// and one a caught error left open does not disturb the next.
func TestMemoryLimit_ConcatenationChains(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(1 << 20)
	withoutWatchdog(f.vm)
	defer f.vm.Close()
	refused := func(body string) {
		t.Helper()
		want := "-ERR user_script:1: not enough memory script: " + SHA1Hex([]byte(body)) + ", on @user_script:1."
		f.expect(want, "EVAL", body, "0")
	}
	refused("local s = string.rep('x', 300000) return #(s..s..s..s)")
	refused("local s = string.rep('x', 300000) return #('<'..s..'-'..s..'-'..s..'-'..s..'>')")
	refused("local s = string.rep('x', 600000) return #(1 .. s .. s)")
	refused("local s = string.rep('x', 300000) local function f() return s..s end return #(s .. f() .. f())")
	for body, want := range map[string]string{
		"local s = string.rep('x', 300000) return #(s..s..s)":                                                                    ":900000",
		"local s = string.rep('x', 200000) local function f() return s..s end return #(s .. f() .. s)":                           ":800000",
		"local s = string.rep('x', 300000) local a, b = s..s, s..s return #a + #b":                                               ":1200000",
		"local s = string.rep('x', 300000) local ok = pcall(function() return s..s..s..s end) return #(s..s..s) .. tostring(ok)": "$900000false",
		// a chain an error interrupted inside another's operand (pcall,
		// xpcall) does not count for the outer one
		"local big = string.rep('x', 700000) local function f() pcall(function() return big .. error('boom') end) return 'y' end local g = string.rep('z', 400000) return #('a' .. tostring(1) .. f() .. g)":                            ":400003",
		"local big = string.rep('x', 700000) local function f() xpcall(function() return big .. error('boom') end, function(e) return e end) return 'y' end local g = string.rep('z', 400000) return #('a' .. tostring(1) .. f() .. g)": ":400003",
		"local x = 0.1 local y = 1e15 return x .. '|' .. y .. '|' .. 7": "$0.1|1e+15|7",
	} {
		f.expect(want, "EVAL", body, "0")
	}
}

func TestMemoryLimit_ScriptThatWroteIsStoppedToo(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	body := "redis.call('set', KEYS[1], 'written')\nlocal t = {}\nwhile true do t[#t+1] = string.rep('z', 1000) end"
	f.expect(memoryReply(body, "3"), "EVAL", body, "1", "k")
	f.expect("$written", "GET", "k") // not rolled back, as in Redis
	// SCRIPT KILL's state is untouched: the next script may write.
	f.expect("+OK", "EVAL", "return redis.call('set', KEYS[1], 'again')", "1", "k")
	f.expect("$again", "GET", "k")
}

func TestMemoryLimit_UnderTheLimitIsUntouched(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	// About 4 MB kept, and a long run of garbage (many times the limit
	// allocated, little of it reachable at once): both finish.
	f.expect(":4000", "EVAL", "local t={} for i=1,4000 do t[i]=string.rep('k',1000) end return #t", "0")
	f.expect(":1", "EVAL", garbageScript("", 3000), "0")
}

// garbageScript is a script that runs first, then makes n strings of
// 100 KB, keeping none, and returns 1.
func garbageScript(first string, n int) string {
	return first + `local n = 0
for i = 1, ` + strconv.Itoa(n) + ` do
  local s = string.rep('g', 100000) .. i
  n = n + #s
end
return 1`
}

func TestMemoryLimit_LibraryCallsCappedUpFront(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	for _, body := range []string{
		"return #string.rep('x', 64*1024*1024)",
		"local t = {} local s = string.rep('x', 1024*1024) for i=1,64 do t[i]=s end return #table.concat(t)",
		"local t = {'a','b'} return #table.concat(t, string.rep('-', 40*1024*1024))",
	} {
		if got := f.do(2, "EVAL", body, "0"); !strings.Contains(got, "not enough memory") {
			t.Errorf("%s: %q", body, got)
		}
	}
	f.expect(":3", "EVAL", "return #table.concat({'a','b','c'})", "0")
	f.expect("$a-b-c", "EVAL", "return table.concat({'a','b','c'}, '-')", "0")
	f.expect("$b1", "EVAL", "return table.concat({'a','b',1}, '', 2)", "0")
}

func TestMemoryLimit_Off(t *testing.T) {
	vm := New()
	if vm.MemoryLimit() != DefaultMemoryLimit {
		t.Fatalf("default limit %d", vm.MemoryLimit())
	}
	vm.SetMemoryLimit(-5)
	if vm.MemoryLimit() != 0 || vm.sizeLimit() != maxStringLen {
		t.Fatalf("limit %d, size limit %d", vm.MemoryLimit(), vm.sizeLimit())
	}
	vm.Close()
}

// A collection the watchdog forces counts as live what is allocated
// while it marks: a script making garbage fast, in a process whose heap
// takes the collector long to mark, was stopped for memory it never kept
// (40 million pointers took the race detector's build long enough for
// 140 MB of the script's garbage to count, against a 32 MB limit).
func TestMemoryLimit_GarbageDuringALongMarkIsNotKept(t *testing.T) {
	type node struct{ next *node }
	var head *node
	for range 8_000_000 { // a heap that takes a while to mark
		head = &node{next: head}
	}
	defer runtime.KeepAlive(head)
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	// The script computes a while first, so that the watchdog's first
	// look finds the heap as the last collection left it, then makes
	// garbage.
	body := garbageScript("local m = 0 for i = 1, 3000000 do m = m + i end\n", 1000)
	for range 2 {
		runtime.GC()
		f.expect(":1", "EVAL", body, "0")
	}
}

// What the process took just before a script began is not the script's:
// the last collection's live heap, which left it out, was the baseline,
// and a script that then made garbage enough to force a collection was
// stopped for the heap it found.
func TestMemoryLimit_HeapTakenBeforeTheScriptIsNotItsOwn(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	body := garbageScript("", 1000)
	// No collection but the watchdog's: the last one's count stays as it
	// was when the heap was taken.
	defer debug.SetGCPercent(debug.SetGCPercent(5000))
	for range 3 {
		runtime.GC() // the live heap is counted here, and then
		keep := make([][]byte, 0, 64)
		for range cap(keep) { // 64 MB is taken that it leaves out
			keep = append(keep, make([]byte, 1<<20))
		}
		f.expect(":1", "EVAL", body, "0")
		runtime.KeepAlive(keep)
	}
}

// A script building a table is stopped soon after the table passes the
// limit, with one core as with two: what it allocates, garbage included,
// until it is stopped stays within a few times the limit. The watchdog
// used to collect beside the running script; under GOMAXPROCS=1 the
// collector had a quarter of the core, the marking took as long as the
// script took to double its table, and what the script allocated
// meanwhile, taken off the live heap as garbage, hid the growth: a
// 256 MB limit let a table of string keys grow the heap past 9 GB.
func TestMemoryLimit_TableStoppedSoonAfterTheLimit(t *testing.T) {
	const limit = 16 << 20
	allocs := []metrics.Sample{{Name: heapAllocs}, {Name: "/gc/cycles/forced:gc-cycles"}}
	for _, procs := range []int{1, 2} {
		for name, body := range map[string]string{
			// each bounded: some 20 times the limit were they not stopped
			"string keys":  "local t = {}\nfor i = 1, 3000000 do t['k'..i] = i end return 1",
			"integer keys": "local t = {}\nfor i = 1, 6000000 do t[i] = i end return 1",
			"number keys":  "local t = {}\nfor i = 1, 5000000 do t[i + 0.5] = i end return 1",
			"strings":      "local t = {}\nfor i = 1, 6000000 do t[#t+1] = 'value:' .. i end return 1",
		} {
			t.Run(name+"/GOMAXPROCS="+strconv.Itoa(procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				f := newFixture(t)
				f.vm.SetMemoryLimit(limit)
				runtime.GC()
				metrics.Read(allocs)
				before, forced := allocs[0].Value.Uint64(), allocs[1].Value.Uint64()
				f.expect(memoryReplyAt(limit, body, "2"), "EVAL", body, "0")
				metrics.Read(allocs)
				allocated, forced := allocs[0].Value.Uint64()-before, allocs[1].Value.Uint64()-forced
				t.Logf("allocated %d MB, %d forced collections", allocated>>20, forced)
				if allocated > 8*limit {
					t.Errorf("the script allocated %d MB before it was stopped, past 8 times the limit of %d MB", allocated>>20, limit>>20)
				}
			})
		}
	}
}

// One library call that builds a large table, cjson.decode, is stopped
// where it checks for SCRIPT KILL, not only once it returns.
func TestMemoryLimit_StopsALongLibraryCall(t *testing.T) {
	const limit = 16 << 20
	f := newFixture(t)
	f.vm.SetMemoryLimit(limit)
	allocs := []metrics.Sample{{Name: heapAllocs}}
	body := `local s = '[' .. string.rep('"ab",', 3000000) .. '0]' return #cjson.decode(s)` // 15 MB of input
	runtime.GC()
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	f.expect(memoryReplyAt(limit, body, "1"), "EVAL", body, "0")
	metrics.Read(allocs)
	allocated := allocs[0].Value.Uint64() - before
	t.Logf("allocated %d MB", allocated>>20)
	if allocated > 10*limit {
		t.Errorf("the script allocated %d MB before it was stopped, past 10 times the limit of %d MB", allocated>>20, limit>>20)
	}
}
