package luavm

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openExtraLibs adds the libraries Redis ships beyond Lua's own: cjson
// (cjson.go), bit (LuaBitOp), struct and cmsgpack.
func (vm *VM) openExtraLibs(G *lua.LTable) {
	G.RawSetString("cjson", vm.cjsonLib())
	G.RawSetString("bit", vm.bitLib())
	G.RawSetString("struct", vm.structLib())
	G.RawSetString("cmsgpack", vm.cmsgpackLib())
}

// ---- bit (LuaBitOp: 32-bit operations) ----

// tobit is LuaBitOp's barg: it adds 2^52+2^51 to the number, which
// rounds it to an integer (half to even) in the low bits of the double's
// mantissa, and takes the low 32 bits. So 1.5 is 2, -1.5 is -2, and
// 2^32+0.5 is 0.
func tobit(L *lua.LState, i int) int32 {
	f := float64(L.CheckNumber(i))
	return int32(uint32(math.Float64bits(f + 6755399441055744.0)))
}

func (vm *VM) bitLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	ret := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			acc := tobit(L, 1)
			for i := L.GetTop(); i > 1; i-- { // LuaBitOp's order: the last argument is checked first
				acc = op(acc, tobit(L, i))
			}
			return ret(L, acc)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, tobit(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^tobit(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(tobit(L, 1))<<(uint32(tobit(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(tobit(L, 1))>>(uint32(tobit(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int { return ret(L, tobit(L, 1)>>(uint32(tobit(L, 2))&31)) },
		"rol": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return ret(L, int32(x<<n|x>>((32-n)&31)))
		},
		"ror": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return ret(L, int32(x>>n|x<<((32-n)&31)))
		},
		"bswap": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			return ret(L, int32(x>>24|(x>>8)&0xff00|(x&0xff00)<<8|x<<24))
		},
		"tohex": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			n := 8
			if L.GetTop() >= 2 {
				n = int(tobit(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[x&15]
				x >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}
