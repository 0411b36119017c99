package engine

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Replies are redis-server's (sets.txt diffs these and more against it).
func TestSet_EncodingAndOrder(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":5", "SADD", "i", "3", "1", "2", "10", "-5")
	e.expect("$intset", "OBJECT", "ENCODING", "i")
	e.expect("~5 $-5 $1 $2 $3 $10", "SMEMBERS", "i") // an intset is in numeric order
	e.expect(":1", "SADD", "i", "007")               // not an integer as string2ll reads one
	e.expect("$hashtable", "OBJECT", "ENCODING", "i")
	for n := 1; n <= 512; n++ {
		e.expect(":1", "SADD", "big", strconv.Itoa(n))
	}
	e.expect("$intset", "OBJECT", "ENCODING", "big")
	e.expect(":1", "SADD", "big", "513")
	e.expect("$hashtable", "OBJECT", "ENCODING", "big")
	e.expect("+set", "TYPE", "big")
}

func TestSet_Commands(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":3", "SADD", "a", "1", "2", "3")
	e.expect(":2", "SADD", "b", "3", "4")
	e.expect("~1 $3", "SINTER", "a", "b")
	e.expect("~4 $1 $2 $3 $4", "SUNION", "a", "b")
	e.expect("~2 $1 $2", "SDIFF", "a", "b")
	e.expect("~0", "SINTER", "a", "nosuch")
	e.expect("+OK", "SET", "s", "v")
	e.expect("-"+ErrWrongType, "SINTER", "nosuch", "s") // every key is checked
	e.expect("+OK", "SET", "d", "x", "EX", "100")
	e.expect(":4", "SUNIONSTORE", "d", "a", "b")
	e.expect(":-1", "TTL", "d") // the destination is overwritten, TTL and all
	e.expect(":0", "SDIFFSTORE", "d", "a", "a")
	e.expect(":0", "EXISTS", "d")
	e.expect(":1", "SMOVE", "a", "b", "1")
	e.expect(":0", "SMOVE", "a", "b", "9")
	e.expect(":1", "SMOVE", "b", "b", "1") // the same set: membership only
	e.expect("-"+ErrWrongType, "SMOVE", "a", "s", "2")
	e.expect("*2 :1 :0", "SMISMEMBER", "a", "2", "1")
	e.expect(":2", "SINTERCARD", "2", "a", "a")
	e.expect(":1", "SINTERCARD", "2", "a", "a", "LIMIT", "1")
	e.expect("~2 $2 $3", "SPOP", "a", "10") // the whole set: the key goes
	e.expect(":0", "EXISTS", "a")
	if got := e.do("SRANDMEMBER", "b", "-5"); !strings.HasPrefix(got, "*5 ") {
		t.Fatalf("SRANDMEMBER -5 = %q", got)
	}
	e.expect("*3 $1 $3 $4", "SRANDMEMBER", "b", "3")
	e.expect("*2 $0 *1 $3", "SSCAN", "b", "0", "MATCH", "3")
}

// SPOP and SRANDMEMBER draw every member, over many draws.
func TestSet_RandomDrawsReachEveryMember(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":4", "SADD", "r", "a", "b", "c", "d")
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		seen[e.do("SRANDMEMBER", "r")] = true
	}
	if len(seen) != 4 {
		t.Fatalf("SRANDMEMBER drew only %v", seen)
	}
	e.expect(":1", "SADD", "x", "only")
	e.expect("$only", "SPOP", "x")
	e.expect(":0", "EXISTS", "x")
}

