package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Sorted set commands over several keys or at random (Redis 7.0's
// t_zset.c): ZUNION, ZINTER, ZDIFF and their STORE forms, ZINTERCARD,
// ZRANDMEMBER, ZMPOP, and the blocking pops BZPOPMIN, BZPOPMAX and BZMPOP
// (blocking.go). ZRANGESTORE is with the ZRANGE family in cmd_zset.go.

func registerZsetOps(e *Engine) {
	z := func(name string, arity int, flags Flag, fn func(*Ctx)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, Group: "sorted-set", Fn: fn}
	}
	w, r := FlagWrite, FlagReadonly
	// ZUNIONSTORE and friends: the destination is the legacy first key,
	// the inputs are found by numkeys (Redis lists the destination last).
	store := func(cmd *Command) *Command {
		cmd.FirstKey, cmd.LastKey, cmd.Step, cmd.Keys = 1, 1, 1, numkeysKeys(1, 2)
		return cmd
	}
	inputs := func(numkeysIdx int, cmd *Command) *Command {
		cmd.Keys = numkeysKeys(0, numkeysIdx)
		return cmd
	}
	first := func(last int, cmd *Command) *Command {
		cmd.FirstKey, cmd.LastKey, cmd.Step = 1, last, 1
		return cmd
	}
	e.Register(
		inputs(1, z("zunion", -3, r, func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpUnion, false) })),
		inputs(1, z("zinter", -3, r, func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpInter, false) })),
		inputs(1, z("zdiff", -3, r, func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpDiff, false) })),
		inputs(1, z("zintercard", -3, r, func(c *Ctx) { zsetOpGeneric(c, nil, 1, setOpInter, true) })),
		store(z("zunionstore", -4, w|FlagDenyOOM, func(c *Ctx) { zsetOpGeneric(c, c.Args[1], 2, setOpUnion, false) })),
		store(z("zinterstore", -4, w|FlagDenyOOM, func(c *Ctx) { zsetOpGeneric(c, c.Args[1], 2, setOpInter, false) })),
		store(z("zdiffstore", -4, w|FlagDenyOOM, func(c *Ctx) { zsetOpGeneric(c, c.Args[1], 2, setOpDiff, false) })),
		first(1, z("zrandmember", -2, r, cmdZRandMember)),
		inputs(1, z("zmpop", -4, w, func(c *Ctx) { zmpopGeneric(c, 1, false) })),
		// Blocking pops: allowed in scripts and transactions, where they
		// do not block (as the list ones: Redis 7.2; 7.0 refuses
		// BZPOPMIN and BZPOPMAX in scripts).
		first(-2, z("bzpopmin", -3, w|FlagBlocking|FlagFast, func(c *Ctx) { cmdBZPop(c, false) })),
		first(-2, z("bzpopmax", -3, w|FlagBlocking|FlagFast, func(c *Ctx) { cmdBZPop(c, true) })),
		inputs(2, z("bzmpop", -5, w|FlagBlocking, func(c *Ctx) { zmpopGeneric(c, 2, true) })),
	)
}

// zsetSource is one input of a set operation: a sorted set, a set (whose
// members all score 1), or a missing key (empty), with its weight.
type zsetSource struct {
	z      *zset
	s      *set
	weight float64
}

func (src *zsetSource) Len() int {
	switch {
	case src.z != nil:
		return src.z.Len()
	case src.s != nil:
		return src.s.Len()
	}
	return 0
}

// each calls fn with every member and its score until fn returns false.
func (src *zsetSource) each(fn func(member string, score float64) bool) {
	switch {
	case src.z != nil:
		for i := 0; i < src.z.Len(); i++ {
			if it := src.z.At(i); !fn(it.member, it.score) {
				return
			}
		}
	case src.s != nil:
		for _, m := range src.s.list {
			if !fn(m, 1) {
				return
			}
		}
	}
}

// find is zuiFind: member's score, if it is there.
func (src *zsetSource) find(member string) (float64, bool) {
	switch {
	case src.z != nil:
		return src.z.Score(member)
	case src.s != nil && src.s.Has(member):
		return 1, true
	}
	return 0, false
}

// same reports whether both inputs are one value (a key given twice).
func (src *zsetSource) same(o *zsetSource) bool {
	return (src.z != nil && src.z == o.z) || (src.s != nil && src.s == o.s)
}

// AGGREGATE choices.
const (
	aggSum = iota
	aggMin
	aggMax
)

// zaggregate is zunionInterAggregate: a sum of +inf and -inf is 0; MIN
// and MAX keep target when val is NaN.
func zaggregate(target *float64, val float64, agg int) {
	switch agg {
	case aggSum:
		*target += val
		if math.IsNaN(*target) {
			*target = 0
		}
	case aggMin:
		if val < *target {
			*target = val
		}
	case aggMax:
		if val > *target {
			*target = val
		}
	}
}

// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
// ZDIFF numkeys key [key ...] [WITHSCORES]
// ZINTERCARD numkeys key [key ...] [LIMIT limit]
// ZUNIONSTORE / ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]
// ZDIFFSTORE destination numkeys key [key ...]
//
// zunionInterDiffGenericCommand: numkeys, then every input is looked up
// (read: keyspace hits and misses) and type-checked before the options
// are parsed. Sets are inputs whose members score 1. Inputs are taken
// smallest first (a stable sort, as glibc's qsort), which decides how
// +inf and -inf sum. With dst the result is stored (zsetStore); with
// cardOnly (ZINTERCARD) only its size is replied.
func zsetOpGeneric(c *Ctx, dst []byte, numkeysIdx int, op setOp, cardOnly bool) {
	setnum, ok := parseLong(c, c.Args[numkeysIdx])
	if !ok {
		return
	}
	if setnum < 1 {
		c.W.WriteError("ERR at least 1 input key is needed for '" + c.Cmd.Name + "' command")
		return
	}
	if setnum > int64(len(c.Args)-(numkeysIdx+1)) {
		c.W.WriteError(ErrSyntax)
		return
	}
	n := int(setnum)
	srcs := make([]zsetSource, n)
	for i := range srcs {
		srcs[i].weight = 1
		ent := c.Eng.lookupRead(c.Args[numkeysIdx+1+i], c.Now)
		if ent == nil {
			continue
		}
		switch ent.kind() {
		case KindZSet:
			srcs[i].z = ent.obj().v.(*zset)
		case KindSet:
			srcs[i].s = ent.obj().v.(*set)
		default:
			c.W.WriteError(ErrWrongType)
			return
		}
	}
	agg, withScores, limit := aggSum, false, int64(0)
	for j := numkeysIdx + 1 + n; j < len(c.Args); {
		remaining := len(c.Args) - j
		switch opt := c.Args[j]; {
		case op != setOpDiff && !cardOnly && remaining >= n+1 && eqFold(opt, "weights"):
			j++
			for i := range srcs {
				w, ok := parseScore(c.Args[j])
				if !ok {
					c.W.WriteError("ERR weight value is not a float")
					return
				}
				srcs[i].weight = w
				j++
			}
		case op != setOpDiff && !cardOnly && remaining >= 2 && eqFold(opt, "aggregate"):
			switch a := c.Args[j+1]; {
			case eqFold(a, "sum"):
				agg = aggSum
			case eqFold(a, "min"):
				agg = aggMin
			case eqFold(a, "max"):
				agg = aggMax
			default:
				c.W.WriteError(ErrSyntax)
				return
			}
			j += 2
		case dst == nil && !cardOnly && eqFold(opt, "withscores"):
			withScores = true
			j++
		case cardOnly && remaining >= 2 && eqFold(opt, "limit"):
			if limit, ok = parsePositive(c, c.Args[j+1], "LIMIT can't be negative"); !ok {
				return
			}
			j += 2
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	if op != setOpDiff {
		sort.SliceStable(srcs, func(a, b int) bool { return srcs[a].Len() < srcs[b].Len() })
	}
	var items []zitem
	var card int64
	switch op {
	case setOpInter:
		if srcs[0].Len() == 0 {
			break
		}
		srcs[0].each(func(m string, sc float64) bool {
			score := srcs[0].weight * sc
			if math.IsNaN(score) {
				score = 0
			}
			for j := 1; j < n; j++ {
				v := sc
				if !srcs[j].same(&srcs[0]) {
					var found bool
					if v, found = srcs[j].find(m); !found {
						return true
					}
				}
				zaggregate(&score, v*srcs[j].weight, agg)
			}
			if cardOnly {
				card++
				return limit == 0 || card < limit
			}
			items = append(items, zitem{score, m})
			return true
		})
	case setOpUnion:
		acc := make(map[string]float64)
		for i := range srcs {
			srcs[i].each(func(m string, sc float64) bool {
				score := srcs[i].weight * sc
				if math.IsNaN(score) {
					score = 0
				}
				if cur, ok := acc[m]; ok {
					zaggregate(&cur, score, agg)
					acc[m] = cur
				} else {
					acc[m] = score
				}
				return true
			})
		}
		items = make([]zitem, 0, len(acc))
		for m, sc := range acc {
			items = append(items, zitem{sc, m})
		}
	case setOpDiff:
		// a key given again leaves nothing (zsetChooseDiffAlgorithm)
		if slices.ContainsFunc(srcs[1:], func(o zsetSource) bool { return o.same(&srcs[0]) }) {
			break
		}
		srcs[0].each(func(m string, sc float64) bool {
			for j := 1; j < n; j++ {
				if _, found := srcs[j].find(m); found {
					return true
				}
			}
			items = append(items, zitem{sc, m})
			return true
		})
	}
	if cardOnly {
		c.W.WriteInt(card)
		return
	}
	slices.SortFunc(items, func(a, b zitem) int {
		if zitemLess(a, b) {
			return -1
		}
		return 1 // members differ
	})
	if dst == nil {
		writeZitems(c, items, withScores)
		return
	}
	// built as a skip list, then converted to the compact encoding when
	// small enough (zsetConvertToListpackIfNeeded)
	lim := c.Eng.limits()
	big := int64(len(items)) > lim.ZsetMaxListpackEntries
	for _, it := range items {
		big = big || int64(len(it.member)) > lim.ZsetMaxListpackValue
	}
	c.Eng.zsetStore(c, dst, items, big, []string{"zinterstore", "zunionstore", "zdiffstore"}[op])
}

// ZRANDMEMBER key [count [WITHSCORES]]
//
// zrandmemberCommand: without a count, one random member (nil for a
// missing key); with one, a positive count gives distinct members (the
// whole set, highest score first, when count >= its size; from a compact
// set drawn sparsely, in its order), a negative one -count members that may repeat,
// in random order. WITHSCORES adds each score (RESP3: [member, score]
// pairs).
func cmdZRandMember(c *Ctx) {
	if len(c.Args) < 3 {
		_, z, ok := getZset(c, c.Args[1], true)
		if !ok {
			return
		}
		if z == nil {
			c.W.WriteNull()
			return
		}
		c.W.WriteBulkString(z.At(rand.IntN(z.Len())).member)
		return
	}
	l, withScores, ok := parseRandCount(c, "withscores")
	if !ok {
		return
	}
	_, z, ok := getZset(c, c.Args[1], true)
	if !ok {
		return
	}
	if z == nil || l == 0 {
		c.W.WriteArray(0)
		return
	}
	size := int64(z.Len())
	count, uniq, ok := randCount(c, l, size)
	if !ok {
		return
	}
	var ranks []int
	switch {
	case !uniq || count == 1: // repeats allowed
		ranks = make([]int, count)
		for i := range ranks {
			ranks[i] = rand.IntN(int(size))
		}
	case count >= size: // the whole set, highest first (zuiNext)
		ranks = make([]int, size)
		for i := range ranks {
			ranks[i] = int(size) - 1 - i
		}
	case count*3 > size: // most of it: the order of a dict
		ranks = rand.Perm(int(size))[:count]
	default: // a few, drawn until distinct
		seen := make(map[int]struct{}, count)
		for int64(len(ranks)) < count {
			i := rand.IntN(int(size))
			if _, dup := seen[i]; !dup {
				seen[i] = struct{}{}
				ranks = append(ranks, i)
			}
		}
		if !z.big {
			slices.Sort(ranks) // lpRandomPairsUnique keeps the listpack's order
		}
	}
	items := make([]zitem, len(ranks))
	for i, r := range ranks {
		items[i] = z.At(r)
	}
	writeZitems(c, items, withScores)
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
//
// zmpopGenericCommand: the first key holding a sorted set is popped from
// (a key of another kind met first is an error), replied as
// [key, [[member, score] ...]]; with none, a null array, or (BZMPOP) the
// client blocks. BZMPOP's timeout is parsed after the other arguments.
func zmpopGeneric(c *Ctx, numkeysIdx int, blocking bool) {
	keys, max, count, ok := parseMpop(c, numkeysIdx, parseMinMax)
	if !ok {
		return
	}
	if blocking {
		blockingZpop(c, keys, max, c.Args[1], count, true)
	} else if !zpopFirst(c, keys, max, count, true) {
		c.W.WriteNullArray()
	}
}

// parseMinMax parses MIN|MAX, replying a syntax error otherwise.
func parseMinMax(c *Ctx, b []byte) (max, ok bool) {
	switch {
	case eqFold(b, "min"):
		return false, true
	case eqFold(b, "max"):
		return true, true
	}
	c.W.WriteError(ErrSyntax)
	return false, false
}

// BZPOPMIN key [key ...] timeout / BZPOPMAX key [key ...] timeout
func cmdBZPop(c *Ctx, max bool) {
	blockingZpop(c, c.Args[1:len(c.Args)-1], max, c.Args[len(c.Args)-1], -1, false)
}

// zpopFirst pops from the first of keys that holds a sorted set, with a
// key reply (zpopReply), and reports whether it replied: so it has when
// a key of another kind comes first (WRONGTYPE).
func zpopFirst(c *Ctx, keys [][]byte, max bool, count int64, nested bool) bool {
	for _, key := range keys {
		ent, z, ok := getZset(c, key, false)
		if !ok {
			return true
		}
		if z != nil {
			zpopReply(c, key, ent, z, max, count, nested, true)
			return true
		}
	}
	return false
}

// blockingZpop is blockingGenericZpopCommand: the first key holding a
// sorted set is popped from (count -1: one item, replied flat as [key,
// member, score]; nested: as ZMPOP replies); a key of another kind met
// first is an error; with nothing to pop the client blocks, or gets a
// null array where it cannot block.
func blockingZpop(c *Ctx, keys [][]byte, max bool, timeoutArg []byte, count int64, nested bool) {
	timeout, ok := parseBlockTimeout(c, timeoutArg)
	if !ok {
		return
	}
	if zpopFirst(c, keys, max, count, nested) {
		return
	}
	if !c.canBlock() {
		c.W.WriteNullArray()
		return
	}
	c.block(keys, timeout, KindZSet)
}
