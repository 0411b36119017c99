package engine

import (
	"math"
	"time"
)

func registerList(e *Engine) {
	const w, r = FlagWrite, FlagReadonly
	key1 := func(cmd *Command) *Command {
		cmd.FirstKey, cmd.LastKey, cmd.Step, cmd.Group = 1, 1, 1, "list"
		return cmd
	}
	key2 := func(cmd *Command) *Command {
		cmd.FirstKey, cmd.LastKey, cmd.Step, cmd.Group = 1, 2, 1, "list"
		return cmd
	}
	e.Register(
		key1(&Command{Name: "lpush", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { pushGeneric(c, true, false) }}),
		key1(&Command{Name: "rpush", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { pushGeneric(c, false, false) }}),
		key1(&Command{Name: "lpushx", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { pushGeneric(c, true, true) }}),
		key1(&Command{Name: "rpushx", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Fn: func(c *Ctx) { pushGeneric(c, false, true) }}),
		key1(&Command{Name: "lpop", Arity: -2, Flags: w | FlagFast, Fn: func(c *Ctx) { popGeneric(c, true) }}),
		key1(&Command{Name: "rpop", Arity: -2, Flags: w | FlagFast, Fn: func(c *Ctx) { popGeneric(c, false) }}),
		key1(&Command{Name: "llen", Arity: 2, Flags: r | FlagFast, Fn: cmdLLen}),
		key1(&Command{Name: "lrange", Arity: 4, Flags: r, Fn: cmdLRange}),
		key1(&Command{Name: "lindex", Arity: 3, Flags: r, Fn: cmdLIndex}),
		key1(&Command{Name: "lset", Arity: 4, Flags: w | FlagDenyOOM, Fn: cmdLSet}),
		key1(&Command{Name: "lrem", Arity: 4, Flags: w, Fn: cmdLRem}),
		key1(&Command{Name: "ltrim", Arity: 4, Flags: w, Fn: cmdLTrim}),
		key1(&Command{Name: "linsert", Arity: 5, Flags: w | FlagDenyOOM, Fn: cmdLInsert}),
		key1(&Command{Name: "lpos", Arity: -3, Flags: r, Fn: cmdLPos}),
		key2(&Command{Name: "lmove", Arity: 5, Flags: w | FlagDenyOOM, Fn: cmdLMove}),
		key2(&Command{Name: "rpoplpush", Arity: 3, Flags: w | FlagDenyOOM, Fn: func(c *Ctx) { lmoveGeneric(c, false, true) }}),
		&Command{Name: "lmpop", Arity: -4, Flags: w, Keys: numkeysKeys(0, 1), Group: "list", Fn: func(c *Ctx) { lmpopGeneric(c, 1, false) }},
		// Blocking commands: allowed in scripts and transactions, where
		// they do not block (Redis 7.2; 7.0 refused them in scripts).
		&Command{Name: "blpop", Arity: -3, Flags: w | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", Fn: cmdBLPop},
		&Command{Name: "brpop", Arity: -3, Flags: w | FlagBlocking, FirstKey: 1, LastKey: -2, Step: 1, Group: "list", Fn: cmdBRPop},
		key2(&Command{Name: "blmove", Arity: 6, Flags: w | FlagDenyOOM | FlagBlocking, Fn: cmdBLMove}),
		key2(&Command{Name: "brpoplpush", Arity: 4, Flags: w | FlagDenyOOM | FlagBlocking, Fn: cmdBRPopLPush}),
		&Command{Name: "blmpop", Arity: -5, Flags: w | FlagBlocking, Keys: numkeysKeys(0, 2), Group: "list", Fn: func(c *Ctx) { lmpopGeneric(c, 2, true) }},
	)
}

// Error texts of list commands (Redis's shared objects and t_list.c).
const (
	ErrNoSuchKey       = "ERR no such key"
	ErrIndexOutOfRange = "ERR index out of range"
	ErrNotPositive     = "ERR value is out of range, must be positive"
)

// getList looks key up for a list command. It returns a nil list for a
// missing key, and replies WRONGTYPE (ok=false) for another kind.
func getList(c *Ctx, key []byte, read bool) (ent *entry, l *list, ok bool) {
	return getTyped[*list](c, key, read, KindList)
}

// getTyped finds the value of the given kind under key: (nil, zero, true)
// when the key is missing, ok=false after replying WRONGTYPE for another
// kind. read counts the lookup in the keyspace hits and misses (and
// raises keymiss), as Redis's read lookups do.
func getTyped[T any](c *Ctx, key []byte, read bool, kind Kind) (ent *entry, v T, ok bool) {
	if read {
		ent = c.Eng.lookupRead(key, c.Now)
	} else {
		ent = c.Eng.lookup(key, c.Now)
	}
	if ent == nil {
		return nil, v, true
	}
	if ent.kind() != kind {
		c.W.WriteError(ErrWrongType)
		return nil, v, false
	}
	return ent, ent.obj().v.(T), true
}

// createList adds an empty list under key and wakes clients waiting for
// it (they are served when the command ends). The caller fills it and
// calls modified. Requires e.mu.
func (e *Engine) createList(key []byte) (*entry, *list) {
	l := &list{}
	ent := newObjEntry(key, nil, &object{kind: KindList, v: l})
	e.putNew(ent)
	e.signalReady(ent.key())
	return ent, l
}

// listChanged ends a command's changes to the list under key: event is
// notified, an empty list is deleted ("del"), and the modification hooks
// run.
func (e *Engine) listChanged(key []byte, ent *entry, l *list, event string) {
	e.collectionChanged(key, ent, l.Len(), NotifyList, event)
}

// collectionChanged ends a command's changes to the list, set or sorted
// set under key, which now holds n items: event (of class) is notified, an
// emptied key is deleted ("del"), and the modification hooks run.
func (e *Engine) collectionChanged(key []byte, ent *entry, n int, class uint32, event string) {
	k := string(key)
	e.notify(class, event, k)
	if n == 0 {
		e.removeKey(k, ent)
		e.notify(NotifyGeneric, "del", k)
	}
	e.modified(k)
}

// pushEvent and popEvent name a list change at one end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

// parseLong parses a Redis "long" argument, replying the standard error.
func parseLong(c *Ctx, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		c.W.WriteError(ErrNotInteger)
	}
	return n, ok
}

