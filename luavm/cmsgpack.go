package luavm

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// ---- cmsgpack (lua-cmsgpack 0.4.0, as bundled in Redis) ----
//
// cmsgpack.pack(...) encodes its arguments, one MessagePack object each,
// into one string; cmsgpack.unpack(s) decodes every object in s,
// unpack_one(s [, offset]) the first one at offset (0-based) and
// unpack_limit(s, limit [, offset]) up to limit of them, both returning
// first the offset just past what they read (-1 at the end of s).
//
// Encoding, as the C library does it on Lua 5.1: a number whose value a
// 64-bit integer holds is the smallest integer format that holds it, any
// other a float 32 if that loses nothing, else a float 64; a string is a
// str 8/16/32 (fixstr under 32 bytes; no bin types); a table is an array
// when its keys are exactly 1..n (n < 2^31; the empty table too), else a
// map; tables nested 16 deep, functions, userdata (cjson.null too) and nil
// are nil. Decoding knows the same subset (no bin, ext or 0xc1: "Bad data
// format in input."), makes arrays and maps tables, and unsigned 64-bit
// integers past 2^63 negative, as lua_pushinteger does.
//
// Lua 5.1 lets a C function use at most 8000 stack slots; the library's
// stack checks fail past that with "stack overflow (...)", which bounds
// what unpack returns at once and how deep what it decodes nests. The
// slots are counted here as the C code uses them, so that the same input
// fails the same way.
//
// A map's pairs are written in the order Lua 5.1's lua_next gives them,
// rebuilt by lua51table.go.

const (
	mpMaxNesting = 16 // LUACMSGPACK_MAX_NESTING
	mpErrEOF     = 1  // MP_CUR_ERROR_EOF
	mpErrBadFmt  = 2  // MP_CUR_ERROR_BADFMT
)

