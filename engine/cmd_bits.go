package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

// The string commands that address bits and byte ranges of a value, as
// Redis 7.0's src/bitops.c and t_string.c (SETRANGE, LCS): SETRANGE,
// GETBIT, SETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO, LCS.
//
// Writes. Redis changes a string's sds in place (dbUnshareStringValue
// first makes it a private "raw" object). Here a value's bytes change
// only where no reader can hold them (str hands them out as strings, and
// a script's Lua string keeps them; grownString), so a write builds the
// new value in a new entry, in
// one allocation and one copy of the old bytes (newRawEntry), and puts it
// in the old one's place with its TTL. Like Redis's unshare, the new entry
// is a "raw" string, even when nothing changed (SETBIT of a bit to its
// value on an "int" string); a value already "raw" that does not change is
// left alone. A value is at most proto-max-bulk-len bytes, and never past
// what an entry holds (4 GB).
func registerBits(e *Engine) {
	e.Register(
		&Command{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdSetRange},
		&Command{Name: "lcs", Arity: -3, Flags: FlagReadonly, FirstKey: 1, LastKey: 2, Step: 1, Group: "string", Fn: cmdLCS},
		&Command{Name: "getbit", Arity: 3, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdGetBit},
		&Command{Name: "setbit", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdSetBit},
		&Command{Name: "bitcount", Arity: -2, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdBitCount},
		&Command{Name: "bitpos", Arity: -3, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdBitPos},
		&Command{Name: "bitop", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", Fn: cmdBitOp},
		&Command{Name: "bitfield", Arity: -2, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdBitField},
		&Command{Name: "bitfield_ro", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Fn: cmdBitFieldRO},
	)
}

// Error texts of these commands, verbatim from Redis 7.0 (bitops.c,
// t_string.c). (Here rather than in errors.go, which other work edits.)
const (
	ErrBitOffset      = "ERR bit offset is not an integer or out of range"
	ErrBitValue       = "ERR bit is not an integer or out of range"
	ErrOffsetRange    = "ERR offset is out of range"
	ErrBitArg         = "ERR The bit argument must be 1 or 0."
	ErrBitopNot       = "ERR BITOP NOT must be called with a single source key."
	ErrBitfieldType   = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrBitfieldOFType = "ERR Invalid OVERFLOW type specified"
	ErrBitfieldRO     = "ERR BITFIELD_RO only supports the GET subcommand"
	ErrLCSType        = "ERR The specified keys must contain string values"
	ErrLCSLenAndIdx   = "ERR If you want both the length and indexes, please just use IDX."
	ErrLCSTooLong     = "ERR String too long for LCS"
	ErrLCSMemLimit    = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	ErrLCSAlloc       = "ERR Insufficient memory, failed allocating transient memory for LCS"
)

// maxBulkLen is proto-max-bulk-len, Redis's largest string.
func (e *Engine) maxBulkLen() int64 {
	if n := e.maxString.Load(); n > 0 {
		return n
	}
	return 512 << 20
}

// lengthFits is Redis's checkStringLength: a string of offset+add bytes
// is within proto-max-bulk-len (offset and add are not negative; their
// sum may not overflow).
func (e *Engine) lengthFits(offset, add int64) bool {
	limit := e.maxBulkLen()
	return add <= limit && offset <= limit-add
}

// strBytes views s as bytes, for reading only.
func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// isRaw reports whether ent, a string, is already what Redis's
// dbUnshareStringValue makes: a private "raw" object.
func isRaw(ent *entry) bool {
	enc, _ := stringEncoding(ent)
	return enc == "raw"
}

// maxEntryValue is the most bytes an entry's value holds (vlen).
const maxEntryValue = math.MaxUint32

// newRawEntry returns an entry for key holding a "raw" string of n bytes:
// prefix, then zeros. It is not stored yet; its value bytes, returned,
// may be written until it is. n must not exceed maxEntryValue.
func newRawEntry(key []byte, prefix string, n int) (*entry, []byte) {
	checkEntrySize(key, nil)
	ent := allocObjEntry(len(key) + n) // zeroed
	*(**object)(unsafe.Add(unsafe.Pointer(ent), entryHeader)) = &object{kind: KindString, v: rawString{}}
	ent.klen, ent.vlen = uint32(len(key))|entryHasObj, uint32(n)
	b := unsafe.Slice((*byte)(ent.data()), len(key)+n)
	copy(b, key)
	copy(b[len(key):], prefix)
	return ent, b[len(key):]
}

// storeEdit puts nu, the new value of a key whose entry was old (nil: a
// new key), in its place, keeping the TTL (Redis's dbAdd, or
// dbOverwrite of an unshared value). It reports no modification: the
// caller does, when Redis signals one.
func (e *Engine) storeEdit(old, nu *entry) {
	if old == nil {
		e.putNew(nu)
	} else {
		e.replaceEntry(old, nu, old.deadline)
	}
}

// editString readies the string of key, whose entry is old (nil: a new
// key) and value cur, for an edit that leaves it size bytes long (size >=
// len(cur); the new bytes zero), as Redis's lookupStringForBitCommand and
// SETRANGE do: in place when old allows it (entry.editable), else in a
// new entry with the room Redis's sds would have (a new key's exact
// size; a value growing, sdsgrowzero's greedy room). It returns the entry
// and its value bytes, for the caller to write; fresh says the entry is
// new: storeEdit puts it in old's place.
func editString(key []byte, old *entry, cur string, size int) (ent *entry, b []byte, fresh bool) {
	if old != nil {
		if b := old.editable(size); b != nil {
			return old, b, false
		}
	}
	room := size
	if old != nil && size > len(cur) {
		room = greedyRoom(size)
	}
	ent, b = newEditableEntry(key, cur, size, room)
	return ent, b, true
}

// lookupWriteString is lookupKeyWrite plus checkType: the key's entry (nil
// when missing), or false after replying WRONGTYPE.
func lookupWriteString(c *Ctx, key []byte) (*entry, bool) {
	ent := c.Eng.lookup(key, c.Now)
	if ent != nil && ent.kind() != KindString {
		c.W.WriteError(ErrWrongType)
		return nil, false
	}
	return ent, true
}

// bitOffset is Redis's getBitOffsetFromArgument: a bit offset, not
// negative, whose byte lies within proto-max-bulk-len. With hash (BITFIELD)
// "#N" means N times width.
func bitOffset(c *Ctx, arg []byte, hash bool, width int) (uint64, bool) {
	useHash := hash && width > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	off, ok := parseInt(arg)
	if ok && useHash {
		off *= int64(width) // wraps as Redis's long long does
	}
	if !ok || off < 0 || off>>3 >= c.Eng.maxBulkLen() {
		c.W.WriteError(ErrBitOffset)
		return 0, false
	}
	return uint64(off), true
}

// ---- SETRANGE ----

// SETRANGE key offset value
func cmdSetRange(c *Ctx) {
	key, val := c.Args[1], c.Args[3]
	offset, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if offset < 0 {
		c.W.WriteError(ErrOffsetRange)
		return
	}
	old, ok := lookupWriteString(c, key)
	if !ok {
		return
	}
	var cur string
	if old != nil {
		cur = old.str()
	}
	if len(val) == 0 {
		// nothing to set: the length, and a missing key is not made
		c.W.WriteInt(int64(len(cur)))
		return
	}
	if !c.Eng.lengthFits(offset, int64(len(val))) || offset+int64(len(val)) > maxEntryValue {
		c.W.WriteError(ErrStringTooLong)
		return
	}
	size := max(int64(len(cur)), offset+int64(len(val)))
	nu, b, fresh := editString(key, old, cur, int(size))
	copy(b[offset:], val)
	if fresh {
		c.Eng.storeEdit(old, nu)
	}
	c.Eng.modified(nu.key())
	c.Eng.notify(NotifyString, "setrange", nu.key())
	c.Eng.dirty++
	c.W.WriteInt(size)
}

// ---- GETBIT / SETBIT ----

// bitAt is bit off of s, 0 beyond its end (bit 0 is the most significant
// bit of the first byte).
func bitAt(s string, off uint64) int64 {
	if i := off >> 3; i < uint64(len(s)) {
		return int64(s[i]>>(7-off&7)) & 1
	}
	return 0
}

// GETBIT key offset
func cmdGetBit(c *Ctx) {
	off, ok := bitOffset(c, c.Args[2], false, 0)
	if !ok {
		return
	}
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(bitAt(ent.str(), off))
}

// SETBIT key offset value
//
// The reply is the bit's old value. As Redis, a command that neither
// makes nor grows the string nor flips the bit is no modification (no
// event, no WATCH or tracking invalidation), but still leaves the value
// "raw".
func cmdSetBit(c *Ctx) {
	key := c.Args[1]
	off, ok := bitOffset(c, c.Args[2], false, 0)
	if !ok {
		return
	}
	on, ok := parseInt(c.Args[3])
	if !ok || on&^1 != 0 {
		c.W.WriteError(ErrBitValue)
		return
	}
	old, ok := lookupWriteString(c, key)
	if !ok {
		return
	}
	var cur string
	if old != nil {
		cur = old.str()
	}
	size := max(uint64(len(cur)), off>>3+1)
	if size > maxEntryValue {
		c.W.WriteError(ErrStringTooLong)
		return
	}
	prev := bitAt(cur, off)
	changed := old == nil || size != uint64(len(cur)) || prev != on
	if changed || !isRaw(old) {
		nu, b, fresh := editString(key, old, cur, int(size))
		mask := byte(1) << (7 - off&7)
		if on == 1 {
			b[off>>3] |= mask
		} else {
			b[off>>3] &^= mask
		}
		if fresh {
			c.Eng.storeEdit(old, nu)
		}
		if changed {
			c.Eng.modified(nu.key())
			c.Eng.notify(NotifyString, "setbit", nu.key())
			c.Eng.dirty++
		}
	}
	c.W.WriteInt(prev)
}

// ---- BITCOUNT / BITPOS ----

// popcount counts the set bits of b, eight bytes at a time.
func popcount(b []byte) int64 {
	n := 0
	for len(b) >= 32 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b)) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[8:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[16:])) +
			bits.OnesCount64(binary.LittleEndian.Uint64(b[24:]))
		b = b[32:]
	}
	for len(b) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return int64(n)
}

