package luavm

import (
	"math"
	"reflect"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
)

// Lua 5.1's table.remove, table.sort, select, assert and the checks of
// math's two-argument functions, where gopher-lua's differ in what a
// script sees: results, the order of sorted elements, or errors.

// tableRemove is ltablib.c's tremove: a position outside 1..#t removes
// and returns nothing (gopher-lua returned nil), and nil is the default
// position.
func (vm *VM) tableRemove(L *lua.LState) int {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		cTypeError(L, 1, "table", L.Get(1), L.GetTop() >= 1)
	}
	e := tableLen(t)
	pos := int(int32(cOptInteger(L, 2, int64(e)))) // luaL_optint: a C int
	if pos < 1 || pos > e {
		return 0
	}
	if vm.ro[t] {
		return vm.callError(L, true, errorTable(L, engine.ErrScriptReadonly))
	}
	L.Push(rawGetInt(t, pos))
	for ; pos < e; pos++ {
		t.RawSetInt(pos, rawGetInt(t, pos+1))
	}
	t.RawSetInt(e, lua.LNil)
	return 1
}

// tableSort is ltablib.c's sort: Lua 5.1's quicksort, so that elements
// that compare equal, or an order function that is not one, leave the
// same order Redis leaves (gopher-lua used Go's sort); nil for the
// function is the default order, and an order that is no order fails
// with "invalid order function for sorting".
func (vm *VM) tableSort(L *lua.LState) int {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		cTypeError(L, 1, "table", L.Get(1), L.GetTop() >= 1)
	}
	n := tableLen(t)
	var fn lua.LValue
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		if fn = L.Get(2); fn.Type() != lua.LTFunction {
			cTypeError(L, 2, "function", fn, true)
		}
	}
	if vm.ro[t] && n > 1 {
		return vm.callError(L, true, errorTable(L, engine.ErrScriptReadonly))
	}
	s := luaSorter{vm: vm, L: L, t: t, fn: fn}
	s.auxsort(1, n)
	return 0
}

type luaSorter struct {
	n  int // comparisons made
	vm *VM
	L  *lua.LState
	t  *lua.LTable
	fn lua.LValue // nil: the default order
}

// less is sort_comp: the order function's verdict, or a < b.
func (s *luaSorter) less(a, b lua.LValue) bool {
	L := s.L
	if s.fn == nil {
		// the default order runs no Lua instruction: SCRIPT KILL and the
		// memory bound stop a long sort here
		if s.n++; s.n%(1<<16) == 0 {
			if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
				L.RaiseError("%s", ctx.Err().Error())
			}
		}
		return s.vm.lessThan(L, a, b)
	}
	return call2(L, s.fn, a, b)
}

// call2 is fn(a, b), its first result as a boolean.
func call2(L *lua.LState, fn, a, b lua.LValue) bool {
	L.Push(fn)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	r := lua.LVAsBool(L.Get(-1))
	L.Pop(1)
	return r
}

func (s *luaSorter) get(i int) lua.LValue    { return rawGetInt(s.t, i) }
func (s *luaSorter) set(i int, v lua.LValue) { s.t.RawSetInt(i, v) }

// auxsort is ltablib.c's, step for step (its stack juggling as values).
func (s *luaSorter) auxsort(l, u int) {
	for l < u {
		// sort a[l], a[(l+u)/2] and a[u]
		al, au := s.get(l), s.get(u)
		if s.less(au, al) {
			s.set(l, au)
			s.set(u, al)
		}
		if u-l == 1 {
			break
		}
		i := (l + u) / 2
		ai, al := s.get(i), s.get(l)
		if s.less(ai, al) {
			s.set(i, al)
			s.set(l, ai)
		} else {
			au := s.get(u)
			if s.less(au, ai) {
				s.set(i, au)
				s.set(u, ai)
			}
		}
		if u-l == 2 {
			break
		}
		p := s.get(i) // the pivot
		s.set(i, s.get(u-1))
		s.set(u-1, p)
		// a[l] <= P == a[u-1] <= a[u]: only l+1 to u-2 are left
		i, j := l, u-1
		for {
			i++
			ai := s.get(i)
			for s.less(ai, p) {
				if i > u {
					cError(s.L, "%s", "invalid order function for sorting")
				}
				i++
				ai = s.get(i)
			}
			j--
			aj := s.get(j)
			for s.less(p, aj) {
				if j < l {
					cError(s.L, "%s", "invalid order function for sorting")
				}
				j--
				aj = s.get(j)
			}
			if j < i {
				break
			}
			s.set(i, aj)
			s.set(j, ai)
		}
		x, y := s.get(u-1), s.get(i)
		s.set(u-1, y)
		s.set(i, x)
		// a[l..i-1] <= a[i] == P <= a[i+1..u]: sort the smaller part
		// by recursion, the larger one by the loop
		if i-l < u-i {
			j, i, l = l, i-1, i+1
		} else {
			j, i, u = i+1, u, i-1
		}
		s.auxsort(j, i)
	}
}

