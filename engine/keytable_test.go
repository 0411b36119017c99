package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestKeyTable_AgainstAMap runs random puts, replacements and deletes
// against a Go map, through enough keys to double and split tables and
// the directory many times, then deletes everything.
func TestKeyTable_AgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kt := newKeyTable()
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
			if model[ent.key] != ent {
				t.Fatalf("step %d: each gave %q, not the model's entry", step, ent.key)
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
			ent := &entry{key: k}
			kt.put(ent)
			model[k] = ent
		case op < 9:
			_, had := model[k]
			if kt.delete(k) != had {
				t.Fatalf("step %d: delete(%q) reported %v", step, k, !had)
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
		kt := newKeyTable()
		var keys []string
		for i := 0; i < 6; i++ { // 6 of 8 slots: the table stays at 8
			k := fmt.Sprintf("t%d-%d", trial, i)
			kt.put(&entry{key: k})
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

// TestNewStringEntry covers every size class boundary, empty keys and
// values, and the fallback above the largest class.
func TestNewStringEntry(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 32, 33, 48, 64, 80, 81, 112, 144, 145, 208, 209, 5000} {
		for _, klen := range []int{0, n / 3, n} {
			key := []byte(strings.Repeat("k", klen))
			val := []byte(strings.Repeat("v", n-klen))
			ent := newStringEntry(key, val)
			if ent.key != string(key) || ent.str != string(val) || ent.obj != nil || ent.deadline != 0 {
				t.Fatalf("n=%d klen=%d: got key %q val %q", n, klen, ent.key, ent.str)
			}
			// the caller's buffers are reused by the next command
			for i := range key {
				key[i] = 'x'
			}
			for i := range val {
				val[i] = 'y'
			}
			if strings.Contains(ent.key, "x") || strings.Contains(ent.str, "y") {
				t.Fatalf("n=%d klen=%d: the entry shares the caller's bytes", n, klen)
			}
		}
	}
}

// TestPrefetch_ChangesNothingAndNeverWaits: Prefetch is only a cache hint.
// It must leave every key as it was, cope with absent, empty and more than
// 32 keys, and return at once (not wait) while another holds the lock.
func TestPrefetch_ChangesNothingAndNeverWaits(t *testing.T) {
	e := New(Config{})
	for i := 0; i < 5000; i++ {
		e.Lock()
		e.setString([]byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("v%d", i)), 0, false, 0)
		e.Unlock()
	}
	var batch [][]byte
	for i := 0; i < 40; i++ {
		batch = append(batch, []byte(fmt.Sprintf("k%d", i*97)), []byte(fmt.Sprintf("absent%d", i)))
	}
	batch = append(batch, []byte{}, nil)
	e.Prefetch(batch)
	e.Prefetch(batch[:1])
	e.Prefetch(nil)
	if msg := e.CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
	if n, _ := e.KeyCount(); n != 5000 {
		t.Fatalf("%d keys after Prefetch, want 5000", n)
	}
	e.Lock()
	for i := 0; i < 5000; i++ {
		if ent := e.keys.getString(fmt.Sprintf("k%d", i)); ent == nil || ent.str != fmt.Sprintf("v%d", i) {
			t.Fatalf("k%d changed", i)
		}
	}
	// held by this goroutine: Prefetch from another must return, not wait
	done := make(chan struct{})
	go func() { e.Prefetch(batch); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Prefetch waited for the keyspace lock")
	}
	e.Unlock()
}