func (vm *VM) cmsgpackLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(vm.mpPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		return vm.mpUnpackFull(L, L.GetTop(), 0, 0)
	}))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := cOptInteger(L, 2, 0)
		return vm.mpUnpackFull(L, min(L.GetTop(), 1), 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := cCheckInteger(L, 2)
		offset := cOptInteger(L, 3, 0)
		return vm.mpUnpackFull(L, min(L.GetTop(), 1), limit, offset)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// checkStack is luaL_checkstack for a C function using slots stack slots.
func checkStack(L *lua.LState, slots, space int, msg string) {
	if space > luaMaxCStack || slots+space > luaMaxCStack {
		cError(L, "stack overflow (%s)", msg)
	}
}

// ---- encoding ----

type mpEncoder struct {
	L     *lua.LState
	pre   *presizes                   // the constructors' tables (presize.go)
	ro    map[*lua.LTable]*lua.LTable // read-only proxies: encoded as their tables
	b     []byte
	limit int
	slots int // the C function's stack slots in use
	peak  int // the most slots a stack check has asked for, in this table
	nodes int // values encoded, for the periodic checks
	// Nothing runs Lua code while pack encodes, so a table encodes the
	// same each time it is met at the same level: its shape and pairs
	// are worked out once, and its bytes are copied when it is met again
	// (a table holding itself k times, nested 16 deep, is k^16 objects).
	info map[*lua.LTable]*mpTable
	done map[mpAt]mpBytes
}

// mpTable is a table as pack sees it: an array's values, or a map's pairs
// in Lua 5.1's order.
type mpTable struct {
	array      bool
	keys, vals []lua.LValue
}

type mpAt struct {
	t     *lua.LTable
	level int
}

// mpBytes is a table's encoding in the buffer, and the stack it needed
// beyond the slots in use when it started.
type mpBytes struct{ start, end, peak int }

func (vm *VM) mpPack(L *lua.LState) int {
	nargs := L.GetTop()
	if nargs == 0 {
		cArgError(L, 0, "MessagePack pack needs input.")
	}
	if nargs > luaMaxCStack || 2*nargs > luaMaxCStack { // lua_checkstack(L, nargs)
		cArgError(L, 0, "Too many arguments for MessagePack pack.")
	}
	e := &mpEncoder{L: L, ro: vm.roReal, limit: vm.sizeLimit(), slots: nargs, pre: &vm.presized,
		info: map[*lua.LTable]*mpTable{}, done: map[mpAt]mpBytes{}}
	for i := 1; i <= nargs; i++ {
		checkStack(L, e.slots, 1, "in function mp_check")
		e.slots++ // the argument's copy, popped by encode
		e.encode(L.Get(i), 0)
		e.slots++ // the encoded string, left for lua_concat
	}
	L.Push(lua.LString(e.b))
	return 1
}

// encode appends v, which the caller counted on the stack; it pops it.
func (e *mpEncoder) encode(v lua.LValue, level int) {
	e.nodes++
	if e.nodes&4095 == 0 {
		if ctx := e.L.Context(); ctx != nil && ctx.Err() != nil {
			cError(e.L, "%s", ctx.Err().Error())
		}
	}
	if len(e.b) > e.limit {
		cError(e.L, "not enough memory")
	}
	e.reserve(16)
	switch v := v.(type) {
	case lua.LString:
		e.bytes(string(v))
	case lua.LBool:
		if v {
			e.b = append(e.b, 0xc3)
		} else {
			e.b = append(e.b, 0xc2)
		}
	case lua.LNumber:
		e.number(float64(v))
	case *lua.LTable:
		if real := e.ro[v]; real != nil {
			v = real // Redis's read-only tables are the tables themselves
		}
		if level == mpMaxNesting {
			e.b = append(e.b, 0xc0)
		} else {
			e.table(v, level)
		}
	default:
		e.b = append(e.b, 0xc0)
	}
	e.slots--
}

func (e *mpEncoder) header(small, base byte, code8, code16, code32 byte, n uint64) {
	switch {
	case n < uint64(small):
		e.b = append(e.b, base|byte(n))
	case code8 != 0 && n <= 0xff:
		e.b = append(e.b, code8, byte(n))
	case n <= 0xffff:
		e.b = append(e.b, code16, byte(n>>8), byte(n))
	default:
		e.b = append(e.b, code32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (e *mpEncoder) bytes(s string) {
	if len(e.b)+len(s) > e.limit {
		cError(e.L, "not enough memory")
	}
	e.header(32, 0xa0, 0xd9, 0xda, 0xdb, uint64(len(s)))
	e.b = append(e.b, s...)
}

// isInt64 is IS_INT64_EQUIVALENT: (int64_t)x == x for a finite x.
func isInt64(x float64) bool {
	return !math.IsInf(x, 0) && float64(cvttsd2si(x)) == x
}

func (e *mpEncoder) number(n float64) {
	if isInt64(n) {
		e.integer(cvttsd2si(n))
		return
	}
	if f := float32(n); float64(f) == n {
		e.b = append(e.b, 0xca)
		e.b = binary.BigEndian.AppendUint32(e.b, math.Float32bits(f))
		return
	}
	e.b = append(e.b, 0xcb)
	e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(n))
}

func (e *mpEncoder) integer(n int64) {
	switch {
	case n >= 0 && n <= 127:
		e.b = append(e.b, byte(n))
	case n >= 0 && n <= 0xff:
		e.b = append(e.b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		e.b = append(e.b, 0xcd)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	case n >= 0 && n <= 0xffffffff:
		e.b = append(e.b, 0xce)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	case n >= 0:
		e.b = append(e.b, 0xcf)
		e.b = binary.BigEndian.AppendUint64(e.b, uint64(n))
	case n >= -32:
		e.b = append(e.b, byte(n))
	case n >= -128:
		e.b = append(e.b, 0xd0, byte(n))
	case n >= -32768:
		e.b = append(e.b, 0xd1)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	case n >= -2147483648:
		e.b = append(e.b, 0xd2)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.b = append(e.b, 0xd3)
		e.b = binary.BigEndian.AppendUint64(e.b, uint64(n))
	}
}

// tableArrayLen is table_is_an_array: the table's keys are exactly 1..n,
// each a number C's int holds; it returns n and whether they are.
func tableArrayLen(t *lua.LTable) (int, bool) {
	count, maxKey := 0, 0
	array := true
	luaNext(t, func(k, _ lua.LValue) bool {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || n > math.MaxInt32 || float64(n) != math.Trunc(float64(n)) {
			array = false
			return false
		}
		maxKey = max(maxKey, int(n))
		count++
		return true
	})
	return count, array && maxKey == count
}

// reserve makes room for n more bytes, doubling the buffer (append grows
// a big one by a quarter, copying it over and over).
func (e *mpEncoder) reserve(n int) {
	if cap(e.b)-len(e.b) >= n {
		return
	}
	b := make([]byte, len(e.b), max(2*cap(e.b), len(e.b)+n, 64))
	copy(b, e.b)
	e.b = b
}

// check is luaL_checkstack, noting the stack asked for.
func (e *mpEncoder) check(space int, msg string) {
	e.peak = max(e.peak, e.slots+space)
	checkStack(e.L, e.slots, space, msg)
}

func (e *mpEncoder) shape(t *lua.LTable) *mpTable {
	if m := e.info[t]; m != nil {
		return m
	}
	m := &mpTable{}
	if n, ok := tableArrayLen(t); ok {
		m.array = true
		m.vals = make([]lua.LValue, n)
		for j := range m.vals {
			m.vals[j] = rawGetInt(t, j+1) // past the array part's bound too
		}
	} else {
		lua51Pairs(t, e.pre, func(k, v lua.LValue) {
			m.keys = append(m.keys, k)
			m.vals = append(m.vals, v)
		})
	}
	e.info[t] = m
	return m
}

func (e *mpEncoder) table(t *lua.LTable, level int) {
	at := mpAt{t, level}
	base := e.slots
	if d, ok := e.done[at]; ok && base+d.peak <= luaMaxCStack {
		n := d.end - d.start
		if len(e.b)+n > e.limit {
			cError(e.L, "not enough memory")
		}
		e.reserve(n)
		e.b = append(e.b, e.b[d.start:d.end]...)
		e.peak = max(e.peak, base+d.peak)
		return
	}
	start, outerPeak := len(e.b), e.peak
	e.peak = base
	e.check(2, "in function table_is_an_array")
	m := e.shape(t)
	if m.array {
		e.header(16, 0x90, 0, 0xdc, 0xdd, uint64(len(m.vals)))
		e.check(1, "in function mp_encode_lua_table_as_array")
		for _, v := range m.vals {
			e.slots++
			e.encode(v, level+1)
		}
	} else {
		e.check(3, "in function mp_encode_lua_table_as_map")
		e.header(16, 0x80, 0, 0xde, 0xdf, uint64(len(m.keys)))
		for i, k := range m.keys {
			e.slots += 3 // lua_next's key and value, and the key's copy
			e.encode(k, level+1)
			e.encode(m.vals[i], level+1)
			e.slots-- // the key, popped by the next lua_next
		}
	}
	e.done[at] = mpBytes{start, len(e.b), e.peak - base}
	e.peak = max(outerPeak, e.peak)
}

// luaNext calls fn for each of t's pairs in gopher-lua's order (the array
// part, then the other keys as they were first set), until fn returns
// false.
func luaNext(t *lua.LTable, fn func(k, v lua.LValue) bool) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !fn(k, v) {
			return
		}
	}
}

// ---- decoding ----

type mpDecoder struct {
	vm    *VM
	L     *lua.LState
	s     string
	p     int
	err   int
	slots int
	nodes int // values decoded, for the periodic checks
	// room is what is left of the bytes the array parts' padding may take
	// in this call (see pad).
	room int
}

// pad accounts for storing integer key k into a table whose array part
// has alen slots (*alen, updated): gopher-lua pads the array part with
// nil up to k in one Go loop (arraycap.go), where Lua 5.1 puts a sparse
// key in the hash part. Seven bytes of input, a map of one key just below
// the array part's bound, cost 64 MB (160 MB at the peak), and an input
// of many such maps is one call the memory watchdog cannot interrupt. So
// the padding of one call, at padSlotBytes a slot, is bounded by the size
// limit (vm.sizeLimit, as string.rep's result is), past which unpack
// fails with "not enough memory". A dense array or map pads nothing: what
// this refuses holds millions of missing elements (Redis's unpack makes
// them a hash part).
func (d *mpDecoder) pad(alen *int, k lua.LNumber) {
	if !isArrayKey(k) || int(k) <= *alen {
		return
	}
	gap := int(k) - *alen - 1
	if gap > d.room/padSlotBytes {
		cError(d.L, "not enough memory")
	}
	d.room -= gap * padSlotBytes
	*alen = int(k)
}

func (d *mpDecoder) need(n uint64) bool {
	if uint64(len(d.s)-d.p) < n {
		d.err = mpErrEOF
		return false
	}
	return true
}

func (d *mpDecoder) be(off, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | uint64(d.s[d.p+off+i])
	}
	return v
}

// decode reads one object; on success the caller counts it on the stack.
// After an error (d.err) the value is meaningless.
func (d *mpDecoder) decode() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	checkStack(d.L, d.slots, 1, "too many return values at once; use unpack_one or unpack_limit instead.")
	// SCRIPT KILL and the memory bound stop a long decoding here, as
	// cjson.decode's
	if d.nodes++; d.nodes&4095 == 0 {
		if ctx := d.L.Context(); ctx != nil && ctx.Err() != nil {
			cError(d.L, "%s", ctx.Err().Error())
		}
	}
	c := d.s[d.p]
	// fixed-size objects: their length, and value
	fixed := func(n int, v lua.LValue) lua.LValue {
		if !d.need(uint64(n)) {
			return lua.LNil
		}
		d.p += n
		return v
	}
	str := func(hdr int) lua.LValue {
		if !d.need(uint64(hdr)) {
			return lua.LNil
		}
		l := d.be(1, hdr-1)
		if hdr == 5 { // raw 32 consumes its header first
			d.p += hdr
			if !d.need(l) {
				return lua.LNil
			}
			v := lua.LString(d.s[d.p : d.p+int(l)])
			d.p += int(l)
			return v
		}
		if !d.need(uint64(hdr) + l) {
			return lua.LNil
		}
		v := lua.LString(d.s[d.p+hdr : d.p+hdr+int(l)])
		d.p += hdr + int(l)
		return v
	}
	container := func(hdr int, isMap bool) lua.LValue {
		if !d.need(uint64(hdr)) {
			return lua.LNil
		}
		var l uint64
		if hdr == 1 {
			l = uint64(c & 0xf)
		} else {
			l = d.be(1, hdr-1)
		}
		d.p += hdr
		if isMap {
			return d.hash(l)
		}
		return d.array(l)
	}
	switch {
	case c == 0xcc:
		return fixed(2, lua.LNumber(d.s[d.p+1]))
	case c == 0xd0:
		return fixed(2, lua.LNumber(int8(d.s[d.p+1])))
	case c == 0xcd:
		if !d.need(3) {
			return lua.LNil
		}
		return fixed(3, lua.LNumber(d.be(1, 2)))
	case c == 0xd1:
		if !d.need(3) {
			return lua.LNil
		}
		return fixed(3, lua.LNumber(int16(d.be(1, 2))))
	case c == 0xce:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(d.be(1, 4)))
	case c == 0xd2:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(int32(d.be(1, 4))))
	case c == 0xcf, c == 0xd3: // lua_pushinteger / pushnumber of 64 bits: signed either way
		if !d.need(9) {
			return lua.LNil
		}
		return fixed(9, lua.LNumber(int64(d.be(1, 8))))
	case c == 0xc0:
		return fixed(1, lua.LNil)
	case c == 0xc3:
		return fixed(1, lua.LTrue)
	case c == 0xc2:
		return fixed(1, lua.LFalse)
	case c == 0xca:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(float64(math.Float32frombits(uint32(d.be(1, 4))))))
	case c == 0xcb:
		if !d.need(9) {
			return lua.LNil
		}
		return fixed(9, lua.LNumber(math.Float64frombits(d.be(1, 8))))
	case c == 0xd9:
		return str(2)
	case c == 0xda:
		return str(3)
	case c == 0xdb:
		return str(5)
	case c == 0xdc:
		return container(3, false)
	case c == 0xdd:
		return container(5, false)
	case c == 0xde:
		return container(3, true)
	case c == 0xdf:
		return container(5, true)
	case c&0x80 == 0: // positive fixnum
		return fixed(1, lua.LNumber(c))
	case c&0xe0 == 0xe0: // negative fixnum
		return fixed(1, lua.LNumber(int8(c)))
	case c&0xe0 == 0xa0: // fixstr
		l := int(c & 0x1f)
		if !d.need(uint64(1 + l)) {
			return lua.LNil
		}
		v := lua.LString(d.s[d.p+1 : d.p+1+l])
		d.p += 1 + l
		return v
	case c&0xf0 == 0x90:
		return container(1, false)
	case c&0xf0 == 0x80:
		return container(1, true)
	}
	d.err = mpErrBadFmt
	return lua.LNil
}

