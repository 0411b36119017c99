package engine

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lpOf builds a listpack of strings.
func lpOf(items ...string) []byte {
	w := newLPWriter(0)
	for _, s := range items {
		w.appendString(s)
	}
	return w.bytes()
}

// A listpack's bytes are Redis's: this one is the node of RPUSH l a b 1 2
// 300 in redis-server 7.0's DUMP.
func TestListpack_RedisBytes(t *testing.T) {
	want := "\x14\x00\x00\x00\x05\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xc1,\x02\xff"
	if got := string(lpOf("a", "b", "1", "2", "300")); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Each integer goes in the smallest of Redis's encodings that holds it;
// the bounds of each are where the next begins.
func TestListpack_IntegerEncodingBounds(t *testing.T) {
	for _, tc := range []struct {
		v     int64
		first byte // the encoding byte (for the 7- and 13-bit ones, with value bits)
		size  int  // encoding and data
	}{
		{0, 0x00, 1}, {127, 0x7f, 1},
		{128, 0xc0, 2}, {-1, 0xdf, 2}, {-4096, 0xd0, 2}, {4095, 0xcf, 2},
		{4096, 0xf1, 3}, {-4097, 0xf1, 3}, {32767, 0xf1, 3}, {-32768, 0xf1, 3},
		{32768, 0xf2, 4}, {-32769, 0xf2, 4}, {8388607, 0xf2, 4}, {-8388608, 0xf2, 4},
		{8388608, 0xf3, 5}, {-8388609, 0xf3, 5}, {math.MaxInt32, 0xf3, 5}, {math.MinInt32, 0xf3, 5},
		{math.MaxInt32 + 1, 0xf4, 9}, {math.MinInt32 - 1, 0xf4, 9}, {math.MaxInt64, 0xf4, 9}, {math.MinInt64, 0xf4, 9},
	} {
		s := strconv.FormatInt(tc.v, 10)
		lp := lpOf(s)
		if lp[lpHeaderSize] != tc.first || len(lp) != lpEmptyBytes+tc.size+1 || lpEntrySize(s) != tc.size+1 {
			t.Errorf("%d: encoded %x (entry size %d), want first byte %#x, %d bytes", tc.v, lp, lpEntrySize(s), tc.first, tc.size)
		}
		got, ok := lpStrings(lp)
		if !ok || len(got) != 1 || got[0] != s {
			t.Errorf("%d: read back %q, %v", tc.v, got, ok)
		}
	}
}

// Strings that do not read back the same as an integer stay strings,
// with 6-, 12- and 32-bit lengths; the backlen takes 1, 2 or 3 bytes as
// the entry grows.
func TestListpack_StringEncodingBounds(t *testing.T) {
	for _, tc := range []struct {
		n          int
		first      byte
		hdr, blen  int
		numberLike string
	}{
		{0, 0x80, 1, 1, ""}, {63, 0xbf, 1, 1, ""}, {64, 0xe0, 2, 1, ""}, {125, 0xe0, 2, 1, ""},
		{126, 0xe0, 2, 2, ""}, {4095, 0xef, 2, 2, ""}, {4096, 0xf0, 5, 2, ""},
		{16377, 0xf0, 5, 2, ""}, {16378, 0xf0, 5, 3, ""},
	} {
		s := strings.Repeat("x", tc.n)
		lp := lpOf(s)
		if lp[lpHeaderSize] != tc.first || len(lp) != lpEmptyBytes+tc.hdr+tc.n+tc.blen || lpEntrySize(s) != tc.hdr+tc.n+tc.blen {
			t.Errorf("len %d: first byte %#x, %d bytes (entry %d), want %#x, header %d, backlen %d", tc.n, lp[lpHeaderSize], len(lp), lpEntrySize(s), tc.first, tc.hdr, tc.blen)
		}
		if got, ok := lpStrings(lp); !ok || len(got) != 1 || got[0] != s {
			t.Errorf("len %d: read back %d strings, %v", tc.n, len(got), ok)
		}
	}
	for _, s := range []string{"01", "-0", "+1", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "1.5", "0x1"} {
		lp := lpOf(s)
		if lp[lpHeaderSize] != lpEnc6BitStr|byte(len(s)) {
			t.Errorf("%q: encoded as %#x, want a string", s, lp[lpHeaderSize])
		}
	}
}

// The element count is 65535 ("unknown") from 65535 elements on, and a
// reader then counts them itself.
func TestListpack_CountUnknown(t *testing.T) {
	items := make([]string, 70000)
	for i := range items {
		items[i] = "a"
	}
	lp := lpOf(items...)
	if n := binary.LittleEndian.Uint16(lp[4:]); n != lpNumEleUnknown {
		t.Errorf("count field %d", n)
	}
	if got, ok := lpStrings(lp); !ok || len(got) != len(items) {
		t.Errorf("read %d, %v", len(got), ok)
	}
}

// A listpack that lpValidateIntegrity (deep) refuses is refused.
func TestListpack_Corrupt(t *testing.T) {
	good := lpOf("a", "1000", strings.Repeat("y", 100))
	if _, ok := lpStrings(good); !ok {
		t.Fatal("good listpack refused")
	}
	mod := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for name, b := range map[string][]byte{
		"short":         good[:6],
		"total bytes":   mod(func(b []byte) []byte { b[0]++; return b }),
		"no terminator": mod(func(b []byte) []byte { b[len(b)-1] = 0; return b }),
		"count":         mod(func(b []byte) []byte { b[4] = 2; return b }),
		"backlen":       mod(func(b []byte) []byte { b[lpHeaderSize+2] = 3; return b }),
		"bad encoding":  mod(func(b []byte) []byte { b[lpHeaderSize] = 0xf5; return b }),
		"past the end":  mod(func(b []byte) []byte { b[len(b)-104] = 0xe0 | 0x0f; return b }),
		"early eof":     mod(func(b []byte) []byte { b[lpHeaderSize] = lpEOF; return b }),
		"empty is fine": nil,
	} {
		if b == nil {
			if _, ok := lpStrings(lpOf()); !ok {
				t.Errorf("%s: refused", name)
			}
			continue
		}
		if got, ok := lpStrings(b); ok {
			t.Errorf("%s: accepted %q", name, got)
		}
	}
}

// An intset is Redis's blob: width, count, ascending little-endian
// integers; the width is the widest member's, or more.
func TestIntset_Bytes(t *testing.T) {
	for _, tc := range []struct {
		vals  []int64
		width uint8
		want  string
	}{
		{[]int64{3, 1, 2}, 0, "\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00"}, // redis-server's SADD si 1 2 3
		{[]int64{-32768, 32767}, 2, "\x02\x00\x00\x00\x02\x00\x00\x00\x00\x80\xff\x7f"},
		{[]int64{32768}, 2, "\x04\x00\x00\x00\x01\x00\x00\x00\x00\x80\x00\x00"},
		{[]int64{-1}, 8, "\x08\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"},
		{[]int64{math.MinInt32 - 1}, 2, "\x08\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\x7f\xff\xff\xff\xff"},
	} {
		b := intsetBlob(tc.vals, tc.width)
		if string(b) != tc.want {
			t.Errorf("%v width %d: %q, want %q", tc.vals, tc.width, b, tc.want)
		}
		vals, w, ok := intsetRead(b)
		sorted := slices.Sorted(slices.Values(tc.vals))
		if !ok || !slices.Equal(vals, sorted) || w != b[0] {
			t.Errorf("%v: read back %v width %d, %v", tc.vals, vals, w, ok)
		}
	}
	for name, b := range map[string]string{
		"short":      "\x02\x00\x00\x00\x01\x00\x00",
		"width":      "\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00",
		"size":       "\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00",
		"empty":      "\x02\x00\x00\x00\x00\x00\x00\x00",
		"duplicates": "\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x01\x00",
		"descending": "\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00",
	} {
		if vals, _, ok := intsetRead([]byte(b)); ok {
			t.Errorf("%s: accepted %v", name, vals)
		}
	}
}

// zlOf builds a ziplist as Redis 6.2's ziplistPush does: integers in the
// smallest integer encoding (0 to 12 immediate), strings with 6-, 14- or
// 32-bit lengths.
func zlOf(items ...string) []byte {
	b := make([]byte, zlHeaderSize)
	prev, tail := 0, zlHeaderSize
	for _, s := range items {
		tail = len(b)
		start := len(b)
		if prev < zlBigPrevLen {
			b = append(b, byte(prev))
		} else {
			b = binary.LittleEndian.AppendUint32(append(b, zlBigPrevLen), uint32(prev))
		}
		if v, ok := parseInt([]byte(s)); ok && len(s) <= 32 {
			switch {
			case v >= 0 && v <= 12:
				b = append(b, zlIntImmMin+byte(v))
			case v == int64(int8(v)):
				b = append(b, zlInt8B, byte(v))
			case v == int64(int16(v)):
				b = binary.LittleEndian.AppendUint16(append(b, zlInt16B), uint16(v))
			case v >= -1<<23 && v < 1<<23:
				b = append(b, zlInt24B, byte(v), byte(v>>8), byte(v>>16))
			case v == int64(int32(v)):
				b = binary.LittleEndian.AppendUint32(append(b, zlInt32B), uint32(v))
			default:
				b = binary.LittleEndian.AppendUint64(append(b, zlInt64B), uint64(v))
			}
		} else {
			switch n := len(s); {
			case n <= 0x3f:
				b = append(b, byte(n))
			case n <= 0x3fff:
				b = append(b, zlStr14B|byte(n>>8), byte(n))
			default:
				b = binary.BigEndian.AppendUint32(append(b, zlStr32B), uint32(n))
			}
			b = append(b, s...)
		}
		prev = len(b) - start
	}
	b = append(b, zlEnd)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(tail))
	binary.LittleEndian.PutUint16(b[8:], uint16(min(len(items), 65535)))
	return b
}

