package engine

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ---- the word-at-a-time helpers against bit-by-bit references ----

// refBit is bit i of b, the most significant bit of b[0] first.
func refBit(b []byte, i int64) int64 { return int64(b[i>>3]>>(7-i&7)) & 1 }

func refCount(b []byte, sb, eb int64) int64 {
	n := int64(0)
	for i := sb; i <= eb; i++ {
		n += refBit(b, i)
	}
	return n
}

func refFind(b []byte, sb, eb, bit int64) int64 {
	for i := sb; i <= eb; i++ {
		if refBit(b, i) == bit {
			return i
		}
	}
	return -1
}

// randomBitmap is n bytes, mostly runs of zeros or ones (where a word at a
// time search skips) with a few odd bytes.
func randomBitmap(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	fill := byte(0)
	for i := range b {
		switch x := r.IntN(40); {
		case x == 0:
			fill = ^fill
		case x == 1:
			b[i] = byte(r.Uint32())
			continue
		}
		b[i] = fill
	}
	return b
}

func TestBits_CountAndFindMatchBitByBit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 3000; iter++ {
		b := randomBitmap(r, 1+r.IntN(90))
		total := int64(len(b)) * 8
		sb := r.Int64N(total)
		eb := sb + r.Int64N(total-sb)
		if got, want := countRange(b, sb, eb), refCount(b, sb, eb); got != want {
			t.Fatalf("countRange(%x, %d, %d) = %d, want %d", b, sb, eb, got, want)
		}
		for bit := int64(0); bit <= 1; bit++ {
			if got, want := findBit(b, sb, eb, bit), refFind(b, sb, eb, bit); got != want {
				t.Fatalf("findBit(%x, %d, %d, %d) = %d, want %d", b, sb, eb, bit, got, want)
			}
		}
		if got, want := popcount(b), refCount(b, 0, total-1); got != want {
			t.Fatalf("popcount(%x) = %d, want %d", b, got, want)
		}
	}
}

func TestBits_BitopMatchesBytewise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 2000; iter++ {
		op := r.IntN(4)
		n := 1 + r.IntN(4)
		if op == bitopNot {
			n = 1
		}
		srcs := make([][]byte, n)
		maxLen := 0
		for i := range srcs {
			srcs[i] = randomBitmap(r, r.IntN(40))
			maxLen = max(maxLen, len(srcs[i]))
		}
		want := make([]byte, maxLen)
		for j := range want {
			at := func(s []byte) byte {
				if j < len(s) {
					return s[j]
				}
				return 0
			}
			out := at(srcs[0])
			if op == bitopNot {
				out = ^out
			}
			for _, s := range srcs[1:] {
				switch op {
				case bitopAnd:
					out &= at(s)
				case bitopOr:
					out |= at(s)
				case bitopXor:
					out ^= at(s)
				}
			}
			want[j] = out
		}
		got := make([]byte, maxLen)
		bitop(op, got, srcs)
		if !bytes.Equal(got, want) {
			t.Fatalf("bitop %d of %x: %x, want %x", op, srcs, got, want)
		}
	}
}

func TestBits_FieldGetSetRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 2000; iter++ {
		b := randomBitmap(r, 20)
		before := append([]byte(nil), b...)
		width := 1 + r.IntN(64)
		off := uint64(r.IntN(len(b)*8 - width + 1))
		v := r.Uint64()
		setBits(b, off, width, v)
		mask := uint64(math.MaxUint64)
		if width < 64 {
			mask = 1<<width - 1
		}
		if got := getBits(b, off, width); got != v&mask {
			t.Fatalf("width %d at %d: wrote %x, read %x", width, off, v&mask, got)
		}
		// only the field's bits changed
		for i := int64(0); i < int64(len(b))*8; i++ {
			if (uint64(i) < off || uint64(i) >= off+uint64(width)) && refBit(b, i) != refBit(before, i) {
				t.Fatalf("width %d at %d changed bit %d", width, off, i)
			}
		}
		s := getSignedBits(b, off, width)
		if width < 64 && (s < -(1<<(width-1)) || s > 1<<(width-1)-1) {
			t.Fatalf("signed width %d read %d", width, s)
		}
		if uint64(s)&mask != v&mask {
			t.Fatalf("signed width %d read %d, bits %x", width, s, v&mask)
		}
	}
	// bits past the end read as zeros
	if got := getBits([]byte{0xff}, 4, 8); got != 0xf0 {
		t.Errorf("getBits past the end = %x, want f0", got)
	}
	if got := getSignedBits(nil, 1000, 64); got != 0 {
		t.Errorf("getSignedBits of nothing = %d", got)
	}
}