// edgeMasks are the bits of the first and the last byte of the bit range
// [sb, eb] that lie inside it.
func edgeMasks(sb, eb int64) (head, tail byte) {
	return 0xff >> (sb & 7), 0xff << (7 - eb&7)
}

// countRange counts the set bits of b in the bit range [sb, eb], which
// lies within b.
func countRange(b []byte, sb, eb int64) int64 {
	fb, lb := sb>>3, eb>>3
	head, tail := edgeMasks(sb, eb)
	n := popcount(b[fb : lb+1])
	// the bits of the edge bytes outside the range (disjoint even when
	// fb == lb)
	return n - int64(bits.OnesCount8(b[fb]&^head)+bits.OnesCount8(b[lb]&^tail))
}

// firstBit returns the position of the first bit of b equal to bit,
// searching eight bytes at a time, or -1.
func firstBit(b []byte, bit int64) int64 {
	var flip uint64
	if bit == 0 {
		flip = math.MaxUint64
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if w := binary.BigEndian.Uint64(b[i:]) ^ flip; w != 0 {
			return int64(i)*8 + int64(bits.LeadingZeros64(w))
		}
	}
	for ; i < len(b); i++ {
		if x := b[i] ^ byte(flip); x != 0 {
			return int64(i)*8 + int64(bits.LeadingZeros8(x))
		}
	}
	return -1
}