func TestZiplist_Read(t *testing.T) {
	items := []string{"0", "12", "13", "-1", "127", "-128", "128", "32767", "-32769", "8388607", "-8388609",
		"2147483647", "2147483648", "-9223372036854775808", "", "x", strings.Repeat("a", 63), strings.Repeat("b", 64),
		strings.Repeat("c", 300), strings.Repeat("d", 16384), "01", "e"}
	zl := zlOf(items...)
	got, ok := zlStrings(zl)
	if !ok || !slices.Equal(got, items) {
		t.Fatalf("read back %v (%v)", len(got), ok)
	}
	mod := func(f func(b []byte)) []byte { b := slices.Clone(zl); f(b); return b }
	for name, b := range map[string][]byte{
		"short":         zl[:10],
		"total bytes":   mod(func(b []byte) { b[0]++ }),
		"tail":          mod(func(b []byte) { b[4]++ }),
		"no terminator": mod(func(b []byte) { b[len(b)-1] = 0 }),
		"count":         mod(func(b []byte) { b[8]++ }),
		"prevlen":       mod(func(b []byte) { b[zlHeaderSize+2] = 7 }),
		"encoding":      mod(func(b []byte) { b[zlHeaderSize+1] = 0xc1 }),
	} {
		if got, ok := zlStrings(b); ok {
			t.Errorf("%s: accepted %d entries", name, len(got))
		}
	}
}

