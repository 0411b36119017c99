package luavm

import (
	"math"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// luaMaxCalls is the most call frames a script may have open: past it a
// call fails with "stack overflow", as in Lua 5.1. Redis's Lua overflows
// past LUAI_MAXCALLS, 20000 calls (16384 before its state's call array
// first grew to it). tumbler stops at 8000: when gopher-lua's call stack
// is full, the error's message handler cannot be called, and gopher-lua
// then writes a traceback of the whole stack, walking it once for every
// frame: a runaway recursion took a second at 20000, under the keyspace
// lock, against about 0.2 s at 8000 (0.01 s in Redis).
const luaMaxCalls = 8000

// gcParams are collectgarbage's "setpause" and "setstepmul" values.
type gcParams struct{ pause, stepMul int64 }

// gcDefaults are Lua 5.1's collector pause and step multiplier
// (LUAI_GCPAUSE, LUAI_GCMUL), which Redis leaves as they are.
var gcDefaults = gcParams{200, 200}

// collectGarbage is Lua 5.1's luaB_collectgarbage, arguments and results,
// without its effect: scripts live on the Go heap, which a script must not
// be able to collect, stop or tune. "setpause" and "setstepmul" return
// the value set before (kept for scripts, and reset by SCRIPT FLUSH, as
// the state Redis makes again then; and for functions, which Redis runs
// in a state of their own); "step" finishes no cycle (false); and
// the memory of scripts is not measured, so "count" is 0 (INFO has no
// used_memory_lua either), as is gcinfo().
func (vm *VM) collectGarbage(L *lua.LState) int {
	opt := "collect" // luaL_checkoption with a default
	if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
		opt = cCheckString(L, 1)
	}
	ex := int64(int32(cOptInteger(L, 2, 0))) // luaL_optint
	switch opt {
	case "stop", "restart", "collect", "count":
		L.Push(lua.LNumber(0))
	case "step":
		L.Push(lua.LFalse)
	case "setpause":
		p := vm.gcState()
		L.Push(lua.LNumber(p.pause))
		p.pause = ex
	case "setstepmul":
		p := vm.gcState()
		L.Push(lua.LNumber(p.stepMul))
		p.stepMul = ex
	default:
		cArgError(L, 1, "invalid option '"+cString(opt)+"'")
	}
	return 1
}

// gcState is the collectgarbage values of the Lua state Redis would run
// the code in: the functions' (a library loading, or FCALL) or the
// scripts'.
func (vm *VM) gcState() *gcParams {
	if vm.loading != nil || vm.runEnv != vm.env {
		return &vm.gcFn
	}
	return &vm.gcEval
}

