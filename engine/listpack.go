package engine

import (
	"encoding/binary"
	"strconv"
)

// Redis 7.0's listpack (src/listpack.c): the blob in which DUMP writes a
// compact hash or sorted set and each node of a list, and which RESTORE
// reads back. tumbler keeps its values in Go structures, so a listpack is
// only ever built whole, by appends (lpWriter), or walked whole, checked
// as Redis's deep sanitization checks it (lpRead).
//
// Layout: total bytes (uint32 LE), element count (uint16 LE, 65535 when
// it does not fit), the entries, and 0xFF. An entry is its encoding and
// data, then its "backlen": the size of encoding and data written
// backwards in 7-bit groups, so the list can be walked from the end.

const (
	lpHeaderSize     = 6
	lpEOF            = 0xff
	lpNumEleUnknown  = 65535
	lpEnc7BitUint    = 0x00 // 0xxxxxxx: 0..127
	lpEnc6BitStr     = 0x80 // 10xxxxxx: a string shorter than 64 bytes
	lpEnc13BitInt    = 0xc0 // 110xxxxx yyyyyyyy: -4096..4095
	lpEnc12BitStr    = 0xe0 // 1110xxxx yyyyyyyy: a string shorter than 4096 bytes
	lpEnc32BitStr    = 0xf0 // then the length, uint32 LE
	lpEnc16BitInt    = 0xf1
	lpEnc24BitInt    = 0xf2
	lpEnc32BitInt    = 0xf3
	lpEnc64BitInt    = 0xf4
	lpMaxSafetySize  = 1 << 30 // LISTPACK_MAX_SAFETY_SIZE (lpSafeToAdd)
	lpEmptyBytes     = lpHeaderSize + 1
	lpMaxBacklenSize = 5
)

// lpStringInt is lpStringToInt64: s is stored as an integer when it is
// the canonical decimal form of an int64 (no sign but "-", no leading
// zeros, no spaces).
func lpStringInt(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	v, ok := parseInt([]byte(s))
	return v, ok
}

// lpIntSize is the size of an integer's encoding and data
// (lpEncodeIntegerGetType).
func lpIntSize(v int64) int {
	switch {
	case v >= 0 && v <= 127:
		return 1
	case v >= -4096 && v <= 4095:
		return 2
	case v >= -32768 && v <= 32767:
		return 3
	case v >= -8388608 && v <= 8388607:
		return 4
	case v >= -2147483648 && v <= 2147483647:
		return 5
	}
	return 9
}

// lpStrSize is the size of a string's encoding and data.
func lpStrSize(n int) int {
	switch {
	case n < 64:
		return 1 + n
	case n < 4096:
		return 2 + n
	}
	return 5 + n
}

// lpBacklenSize is lpEncodeBacklen's size for an entry of l bytes.
func lpBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpEntrySize is the bytes s takes in a listpack, backlen included.
func lpEntrySize(s string) int {
	n := lpStrSize(len(s))
	if v, ok := lpStringInt(s); ok {
		n = lpIntSize(v)
	}
	return n + lpBacklenSize(n)
}

// lpWriter builds a listpack by appends (lpAppend, lpAppendInteger).
type lpWriter struct {
	b []byte
	n int // elements
}

// newLPWriter starts a listpack with room for about size bytes.
func newLPWriter(size int) *lpWriter {
	b := make([]byte, lpHeaderSize, max(size, lpEmptyBytes))
	return &lpWriter{b: b}
}

// appendString appends s, as an integer when it reads as one.
func (w *lpWriter) appendString(s string) {
	if v, ok := lpStringInt(s); ok {
		w.appendInt(v)
		return
	}
	start := len(w.b)
	switch n := len(s); {
	case n < 64:
		w.b = append(w.b, lpEnc6BitStr|byte(n))
	case n < 4096:
		w.b = append(w.b, lpEnc12BitStr|byte(n>>8), byte(n))
	default:
		w.b = binary.LittleEndian.AppendUint32(append(w.b, lpEnc32BitStr), uint32(n))
	}
	w.b = append(w.b, s...)
	w.backlen(len(w.b) - start)
}

// appendInt appends v in the smallest integer encoding that holds it.
func (w *lpWriter) appendInt(v int64) {
	start := len(w.b)
	switch lpIntSize(v) {
	case 1:
		w.b = append(w.b, byte(v))
	case 2:
		u := uint64(v) & (1<<13 - 1)
		w.b = append(w.b, lpEnc13BitInt|byte(u>>8), byte(u))
	case 3:
		w.b = binary.LittleEndian.AppendUint16(append(w.b, lpEnc16BitInt), uint16(v))
	case 4:
		u := uint32(v)
		w.b = append(w.b, lpEnc24BitInt, byte(u), byte(u>>8), byte(u>>16))
	case 5:
		w.b = binary.LittleEndian.AppendUint32(append(w.b, lpEnc32BitInt), uint32(v))
	default:
		w.b = binary.LittleEndian.AppendUint64(append(w.b, lpEnc64BitInt), uint64(v))
	}
	w.backlen(len(w.b) - start)
}

// backlen ends an entry of l bytes (lpEncodeBacklen): the high groups
// first, every byte but the first with its top bit set.
func (w *lpWriter) backlen(l int) {
	w.n++
	k := lpBacklenSize(l)
	for i := k - 1; i >= 0; i-- {
		c := byte(l>>(7*i)) & 127
		if i != k-1 {
			c |= 128
		}
		w.b = append(w.b, c)
	}
}