// The overflow checks, with values Redis 7.0.15 gives (its C arithmetic
// wraps: a SET of -2^63 into an i8 saturates at +127).
func TestBits_OverflowAsRedis(t *testing.T) {
	for _, tc := range []struct {
		value, incr int64
		width, ow   int
		limit       int64
		over        int
	}{
		{127, 1, 8, bfWrap, -128, 1},
		{127, 1, 8, bfSat, 127, 1},
		{-128, -1, 8, bfWrap, 127, -1},
		{-128, -1, 8, bfSat, -128, -1},
		{0, 100, 8, bfWrap, 0, 0},
		{-1, 300, 8, bfWrap, 43, 1},
		{200, 0, 8, bfSat, 127, 1},
		{200, 0, 8, bfWrap, -56, 1},
		{-200, 0, 8, bfSat, -128, -1},
		{math.MinInt64, 0, 8, bfSat, 127, 1}, // Redis's maxincr wraps
		{math.MinInt64 + 1, 0, 8, bfSat, 127, 1},
		{math.MinInt64, 0, 8, bfWrap, 0, 1},
		{math.MaxInt64, 1, 64, bfWrap, math.MinInt64, 1},
		{math.MaxInt64, 1, 64, bfSat, math.MaxInt64, 1},
		{math.MinInt64, -1, 64, bfSat, math.MinInt64, -1},
		{-1, math.MinInt64, 64, bfSat, math.MinInt64, -1},
		{0, math.MinInt64, 64, bfSat, 0, 0},
		{math.MinInt64, 0, 64, bfSat, 0, 0},
		{0, 1, 1, bfSat, 0, 1},
		{-1, -1, 1, bfWrap, 0, -1},
	} {
		limit, over := signedOverflow(tc.value, tc.incr, tc.width, tc.ow)
		if over != tc.over || (over != 0 && limit != tc.limit) {
			t.Errorf("signed i%d %d%+d (ow %d): %d, %d; want %d, %d", tc.width, tc.value, tc.incr, tc.ow, limit, over, tc.limit, tc.over)
		}
	}
	for _, tc := range []struct {
		value     uint64
		incr      int64
		width, ow int
		limit     uint64
		over      int
	}{
		{3, 1, 2, bfWrap, 0, 1},
		{3, 1, 2, bfSat, 3, 1},
		{0, -1, 2, bfWrap, 3, -1},
		{0, -1, 2, bfSat, 0, -1},
		{1, -10, 2, bfWrap, 3, -1},
		{2, 1, 2, bfSat, 0, 0},
		{256, 0, 8, bfWrap, 0, 1},
		{math.MaxUint64, 0, 8, bfSat, 255, 1}, // SET u8 -1
		{math.MaxUint64, 0, 8, bfWrap, 255, 1},
		{1 << 63, 0, 63, bfSat, 1<<63 - 1, 1},
		{1<<63 - 1, math.MinInt64, 63, bfSat, 0, -1},
		{1<<63 - 1, 1, 63, bfWrap, 0, 1},
	} {
		limit, over := unsignedOverflow(tc.value, tc.incr, tc.width, tc.ow)
		if over != tc.over || (over != 0 && limit != tc.limit) {
			t.Errorf("unsigned u%d %d%+d (ow %d): %d, %d; want %d, %d", tc.width, tc.value, tc.incr, tc.ow, limit, over, tc.limit, tc.over)
		}
	}
}

