package luavm

import (
	"bytes"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/engine"
)

// The Lua engine of functions (Redis 7.0's src/function_lua.c): FUNCTION
// LOAD compiles a library and runs it once so that it registers its
// functions with redis.register_function; FCALL calls one of them with
// its KEYS and ARGV as arguments. Libraries and functions run on the
// scripts' Lua state, with globals of their own (initFunctions), as
// Redis runs them on a Lua state of its own.

// luaFunction is a registered function (engine.Function's Impl): its
// callback, and the code of the library that made it, to make it again
// in a new Lua state.
type luaFunction struct {
	fn   *lua.LFunction
	gen  uint64 // vm.stateGen when fn was made
	body []byte
}

// loadRun is the library being loaded: register_function adds to it.
type loadRun struct {
	lib  *engine.Library
	body []byte
}

// initFunctions builds what functions see, beside the scripts' globals G
// (whose metatable is gmt):
//   - fnGlobals, the globals functions run with: the scripts' libraries,
//     but a redis table without the EVAL-only calls, a cjson of its own
//     (SCRIPT FLUSH does not reset its settings), no KEYS or ARGV (a
//     function is given them as arguments), and no __redis__err__handler;
//   - fnLoadAPI, what a library's code sees while it loads: redis with
//     only register_function, log and its levels and the version; any
//     other name is an error, as in Redis;
//   - fnEnv, the globals of the libraries' code: a read-only table that
//     reads through to fnLoadAPI while a library loads and to fnGlobals
//     after, so that the functions a library defines run with fnGlobals.
func (vm *VM) initFunctions(G, gmt *lua.LTable) {
	L := vm.L
	fG := L.NewTable()
	G.ForEach(func(k, v lua.LValue) {
		switch k {
		case lua.LString("KEYS"), lua.LString("ARGV"), lua.LString("_G"), lua.LString("redis"), lua.LString("cjson"),
			lua.LString("__redis__err__handler"): // EVAL's state only, in Redis
			return
		}
		fG.RawSet(k, v)
	})
	fG.RawSetString("redis", vm.readonly(vm.redisLib(false)))
	cjson, _ := vm.newCjson(L)
	fG.RawSetString("cjson", vm.readonly(cjson))
	L.SetMetatable(fG, gmt)
	vm.fnGlobals = fG
	vm.fnG = vm.globalsView(fG, gmt)

	scripts := vm.roReal[G.RawGetString("redis").(*lua.LTable)]
	lr := L.NewTable()
	lr.RawSetString("register_function", L.NewFunction(vm.registerFunction))
	for _, name := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
		lr.RawSetString(name, scripts.RawGetString(name))
	}
	L.SetMetatable(lr, gmt)
	api := L.NewTable()
	api.RawSetString("redis", vm.readonly(lr))
	L.SetMetatable(api, gmt)
	vm.fnLoadAPI = api

	vm.fnEnv = vm.readonly(fG)
	vm.fnEnvMeta = vm.fnEnv.Metatable.(*lua.LTable)
}

// precompiledLib is a library's code PrecompileLibrary compiled (or
// failed to: errMsg).
type precompiledLib struct {
	body   []byte
	proto  *lua.FunctionProto
	errMsg string
}

// PrecompileLibrary implements engine.LibraryPrecompiler: it compiles a
// library's code for the FUNCTION LOAD about to create it (Create), one
// compile at a time with EVAL's (Precompile).
func (vm *VM) PrecompileLibrary(body []byte) (any, time.Duration) {
	vm.precompiling.Lock()
	defer vm.precompiling.Unlock()
	start := time.Now()
	proto, errMsg := vm.compile(body, chunkFunction)
	return &precompiledLib{body: body, proto: proto, errMsg: errMsg}, time.Since(start)
}

// Create implements engine.FunctionEngine: Redis's luaEngineCreate.
// prepared, when it holds what PrecompileLibrary compiled of body, is
// run without compiling again.
func (vm *VM) Create(lib *engine.Library, body []byte, prepared any, timeout time.Duration) string {
	var proto *lua.FunctionProto
	var msg string
	if pre, ok := prepared.(*precompiledLib); ok && bytes.Equal(pre.body, body) {
		proto, msg = pre.proto, pre.errMsg
	} else {
		proto, msg = vm.compile(body, chunkFunction)
	}
	if msg != "" {
		return "Error compiling function: " + msg
	}
	fn := vm.L.NewFunctionFromProto(proto)
	fn.Env = vm.fnEnv
	vm.fnEnvMeta.RawSetString("__index", vm.fnLoadAPI)
	vm.loading = &loadRun{lib: lib, body: body}
	vm.lastErr, vm.lastErrLine = nil, ""
	err, stop := vm.pcall(fn, 0, timeout)
	vm.loading = nil
	vm.fnEnvMeta.RawSetString("__index", vm.fnGlobals)
	switch {
	case stop == stopClosed:
		return "server is shutting down"
	case err == nil:
		return ""
	case stop == stopTimeout:
		msg = "ERR FUNCTION LOAD timeout"
	case stop == stopKilled:
		msg = engine.ErrScriptKilled
	case stop == stopMemory:
		msg = engine.ErrScriptMemory + " (lua-memory-limit is " + strconv.FormatInt(vm.memLimit.Load(), 10) + " bytes)"
		vm.resetState()
	default:
		msg = loadErrorMessage(err)
	}
	return "Error registering functions: " + msg
}

