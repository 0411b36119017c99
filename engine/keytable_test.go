package engine

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// TestKeyTable_AgainstAMap runs random puts, replacements and deletes (by
// key, and by entry as the active expiry deletes) against a Go map, through enough keys to double and split tables and
// the directory many times, then deletes everything.
func TestKeyTable_AgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kt := newKeyTable(nil)
	model := map[string]*entry{}
	const space = 60000
	verify := func(step int) {
		t.Helper()
		if msg := kt.check(); msg != "" {
			t.Fatalf("step %d: %s", step, msg)
		}
		if kt.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, kt.len(), len(model))
		}
		seen := 0
		kt.each(func(ent *entry) bool {
			seen++
			if model[ent.key()] != ent {
				t.Fatalf("step %d: each gave %q, not the model's entry", step, ent.key())
			}
			return true
		})
		if seen != len(model) {
			t.Fatalf("step %d: each visited %d of %d", step, seen, len(model))
		}
	}
	for step := 0; step < 400000; step++ {
		k := fmt.Sprintf("k%d", rng.IntN(space))
		switch op := rng.IntN(10); {
		case op < 6: // put (a new entry, replacing any)
			ent := newEntry([]byte(k), nil)
			kt.put(ent)
			model[k] = ent
		case op < 8:
			_, had := model[k]
			if kt.delete(k) != had {
				t.Fatalf("step %d: delete(%q) reported %v", step, k, !had)
			}
			delete(model, k)
		case op < 9: // deleteEntry, the expiry's delete: by the entry's address
			ent, had := model[k]
			if !had || rng.IntN(4) == 0 {
				// an entry of the same key that the table does not
				// hold: nothing must go
				if kt.deleteEntry(kt.hash(k), newEntry([]byte(k), nil)) {
					t.Fatalf("step %d: deleteEntry of an entry not held reported true", step)
				}
				if kt.getString(k) != ent {
					t.Fatalf("step %d: deleteEntry of an entry not held changed %q", step, k)
				}
				break
			}
			if !kt.deleteEntry(kt.hash(k), ent) {
				t.Fatalf("step %d: deleteEntry(%q) missed it", step, k)
			}
			delete(model, k)
		default:
			if got := kt.get([]byte(k)); got != model[k] {
				t.Fatalf("step %d: get(%q) = %p, model %p", step, k, got, model[k])
			}
		}
		if step%50000 == 0 {
			verify(step)
		}
	}
	verify(-1)
	if kt.depth == 0 {
		t.Fatalf("the directory never split (depth 0): the test does not reach splits")
	}
	for k := range model {
		if kt.getString(k) != model[k] || !kt.delete(k) {
			t.Fatalf("key %q lost", k)
		}
	}
	if kt.len() != 0 || kt.check() != "" {
		t.Fatalf("not empty after deleting every key: len %d, %s", kt.len(), kt.check())
	}
	kt.each(func(*entry) bool { t.Fatal("each visited an entry of an empty table"); return false })
}

// TestKeyTable_DeleteKeepsProbeRuns fills one small table so that probe
// runs wrap around its end, then deletes keys in every order position and
// checks that all others stay reachable (backward-shift deletion).
func TestKeyTable_DeleteKeepsProbeRuns(t *testing.T) {
	for trial := 0; trial < 200; trial++ {
		kt := newKeyTable(nil)
		var keys []string
		for i := 0; i < 6; i++ { // 6 of 8 slots: the table stays at 8
			k := fmt.Sprintf("t%d-%d", trial, i)
			kt.put(newEntry([]byte(k), nil))
			keys = append(keys, k)
		}
		if len(kt.dir) != 1 || len(kt.dir[0].slots) != ktMinSlots {
			t.Fatalf("expected one table of %d slots", ktMinSlots)
		}
		rng := rand.New(rand.NewPCG(uint64(trial), 9))
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for i, k := range keys {
			if !kt.delete(k) {
				t.Fatalf("trial %d: %q not deleted", trial, k)
			}
			if msg := kt.check(); msg != "" {
				t.Fatalf("trial %d after %d deletes: %s", trial, i+1, msg)
			}
			for _, rest := range keys[i+1:] {
				if kt.getString(rest) == nil {
					t.Fatalf("trial %d: %q unreachable after deleting %q", trial, rest, k)
				}
			}
		}
	}
}

