package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRDBCRC64_RedisCheckValue(t *testing.T) {
	// src/crc64.c's test: crc64(0, "123456789") = 0xe9c6d914c4b8d9ca
	if got := rdbCRC64([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64 = %#x", got)
	}
}

// FUNCTION DUMP's payloads, as redis-server 7.0.15 wrote them for these
// libraries: verbatim, LZF-compressed with 14-bit lengths, and with
// 32-bit lengths.
func TestDumpPayload_RedisBytes(t *testing.T) {
	var repeats strings.Builder
	repeats.WriteString("#!lua name=b")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&repeats, "\nredis.register_function('f%d', function(keys, args) return redis.call('get', keys[1]) end)", i)
	}
	for _, tc := range []struct {
		name, code, want string
	}{
		{"verbatim", "#!lua name=a\nredis.register_function('fa', function() return 'x' end)",
			"\xf5@E#!lua name=a\nredis.register_function('fa', function() return 'x' end)\n\x001\xc9I\x98\xf1\xb5\x10\xbe"},
		{"lzf", repeats.String(),
			"\xf5\xc3@\x8aB\xdc\x1f#!lua name=b\nredis.register_func\ntion('f0', \xe0\x00\x0e\x11keys, args) return \x06@9\x08call('get -@$\x08[1]) end)\xe0\x12Y\x001 +\xe0MY\x002\xe0PY\x003\xe0PY\x004\xe0PY\x005\xe0PY\x006\xe0PY\x007\xe03Y\x01d)\n\x00\xceid2\x8e\x9aAA"},
		{"lzf 32-bit length", "#!lua name=e\nlocal t = '" + strings.Repeat("ab", 10000) + "'\nredis.register_function('k', function() return #t end)",
			"\xf5\xc3A3\x80\x00\x00Np\x19#!lua name=e\nlocal t = 'ab" + strings.Repeat("\xe0\xff\x01", 75) + "\xe0\xbd\x01\x1e'\nredis.register_function('k', \xe0\x00\x0d\x0f) return #t end)\n\x005$\x97\xcd6D\xad\xc6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dumpFooter(rdbAppendString([]byte{rdbOpFunction2}, []byte(tc.code)))
			if string(got) != tc.want {
				t.Fatalf("payload\n got %q\nwant %q", got, tc.want)
			}
			if !verifyDumpPayload(got) {
				t.Fatal("the payload does not verify")
			}
			r := &rdbReader{b: got[1:]}
			if s, ok := r.string(); !ok || string(s) != tc.code {
				t.Fatalf("read back %q, %v", s, ok)
			}
		})
	}
}

func TestRDBString_Encodings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "\x00"},
		{"0", "\xc0\x00"},
		{"-128", "\xc0\x80"},
		{"127", "\xc0\x7f"},
		{"128", "\xc1\x80\x00"},
		{"-32769", "\xc2\xff\x7f\xff\xff"},
		{"2147483647", "\xc2\xff\xff\xff\x7f"},
		{"2147483648", "\x0a2147483648"}, // past int32: a string
		{"01", "\x0201"},                 // not the integer's own text
		{"+1", "\x02+1"},
		{strings.Repeat("x", 20), "\x14" + strings.Repeat("x", 20)}, // 20 bytes: never compressed
		{strings.Repeat("x", 21), "\xc3\x06\x15\x01xx\xe0\x0a\x00"},
	} {
		got := string(rdbAppendString(nil, []byte(tc.in)))
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
		r := &rdbReader{b: []byte(got)}
		if s, ok := r.string(); !ok || string(s) != tc.in {
			t.Errorf("%q: read back %q, %v", tc.in, s, ok)
		}
	}
}

func TestRDBLength_Encodings(t *testing.T) {
	for _, n := range []uint64{0, 63, 64, 16383, 16384, 1<<32 - 1, 1 << 32} {
		b := rdbAppendLen(nil, n)
		r := &rdbReader{b: b}
		got, enc, ok := r.length()
		if !ok || enc || got != n || r.pos != len(b) {
			t.Errorf("%d: %q read back as %d, %v, %v", n, b, got, enc, ok)
		}
	}
	for _, bad := range []string{"", "\x40", "\x80\x00", "\x81\x00\x00", "\x82", "\xbf"} {
		if _, _, ok := (&rdbReader{b: []byte(bad)}).length(); ok {
			t.Errorf("%q read as a length", bad)
		}
	}
}

// LZF round-trips whatever it compresses, and decompression refuses a
// stream that refers before its start or claims more than it holds.
func TestLZF_RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		n := r.IntN(3000) + 1
		in := make([]byte, n)
		alphabet := r.IntN(20) + 1
		for j := range in {
			if j > 8 && r.IntN(4) == 0 {
				in[j] = in[j-1-r.IntN(8)]
			} else {
				in[j] = byte('a' + r.IntN(alphabet))
			}
		}
		c := lzfCompress(in, n-1)
		if c == nil {
			continue
		}
		out, ok := lzfDecompress(c, n)
		if !ok || !bytes.Equal(out, in) {
			t.Fatalf("round trip of %q failed", in)
		}
		if out, ok := lzfDecompress(c, n-1); ok && len(out) == n-1 {
			t.Fatalf("decompressed into a buffer too short")
		}
	}
	if _, ok := lzfDecompress([]byte{0x20, 0x00}, 10); ok {
		t.Error("a back reference before the start decompressed")
	}
	if _, ok := lzfDecompress([]byte{0x05, 'a'}, 10); ok {
		t.Error("a literal run past the input decompressed")
	}
}

// lzfCompress's output depends on its input only: the hash table it
// reuses from call to call starts empty each time.
func TestLZF_TableStartsEmpty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	text := func() []byte {
		b := make([]byte, 200+r.IntN(2000))
		for i := range b {
			b[i] = byte('a' + r.IntN(3))
		}
		return b
	}
	for i := 0; i < 200; i++ {
		a, b := text(), text()
		first := lzfCompress(b, len(b))
		lzfCompress(a, len(a))
		if again := lzfCompress(b, len(b)); !bytes.Equal(first, again) {
			t.Fatalf("the same input compressed differently after another one")
		}
		// a as the start of b: a table left over from a would find matches
		ab := append(append([]byte(nil), a...), a...)
		lzfCompress(a, len(a))
		c1 := lzfCompress(ab, len(ab))
		lzfTables.Put(new(lzfTable))
		lzfCompress(b, len(b))
		if c2 := lzfCompress(ab, len(ab)); !bytes.Equal(c1, c2) {
			t.Fatalf("compression depends on the call before")
		}
	}
}