// lessThan is lua_lessthan as a C function calls it: numbers and strings
// in their order, another pair of one type through __lt, and anything
// else an error with no position (the running function is C's; the
// script's error reply names its caller's line, as Redis's handler does).
func (vm *VM) lessThan(L *lua.LState, a, b lua.LValue) bool {
	switch x := a.(type) {
	case lua.LNumber:
		if y, ok := b.(lua.LNumber); ok {
			return x < y
		}
	case lua.LString:
		if y, ok := b.(lua.LString); ok {
			return strcoll(string(x), string(y)) < 0
		}
	}
	if a.Type() == b.Type() {
		mt1, mt2 := L.GetMetaField(a, "__lt"), L.GetMetaField(b, "__lt")
		if mt1 != lua.LNil && mt1 == mt2 { // luaO_rawequalObj
			return call2(L, mt1, a, b)
		}
		vm.raise(L, lua.LString("attempt to compare two "+a.Type().String()+" values"))
	}
	vm.raise(L, lua.LString("attempt to compare "+a.Type().String()+" with "+b.Type().String()))
	return false
}

// strcoll compares as Lua 5.1's l_strcmp in the C locale (Redis sets
// LC_COLLATE from the environment, "C" under its service): by bytes, a
// NUL byte ending each piece compared.
func strcoll(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// luaSelect is lbaselib.c's luaB_select: "#" (or any string starting
// with it) counts, anything else is a C int, negative from the end.
func luaSelect(L *lua.LState) int {
	n := L.GetTop()
	if s, ok := L.Get(1).(lua.LString); ok && len(s) > 0 && s[0] == '#' {
		L.Push(lua.LNumber(n - 1))
		return 1
	}
	i := int(int32(cCheckInteger(L, 1)))
	if i < 0 {
		i = n + i
	} else if i > n {
		i = n
	}
	if i < 1 {
		cArgError(L, 1, "index out of range")
	}
	return n - i
}

// luaAssert is lbaselib.c's luaB_assert: the message may be a number, and
// it is raised with the caller's position (none under pcall).
func luaAssert(L *lua.LState) int {
	if L.GetTop() < 1 {
		cArgError(L, 1, "value expected")
	}
	if !lua.LVAsBool(L.Get(1)) {
		msg := "assertion failed!"
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			msg = cCheckString(L, 2)
		}
		cError(L, "%s", msg)
	}
	return L.GetTop()
}

// mathBinary is one of lmathlib.c's functions of two numbers, which read
// them in one C call expression: GCC evaluates its arguments last first,
// so the second is checked before the first ("math.pow()" is about
// argument #2).
func mathBinary(f func(x, y float64) float64, intY bool) lua.LGFunction {
	return func(L *lua.LState) int {
		var y float64
		if intY {
			y = float64(int32(cCheckInteger(L, 2))) // luaL_checkint
		} else {
			y = cCheckNumber(L, 2)
		}
		x := cCheckNumber(L, 1)
		L.Push(lua.LNumber(f(x, y)))
		return 1
	}
}

// mathMinMax is math.min or math.max: at least one number.
func mathMinMax(orig *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() == 0 {
			cCheckNumber(L, 1)
		}
		return orig.GFunction(L)
	}
}

// strByte is lstrlib.c's str_byte: the last position defaults to the
// first, so string.byte(s) is one byte (gopher-lua gave every byte).
func strByte(L *lua.LState) int { // (posrelat: pattern.go)
	s := cCheckString(L, 1)
	posi := posrelat(cOptInteger(L, 2, 1), len(s))
	pose := posrelat(cOptInteger(L, 3, posi), len(s))
	posi = max(posi, 1)
	pose = min(pose, int64(len(s)))
	if posi > pose {
		return 0
	}
	if pose-posi+1+int64(L.GetTop()) > maxCStack { // luaL_checkstack
		cError(L, "%s", "stack overflow (string slice too long)")
	}
	for i := posi; i <= pose; i++ {
		L.Push(lua.LNumber(s[i-1]))
	}
	return int(pose - posi + 1)
}

// maxCStack is LUAI_MAXCSTACK: the most values a C function may push.
const maxCStack = 8000

