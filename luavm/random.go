package luavm

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// math.random and math.randomseed as Redis's (script_lua.c
// redis_math_random over rand.c's redisLrand48): Lua 5.1's functions with
// C's rand() replaced by a 48-bit linear congruential generator, so that a
// script's random numbers are the same on every server for the same seed.
// Like Redis's, the generator is one per server and its state carries
// from script to script; it starts from lrand48's default seed.

const (
	rand48Mul     = 0x5DEECE66D
	rand48Add     = 0xB
	rand48Mask    = 1<<48 - 1
	rand48Default = 0x1234ABCD330E
	lrand48Max    = math.MaxInt32 // REDIS_LRAND48_MAX
)

// lrand48 steps the generator and returns its top 31 bits.
func (vm *VM) lrand48() int32 {
	vm.rand48 = (rand48Mul*vm.rand48 + rand48Add) & rand48Mask
	return int32(vm.rand48 >> 17)
}

// srand48 seeds the generator as redisSrand48: the seed's two 16-bit
// halves above lrand48's fixed low word.
func (vm *VM) srand48(seed int32) {
	u := uint64(uint32(seed))
	vm.rand48 = (u>>16&0xFFFF)<<32 | (u&0xFFFF)<<16 | 0x330E
}

func (vm *VM) mathRandom(L *lua.LState) int {
	r := float64(vm.lrand48()%lrand48Max) / lrand48Max
	switch L.GetTop() {
	case 0: // a number in [0, 1)
		L.Push(lua.LNumber(r))
	case 1: // an integer in [1, u]
		u := int32(cCheckInteger(L, 1))
		if u < 1 {
			cArgError(L, 1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2: // an integer in [l, u]
		l := int32(cCheckInteger(L, 1))
		u := int32(cCheckInteger(L, 2))
		if l > u {
			cArgError(L, 2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l))) // C's int: u-l+1 wraps
	default:
		cError(L, "%s", "wrong number of arguments")
	}
	return 1
}

func (vm *VM) mathRandomseed(L *lua.LState) int {
	vm.srand48(int32(cCheckInteger(L, 1)))
	return 0
}
