package luavm

import (
	"runtime"
	"strconv"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// heapInUse is the heap's live objects, after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A cached small script costs under 2 KB of heap (it was 17.8 KB: the
// compiler's spare room, kept with every compiled function).
func TestScriptCache_MemoryPerScript(t *testing.T) {
	f := newFixture(t)
	const n = 2000
	bodies := make([]string, n)
	for i := range bodies {
		// a value written into the body: a distinct script each time
		bodies[i] = "if redis.call('get',KEYS[1])=='token:" + strconv.Itoa(i) +
			"' then return redis.call('del',KEYS[1]) else return 0 end"
	}
	f.expect("+OK", "SET", "k", "token:7")
	f.expect(":0", "EVAL", bodies[0], "1", "k") // the state's first run, before measuring
	before := heapInUse()
	for i, b := range bodies[1:] {
		want := ":0"
		if i+1 == 7 {
			want = ":1"
		}
		f.expect(want, "EVAL", b, "1", "k")
	}
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(f)
	per := grown / (n - 1)
	t.Logf("%d bytes a script", per)
	if per > 4096 {
		t.Errorf("a cached script takes %d bytes of heap, want at most 4 KB (about 2 KB)", per)
	}
}

// A function library is compiled alike: a small one costs under 2 KB
// (it was 18 KB: 16 KB of spare room for each of its two functions).
func TestFunctionLibrary_MemoryPerLibrary(t *testing.T) {
	f := newFixture(t)
	const n = 1000
	load := func(i int) {
		s := strconv.Itoa(i)
		f.expect("$lib"+s, "FUNCTION", "LOAD", "#!lua name=lib"+s+
			"\nredis.register_function('f"+s+"', function(keys, args) return redis.call('get', keys[1]) end)")
	}
	load(0)
	before := heapInUse()
	for i := 1; i <= n; i++ {
		load(i)
	}
	grown := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(f)
	if per := grown / n; per > 4096 {
		t.Errorf("a library takes %d bytes of heap, want at most 4 KB (about 2 KB)", per)
	}
	f.expect("+OK", "SET", "k", "v")
	f.expect("$v", "FCALL", "f7", "1", "k")
}

// A compiled chunk, and each function in it, keeps no spare room.
func TestTrimProto_NoSpareRoom(t *testing.T) {
	vm := New()
	defer vm.Close()
	proto, errMsg := vm.compile([]byte(`local t = {}
local function f(a, b) local c = a .. b; t[#t+1] = c; return redis.call('get', c) end
for i, k in ipairs(KEYS) do f(k, ARGV[i]) end
return #t`), chunkScript)
	if errMsg != "" {
		t.Fatal(errMsg)
	}
	var check func(p *lua.FunctionProto, depth int)
	check = func(p *lua.FunctionProto, depth int) {
		for name, lc := range map[string][2]int{
			"Code":               {len(p.Code), cap(p.Code)},
			"DbgSourcePositions": {len(p.DbgSourcePositions), cap(p.DbgSourcePositions)},
			"Constants":          {len(p.Constants), cap(p.Constants)},
			"FunctionPrototypes": {len(p.FunctionPrototypes), cap(p.FunctionPrototypes)},
			"DbgLocals":          {len(p.DbgLocals), cap(p.DbgLocals)},
			"DbgCalls":           {len(p.DbgCalls), cap(p.DbgCalls)},
			"DbgUpvalues":        {len(p.DbgUpvalues), cap(p.DbgUpvalues)},
		} {
			if lc[0] != lc[1] {
				t.Errorf("function at depth %d: %s has length %d, capacity %d", depth, name, lc[0], lc[1])
			}
		}
		for _, q := range p.FunctionPrototypes {
			check(q, depth+1)
		}
	}
	check(proto, 0)
	if len(proto.FunctionPrototypes) != 1 {
		t.Errorf("%d functions, want 1", len(proto.FunctionPrototypes))
	}
}