// ---- the commands ----

func TestSetRange_PadsGrowsAndKeepsTTL(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "SETRANGE", "k", "0", "")
	e.expect(":0", "EXISTS", "k")
	e.expect(":5", "SETRANGE", "k", "2", "abc")
	e.expect("$\x00\x00abc", "GET", "k")
	e.expect("$raw", "OBJECT", "ENCODING", "k")
	e.expect("+OK", "SET", "k", "Hello World", "EX", "100")
	e.expect(":11", "SETRANGE", "k", "6", "Redis")
	e.expect("$Hello Redis", "GET", "k")
	e.expect(":11", "SETRANGE", "k", "1000", "")
	e.expect(":100", "TTL", "k")
	e.expect("-"+ErrOffsetRange, "SETRANGE", "k", "-1", "x")
	e.expect("-"+ErrNotInteger, "SETRANGE", "k", "x", "x")
	e.expect("-"+ErrStringTooLong, "SETRANGE", "k", "536870912", "x")
	e.expect("-"+ErrStringTooLong, "SETRANGE", "k", "9223372036854775807", "xy") // no overflow
	e.expect(":1", "LPUSH", "l", "x")
	e.expect("-"+ErrWrongType, "SETRANGE", "l", "0", "")
}

func TestSetBit_RepliesOldBitAndEncodesRaw(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "SETBIT", "k", "7", "1")
	e.expect("$\x01", "GET", "k")
	e.expect(":1", "SETBIT", "k", "7", "0")
	e.expect(":0", "SETBIT", "k", "17", "1")
	e.expect("$\x00\x00\x40", "GET", "k")
	e.expect(":1", "GETBIT", "k", "17")
	e.expect(":0", "GETBIT", "k", "1000000")
	// unchanged bit of an int: still made raw, as dbUnshareStringValue
	e.expect("+OK", "SET", "n", "12")
	e.expect("$int", "OBJECT", "ENCODING", "n")
	e.expect(":0", "SETBIT", "n", "0", "0")
	e.expect("$raw", "OBJECT", "ENCODING", "n")
	e.expect("$12", "GET", "n")
	e.expect("-"+ErrBitValue, "SETBIT", "k", "0", "2")
	e.expect("-"+ErrBitValue, "SETBIT", "k", "0", "x")
	e.expect("-"+ErrBitOffset, "SETBIT", "k", "-1", "1")
	e.expect("-"+ErrBitOffset, "SETBIT", "k", "4294967296", "1")
	e.expect("-"+ErrBitOffset, "GETBIT", "k", "4294967296")
}

// An entry's bytes are never written once stored: a string already handed
// out (to a Lua script, say) keeps its value after a write.
func TestBits_WritesNeverChangeAValueHandedOut(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", strings.Repeat("a", 100))
	e.expect("$raw", "OBJECT", "ENCODING", "k")
	e.Lock()
	held := e.keys.get([]byte("k")).str()
	e.Unlock()
	e.expect(":1", "SETBIT", "k", "1", "0")
	e.expect(":100", "SETRANGE", "k", "0", "zz")
	e.expect("*1 :122", "BITFIELD", "k", "SET", "u8", "8", "97")
	e.expect("*1 :91", "BITFIELD", "k", "INCRBY", "u8", "16", "-6")
	if held != strings.Repeat("a", 100) {
		t.Fatalf("a value read before the writes changed: %q", held)
	}
	e.expect("$za["+strings.Repeat("a", 97), "GET", "k")
}

