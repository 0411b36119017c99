package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The sorted set keeps Redis's order (score, then member bytes), finds
// ranks and members at ranks, and converts to "skiplist" past 128
// members; checked against a sorted slice over random operations.
func TestZset_OrderRanksAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := newZset(false)
	model := map[string]float64{}
	for step := 0; step < 5000; step++ {
		m := "m" + strconv.Itoa(r.IntN(300))
		if r.IntN(4) == 0 {
			if z.Del(m) != (func() bool { _, ok := model[m]; return ok })() {
				t.Fatalf("step %d: Del(%s) disagrees", step, m)
			}
			delete(model, m)
		} else {
			s := float64(r.IntN(20)) / 2
			if _, ok := model[m]; !ok || model[m] != s {
				z.Set(m, s, &defaults)
				model[m] = s
			}
		}
	}
	items := make([]zitem, 0, len(model))
	for m, s := range model {
		items = append(items, zitem{s, m})
	}
	sort.Slice(items, func(i, j int) bool { return zitemLess(items[i], items[j]) })
	if z.Len() != len(items) {
		t.Fatalf("Len %d, model %d", z.Len(), len(items))
	}
	for i, it := range items {
		if got := z.At(i); got != it {
			t.Fatalf("At(%d) = %v, want %v", i, got, it)
		}
		if rank, ok := z.Rank(it.member); !ok || rank != i {
			t.Fatalf("Rank(%s) = %d %v, want %d", it.member, rank, ok, i)
		}
	}
	if len(items) > 128 && z.Encoding() != "skiplist" {
		t.Fatalf("%d members, encoding %s", len(items), z.Encoding())
	}
	r1 := scoreRange{min: 2, max: 5, minex: true}
	first, last := z.firstInRange(r1), z.lastInRange(r1)
	for i, it := range items {
		in := it.score > 2 && it.score <= 5
		if in != (i >= first && i <= last) {
			t.Fatalf("range (2,5]: item %d %v, first %d last %d", i, it, first, last)
		}
	}
}

func TestZset_Commands(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":3", "ZADD", "z", "1", "a", "2", "b", "3", "c")
	e.expect("$listpack", "OBJECT", "ENCODING", "z")
	e.expect("+zset", "TYPE", "z")
	e.expect(",0.1", "ZINCRBY", "n", "0.1", "x") // a double (zset.txt diffs its RESP2 text, %.17g)
	e.expect("*4 $a ,1 $b ,2", "ZRANGE", "z", "0", "1", "WITHSCORES")
	e.expect("*2 $b $a", "ZRANGE", "z", "(3", "1", "BYSCORE", "REV", "LIMIT", "0", "5")
	e.expect(":1", "ZREVRANK", "z", "b")
	e.expect("-"+ErrMinMaxNotFloat, "ZCOUNT", "z", "x", "1")
	e.expect("*2 $c ,3", "ZPOPMAX", "z")
	e.expect(":2", "ZREMRANGEBYRANK", "z", "0", "-1")
	e.expect(":0", "EXISTS", "z") // emptied: deleted
	e.expect(":1", "ZADD", "big", "1", fmt.Sprintf("%065d", 1))
	e.expect("$skiplist", "OBJECT", "ENCODING", "big")
	e.expect(":1", "COPY", "big", "big2")
	e.expect(":1", "ZADD", "big2", "2", "other")
	e.expect(":1", "ZCARD", "big") // the copy is its own set
	e.expect("+OK", "SET", "s", "v")
	e.expect("-"+ErrWrongType, "ZADD", "s", "1", "a")
	e.expect("-"+ErrNotFloat, "ZADD", "s", "x", "a") // scores before the type
}

// ZSCAN replies scores as d2string writes them: -0 survives in a skip
// list (zset.txt diffs the compact case).
func TestZScan_WholeSetScores(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "ZADD", "z", "1", fmt.Sprintf("%065d", 0)) // a skip list
	e.expect(":3", "ZADD", "z", "-0", "neg", "inf", "top", "2.5", "x")
	if got := e.do("ZSCAN", "z", "0", "MATCH", "[nx]*"); got != "*2 $0 *4 $neg $-0 $x $2.5" && got != "*2 $0 *4 $x $2.5 $neg $-0" {
		t.Errorf("ZSCAN MATCH [nx]*: %q", got) // (a skip list's members in scan order)
	}
	e.expect("*2 $0 *2 $top $inf", "ZSCAN", "z", "0", "MATCH", "t*")
}

