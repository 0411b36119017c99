package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// A set keeps the width of the widest integer it held, as Redis's intset
// never narrows: DUMP writes it.
func TestDump_IntsetKeepsWidth(t *testing.T) {
	te := newTestEngine(t)
	te.do("SADD", "s", "1", "1099511627776")
	te.do("SREM", "s", "1099511627776")
	p := te.do("DUMP", "s")[1:]
	if want := "\x0b\x10\x08\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"; !strings.HasPrefix(p, want) {
		t.Errorf("DUMP %q, want it to start %q", p, want)
	}
	// and RESTORE keeps a payload's width
	te.expect("+OK", "RESTORE", "t", "0", p)
	if q := te.do("DUMP", "t")[1:]; q != p {
		t.Errorf("DUMP after RESTORE %q, want %q", q, p)
	}
}

// payloadOf is a DUMP payload of an RDB type and its object bytes.
func payloadOf(typ byte, obj []byte) string {
	return string(dumpFooter(append([]byte{typ}, obj...)))
}

func rdbStr(s string) []byte { return rdbAppendString(nil, []byte(s)) }

// RESTORE reads every type Redis 7.0 reads in a payload, the older
// encodings included, and gives each the encoding Redis 7.0 gives it.
func TestRestore_Types(t *testing.T) {
	te := newTestEngine(t)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	n := func(v uint64) []byte { return rdbAppendLen(nil, v) }
	f64 := func(f float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)) }
	for _, tc := range []struct {
		name    string
		payload string
		enc     string
		read    []string // a command and its reply
	}{
		{"string", payloadOf(rdbTypeString, rdbStr("hello")), "embstr", []string{"$hello", "GET"}},
		{"int", payloadOf(rdbTypeString, rdbStr("-123")), "int", []string{"$-123", "GET"}},
		{"lzf", payloadOf(rdbTypeString, rdbStr(strings.Repeat("ab", 40))), "raw", []string{"$" + strings.Repeat("ab", 40), "GET"}},
		{"list v1", payloadOf(rdbTypeList, cat(n(2), rdbStr("a"), rdbStr("7"))), "quicklist", []string{"*2 $a $7", "LRANGE", "0", "-1"}},
		{"quicklist ziplist", payloadOf(rdbTypeListQuicklist, cat(n(3), rdbStr(string(zlOf("a", "1"))), rdbStr(string(zlOf())), rdbStr(string(zlOf("b"))))), "quicklist", []string{"*3 $a $1 $b", "LRANGE", "0", "-1"}},
		{"quicklist 2", payloadOf(rdbTypeListQuicklist2, cat(n(2), n(qlPacked), rdbStr(string(lpOf("a", "-5"))), n(qlPlain), rdbStr("plain"))), "quicklist", []string{"*3 $a $-5 $plain", "LRANGE", "0", "-1"}},
		{"list ziplist", payloadOf(rdbTypeListZiplist, rdbStr(string(zlOf("x", "300")))), "quicklist", []string{"*2 $x $300", "LRANGE", "0", "-1"}},
		{"set intset", payloadOf(rdbTypeSet, cat(n(2), rdbStr("5"), rdbStr("-70000"))), "intset", []string{"~2 $-70000 $5", "SMEMBERS"}},
		{"set table", payloadOf(rdbTypeSet, cat(n(2), rdbStr("5"), rdbStr("x"))), "hashtable", []string{":2", "SCARD"}},
		{"intset", payloadOf(rdbTypeSetIntset, rdbStr(string(intsetBlob([]int64{9, 8}, 2)))), "intset", []string{"~2 $8 $9", "SMEMBERS"}},
		{"zset text", payloadOf(rdbTypeZset, cat(n(3), rdbStr("a"), []byte{3}, []byte("1.5"), rdbStr("b"), []byte{255}, rdbStr("c"), []byte{4}, []byte(" 2xy"))), "listpack", []string{"*6 $b ,-Inf $a ,1.5 $c ,2", "ZRANGE", "0", "-1", "WITHSCORES"}},
		{"zset binary", payloadOf(rdbTypeZset2, cat(n(2), rdbStr("b"), f64(2), rdbStr("a"), f64(-0.0))), "listpack", []string{"*4 $a ,0 $b ,2", "ZRANGE", "0", "-1", "WITHSCORES"}},
		{"zset listpack", payloadOf(rdbTypeZsetListpack, rdbStr(string(lpOf("a", "1", "b", "2.5")))), "listpack", []string{",2.5", "ZSCORE", "b"}},
		{"zset ziplist", payloadOf(rdbTypeZsetZiplist, rdbStr(string(zlOf("a", "1", "b", "inf")))), "listpack", []string{",+Inf", "ZSCORE", "b"}},
		{"hash", payloadOf(rdbTypeHash, cat(n(2), rdbStr("f"), rdbStr("v"), rdbStr("g"), rdbStr("w"))), "listpack", []string{"%2 $f $v $g $w", "HGETALL"}},
		{"hash long value", payloadOf(rdbTypeHash, cat(n(1), rdbStr("f"), rdbStr(strings.Repeat("v", 65)))), "hashtable", []string{":65", "HSTRLEN", "f"}},
		{"hash listpack", payloadOf(rdbTypeHashListpack, rdbStr(string(lpOf("f", strings.Repeat("v", 65))))), "listpack", []string{":65", "HSTRLEN", "f"}},
		{"hash ziplist", payloadOf(rdbTypeHashZiplist, rdbStr(string(zlOf("f", "1")))), "listpack", []string{"%1 $f $1", "HGETALL"}},
		{"hash zipmap", payloadOf(rdbTypeHashZipmap, rdbStr(string(zipmapOf("f", "v")))), "listpack", []string{"%1 $f $v", "HGETALL"}},
		{"hash zipmap long", payloadOf(rdbTypeHashZipmap, rdbStr(string(zipmapOf("f", strings.Repeat("v", 65))))), "hashtable", []string{":1", "HLEN"}},
	} {
		te.do("DEL", "k")
		if got := te.do("RESTORE", "k", "0", tc.payload); got != "+OK" {
			t.Errorf("%s: RESTORE %s", tc.name, got)
			continue
		}
		if got := te.do("OBJECT", "ENCODING", "k"); got != "$"+tc.enc {
			t.Errorf("%s: encoding %s, want %s", tc.name, got, tc.enc)
		}
		args := append([]string{tc.read[1], "k"}, tc.read[2:]...)
		if got := te.do(args...); got != tc.read[0] {
			t.Errorf("%s: %v: %s, want %s", tc.name, args, got, tc.read[0])
		}
	}
}