// Redis signals a modification (WATCH, tracking, keyspace events) only
// when SETBIT or BITFIELD changed something: created, grown or a different
// value written.
func TestBits_ModificationOnlyWhenChanged(t *testing.T) {
	e := newTestEngine(t)
	p := &recPublisher{}
	e.SetPublisher(p)
	flags, _ := ParseKeyspaceEvents("KEA")
	e.SetNotifyKeyspaceEvents(flags)
	var touched []string
	e.AddOnModified(func(key string) { touched = append(touched, key) })
	for _, tc := range []struct {
		args   []string
		reply  string
		events []string
	}{
		{[]string{"SETBIT", "k", "0", "0"}, ":0", []string{"setbit"}}, // created
		{[]string{"SETBIT", "k", "0", "0"}, ":0", nil},
		{[]string{"SETBIT", "k", "0", "1"}, ":0", []string{"setbit"}},
		{[]string{"SETBIT", "k", "9", "0"}, ":0", []string{"setbit"}}, // grown
		{[]string{"SET", "i", "12"}, "+OK", []string{"set"}},
		{[]string{"SETBIT", "i", "0", "0"}, ":0", nil}, // made raw, silently
		{[]string{"OBJECT", "ENCODING", "i"}, "$raw", nil},
		{[]string{"BITFIELD", "i", "SET", "u8", "0", "49"}, "*1 :49", nil},
		{[]string{"BITFIELD", "k", "SET", "u8", "0", "128"}, "*1 :128", nil},
		{[]string{"BITFIELD", "k", "SET", "u8", "0", "1"}, "*1 :128", []string{"setbit"}},
		{[]string{"BITFIELD", "k", "INCRBY", "u8", "0", "0"}, "*1 :1", nil},
		{[]string{"BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "255"}, "*1 (nil)", nil},
		{[]string{"BITFIELD", "k", "GET", "u8", "0", "GET", "u8", "100"}, "*2 :1 :0", nil},
		{[]string{"BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "10"}, "*1 (nil)", nil}, // created, silently
		{[]string{"SETRANGE", "k", "0", "\x01"}, ":2", []string{"setrange"}},                          // always
		{[]string{"SETRANGE", "k", "0", ""}, ":2", nil},
		{[]string{"BITOP", "NOT", "d", "k"}, ":2", []string{"set"}},
		{[]string{"BITOP", "AND", "d", "nosuch"}, ":0", []string{"del"}},
		{[]string{"BITOP", "AND", "d", "nosuch"}, ":0", nil},
	} {
		p.calls, touched = nil, nil
		e.expect(tc.reply, tc.args...)
		var events []string
		for _, c := range p.calls {
			if ev, ok := strings.CutPrefix(c, "publish __keyevent@0__:"); ok && !strings.HasPrefix(ev, "new ") && !strings.HasPrefix(ev, "keymiss ") {
				events = append(events, strings.Fields(ev)[0])
			}
		}
		if !reflect.DeepEqual(events, tc.events) {
			t.Errorf("%q: events %q, want %q", tc.args, events, tc.events)
		}
		if want := len(tc.events); len(touched) != want {
			t.Errorf("%q: modified %q, want %d", tc.args, touched, want)
		}
	}
	e.expect(":1", "EXISTS", "f")
	e.expect(":13", "STRLEN", "f")
}

func TestBitCount_RangesAndUnits(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "BITCOUNT", "nosuch", "a", "b") // before the arguments are read
	e.expect("+OK", "SET", "k", "foobar")
	e.expect(":26", "BITCOUNT", "k")
	e.expect(":4", "BITCOUNT", "k", "0", "0")
	e.expect(":6", "BITCOUNT", "k", "1", "1")
	e.expect(":17", "BITCOUNT", "k", "5", "30", "BIT")
	e.expect(":0", "BITCOUNT", "k", "-1", "-5", "nonsense") // an empty range first
	e.expect("-"+ErrSyntax, "BITCOUNT", "k", "0")
	e.expect("-"+ErrSyntax, "BITCOUNT", "k", "0", "1", "bits")
	e.expect(":4", "BITCOUNT", "k", "0", "0", "byte\x00x") // a C string
	e.expect("-"+ErrNotInteger, "BITCOUNT", "k", "x", "1")
}

func TestBitPos_ClearBitPaddingOnlyWithoutEnd(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "BITPOS", "nosuch", "0")
	e.expect(":-1", "BITPOS", "nosuch", "1")
	e.expect("+OK", "SET", "k", "\xff\xff\xff")
	e.expect(":24", "BITPOS", "k", "0")
	e.expect(":24", "BITPOS", "k", "0", "1")
	e.expect(":-1", "BITPOS", "k", "0", "0", "-1")
	e.expect(":-1", "BITPOS", "k", "0", "0", "23", "BIT")
	e.expect(":-1", "BITPOS", "k", "0", "5") // start past the end
	e.expect("+OK", "SET", "k", "\x00\xff\xf0")
	e.expect(":8", "BITPOS", "k", "1")
	e.expect(":20", "BITPOS", "k", "0", "12", "-1", "BIT")
	e.expect(":12", "BITPOS", "k", "1", "12", "-1", "BIT")
	e.expect(":-1", "BITPOS", "k", "1", "0", "7", "BIT")
	e.expect("+OK", "SET", "e", "")
	e.expect(":-1", "BITPOS", "e", "0")
	e.expect("-"+ErrBitArg, "BITPOS", "k", "2")
	e.expect("-"+ErrSyntax, "BITPOS", "k", "0", "0", "1", "FOO")
	e.expect("-"+ErrSyntax, "BITPOS", "k", "0", "0", "x", "FOO") // the unit is read before the end
}

func TestBitOp_ResultAndTarget(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "MSET", "a", "\xff\x0f\x01", "b", "\x0f")
	e.expect(":3", "BITOP", "AND", "d", "a", "b")
	e.expect("$\x0f\x00\x00", "GET", "d")
	e.expect(":3", "BITOP", "or", "d", "a", "b")
	e.expect("$\xff\x0f\x01", "GET", "d")
	e.expect(":3", "BITOP", "XOR", "d", "a", "b")
	e.expect("$\xf0\x0f\x01", "GET", "d")
	e.expect(":3", "BITOP", "NOT", "d", "a")
	e.expect("$\x00\xf0\xfe", "GET", "d")
	e.expect("$raw", "OBJECT", "ENCODING", "d")
	e.expect("+OK", "SET", "t", "x", "EX", "100")
	e.expect(":3", "BITOP", "OR", "t", "a")
	e.expect(":-1", "TTL", "t")
	e.expect(":0", "BITOP", "OR", "t", "nosuch")
	e.expect(":0", "EXISTS", "t")
	e.expect("-"+ErrBitopNot, "BITOP", "NOT", "d", "a", "b")
	e.expect("-"+ErrSyntax, "BITOP", "NAND", "d", "a")
	e.expect(":1", "LPUSH", "l", "x")
	e.expect("-"+ErrWrongType, "BITOP", "AND", "d", "a", "l")
}

func TestBitField_OpsAndErrors(t *testing.T) {
	e := newTestEngine(t)
	e.expect("*2 :0 :0", "BITFIELD", "k", "GET", "u8", "0", "GET", "i64", "100")
	e.expect(":0", "EXISTS", "k")
	e.expect("*3 :0 :255 :-1", "BITFIELD", "k", "SET", "u8", "#1", "255", "GET", "u8", "8", "GET", "i8", "#1")
	e.expect(":2", "STRLEN", "k")
	e.expect("*4 :3 :0 :1 :0", "BITFIELD", "k", "INCRBY", "u2", "0", "3", "INCRBY", "u2", "0", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "0", "1", "INCRBY", "u2", "0", "-5")
	e.expect("*2 (nil) :0", "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "4", "GET", "u2", "0")
	e.expect("*1 :1", "BITFIELD_RO", "k", "GET", "u1", "15")
	e.expect("-"+ErrBitfieldRO, "BITFIELD_RO", "k", "SET", "u8", "0", "1")
	e.expect("-"+ErrBitfieldType, "BITFIELD_RO", "k", "SET", "u64", "0", "1") // arguments first
	e.expect("-"+ErrBitfieldType, "BITFIELD", "k", "GET", "U8", "0")
	e.expect("-"+ErrBitfieldType, "BITFIELD", "k", "GET", "i65", "0")
	e.expect("*1 :0", "BITFIELD", "k", "GET", "i8\x00x", "0") // a C string
	e.expect("-"+ErrBitOffset, "BITFIELD", "k", "GET", "u8", "#-1")
	e.expect("-"+ErrBitfieldOFType, "BITFIELD", "k", "OVERFLOW", "BOUNCE")
	e.expect("-"+ErrSyntax, "BITFIELD", "k", "SET", "u8", "0")
	e.expect("-"+ErrNotInteger, "BITFIELD", "k", "SET", "u8", "0", "x")
	e.expect("$\x00\xff", "GET", "k") // no error wrote anything
}

func TestLCS_StringLenAndIdx(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "MSET", "a", "ohmytext", "b", "mynewtext")
	e.expect("$mytext", "LCS", "a", "b")
	e.expect(":6", "LCS", "a", "b", "LEN")
	e.expect("%2 $matches *2 *2 *2 :4 :7 *2 :5 :8 *2 *2 :2 :3 *2 :0 :1 $len :6", "LCS", "a", "b", "IDX")
	e.expect("%2 $matches *1 *3 *2 :4 :7 *2 :5 :8 :4 $len :6", "LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN")
	e.expect("$", "LCS", "a", "nosuch")
	e.expect(":0", "LCS", "nosuch", "nosuch", "LEN")
	e.expect("-"+ErrLCSLenAndIdx, "LCS", "a", "b", "LEN", "IDX")
	e.expect(":1", "LPUSH", "l", "x")
	e.expect("-"+ErrLCSType, "LCS", "a", "l", "FOO")
	// of the LCSs of length 5, the one Redis's walk back finds
	e.expect("+OK", "MSET", "a", "abcabcabc", "b", "cbacbacba")
	e.expect("$cbabc", "LCS", "a", "b")
	e.SetProtoMaxBulkLen(1 << 20)
	e.expect("+OK", "MSET", "a", strings.Repeat("x", 600), "b", strings.Repeat("x", 500))
	e.expect("-"+ErrLCSMemLimit, "LCS", "a", "b", "LEN")
}

// LEN's two rows give the table's length.
func TestLCS_LenMatchesTable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	e := newTestEngine(t)
	for iter := 0; iter < 200; iter++ {
		word := func() string {
			b := make([]byte, r.IntN(30))
			for i := range b {
				b[i] = "abc"[r.IntN(3)]
			}
			return string(b)
		}
		a, b := word(), word()
		e.expect("+OK", "MSET", "a", a, "b", b)
		got := e.do("LCS", "a", "b", "IDX")
		i := strings.LastIndex(got, "$len :")
		if i < 0 {
			t.Fatalf("LCS IDX %q %q: %q", a, b, got)
		}
		n, _ := strconv.Atoi(got[i+len("$len :"):])
		e.expect(":"+strconv.Itoa(n), "LCS", "a", "b", "LEN")
		lcs := strings.TrimPrefix(e.do("LCS", "a", "b"), "$")
		if len(lcs) != n || !isSubsequence(lcs, a) || !isSubsequence(lcs, b) {
			t.Fatalf("LCS %q %q = %q, length %d", a, b, lcs, n)
		}
	}
}