// parseRangeLong is getRangeLongFromObjectOrReply: msg, when not empty,
// replaces both the parse error and the range error.
func parseRangeLong(c *Ctx, b []byte, lo, hi int64, msg string) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		if msg != "" {
			c.W.WriteError("ERR " + msg)
		} else {
			c.W.WriteError(ErrNotInteger)
		}
		return 0, false
	}
	if n < lo || n > hi {
		if msg != "" {
			c.W.WriteError("ERR " + msg)
		} else {
			c.W.WriteError("ERR value is out of range, value must between " + itoa(lo) + " and " + itoa(hi))
		}
		return 0, false
	}
	return n, true
}

// parsePositive is getPositiveLongFromObjectOrReply.
func parsePositive(c *Ctx, b []byte, msg string) (int64, bool) {
	if msg == "" {
		msg = "value is out of range, must be positive"
	}
	return parseRangeLong(c, b, 0, math.MaxInt64, msg)
}

// LPUSH/RPUSH/LPUSHX/RPUSHX key element [element ...]
func pushGeneric(c *Ctx, left, xx bool) {
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		if xx {
			c.W.WriteInt(0)
			return
		}
		ent, l = c.Eng.createList(key)
	}
	for _, v := range c.Args[2:] {
		l.Push(string(v), left)
	}
	c.Eng.dirty += int64(len(c.Args) - 2)
	c.W.WriteInt(int64(l.Len()))
	c.Eng.listChanged(key, ent, l, pushEvent(left))
}

// writeRange replies elements [start, end] of l (in range), reversed when
// reverse is set (from end down to start).
func writeRange(c *Ctx, l *list, start, end int, reverse bool) {
	c.W.WriteArray(end - start + 1)
	if reverse {
		for i := end; i >= start; i-- {
			c.W.WriteBulkString(l.At(i))
		}
		return
	}
	for i := start; i <= end; i++ {
		c.W.WriteBulkString(l.At(i))
	}
}

// popRange pops up to count elements from one end of l, replying them as
// an array in pop order, and counts them in dirty (listElementsRemoved).
func popRange(c *Ctx, l *list, left bool, count int64) {
	n := int64(l.Len())
	if count > n {
		count = n
	}
	c.W.WriteArray(int(count))
	for i := int64(0); i < count; i++ {
		c.W.WriteBulkString(l.Pop(left))
	}
	c.Eng.dirty += count
}

