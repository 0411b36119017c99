package luavm

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// The tests of the array part's bound (arraycap.go). Their keys are the
// bound itself, 2^22, never gopher-lua's 2^26: with the bound undone, each
// such statement costs a 64 MB array (about 320 MB allocated on the way),
// not gigabytes.

// heapAllocated is the bytes the process has allocated on the heap so far.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocatedBy is what fn allocates on the heap (and anything running
// beside it: these tests run alone).
func allocatedBy(fn func()) uint64 {
	runtime.GC()
	before := heapAllocated()
	fn()
	return heapAllocated() - before
}

// cheap is far more than the statements below allocate with the bound in
// place, far less than the array part they would pad without it.
const cheap = 16 << 20

var boundKey = strconv.Itoa(arrayBound)

func TestArrayBound_IsSet(t *testing.T) {
	if lua.MaxArrayIndex != arrayBound {
		t.Fatalf("lua.MaxArrayIndex is %d, want %d", lua.MaxArrayIndex, arrayBound)
	}
}

// A key at the bound goes to the hash part, as a sparse key does in Lua
// 5.1: storing it allocates nothing to speak of, and #t is 0 (Redis's
// answer too).
func TestArrayBound_SparseKeyIsCheap(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"local t = {} t[" + boundKey + "] = 1 return {#t, t[" + boundKey + "]}", "*2 :0 :1"},
		{"local t = {} rawset(t, " + boundKey + ", 1) return {#t, rawget(t, " + boundKey + ")}", "*2 :0 :1"},
		{"local t = {} table.insert(t, " + boundKey + ", 1) return {#t, t[" + boundKey + "]}", "*2 :0 :1"},
		// {[2^22] = 1} in MessagePack: a map of one uint 32 key
		{"local t = cmsgpack.unpack('\\129\\206\\0\\64\\0\\0\\1') return {#t, t[" + boundKey + "]}", "*2 :0 :1"},
	} {
		if n := allocatedBy(func() { f.expect(tc.want, "EVAL", tc.script, "0") }); n > cheap {
			t.Errorf("%s allocated %d bytes", tc.script, n)
		}
	}
}

// Keys past the bound read back like any: t[k], rawget, pairs, next, and
// this package's unpack (gopher-lua's RawGetInt reads the array part only).
func TestArrayBound_KeysPastTheBound(t *testing.T) {
	runLibCases(t, []libCase{
		{`local B = ` + boundKey + ` local t = {'a', 'b'}
t[B] = 'x' t[B + 1] = 'y' t[2^40] = 'z'
local n, sum = 0, 0
for k, v in pairs(t) do n = n + 1 sum = sum + k end
local m, k = 0, next(t)
while k ~= nil do m = m + 1 k = next(t, k) end
local c = 0
for _ in ipairs(t) do c = c + 1 end
return {t[B], t[B + 1], t[2^40], rawget(t, B + 1), n, m, sum == 3 + B + B + 1 + 2^40, #t, c}`,
			"*9 $x $y $z $y :5 :5 :1 :2 :2"},
		{`local B = ` + boundKey + ` local t = {} t[B] = 'x' t[B + 1] = 'y' return {unpack(t, B, B + 1)}`, "*2 $x $y"},
		{`local B = ` + boundKey + ` local t = {} t[B] = 'x' return select('#', unpack(t, B - 1, B + 1))`, ":3"},
		// Lua 5.1's unpack reads t[0] too
		{`return {unpack({[0] = 'w', 'a'}, 0, 1)}`, "*2 $w $a"},
		{`local B = ` + boundKey + ` local t = {} t[B] = 'x' t[B + 2] = 'z' t[B] = nil return {next(t)}`, "*2 :" + strconv.Itoa(arrayBound+2) + " $z"},
	})
}

// Dense arrays below the bound are as they were.
func TestArrayBound_DenseArrays(t *testing.T) {
	f := newFixture(t)
	script := `local n = tonumber(ARGV[1]) local t = {}
for i = 1, n do t[i] = i end
local c = 0
for i, v in ipairs(t) do if v == i then c = c + 1 end end
local first = n > 1000 and n - 999 or 1
local u = select('#', unpack(t, first))
table.insert(t, 'x')
return {#t, c, table.getn(t), table.maxn(t), u, t[n + 1], table.remove(t), #t}`
	for _, n := range []int{1, 1000, 200000} {
		u := min(n, 1000)
		want := "*8 :" + strconv.Itoa(n+1) + " :" + strconv.Itoa(n) + " :" + strconv.Itoa(n+1) + " :" + strconv.Itoa(n+1) +
			" :" + strconv.Itoa(u) + " $x $x :" + strconv.Itoa(n)
		f.expect(want, "EVAL", script, "0", strconv.Itoa(n))
	}
}