// newTable makes the table for an array or map of l entries, sized for
// no more entries than the rest of the input can hold.
func (d *mpDecoder) newTable(l uint64, isMap bool) *lua.LTable {
	n := int(min(l, uint64(len(d.s)-d.p), 1024))
	if isMap {
		return d.L.CreateTable(0, n)
	}
	return d.L.CreateTable(n, 0)
}

func (d *mpDecoder) array(l uint64) lua.LValue {
	t := d.newTable(l, false)
	d.slots++ // the table
	checkStack(d.L, d.slots, 1, "in function mp_decode_to_lua_array")
	alen := 0 // the array part's slots
	for i := 1; uint64(i) <= l; i++ {
		d.slots++ // the index
		v := d.decode()
		if d.err != 0 {
			return t
		}
		if v != lua.LNil {
			d.pad(&alen, lua.LNumber(i)) // after nils
			t.RawSetInt(i, v)
		}
		d.slots--
	}
	d.slots--
	return t
}

func (d *mpDecoder) hash(l uint64) lua.LValue {
	t := d.newTable(l, true)
	d.slots++
	alen := 0 // the array part's slots
	for ; l > 0; l-- {
		k := d.decode()
		if d.err != 0 {
			return t
		}
		d.slots++
		v := d.decode()
		if d.err != 0 {
			return t
		}
		// lua_settable's errors carry no position (luaG_runerror in a C
		// function); the reply still names the script's line.
		switch k := k.(type) {
		case *lua.LNilType:
			d.vm.raise(d.L, lua.LString("table index is nil"))
		case lua.LNumber:
			if k != k {
				d.vm.raise(d.L, lua.LString("table index is NaN"))
			}
			if v != lua.LNil {
				d.pad(&alen, k)
			}
		}
		if v != lua.LNil || t.RawGet(k) != lua.LNil {
			t.RawSet(k, v)
		}
		d.slots--
	}
	d.slots--
	return t
}

// mpUnpackFull is mp_unpack_full; slots is the stack the function has
// left of its arguments. limit 0 and offset 0 decode everything and
// return no offset.
func (vm *VM) mpUnpackFull(L *lua.LState, slots int, limit, offset int64) int {
	s := cCheckString(L, 1)
	if offset < 0 || limit < 0 {
		cError(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if uint64(offset) > uint64(len(s)) {
		cError(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	d := &mpDecoder{vm: vm, L: L, s: s, p: int(offset), slots: slots, room: vm.sizeLimit()}
	var res []lua.LValue
	for cnt := int64(0); d.p < len(s) && cnt < limit; cnt++ {
		v := d.decode()
		switch d.err {
		case mpErrEOF:
			cError(L, "Missing bytes in input.")
		case mpErrBadFmt:
			cError(L, "Bad data format in input.")
		}
		d.slots++
		res = append(res, v)
	}
	if !all {
		checkStack(L, d.slots, 1, "in function mp_unpack_full")
		next := int64(d.p)
		if d.p == len(s) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range res {
		L.Push(v)
	}
	if all {
		return len(res)
	}
	return len(res) + 1
}