// TestNewEntry covers every size class boundary, empty keys and values,
// and the sizes above the largest class (types made by reflect).
func TestNewEntry(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 24, 25, 40, 41, 56, 72, 88, 104, 105, 136, 168, 232, 233, 300, 1000, 5000, 70000} {
		for _, klen := range []int{0, n / 3, n} {
			key := []byte(strings.Repeat("k", klen))
			val := []byte(strings.Repeat("v", n-klen))
			ent := newEntry(key, val)
			if ent.key() != string(key) || ent.str() != string(val) || ent.obj() != nil || ent.kind() != KindString || ent.deadline != 0 {
				t.Fatalf("n=%d klen=%d: got key %q val %q", n, klen, ent.key(), ent.str())
			}
			// the caller's buffers are reused by the next command
			for i := range key {
				key[i] = 'x'
			}
			for i := range val {
				val[i] = 'y'
			}
			if strings.Contains(ent.key(), "x") || strings.Contains(ent.str(), "y") {
				t.Fatalf("n=%d klen=%d: the entry shares the caller's bytes", n, klen)
			}
		}
	}
	for _, n := range []int{233, 240, 255, 256, 257, 1000, 4097, 1 << 20} {
		m := bigEntryType(n).Field(2).Type.Len()
		if m < n || m > n+n/8 {
			t.Fatalf("bigEntryType(%d) holds %d bytes: want %d to %d", n, m, n, n+n/8)
		}
		if bigEntryType(n) != bigEntryType(n) {
			t.Fatalf("bigEntryType(%d) makes a new type each time", n)
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 24, 25, 40, 41, 56, 72, 88, 104, 105, 136, 168, 232, 233, 300, 5000} {
		for _, klen := range []int{0, n / 3, n} {
			key := []byte(strings.Repeat("k", klen))
			val := []byte(strings.Repeat("v", n-klen))
			obj := &object{kind: KindString, v: rawString{}}
			ent := newObjEntry(key, val, obj)
			if ent.key() != string(key) || ent.str() != string(val) || ent.obj() != obj || ent.kind() != KindString {
				t.Fatalf("newObjEntry n=%d klen=%d: key %q, %d value bytes, kind %v", n, klen, ent.key(), len(ent.str()), ent.kind())
			}
		}
	}
	// A lock (12-byte key, 32-byte token) must fit Go's 64-byte size class.
	if entryHeader != 16 || entryHeader+12+32 > 64 {
		t.Fatalf("entry header is %d bytes, want 16 (a lock's entry is then 64 bytes)", entryHeader)
	}
	if off := unsafe.Offsetof(objEntryWith[[8]byte]{}.obj); off != entryHeader {
		t.Fatalf("obj is at offset %d, want %d (entry.obj reads it there)", off, entryHeader)
	}
}