// findBit returns the position of the first bit equal to bit in the bit
// range [sb, eb] of b, which lies within b, or -1.
func findBit(b []byte, sb, eb int64, bit int64) int64 {
	var flip byte
	if bit == 0 {
		flip = 0xff
	}
	fb, lb := sb>>3, eb>>3
	head, tail := edgeMasks(sb, eb)
	if fb == lb {
		head &= tail
	}
	if x := (b[fb] ^ flip) & head; x != 0 {
		return fb*8 + int64(bits.LeadingZeros8(x))
	}
	if fb == lb {
		return -1
	}
	if p := firstBit(b[fb+1:lb], bit); p >= 0 {
		return (fb+1)*8 + p
	}
	if x := (b[lb] ^ flip) & tail; x != 0 {
		return lb*8 + int64(bits.LeadingZeros8(x))
	}
	return -1
}

// bitRange turns BITCOUNT's and BITPOS's start and end (byte or bit
// indexes, negative from the end) into an inclusive bit range of a string
// of n bytes, as Redis clamps them; ok is false for an empty range.
func bitRange(start, end int64, isBit bool, n int64) (sb, eb int64, ok bool) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, total-1)
	if start > end {
		return 0, 0, false
	}
	if isBit {
		return start, end, true
	}
	return start * 8, end*8 + 7, true
}