// callLua calls fn(args...) on vm's state, outside a script, and returns
// its results or the error.
func callLua(vm *VM, fn lua.LGFunction, nret int, args ...lua.LValue) ([]lua.LValue, error) {
	L := vm.L
	top := L.GetTop()
	L.Push(L.NewFunction(fn))
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), nret, nil); err != nil {
		L.SetTop(top)
		return nil, err
	}
	res := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		res = append(res, L.Get(i))
	}
	L.SetTop(top)
	return res, nil
}

// arrayCounter is a reply writer that counts a top-level array of
// integers.
type arrayCounter struct {
	engine.Writer // nil: any other reply is a test failure (a panic)
	n, ints       int
}

func (w *arrayCounter) Proto() int       { return 2 }
func (w *arrayCounter) WriteArray(n int) { w.n = n }
func (w *arrayCounter) WriteInt(int64)   { w.ints++ }

// A dense array past the bound (its last elements in the hash part):
// gopher-lua's length stops at the bound, as README says, and this
// package's table functions and conversions see all of it. Built in Go,
// at its size (a 64 MB array part).
func TestArrayBound_DenseArrayPastTheBound(t *testing.T) {
	f := newFixture(t)
	B := arrayBound
	n := B + 1 // 1..B-1 in the array part, B and B+1 in the hash part
	tb := f.vm.L.CreateTable(B-1, 0)
	for i := 1; i <= n; i++ {
		tb.RawSetInt(i, lua.LTrue)
	}
	defer runtime.GC()
	if got := tb.Len(); got != B-1 {
		t.Errorf("gopher-lua's length %d, want %d", got, B-1)
	}
	if got := tableLen(tb); got != n {
		t.Fatalf("tableLen %d, want %d", got, n)
	}
	if got := rawGetInt(tb, B+1); got != lua.LTrue {
		t.Errorf("rawGetInt(t, B+1) = %v", got)
	}

	// unpack's default end is the whole length
	if res, err := callLua(f.vm, baseUnpack, lua.MultRet, tb, lua.LNumber(B-1)); err != nil || len(res) != 3 {
		t.Errorf("unpack(t, B-1): %d values, %v", len(res), err)
	}
	// table.insert appends after the last element, table.remove takes it
	if _, err := callLua(f.vm, f.vm.tableInsert, 0, tb, lua.LString("x")); err != nil {
		t.Fatal(err)
	}
	if got, prev := rawGetInt(tb, n+1), rawGetInt(tb, n); got != lua.LString("x") || prev != lua.LTrue {
		t.Errorf("after table.insert: t[n] = %v, t[n+1] = %v", prev, got)
	}
	if res, err := callLua(f.vm, f.vm.tableRemove, 1, tb); err != nil || res[0] != lua.LString("x") || rawGetInt(tb, n+1) != lua.LNil {
		t.Errorf("table.remove: %v, %v; t[n+1] = %v", res, err, rawGetInt(tb, n+1))
	}

	// a script's reply: every element
	w := &arrayCounter{}
	writeLuaValue(w, tb, 2, 0, nil)
	if w.n != n || w.ints != n {
		t.Errorf("reply: an array of %d, %d integers; want %d", w.n, w.ints, n)
	}

	// cmsgpack.pack: an array 32 of n trues
	res, err := callLua(f.vm, f.vm.mpPack, 1, tb)
	if err != nil {
		t.Fatal(err)
	}
	p := string(res[0].(lua.LString))
	hdr := "\xdd" + string([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	if !strings.HasPrefix(p, hdr) || len(p) != len(hdr)+n || strings.Count(p[len(hdr):], "\xc3") != n {
		t.Errorf("cmsgpack.pack: %d bytes, %q...; want %q and %d times \\xc3", len(p), p[:min(len(p), 8)], hdr, n)
	}
}

// cmsgpack.unpack bounds the array parts' padding of one call by the size
// limit: a few bytes of input cannot make millions of nil slots.
func TestCmsgpack_PaddingBudget(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(4 << 20) // padding for about 100,000 slots
	withoutWatchdog(f.vm)
	defer f.vm.Close()
	const m = `'\129\205\234\96\1'` // {[60000] = 1}: 2.4 MB of padding
	for _, c := range []libCase{
		// a map of one key 2^20
		{`return #cmsgpack.unpack('\129\206\0\16\0\0\1')`, "-ERR user_script:1: not enough memory script: {sha}, on @user_script:1."},
		// an array of 200,000 nils, then 1
		{`return #cmsgpack.unpack('\221\0\3\13\65' .. string.rep('\192', 200000) .. '\1')`, "-ERR user_script:1: not enough memory script: {sha}, on @user_script:1."},
		// the budget is the call's: one such map passes, two do not
		{`return cmsgpack.unpack(` + m + `)[60000]`, ":1"},
		{`return #cmsgpack.unpack('\146' .. ` + m + ` .. ` + m + `)`, "-ERR user_script:1: not enough memory script: {sha}, on @user_script:1."},
		{`local a, b = cmsgpack.unpack(` + m + ` .. ` + m + `) return #a + #b`, "-ERR user_script:1: not enough memory script: {sha}, on @user_script:1."},
		// it fails like the library's other errors, under pcall too
		{`local ok, err = pcall(cmsgpack.unpack, '\129\206\0\16\0\0\1') return {ok, err}`, "*2 (nil) $not enough memory"},
		// keys at the bound are in the hash part: no padding
		{`return #cmsgpack.unpack('\130\206\0\64\0\0\1\206\0\64\0\1\2')`, ":0"},
		// ordinary input is unchanged: dense arrays and maps, keys in any
		// order, nils, a key the budget still allows
		{`local t = {} for i = 1, 50000 do t[i] = i end
local u = cmsgpack.unpack(cmsgpack.pack(t)) return {#u, u[50000]}`, "*2 :50000 :50000"},
		{`local u = cmsgpack.unpack(cmsgpack.pack({[3] = 'c', [1] = 'a', [50000] = 'z', k = 'v'}))
return {u[1], u[3], u[50000], u.k}`, "*4 $a $c $z $v"},
		{`local u = cmsgpack.unpack(cmsgpack.pack({1, nil, 3, nil, 5})) return {u[1], u[3], u[5]}`, "*3 :1 :3 :5"},
	} {
		f.expect(strings.ReplaceAll(c.want, "{sha}", SHA1Hex([]byte(c.script))), "EVAL", c.script, "0")
	}
}

// A long cmsgpack.unpack stops when the memory bound (or SCRIPT KILL)
// stops the script, not at its end: 400,000 maps of three bytes each are
// about 300 MB of tables.
func TestCmsgpack_UnpackStopsOnMemoryBound(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	body := `local s = '\221\0\6\26\128' .. string.rep('\129\1\1', 400000)
local t = cmsgpack.unpack(s) return #t`
	var start time.Time
	n := allocatedBy(func() {
		start = time.Now()
		f.expect(memoryReply(body, "2"), "EVAL", body, "0")
	})
	t.Logf("allocated %d MB in %v", n>>20, time.Since(start))
	if n > 4*testMemLimit {
		t.Errorf("the script allocated %d MB in %v (lua-memory-limit %d MB)", n>>20, time.Since(start), testMemLimit>>20)
	}
	f.expect(":7", "EVAL", "return 7", "0")
}

// A library whose load stores a key far past the end of an empty table
// loads at once (gopher-lua's bound made `t[67108863] = 1` run 7.7 s,
// past FUNCTION LOAD's 500 ms timeout).
func TestFunction_LoadSparseKey(t *testing.T) {
	f := newFixture(t)
	body := lib("sparse", "local t = {} t["+boundKey+"] = 1\nredis.register_function('sparse', function() return #t end)")
	var took time.Duration
	n := allocatedBy(func() {
		start := time.Now()
		f.expect("$sparse", "FUNCTION", "LOAD", body)
		took = time.Since(start)
	})
	if n > cheap || took > engine.FunctionLoadTimeout {
		t.Errorf("the load allocated %d bytes in %v", n, took)
	}
	f.expect(":0", "FCALL", "sparse", "0")
}