// What Redis refuses (and what Redis 7.0 would take with its default
// shallow checks, then crash on) is "Bad data format", never a panic.
func TestRestore_BadPayloads(t *testing.T) {
	te := newTestEngine(t)
	n := func(v uint64) []byte { return rdbAppendLen(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for name, p := range map[string]string{
		"no type":           string(dumpFooter(nil)),
		"unknown type":      payloadOf(8, nil),
		"type 20":           payloadOf(20, nil),
		"module":            payloadOf(rdbTypeModule2, n(1)),
		"truncated string":  payloadOf(rdbTypeString, n(200)),
		"empty list":        payloadOf(rdbTypeList, n(0)),
		"empty quicklist":   payloadOf(rdbTypeListQuicklist2, cat(n(1), n(qlPacked), rdbStr(string(lpOf())))),
		"bad container":     payloadOf(rdbTypeListQuicklist2, cat(n(1), n(3), rdbStr(string(lpOf("a"))))),
		"empty node":        payloadOf(rdbTypeListQuicklist2, cat(n(1), n(qlPlain), rdbStr(""))),
		"dup set":           payloadOf(rdbTypeSet, cat(n(2), rdbStr("1"), rdbStr("1"))),
		"dup table set":     payloadOf(rdbTypeSet, cat(n(2), rdbStr("x"), rdbStr("x"))),
		"dup hash":          payloadOf(rdbTypeHash, cat(n(2), rdbStr("f"), rdbStr("1"), rdbStr("f"), rdbStr("2"))),
		"dup hash listpack": payloadOf(rdbTypeHashListpack, rdbStr(string(lpOf("f", "1", "f", "2")))),
		"odd hash listpack": payloadOf(rdbTypeHashListpack, rdbStr(string(lpOf("f", "1", "g")))),
		"empty hash lp":     payloadOf(rdbTypeHashListpack, rdbStr(string(lpOf()))),
		"dup zset":          payloadOf(rdbTypeZset2, cat(n(2), rdbStr("a"), make([]byte, 8), rdbStr("a"), make([]byte, 8))),
		"nan zset":          payloadOf(rdbTypeZset, cat(n(1), rdbStr("a"), []byte{253})),
		"bad text score":    payloadOf(rdbTypeZset, cat(n(1), rdbStr("a"), []byte{2}, []byte("xy"))),
		"bad lp score":      payloadOf(rdbTypeZsetListpack, rdbStr(string(lpOf("a", "x")))),
		"nan lp score":      payloadOf(rdbTypeZsetListpack, rdbStr(string(lpOf("a", "nan")))),
		"bad intset":        payloadOf(rdbTypeSetIntset, rdbStr("\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00")),
		"bad ziplist":       payloadOf(rdbTypeListZiplist, rdbStr("garbage!!!!!")),
		"huge count":        payloadOf(rdbTypeSet, n(1<<60)),
		"huge string":       payloadOf(rdbTypeString, n(1<<60)),
		"huge lzf":          payloadOf(rdbTypeString, cat([]byte{0xc0 | rdbEncLZF}, n(2), n(1<<40), []byte{0, 'a'})),
		"lzf over ratio":    payloadOf(rdbTypeString, cat([]byte{0xc0 | rdbEncLZF}, n(2), n(1000), []byte{0, 'a'})),
		"bad lzf":           payloadOf(rdbTypeString, cat([]byte{0xc0 | rdbEncLZF}, n(2), n(3), []byte{0, 'a'})),
		"bad length enc":    payloadOf(rdbTypeString, []byte{0x82}),
		"bad string enc":    payloadOf(rdbTypeString, []byte{0xc4}),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if got := te.do("RESTORE", "k", "0", p, "REPLACE"); got != "-"+ErrBadDataFormat {
			t.Errorf("%s: %s", name, got)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%s: allocated %d bytes", name, d)
		}
	}
	te.expect(":0", "EXISTS", "k")
	te.expect("-"+ErrRestoreNoStreams, "RESTORE", "k", "0", payloadOf(rdbTypeStream2, n(0)))
	// an LZF string claiming no bytes is empty, whatever follows (Redis's
	// lzf_decompress fails with 0, the length it wanted)
	te.expect("+OK", "RESTORE", "k", "0", payloadOf(rdbTypeString, cat([]byte{0xc0 | rdbEncLZF}, n(2), n(0), []byte{0, 'a'})))
	te.expect("$", "GET", "k")
}

// RESTORE's checks come in Redis's order: options, BUSYKEY, the TTL,
// the footer, the payload.
func TestRestore_ErrorOrder(t *testing.T) {
	te := newTestEngine(t)
	te.do("SET", "k", "v")
	good := payloadOf(rdbTypeString, rdbStr("x"))
	te.expect("-ERR syntax error", "RESTORE", "k", "x", "x", "FREQ", "1", "IDLETIME", "1")
	te.expect("-ERR syntax error", "RESTORE", "k", "x", "x", "IDLETIME")
	te.expect("-"+ErrBadFreq, "RESTORE", "k", "x", "x", "FREQ", "256")
	te.expect("-"+ErrBadIdleTime, "RESTORE", "k", "x", "x", "IDLETIME", "-1")
	te.expect("-"+ErrNotInteger, "RESTORE", "k", "x", "x", "IDLETIME", "x")
	te.expect("-"+ErrBusyKey, "RESTORE", "k", "x", "x")
	te.expect("-"+ErrNotInteger, "RESTORE", "k", "x", "x", "REPLACE")
	te.expect("-"+ErrBadTTL, "RESTORE", "k", "-1", "x", "REPLACE")
	te.expect("-"+ErrDumpPayload, "RESTORE", "k", "0", "x", "REPLACE")
	te.expect("-"+ErrDumpPayload, "RESTORE", "k", "0", good[:len(good)-1]+"\x00", "REPLACE")
	newer := []byte(good)
	binary.LittleEndian.PutUint16(newer[len(newer)-10:], rdbVersion+1)
	binary.LittleEndian.PutUint64(newer[len(newer)-8:], rdbCRC64(newer[:len(newer)-8]))
	te.expect("-"+ErrDumpPayload, "RESTORE", "k", "0", string(newer), "REPLACE")
	older := []byte(good)
	binary.LittleEndian.PutUint16(older[len(older)-10:], 9)
	binary.LittleEndian.PutUint64(older[len(older)-8:], rdbCRC64(older[:len(older)-8]))
	te.expect("+OK", "RESTORE", "k", "0", string(older), "REPLACE", "ABSTTL", "IDLETIME", "5", "IDLETIME", "6")
	te.expect("$x", "GET", "k")
}

// A TTL is relative unless ABSTTL; a deadline not after now creates
// nothing, and reports a key REPLACE removed as deleted.
func TestRestore_TTL(t *testing.T) {
	te := newTestEngine(t)
	p := payloadOf(rdbTypeString, rdbStr("v"))
	te.expect("+OK", "RESTORE", "k", "5000", p)
	te.expect(":5000", "PTTL", "k")
	now := te.clock.Wall().UnixMilli()
	te.expect("+OK", "RESTORE", "k", strconv.FormatInt(now+3000, 10), p, "REPLACE", "ABSTTL")
	te.expect(":3000", "PTTL", "k")
	te.expect("+OK", "RESTORE", "k", strconv.FormatInt(now, 10), p, "REPLACE", "ABSTTL")
	te.expect(":0", "EXISTS", "k")
	te.expect("+OK", "RESTORE", "k", "9223372036854775807", p) // wraps past now, as in Redis
	te.expect(":0", "EXISTS", "k")
	te.expect("+OK", "RESTORE", "k", "9223372036854775807", p, "ABSTTL")
	te.expect(":1", "EXISTS", "k")
	te.clock.Advance(1e9)
	te.expect(":1", "EXISTS", "k")
}

// DUMP then RESTORE gives back the value, its encoding and DUMP's bytes,
// for every kind and encoding.
func TestDump_RoundTrip(t *testing.T) {
	te := newTestEngine(t)
	big := strings.Repeat("x", 10000)
	te.do("SET", "s1", "12")
	te.do("SET", "s2", strings.Repeat("abc", 30))
	te.do("SET", "s3", "-9223372036854775808")
	te.do("INCRBYFLOAT", "s4", "1.5")
	te.do("RPUSH", "l1", "a", "1", big, "b")
	for i := 0; i < 3000; i++ {
		te.do("RPUSH", "l2", strconv.Itoa(i*1000), "elem"+strconv.Itoa(i))
	}
	te.do("HSET", "h1", "f", "v", "n", "-1")
	te.do("HSET", "h2", "f", big)
	te.do("SADD", "t1", "1", "-70000")
	te.do("SADD", "t2", "a", "b")
	te.do("ZADD", "z1", "1", "a", "2.5", "b", "-inf", "c")
	te.do("ZADD", "z2", "1", "a", "2.5", big)
	for _, k := range []string{"s1", "s2", "s3", "s4", "l1", "l2", "h1", "h2", "t1", "t2", "z1", "z2"} {
		p := te.do("DUMP", k)[1:]
		enc := te.do("OBJECT", "ENCODING", k)
		te.expect("+OK", "RESTORE", "r"+k, "0", p)
		te.expect(enc, "OBJECT", "ENCODING", "r"+k)
		if enc != "$hashtable" {
			if q := te.do("DUMP", "r"+k)[1:]; q != p {
				t.Errorf("%s: DUMP after RESTORE differs", k)
			}
		}
	}
	te.expect(":1", "HLEN", "rh2")
	te.expect(":6000", "LLEN", "rl2")
	te.expect("$2999000", "LINDEX", "rl2", "-2")
	te.expect(",2.5", "ZSCORE", "rz1", "b")
	te.expect("(nil)", "DUMP", "nosuch")
}

// The nodes of a list are those RPUSH makes under list-max-listpack-size:
// by bytes (-1 to -5), by count (under 8 KB), and an element too long for
// any node alone in one.
func TestDump_ListNodes(t *testing.T) {
	l := &list{}
	for i := 0; i < 1000; i++ {
		l.PushBack(strings.Repeat("x", 100))
	}
	sizes := func(nodes []qlNode) []int {
		var out []int
		for _, nd := range nodes {
			out = append(out, nd.end-nd.start)
		}
		return out
	}
	// an entry is 100 + 2 + 1 bytes: (8192 - 7 - 108) / 103 + 1 = 79 fit in 8 KB
	if got := sizes(listNodes(l, -2, qlPackedThreshold)); got[0] != 79 || len(got) != 13 {
		t.Errorf("-2: %v", got)
	}
	if got := sizes(listNodes(l, -1, qlPackedThreshold)); got[0] != 39 {
		t.Errorf("-1: %v", got)
	}
	if got := sizes(listNodes(l, 5, qlPackedThreshold)); got[0] != 5 || len(got) != 200 {
		t.Errorf("5: %v", got)
	}
	if got := sizes(listNodes(l, 1000, qlPackedThreshold)); got[0] != 79 {
		t.Errorf("1000 (8 KB safety limit): %v", got)
	}
	if got := sizes(listNodes(l, -100, qlPackedThreshold)); got[0] != 636 {
		t.Errorf("-100 (taken as -5): %v", got)
	}
	m := &list{}
	for _, s := range []string{"a", strings.Repeat("b", 9000), "c"} {
		m.PushBack(s)
	}
	if got := sizes(listNodes(m, -2, qlPackedThreshold)); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("a long element: %v", got)
	}
}

// FuzzRestore sends any payload to RESTORE (with a footer that
// verifies): it must never panic or break the keyspace, and a value it
// takes must survive DUMP and RESTORE unchanged.
func FuzzRestore(f *testing.F) {
	n := func(v uint64) []byte { return rdbAppendLen(nil, v) }
	for _, p := range [][]byte{
		append([]byte{rdbTypeList}, bytes.Join([][]byte{n(2), rdbStr("a"), rdbStr("7")}, nil)...),
		append([]byte{rdbTypeListZiplist}, rdbStr(string(zlOf("x", "300", "-70000")))...),
		append([]byte{rdbTypeListQuicklist}, bytes.Join([][]byte{n(1), rdbStr(string(zlOf("a", "1")))}, nil)...),
		append([]byte{rdbTypeHashZiplist}, rdbStr(string(zlOf("f", "1", "g", "v")))...),
		append([]byte{rdbTypeZsetZiplist}, rdbStr(string(zlOf("a", "1", "b", "2.5")))...),
		append([]byte{rdbTypeHashZipmap}, rdbStr(string(zipmapOf("f", "v")))...),
		append([]byte{rdbTypeZset}, bytes.Join([][]byte{n(1), rdbStr("a"), {3}, []byte("1.5")}, nil)...),
	} {
		f.Add(dumpFooter(p))
	}
	te := &testEngine{Engine: New(Config{Clock: expiry.NewManualClock(time.UnixMilli(1_700_000_000_000))})}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		p := data
		if !verifyDumpPayload(p) && len(p) >= 10 {
			p = dumpFooter(slices.Clone(p[:len(p)-10]))
		}
		if got := te.do("RESTORE", "k", "0", string(p), "REPLACE"); got != "+OK" {
			if !strings.HasPrefix(got, "-ERR") {
				t.Fatalf("RESTORE: %q", got)
			}
			return
		}
		d := te.do("DUMP", "k")[1:]
		if got := te.do("RESTORE", "k2", "0", d, "REPLACE"); got != "+OK" {
			t.Fatalf("RESTORE of DUMP: %s", got)
		}
		if a, b := canonicalValue(te, "k"), canonicalValue(te, "k2"); a != b {
			t.Fatalf("RESTORE of DUMP changed the value:\n%s\n%s", a, b)
		}
		if msg := te.CheckInvariants(); msg != "" {
			t.Fatal(msg)
		}
	})
}

