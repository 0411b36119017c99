package engine

import "sync"

// LZF, as Redis 7.0 builds it (src/lzf_c.c and src/lzf_d.c with lzfP.h's
// settings: HLOG 16, VERY_FAST, CHECK_INPUT), for the strings of an RDB
// payload (FUNCTION DUMP and RESTORE). The compressed bytes must be Redis's
// own, so the compressor is a line-by-line port. One difference: Redis
// leaves its hash table uninitialised (INIT_HTAB 0), so a slot may hold a
// stale pointer from an earlier call; the bounds checks reject those
// unless the earlier input sat at the same address, so Redis's output is
// this one's but for that rare case.

const (
	lzfHLog   = 16
	lzfHSize  = 1 << lzfHLog
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = (1 << 8) + (1 << 3)
)

// lzfTable is lzfCompress's hash table, reused from call to call: a slot
// holds the generation that stored it (the high 32 bits) and a position
// + 1, so a slot of another generation is empty and a call starts with an
// empty table without clearing 512 KB (a DUMP compresses each string of
// a hash or set, each node of a list, in turn).
type lzfTable struct {
	gen  uint32
	slot [lzfHSize]uint64
}

var lzfTables = sync.Pool{New: func() any { return new(lzfTable) }}

// lzfCompress compresses in into at most outLen bytes and returns them,
// or nil when they do not fit (lzf_compress returning 0).
func lzfCompress(in []byte, outLen int) []byte {
	inLen := len(in)
	if inLen == 0 || outLen == 0 {
		return nil
	}
	// the hash table starts empty on every call (lzfTable)
	t := lzfTables.Get().(*lzfTable)
	defer lzfTables.Put(t)
	if t.gen++; t.gen == 0 {
		clear(t.slot[:])
		t.gen = 1
	}
	gen := uint64(t.gen) << 32
	// lookup returns the position a slot holds, -1 for an empty one
	lookup := func(s uint32) int {
		if v := t.slot[s]; v&^0xffffffff == gen {
			return int(uint32(v)) - 1
		}
		return -1
	}
	store := func(s uint32, p int) { t.slot[s] = gen | uint64(p+1) }
	out := make([]byte, outLen)
	at := func(i int) uint32 { return uint32(in[i]) }
	frst := func(p int) uint32 { return at(p)<<8 | at(p+1) }
	next := func(v uint32, p int) uint32 { return v<<8 | at(p+2) }
	idx := func(h uint32) uint32 { return ((h >> (3*8 - lzfHLog)) - h*5) & (lzfHSize - 1) }

	ip, op := 0, 0
	lit := 0
	op++ // start run
	// literal copies one more literal byte
	literal := func() {
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1) // stop run
			lit = 0
			op++ // start run
		}
	}
	hval := frst(ip)
	for ip < inLen-2 {
		hval = next(hval, ip)
		slot := idx(hval)
		ref := lookup(slot)
		store(slot, ip)
		off := ip - ref - 1
		if ref >= 0 && off < lzfMaxOff && ref > 0 && in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			// match found at ref
			length := 2
			maxlen := inLen - ip - length
			if maxlen > lzfMaxRef {
				maxlen = lzfMaxRef
			}
			if op+3+1 >= outLen { // first a faster conservative test
				lit0 := 0
				if lit == 0 {
					lit0 = 1
				}
				if op-lit0+3+1 >= outLen { // second the exact but rare test
					return nil
				}
			}
			out[op-lit-1] = byte(lit - 1) // stop run
			if lit == 0 {
				op-- // undo run if length is zero
			}
			if maxlen > 16 {
				// Redis's unrolled loop compares 16 bytes before it looks
				// at maxlen again.
				matched := true
				for k := 0; k < 16; k++ {
					length++
					if in[ref+length] != in[ip+length] {
						matched = false
						break
					}
				}
				if matched {
					for {
						length++
						if !(length < maxlen && in[ref+length] == in[ip+length]) {
							break
						}
					}
				}
			} else {
				for {
					length++
					if !(length < maxlen && in[ref+length] == in[ip+length]) {
						break
					}
				}
			}
			length -= 2 // length is now #octets - 1
			ip++
			if length < 7 {
				out[op] = byte(off>>8 + length<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(length - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // start run
			ip += length + 1
			if ip >= inLen-2 {
				break
			}
			ip -= 2 // VERY_FAST: hash the last two positions of the match
			hval = frst(ip)
			hval = next(hval, ip)
			store(idx(hval), ip)
			ip++
			hval = next(hval, ip)
			store(idx(hval), ip)
			ip++
		} else {
			if op >= outLen {
				return nil
			}
			literal()
		}
	}
	if op+3 > outLen { // at most 3 bytes can be missing here
		return nil
	}
	for ip < inLen {
		literal()
	}
	out[op-lit-1] = byte(lit - 1) // end run
	if lit == 0 {
		op-- // undo run if length is zero
	}
	return out[:op]
}

// lzfDecompress is lzf_decompress: it expands in into exactly outLen
// bytes, or reports false for input that is malformed or expands to more.
// The length it returns may be less than outLen, as lzf_decompress's.
func lzfDecompress(in []byte, outLen int) ([]byte, bool) {
	out := make([]byte, 0, outLen)
	ip := 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // literal run
			ctrl++
			if len(out)+ctrl > outLen || ip+ctrl > len(in) {
				return nil, false
			}
			out = append(out, in[ip:ip+ctrl]...)
			ip += ctrl
			continue
		}
		// back reference
		length := ctrl >> 5
		ref := len(out) - (ctrl&0x1f)<<8 - 1
		if ip >= len(in) {
			return nil, false
		}
		if length == 7 {
			length += int(in[ip])
			ip++
			if ip >= len(in) {
				return nil, false
			}
		}
		ref -= int(in[ip])
		ip++
		if len(out)+length+2 > outLen || ref < 0 {
			return nil, false
		}
		for k := 0; k < length+2; k++ { // byte by byte: the areas may overlap
			out = append(out, out[ref+k])
		}
	}
	return out, true
}
