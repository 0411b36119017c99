package engine

import (
	"encoding/binary"
	"math/bits"
)

// xxh3 is XXH3_64bits with seed 0 and the default secret: the hash behind
// Redis 8.4's DIGEST and the IFDEQ/IFDNE conditions. It follows the
// algorithm of the xxHash specification (scalar path).

const (
	xxPrime32_1 = 0x9E3779B1
	xxPrime32_2 = 0x85EBCA77
	xxPrime32_3 = 0xC2B2AE3D
	xxPrime64_1 = 0x9E3779B185EBCA87
	xxPrime64_2 = 0xC2B2AE3D27D4EB4F
	xxPrime64_3 = 0x165667B19E3779F9
	xxPrime64_4 = 0x85EBCA77C2B2AE63
	xxPrime64_5 = 0x27D4EB2F165667C5
	xxPrimeMx1  = 0x165667919E3779F9
	xxPrimeMx2  = 0x9FB21C651E98DF25
)

var xxSecret = [192]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

func xxRead64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
func xxRead32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

func xxMulFold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxAvalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= xxPrimeMx1
	h ^= h >> 32
	return h
}

func xx64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= xxPrime64_2
	h ^= h >> 29
	h *= xxPrime64_3
	h ^= h >> 32
	return h
}

func xxRrmxmx(h uint64, n uint64) uint64 {
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= xxPrimeMx2
	h ^= (h >> 35) + n
	h *= xxPrimeMx2
	h ^= h >> 28
	return h
}

func xxMix16(in []byte, i int, s int) uint64 {
	sec := xxSecret[:]
	return xxMulFold64(xxRead64(in, i)^xxRead64(sec, s), xxRead64(in, i+8)^xxRead64(sec, s+8))
}

// xxh3 returns the XXH3 64-bit hash of b (seed 0).
func xxh3(b []byte) uint64 {
	n := len(b)
	sec := xxSecret[:]
	switch {
	case n == 0:
		return xx64Avalanche(xxRead64(sec, 56) ^ xxRead64(sec, 64))
	case n <= 3:
		c1, c2, c3 := uint32(b[0]), uint32(b[n>>1]), uint32(b[n-1])
		combined := c1<<16 | c2<<24 | c3 | uint32(n)<<8
		flip := uint64(xxRead32(sec, 0) ^ xxRead32(sec, 4))
		return xx64Avalanche(uint64(combined) ^ flip)
	case n <= 8:
		in1, in2 := xxRead32(b, 0), xxRead32(b, n-4)
		flip := xxRead64(sec, 8) ^ xxRead64(sec, 16)
		in64 := uint64(in2) + uint64(in1)<<32
		return xxRrmxmx(in64^flip, uint64(n))
	case n <= 16:
		flip1 := xxRead64(sec, 24) ^ xxRead64(sec, 32)
		flip2 := xxRead64(sec, 40) ^ xxRead64(sec, 48)
		lo := xxRead64(b, 0) ^ flip1
		hi := xxRead64(b, n-8) ^ flip2
		acc := uint64(n) + bits.ReverseBytes64(lo) + hi + xxMulFold64(lo, hi)
		return xxAvalanche(acc)
	case n <= 128:
		acc := uint64(n) * xxPrime64_1
		if n > 32 {
			if n > 64 {
				if n > 96 {
					acc += xxMix16(b, 48, 96)
					acc += xxMix16(b, n-64, 112)
				}
				acc += xxMix16(b, 32, 64)
				acc += xxMix16(b, n-48, 80)
			}
			acc += xxMix16(b, 16, 32)
			acc += xxMix16(b, n-32, 48)
		}
		acc += xxMix16(b, 0, 0)
		acc += xxMix16(b, n-16, 16)
		return xxAvalanche(acc)
	case n <= 240:
		acc := uint64(n) * xxPrime64_1
		for i := 0; i < 8; i++ {
			acc += xxMix16(b, 16*i, 16*i)
		}
		acc = xxAvalanche(acc)
		for i := 8; i < n/16; i++ {
			acc += xxMix16(b, 16*i, 16*(i-8)+3)
		}
		acc += xxMix16(b, n-16, 136-17)
		return xxAvalanche(acc)
	}
	return xxh3Long(b)
}

func xxAccumulate512(acc *[8]uint64, in []byte, i int, s int) {
	sec := xxSecret[:]
	for j := 0; j < 8; j++ {
		v := xxRead64(in, i+8*j)
		k := v ^ xxRead64(sec, s+8*j)
		acc[j^1] += v
		acc[j] += uint64(uint32(k)) * (k >> 32)
	}
}

func xxScramble(acc *[8]uint64, s int) {
	sec := xxSecret[:]
	for j := 0; j < 8; j++ {
		a := acc[j]
		a ^= a >> 47
		a ^= xxRead64(sec, s+8*j)
		a *= xxPrime32_1
		acc[j] = a
	}
}

func xxh3Long(b []byte) uint64 {
	const (
		stripeLen      = 64
		secretSize     = len(xxSecret)
		stripesPerBlk  = (secretSize - stripeLen) / 8
		blockLen       = stripeLen * stripesPerBlk
		lastAccStart   = 7
		mergeAccsStart = 11
	)
	acc := [8]uint64{xxPrime32_3, xxPrime64_1, xxPrime64_2, xxPrime64_3, xxPrime64_4, xxPrime32_2, xxPrime64_5, xxPrime32_1}
	n := len(b)
	blocks := (n - 1) / blockLen
	for k := 0; k < blocks; k++ {
		for s := 0; s < stripesPerBlk; s++ {
			xxAccumulate512(&acc, b, k*blockLen+s*stripeLen, s*8)
		}
		xxScramble(&acc, secretSize-stripeLen)
	}
	stripes := ((n - 1) - blockLen*blocks) / stripeLen
	for s := 0; s < stripes; s++ {
		xxAccumulate512(&acc, b, blocks*blockLen+s*stripeLen, s*8)
	}
	xxAccumulate512(&acc, b, n-stripeLen, secretSize-stripeLen-lastAccStart)
	result := uint64(n) * xxPrime64_1
	sec := xxSecret[:]
	for j := 0; j < 4; j++ {
		s := mergeAccsStart + 16*j
		result += xxMulFold64(acc[2*j]^xxRead64(sec, s), acc[2*j+1]^xxRead64(sec, s+8))
	}
	return xxAvalanche(result)
}