// The set's index and member slice stay in step over random adds and
// removals (a removal moves the last member into the hole).
func TestSet_IndexAgainstModel(t *testing.T) {
	s := newSet("a")
	model := map[string]bool{}
	for step := 0; step < 20000; step++ {
		m := "m" + strconv.Itoa(step*7919%301)
		if step%3 == 0 {
			if s.Del(m) != model[m] {
				t.Fatalf("step %d: Del(%s) disagrees", step, m)
			}
			delete(model, m)
		} else {
			if s.Add(m, &defaults) == model[m] {
				t.Fatalf("step %d: Add(%s) disagrees", step, m)
			}
			model[m] = true
		}
		if s.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
		}
	}
	for i, m := range s.list {
		if s.idx[m] != i || !model[m] {
			t.Fatalf("member %q at %d, index %d, in model %v", m, i, s.idx[m], model[m])
		}
	}
	if s.Len() > 0 && !model[s.randomMember()] {
		t.Fatal("randomMember returned a non-member")
	}
}

// SSCAN pages a hashtable set COUNT members a call, and a member present
// for the whole iteration is returned however members come and go
// meanwhile (removals move the last member into the hole); an intset
// comes whole, as Redis replies one.
func TestSScan_PagesAndKeepsTheContract(t *testing.T) {
	e := newTestEngine(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		e.do("DEL", "s")
		const stable = 300
		for i := 0; i < stable; i++ {
			e.do("SADD", "s", "m"+strconv.Itoa(i))
		}
		var churn []string
		next := 0
		seen := map[string]bool{}
		cursor, calls := "0", 0
		for {
			if calls++; calls > 1000 {
				t.Fatal("SSCAN did not terminate")
			}
			count := 1 + rng.IntN(20)
			f := strings.Fields(e.do("SSCAN", "s", cursor, "COUNT", strconv.Itoa(count)))
			cursor = strings.TrimPrefix(f[1], "$")
			if n, _ := strconv.Atoi(strings.TrimPrefix(f[2], "*")); n > count {
				t.Fatalf("COUNT %d: %d members", count, n)
			}
			for _, tok := range f[3:] {
				seen[strings.TrimPrefix(tok, "$")] = true
			}
			if cursor == "0" {
				break
			}
			for j := rng.IntN(8); j > 0; j-- { // members come and go
				if len(churn) > 0 && rng.IntN(2) == 0 {
					k := rng.IntN(len(churn))
					e.expect(":1", "SREM", "s", churn[k])
					churn = append(churn[:k], churn[k+1:]...)
				} else {
					m := "c" + strconv.Itoa(next)
					next++
					e.expect(":1", "SADD", "s", m)
					churn = append(churn, m)
				}
			}
		}
		for i := 0; i < stable; i++ {
			if !seen["m"+strconv.Itoa(i)] {
				t.Fatalf("round %d: m%d, in the set throughout, was not returned", round, i)
			}
		}
		if calls < stable/20 {
			t.Fatalf("round %d: %d calls: the set came in too few pages", round, calls)
		}
	}

	e.do("SADD", "i", "3", "1", "2")
	e.expect("*2 $0 *3 $1 $2 $3", "SSCAN", "i", "0", "COUNT", "1") // an intset: whole, ascending
	e.do("SADD", "h", "a", "b", "c")
	if got := e.do("SSCAN", "h", "0", "COUNT", "2"); !strings.HasPrefix(got, "*2 $1 *2 ") {
		t.Errorf("SSCAN h 0 COUNT 2 = %q, want 2 members and cursor 1", got)
	}
	if got := e.do("SSCAN", "h", "1", "COUNT", "2"); !strings.HasPrefix(got, "*2 $0 *1 ") {
		t.Errorf("SSCAN h 1 COUNT 2 = %q, want the last member and cursor 0", got)
	}
	if got := e.do("SSCAN", "h", "99", "MATCH", "b"); got != "*2 $0 *1 $b" {
		t.Errorf("SSCAN h 99 MATCH b = %q (a cursor past the end starts at the top)", got)
	}
}

