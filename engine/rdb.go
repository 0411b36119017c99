package engine

import (
	"encoding/binary"
	"hash/crc64"
	"strconv"
)

// The pieces of Redis 7.0's RDB format that a FUNCTION DUMP payload is
// made of (src/rdb.c, src/cluster.c): strings as rdbSaveRawString writes
// them, and the footer of a DUMP payload.

// rdbVersion is Redis 7.0's RDB_VERSION: a payload's footer carries it,
// and RESTORE refuses a newer one.
const rdbVersion = 10

// RDB opcodes of a function library: FUNCTION2 holds the library's code;
// FUNCTION is the format of Redis 7.0's release candidates (name, engine,
// description and code apart), still read.
const (
	rdbOpFunction2 = 245
	rdbOpFunction  = 246
)

// String encodings (RDB_ENCVAL's types).
const (
	rdbEncInt8  = 0
	rdbEncInt16 = 1
	rdbEncInt32 = 2
	rdbEncLZF   = 3
)

// crc64Table is Redis's CRC-64 (Jones polynomial, reflected), as
// src/crc64.c computes it.
var crc64Table = crc64.MakeTable(0x95ac9329ac4bc9b5)

// rdbCRC64 is Redis's crc64(0, b): no inversion before or after, where
// Go's crc64 inverts both.
func rdbCRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), crc64Table, b) }

// rdbAppendLen appends a length as rdbSaveLen writes it.
func rdbAppendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0x81)
		return binary.BigEndian.AppendUint64(b, n)
	}
}

// rdbAppendString appends s as rdbSaveRawString writes it (with Redis's
// default rdbcompression yes): a short decimal integer as an integer, a
// string that LZF shrinks by at least four bytes compressed, otherwise
// verbatim.
func rdbAppendString(b, s []byte) []byte {
	if len(s) <= 11 {
		if v, ok := parseInt(s); ok && strconv.FormatInt(v, 10) == string(s) {
			switch {
			case v >= -(1<<7) && v <= 1<<7-1:
				return append(b, 0xc0|rdbEncInt8, byte(v))
			case v >= -(1<<15) && v <= 1<<15-1:
				return binary.LittleEndian.AppendUint16(append(b, 0xc0|rdbEncInt16), uint16(v))
			case v >= -(1<<31) && v <= 1<<31-1:
				return binary.LittleEndian.AppendUint32(append(b, 0xc0|rdbEncInt32), uint32(v))
			}
		}
	}
	if len(s) > 20 {
		if c := lzfCompress(s, len(s)-4); c != nil {
			b = append(b, 0xc0|rdbEncLZF)
			b = rdbAppendLen(b, uint64(len(c)))
			b = rdbAppendLen(b, uint64(len(s)))
			return append(b, c...)
		}
	}
	b = rdbAppendLen(b, uint64(len(s)))
	return append(b, s...)
}

// rdbReader reads an RDB stream from a byte slice (Redis's rio over a
// buffer): a read past the end fails.
type rdbReader struct {
	b   []byte
	pos int
}

func (r *rdbReader) read(n uint64) ([]byte, bool) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, false
	}
	p := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return p, true
}

func (r *rdbReader) byte() (byte, bool) {
	p, ok := r.read(1)
	if !ok {
		return 0, false
	}
	return p[0], true
}

// length is rdbLoadLen: a length, or (encoded true) a string encoding.
func (r *rdbReader) length() (n uint64, encoded, ok bool) {
	c, ok := r.byte()
	if !ok {
		return 0, false, false
	}
	switch c >> 6 {
	case 0:
		return uint64(c & 0x3f), false, true
	case 1:
		c2, ok := r.byte()
		return uint64(c&0x3f)<<8 | uint64(c2), false, ok
	case 3:
		return uint64(c & 0x3f), true, true
	}
	switch c {
	case 0x80:
		p, ok := r.read(4)
		if !ok {
			return 0, false, false
		}
		return uint64(binary.BigEndian.Uint32(p)), false, true
	case 0x81:
		p, ok := r.read(8)
		if !ok {
			return 0, false, false
		}
		return binary.BigEndian.Uint64(p), false, true
	}
	return 0, false, false // "Unknown length encoding"
}

// string is rdbGenericLoadStringObject: a string in any of its encodings.
func (r *rdbReader) string() ([]byte, bool) {
	n, encoded, ok := r.length()
	if !ok {
		return nil, false
	}
	if !encoded {
		p, ok := r.read(n)
		return append([]byte(nil), p...), ok
	}
	switch n {
	case rdbEncInt8:
		p, ok := r.read(1)
		if !ok {
			return nil, false
		}
		return strconv.AppendInt(nil, int64(int8(p[0])), 10), true
	case rdbEncInt16:
		p, ok := r.read(2)
		if !ok {
			return nil, false
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10), true
	case rdbEncInt32:
		p, ok := r.read(4)
		if !ok {
			return nil, false
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10), true
	case rdbEncLZF:
		clen, _, ok := r.length()
		if !ok {
			return nil, false
		}
		ulen, _, ok := r.length()
		if !ok {
			return nil, false
		}
		c, ok := r.read(clen)
		if !ok {
			return nil, false
		}
		if ulen == 0 {
			// lzf_decompress returns 0, the length expected: Redis takes
			// whatever was there for an empty string
			return []byte{}, true
		}
		// a back reference, three bytes at most, copies 264 at most: a
		// longer length cannot be reached, and is not allocated
		if ulen > uint64(maxLZFString) || ulen > clen*lzfMaxExpansion {
			return nil, false
		}
		out, ok := lzfDecompress(c, int(ulen))
		return out, ok && len(out) == int(ulen)
	}
	return nil, false // "Unknown RDB string encoding type"
}

// maxLZFString bounds the size an LZF string in a payload may claim
// before it is expanded (Redis's allocation of it fails past memory).
const maxLZFString = 512 << 20

// lzfMaxExpansion bounds the bytes LZF makes of one compressed byte.
const lzfMaxExpansion = 88

// dumpFooter appends a DUMP payload's footer to payload: the RDB version,
// then the CRC-64 of everything before, little-endian.
func dumpFooter(payload []byte) []byte {
	payload = binary.LittleEndian.AppendUint16(payload, rdbVersion)
	return binary.LittleEndian.AppendUint64(payload, rdbCRC64(payload))
}

// verifyDumpPayload is Redis's: the footer's version must be one this
// server reads and its CRC must match.
func verifyDumpPayload(p []byte) bool {
	if len(p) < 10 {
		return false
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion {
		return false
	}
	return binary.LittleEndian.Uint64(footer[2:]) == rdbCRC64(p[:len(p)-8])
}