// parseBitUnit reads BITCOUNT's and BITPOS's BIT|BYTE.
func parseBitUnit(c *Ctx, arg []byte) (isBit, ok bool) {
	switch {
	case eqFold(arg, "bit"):
		return true, true
	case eqFold(arg, "byte"):
		return false, true
	}
	c.W.WriteError(ErrSyntax)
	return false, false
}

// BITCOUNT key [start end [BYTE|BIT]]
//
// As Redis, a missing key counts 0 before the arguments are read.
func cmdBitCount(c *Ctx) {
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	s := strBytes(ent.str())
	start, end := int64(0), int64(len(s)-1)
	isBit := false
	switch len(c.Args) {
	case 2:
	case 4, 5:
		var ok1, ok2 bool
		if start, ok1 = parseInt(c.Args[2]); !ok1 {
			c.W.WriteError(ErrNotInteger)
			return
		}
		if end, ok2 = parseInt(c.Args[3]); !ok2 {
			c.W.WriteError(ErrNotInteger)
			return
		}
		if start < 0 && end < 0 && start > end {
			c.W.WriteInt(0) // before the unit is read
			return
		}
		if len(c.Args) == 5 {
			if isBit, ok = parseBitUnit(c, c.Args[4]); !ok {
				return
			}
		}
	default:
		c.W.WriteError(ErrSyntax)
		return
	}
	sb, eb, ok := bitRange(start, end, isBit, int64(len(s)))
	if !ok {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(countRange(s, sb, eb))
}

// BITPOS key bit [start [end [BYTE|BIT]]]
//
// A missing key is all zeros: 0 for a clear bit, -1 for a set one. When
// no clear bit is found and no end was given, the string counts as
// padded with zeros: the reply is the first bit past the range.
func cmdBitPos(c *Ctx) {
	bit, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if bit != 0 && bit != 1 {
		c.W.WriteError(ErrBitArg)
		return
	}
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteInt(-bit) // 0 for a clear bit, -1 for a set one
		return
	}
	s := strBytes(ent.str())
	start, end := int64(0), int64(len(s)-1)
	isBit, endGiven := false, false
	switch n := len(c.Args); n {
	case 3:
	case 4, 5, 6:
		if start, ok = parseInt(c.Args[3]); !ok {
			c.W.WriteError(ErrNotInteger)
			return
		}
		if n == 6 {
			if isBit, ok = parseBitUnit(c, c.Args[5]); !ok {
				return
			}
		}
		if n >= 5 {
			if end, ok = parseInt(c.Args[4]); !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			endGiven = true
		}
	default:
		c.W.WriteError(ErrSyntax)
		return
	}
	sb, eb, ok := bitRange(start, end, isBit, int64(len(s)))
	if !ok {
		c.W.WriteInt(-1) // an empty range holds neither bit
		return
	}
	pos := findBit(s, sb, eb, bit)
	if pos < 0 && bit == 0 && !endGiven {
		pos = eb + 1
	}
	c.W.WriteInt(pos)
}

// ---- BITOP ----

const (
	bitopAnd = iota
	bitopOr
	bitopXor
	bitopNot
)