// scanAll runs a key's SCAN (cmd key cursor opts...) from cursor 0 to the
// end, calling item with each item (width words: a member, or a field or
// member and its value or score), and returns the calls made. A page
// never holds more than max items.
func scanAll(t *testing.T, e *testEngine, cmd, key string, max int, item func([]string), opts ...string) (calls int) {
	t.Helper()
	width := 1
	if cmd != "SSCAN" {
		width = 2
	}
	cursor := "0"
	for {
		if calls++; calls > 100000 {
			t.Fatalf("%s did not terminate", cmd)
		}
		f := strings.Fields(e.do(append([]string{cmd, key, cursor}, opts...)...))
		if len(f) < 3 || f[0] != "*2" {
			t.Fatalf("%s reply %q", cmd, f)
		}
		cursor = strings.TrimPrefix(f[1], "$")
		words := f[3:]
		if len(words)/width > max {
			t.Fatalf("%s page of %d items, at most %d wanted", cmd, len(words)/width, max)
		}
		for i := 0; i+width <= len(words); i += width {
			it := make([]string, width)
			for j := range it {
				it[j] = strings.TrimPrefix(words[i+j], "$")
			}
			item(it)
		}
		if cursor == "0" {
			return calls
		}
	}
}

// HSCAN of a hashtable hash and ZSCAN of a skip list page their members
// from snapshots in a fixed hash order: a member present for the whole
// iteration is returned however members come and go meanwhile, and
// iterations that overlap each get theirs.
func TestHScanZScan_PagesAndKeepTheContract(t *testing.T) {
	e := newTestEngine(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		cmd, add, rem string
		args          func(m string) []string
	}{
		{"HSCAN", "HSET", "HDEL", func(m string) []string { return []string{m, "v"} }},
		{"ZSCAN", "ZADD", "ZREM", func(m string) []string { return []string{"1.5", m} }},
	} {
		for round := 0; round < 10; round++ {
			e.do("DEL", "k", "other")
			const stable = 600 // past hash-max-listpack-entries
			for i := 0; i < stable; i++ {
				e.do(append([]string{tc.add, "k"}, tc.args("m"+strconv.Itoa(i))...)...)
			}
			// an iteration left unfinished, then members added: a new
			// iteration must not read its snapshot, which lacks them
			e.do(tc.cmd, "k", "0", "COUNT", "5")
			for i := 0; i < 50; i++ {
				e.do(append([]string{tc.add, "k"}, tc.args("p"+strconv.Itoa(i))...)...)
			}
			var churn []string
			next := 0
			seen := map[string]bool{}
			cursor, calls := "0", 0
			for {
				if calls++; calls > 2000 {
					t.Fatalf("%s did not terminate", tc.cmd)
				}
				count := 1 + rng.IntN(20)
				f := strings.Fields(e.do(tc.cmd, "k", cursor, "COUNT", strconv.Itoa(count)))
				cursor = strings.TrimPrefix(f[1], "$")
				for i := 3; i < len(f); i += 2 {
					seen[strings.TrimPrefix(f[i], "$")] = true
				}
				if cursor == "0" {
					break
				}
				if rng.IntN(4) == 0 { // another iteration starts, and goes a page
					e.do(tc.cmd, "k", "0", "COUNT", "5")
				}
				for j := rng.IntN(8); j > 0; j-- { // members come and go
					if len(churn) > 0 && rng.IntN(2) == 0 {
						k := rng.IntN(len(churn))
						e.expect(":1", tc.rem, "k", churn[k])
						churn = append(churn[:k], churn[k+1:]...)
					} else {
						m := "c" + strconv.Itoa(next)
						next++
						e.expect(":1", append([]string{tc.add, "k"}, tc.args(m)...)...)
						churn = append(churn, m)
					}
				}
			}
			for i := 0; i < stable; i++ {
				if !seen["m"+strconv.Itoa(i)] {
					t.Fatalf("%s round %d: m%d, there throughout, was not returned", tc.cmd, round, i)
				}
			}
			for i := 0; i < 50; i++ {
				if !seen["p"+strconv.Itoa(i)] {
					t.Fatalf("%s round %d: p%d, added before the iteration, was not returned", tc.cmd, round, i)
				}
			}
			if calls < stable/20 {
				t.Fatalf("%s round %d: %d calls: too few pages", tc.cmd, round, calls)
			}
		}
	}
}