// initState builds the one reused Lua state with Redis's sandbox.
func (vm *VM) initState() {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    luaMaxCalls,
		RegistrySize:     1024 * 4,
		RegistryMaxSize:  1024 * 1024,
		RegistryGrowStep: 256,
	})
	vm.L = L
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	G := L.G.Global
	vm.globals = G
	for _, name := range []string{"dofile", "loadfile", "require", "module", "print", "getfenv", "setfenv", "newproxy", "_printregs", "_GOPHER_LUA_VERSION"} {
		G.RawSetString(name, lua.LNil)
	}
	G.RawSetString("collectgarbage", L.NewFunction(vm.collectGarbage))
	G.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(0)) // lua_getgccount: not measured (collectGarbage)
		return 1
	}))
	// error() as Lua 5.1's luaB_error: a string or number message gets the
	// position of the function at level (none for a Go function). The line
	// Redis reports for an error escaping the script is the caller's (see
	// vm.raise).
	vm.errorFn = L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() == 0 {
			vm.raise(L, lua.LNil)
			return 0
		}
		v := L.Get(1)
		level := int(int32(cOptInteger(L, 2, 1))) // luaL_optint
		if level > 0 {
			// luaL_where and lua_concat: a number becomes a string, with
			// or without a position to put before it
			pos := L.Where(stackLevel(L, level))
			if pos != "" && !strings.HasPrefix(pos, "[G]") {
				pos += " "
			} else {
				pos = ""
			}
			switch m := v.(type) {
			case lua.LString:
				v = lua.LString(pos + string(m))
			case lua.LNumber:
				v = lua.LString(pos + number14g(float64(m)))
			}
		}
		vm.raise(L, v)
		return 0
	})
	G.RawSetString("error", vm.errorFn)
	G.RawSetString("tonumber", L.NewFunction(luaToNumber)) // Lua 5.1's (tonumber.go)
	G.RawSetString("tostring", L.NewFunction(luaToString(G.RawGetString("tostring").(*lua.LFunction))))
	// Protected calls word the VM's errors as Lua 5.1 does (vmerror.go).
	vm.handler = L.NewFunction(vm.lua51Handler)
	vm.closer = vm.newCloser(L)
	G.RawSetString("xpcall", L.NewFunction(vm.xpcall))
	// pcall as Redis 7's luaRedisPcall: an error that is a table with a
	// string (or number) err field, as redis.call raises, is caught as
	// that string, as the errors of Redis 6 were; with any other err
	// field, that field comes after the table, as a third result.
	G.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() == 0 {
			// Redis's pcall then calls the boolean it pushed for the result
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a boolean value"))
			return 2
		}
		n := vm.basePCall(L)
		if n != 2 || L.Get(-2) != lua.LFalse {
			return n // ok, or not an error
		}
		t, ok := L.Get(-1).(*lua.LTable)
		if !ok {
			return n
		}
		switch f := L.GetField(t, "err"); f.(type) {
		case lua.LString, lua.LNumber:
			L.Replace(-1, f)
			return 2
		default:
			L.Push(f)
			return 3
		}
	}))
	origRawset := G.RawGetString("rawset").(*lua.LFunction)
	G.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.ro[t] {
			return vm.callError(L, true, errorTable(L, engine.ErrScriptReadonly))
		}
		// Lua's luaG_runerror, raised in rawset, a C function: no position
		if _, ok := L.Get(1).(*lua.LTable); ok && L.GetTop() >= 3 {
			if k := L.Get(2); k == lua.LNil {
				vm.raise(L, lua.LString("table index is nil"))
			} else if n, ok := k.(lua.LNumber); ok && n != n {
				vm.raise(L, lua.LString("table index is NaN"))
			}
		}
		return origRawset.GFunction(L)
	}))
	// Redis's read-only tables are the tables themselves, flagged; ours
	// are empty proxies. next, pairs and rawget read through a proxy to
	// its table (never handing the table itself to the script), and
	// getmetatable of a library finds none, as in Redis.
	unwrap := func(L *lua.LState) {
		if t, ok := L.Get(1).(*lua.LTable); ok {
			if real := vm.roReal[t]; real != nil {
				L.Replace(1, real)
			}
		}
	}
	for _, name := range []string{"next", "rawget"} {
		orig := G.RawGetString(name).(*lua.LFunction)
		isNext := name == "next"
		G.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			unwrap(L)
			if isNext && tableFieldsOK {
				return vm.luaNext51(L) // Lua 5.1's order (pairs51.go)
			}
			if isNext {
				vm.checkNextKey(L) // lib51.go
			}
			return orig.GFunction(L)
		}))
	}
	next := G.RawGetString("next")
	G.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	origGetmt := G.RawGetString("getmetatable").(*lua.LFunction)
	G.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && vm.roReal[t] != nil && t != vm.env && t != vm.fnG {
			L.Push(lua.LNil)
			return 1
		}
		return origGetmt.GFunction(L)
	}))
	origSetmt := G.RawGetString("setmetatable").(*lua.LFunction)
	// setmetatable as Lua 5.1's luaB_setmetatable: for a table only, with
	// a table or nil. gopher-lua's also sets the metatable of a number,
	// boolean, string or function, which is every such value's, in every
	// later script: "setmetatable(1, {__index = f})" changed all numbers
	// until the Lua state was made again.
	G.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		mtType, given := L.Get(2).Type(), L.GetTop() >= 2
		t := L.CheckTable(1)
		if !given || mtType != lua.LTNil && mtType != lua.LTTable { // (no value is no nil)
			L.ArgError(2, "nil or table expected")
		}
		if vm.ro[t] || t == vm.globals || t == vm.fnGlobals {
			return vm.callError(L, true, errorTable(L, engine.ErrScriptReadonly))
		}
		if L.GetMetaField(t, "__metatable") != lua.LNil {
			cError(L, "cannot change a protected metatable") // luaL_error: no position under pcall
		}
		return origSetmt.GFunction(L)
	}))

	// Lua 5.1's string functions where gopher-lua's differ (string.rep,
	// byte and char: lib51.go). string.rep, string.format and
	// table.concat build one string in one Go call, which the memory watchdog (memory.go) cannot
	// interrupt: they refuse results larger than Redis's largest string
	// (proto-max-bulk-len, 512 MB) or the memory limit before building
	// them.
	if strLib, ok := G.RawGetString(lua.StringLibName).(*lua.LTable); ok {
		strLib.RawSetString("format", L.NewFunction(vm.strFormat)) // Lua 5.1's (format.go)
		// Lua 5.1's pattern matching (pattern.go); gfind is gmatch's old
		// name, kept by Redis's LUA_COMPAT_GFIND.
		strLib.RawSetString("find", L.NewFunction(strFind))
		strLib.RawSetString("match", L.NewFunction(strMatch))
		gmatch := L.NewFunction(strGmatch)
		strLib.RawSetString("gmatch", gmatch)
		strLib.RawSetString("gfind", gmatch)
		strLib.RawSetString("gsub", L.NewFunction(strGsub(vm.sizeLimit)))
		// upper and lower as C's toupper/tolower in the C locale: ASCII
		// letters only, byte by byte. gopher-lua's are Go's Unicode ones,
		// which turned a byte that is not UTF-8 (a binary token) into
		// U+FFFD and changed letters such as é.
		strLib.RawSetString("upper", L.NewFunction(func(L *lua.LState) int { return mapASCII(L, "upper", 'a', 'z', 'A'-'a') }))
		strLib.RawSetString("lower", L.NewFunction(func(L *lua.LState) int { return mapASCII(L, "lower", 'A', 'Z', 'a'-'A') }))
	}
	if tabLib, ok := G.RawGetString(lua.TabLibName).(*lua.LTable); ok {
		vm.openTableCompat(L, tabLib)
		tabLib.RawSetString("insert", L.NewFunction(vm.tableInsert))
		tabLib.RawSetString("concat", L.NewFunction(vm.tableConcat))
	}
	G.RawSetString("unpack", L.NewFunction(baseUnpack)) // Lua 5.1's bounds (unpack.go)
	strLib, _ := G.RawGetString(lua.StringLibName).(*lua.LTable)
	tabLib, _ := G.RawGetString(lua.TabLibName).(*lua.LTable)
	mathLib, _ := G.RawGetString(lua.MathLibName).(*lua.LTable)
	vm.openLib51(L, G, strLib, tabLib, mathLib) // lib51.go
	coerceIntArgs(L, G)
	// gopher-lua's string library points __index at itself (for the string
	// metatable); through the read-only proxy that would hand scripts the
	// real, writable table.
	if strLib, ok := G.RawGetString(lua.StringLibName).(*lua.LTable); ok {
		strLib.RawSetString("__index", lua.LNil)
	}
	// math.huge is HUGE_VAL, +inf, in Lua 5.1; gopher-lua sets the
	// largest finite double, so x == math.huge missed tonumber('inf').
	if mathLib, ok := G.RawGetString(lua.MathLibName).(*lua.LTable); ok {
		mathLib.RawSetString("huge", lua.LNumber(math.Inf(1)))
		mathLib.RawSetString("random", L.NewFunction(vm.mathRandom))
		mathLib.RawSetString("randomseed", L.NewFunction(vm.mathRandomseed))
	}
	G.RawSetString("redis", vm.readonly(vm.redisLib(true)))
	G.RawSetString("__redis__err__handler", L.NewFunction(vm.errHandler))
	vm.openExtraLibs(G)
	for _, name := range []string{lua.MathLibName, "bit"} {
		if t, ok := G.RawGetString(name).(*lua.LTable); ok {
			strictNumberArgs(L, t) // arith.go
		}
	}
	for _, name := range []string{lua.TabLibName, lua.StringLibName, lua.MathLibName, "cjson", "bit", "struct", "cmsgpack"} {
		if t, ok := G.RawGetString(name).(*lua.LTable); ok {
			G.RawSetString(name, vm.readonly(t))
		}
	}
	// Strings' metatable ("abc":upper()) reads through the read-only string
	// library, and converts numeric strings in arithmetic (arith.go);
	// getmetatable("") yields only a read-only view of a table with its
	// __index, as Redis's string metatable holds.
	smt := L.NewTable()
	smt.RawSetString("__index", G.RawGetString(lua.StringLibName))
	shown := L.NewTable()
	shown.RawSetString("__index", smt.RawGetString("__index"))
	smt.RawSetString("__metatable", vm.readonly(shown))
	setStringArith(smt)
	L.SetMetatable(lua.LString(""), smt)
	G.RawSetString("KEYS", L.NewTable())
	G.RawSetString("ARGV", L.NewTable())

	// Chunks made by load and loadstring run in the scripts' read-only
	// environment, not gopher-lua's real globals.
	// load and loadstring compile as EVAL does (lib51.go), the chunk
	// running in the scripts' environment.
	G.RawSetString("loadstring", L.NewFunction(vm.loadString))
	G.RawSetString("load", L.NewFunction(vm.luaLoad))

	// Reading a global that does not exist is an error; so is writing one,
	// should any code ever reach the real table.
	gmt := L.NewTable()
	gmt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(engine.ErrScriptReadonly)
		return 0
	}))
	gmt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		// Redis's luaProtectedTableError: the name as a C string
		// (lua_tostring: a number as %.14g, a string to its first NUL)
		var name string
		switch k := L.Get(2).(type) {
		case lua.LString:
			name = cString(string(k))
		case lua.LNumber:
			name = number14g(float64(k))
		default:
			L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
		}
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
		return 0
	}))
	gmt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(G, gmt)

	// Scripts see a read-only proxy of the globals.
	vm.env = vm.globalsView(G, gmt)
	vm.runEnv = vm.env
	vm.initFunctions(G, gmt) // functions.go
	vm.newContext()
}

