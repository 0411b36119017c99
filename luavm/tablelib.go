package luavm

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// Lua 5.1's table.insert, table.concat and tostring, where gopher-lua's
// differ in what scripts see.

// tableInsert is Lua 5.1's table.insert (ltablib.c tinsert): exactly two
// or three arguments, and a position past the end grows the table to it
// (gopher-lua's took any number, and shifted nothing for such positions).
// A read-only table is refused, as Redis's lua_rawseti refuses it: a
// write into a read-only proxy would hide the library's own entry from
// every later script.
func (vm *VM) tableInsert(L *lua.LState) int {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		cTypeError(L, 1, "table", L.Get(1), L.GetTop() >= 1)
	}
	e := tableLen(t) + 1 // the first empty element
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = int(int32(cCheckInteger(L, 2))) // luaL_checkint: a C int
		e = max(e, pos)
	default:
		cError(L, "%s", "wrong number of arguments to 'insert'")
	}
	if vm.ro[t] {
		return vm.callError(L, true, errorTable(L, engine.ErrScriptReadonly))
	}
	ctx := L.Context()
	for i := e; i > pos; i-- { // move the elements up
		t.RawSetInt(i, t.RawGet(lua.LNumber(i-1)))
		if (e-i)%(1<<16) == 0 && ctx != nil && ctx.Err() != nil {
			L.RaiseError("%s", ctx.Err().Error())
		}
	}
	t.RawSetInt(pos, L.Get(L.GetTop()))
	return 0
}

// tableConcat is Lua 5.1's table.concat (ltablib.c tconcat): numbers are
// written as Lua 5.1 writes them (%.14g; gopher-lua wrote Go's shortest
// digits, 0.1+0.2 as 0.30000000000000004), and a range past the table's
// elements is an error, not clamped to them. The result is one Go call the
// memory watchdog cannot see: past the size limit it is refused up front.
func (vm *VM) tableConcat(L *lua.LState) int {
	sep := ""
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		sep = cCheckString(L, 2)
	}
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		cTypeError(L, 1, "table", L.Get(1), L.GetTop() >= 1)
	}
	i := int32(cOptInteger(L, 3, 1))
	var last int32
	if L.GetTop() >= 4 && L.Get(4) != lua.LNil {
		last = int32(cCheckInteger(L, 4))
	} else {
		last = int32(tableLen(t))
	}
	// The length first, to refuse a result past the limit before building
	// any of it (up to the first value that is no string or number, where
	// the building stops with an error).
	total, limit := 0, vm.sizeLimit()
sizing:
	for k := int64(i); k <= int64(last) && total <= limit; k++ {
		switch v := t.RawGet(lua.LNumber(k)).(type) {
		case lua.LString:
			total += len(v)
		case lua.LNumber:
			total += 24 // at most, as %.14g
		default:
			break sizing
		}
		if k < int64(last) {
			total += len(sep)
		}
	}
	if total > limit {
		L.RaiseError("not enough memory")
	}
	b := make([]byte, 0, total)
	add := func(i int32) {
		switch v := t.RawGet(lua.LNumber(i)).(type) {
		case lua.LString:
			b = append(b, v...)
		case lua.LNumber:
			b = append(b, number14g(float64(v))...)
		default:
			cError(L, "invalid value (%s) at index %d in table for 'concat'", v.Type().String(), i)
		}
	}
	for ; i < last; i++ {
		add(i)
		b = append(b, sep...)
	}
	if i == last { // the last value, if the range was not empty
		add(i)
	}
	L.Push(lua.LString(b))
	return 1
}

// luaToString is Lua 5.1's tostring for numbers (%.14g, as lua_tostring
// writes them), gopher-lua's for everything else. The .. operator still
// writes numbers with gopher-lua's digits: it has no hook.
func luaToString(orig *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() == 0 {
			cArgError(L, 1, "value expected")
		}
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(number14g(float64(n))))
			return 1
		}
		return orig.GFunction(L)
	}
}