// TestPrefetch_ChangesNothingAndNeverWaits: Prefetch is only a cache hint.
// It must leave every key as it was, cope with absent, empty and more than
// 32 keys, and return at once (not wait) while another holds the lock.
func TestPrefetch_ChangesNothingAndNeverWaits(t *testing.T) {
	e := New(Config{})
	for i := 0; i < 5000; i++ {
		e.Lock()
		// half of them with a deadline: Prefetch reads the expiry index too
		e.setString([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)), int64(i%2)*(1<<40+int64(i%7)), false, 0)
		e.Unlock()
	}
	var batch [][]byte
	for i := 0; i < 40; i++ {
		batch = append(batch, []byte(fmt.Sprintf("k%d", i*97)), []byte(fmt.Sprintf("absent%d", i)))
	}
	batch = append(batch, []byte{}, nil)
	e.Prefetch(0, batch, ^uint32(0))
	e.Prefetch(0, batch[:1], ^uint32(0))
	e.Prefetch(0, nil, 0)
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
	if n, ttls := e.KeyCount(); n != 5000 || ttls != 2500 {
		t.Fatalf("%d keys, %d with a deadline after Prefetch, want 5000 and 2500", n, ttls)
	}
	e.Lock()
	for i := 0; i < 5000; i++ {
		if ent := e.keys.getString(fmt.Sprintf("k%d", i)); ent == nil || ent.str() != fmt.Sprintf("v%d", i) {
			t.Fatalf("k%d changed", i)
		}
	}
	// held by this goroutine: Prefetch from another must return, not wait
	done := make(chan struct{})
	go func() { e.Prefetch(0, batch, ^uint32(0)); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Prefetch waited for the keyspace lock")
	}
	e.Unlock()
}

// TestScan_ManyTablesWhileKeysComeAndGo: SCAN over a keyspace of many
// tables, while keys are added (splitting tables and the directory) and
// deleted between calls. Every key present for the whole iteration must be
// returned, each reply must hold about COUNT keys (ties aside), and the
// iteration must end.
func TestScan_ManyTablesWhileKeysComeAndGo(t *testing.T) {
	e := newTestEngine(t)
	const stable = 20000
	for i := 0; i < stable; i++ {
		e.expect("+OK", "SET", "s:"+strconv.Itoa(i), "v")
	}
	e.Lock()
	depth := e.keys.depth
	e.Unlock()
	if depth < 2 {
		t.Fatalf("directory depth %d: the keyspace is not spread over tables", depth)
	}
	seen := map[string]bool{}
	cursor, calls, added := "0", 0, 0
	for {
		calls++
		if calls > 10*stable/100 {
			t.Fatal("SCAN did not terminate")
		}
		w := &enginetest.TextWriter{}
		e.Exec(&Ctx{Args: [][]byte{[]byte("SCAN"), []byte(cursor), []byte("COUNT"), []byte("100")}, W: w})
		f := strings.Fields(w.String())
		cursor = strings.TrimPrefix(f[1], "$")
		keys := f[3:]
		if len(keys) > 103 {
			t.Fatalf("a reply of COUNT 100 held %d keys", len(keys))
		}
		for _, tok := range keys {
			seen[strings.TrimPrefix(tok, "$")] = true
		}
		if cursor == "0" {
			break
		}
		if len(keys) < 100 {
			t.Fatalf("a reply before the end held %d keys, fewer than COUNT", len(keys))
		}
		for j := 0; j < 60; j++ { // churn: new keys, some deleted again
			e.expect("+OK", "SET", "t:"+strconv.Itoa(added), "v")
			if added%3 == 0 {
				e.expect(":1", "DEL", "t:"+strconv.Itoa(added))
			}
			added++
		}
	}
	for i := 0; i < stable; i++ {
		if !seen["s:"+strconv.Itoa(i)] {
			t.Fatalf("s:%d was present throughout and never returned", i)
		}
	}
	if calls < stable/100 {
		t.Fatalf("%d calls for %d keys at COUNT 100", calls, stable)
	}
	e.expect("*2 $0 *0", "SCAN", "18446744073709551615")
}