// canonicalValue describes a key's value and encoding, orderless where
// the value has no order.
func canonicalValue(te *testEngine, k string) string {
	ent := te.keys.get([]byte(k))
	if ent == nil {
		return "(none)"
	}
	var parts []string
	switch ent.kind() {
	case KindString:
		enc, _ := stringEncoding(ent)
		parts = []string{enc, ent.str()}
	case KindList:
		l := ent.obj().v.(*list)
		for i := 0; i < l.Len(); i++ {
			parts = append(parts, l.At(i))
		}
	case KindHash:
		h := ent.obj().v.(*hash)
		for _, p := range h.pairs() {
			parts = append(parts, p.field+"="+p.value)
		}
		if h.m != nil {
			slices.Sort(parts)
		}
		parts = append(parts, h.Encoding())
	case KindSet:
		s := ent.obj().v.(*set)
		parts = append(s.Members(), s.Encoding(), strconv.Itoa(int(s.width)))
		if !s.intset {
			slices.Sort(parts)
		}
	case KindZSet:
		z := ent.obj().v.(*zset)
		z.tree.Scan(func(it zitem) bool {
			parts = append(parts, it.member, strconv.FormatFloat(it.score, 'g', -1, 64), strconv.FormatBool(math.Signbit(it.score)))
			return true
		})
		parts = append(parts, z.Encoding())
	}
	return strconv.Quote(strings.Join(parts, "\x00"))
}

