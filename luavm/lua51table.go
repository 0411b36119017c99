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
	src      *lua.LTable // the table modelled: a key is live while it has a value there
	asize    int         // the array part: keys 1..asize
	node     []lua51Node
	dummy    bool // the shared empty node (no hash part)
	lastfree int
	// allLive counts every node's key as live in a rehash, as when the
	// keys are set one after the other (the dead ones were deleted after)
	allLive bool
	// dropped: keys a rehash dropped as dead (Lua frees their nodes), to
	// insert again if they get a value (pairs51.go)
	dropped []lua.LValue
	// addr numbers the keys Lua hashes by address, in the order met
	addr map[lua.LValue]uint32
	// ctor: what made the table, a constructor, until synced (pairs51.go)
	ctor *presize
	// the lengths of the table's array part and of its list of other keys
	// when the model last looked (pairs51.go)
	narray, nkeys int
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

func newLua51Table(src *lua.LTable, pre *presizes) *lua51Table {
	t := &lua51Table{src: src, allLive: true}
	s, ok := pre.get(src) // a constructor's sizes (presize.go), or none
	if ok {
		t.asize, t.ctor = int(s.na), &s
	}
	t.setNodes(int(s.nh))
	return t
}

// live reports whether node key k counts in a rehash.
func (t *lua51Table) live(k lua.LValue) bool {
	return t.allLive || t.src.RawGet(k) != lua.LNil
}

// find is the node holding k, or -1.
func (t *lua51Table) find(k lua.LValue) int {
	if t.dummy {
		return -1
	}
	for i := t.mainPosition(k); i >= 0; i = t.node[i].next {
		if t.node[i].key == k {
			return i
		}
	}
	return -1
}

// has reports whether k has a place in t: in the array part or a node.
func (t *lua51Table) has(k lua.LValue) bool {
	if i := lua51ArrayIndex(k); i >= 1 && i <= t.asize {
		return true
	}
	return t.find(k) >= 0
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
	case nil:
		return 0
	}
	// hashed by address in Lua, which no model can follow: numbered in
	// the order met, so that they spread as addresses do
	if t.addr == nil {
		t.addr = make(map[lua.LValue]uint32)
	}
	h, ok := t.addr[k]
	if !ok {
		h = uint32(len(t.addr))
		t.addr[k] = h
	}
	return mod(h)
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
	if i := lua51ArrayIndex(k); i >= 1 && i <= t.asize {
		return
	}
	mp := t.mainPosition(k)
	// a node whose key is dead is taken over (its key lost), as Lua tests
	// the main position's value; only a node with no key is free
	if old := t.node[mp].key; old != nil && !t.live(old) && !t.dummy {
		t.dropped = append(t.dropped, old)
		t.node[mp].key = nil
	}
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
		if lim > t.asize {
			lim = t.asize
			if i > lim {
				break
			}
		}
		lc := 0
		for ; i <= lim; i++ {
			if t.src.RawGetInt(i) != lua.LNil {
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
			if k := t.node[j].key; k != nil && t.live(k) {
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
	oldAsize := t.asize
	oldNode, oldDummy := t.node, t.dummy
	t.asize = nasize
	t.setNodes(nhsize)
	for i := nasize; i < oldAsize; i++ {
		if t.src.RawGetInt(i+1) != lua.LNil {
			t.set(lua.LNumber(i + 1))
		}
	}
	if !oldDummy {
		for i := len(oldNode) - 1; i >= 0; i-- {
			if k := oldNode[i].key; k != nil {
				if t.live(k) {
					t.set(k)
				} else {
					t.dropped = append(t.dropped, k)
				}
			}
		}
	}
}

// keys is the table's live keys in lua_next's order.
func (t *lua51Table) keys() []lua.LValue {
	var ks []lua.LValue
	for i := 1; i <= t.asize; i++ {
		if t.src.RawGetInt(i) != lua.LNil {
			ks = append(ks, lua.LNumber(i))
		}
	}
	if !t.dummy {
		for _, n := range t.node {
			if n.key != nil && t.src.RawGet(n.key) != lua.LNil {
				ks = append(ks, n.key)
			}
		}
	}
	return ks
}

// lua51Pairs calls fn for each of t's pairs in the order Lua 5.1's
// lua_next would give them (see above).
func lua51Pairs(t *lua.LTable, pre *presizes, fn func(k, v lua.LValue)) {
	m := newLua51Table(t, pre)
	if tableFieldsOK {
		m.sync() // as next makes its model (pairs51.go)
	} else {
		luaNext(t, func(k, _ lua.LValue) bool {
			m.set(k)
			return true
		})
	}
	m.allLive = false
	for _, k := range m.keys() {
		fn(k, t.RawGet(k))
	}
}