// bitop computes op over srcs into dst, which is as long as the longest
// source and zeroed; shorter sources count as padded with zeros. It
// works eight bytes at a time.
func bitop(op int, dst []byte, srcs [][]byte) {
	copy(dst, srcs[0])
	if op == bitopNot {
		i := 0
		for ; i+8 <= len(dst); i += 8 {
			binary.LittleEndian.PutUint64(dst[i:], ^binary.LittleEndian.Uint64(dst[i:]))
		}
		for ; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
		return
	}
	for _, src := range srcs[1:] {
		i := 0
		for ; i+8 <= len(src); i += 8 {
			d, s := binary.LittleEndian.Uint64(dst[i:]), binary.LittleEndian.Uint64(src[i:])
			switch op {
			case bitopAnd:
				d &= s
			case bitopOr:
				d |= s
			case bitopXor:
				d ^= s
			}
			binary.LittleEndian.PutUint64(dst[i:], d)
		}
		for ; i < len(src); i++ {
			switch op {
			case bitopAnd:
				dst[i] &= src[i]
			case bitopOr:
				dst[i] |= src[i]
			case bitopXor:
				dst[i] ^= src[i]
			}
		}
		if op == bitopAnd {
			clear(dst[len(src):]) // x AND the zero padding
		}
	}
}

// BITOP <AND | OR | XOR | NOT> destkey key [key ...]
//
// The reply is the result's length. An empty result deletes destkey;
// otherwise it replaces destkey (of any type) without a TTL, as SET.
func cmdBitOp(c *Ctx) {
	var op int
	switch name := c.Args[1]; {
	case eqFold(name, "and"):
		op = bitopAnd
	case eqFold(name, "or"):
		op = bitopOr
	case eqFold(name, "xor"):
		op = bitopXor
	case eqFold(name, "not"):
		op = bitopNot
	default:
		c.W.WriteError(ErrSyntax)
		return
	}
	if op == bitopNot && len(c.Args) != 4 {
		c.W.WriteError(ErrBitopNot)
		return
	}
	dest := c.Args[2]
	srcs := make([][]byte, len(c.Args)-3)
	maxLen := 0
	for i, key := range c.Args[3:] {
		ent, ok := getString(c, key) // missing: an empty string
		if !ok {
			return
		}
		if ent != nil {
			srcs[i] = strBytes(ent.str())
			maxLen = max(maxLen, len(srcs[i]))
		}
	}
	e := c.Eng
	if maxLen == 0 {
		if e.del(dest, c.Now) { // publishes "del" and reports the key modified, if it was there
			e.dirty++
		}
		c.W.WriteInt(0)
		return
	}
	nu, b := newRawEntry(dest, "", maxLen)
	bitop(op, b, srcs)
	if old := e.lookup(dest, c.Now); old == nil {
		e.putNew(nu)
	} else {
		e.replaceEntry(old, nu, 0) // setKey: the TTL goes
	}
	e.modified(nu.key())
	e.notify(NotifyString, "set", nu.key())
	e.dirty++
	c.W.WriteInt(int64(maxLen))
}

// ---- BITFIELD ----

// BITFIELD's operations and overflow behaviours.
const (
	bfGet = iota
	bfSet
	bfIncrBy
)

const (
	bfWrap = iota
	bfSat
	bfFail
)

type bfOp struct {
	offset uint64
	value  int64 // SET's value, INCRBY's increment
	op     int
	ow     int
	width  int
	signed bool
}

// bitfieldType is Redis's getBitfieldTypeFromArgument: i1..i64 or
// u1..u63. The width is read as a C string (it ends at a NUL byte).
func bitfieldType(c *Ctx, arg []byte) (signed bool, width int, ok bool) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		c.W.WriteError(ErrBitfieldType)
		return false, 0, false
	}
	signed = arg[0] == 'i'
	w := arg[1:]
	if i := bytes.IndexByte(w, 0); i >= 0 {
		w = w[:i]
	}
	n, ok := parseInt(w)
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		c.W.WriteError(ErrBitfieldType)
		return false, 0, false
	}
	return signed, int(n), true
}

// getBits reads width bits at bit offset off of b as an unsigned number;
// bits past b's end read as zeros.
func getBits(b []byte, off uint64, width int) uint64 {
	var v uint64
	for j := 0; j < width; j++ {
		var bit uint64
		if i := off >> 3; i < uint64(len(b)) {
			bit = uint64(b[i]>>(7-off&7)) & 1
		}
		v = v<<1 | bit
		off++
	}
	return v
}

