package engine

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// The ring-buffer deque against a plain slice, over random operations,
// including growth, wrap-around, shrinking and middle insertion.
func TestList_MatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var l list
	var model []string
	for step := 0; step < 20000; step++ {
		v := strconv.Itoa(step)
		switch op := rng.Intn(10); {
		case op < 3:
			l.PushBack(v)
			model = append(model, v)
		case op < 6:
			l.PushFront(v)
			model = append([]string{v}, model...)
		case op < 7 && len(model) > 0:
			if got := l.PopFront(); got != model[0] {
				t.Fatalf("step %d PopFront = %q, want %q", step, got, model[0])
			}
			model = model[1:]
		case op < 8 && len(model) > 0:
			if got := l.PopBack(); got != model[len(model)-1] {
				t.Fatalf("step %d PopBack = %q, want %q", step, got, model[len(model)-1])
			}
			model = model[:len(model)-1]
		case op < 9:
			i := rng.Intn(len(model) + 1)
			l.Insert(i, v)
			model = append(model[:i], append([]string{v}, model[i:]...)...)
		default:
			if len(model) > 0 && rng.Intn(4) == 0 {
				left, right := rng.Intn(len(model)+1), rng.Intn(len(model)+1)
				l.Trim(left, right)
				if left+right >= len(model) {
					model = nil
				} else {
					model = model[left : len(model)-right]
				}
			}
		}
		if l.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, want %d", step, l.Len(), len(model))
		}
		if step%97 == 0 {
			for i, want := range model {
				if got := l.At(i); got != want {
					t.Fatalf("step %d: At(%d) = %q, want %q", step, i, got, want)
				}
			}
		}
	}
}

func TestList_ShrinksAfterDraining(t *testing.T) {
	var l list
	for i := 0; i < 100000; i++ {
		l.PushBack("x")
	}
	for l.Len() > 1 {
		l.PopFront()
	}
	if c := len(l.buf); c > listMinCap {
		t.Fatalf("capacity %d after draining to one element", c)
	}
}

func TestList_FilterKeepsOrder(t *testing.T) {
	var l list
	for _, s := range strings.Split("a b a c a", " ") {
		l.PushBack(s)
	}
	n := 0
	l.Filter(true, func(s string) bool { // remove the last two "a"
		if s == "a" && n < 2 {
			n++
			return false
		}
		return true
	})
	var got []string
	for i := 0; i < l.Len(); i++ {
		got = append(got, l.At(i))
	}
	if strings.Join(got, " ") != "a b c" {
		t.Fatalf("got %q", got)
	}
}

// defaults are Redis 7.0's encoding thresholds, for value types tested
// outside a command.
var defaults = DefaultEncodingLimits()

func TestHash_CompactUntilLimitsThenTable(t *testing.T) {
	h := newHash()
	for i := 0; i < 512; i++ {
		h.Set("f"+strconv.Itoa(i), "v", &defaults)
	}
	if h.Encoding() != "listpack" {
		t.Fatalf("%d fields: %s", h.Len(), h.Encoding())
	}
	var order []string
	h.Each(func(f, _ string) { order = append(order, f) })
	if order[0] != "f0" || order[len(order)-1] != "f511" {
		t.Fatal("compact form does not keep insertion order")
	}
	h.Set("one-more", "v", &defaults)
	if h.Encoding() != "hashtable" || h.Len() != 513 {
		t.Fatalf("after %d fields: %s", h.Len(), h.Encoding())
	}
	for i := 0; i < 400; i++ {
		h.Del("f" + strconv.Itoa(i))
	}
	if h.Encoding() != "hashtable" {
		t.Fatal("a hash never goes back to the compact form")
	}
	h2 := newHash()
	h2.Set("a", strings.Repeat("x", 64), &defaults)
	if h2.Encoding() != "listpack" {
		t.Fatal("a 64-byte value fits the compact form")
	}
	h2.Set(strings.Repeat("y", 65), "v", &defaults)
	if h2.Encoding() != "hashtable" {
		t.Fatal("a 65-byte field must convert")
	}
	if v, ok := h2.Get("a"); !ok || len(v) != 64 {
		t.Fatal("conversion lost a field")
	}
}

