package luavm

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The array part's bound.
//
// gopher-lua keeps a table's integer keys 1..lua.MaxArrayIndex-1 in its
// array part, a Go slice, and a store to key k pads the slice with nil up
// to k in one Go loop (LTable.RawSet, RawSetInt): `local t = {}
// t[k] = 1` allocates 16 bytes for every index below k in one VM
// instruction, which neither the memory watchdog nor SCRIPT KILL can
// interrupt (memory.go: both are seen between instructions). At
// gopher-lua's default bound, 2^26, one such statement took about 4.5 GB
// of RSS and 7.7 s. Lua 5.1 puts a key that sparse in the hash part.
//
// So the bound is lowered, once, before any Lua state exists. Measured
// for `t[bound-1] = 1` (one statement in a fresh process, Go 1.26,
// default GOGC, a loaded two-core host; the time varies with the
// collector and the load, and is about a third of it with the collector
// off):
//
//	bound  the array  allocated  heap in use after  peak RSS  time
//	2^20     16 MB       83 MB         42 MB           57 MB  0.14-0.25 s
//	2^21     32 MB      164 MB         98 MB          110 MB  0.40-0.51 s
//	2^22     64 MB      322 MB        158 MB          204 MB  0.48-0.71 s
//	2^23    128 MB      788 MB        386 MB          540 MB  1.2-2.3 s
//
// (In a test process running EVAL, 2^22: 322 MB allocated, RSS up by
// 163 MB, 0.59-0.73 s.) 2^22 is the largest bound whose one statement
// stays below the default lua-memory-limit (256 MB), RSS included, and
// ends near FUNCTION LOAD's 500 ms timeout (a load of twenty such
// statements ended after 520 ms); 2^23 would more than double the limit
// in one step, and take seconds.
//
// The price: keys from 2^22 up live in the hash part, and gopher-lua's
// length operator (#t), ipairs, table.getn and table.maxn see only the
// array part, so for a dense array longer than 4,194,303 elements they
// stop there, where Lua 5.1 goes on. A table that long takes 64 MB for
// its array part alone, a quarter of the default limit. This package's
// own table functions (table.insert, table.remove, table.sort,
// table.concat, table.foreachi, unpack) and the conversions (a script's
// reply, cmsgpack.pack, cjson.encode) read past the bound, as Lua 5.1
// does (rawGetInt, tableLen below).
//
// lua.MaxArrayIndex is a package variable gopher-lua reads without
// synchronisation: it is set here, at package initialisation, before any
// state can run, and never changed again. It is gopher-lua's, so it holds
// for the whole process: a program that imports this package (the server,
// and so a test using server.RunT) and runs gopher-lua states of its own
// gets the same bound in them.
const arrayBound = 1 << 22

func init() { lua.MaxArrayIndex = arrayBound }

// padSlotBytes is what one slot of padding costs at its peak: 16 bytes
// for the interface value, but the array part grows by appending, a
// quarter at a time, so the last growth's new array lies beside the old
// one, with the garbage of the growths before (t[4194303] = 1 above:
// 158 MB of heap, 163 MB of RSS, about 38 bytes a slot).
const padSlotBytes = 40

// isArrayKey reports whether gopher-lua keeps number key k in a table's
// array part (its isArrayKey).
func isArrayKey(k lua.LNumber) bool {
	f := float64(k)
	return f > 0 && f < float64(lua.MaxArrayIndex) && f == math.Trunc(f)
}

// rawGetInt is t[k], raw, for any int k: gopher-lua's RawGetInt reads the
// array part only, and so misses a key at or past the bound (and a key
// below 1), which lives in the hash part.
func rawGetInt(t *lua.LTable, k int) lua.LValue {
	if k >= 1 && k < lua.MaxArrayIndex {
		return t.RawGetInt(k)
	}
	return t.RawGet(lua.LNumber(k))
}

// tableLen is Lua 5.1's luaH_getn as this package's table functions use
// it: gopher-lua's length (the last non-nil element of the array part),
// and, when that is the array part's last possible element, a border
// found in the hash part, as Lua 5.1's unbound_search finds it. For any
// table whose array part is not filled to the bound it is t.Len().
func tableLen(t *lua.LTable) int {
	n := t.Len()
	if n < lua.MaxArrayIndex-1 || t.RawGet(lua.LNumber(n+1)) == lua.LNil {
		return n
	}
	// unbound_search: i present, j absent, then a binary search
	i, j := n+1, 2*(n+1)
	for t.RawGet(lua.LNumber(j)) != lua.LNil {
		i = j
		if j > math.MaxInt32/2 {
			// built to defeat the doubling: a linear search, as Lua's
			for i = n + 1; t.RawGet(lua.LNumber(i+1)) != lua.LNil; i++ {
			}
			return i
		}
		j *= 2
	}
	for j-i > 1 {
		m := (i + j) / 2
		if t.RawGet(lua.LNumber(m)) == lua.LNil {
			j = m
		} else {
			i = m
		}
	}
	return i
}