// globalsView returns the read-only proxy of the globals G (whose
// metatable is gmt) that code sees as _G, and makes it G's _G.
// getmetatable(_G) yields a read-only table holding the globals'
// protection, as Redis's: its __index raises the error for a missing
// global (writes are refused by the table being read-only, so there is
// no __newindex).
func (vm *VM) globalsView(G, gmt *lua.LTable) *lua.LTable {
	env := vm.readonly(G)
	G.RawSetString("_G", env)
	if mt, ok := env.Metatable.(*lua.LTable); ok {
		view := vm.L.NewTable()
		view.RawSetString("__index", gmt.RawGetString("__index"))
		mt.RawSetString("__metatable", vm.readonly(view))
	}
	return env
}

// maxStringLen is Redis's default proto-max-bulk-len.
const maxStringLen = 512 << 20

// openTableCompat adds the table functions Lua 5.1 keeps for Lua 5.0's
// programs, which gopher-lua lacks: foreach, foreachi, and setn, which
// only says it is obsolete.
func (vm *VM) openTableCompat(L *lua.LState, tab *lua.LTable) {
	tab.RawSetString("foreach", L.NewFunction(func(L *lua.LState) int {
		t, fn := tableAndFunc(L, "foreach")
		next := t.Next
		if tableFieldsOK { // lua_next's order, as next (pairs51.go)
			next = func(k lua.LValue) (lua.LValue, lua.LValue) {
				k, v, ok := vm.pairs.model(t, k == lua.LNil, &vm.presized).next(k)
				if !ok {
					vm.raise(L, lua.LString("invalid key to 'next'"))
				}
				return k, v
			}
		}
		for k, v := next(lua.LNil); k != lua.LNil; k, v = next(k) {
			L.Push(fn)
			L.Push(k)
			L.Push(v)
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
	tab.RawSetString("foreachi", L.NewFunction(func(L *lua.LState) int {
		t, fn := tableAndFunc(L, "foreachi")
		n := tableLen(t)
		for i := 1; i <= n; i++ {
			L.Push(fn)
			L.Push(lua.LNumber(i))
			L.Push(rawGetInt(t, i))
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
	tab.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("'setn' is obsolete")
		return 0
	}))
}

// tableAndFunc checks that the arguments are a table and a function, as
// table.foreach and foreachi do (luaL_checktype).
func tableAndFunc(L *lua.LState, fname string) (*lua.LTable, *lua.LFunction) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		argError(L, 1, fname, "table expected, got "+typeName(L, 1))
	}
	fn, ok := L.Get(2).(*lua.LFunction)
	if !ok {
		argError(L, 2, fname, "function expected, got "+typeName(L, 2))
	}
	return t, fn
}

// mapASCII replaces the bytes from lo to hi of string argument 1 by
// themselves plus delta.
func mapASCII(L *lua.LState, fname string, lo, hi byte, delta int) int {
	s := checkLString(L, 1, fname)
	b := []byte(s)
	for i, c := range b {
		if lo <= c && c <= hi {
			b[i] = byte(int(c) + delta)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// readonly returns an empty proxy that reads through to real and refuses
// writes, as Redis 7's lua_enablereadonlytable does.
func (vm *VM) readonly(real *lua.LTable) *lua.LTable {
	L := vm.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", real)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(engine.ErrScriptReadonly)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	vm.ro[p] = true
	vm.ro[real] = true
	vm.roReal[p] = real
	return p
}

// callerLine is the current line of the Lua function calling a Go function.
func callerLine(L *lua.LState) string {
	w := L.Where(1)
	if i := strings.LastIndexByte(strings.TrimSuffix(w, ":"), ':'); i >= 0 {
		return strings.TrimSuffix(w[i+1:], ":")
	}
	return "0"
}

// redisLib builds the redis table: an EVAL's (eval), or a function's,
// which lacks replicate_commands, breakpoint and debug (Redis's eval.c
// adds those to the scripts' Lua state only).
func (vm *VM) redisLib(eval bool) *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return vm.redisCall(L, true) },
		"pcall": func(L *lua.LState) int { return vm.redisCall(L, false) },
		"error_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(errorTable(L, "wrong number or type of arguments"))
				return 1
			}
			msg := L.ToString(1)
			if !strings.HasPrefix(msg, "-") {
				msg = "-" + msg
			}
			L.Push(errorTable(L, msg))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(errorTable(L, "wrong number or type of arguments"))
				return 1
			}
			r := L.NewTable()
			r.RawSetString("ok", L.Get(1))
			L.Push(r)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return vm.callError(L, true, errorTable(L, "wrong number of arguments"))
			}
			// lua_tolstring: a number as "%.14g", any other value ""
			s, _ := luaString(L.Get(1))
			L.Push(lua.LString(SHA1Hex([]byte(s))))
			return 1
		},
		// Numbers in these three are C's (int)lua_tonumber: a numeric
		// string counts, a fraction is truncated, anything else is 0.
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				return vm.callError(L, true, errorTable(L, "redis.log() requires two arguments or more."))
			}
			level, ok := toNumber(L.Get(1))
			if !ok {
				return vm.callError(L, true, errorTable(L, "First argument must be a number (log level)."))
			}
			if l := int32Of(level); l < 0 || l > 3 {
				return vm.callError(L, true, errorTable(L, "Invalid debug level."))
			}
			return 0 // tumbler's log has no place for a script's messages
		},
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return vm.callError(L, true, errorTable(L, "redis.setresp() requires one argument."))
			}
			n, _ := toNumber(L.Get(1))
			resp := int32Of(n)
			if resp != 2 && resp != 3 {
				return vm.callError(L, true, errorTable(L, "RESP version must be 2 or 3."))
			}
			vm.resp = int(resp)
			return 0
		},
		"acl_check_cmd": func(L *lua.LState) int {
			if L.GetTop() == 0 {
				return vm.callError(L, true, errorTable(L, "Please specify at least one argument for this redis lib call"))
			}
			args := make([][]byte, L.GetTop())
			for i := range args {
				switch v := L.Get(i + 1).(type) {
				case lua.LString:
					args[i] = []byte(string(v))
				case lua.LNumber:
					args[i] = number17g(float64(v))
				default:
					return vm.callError(L, true, errorTable(L, "Lua redis lib command arguments must be strings or integers"))
				}
			}
			cmd := vm.ctx.Eng.LookupArgs(args)
			if cmd == nil {
				return vm.callError(L, true, errorTable(L, "Invalid command passed to redis.acl_check_cmd()"))
			}
			var u *engine.ACLUser
			if vm.ctx.Client != nil {
				u = vm.ctx.Client.ACL
			}
			L.Push(lua.LBool(vm.ctx.Eng.Allowed(u, cmd, args))) // the caller's user (ACLCheckAllUserCommandPerm)
			return 1
		},
		"set_repl": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return vm.callError(L, true, errorTable(L, "redis.set_repl() requires two arguments."))
			}
			if n, _ := toNumber(L.Get(1)); int32Of(n)&^3 != 0 { // REPL_AOF|REPL_REPLICA
				return vm.callError(L, true, errorTable(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."))
			}
			return 0 // nothing to replicate to
		},
	}
	if eval {
		fns["replicate_commands"] = func(L *lua.LState) int { L.Push(lua.LTrue); return 1 }
		fns["breakpoint"] = func(L *lua.LState) int { L.Push(lua.LFalse); return 1 }
		fns["debug"] = func(L *lua.LState) int { return 0 }
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
		"REDIS_VERSION_NUM": 0x070204,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(engine.Version))
	return t
}

