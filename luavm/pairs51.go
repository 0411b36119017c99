package luavm

import (
	"reflect"
	"unsafe"
	"weak"

	lua "github.com/yuin/gopher-lua"
)

// next and pairs in Lua 5.1's order.
//
// gopher-lua's next visits a table's array part, then its other keys in
// the order they were first set. Lua 5.1's visits its array part, then
// its hash nodes in node order (lua51table.go). So next walks a model of
// the table's Lua 5.1 layout, kept for the tables a run traverses:
//
//   - made when a table is first traversed, from what gopher-lua keeps:
//     its array part's keys in ascending order, then the other keys in the
//     order they were first set, those deleted since included (Lua keeps
//     a deleted key's node until a rehash): the layout of a table built by
//     assignments, its deletions made after;
//   - brought up to date when a traversal starts (next(t, nil)) or when
//     next sees that the table grew: keys set since are inserted, and a
//     rehash drops the keys dead then, as Lua's does. Deleting keys, or
//     setting existing ones, changes nothing, as in Lua.
//
// A traversal costs the walk of the model (the array part, then the
// nodes), and starting one a look at gopher-lua's array part and the keys
// added since: O(n) for n keys. Scripts that never traverse a table pay
// nothing. The models are dropped at the end of the run; they are Go
// heap, which the memory bound (memory.go) watches as it watches the
// tables.

// pairsCache holds a run's models, by table. It holds the tables
// weakly (a table traversed once and dropped is collected, then its
// model at the next sweep): a model refers to its table (src) only while
// it is the one last asked for.
type pairsCache struct {
	m     map[weak.Pointer[lua.LTable]]*lua51Table
	sweep int // the size at which to drop the models of tables gone
	lastT *lua.LTable
	lastM *lua51Table
}

// gopher-lua's LTable fields the models read (read-only, with unsafe:
// they are not exported), found once by reflect; tableFieldsOK is false
// if they are not there, and next then is gopher-lua's.
var (
	tableArrayOff, tableKeysOff uintptr
	tableFieldsOK               = func() bool {
		tt := reflect.TypeOf(lua.LTable{})
		want := reflect.TypeOf([]lua.LValue(nil))
		a, okA := tt.FieldByName("array")
		k, okK := tt.FieldByName("keys")
		if !okA || !okK || a.Type != want || k.Type != want {
			return false
		}
		tableArrayOff, tableKeysOff = a.Offset, k.Offset
		return true
	}()
)

// tableArray is t's array part (gopher-lua's: keys 1..len, nil for none).
func tableArray(t *lua.LTable) []lua.LValue {
	return *(*[]lua.LValue)(unsafe.Add(unsafe.Pointer(t), tableArrayOff))
}

// tableKeys is t's other keys in the order first set, deleted ones too.
func tableKeys(t *lua.LTable) []lua.LValue {
	return *(*[]lua.LValue)(unsafe.Add(unsafe.Pointer(t), tableKeysOff))
}

// model is t's model, made or brought up to date (sync) when start is
// true or t grew since.
func (c *pairsCache) model(t *lua.LTable, start bool, pre *presizes) *lua51Table {
	m := c.lastM
	if c.lastT != t {
		if c.lastM != nil {
			c.lastM.src = nil
		}
		if c.m == nil {
			c.m = make(map[weak.Pointer[lua.LTable]]*lua51Table)
			c.sweep = 1024
		}
		w := weak.Make(t)
		if m = c.m[w]; m == nil {
			if len(c.m) >= c.sweep {
				for k := range c.m {
					if k.Value() == nil {
						delete(c.m, k)
					}
				}
				c.sweep = max(1024, 2*len(c.m))
			}
			m = newLua51Table(t, pre)
			c.m[w] = m
			c.lastT, c.lastM = t, m
			m.sync()
			m.allLive = false
			return m
		}
		m.src = t
		c.lastT, c.lastM = t, m
	}
	if start || len(tableKeys(t)) != m.nkeys || len(tableArray(t)) != m.narray {
		m.sync()
	}
	return m
}

