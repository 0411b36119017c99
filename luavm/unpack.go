package luavm

import lua "github.com/yuin/gopher-lua"

// baseUnpack is Lua 5.1's luaB_unpack. gopher-lua's converts its bounds
// to Go ints (7e22 became the most negative one) and pushed every element
// of the range, so unpack({}, 7e22) ran until the memory bound stopped it
// (the fuzzer found it). Lua 5.1 reads the bounds as C ints
// (luaL_optint: the double cast to a long, then to an int) and refuses a
// range its stack cannot take: "too many results to unpack".
func baseUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := int32(cOptInteger(L, 2, 1))
	e := int32(tableLen(t))
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		e = int32(cCheckInteger(L, 3))
	}
	if i > e {
		return 0 // empty range
	}
	n := e - i + 1 // n <= 0: the subtraction overflowed
	if n <= 0 || n > luaMaxCStack || L.GetTop()+int(n) > luaMaxCStack {
		cError(L, "%s", "too many results to unpack")
	}
	for k := int64(i); k <= int64(e); k++ {
		L.Push(rawGetInt(t, int(k))) // t[0] too, and past the array part's bound
	}
	return int(n)
}