// loadErrorMessage is the message of an error that ended a library's
// load, as Redis's luaExtractErrorInformation reads it from a run with no
// error handler: a table's err field, or "ERR " and a string.
func loadErrorMessage(err error) string {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR " + err.Error()
	}
	switch v := ae.Object.(type) {
	case *lua.LTable:
		if m, ok := luaString(v.RawGetString("err")); ok {
			return m
		}
		return "ERR unknown error"
	case lua.LNumber:
		return "ERR " + number14g(float64(v))
	}
	return "ERR " + ae.Object.String()
}

// luaString is Lua's lua_isstring and lua_tostring: a string, or a number
// as a string.
func luaString(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return number14g(float64(v)), true
	}
	return "", false
}

// registerFunction is redis.register_function (Redis's
// luaRegisterFunction): register_function(name, callback) or
// register_function{function_name=..., callback=..., flags={...},
// description=...}, only while a library loads.
func (vm *VM) registerFunction(L *lua.LState) int {
	fail := func(msg string) int { return vm.callError(L, true, errorTable(L, msg)) }
	ld := vm.loading
	if ld == nil {
		return fail("redis.register_function can only be called on FUNCTION LOAD command")
	}
	var (
		name, errMsg string
		desc         *string
		flags        engine.ScriptFlag
		cb           *lua.LFunction
	)
	switch L.GetTop() {
	case 1:
		name, desc, flags, cb, errMsg = registerNamedArgs(L)
	case 2:
		var ok bool
		if name, ok = luaString(L.Get(1)); !ok {
			errMsg = "first argument to redis.register_function must be a string"
		} else if cb, ok = L.Get(2).(*lua.LFunction); !ok {
			errMsg = "second argument to redis.register_function must be a function"
		}
	default:
		errMsg = "wrong number of arguments to redis.register_function"
	}
	if errMsg != "" {
		return fail(errMsg)
	}
	if msg := ld.lib.AddFunction(name, desc, flags, &luaFunction{fn: cb, gen: vm.stateGen, body: ld.body}); msg != "" {
		return fail(msg)
	}
	return 0
}

// registerNamedArgs reads register_function's table of named arguments
// (luaRegisterFunctionReadNamedArgs), in Lua 5.1's order, stopping at
// the first error.
func registerNamedArgs(L *lua.LState) (name string, desc *string, flags engine.ScriptFlag, cb *lua.LFunction, errMsg string) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		return "", nil, 0, nil, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
	}
	named := false
	lua51Pairs(t, nil, func(k, v lua.LValue) {
		if errMsg != "" {
			return
		}
		key, ok := luaString(k)
		if !ok {
			errMsg = "named argument key given to redis.register_function is not a string"
			return
		}
		kb := []byte(key)
		switch {
		case engine.EqFold(kb, "function_name"): // strcasecmp, as Redis
			if name, ok = luaString(v); !ok {
				errMsg = "function_name argument given to redis.register_function must be a string"
			}
			named = true
		case engine.EqFold(kb, "description"):
			d, ok := luaString(v)
			if !ok {
				errMsg = "description argument given to redis.register_function must be a string"
			}
			desc = &d
		case engine.EqFold(kb, "callback"):
			if cb, ok = v.(*lua.LFunction); !ok {
				errMsg = "callback argument given to redis.register_function must be a function"
			}
		case engine.EqFold(kb, "flags"):
			ft, ok := v.(*lua.LTable)
			if !ok {
				errMsg = "flags argument to redis.register_function must be a table representing function flags"
				return
			}
			flags, ok = readFunctionFlags(L, ft)
			if !ok {
				errMsg = "unknown flag given"
			}
		default:
			errMsg = "unknown argument given to redis.register_function"
		}
	})
	switch {
	case errMsg != "":
	case !named:
		errMsg = "redis.register_function must get a function name argument"
	case cb == nil:
		errMsg = "redis.register_function must get a callback argument"
	}
	return name, desc, flags, cb, errMsg
}

// readFunctionFlags reads a flags table, t[1], t[2]... up to the first
// nil (luaRegisterFunctionReadFlags): each a flag's name, in any case.
func readFunctionFlags(L *lua.LState, t *lua.LTable) (engine.ScriptFlag, bool) {
	var flags engine.ScriptFlag
	for j := 1; ; j++ {
		v := L.GetTable(t, lua.LNumber(j))
		if v == lua.LNil {
			return flags, true
		}
		s, ok := luaString(v)
		if !ok {
			return 0, false
		}
		f, ok := engine.ParseScriptFlag(s, true)
		if !ok {
			return 0, false
		}
		flags |= f
	}
}

// Call implements engine.FunctionEngine: Redis's luaEngineCall, the
// function called with the KEYS and ARGV tables as its arguments.
func (vm *VM) Call(c *engine.Ctx, f *engine.Function, keys, args [][]byte) {
	lf := f.Impl.(*luaFunction)
	if lf.gen != vm.stateGen {
		if msg := vm.reload(f.Lib, lf.body); msg != "" {
			c.W.WriteError("ERR " + msg)
			return
		}
	}
	vm.run(c, lf.fn, []lua.LValue{vm.argTable(keys), vm.argTable(args)}, where{f.Name, chunkFunction}, vm.fnEnv)
}

// reload makes lib's functions again, from its code, in the Lua state
// resetState made after a run was stopped by the memory bound: the old
// state is let go whole. The library's own state (values its functions
// keep in upvalues) starts again, as if it had been loaded again.
func (vm *VM) reload(lib *engine.Library, body []byte) string {
	again := &engine.Library{Name: lib.Name, Engine: lib.Engine}
	if msg := vm.Create(again, body, nil, engine.FunctionLoadTimeout); msg != "" {
		return msg
	}
	for _, f := range lib.Functions() {
		if nf := again.Function(f.Name); nf != nil {
			*f.Impl.(*luaFunction) = *nf.Impl.(*luaFunction)
		}
	}
	return ""
}