// strChar is lstrlib.c's str_char: each code must be a byte.
func strChar(L *lua.LState) int {
	n := L.GetTop()
	b := make([]byte, n)
	for i := 1; i <= n; i++ {
		c := int32(cCheckInteger(L, i)) // luaL_checkint
		if c < 0 || c > 255 {
			cArgError(L, i, "invalid value")
		}
		b[i-1] = byte(c)
	}
	L.Push(lua.LString(b))
	return 1
}

// strRep is lstrlib.c's str_rep, its arguments checked in order and the
// count a C int; a result past the size limit is refused before it is
// built (one Go call the memory watchdog cannot interrupt).
func (vm *VM) strRep(L *lua.LState) int {
	s := cCheckString(L, 1)
	n := int(int32(cCheckInteger(L, 2)))
	if n > 0 && len(s) > 0 && n > vm.sizeLimit()/len(s) {
		L.RaiseError("not enough memory")
	}
	if n <= 0 {
		L.Push(lua.LString(""))
		return 1
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// loadString is lbaselib.c's luaB_loadstring: the chunk's name is the
// string itself unless given.
func (vm *VM) loadString(L *lua.LState) int {
	src := cCheckString(L, 1)
	name := src
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		name = cCheckString(L, 2)
	}
	return vm.loadAux(L, []byte(src), name)
}

// luaLoad is luaB_load: the chunk is read from a function's results, as
// the parser needs more, until nil or an empty string ("=(load)" its name
// unless given). An error of the reader, or a result that is no string,
// is load's result, not raised: lua_load reads under a protected call,
// whose value is what the innermost protected call's handler makes of
// the error (catchValue).
func (vm *VM) luaLoad(L *lua.LState) int {
	name := "=(load)"
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		name = cCheckString(L, 2)
	}
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		cTypeError(L, 1, "function", L.Get(1), L.GetTop() >= 1)
	}
	ctx := L.Context()
	type readFailed struct{ v lua.LValue }
	read := func() []byte {
		// a Go reader (collectgarbage) runs no Lua instruction: SCRIPT
		// KILL and the memory bound stop it here
		if ctx != nil && ctx.Err() != nil {
			L.RaiseError("%s", ctx.Err().Error())
		}
		L.Push(fn)
		if err := vm.protectedCall(L, 0, 1, vm.handler); err != nil {
			if ctx != nil && ctx.Err() != nil {
				L.RaiseError("%s", ctx.Err().Error())
			}
			panic(readFailed{errorValue(err)})
		}
		piece := L.Get(-1)
		L.Pop(1)
		switch v := piece.(type) {
		case lua.LString:
			return []byte(v)
		case lua.LNumber:
			return []byte(number14g(float64(v)))
		case *lua.LNilType:
			return nil
		}
		pos := L.Where(1) // luaL_error: the position of load's caller
		if pos != "" && !strings.HasPrefix(pos, "[G]") {
			pos += " "
		} else {
			pos = ""
		}
		panic(readFailed{lua.LString(pos + "reader function must return a string")})
	}
	var parsed []ast.Stmt
	var err error
	failed := func() (v lua.LValue, ok bool) {
		defer func() {
			if r := recover(); r != nil {
				rf, isRead := r.(readFailed)
				if !isRead {
					panic(r)
				}
				v, ok = rf.v, true
			}
		}()
		parsed, err = luaparse.ParseReader(read, chunkID(name, 80))
		return nil, false
	}
	if v, ok := failed(); ok {
		L.Push(lua.LNil)
		L.Push(vm.catchValue(L, v))
		return 2
	}
	return vm.loadParsed(L, parsed, err, name)
}

// loadAux compiles a loaded chunk: the function, or nil and the error.
func (vm *VM) loadAux(L *lua.LState, src []byte, name string) int {
	parsed, err := luaparse.Parse(src, chunkID(name, 80))
	return vm.loadParsed(L, parsed, err, name)
}

func (vm *VM) loadParsed(L *lua.LState, parsed []ast.Stmt, err error, name string) int {
	var proto *lua.FunctionProto
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		proto, msg = vm.compileParsed(parsed, chunkID(name, 60))
	}
	if msg != "" {
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		return 2
	}
	if vm.chunkSources == nil {
		vm.chunkSources = make(map[string]string)
	}
	// (not under the name of a script's or a function's own chunk,
	// which errors name as before)
	if n := proto.SourceName; len(vm.chunkSources) < maxChunkSources && n != chunkScript && n != chunkFunction {
		vm.chunkSources[n] = cString(name)
	}
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.runEnv
	L.Push(fn)
	return 1
}