// zipmapOf builds a Redis 2.4 zipmap of field/value pairs, each value
// with free bytes after it.
func zipmapOf(pairs ...string) []byte {
	b := []byte{byte(len(pairs) / 2)}
	lenOf := func(n int) []byte {
		if n < zlBigPrevLen {
			return []byte{byte(n)}
		}
		return binary.LittleEndian.AppendUint32([]byte{zlBigPrevLen}, uint32(n))
	}
	for i := 0; i < len(pairs); i += 2 {
		b = append(append(b, lenOf(len(pairs[i]))...), pairs[i]...)
		b = append(append(append(b, lenOf(len(pairs[i+1]))...), 2), pairs[i+1]...)
		b = append(b, 0, 0) // free
	}
	return append(b, zlEnd)
}

func TestZipmap_Read(t *testing.T) {
	pairs := []string{"a", "1", "long", strings.Repeat("v", 300), "", "e"}
	got, ok := zipmapPairs(zipmapOf(pairs...))
	if !ok || !slices.Equal(got, pairs) {
		t.Fatalf("read back %q, %v", got, ok)
	}
	for name, b := range map[string][]byte{
		"empty":      {0, zlEnd},
		"count":      append([]byte{5}, zipmapOf(pairs...)[1:]...),
		"truncated":  append(zipmapOf("a", "bbbb")[:5], zlEnd),
		"terminator": zipmapOf("a", "b")[:6],
	} {
		if got, ok := zipmapPairs(b); ok {
			t.Errorf("%s: accepted %q", name, got)
		}
	}
}