// Expected values are redis-server's replies (hash.txt checks more).
func TestHIncrByFloat_LongDoublePrecision(t *testing.T) {
	e := newTestEngine(t)
	e.expect("$0.1", "HINCRBYFLOAT", "h", "a", "0.1")
	e.expect("$0.3", "HINCRBYFLOAT", "h", "a", "0.2") // float64 would say 0.30000000000000004
	e.expect("$3.33333333333333333", "HINCRBYFLOAT", "h", "c", "3.3333333333333333333")
	e.expect("$-0.5", "HINCRBYFLOAT", "h", "d", "-0.5")
	e.expect("$0", "HINCRBYFLOAT", "h", "d", "0.5")
	e.expect("$0.125", "HINCRBYFLOAT", "h", "e", "0x1p-3")
	e.expect("$0", "HINCRBYFLOAT", "h", "g", "1e-20")
	e.expect("$100000000000000000000", "HINCRBYFLOAT", "h", "b", "1e20")
	e.expect("-ERR value is NaN or Infinity", "HINCRBYFLOAT", "h", "x", "inf")
	e.expect("-"+ErrNotFloat, "HINCRBYFLOAT", "h", "x", "nan")
	e.expect("-"+ErrNotFloat, "HINCRBYFLOAT", "h", "x", "1e5000")
	e.expect(":1", "HSET", "h", "s", "x")
	e.expect("-ERR hash value is not a float", "HINCRBYFLOAT", "h", "s", "1")
}