// TestKeyTable_CollectFrom checks SCAN's walk against the definition, on
// tables of every size up to many splits (so probe runs that wrap past a
// table's end are met): for random lower bounds and minimums, what it
// returns has no duplicates, holds every entry between lo and the largest
// hash returned, holds min entries unless it reached the end, and holds
// every entry at or after lo when it did.
func TestKeyTable_CollectFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5, 6, 7, 40, 3000, 3100, 20000} {
		kt := newKeyTable(nil)
		var all []kslot
		for i := 0; i < n; i++ {
			ent := newEntry([]byte(fmt.Sprintf("c%d-%d", n, i)), nil)
			kt.put(ent)
		}
		kt.each(func(ent *entry) bool {
			all = append(all, kslot{kt.hash(ent.key()), ent})
			return true
		})
		for trial := 0; trial < 300; trial++ {
			lo := rng.Uint64()
			if trial%5 == 0 && len(all) > 0 { // exactly at a key's hash
				lo = all[rng.IntN(len(all))].h
			}
			if trial == 0 {
				lo = 0
			}
			min := 1 + rng.IntN(50)
			got, end := kt.collectFrom(lo, min, nil)
			seen := map[*entry]bool{}
			var maxH uint64
			for _, s := range got {
				if s.h < lo {
					t.Fatalf("n=%d: returned a hash below lo", n)
				}
				if seen[s.ent] {
					t.Fatalf("n=%d: %q returned twice", n, s.ent.key())
				}
				seen[s.ent] = true
				maxH = max(maxH, s.h)
			}
			if !end && len(got) < min {
				t.Fatalf("n=%d: %d entries, min %d, and not at the end", n, len(got), min)
			}
			for _, s := range all {
				if s.h >= lo && (end || s.h <= maxH) && !seen[s.ent] {
					t.Fatalf("n=%d lo=%x min=%d end=%v: %q (hash %x) missing", n, lo, min, end, s.ent.key(), s.h)
				}
			}
		}
	}
}

// TestPrefetch_TwoEnginesAtOnce: engines in one process (a Redlock
// fixture's nodes) prefetch at the same time under their own locks; under
// -race this catches state shared between them.
func TestPrefetch_TwoEnginesAtOnce(t *testing.T) {
	if !raceEnabled {
		t.Skip("checks nothing without the race detector")
	}
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		e := New(Config{})
		e.Lock()
		e.setString([]byte("a"), []byte("v"), 0, false, 0)
		e.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				e.Prefetch(0, keys, ^uint32(0))
			}
		}()
	}
	wg.Wait()
}

// TestObjEntry_SurvivesGC: an entry with an obj must be memory the GC
// scans (newEntry's pointer-free allocation would let the obj be freed and
// its memory reused while the entry still points to it).
func TestObjEntry_SurvivesGC(t *testing.T) {
	ents := make([]*entry, 2000)
	for i := range ents {
		h := newHash()
		h.Set("f", strconv.Itoa(i), &defaults)
		ents[i] = newObjEntry([]byte("h"+strconv.Itoa(i)), nil, &object{kind: KindHash, v: h})
	}
	var junk [][]byte
	for round := 0; round < 3; round++ {
		runtime.GC()
		for i := 0; i < 20000; i++ { // reuse whatever the GC freed
			junk = append(junk, bytes.Repeat([]byte{0xff}, 64))
		}
		junk = junk[:0]
	}
	for i, ent := range ents {
		h, ok := ent.objValue().(*hash)
		if ent.kind() != KindHash || !ok {
			t.Fatalf("entry %d: its obj was freed and reused", i)
		}
		if v, _ := h.Get("f"); v != strconv.Itoa(i) {
			t.Fatalf("entry %d: hash field is %q", i, v)
		}
	}
}

// TestKeyTable_ShrinksAfterABurst: once a burst of keys is deleted the
// tables halve down to a few slots each, and what is left stays intact.
func TestKeyTable_ShrinksAfterABurst(t *testing.T) {
	kt := newKeyTable(nil)
	for i := 0; i < 50000; i++ {
		kt.put(newEntry([]byte("k"+strconv.Itoa(i)), nil))
	}
	slots := func() (n int) {
		for i, tb := range kt.dir {
			if i&(1<<(kt.depth-tb.depth)-1) == 0 {
				n += len(tb.slots)
			}
		}
		return n
	}
	full := slots()
	for i := 0; i < 50000; i++ {
		if i%100 != 0 && !kt.delete("k"+strconv.Itoa(i)) {
			t.Fatalf("k%d not deleted", i)
		}
	}
	if msg := kt.check(); msg != "" {
		t.Fatal(msg)
	}
	if kt.len() != 500 {
		t.Fatalf("%d keys left, want 500", kt.len())
	}
	for i := 0; i < 50000; i += 100 {
		if kt.getString("k"+strconv.Itoa(i)) == nil {
			t.Fatalf("k%d lost in the shrinking", i)
		}
	}
	// 500 keys over the tables: none may be under 1/8 full unless minimal
	for i, tb := range kt.dir {
		if i&(1<<(kt.depth-tb.depth)-1) == 0 && tb.n*8 < len(tb.slots) && len(tb.slots) > ktMinSlots {
			t.Fatalf("a table of %d slots holds %d keys", len(tb.slots), tb.n)
		}
	}
	if after := slots(); after*10 > full {
		t.Fatalf("%d slots before the deletes, %d after: the tables did not shrink", full, after)
	}
}

