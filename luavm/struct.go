package luavm

import (
	"encoding/binary"
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// ---- struct (Roberto Ierusalimschy's struct library, as bundled in Redis) ----
//
// struct.pack(fmt, ...), struct.unpack(fmt, data [, pos]) and
// struct.size(fmt), as Redis 7.0 builds them on x86-64: a native
// little-endian byte order, 'l', 'L' and 'T' 8 bytes, 'i' 4, at most 32
// bytes for an integer, and default alignment ('!' without a number) 8.
//
// Format options: '>' '<' set the byte order, "!n" the alignment, ' ' is
// ignored; 'x' is a padding byte; 'b' 'B' 'h' 'H' 'l' 'L' 'T' "in" "In"
// integers (lower case signed); 'f' and 'd' floating point; "cn" n bytes
// (n == 0: the whole string when packing, the previous number's worth when
// unpacking); 's' a zero-terminated string. The C library's corner cases
// are kept, since scripts see them: integers go through a C cast of the
// double to 64 bits (so 2^64 packs as 0 and NaN as 2^63), integers wider
// than 8 bytes keep only 64 bits, offsets are unsigned (a negative
// position is "data string too short", not "offset must be 1 or
// greater"), and a missing argument is "got nil": the C function pushes a
// nil past its arguments.

// C's limits, as Lua 5.1 and the library use them.
const (
	structMaxIntSize = 32   // MAXINTSIZE
	structMaxAlign   = 8    // MAXALIGN on x86-64
	luaMaxCStack     = 8000 // LUAI_MAXCSTACK: stack slots a C function may use
)

func (vm *VM) structLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(vm.structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structFormat walks a format string as the C library does: up to its
// first NUL byte.
type structFormat struct {
	L      *lua.LState
	s      string
	i      int
	little bool
	align  uint64
}

func newStructFormat(L *lua.LState) *structFormat {
	return &structFormat{L: L, s: cString(cCheckString(L, 1)), little: true, align: 1}
}

func (f *structFormat) more() bool { return f.i < len(f.s) }

func (f *structFormat) next() byte {
	c := f.s[f.i]
	f.i++
	return c
}

// getnum reads a decimal number at the cursor, or returns df.
func (f *structFormat) getnum(df int) int {
	if !f.more() || !isDigit(f.s[f.i]) {
		return df
	}
	a := 0
	for f.more() && isDigit(f.s[f.i]) {
		d := int(f.s[f.i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			cError(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.i++
	}
	return a
}

// optsize is the size of option opt (0 for options without one).
func (f *structFormat) optsize(opt byte) uint64 {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return uint64(f.getnum(1))
	case 'i', 'I':
		sz := f.getnum(4)
		if sz > structMaxIntSize {
			cError(f.L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return uint64(sz)
	}
	return 0
}

// toalign is the padding that puts an item of size size at offset n.
func (f *structFormat) toalign(n uint64, opt byte, size uint64) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > f.align {
		size = f.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

// control handles the options that set byte order and alignment.
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		f.little = false
	case '<':
		f.little = true
	case '!':
		a := f.getnum(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			cError(f.L, "alignment %d is not a power of 2", a)
		}
		f.align = uint64(a)
	default:
		cArgError(f.L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func isStructInt(opt byte) bool {
	switch opt {
	case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
		return true
	}
	return false
}

// cUint64 is C's (unsigned long)d as lua_struct.c's cast compiles in
// Redis 7.0 on x86-64: NaN, like any value below 2^63 in the signed
// conversion, becomes 1<<63 (redis-server packs '>I8' of 0/0 as 80 00 ...;
// uint64Of in format.go gives 0 there).
func cUint64(d float64) uint64 {
	const two63 = 9223372036854775808.0
	if d < two63 || d != d {
		return uint64(cvttsd2si(d))
	}
	if d -= two63; d < two63 {
		return uint64(int64(d)) ^ 1<<63
	}
	return 0 // the "integer indefinite" 1<<63, xor 1<<63
}

// packArg is argument i of struct.pack as the C function sees it: past
// the script's arguments is the nil it pushes as a mark (so a missing
// argument is "got nil", not "got no value"). Nothing past the mark can be
// reached: it is nil, which no option takes.
func packArg(L *lua.LState, nargs, i int) (lua.LValue, bool) {
	if i <= nargs {
		return L.Get(i), true
	}
	return lua.LNil, i == nargs+1
}

func (vm *VM) structPack(L *lua.LState) int {
	nargs := L.GetTop()
	f := newStructFormat(L)
	var b []byte
	limit := uint64(vm.sizeLimit())
	arg := 2
	number := func() float64 {
		v, ok := packArg(L, nargs, arg)
		arg++
		return toNumberArg(L, arg-1, v, ok)
	}
	var total uint64
	var tmp [structMaxIntSize]byte
	for f.more() {
		opt := f.next()
		size := f.optsize(opt)
		pad := f.toalign(total, opt, size)
		total += pad
		b = append(b, make([]byte, pad)...)
		switch {
		case isStructInt(opt):
			n := number()
			v := cUint64(n)
			if n < 0 {
				v = uint64(cvttsd2si(n))
			}
			for i := uint64(0); i < size; i++ {
				j := i
				if !f.little {
					j = size - 1 - i
				}
				tmp[j] = byte(v)
				v >>= 8
			}
			b = append(b, tmp[:size]...)
		case opt == 'x':
			b = append(b, 0)
		case opt == 'f':
			bits := math.Float32bits(float32(number()))
			if f.little {
				binary.LittleEndian.PutUint32(tmp[:], bits)
			} else {
				binary.BigEndian.PutUint32(tmp[:], bits)
			}
			b = append(b, tmp[:4]...)
		case opt == 'd':
			bits := math.Float64bits(number())
			if f.little {
				binary.LittleEndian.PutUint64(tmp[:], bits)
			} else {
				binary.BigEndian.PutUint64(tmp[:], bits)
			}
			b = append(b, tmp[:8]...)
		case opt == 'c' || opt == 's':
			v, ok := packArg(L, nargs, arg)
			arg++
			s := toStringArg(L, arg-1, v, ok)
			if size == 0 {
				size = uint64(len(s))
			}
			if uint64(len(s)) < size {
				cArgError(L, arg, "string too short")
			}
			if uint64(len(b))+size > limit {
				cError(L, "not enough memory")
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
				size++
			}
		default:
			f.control(opt)
		}
		total += size
		if uint64(len(b)) > limit {
			cError(L, "not enough memory")
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// structInteger reads an integer of size bytes as the C library does: in
// 64 bits, sign-extended from the top bit of the size's last byte (the
// shift taken modulo 64, as x86 does).
func structInteger(b string, little, signed bool, size uint64) float64 {
	var l uint64
	for i := uint64(0); i < size; i++ {
		j := i
		if little {
			j = size - 1 - i
		}
		l = l<<8 | uint64(b[j])
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << (uint(int(size)*8-1) & 63)
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	nargs := L.GetTop()
	f := newStructFormat(L)
	data := cCheckString(L, 2)
	ld := uint64(len(data))
	pos := uint64(cOptInteger(L, 3, 1))
	if pos == 0 {
		cArgError(L, 3, "offset must be 1 or greater")
	}
	pos--
	var res []lua.LValue
	tooShort := func(size uint64) {
		if size > ld || pos > ld-size {
			cArgError(L, 2, "data string too short")
		}
	}
	for f.more() {
		opt := f.next()
		size := f.optsize(opt)
		pos += f.toalign(pos, opt, size)
		tooShort(size)
		if nargs+len(res)+2 > luaMaxCStack {
			cError(L, "stack overflow (too many results)")
		}
		switch {
		case isStructInt(opt):
			signed := opt >= 'a'
			res = append(res, lua.LNumber(structInteger(data[pos:pos+size], f.little, signed, size)))
		case opt == 'x':
		case opt == 'f':
			var bits uint32
			if f.little {
				bits = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				bits = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			res = append(res, lua.LNumber(float64(math.Float32frombits(bits))))
		case opt == 'd':
			var bits uint64
			if f.little {
				bits = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				bits = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			res = append(res, lua.LNumber(math.Float64frombits(bits)))
		case opt == 'c':
			if size == 0 {
				var n float64
				ok := len(res) > 0
				if ok {
					n, ok = toNumber(res[len(res)-1])
				}
				if !ok {
					cError(L, "format 'c0' needs a previous size")
				}
				size = cUint64(n)
				res = res[:len(res)-1]
				tooShort(size)
			}
			res = append(res, lua.LString(data[pos:pos+size]))
		case opt == 's':
			e := -1
			for i := pos; i < ld; i++ {
				if data[i] == 0 {
					e = int(i)
					break
				}
			}
			if e < 0 {
				cError(L, "unfinished string in data")
			}
			size = uint64(e) - pos + 1
			res = append(res, lua.LString(data[pos:e]))
		default:
			f.control(opt)
		}
		pos += size
	}
	for _, v := range res {
		L.Push(v)
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return len(res) + 1
}

func structSize(L *lua.LState) int {
	f := newStructFormat(L)
	var pos uint64
	for f.more() {
		opt := f.next()
		size := f.optsize(opt)
		pos += f.toalign(pos, opt, size)
		if opt == 's' {
			cArgError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			cArgError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}

// ---- Lua 5.1's C API argument checks, for the libraries above ----
//
// gopher-lua's own (L.CheckNumber and the like) word their errors
// differently ("bad argument #1 to pack (number expected, got nil)") and
// read numbers from strings differently. Unlike format.go's argError,
// these name the function as its caller did (luaL_argerror asks the call
// site: 'p' for local p = struct.pack, '?' under pcall), and take no
// position when a Go function (pcall) called them, as luaL_error does.

// cArgError is luaL_argerror: the function is named as the caller named
// it ('?' when that is not known, as for a function called by pcall).
func cArgError(L *lua.LState, n int, msg string) {
	name := "?"
	if dbg, ok := L.GetStack(0); ok {
		if _, err := L.GetInfo("n", dbg, lua.LNil); err == nil && dbg.Name != "" && dbg.Name != "(anonymous)" && dbg.Name[0] != '<' {
			name = dbg.Name
		}
	}
	cError(L, "bad argument #%d to '%s' (%s)", n, name, msg)
}

// cError is luaL_error: the message is prefixed with the position of the
// calling Lua code, none when a C function (pcall) is the caller.
func cError(L *lua.LState, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("S", dbg, lua.LNil); err == nil && dbg.What == "G" {
			L.Error(lua.LString(msg), 0)
		}
	}
	L.RaiseError("%s", msg)
}

// cTypeError is luaL_typerror; ok is false for an argument not passed.
func cTypeError(L *lua.LState, n int, want string, v lua.LValue, ok bool) {
	got := "no value"
	if ok {
		got = v.Type().String()
	}
	cArgError(L, n, want+" expected, got "+got)
}

// toNumberArg is luaL_checknumber on the value v of argument n.
func toNumberArg(L *lua.LState, n int, v lua.LValue, ok bool) float64 {
	if ok {
		if f, ok := toNumber(v); ok {
			return f
		}
	}
	cTypeError(L, n, "number", v, ok)
	return 0
}

// toStringArg is luaL_checklstring on the value v of argument n.
func toStringArg(L *lua.LState, n int, v lua.LValue, ok bool) string {
	if ok {
		switch v := v.(type) {
		case lua.LString:
			return string(v)
		case lua.LNumber:
			return number14g(float64(v))
		}
	}
	cTypeError(L, n, "string", v, ok)
	return ""
}

func cCheckString(L *lua.LState, n int) string {
	return toStringArg(L, n, L.Get(n), n <= L.GetTop())
}

func cCheckNumber(L *lua.LState, n int) float64 {
	return toNumberArg(L, n, L.Get(n), n <= L.GetTop())
}

// cCheckInteger is luaL_checkinteger: the number cast to C's long.
func cCheckInteger(L *lua.LState, n int) int64 {
	return cvttsd2si(cCheckNumber(L, n))
}

// cOptInteger is luaL_optinteger.
func cOptInteger(L *lua.LState, n int, def int64) int64 {
	if n > L.GetTop() || L.Get(n) == lua.LNil {
		return def
	}
	return cCheckInteger(L, n)
}