// reset drops the models.
func (c *pairsCache) reset() {
	if c.lastT != nil {
		*c = pairsCache{}
	}
}

// sync inserts into m the keys its table has that m has not: the array
// part's, then the keys dropped by a rehash and set again, then the keys
// first set since m last looked, in that order. A table constructor's
// come first, as it set them: its other fields', then its list's (at
// once, OP_SETLIST growing the array part to its length and placing the
// nodes again with luaH_resizearray).
func (m *lua51Table) sync() {
	arr, keys := tableArray(m.src), tableKeys(m.src)
	if c := m.ctor; c != nil {
		m.ctor = nil
		m.nkeys = min(int(c.keys), len(keys))
		m.syncKeys(keys[:m.nkeys])
		if int(c.list) > m.asize {
			nodes := len(m.node)
			if m.dummy {
				nodes = 0
			}
			m.resize(int(c.list), nodes)
		}
	}
	m.syncArray(arr)
	if d := m.dropped; len(d) > 0 {
		m.dropped = nil
		for _, k := range d {
			if m.has(k) {
				continue
			}
			if m.src.RawGet(k) != lua.LNil {
				m.set(k)
			} else {
				m.dropped = append(m.dropped, k)
			}
		}
	}
	m.syncKeys(keys[min(m.nkeys, len(keys)):])
	m.nkeys, m.narray = len(keys), len(arr)
}

// syncKeys inserts the keys of ks that m has not: the dead too while m
// counts every key live (see allLive), else they are noted dropped.
func (m *lua51Table) syncKeys(ks []lua.LValue) {
	for _, k := range ks {
		if !m.allLive && m.has(k) { // (a new model has none: gopher-lua's keys are distinct)
			continue
		}
		if m.allLive || m.src.RawGet(k) != lua.LNil {
			m.set(k)
		} else {
			m.dropped = append(m.dropped, k)
		}
	}
}

// syncArray inserts the keys of gopher-lua's array part arr that m has not.
func (m *lua51Table) syncArray(arr []lua.LValue) {
	for i := m.asize; i < len(arr); i++ { // (keys 1..asize have their place)
		if arr[i] != lua.LNil {
			if k := lua.LNumber(i + 1); m.allLive || m.find(k) < 0 {
				m.set(k)
			}
		}
	}
}

// next is Lua 5.1's next(t, k) over m: the key after k (nil: the first)
// in the model's order that has a value, and its value, or nil; ok is
// false if k is not a key of the table (nor a dead key Lua would still
// know).
func (m *lua51Table) next(k lua.LValue) (lua.LValue, lua.LValue, bool) {
	i := 0 // the position to look from: the array part's, then the nodes'
	if k != lua.LNil {
		if a := lua51ArrayIndex(k); a >= 1 && a <= m.asize {
			i = a
		} else if j := m.find(k); j >= 0 {
			i = m.asize + j + 1
		} else {
			return lua.LNil, lua.LNil, false
		}
	}
	for ; i < m.asize; i++ {
		if v := m.src.RawGetInt(i + 1); v != lua.LNil {
			return lua.LNumber(i + 1), v, true
		}
	}
	if !m.dummy {
		for j := i - m.asize; j < len(m.node); j++ {
			if key := m.node[j].key; key != nil {
				if v := m.src.RawGet(key); v != lua.LNil {
					return key, v, true
				}
			}
		}
	}
	return lua.LNil, lua.LNil, true
}

// luaNext51 is Lua 5.1's next, on the table at 1 (read-only proxies seen
// through) and the key at 2.
func (vm *VM) luaNext51(L *lua.LState) int {
	t := L.CheckTable(1)
	k := L.Get(2)
	m := vm.pairs.model(t, k == lua.LNil, &vm.presized)
	key, v, ok := m.next(k)
	if !ok {
		vm.raise(L, lua.LString("invalid key to 'next'"))
	}
	if key == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(key)
	L.Push(v)
	return 2
}