// TestKeyTable_UnseparableHashesGrowTheTable: keys whose hashes agree on
// every bit a split could use must make their table grow, not double the
// directory without end (which never finishes, then the insert spins on a
// full table). Hashes are given directly: no real key set collides so.
func TestKeyTable_UnseparableHashesGrowTheTable(t *testing.T) {
	kt := newKeyTable(nil)
	const n = 10000 // over 3/4 of ktMaxSlots, all on one hash
	h := uint64(0x9e3779b97f4a7c15) &^ lruMask
	var ents []*entry
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			ent := newEntry([]byte("same"+strconv.Itoa(i)), nil)
			kt.putHashed(h, ent)
			ents = append(ents, ent)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("inserting colliding hashes did not finish")
	}
	if kt.depth > 1 {
		t.Fatalf("directory depth %d for keys no split can separate", kt.depth)
	}
	tb := kt.table(h)
	if len(tb.slots) <= ktMaxSlots || tb.n != n {
		t.Fatalf("the table has %d slots and %d keys", len(tb.slots), tb.n)
	}
	for _, ent := range ents {
		if tb.find(h, ent.key()) < 0 {
			t.Fatalf("%q unreachable", ent.key())
		}
	}
}

// TestKeyTable_MixedDepths: keys chosen so that one hash prefix holds far
// more than the rest make its tables split several levels deeper than the
// others, so that splits of a table shallower than the directory by two
// or more, and each's skipping of repeated directory entries, are run.
func TestKeyTable_MixedDepths(t *testing.T) {
	kt := newKeyTable(nil)
	model := map[string]bool{}
	add := func(prefix uint64, n int) {
		for i := 0; n > 0; i++ {
			k := "m" + strconv.FormatUint(prefix, 10) + "-" + strconv.Itoa(i)
			if maphash.String(kt.seed, k)>>62 == prefix {
				kt.put(newEntry([]byte(k), nil))
				model[k] = true
				n--
			}
		}
	}
	// first a quarter of the hash space, densely: its tables and the
	// directory split deep while the rest stay one shallow table each
	add(0, 30000)
	minD, maxD := kt.depth, uint8(0)
	for _, tb := range kt.dir {
		minD, maxD = min(minD, tb.depth), max(maxD, tb.depth)
	}
	if maxD-minD < 2 {
		t.Fatalf("table depths %d to %d: not mixed enough to test", minD, maxD)
	}
	// then another quarter: its shallow table now splits while it fills
	// four or more directory entries
	add(3, 20000)
	if msg := kt.check(); msg != "" {
		t.Fatal(msg)
	}
	seen := map[string]int{}
	kt.each(func(ent *entry) bool { seen[ent.key()]++; return true })
	if len(seen) != len(model) {
		t.Fatalf("each visited %d distinct keys of %d", len(seen), len(model))
	}
	for k, c := range seen {
		if c != 1 || !model[k] {
			t.Fatalf("each visited %q %d times", k, c)
		}
	}
	for k := range model {
		if !kt.delete(k) {
			t.Fatalf("%q lost", k)
		}
	}
	if msg := kt.check(); msg != "" || kt.len() != 0 {
		t.Fatalf("after deleting all: %s, %d left", msg, kt.len())
	}
}