// errorTable builds Redis's Lua error table from a RESP-style error
// ("-CODE message" or "-message"), as luaPushErrorBuff does: a message
// with no code gets ERR.
func errorTable(L *lua.LState, s string) *lua.LTable {
	var final string
	if strings.HasPrefix(s, "-") {
		body := s[1:]
		if i := strings.IndexByte(body, ' '); i >= 0 {
			final = body[:i] + " " + strings.Trim(body[i+1:], "\r\n")
		} else {
			final = "ERR " + strings.Trim(body, "\r\n")
		}
	} else {
		final = "ERR " + strings.Trim(s, "\r\n")
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(final))
	return t
}

// callError reports an error from redis.call/pcall itself: raised (with
// the caller's line) for call, returned for pcall.
func (vm *VM) callError(L *lua.LState, raise bool, t *lua.LTable) int {
	if raise {
		vm.raise(L, t)
		return 0
	}
	L.Push(t)
	return 1
}

// raise raises v as a script error, remembering the caller's line for the
// reply should the error leave the script. The value itself is not
// changed: pcall sees exactly what was raised, and a table passed to
// error() may be a read-only library or _G itself.
func (vm *VM) raise(L *lua.LState, v lua.LValue) {
	vm.lastErr, vm.lastErrLine = v, callerLine(L)
	L.Error(v, 0)
}