// HSCAN returns a whole hash with cursor 0: a compact one in insertion
// order (as Redis), a table one too (1000 fields here), every pair once,
// MATCH filtering on the field. compat/diff/testdata/hash.txt diffs the
// compact cases and the errors against redis-server.
func TestHScan_WholeHashCursorZero(t *testing.T) {
	te := newTestEngine(t)
	te.expect(":3", "HSET", "h", "b", "1", "a", "2", "ab", "3")
	te.expect("*2 $0 *6 $b $1 $a $2 $ab $3", "HSCAN", "h", "0")
	te.expect("*2 $0 *4 $a $2 $ab $3", "HSCAN", "h", "7", "MATCH", "a*", "COUNT", "1")
	te.expect("*2 $0 *0", "HSCAN", "missing", "0")
	te.expect("-"+ErrSyntax, "HSCAN", "h", "0", "TYPE", "hash")
	te.expect("-"+ErrInvalidCursor, "HSCAN", "h", "x")
	args := []string{"HSET", "big"}
	for i := 0; i < 1000; i++ {
		args = append(args, "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	te.expect(":1000", args...)
	te.expect("$hashtable", "OBJECT", "ENCODING", "big")
	// a hashtable is paged: every pair once (nothing changes meanwhile)
	seen := map[string]bool{}
	pages := scanAll(t, te, "HSCAN", "big", 10, func(item []string) {
		f, v := item[0], item[1]
		if seen[f] || "v"+f[1:] != v {
			t.Fatalf("pair %q %q (seen before: %v)", f, v, seen[f])
		}
		seen[f] = true
	}, "COUNT", "10")
	if len(seen) != 1000 || pages < 100 {
		t.Fatalf("HSCAN of 1000 fields, COUNT 10: %d fields in %d pages", len(seen), pages)
	}
	// f99 and f990..f999: 11 fields
	n := 0
	scanAll(t, te, "HSCAN", "big", 1000, func([]string) { n++ }, "MATCH", "f99*", "COUNT", "1000")
	if n != 11 {
		t.Fatalf("HSCAN MATCH f99*: %d fields", n)
	}
}

// HRANDFIELD: distinct fields for a positive count (in the hash's order
// from a compact hash), repeats for a negative one, WITHVALUES pairs
// (RESP3: [field, value] arrays), and the whole hash when count >= size.
// compat/diff/testdata/hash.txt diffs the deterministic cases and the
// errors against redis-server.
func TestHRandField(t *testing.T) {
	te := newTestEngine(t)
	te.expect(":4", "HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4")
	order := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}
	for i := 0; i < 50; i++ {
		f := strings.Fields(te.do("HRANDFIELD", "h", "2"))
		if len(f) != 3 || f[0] != "*2" || f[1] == f[2] || order[f[1][1:]] >= order[f[2][1:]] {
			t.Fatalf("HRANDFIELD h 2: %q (want 2 distinct fields in the hash's order)", f)
		}
		f = strings.Fields(te.do("HRANDFIELD", "h", "-6", "WITHVALUES"))
		if len(f) != 13 || f[0] != "*12" {
			t.Fatalf("HRANDFIELD h -6 WITHVALUES: %q", f)
		}
		for j := 1; j < len(f); j += 2 {
			if want := strconv.Itoa(order[f[j][1:]] + 1); f[j+1] != "$"+want {
				t.Fatalf("HRANDFIELD h -6 WITHVALUES: %q: %s's value", f, f[j])
			}
		}
		if g := te.do("HRANDFIELD", "h"); order[strings.TrimPrefix(g, "$")] == 0 && g != "$a" {
			t.Fatalf("HRANDFIELD h: %q", g)
		}
	}
	te.expect("*4 $a $b $c $d", "HRANDFIELD", "h", "4")
	w := &enginetest.TextWriter{P: 3}
	te.Exec(&Ctx{Args: [][]byte{[]byte("HRANDFIELD"), []byte("h"), []byte("9"), []byte("WITHVALUES")}, W: w})
	if got := w.String(); got != "*4 *2 $a $1 *2 $b $2 *2 $c $3 *2 $d $4" {
		t.Errorf("RESP3 WITHVALUES: %q", got)
	}
	te.expect("-ERR value is out of range", "HRANDFIELD", "h", "-100000000")
	te.expect("*0", "HRANDFIELD", "missing", "5")
	te.expect("(nil)", "HRANDFIELD", "missing")
}

// INCRBYFLOAT adds as a C long double; expected values are
// redis-server's replies (incr.txt diffs more against it).
func TestIncrByFloat_LongDouble(t *testing.T) {
	e := newTestEngine(t)
	e.expect("$0.1", "INCRBYFLOAT", "q", "0.1")
	e.expect("$0.3", "INCRBYFLOAT", "q", "0.2")
	e.expect("$0", "INCRBYFLOAT", "q", "-0.3")
	e.expect("$1.23456789012345679", "INCRBYFLOAT", "q", "1.23456789012345678901")
	e.expect("+OK", "SET", "x", "1")
	e.expect("$3", "INCRBYFLOAT", "x", "2")
	e.expect("$embstr", "OBJECT", "ENCODING", "x") // not int-encoded, as Redis
	e.expect("$19", "INCRBYFLOAT", "x", "0x10")
	e.expect("+OK", "SET", "z", "5", "EX", "100")
	e.expect("$5.5", "INCRBYFLOAT", "z", "0.5")
	e.expect(":100", "TTL", "z") // the TTL is kept
	e.expect("-"+ErrIncrNaNOrInf, "INCRBYFLOAT", "n", "inf")
	e.expect("+OK", "SET", "w", "inf")
	e.expect("-"+ErrIncrNaNOrInf, "INCRBYFLOAT", "w", "-inf")
	e.expect("-"+ErrNotFloat, "INCRBYFLOAT", "q", "1e4933") // past long double's range
	e.expect("+OK", "SET", "big", "1e4932")
	e.expect("-"+ErrIncrNaNOrInf, "INCRBYFLOAT", "big", "1e4932") // the sum overflows
	e.expect("-"+ErrNotFloat, "INCRBYFLOAT", "n", " 1")
	e.expect("+OK", "SET", "s", "abc")
	e.expect("-"+ErrNotFloat, "INCRBYFLOAT", "s", "1")
	e.expect(":1", "RPUSH", "l", "a")
	e.expect("-"+ErrWrongType, "INCRBYFLOAT", "l", "abc")
	e.expect(":0", "EXISTS", "n")
}