func isSubsequence(s, of string) bool {
	for i := 0; i < len(of) && len(s) > 0; i++ {
		if of[i] == s[0] {
			s = s[1:]
		}
	}
	return s == ""
}

// The read commands count keyspace hits and misses as Redis's
// lookupKeyRead; the writes do not (lookupKeyWrite).
func TestBits_KeyspaceHitsAndMisses(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v")
	for _, tc := range []struct {
		args         []string
		hits, misses int64
	}{
		{[]string{"GETBIT", "k", "0"}, 1, 0},
		{[]string{"GETBIT", "k", "-1"}, 0, 0}, // the offset is read first
		{[]string{"BITCOUNT", "nosuch"}, 0, 1},
		{[]string{"BITPOS", "k", "2"}, 0, 0},
		{[]string{"BITOP", "AND", "d", "k", "nosuch"}, 1, 1},
		{[]string{"BITFIELD", "k", "GET", "u8", "0"}, 1, 0},
		{[]string{"BITFIELD", "k", "SET", "u8", "0", "1"}, 0, 0},
		{[]string{"SETBIT", "k", "0", "1"}, 0, 0},
		{[]string{"SETRANGE", "k", "0", "x"}, 0, 0},
		{[]string{"LCS", "k", "nosuch"}, 1, 1},
	} {
		h0, m0 := e.Stats.KeyspaceHits.Load(), e.Stats.KeyspaceMisses.Load()
		e.do(tc.args...)
		if h, m := e.Stats.KeyspaceHits.Load()-h0, e.Stats.KeyspaceMisses.Load()-m0; h != tc.hits || m != tc.misses {
			t.Errorf("%q: %d hits %d misses, want %d %d", tc.args, h, m, tc.hits, tc.misses)
		}
	}
}