// maxChunkSources bounds the chunk sources a run keeps for its errors: a
// script loading chunks in a loop has the rest named as its own.
const maxChunkSources = 64

// chunkID is lobject.c's luaO_chunkid: how messages name a chunk, in at
// most n-1 bytes: "=name" as name, "@file" as file (its end, after
// "...", if long), and source text as [string "its first line..."].
func chunkID(source string, n int) string {
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i] // a C string
	}
	switch {
	case strings.HasPrefix(source, "="):
		s := source[1:]
		if len(s) > n-1 {
			s = s[:n-1]
		}
		return s
	case strings.HasPrefix(source, "@"):
		s := source[1:]
		n -= len(" '...' ") + 1
		if len(s) > n {
			return "..." + s[len(s)-n:]
		}
		return s
	}
	l := strings.IndexAny(source, "\n\r")
	if l < 0 {
		l = len(source)
	}
	n -= len(" [string \"...\"] ") + 1
	l = min(l, n)
	if l < len(source) {
		return "[string \"" + source[:l] + "...\"]"
	}
	return "[string \"" + source + "\"]"
}

// strDump is string.dump: Lua 5.1's binary chunks cannot be made from
// gopher-lua's functions, and Redis refuses to load them (its loadstring
// reads "\27Lua..." as text, and fails); it gives the header of one, so
// that loading it fails as in Redis.
func strDump(L *lua.LState) int {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		cTypeError(L, 1, "function", L.Get(1), L.GetTop() >= 1)
	}
	if fn.IsG {
		cError(L, "%s", "unable to dump given function")
	}
	L.Push(lua.LString("\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"))
	return 1
}

// checkNextKey fails next(t, k) for a key t does not have, as Lua 5.1's
// findindex does ("invalid key to 'next'", no position: the running
// function is C's). gopher-lua's went on from its second key. A key
// whose value was set to nil during a traversal is still had, in both.
func (vm *VM) checkNextKey(L *lua.LState) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok || L.GetTop() < 2 {
		return
	}
	key := L.Get(2)
	if key == lua.LNil || tableHasKey(t, key) {
		return
	}
	vm.raise(L, lua.LString("invalid key to 'next'"))
}

// tableHasKey reports whether key is in t's array part or among the keys
// of its hash part (gopher-lua's LTable.array and k2i, read with
// reflect; true if they cannot be read).
func tableHasKey(t *lua.LTable, key lua.LValue) bool {
	v := reflect.ValueOf(t).Elem()
	if n, ok := key.(lua.LNumber); ok && n >= 1 && float64(n) == math.Trunc(float64(n)) {
		if arr := v.FieldByName("array"); arr.IsValid() && arr.Kind() == reflect.Slice && float64(n) <= float64(arr.Len()) {
			return true
		}
	}
	k2i := v.FieldByName("k2i")
	if !k2i.IsValid() || k2i.Kind() != reflect.Map {
		return true
	}
	if k2i.IsNil() {
		return false
	}
	return k2i.MapIndex(reflect.ValueOf(&key).Elem()).IsValid()
}

// openLib51 installs this file's functions.
func (vm *VM) openLib51(L *lua.LState, G, strLib, tabLib, mathLib *lua.LTable) {
	G.RawSetString("select", L.NewFunction(luaSelect))
	if strLib != nil {
		strLib.RawSetString("byte", L.NewFunction(strByte))
		strLib.RawSetString("char", L.NewFunction(strChar))
		strLib.RawSetString("rep", L.NewFunction(vm.strRep))
		strLib.RawSetString("dump", L.NewFunction(strDump))
	}
	G.RawSetString("assert", L.NewFunction(luaAssert))
	if tabLib != nil {
		tabLib.RawSetString("remove", L.NewFunction(vm.tableRemove))
		tabLib.RawSetString("sort", L.NewFunction(vm.tableSort))
	}
	if mathLib != nil {
		mathLib.RawSetString("pow", L.NewFunction(mathBinary(math.Pow, false)))
		mathLib.RawSetString("fmod", L.NewFunction(mathBinary(math.Mod, false)))
		mathLib.RawSetString("atan2", L.NewFunction(mathBinary(math.Atan2, false)))
		mathLib.RawSetString("ldexp", L.NewFunction(mathBinary(func(x, y float64) float64 { return math.Ldexp(x, int(y)) }, true)))
		for _, name := range []string{"min", "max"} {
			if orig, ok := mathLib.RawGetString(name).(*lua.LFunction); ok {
				mathLib.RawSetString(name, L.NewFunction(mathMinMax(orig)))
			}
		}
	}
}