// LPOP/RPOP key [count]
func popGeneric(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		c.W.WriteError(ErrWrongArgs(c.Cmd.Name))
		return
	}
	hasCount := len(c.Args) == 3
	var count int64
	if hasCount {
		n, ok := parsePositive(c, c.Args[2], "")
		if !ok {
			return
		}
		count = n
	}
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		if hasCount {
			c.W.WriteNullArray()
		} else {
			c.W.WriteNull()
		}
		return
	}
	if hasCount && count == 0 {
		c.W.WriteArray(0)
		return
	}
	if !hasCount {
		c.W.WriteBulkString(l.Pop(left))
		c.Eng.dirty++
	} else {
		popRange(c, l, left, count)
	}
	c.Eng.listChanged(key, ent, l, popEvent(left))
}

// LLEN key
func cmdLLen(c *Ctx) {
	_, l, ok := getList(c, c.Args[1], true)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(l.Len()))
}

// clampRange converts Redis's inclusive, possibly negative start and end
// to indexes of a list of n elements; empty reports an empty range.
func clampRange(start, end, n int64) (s, e int, empty bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		return 0, 0, true
	}
	if end >= n {
		end = n - 1
	}
	return int(start), int(end), false
}

// LRANGE key start stop
func cmdLRange(c *Ctx) {
	start, ok := parseLong(c, c.Args[2])
	if !ok {
		return
	}
	end, ok := parseLong(c, c.Args[3])
	if !ok {
		return
	}
	_, l, ok := getList(c, c.Args[1], true)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteArray(0)
		return
	}
	s, e, empty := clampRange(start, end, int64(l.Len()))
	if empty {
		c.W.WriteArray(0)
		return
	}
	writeRange(c, l, s, e, false)
}

// listIndex converts a possibly negative index, reporting whether it is
// inside a list of n elements.
func listIndex(i, n int64) (int, bool) {
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return 0, false
	}
	return int(i), true
}

// LINDEX key index
func cmdLIndex(c *Ctx) {
	_, l, ok := getList(c, c.Args[1], true)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteNull()
		return
	}
	idx, ok := parseLong(c, c.Args[2])
	if !ok {
		return
	}
	i, in := listIndex(idx, int64(l.Len()))
	if !in {
		c.W.WriteNull()
		return
	}
	c.W.WriteBulkString(l.At(i))
}

// LSET key index element
func cmdLSet(c *Ctx) {
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteError(ErrNoSuchKey)
		return
	}
	idx, ok := parseLong(c, c.Args[2])
	if !ok {
		return
	}
	i, in := listIndex(idx, int64(l.Len()))
	if !in {
		c.W.WriteError(ErrIndexOutOfRange)
		return
	}
	l.Set(i, string(c.Args[3]))
	c.Eng.dirty++
	c.W.WriteStatus(statusOK)
	c.Eng.listChanged(key, ent, l, "lset")
}

// LREM key count element
func cmdLRem(c *Ctx) {
	toRemove, ok := parseLong(c, c.Args[2])
	if !ok {
		return
	}
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteInt(0)
		return
	}
	elem := string(c.Args[3])
	reverse := toRemove < 0
	limit := toRemove
	if reverse {
		limit = -toRemove // MinInt64 stays negative: no limit, as in C
	}
	var removed int64
	l.Filter(reverse, func(s string) bool {
		if s == elem && (limit <= 0 || removed < limit) {
			removed++
			return false
		}
		return true
	})
	if removed > 0 {
		c.Eng.dirty += removed
		c.Eng.listChanged(key, ent, l, "lrem")
	}
	c.W.WriteInt(removed)
}