// TestPrefetch_SkipsWhileABusyScriptOwnsTheKeyspace: while a busy script
// has yielded the lock (busyYield), Prefetch must not read the keyspace
// (the script may be writing it). A nil directory makes any read panic.
func TestPrefetch_SkipsWhileABusyScriptOwnsTheKeyspace(t *testing.T) {
	e := New(Config{})
	e.busyYield.Store(true)
	e.keys.dir = nil
	e.Prefetch(0, [][]byte{[]byte("a"), []byte("b")}, ^uint32(0))
}

// TestKeyTable_RandomIsFair draws many random entries from tables of
// several shapes and requires every entry to come up about equally often:
// two keys (whose hashes may lie close together), a keyspace of many
// tables at different local depths and sizes, and one left sparse by
// deletions (where most draws miss and random counts instead).
func TestKeyTable_RandomIsFair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(t *testing.T, kt *keyTable, keys []string, per int) {
		t.Helper()
		counts := map[string]int{}
		for range per * len(keys) {
			ent := kt.random(rng.Uint64)
			if ent == nil {
				t.Fatal("random gave nil from a table with entries")
			}
			counts[ent.key()]++
		}
		// each count is binomial with mean per: allow 6 standard deviations
		sd := math.Sqrt(float64(per))
		for _, k := range keys {
			if c := counts[k]; math.Abs(float64(c-per)) > 6*sd+1 {
				t.Fatalf("%d keys: %q drawn %d times in %d draws, want about %d",
					len(keys), k, c, per*len(keys), per)
			}
		}
		if len(counts) != len(keys) {
			t.Fatalf("drew %d distinct keys, the table has %d", len(counts), len(keys))
		}
	}
	t.Run("two keys", func(t *testing.T) {
		// a new seed each time: the old draw (the first key at or after a
		// random hash) favoured one key by the gap before its hash
		for range 50 {
			kt := newKeyTable(nil)
			keys := []string{"foo", "bar"}
			for _, k := range keys {
				kt.put(newEntry([]byte(k), nil))
			}
			draw(t, kt, keys, 2000)
		}
	})
	t.Run("many tables", func(t *testing.T) {
		// keys until the tables differ in local depth (with a random seed,
		// where that happens varies), then most of the first table's
		// deleted, so that it halves: tables of several depths and sizes
		kt := newKeyTable(nil)
		var all []string
		mixed := func() bool {
			depths := map[uint8]bool{}
			for _, tb := range kt.dir {
				depths[tb.depth] = true
			}
			return len(depths) > 1
		}
		for i := 0; len(all) < 20000 || !mixed(); i++ {
			if i == 200000 {
				t.Fatal("the tables never differed in depth")
			}
			k := "k" + strconv.Itoa(i)
			all = append(all, k)
			kt.put(newEntry([]byte(k), nil))
		}
		first, size := kt.dir[0], len(kt.dir[0].slots)
		var keys []string
		for i, k := range all {
			if kt.table(maphash.String(kt.seed, k)) == first && i%10 != 0 {
				kt.delete(k)
			} else {
				keys = append(keys, k)
			}
		}
		if len(first.slots) == size {
			t.Fatalf("the first table kept its %d slots", size)
		}
		draw(t, kt, keys, 100)
	})
	t.Run("sparse", func(t *testing.T) {
		kt := newKeyTable(nil)
		for i := range 50000 {
			kt.put(newEntry([]byte("k"+strconv.Itoa(i)), nil))
		}
		var keys []string
		for i := range 50000 {
			if k := "k" + strconv.Itoa(i); i%10000 == 7 {
				keys = append(keys, k)
			} else {
				kt.delete(k)
			}
		}
		draw(t, kt, keys, 3000)
	})
	if kt := newKeyTable(nil); kt.random(rng.Uint64) != nil {
		t.Fatal("random gave an entry from an empty table")
	}
}
