package luavm

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 reads a string operand of arithmetic as luaO_str2d reads it
// (C's strtod, white space around it allowed): '010' * 1 is 10, '0x.8'
// + 0 is 0.5, '1e500' + 0 is inf, '5\r' + 0 is 5, and '0b1', '0o17' or
// '1_000' are no numbers. gopher-lua's objectArith and OP_UNM read it
// with Go's strconv.ParseInt(s, 0) then ParseFloat, trimming " \t\n"
// only: '010' was octal 8 (so "local a = '0010' return a * 60" was 480),
// '0b1', '0o17' and '1_000' were numbers, and '0x.8', '1e500' or '5\r'
// failed.
//
// gopher-lua looks for an operand's metamethod before it converts
// strings (the first operand's, then the second's; a string's is the
// strings' metatable), and only when the operands are not both numbers:
// the VM's fast path for two numbers never gets there. So the strings'
// metatable has __add, __sub, __mul, __div, __mod, __pow and __unm,
// which convert as Lua 5.1 does, at no cost to arithmetic on numbers.
// When an operand is no number they do what Lua 5.1's Arith does next
// (call_binTM): call the first operand's metamethod for the event, else
// the second's (a string has none in Lua 5.1), else fail with the error
// gopher-lua raises there, which the message handler rewords as Lua 5.1
// does (vmerror.go, looking through these functions to the instruction
// that called them: "attempt to perform arithmetic on local 'x' (a
// string value)"). Scripts do not see them: getmetatable('') is a view
// of a table with __index alone, as Redis's holds.
//
// A numeric string operand of % is converted here, but the remainder is
// still gopher-lua's (math.Mod, then adjusted to the divisor's sign), not
// Lua 5.1's a - floor(a/b)*b, which differs in the last bits for some
// fractions.

// arithEvents are the binary arithmetic events and their operations on
// numbers, as gopher-lua's numberArith computes them.
var arithEvents = []struct {
	event string
	op    func(a, b float64) float64
}{
	{"__add", func(a, b float64) float64 { return a + b }},
	{"__sub", func(a, b float64) float64 { return a - b }},
	{"__mul", func(a, b float64) float64 { return a * b }},
	{"__div", func(a, b float64) float64 { return a / b }},
	{"__mod", func(a, b float64) float64 { // gopher-lua's luaModulo
		v := math.Mod(a, b)
		if b > 0 && v < 0 || b < 0 && v > 0 {
			v += b
		}
		return v
	}},
	{"__pow", math.Pow},
}

// setStringArith puts the arithmetic metamethods in the strings'
// metatable smt.
func setStringArith(smt *lua.LTable) {
	for _, e := range arithEvents {
		event, op := e.event, e.op
		smt.RawSetString(event, &lua.LFunction{IsG: true, Env: coercionEnv, GFunction: func(L *lua.LState) int {
			return stringArith(L, event, op)
		}})
	}
	smt.RawSetString("__unm", &lua.LFunction{IsG: true, Env: coercionEnv, GFunction: stringUnm})
}

// stringArith is the metamethod of event for operands a and b, one of
// them a string (or both), as Lua 5.1's Arith.
func stringArith(L *lua.LState, event string, op func(a, b float64) float64) int {
	a, b := L.Get(1), L.Get(2)
	x, okA := toNumber(a)
	y, okB := toNumber(b)
	if okA && okB {
		L.Push(lua.LNumber(op(x, y)))
		return 1
	}
	// call_binTM: the first operand's metamethod, else the second's
	for _, v := range []lua.LValue{a, b} {
		if _, ok := v.(lua.LString); ok {
			continue // (this one)
		}
		tm := L.GetMetaField(v, event)
		if tm == lua.LNil {
			continue
		}
		if _, ok := tm.(*lua.LFunction); !ok && L.GetMetaField(tm, "__call") == lua.LNil {
			// luaD_call's error for a metamethod it cannot call
			L.RaiseError("attempt to call a %s value", tm.Type().String())
		}
		L.Push(tm)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		return 1
	}
	// objectArith's error, which vmerror.go rewords
	typ := func(v lua.LValue, num bool) string {
		if num {
			return lua.LTNumber.String()
		}
		return v.Type().String()
	}
	L.RaiseError("cannot perform %s operation between %s and %s", event[2:], typ(a, okA), typ(b, okB))
	return 0
}

// stringUnm is the strings' __unm: the number negated, or OP_UNM's error.
func stringUnm(L *lua.LState) int {
	if x, ok := toNumber(L.Get(1)); ok {
		L.Push(lua.LNumber(-x))
		return 1
	}
	L.RaiseError("__unm undefined")
	return 0
}

// notANumber stands, in a call to a math or bit function, for a string
// argument that Lua 5.1 does not read as a number: gopher-lua's
// CheckNumber refuses it ("number expected, got string") where it would
// have read '0b1' or '1_000' as one.
const notANumber = lua.LString("")

// strictNumberArgs wraps the functions of lib (math, bit) to give them
// their string arguments as luaL_checknumber reads them (str2d): a
// numeric string as its number, any other as notANumber. The functions
// still check their arguments in their own order.
func strictNumberArgs(L *lua.LState, lib *lua.LTable) {
	fns := map[lua.LValue]lua.LGFunction{}
	lib.ForEach(func(k, v lua.LValue) {
		if f, ok := v.(*lua.LFunction); ok && f.GFunction != nil {
			fns[k] = f.GFunction
		}
	})
	for k, fn := range fns {
		lib.RawSet(k, L.NewFunction(func(L *lua.LState) int {
			for i, top := 1, L.GetTop(); i <= top; i++ {
				if s, ok := L.Get(i).(lua.LString); ok {
					if f, ok := str2d(string(s)); ok {
						L.Replace(i, lua.LNumber(f))
					} else {
						L.Replace(i, notANumber)
					}
				}
			}
			return fn(L)
		}))
	}
}

// stackLevel is the level of gopher-lua's stack (L.Where, L.GetStack) of
// Lua 5.1's level (1: the caller of the running Go function): the frames
// of the strings' metamethods, which Lua 5.1 has not, are not counted,
// so that error('x', 2) in a table's __add that one of them called names
// the line of the arithmetic, as in Lua.
func stackLevel(L *lua.LState, level int) int {
	at := 0
	for n := 0; n < level; {
		at++
		dbg, ok := L.GetStack(at)
		if !ok {
			break
		}
		if fn, err := L.GetInfo("f", dbg, lua.LNil); err == nil && isCoercion(fn) {
			continue
		}
		n++
	}
	return at
}