// getSignedBits reads width bits at off as a two's complement number.
func getSignedBits(b []byte, off uint64, width int) int64 {
	v := getBits(b, off, width)
	if width < 64 && v&(1<<(width-1)) != 0 {
		v |= math.MaxUint64 << width
	}
	return int64(v)
}

// setBits writes the low width bits of v at bit offset off of b, which
// holds them.
func setBits(b []byte, off uint64, width int, v uint64) {
	for j := 0; j < width; j++ {
		i, mask := off>>3, byte(1)<<(7-off&7)
		if v>>(width-1-j)&1 != 0 {
			b[i] |= mask
		} else {
			b[i] &^= mask
		}
		off++
	}
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether
// value+incr overflows (1) or underflows (-1) a width-bit unsigned
// number, and the value to store then with WRAP or SAT. Its arithmetic
// wraps as Redis's C does.
func unsignedOverflow(value uint64, incr int64, width int, ow int) (limit uint64, over int) {
	maxv := uint64(1)<<width - 1 // width <= 63
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	switch {
	case value > maxv || (incr > 0 && incr > maxIncr):
		over, limit = 1, maxv
	case incr < 0 && incr < minIncr:
		over, limit = -1, 0
	default:
		return 0, 0
	}
	if ow == bfWrap {
		limit = (value + uint64(incr)) & maxv
	}
	return limit, over
}

// signedOverflow is Redis's checkSignedBitfieldOverflow, its arithmetic
// wrapping as Redis's C does (so a SET of a value far below the range
// saturates at the maximum, as in Redis).
func signedOverflow(value, incr int64, width int, ow int) (limit int64, over int) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	switch {
	case value > maxv || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		over, limit = 1, maxv
	case value < minv || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		over, limit = -1, minv
	default:
		return 0, 0
	}
	if ow == bfWrap {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := uint64(math.MaxUint64) << width
			if c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		limit = int64(c)
	}
	return limit, over
}

// BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset value | [OVERFLOW WRAP|SAT|FAIL] INCRBY type offset increment ...]
func cmdBitField(c *Ctx) { bitfieldGeneric(c, false) }

// BITFIELD_RO key [GET type offset ...]
func cmdBitFieldRO(c *Ctx) { bitfieldGeneric(c, true) }

