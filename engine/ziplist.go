package engine

import (
	"encoding/binary"
	"strconv"
)

// The compact encodings of RDB versions before 10 (Redis 6.2 and older),
// which Redis 7.0 still reads in a RESTORE payload and converts: the
// ziplist (src/ziplist.c) of list, hash and sorted set payloads, and the
// zipmap (src/zipmap.c) of Redis 2.4's hashes. Read only, checked as
// Redis 7.0 checks them when it loads them (deep validation).

const (
	zlHeaderSize = 10 // total bytes (uint32 LE), tail offset (uint32 LE), count (uint16 LE)
	zlEnd        = 0xff
	zlBigPrevLen = 254
	zlStr06B     = 0x00
	zlStr14B     = 0x40
	zlStr32B     = 0x80
	zlInt16B     = 0xc0
	zlInt32B     = 0xd0
	zlInt64B     = 0xe0
	zlInt24B     = 0xf0
	zlInt8B      = 0xfe
	zlIntImmMin  = 0xf1 // 1111xxxx: the integer xxxx-1, 0 to 12
	zlIntImmMax  = 0xfd
)

// zlRead walks a ziplist blob as ziplistValidateIntegrity checks it with
// deep validation (the header's size is the blob's, the terminator ends
// it, the tail offset points at the last entry, each entry is whole and
// records the size of the one before, the count is the entries', unless
// 65535) and calls fn with each entry as a string (an integer entry in
// decimal). It reports false for a blob that fails a check, or when fn
// does.
func zlRead(b []byte, fn func(s string) bool) bool {
	size := len(b)
	if size < zlHeaderSize+1 || int(binary.LittleEndian.Uint32(b)) != size || b[size-1] != zlEnd {
		return false
	}
	tail := int(binary.LittleEndian.Uint32(b[4:]))
	if tail > size-1 {
		return false
	}
	last := size - 1 // the terminator
	inRange := func(p int) bool { return p >= zlHeaderSize && p <= last }
	count, prevSize, prev := 0, 0, -1
	p := zlHeaderSize
	for b[p] != zlEnd {
		// prevlen: one byte, or 254 and four bytes LE
		prevLenSize := 1
		if b[p] >= zlBigPrevLen {
			prevLenSize = 5
		}
		if !inRange(p + prevLenSize) {
			return false
		}
		prevLen := int(b[p])
		if prevLenSize == 5 {
			prevLen = int(binary.LittleEndian.Uint32(b[p+1:]))
		}
		q := p + prevLenSize
		enc := b[q]
		if enc < 0xc0 {
			enc &= 0xc0
		}
		var lenSize, dlen int
		switch {
		case enc == zlStr06B:
			lenSize = 1
		case enc == zlStr14B:
			lenSize = 2
		case enc == zlStr32B:
			lenSize = 5
		case enc == zlInt8B:
			lenSize, dlen = 1, 1
		case enc == zlInt16B:
			lenSize, dlen = 1, 2
		case enc == zlInt24B:
			lenSize, dlen = 1, 3
		case enc == zlInt32B:
			lenSize, dlen = 1, 4
		case enc == zlInt64B:
			lenSize, dlen = 1, 8
		case enc >= zlIntImmMin && enc <= zlIntImmMax:
			lenSize = 1
		default:
			return false
		}
		if !inRange(q + lenSize) {
			return false
		}
		switch enc {
		case zlStr06B:
			dlen = int(b[q] & 0x3f)
		case zlStr14B:
			dlen = int(b[q]&0x3f)<<8 | int(b[q+1])
		case zlStr32B:
			dlen = int(binary.BigEndian.Uint32(b[q+1:]))
		}
		hdr := prevLenSize + lenSize
		if dlen > last-p-hdr || !inRange(p+hdr+dlen) || !inRange(p-prevLen) || prevLen != prevSize {
			return false
		}
		d := b[p+hdr : p+hdr+dlen]
		var s string
		switch enc {
		case zlStr06B, zlStr14B, zlStr32B:
			s = string(d)
		case zlInt8B:
			s = strconv.FormatInt(int64(int8(d[0])), 10)
		case zlInt16B:
			s = strconv.FormatInt(int64(int16(binary.LittleEndian.Uint16(d))), 10)
		case zlInt24B:
			v := int64(d[0]) | int64(d[1])<<8 | int64(d[2])<<16
			if v >= 1<<23 {
				v -= 1 << 24
			}
			s = strconv.FormatInt(v, 10)
		case zlInt32B:
			s = strconv.FormatInt(int64(int32(binary.LittleEndian.Uint32(d))), 10)
		case zlInt64B:
			s = strconv.FormatInt(int64(binary.LittleEndian.Uint64(d)), 10)
		default:
			s = strconv.Itoa(int(enc&0x0f) - 1)
		}
		if !fn(s) {
			return false
		}
		prevSize = hdr + dlen
		prev = p
		p += prevSize
		count++
	}
	if p != size-1 || (prev >= 0 && prev != tail) {
		return false
	}
	n := int(binary.LittleEndian.Uint16(b[8:]))
	return n == 65535 || n == count
}

// zlStrings returns a ziplist's entries, or ok=false when zlRead finds
// it corrupt.
func zlStrings(b []byte) ([]string, bool) {
	var out []string
	ok := zlRead(b, func(s string) bool {
		out = append(out, s)
		return true
	})
	return out, ok
}

// zipmapPairs reads a zipmap (Redis 2.4's small hashes: a count byte,
// then each field and value with their lengths, a value's free bytes
// after it, and 0xFF), checked as zipmapValidateIntegrity checks it, and
// returns its fields and values, alternating.
func zipmapPairs(b []byte) ([]string, bool) {
	size := len(b)
	if size < 2 || b[size-1] != zlEnd {
		return nil, false
	}
	inRange := func(p int) bool { return p >= 2 && p <= size-1 }
	// a length: one byte, or 254 and four bytes LE
	length := func(p int) (n, lenSize int, ok bool) {
		if b[p] < zlBigPrevLen {
			return int(b[p]), 1, inRange(p + 1)
		}
		if !inRange(p + 5) {
			return 0, 0, false
		}
		return int(binary.LittleEndian.Uint32(b[p+1:])), 5, true
	}
	var out []string
	p := 1
	for b[p] != zlEnd {
		l, s, ok := length(p)
		if !ok || l > size {
			return nil, false
		}
		p += s
		field := p
		p += l
		if !inRange(p) {
			return nil, false
		}
		vl, vs, ok := length(p)
		if !ok || vl > size {
			return nil, false
		}
		p += vs
		free := int(b[p])
		p++
		value := p
		p += vl + free
		if !inRange(p) {
			return nil, false
		}
		out = append(out, string(b[field:field+l]), string(b[value:value+vl]))
	}
	if len(out) == 0 || (b[0] != zlBigPrevLen && int(b[0]) != len(out)/2) {
		return nil, false
	}
	return out, true
}
