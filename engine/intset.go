package engine

import (
	"encoding/binary"
	"slices"
)

// Redis 7.0's intset (src/intset.c): how DUMP writes a set of integers
// that is "intset"-encoded, and RESTORE reads one. The blob is the
// width of its integers in bytes (uint32 LE: 2, 4 or 8), their count
// (uint32 LE), then the integers, ascending, little-endian. Redis widens
// an intset when a member needs it and never narrows it, so a set keeps
// the width of the widest member it ever held (set.width).

const intsetHeader = 8

// intsetWidth is _intsetValueEncoding: the bytes v needs.
func intsetWidth(v int64) uint8 {
	switch {
	case v < -1<<31 || v > 1<<31-1:
		return 8
	case v < -1<<15 || v > 1<<15-1:
		return 4
	}
	return 2
}

// intsetBlob returns the intset of vals (distinct) with at least width
// bytes an integer.
func intsetBlob(vals []int64, width uint8) []byte {
	vals = slices.Clone(vals)
	slices.Sort(vals)
	for _, v := range vals {
		width = max(width, intsetWidth(v))
	}
	b := make([]byte, intsetHeader, intsetHeader+len(vals)*int(width))
	binary.LittleEndian.PutUint32(b, uint32(width))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(vals)))
	for _, v := range vals {
		switch width {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// intsetRead checks an intset blob as intsetValidateIntegrity does with
// deep validation (a known width, a size that holds exactly its count,
// not empty, strictly ascending) and returns its integers and width.
func intsetRead(b []byte) (vals []int64, width uint8, ok bool) {
	if len(b) < intsetHeader {
		return nil, 0, false
	}
	w := binary.LittleEndian.Uint32(b)
	if w != 2 && w != 4 && w != 8 {
		return nil, 0, false
	}
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if intsetHeader+n*uint64(w) != uint64(len(b)) || n == 0 {
		return nil, 0, false
	}
	vals = make([]int64, n)
	for i := range vals {
		p := b[intsetHeader+i*int(w):]
		switch w {
		case 2:
			vals[i] = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			vals[i] = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			vals[i] = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && vals[i] <= vals[i-1] {
			return nil, 0, false
		}
	}
	return vals, uint8(w), true
}