// bitfieldGeneric is Redis's bitfieldGeneric. Every operation is read
// first (an error in any leaves the key alone); the reply holds one entry
// an operation: GET's value, SET's old value, INCRBY's new one, or a null
// for a write that overflows under OVERFLOW FAIL. Writes grow the string
// to the farthest bit they reach, even when all of them fail.
func bitfieldGeneric(c *Ctx, readOnly bool) {
	args := c.Args
	var ops []bfOp
	ow := bfWrap
	writes := false
	var highest uint64 // the farthest bit a write reaches
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		var op int
		switch sub := args[j]; {
		case eqFold(sub, "get") && rem >= 2:
			op = bfGet
		case eqFold(sub, "set") && rem >= 3:
			op = bfSet
		case eqFold(sub, "incrby") && rem >= 3:
			op = bfIncrBy
		case eqFold(sub, "overflow") && rem >= 1:
			j++
			switch name := args[j]; {
			case eqFold(name, "wrap"):
				ow = bfWrap
			case eqFold(name, "sat"):
				ow = bfSat
			case eqFold(name, "fail"):
				ow = bfFail
			default:
				c.W.WriteError(ErrBitfieldOFType)
				return
			}
			continue
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
		signed, width, ok := bitfieldType(c, args[j+1])
		if !ok {
			return
		}
		off, ok := bitOffset(c, args[j+2], true, width)
		if !ok {
			return
		}
		var v int64
		if op != bfGet {
			writes = true
			highest = max(highest, off+uint64(width)-1)
			if v, ok = parseInt(args[j+3]); !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			j++
		}
		ops = append(ops, bfOp{offset: off, value: v, op: op, ow: ow, width: width, signed: signed})
		j += 2
	}

	key := args[1]
	var old, nu *entry
	var b []byte // the value the operations read and write
	dirty, fresh := false, false
	if !writes {
		ent, ok := getString(c, key)
		if !ok {
			return
		}
		if ent != nil {
			b = strBytes(ent.str())
		}
	} else {
		if readOnly {
			c.W.WriteError(ErrBitfieldRO)
			return
		}
		var ok bool
		if old, ok = lookupWriteString(c, key); !ok {
			return
		}
		var cur string
		if old != nil {
			cur = old.str()
		}
		size := max(uint64(len(cur)), highest>>3+1)
		if size > maxEntryValue {
			c.W.WriteError(ErrStringTooLong)
			return
		}
		dirty = old == nil || size != uint64(len(cur))
		// in place, or a copy stored below only if something changed
		nu, b, fresh = editString(key, old, cur, int(size))
	}

	changes := 0
	c.W.WriteArray(len(ops))
	for _, o := range ops {
		if o.op == bfGet {
			if o.signed {
				c.W.WriteInt(getSignedBits(b, o.offset, o.width))
			} else {
				c.W.WriteInt(int64(getBits(b, o.offset, o.width)))
			}
			continue
		}
		var oldVal, newVal, reply uint64
		var over int
		if o.signed {
			ov := getSignedBits(b, o.offset, o.width)
			var nv, lim int64
			if o.op == bfIncrBy {
				lim, over = signedOverflow(ov, o.value, o.width, o.ow)
				nv = ov + o.value
				if over != 0 {
					nv = lim
				}
				reply = uint64(nv)
			} else {
				nv = o.value
				if lim, over = signedOverflow(nv, 0, o.width, o.ow); over != 0 {
					nv = lim
				}
				reply = uint64(ov)
			}
			oldVal, newVal = uint64(ov), uint64(nv)
		} else {
			oldVal = getBits(b, o.offset, o.width)
			var lim uint64
			if o.op == bfIncrBy {
				newVal = oldVal + uint64(o.value)
				if lim, over = unsignedOverflow(oldVal, o.value, o.width, o.ow); over != 0 {
					newVal = lim
				}
				reply = newVal
			} else {
				newVal = uint64(o.value)
				if lim, over = unsignedOverflow(newVal, 0, o.width, o.ow); over != 0 {
					newVal = lim
				}
				reply = oldVal
			}
		}
		if over != 0 && o.ow == bfFail {
			c.W.WriteNull()
			continue
		}
		c.W.WriteInt(int64(reply))
		setBits(b, o.offset, o.width, newVal)
		if dirty || oldVal != newVal {
			changes++
		}
	}

	if nu == nil {
		return
	}
	if fresh && (dirty || changes > 0 || !isRaw(old)) {
		c.Eng.storeEdit(old, nu)
	}
	if changes > 0 {
		c.Eng.modified(nu.key())
		c.Eng.notify(NotifyString, "setbit", nu.key())
		c.Eng.dirty += int64(changes)
	}
}

// ---- LCS ----

// maxLCSTable is the largest LCS table allocated (bytes), whatever
// proto-max-bulk-len allows (by default 512 MB, so it is never reached).
const maxLCSTable = 4 << 30