// LTRIM key start stop
func cmdLTrim(c *Ctx) {
	start, ok := parseLong(c, c.Args[2])
	if !ok {
		return
	}
	end, ok := parseLong(c, c.Args[3])
	if !ok {
		return
	}
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteStatus(statusOK)
		return
	}
	n := int64(l.Len())
	s, e, empty := clampRange(start, end, n)
	if empty {
		l.Trim(int(n), 0)
	} else {
		l.Trim(s, int(n)-1-e)
	}
	c.Eng.dirty += n - int64(l.Len()) // the elements trimmed, maybe none
	c.Eng.listChanged(key, ent, l, "ltrim")
	c.W.WriteStatus(statusOK)
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(c *Ctx) {
	var after bool
	switch {
	case eqFold(c.Args[2], "after"):
		after = true
	case eqFold(c.Args[2], "before"):
	default:
		c.W.WriteError(ErrSyntax)
		return
	}
	key := c.Args[1]
	ent, l, ok := getList(c, key, false)
	if !ok {
		return
	}
	if l == nil {
		c.W.WriteInt(0)
		return
	}
	pivot := string(c.Args[3])
	for i := 0; i < l.Len(); i++ {
		if l.At(i) == pivot {
			if after {
				i++
			}
			l.Insert(i, string(c.Args[4]))
			c.Eng.dirty++
			c.Eng.listChanged(key, ent, l, "linsert")
			c.W.WriteInt(int64(l.Len()))
			return
		}
	}
	c.W.WriteInt(-1)
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(c *Ctx) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		opt := c.Args[j]
		switch {
		case eqFold(opt, "rank") && more > 0:
			j++
			n, ok := parseRangeLong(c, c.Args[j], -math.MaxInt64, math.MaxInt64, "")
			if !ok {
				return
			}
			if n == 0 {
				c.W.WriteError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case eqFold(opt, "count") && more > 0:
			j++
			n, ok := parsePositive(c, c.Args[j], "COUNT can't be negative")
			if !ok {
				return
			}
			count = n
		case eqFold(opt, "maxlen") && more > 0:
			j++
			n, ok := parsePositive(c, c.Args[j], "MAXLEN can't be negative")
			if !ok {
				return
			}
			maxlen = n
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	fromTail := rank < 0
	if fromTail {
		rank = -rank
	}
	ent := c.Eng.lookupRead(c.Args[1], c.Now)
	if ent == nil {
		if count != -1 {
			c.W.WriteArray(0)
		} else {
			c.W.WriteNull()
		}
		return
	}
	if ent.kind() != KindList {
		c.W.WriteError(ErrWrongType)
		return
	}
	l := ent.obj().v.(*list)
	elem := string(c.Args[2])
	n := int64(l.Len())
	var matches int64
	var found []int64
	match := int64(-1)
	for index := int64(0); index < n && (maxlen == 0 || index < maxlen); index++ {
		pos := index
		if fromTail {
			pos = n - 1 - index
		}
		if l.At(int(pos)) != elem {
			continue
		}
		matches++
		if matches < rank {
			continue
		}
		if count == -1 {
			match = pos
			break
		}
		found = append(found, pos)
		if count != 0 && matches-rank+1 >= count {
			break
		}
	}
	if count != -1 {
		c.W.WriteArray(len(found))
		for _, p := range found {
			c.W.WriteInt(p)
		}
		return
	}
	if match >= 0 {
		c.W.WriteInt(match)
	} else {
		c.W.WriteNull()
	}
}

// parseWhere parses LEFT|RIGHT, replying a syntax error otherwise.
func parseWhere(c *Ctx, b []byte) (left, ok bool) {
	switch {
	case eqFold(b, "left"):
		return true, true
	case eqFold(b, "right"):
		return false, true
	}
	c.W.WriteError(ErrSyntax)
	return false, false
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func cmdLMove(c *Ctx) {
	from, ok := parseWhere(c, c.Args[3])
	if !ok {
		return
	}
	to, ok := parseWhere(c, c.Args[4])
	if !ok {
		return
	}
	lmoveGeneric(c, from, to)
}

// lmoveGeneric is LMOVE (and RPOPLPUSH) once the directions are known.
func lmoveGeneric(c *Ctx, fromLeft, toLeft bool) {
	src, dst := c.Args[1], c.Args[2]
	sent, sl, ok := getList(c, src, false)
	if !ok {
		return
	}
	if sl == nil {
		c.W.WriteNull()
		return
	}
	_, dl, ok := getList(c, dst, false)
	if !ok {
		return
	}
	v := sl.Pop(fromLeft)
	if dl == nil {
		_, dl = c.Eng.createList(dst)
	}
	dl.Push(v, toLeft)
	c.Eng.dirty++ // (not when it serves a blocked BLMOVE: rerun)
	c.Eng.modified(string(dst))
	c.Eng.notifyBytes(NotifyList, pushEvent(toLeft), dst)
	c.W.WriteBulkString(v)
	c.Eng.listChanged(src, sent, sl, popEvent(fromLeft))
}

// BLPOP key [key ...] timeout
func cmdBLPop(c *Ctx) {
	blockingPop(c, c.Args[1:len(c.Args)-1], true, c.Args[len(c.Args)-1], -1)
}

// BRPOP key [key ...] timeout
func cmdBRPop(c *Ctx) {
	blockingPop(c, c.Args[1:len(c.Args)-1], false, c.Args[len(c.Args)-1], -1)
}

// blockingPop is Redis's blockingPopGenericCommand: the first key holding
// a list is popped from (count < 0: one element, replied with its key;
// else up to count, as LMPOP replies); a key of another kind met first is
// an error; with nothing to pop the client blocks, or gets a null array
// where it cannot block.
func blockingPop(c *Ctx, keys [][]byte, left bool, timeoutArg []byte, count int64) {
	timeout, ok := parseBlockTimeout(c, timeoutArg)
	if !ok {
		return
	}
	for _, key := range keys {
		ent, l, ok := getList(c, key, false)
		if !ok {
			return
		}
		if l == nil {
			continue
		}
		c.W.WriteArray(2)
		c.W.WriteBulk(key)
		if count >= 0 {
			popRange(c, l, left, count)
		} else {
			c.W.WriteBulkString(l.Pop(left))
			c.Eng.dirty++ // (not when it serves a blocked BLPOP: rerun)
		}
		c.Eng.listChanged(key, ent, l, popEvent(left))
		return
	}
	if !c.canBlock() {
		c.W.WriteNullArray()
		return
	}
	c.block(keys, timeout, KindList)
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
func cmdBLMove(c *Ctx) {
	from, ok := parseWhere(c, c.Args[3])
	if !ok {
		return
	}
	to, ok := parseWhere(c, c.Args[4])
	if !ok {
		return
	}
	timeout, ok := parseBlockTimeout(c, c.Args[5])
	if !ok {
		return
	}
	blmoveGeneric(c, from, to, timeout)
}

// BRPOPLPUSH source destination timeout
func cmdBRPopLPush(c *Ctx) {
	timeout, ok := parseBlockTimeout(c, c.Args[3])
	if !ok {
		return
	}
	blmoveGeneric(c, false, true, timeout)
}

func blmoveGeneric(c *Ctx, fromLeft, toLeft bool, timeout time.Duration) {
	_, l, ok := getList(c, c.Args[1], false)
	if !ok {
		return
	}
	if l == nil {
		if !c.canBlock() {
			c.W.WriteNull()
			return
		}
		c.block(c.Args[1:2], timeout, KindList)
		return
	}
	lmoveGeneric(c, fromLeft, toLeft)
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
func lmpopGeneric(c *Ctx, numkeysIdx int, blocking bool) {
	keys, left, count, ok := parseMpop(c, numkeysIdx, parseWhere)
	if !ok {
		return
	}
	if blocking {
		blockingPop(c, keys, left, c.Args[1], count)
		return
	}
	for _, key := range keys {
		ent, l, ok := getList(c, key, false)
		if !ok {
			return
		}
		if l == nil {
			continue
		}
		c.W.WriteArray(2)
		c.W.WriteBulk(key)
		popRange(c, l, left, count)
		c.Eng.listChanged(key, ent, l, popEvent(left))
		return
	}
	c.W.WriteNullArray()
}

// parseMpop parses what follows [B]LMPOP's and [B]ZMPOP's name (and
// timeout): numkeys (at numkeysIdx), the keys, the end to pop from, read
// by where (LEFT|RIGHT, MIN|MAX: it replies the syntax error), and
// COUNT, 1 unless given, given once.
func parseMpop(c *Ctx, numkeysIdx int, where func(*Ctx, []byte) (bool, bool)) (keys [][]byte, end bool, count int64, ok bool) {
	numkeys, ok := parseRangeLong(c, c.Args[numkeysIdx], 1, math.MaxInt64, "numkeys should be greater than 0")
	if !ok {
		return nil, false, 0, false
	}
	if numkeys > int64(len(c.Args)) {
		c.W.WriteError(ErrSyntax)
		return nil, false, 0, false
	}
	whereIdx := numkeysIdx + int(numkeys) + 1
	if whereIdx >= len(c.Args) {
		c.W.WriteError(ErrSyntax)
		return nil, false, 0, false
	}
	if end, ok = where(c, c.Args[whereIdx]); !ok {
		return nil, false, 0, false
	}
	count = -1
	for j := whereIdx + 1; j < len(c.Args); j++ {
		if count == -1 && eqFold(c.Args[j], "count") && j+1 < len(c.Args) {
			j++
			if count, ok = parseRangeLong(c, c.Args[j], 1, math.MaxInt64, "count should be greater than 0"); !ok {
				return nil, false, 0, false
			}
		} else {
			c.W.WriteError(ErrSyntax)
			return nil, false, 0, false
		}
	}
	if count == -1 {
		count = 1
	}
	return c.Args[numkeysIdx+1 : whereIdx], end, count, true
}