// RESTORE adds a key as any write does: clients blocked on a list or a
// sorted set under its name are served, its modification hooks (WATCH,
// client tracking) run; DUMP is a read client tracking records.
func TestRestore_WakesWaitersAndHooks(t *testing.T) {
	te := newTestEngine(t)
	var modified []string
	te.AddOnModified(func(key string) { modified = append(modified, key) })
	log := &readLog{}
	te.SetOnRead(log.hook)
	te.do("RPUSH", "src", "a", "b")
	te.do("ZADD", "zsrc", "1", "m")
	list := te.do("DUMP", "src")[1:]
	zset := te.do("DUMP", "zsrc")[1:]
	a, b := te.blockingClient(1), te.blockingClient(2)
	if got := a.run("BLPOP", "l", "0"); got != "" {
		t.Fatalf("BLPOP replied %q", got)
	}
	if got := b.run("BZPOPMIN", "z", "0"); got != "" {
		t.Fatalf("BZPOPMIN replied %q", got)
	}
	modified = nil
	te.expect("+OK", "RESTORE", "l", "0", list)
	te.expect("+OK", "RESTORE", "z", "0", zset)
	if got := a.finish(WaitWoken); got != "*2 $l $a" {
		t.Errorf("BLPOP served %q", got)
	}
	if got := b.finish(WaitWoken); got != "*3 $z $m ,1" {
		t.Errorf("BZPOPMIN served %q", got)
	}
	if !slices.Contains(modified, "l") || !slices.Contains(modified, "z") {
		t.Errorf("modified %q", modified)
	}
	execAs(te, &Client{Name: "t", TrackKeys: true}, 2, "DUMP", "l")
	if !slices.Equal(log.reads, []string{"t l"}) {
		t.Errorf("tracked reads %q", log.reads)
	}
	te.noWaiters()
}