// lcsRange is one match LCS IDX reports: a[aStart..aEnd] equals
// b[bStart..bEnd].
type lcsRange struct{ aStart, aEnd, bStart, bEnd uint32 }

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
//
// Redis's dynamic programme over a table of (len(a)+1)*(len(b)+1) uint32
// cells, refused when that passes proto-max-bulk-len bytes (or 4 GB,
// maxLCSTable, for a proto-max-bulk-len raised past it; LEN alone needs
// two rows of the table and is not bound by that). The longest
// common subsequence and its matches are found walking back from the
// table's end as Redis walks, so that among several LCSs the same one is
// reported.
func cmdLCS(c *Ctx) {
	e := c.Eng
	ea := e.lookupRead(c.Args[1], c.Now)
	eb := e.lookupRead(c.Args[2], c.Now)
	if (ea != nil && ea.kind() != KindString) || (eb != nil && eb.kind() != KindString) {
		c.W.WriteError(ErrLCSType)
		return
	}
	var a, b string
	if ea != nil {
		a = ea.str()
	}
	if eb != nil {
		b = eb.str()
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(c.Args); j++ {
		opt := c.Args[j]
		switch {
		case eqFold(opt, "idx"):
			getIdx = true
		case eqFold(opt, "len"):
			getLen = true
		case eqFold(opt, "withmatchlen"):
			withMatchLen = true
		case eqFold(opt, "minmatchlen") && j < len(c.Args)-1:
			n, ok := parseInt(c.Args[j+1])
			if !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			minMatchLen = max(n, 0)
			j++
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.W.WriteError(ErrLCSLenAndIdx)
		return
	}
	if uint64(len(a)) >= math.MaxUint32-1 || uint64(len(b)) >= math.MaxUint32-1 {
		c.W.WriteError(ErrLCSTooLong)
		return
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if hi, size := bits.Mul64(cells, 4); hi != 0 {
		c.W.WriteError(ErrLCSAlloc)
		return
	} else if size > uint64(e.maxBulkLen()) {
		c.W.WriteError(ErrLCSMemLimit)
		return
	} else if size > maxLCSTable && (getIdx || !getLen) {
		// where Redis's ztrymalloc may fail, Go's make would end the
		// process: past a fixed bound the allocation fails here
		c.W.WriteError(ErrLCSAlloc)
		return
	}
	if !getIdx && getLen {
		c.W.WriteInt(int64(lcsLen(a, b)))
		return
	}

	// t[i*(blen+1)+j] is the length of the LCS of a[:i] and b[:j].
	w := blen + 1
	t := make([]uint32, cells)
	for i := 1; i <= alen; i++ {
		row, prev := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		ai := a[i-1]
		for j := 1; j <= blen; j++ {
			switch {
			case ai == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	total := t[alen*w+blen]
	idx := total
	result := make([]byte, total)
	var ranges []lcsRange
	// cur is the match being extended backwards; cur.aStart == alen
	// (uint32) means none, as in Redis.
	none := uint32(alen)
	cur := lcsRange{aStart: none}
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if cur.aStart == none {
				cur = lcsRange{uint32(i - 1), uint32(i - 1), uint32(j - 1), uint32(j - 1)}
			} else if cur.aStart == uint32(i) && cur.bStart == uint32(j) {
				cur.aStart--
				cur.bStart--
			} else {
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			if cur.aStart != none {
				emit = true
			}
		}
		if emit {
			matchLen := cur.aEnd - cur.aStart + 1
			if getIdx && (minMatchLen == 0 || int64(matchLen) >= minMatchLen) {
				ranges = append(ranges, cur)
			}
			cur.aStart = none
		}
	}
	if !getIdx {
		c.W.WriteBulk(result)
		return
	}
	c.W.WriteMap(2)
	c.W.WriteBulkString("matches")
	c.W.WriteArray(len(ranges))
	for _, r := range ranges {
		if withMatchLen {
			c.W.WriteArray(3)
		} else {
			c.W.WriteArray(2)
		}
		c.W.WriteArray(2)
		c.W.WriteInt(int64(r.aStart))
		c.W.WriteInt(int64(r.aEnd))
		c.W.WriteArray(2)
		c.W.WriteInt(int64(r.bStart))
		c.W.WriteInt(int64(r.bEnd))
		if withMatchLen {
			c.W.WriteInt(int64(r.aEnd - r.aStart + 1))
		}
	}
	c.W.WriteBulkString("len")
	c.W.WriteInt(int64(total))
}

// lcsLen is the length of the longest common subsequence of a and b, in
// two rows of the table (LCS LEN needs no walk back).
func lcsLen(a, b string) uint32 {
	prev := make([]uint32, len(b)+1)
	row := make([]uint32, len(b)+1)
	for i := 0; i < len(a); i++ {
		ai := a[i]
		for j := 1; j <= len(b); j++ {
			switch {
			case ai == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
		prev, row = row, prev
	}
	return prev[len(b)]
}
