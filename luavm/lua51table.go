package luavm

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's table iteration order.
//
// lua_next visits a Lua 5.1 table's array part (keys 1..n) and then its
// hash nodes in node order, and a key's node follows from its hash, the
// table's size and the collisions met on the way there. cmsgpack.pack
// writes a map's pairs in that order, so to write Redis's bytes the order
// is rebuilt here: the keys are inserted one by one, in gopher-lua's order
// (array part first, then the others as they were first set), into a model
// of ltable.c (main positions, the free pointer, collision moves, rehash
// and the array part's sizing), and the model's order is read back.
//
// That is Redis's order for a table built by assignments (or decoded by
// cmsgpack.unpack) in that same order, and for a table constructor as long
// as its keys do not collide differently at their presized size; keys
// that hash by address (tables, functions) have no reproducible order in
// Redis either.

const lua51MaxBits = 26 // MAXBITS: the array part holds at most 2^26

type lua51Node struct {
	key  lua.LValue // nil: free
	next int        // -1: end of chain
}

type lua51Table struct {
	array    []bool // keys 1..len(array): present
	node     []lua51Node
	dummy    bool // the shared empty node (no hash part)
	lastfree int
}

// luaStringHash is the string hash of Redis's Lua 5.1: seeded with the
// length, and (unlike stock 5.1, which skips bytes of long strings) over
// every byte.
func luaStringHash(s string) uint32 {
	h := uint32(len(s))
	for l1 := len(s); l1 >= 1; l1-- {
		h ^= (h << 5) + (h >> 2) + uint32(s[l1-1])
	}
	return h
}

// arrayIndex is the int k a number key equals, or -1.
func lua51ArrayIndex(k lua.LValue) int {
	n, ok := k.(lua.LNumber)
	if !ok {
		return -1
	}
	f := float64(n)
	if f >= math.MinInt32 && f <= math.MaxInt32 && f == math.Trunc(f) {
		return int(f)
	}
	return -1
}

func newLua51Table() *lua51Table {
	t := &lua51Table{}
	t.setNodes(0)
	return t
}

func ceilLog2(x int) int {
	l := 0
	for (1 << l) < x {
		l++
	}
	return l
}

func (t *lua51Table) setNodes(size int) {
	if size == 0 {
		t.node = []lua51Node{{next: -1}}
		t.dummy = true
		t.lastfree = 0
		return
	}
	size = 1 << ceilLog2(size)
	t.node = make([]lua51Node, size)
	for i := range t.node {
		t.node[i].next = -1
	}
	t.dummy = false
	t.lastfree = size
}

func (t *lua51Table) mainPosition(k lua.LValue) int {
	size := uint32(len(t.node))
	mod := func(h uint32) int { return int(h % ((size - 1) | 1)) }
	switch k := k.(type) {
	case lua.LNumber:
		if k == 0 {
			return 0
		}
		b := math.Float64bits(float64(k))
		return mod(uint32(b) + uint32(b>>32))
	case lua.LString:
		return int(luaStringHash(string(k)) & (size - 1))
	case lua.LBool:
		if k {
			return int(1 & (size - 1))
		}
		return 0
	}
	return 0 // hashed by address in Lua: any order will do
}

func (t *lua51Table) freePos() int {
	for t.lastfree > 0 {
		t.lastfree--
		if t.node[t.lastfree].key == nil {
			return t.lastfree
		}
	}
	return -1
}

// set inserts a new key, as luaH_set does for a key not yet present.
func (t *lua51Table) set(k lua.LValue) {
	if i := lua51ArrayIndex(k); i >= 1 && i <= len(t.array) {
		t.array[i-1] = true
		return
	}
	mp := t.mainPosition(k)
	if t.node[mp].key != nil || t.dummy {
		n := t.freePos()
		if n < 0 {
			t.rehash(k)
			t.set(k)
			return
		}
		othern := t.mainPosition(t.node[mp].key)
		if othern != mp {
			for t.node[othern].next != mp {
				othern = t.node[othern].next
			}
			t.node[othern].next = n
			t.node[n] = t.node[mp]
			t.node[mp] = lua51Node{next: -1}
		} else {
			t.node[n].next = t.node[mp].next
			t.node[mp].next = n
			mp = n
		}
	}
	t.node[mp].key = k
}

func countInt(k lua.LValue, nums *[lua51MaxBits + 1]int) int {
	if i := lua51ArrayIndex(k); i > 0 && i <= 1<<lua51MaxBits {
		nums[ceilLog2(i)]++
		return 1
	}
	return 0
}

func (t *lua51Table) rehash(ek lua.LValue) {
	var nums [lua51MaxBits + 1]int
	// numusearray
	nasize := 0
	i := 1
	for lg, ttlg := 0, 1; lg <= lua51MaxBits; lg, ttlg = lg+1, ttlg*2 {
		lim := ttlg
		if lim > len(t.array) {
			lim = len(t.array)
			if i > lim {
				break
			}
		}
		lc := 0
		for ; i <= lim; i++ {
			if t.array[i-1] {
				lc++
			}
		}
		nums[lg] += lc
		nasize += lc
	}
	total := nasize
	// numusehash
	if !t.dummy {
		for j := len(t.node) - 1; j >= 0; j-- {
			if k := t.node[j].key; k != nil {
				nasize += countInt(k, &nums)
				total++
			}
		}
	}
	nasize += countInt(ek, &nums)
	total++
	// computesizes
	a, na, n := 0, 0, 0
	for i, twotoi := 0, 1; twotoi/2 < nasize; i, twotoi = i+1, twotoi*2 {
		if nums[i] > 0 {
			a += nums[i]
			if a > twotoi/2 {
				n, na = twotoi, a
			}
		}
		if a == nasize {
			break
		}
	}
	t.resize(n, total-na)
}

func (t *lua51Table) resize(nasize, nhsize int) {
	oldArray := t.array
	oldNode, oldDummy := t.node, t.dummy
	if nasize > len(oldArray) {
		t.array = append(append([]bool(nil), oldArray...), make([]bool, nasize-len(oldArray))...)
	}
	t.setNodes(nhsize)
	if nasize < len(oldArray) {
		t.array = oldArray[:nasize:nasize]
		for i := nasize; i < len(oldArray); i++ {
			if oldArray[i] {
				t.set(lua.LNumber(i + 1))
			}
		}
	}
	if !oldDummy {
		for i := len(oldNode) - 1; i >= 0; i-- {
			if k := oldNode[i].key; k != nil {
				t.set(k)
			}
		}
	}
}

// keys is the table's keys in lua_next's order.
func (t *lua51Table) keys() []lua.LValue {
	var ks []lua.LValue
	for i, ok := range t.array {
		if ok {
			ks = append(ks, lua.LNumber(i+1))
		}
	}
	if !t.dummy {
		for _, n := range t.node {
			if n.key != nil {
				ks = append(ks, n.key)
			}
		}
	}
	return ks
}

// lua51Pairs calls fn for each of t's pairs in the order Lua 5.1's
// lua_next would give them (see above).
func lua51Pairs(t *lua.LTable, fn func(k, v lua.LValue)) {
	m := newLua51Table()
	luaNext(t, func(k, _ lua.LValue) bool {
		m.set(k)
		return true
	})
	for _, k := range m.keys() {
		fn(k, t.RawGet(k))
	}
}