// SETBIT, SETRANGE and BITFIELD keep a key's TTL; an expired key is
// missing to them.
func TestBits_TTLKeptAndExpiredKeyMissing(t *testing.T) {
	e := newTestEngine(t)
	for _, args := range [][]string{
		{"SETBIT", "k", "100", "1"},
		{"SETRANGE", "k", "20", "x"},
		{"BITFIELD", "k", "SET", "u8", "200", "7"},
	} {
		e.expect("+OK", "SET", "k", "v", "PX", "5000")
		e.do(args...)
		e.expect(":5000", "PTTL", "k")
	}
	e.expect("+OK", "SET", "k", "\xff", "PX", "10")
	e.clock.Advance(20 * time.Millisecond)
	e.expect(":0", "SETBIT", "k", "0", "1")
	e.expect("$\x80", "GET", "k")
	e.expect(":-1", "PTTL", "k")
}

// With proto-max-bulk-len raised past 4 GB, a write that would make a
// string longer than an entry holds is refused, before it allocates.
func TestBits_LongerThanAnEntryRefused(t *testing.T) {
	e := newTestEngine(t)
	e.SetProtoMaxBulkLen(8 << 30)
	e.expect("-"+ErrStringTooLong, "SETBIT", "k", strconv.Itoa(5<<33), "1")
	e.expect("-"+ErrStringTooLong, "SETRANGE", "k", "5000000000", "x")
	e.expect("-"+ErrStringTooLong, "BITFIELD", "k", "SET", "u8", strconv.Itoa(5<<33), "1")
	e.expect(":0", "GETBIT", "k", strconv.Itoa(5<<33))
	e.expect(":0", "EXISTS", "k")
}

// An LCS table past 4 GB is refused as Redis refuses one it fails to
// allocate, even when proto-max-bulk-len allows it. (LEN, which needs no
// table, would run: a billion cells, too slow for a test.)
func TestLCS_HugeTableRefusedUnlessLen(t *testing.T) {
	e := newTestEngine(t)
	e.SetProtoMaxBulkLen(1 << 40)
	e.expect("+OK", "MSET", "a", strings.Repeat("ab", 20000), "b", strings.Repeat("ba", 20000)) // 6.4 GB of cells
	e.expect("-"+ErrLCSAlloc, "LCS", "a", "b")
	e.expect("-"+ErrLCSAlloc, "LCS", "a", "b", "IDX")
}