// COMMAND's ACL categories are Redis 7.0's exact list, in its order.
func TestZset_ACLCategory(t *testing.T) {
	e := newTestEngine(t)
	cats := e.lookupFull([]byte("zadd")).Categories()
	if strings.Join(cats, " ") != "@write @sortedset @fast" {
		t.Fatalf("ZADD's categories %v", cats)
	}
}

// ZRANDMEMBER: a positive count draws distinct members (in the compact
// encoding's order when drawn sparsely, as lpRandomPairsUnique), a
// negative one any members; over many draws every member comes up; a
// negative count past 2^24 is refused.
func TestZRandMember_Draws(t *testing.T) {
	e := newTestEngine(t)
	var args []string
	for i := 0; i < 40; i++ {
		args = append(args, strconv.Itoa(i), "m"+strconv.Itoa(100+i))
	}
	e.expect(":40", append([]string{"ZADD", "z"}, args...)...)
	seen := map[string]bool{}
	for round := 0; round < 300; round++ {
		for _, count := range []string{"3", "20", "-7"} { // sparse, dense, repeats
			got := strings.Fields(e.do("ZRANDMEMBER", "z", count))
			n, _ := strconv.Atoi(strings.TrimPrefix(count, "-"))
			if got[0] != "*"+strconv.Itoa(n) || len(got) != n+1 {
				t.Fatalf("ZRANDMEMBER z %s = %q", count, got)
			}
			members := got[1:]
			distinct := map[string]bool{}
			for _, m := range members {
				if !strings.HasPrefix(m, "$m") {
					t.Fatalf("ZRANDMEMBER z %s drew %q", count, m)
				}
				distinct[m] = true
				seen[m] = true
			}
			if count != "-7" && len(distinct) != n {
				t.Fatalf("ZRANDMEMBER z %s repeated a member: %q", count, members)
			}
			if count == "3" && !slices.IsSorted(members) { // m100..m139 sort as ranks do
				t.Fatalf("ZRANDMEMBER z 3 on a compact set out of order: %q", members)
			}
		}
	}
	if len(seen) != 40 {
		t.Fatalf("ZRANDMEMBER drew %d of 40 members", len(seen))
	}
	if got := e.do("ZRANDMEMBER", "z", "2", "WITHSCORES"); len(strings.Fields(got)) != 5 {
		t.Fatalf("ZRANDMEMBER z 2 WITHSCORES = %q", got)
	}
	e.expect("-ERR value is out of range", "ZRANDMEMBER", "z", "-16777217")
	if got := e.do("ZRANDMEMBER", "z", "16777217"); !strings.HasPrefix(got, "*40 ") {
		t.Fatalf("a count past 2^24 beyond the set's size is the whole set: %q", got)
	}
}

// ZRANK and ZREVRANK WITHSCORE are Redis 7.2's (tumbler reports 7.2): the
// rank and the score, a null array for a missing member or key; the
// option is checked before the key, as in 7.2's zrankGenericCommand.
func TestZRank_WithScore(t *testing.T) {
	te := newTestEngine(t)
	te.expect(":3", "ZADD", "z", "1", "a", "2.5", "b", "-inf", "c")
	te.expect("*2 :2 ,2.5", "ZRANK", "z", "b", "WITHSCORE")
	te.expect("*2 :0 ,2.5", "ZREVRANK", "z", "b", "withscore")
	te.expect("*2 :0 ,-Inf", "ZRANK", "z", "c", "WithScore")
	te.expect(":2", "ZRANK", "z", "b")
	te.expect(":1", "ZREVRANK", "z", "a")
	te.expect("(nilarray)", "ZRANK", "z", "nope", "WITHSCORE")
	te.expect("(nilarray)", "ZREVRANK", "nokey", "a", "WITHSCORE")
	te.expect("(nil)", "ZRANK", "z", "nope")
	te.expect("-ERR syntax error", "ZRANK", "z", "b", "WITHSCORES")
	te.expect("-ERR wrong number of arguments for 'zrevrank' command", "ZREVRANK", "z", "b", "WITHSCORE", "x")
	te.expect("-ERR wrong number of arguments for 'zrank' command", "ZRANK", "z")
	te.expect("+OK", "SET", "s", "x")
	te.expect("-"+ErrWrongType, "ZRANK", "s", "a", "WITHSCORE")
	te.expect("-ERR syntax error", "ZRANK", "s", "a", "BAD")
}