// bytes ends the listpack and returns it.
func (w *lpWriter) bytes() []byte {
	w.b = append(w.b, lpEOF)
	binary.LittleEndian.PutUint32(w.b, uint32(len(w.b)))
	binary.LittleEndian.PutUint16(w.b[4:], uint16(min(w.n, lpNumEleUnknown)))
	return w.b
}

// lpDecodeBacklen is Redis's: the backlen ending at b[i], read backwards
// until a byte without its top bit; ok=false past five bytes.
func lpDecodeBacklen(b []byte, i int) (uint64, bool) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if i < 0 {
			return 0, false
		}
		v |= uint64(b[i]&127) << shift
		if b[i]&128 == 0 {
			return v, true
		}
		i--
		if shift+7 > 28 {
			return 0, false
		}
	}
}

// lpEntryAt decodes the entry at b[p] of a listpack of len(b) bytes, as
// lpValidateNext checks it: its header and data and its backlen must lie
// before the terminator, and the backlen must give the entry's size. It
// returns the entry (a string, or an integer with isInt) and where the
// next begins.
func lpEntryAt(b []byte, p int) (s string, v int64, isInt bool, next int, ok bool) {
	last := len(b) - 1 // the terminator: no entry reaches it
	c := b[p]
	var hdr, dlen int // encoding bytes, data bytes
	switch {
	case c&0x80 == lpEnc7BitUint:
		hdr = 1
	case c&0xc0 == lpEnc6BitStr:
		hdr, dlen = 1, int(c&0x3f)
	case c&0xe0 == lpEnc13BitInt:
		hdr, dlen = 1, 1
	case c&0xf0 == lpEnc12BitStr:
		hdr = 2
	case c == lpEnc16BitInt:
		hdr, dlen = 1, 2
	case c == lpEnc24BitInt:
		hdr, dlen = 1, 3
	case c == lpEnc32BitInt:
		hdr, dlen = 1, 4
	case c == lpEnc64BitInt:
		hdr, dlen = 1, 8
	case c == lpEnc32BitStr:
		hdr = 5
	default:
		return "", 0, false, 0, false
	}
	if p+hdr > last {
		return "", 0, false, 0, false
	}
	switch hdr {
	case 2:
		dlen = int(c&0x0f)<<8 | int(b[p+1])
	case 5:
		dlen = int(binary.LittleEndian.Uint32(b[p+1:]))
	}
	size := hdr + dlen
	entry := size + lpBacklenSize(size)
	if entry > last-p {
		return "", 0, false, 0, false
	}
	next = p + entry
	if bl, ok := lpDecodeBacklen(b, next-1); !ok || bl != uint64(size) {
		return "", 0, false, 0, false
	}
	d := b[p+hdr : p+size]
	switch {
	case c&0x80 == lpEnc7BitUint:
		return "", int64(c & 0x7f), true, next, true
	case c&0xc0 == lpEnc6BitStr, c&0xf0 == lpEnc12BitStr, c == lpEnc32BitStr:
		return string(d), 0, false, next, true
	case c&0xe0 == lpEnc13BitInt:
		u := int64(c&0x1f)<<8 | int64(d[0])
		if u >= 1<<12 {
			u -= 1 << 13
		}
		return "", u, true, next, true
	case c == lpEnc16BitInt:
		return "", int64(int16(binary.LittleEndian.Uint16(d))), true, next, true
	case c == lpEnc24BitInt:
		u := int64(d[0]) | int64(d[1])<<8 | int64(d[2])<<16
		if u >= 1<<23 {
			u -= 1 << 24
		}
		return "", u, true, next, true
	case c == lpEnc32BitInt:
		return "", int64(int32(binary.LittleEndian.Uint32(d))), true, next, true
	}
	return "", int64(binary.LittleEndian.Uint64(d)), true, next, true
}

// lpRead walks a listpack blob, checked as lpValidateIntegrity checks it
// with deep validation (the header's size is the blob's, the terminator
// ends it, every entry is whole and its backlen right, the count in the
// header is the entries', unless 65535), and calls fn with each entry as
// a string (an integer entry in decimal). It reports false for a blob
// that fails a check, or when fn does.
func lpRead(b []byte, fn func(s string) bool) bool {
	if len(b) < lpEmptyBytes || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != lpEOF {
		return false
	}
	count := 0
	p := lpHeaderSize
	for b[p] != lpEOF {
		s, v, isInt, next, ok := lpEntryAt(b, p)
		if !ok {
			return false
		}
		if isInt {
			s = strconv.FormatInt(v, 10)
		}
		if !fn(s) {
			return false
		}
		count++
		p = next
	}
	if p != len(b)-1 {
		return false
	}
	numEle := int(binary.LittleEndian.Uint16(b[4:]))
	return numEle == lpNumEleUnknown || numEle == count
}

// lpStrings returns a listpack's entries, or ok=false when lpRead finds
// it corrupt.
func lpStrings(b []byte) ([]string, bool) {
	if len(b) < lpEmptyBytes {
		return nil, false
	}
	out := make([]string, 0, min(int(binary.LittleEndian.Uint16(b[4:])), len(b)/2))
	ok := lpRead(b, func(s string) bool {
		out = append(out, s)
		return true
	})
	return out, ok
}