// ignoreStatsField marks an error table made from a command's error reply,
// already counted in the error statistics (Redis's field, visible to
// scripts under the same name).
const ignoreStatsField = "ignore_error_stats_update"

// redisCall is redis.call (raise=true) and redis.pcall (raise=false).
func (vm *VM) redisCall(L *lua.LState, raise bool) int {
	n := L.GetTop()
	if n == 0 {
		return vm.callError(L, raise, errorTable(L, "Please specify at least one argument for this redis lib call"))
	}
	args := vm.callArgs[:0]
	if cap(args) < n {
		args = make([][]byte, 0, n)
	}
	args = args[:n]
	vm.callArgs = args
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			s := string(v)
			if len(s) == 0 {
				// unsafe.StringData("") is nil, and a nil argument reads
				// as a missing one (SET's PX value, SCAN's MATCH pattern).
				args[i-1] = []byte{}
				continue
			}
			args[i-1] = unsafe.Slice(unsafe.StringData(s), len(s))
		case lua.LNumber:
			args[i-1] = number17g(float64(v))
		default:
			return vm.callError(L, raise, errorTable(L, "Lua redis lib command arguments must be strings or integers"))
		}
	}
	if vm.isKilled() {
		L.RaiseError("Script killed by user with SCRIPT KILL...")
	}
	w := &vm.callW
	*w = luaWriter{L: L, resp: vm.resp, stack: w.stack[:0]}
	vm.ctx.Call(args, w)
	result, topErr := w.result, w.topErr
	// keep nothing of this call alive until the next
	w.result = nil
	clear(w.stack[:cap(w.stack)])
	clear(args)
	if t, ok := result.(*lua.LTable); ok && topErr {
		// counted when the command replied (or was refused): not again
		// should the script end with it, as in Redis, which marks it so
		t.RawSetString(ignoreStatsField, lua.LTrue)
		return vm.callError(L, raise, t)
	}
	L.Push(result)
	return 1
}

// errHandler is Redis 7.0's __redis__err__handler, a global of EVAL's
// scripts (not of functions): the message handler Redis runs a script
// under, which a script can call too. It turns an error that is not a
// table into {err = "ERR " .. tostring(err)}, and sets the table's
// source and line to its caller's (the caller's caller when that is a
// C, here Go, function: pcall), as Redis's debug.getinfo does. (tumbler
// runs scripts under its own handler; only what a script sees of this
// one is Redis's.)
func (vm *VM) errHandler(L *lua.LState) int {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+L.ToStringMeta(L.Get(1)).String()))
	}
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" && level == 1 {
			continue
		}
		src := dbg.Source
		if s, ok := vm.chunkSources[src]; ok {
			src = s
		} else if src == chunkScript {
			src = "@" + chunkScript
		}
		L.SetField(t, "source", lua.LString(src))
		L.SetField(t, "line", lua.LNumber(dbg.CurrentLine))
		break
	}
	L.Push(t)
	return 1
}
