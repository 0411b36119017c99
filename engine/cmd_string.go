package engine

import (
	"math"
	"math/big"
	"strconv"
	"unsafe"

	"github.com/tumblerdb/tumbler/expiry"
)

func registerString(e *Engine) {
	e.Register(
		&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdSet},
		&Command{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdSetNX},
		&Command{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdSetEX},
		&Command{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdPSetEX},
		&Command{Name: "get", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGet},
		&Command{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGetSet},
		&Command{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGetDel},
		&Command{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGetEx},
		&Command{Name: "mget", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "string", Fn: cmdMGet},
		&Command{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Fn: cmdMSet},
		&Command{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Fn: cmdMSetNX},
		&Command{Name: "getrange", Arity: 4, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGetRange},
		&Command{Name: "substr", Arity: 4, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdGetRange},
		&Command{Name: "strlen", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdStrlen},
		&Command{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdAppend},
		&Command{Name: "incr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdIncr},
		&Command{Name: "decr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdDecr},
		&Command{Name: "incrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdIncrBy},
		&Command{Name: "decrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdDecrBy},
		&Command{Name: "incrbyfloat", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdIncrByFloat},
	)
}

// Flags of SET/GETEX's extended arguments (t_string.c OBJ_*).
const (
	objNX = 1 << iota
	objXX
	objGET
	objKeepTTL
	objPersist
	objEX
	objPX
	objEXAT
	objPXAT
)

const (
	parseForSet = iota
	parseForGet
)

// parseExtendedString is Redis's parseExtendedStringArgumentsOrReply: the
// options of SET (parseForSet) or GETEX (parseForGet) from args[start:].
// Options are case-insensitive and in any order; a conflicting or unknown
// option, or an expiry kind with no value, is a syntax error. The same
// expiry kind may repeat; the last value wins. SET's conditions IFEQ,
// IFNE, IFDEQ and IFDNE (Redis 8.4, cmd_cas.go) return their value in match.
func parseExtendedString(c *Ctx, start, typ int) (flags int, expire, match []byte, ok bool) {
	args := c.Args
	for j := start; j < len(args); j++ {
		opt := args[j]
		hasNext := j < len(args)-1
		const expiries = objEX | objPX | objEXAT | objPXAT
		switch {
		case eqFold(opt, "nx") && flags&(objXX|objIfConds) == 0 && typ == parseForSet:
			flags |= objNX
		case eqFold(opt, "xx") && flags&(objNX|objIfConds) == 0 && typ == parseForSet:
			flags |= objXX
		case typ == parseForSet && hasNext && setCondFlag(opt) != 0 && flags&(objNX|objXX|objIfConds&^setCondFlag(opt)) == 0:
			flags |= setCondFlag(opt) // cmd_cas.go
			match = args[j+1]
			j++
			if !validCondValue(c, opt, match) { // cmd_cas.go: a digest has 16 hex characters
				return 0, nil, nil, false
			}
		case eqFold(opt, "get") && typ == parseForSet:
			flags |= objGET
		case eqFold(opt, "keepttl") && flags&(objPersist|expiries) == 0 && typ == parseForSet:
			flags |= objKeepTTL
		case eqFold(opt, "persist") && typ == parseForGet && flags&(expiries|objKeepTTL) == 0:
			flags |= objPersist
		case eqFold(opt, "ex") && flags&(objKeepTTL|objPersist|objEXAT|objPX|objPXAT) == 0 && hasNext:
			flags |= objEX
			expire = args[j+1]
			j++
		case eqFold(opt, "px") && flags&(objKeepTTL|objPersist|objEX|objEXAT|objPXAT) == 0 && hasNext:
			flags |= objPX
			expire = args[j+1]
			j++
		case eqFold(opt, "exat") && flags&(objKeepTTL|objPersist|objEX|objPX|objPXAT) == 0 && hasNext:
			flags |= objEXAT
			expire = args[j+1]
			j++
		case eqFold(opt, "pxat") && flags&(objKeepTTL|objPersist|objEX|objEXAT|objPX) == 0 && hasNext:
			flags |= objPXAT
			expire = args[j+1]
			j++
		default:
			c.W.WriteError(ErrSyntax)
			return 0, nil, nil, false
		}
	}
	return flags, expire, match, true
}

// expireDeadline is Redis's getExpireMillisecondsOrReply, returning a
// monotonic deadline. The value must be a positive integer; relative
// values are added to now, absolute ones converted from wall time.
func expireDeadline(c *Ctx, expire []byte, flags int, name string) (int64, bool) {
	ms, ok := parseInt(expire)
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return 0, false
	}
	seconds := flags&(objEX|objEXAT) != 0
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		c.W.WriteError(ErrInvalidExpire(name))
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if flags&(objEX|objPX) != 0 {
		if ms > math.MaxInt64-c.Now {
			c.W.WriteError(ErrInvalidExpire(name))
			return 0, false
		}
		return c.Now + ms, true
	}
	return c.wallToMono(ms), true
}

// wallToMono converts an absolute Unix time in ms to a monotonic deadline.
// It reads the clock afresh rather than pairing c.Now with the wall: c.Now
// can be older than the command (a batch's commands start where the one
// before ended, StartBatch), and a deadline converted from it would come
// that much early, a PXAT lock gone before its time.
func (c *Ctx) wallToMono(unixMs int64) int64 {
	mono, wall := expiry.Read(c.Eng.clock)
	d := expiry.WallToMono(unixMs, mono, wall)
	if d == 0 {
		d = -1 // 0 means "no deadline"; any past instant will do
	}
	return d
}

// monoToWall converts a monotonic deadline to Unix ms.
// Like wallToMono, it reads the clock afresh.
func (c *Ctx) monoToWall(deadline int64) int64 {
	mono, wall := expiry.Read(c.Eng.clock)
	return expiry.MonoToWall(deadline, mono, wall)
}

// getString looks key up for reading. It replies WRONGTYPE and returns
// ok=false when the key holds another kind.
func getString(c *Ctx, key []byte) (ent *entry, ok bool) {
	ent = c.Eng.lookupRead(key, c.Now)
	if ent != nil && ent.kind() != KindString {
		c.W.WriteError(ErrWrongType)
		return nil, false
	}
	return ent, true
}

// replyGet is Redis's getGenericCommand: the value, a null, or WRONGTYPE.
func replyGet(c *Ctx, key []byte) bool {
	ent, ok := getString(c, key)
	if !ok {
		return false
	}
	if ent == nil {
		c.W.WriteNull()
	} else {
		c.W.WriteBulkString(c.replyValue(ent))
	}
	return true
}

// setGeneric is Redis's setGenericCommand, behind SET, SETNX, SETEX, PSETEX.
// okReply/abortReply select SETNX's integer replies.
func setGeneric(c *Ctx, flags int, key, val, expire, match []byte, name string, intReplies bool) {
	e := c.Eng
	var deadline int64
	if expire != nil {
		d, ok := expireDeadline(c, expire, flags, name)
		if !ok {
			return
		}
		deadline = d
	}
	if flags&objGET != 0 {
		if !replyGet(c, key) {
			return
		}
	}
	ent := e.lookup(key, c.Now)
	found := ent != nil
	cond := setCondition(c, flags, key, match, found) // cmd_cas.go: IFEQ IFNE IFDEQ IFDNE
	if cond == condReplied {
		return
	}
	if (flags&objNX != 0 && found) || (flags&objXX != 0 && !found) || cond == condFailed {
		if flags&objGET == 0 {
			if intReplies {
				c.W.WriteInt(0)
			} else {
				c.W.WriteNull()
			}
		}
		return
	}
	e.setStringAt(key, ent, val, deadline, flags&objKeepTTL != 0) // setCondition changed nothing
	e.dirty++
	e.notifyBytes(NotifyString, "set", key)
	if expire != nil {
		e.notifyBytes(NotifyGeneric, "expire", key)
	}
	// An absolute time already in the past leaves the key in place, as
	// Redis 7.0 does: it is missing to every lookup and counted by DBSIZE
	// until a lookup or the expiry cycle reclaims it (and publishes
	// "expired" then).
	if flags&objGET == 0 {
		if intReplies {
			c.W.WriteInt(1)
		} else {
			c.W.WriteStatus(statusOK)
		}
	}
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func cmdSet(c *Ctx) {
	flags, expire, match, ok := parseExtendedString(c, 3, parseForSet)
	if !ok {
		return
	}
	setGeneric(c, flags, c.Args[1], c.Args[2], expire, match, "set", false)
}

// SETNX key value
func cmdSetNX(c *Ctx) { setGeneric(c, objNX, c.Args[1], c.Args[2], nil, nil, "setnx", true) }

// SETEX key seconds value
func cmdSetEX(c *Ctx) { setGeneric(c, objEX, c.Args[1], c.Args[3], c.Args[2], nil, "setex", false) }

// PSETEX key milliseconds value
func cmdPSetEX(c *Ctx) { setGeneric(c, objPX, c.Args[1], c.Args[3], c.Args[2], nil, "psetex", false) }

// GET key
func cmdGet(c *Ctx) { replyGet(c, c.Args[1]) }

// GETSET key value
func cmdGetSet(c *Ctx) {
	if !replyGet(c, c.Args[1]) {
		return
	}
	c.Eng.setString(c.Args[1], c.Args[2], 0, false, c.Now)
	c.Eng.dirty++
	c.Eng.notifyBytes(NotifyString, "set", c.Args[1])
}

// GETDEL key
func cmdGetDel(c *Ctx) {
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteNull()
		return
	}
	c.W.WriteBulkString(c.replyValue(ent))
	c.Eng.del(c.Args[1], c.Now)
	c.Eng.dirty++
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
func cmdGetEx(c *Ctx) {
	flags, expire, _, ok := parseExtendedString(c, 2, parseForGet)
	if !ok {
		return
	}
	key := c.Args[1]
	ent, ok := getString(c, key)
	if !ok {
		return
	}
	if ent == nil {
		// Redis looks the key up before validating the expiry value:
		// a missing key replies nil even to GETEX k EX 0.
		c.W.WriteNull()
		return
	}
	var deadline int64
	if expire != nil {
		if deadline, ok = expireDeadline(c, expire, flags, "getex"); !ok {
			return
		}
	}
	c.W.WriteBulkString(c.replyValue(ent))
	switch {
	case expire != nil && deadline <= c.Now:
		c.Eng.del(key, c.Now)
		c.Eng.dirty++
	case expire != nil:
		c.Eng.setDeadline(key, ent, deadline)
		c.Eng.modified(string(key))
		c.Eng.notifyBytes(NotifyGeneric, "expire", key)
		c.Eng.dirty++
	case flags&objPersist != 0 && ent.deadline != 0:
		c.Eng.setDeadline(key, ent, 0)
		c.Eng.modified(string(key))
		c.Eng.notifyBytes(NotifyGeneric, "persist", key)
		c.Eng.dirty++
	}
}

// MGET key [key ...]
func cmdMGet(c *Ctx) {
	c.W.WriteArray(len(c.Args) - 1)
	for _, key := range c.Args[1:] {
		ent := c.Eng.lookupRead(key, c.Now)
		if ent == nil || ent.kind() != KindString {
			c.W.WriteNull()
		} else {
			c.W.WriteBulkString(c.replyValue(ent))
		}
	}
}

// MSET key value [key value ...]
func cmdMSet(c *Ctx) {
	if len(c.Args)%2 == 0 {
		c.W.WriteError(ErrWrongArgs("mset"))
		return
	}
	if !msetFits(c) {
		return
	}
	for i := 1; i < len(c.Args); i += 2 {
		c.Eng.setString(c.Args[i], c.Args[i+1], 0, false, c.Now)
		c.Eng.notifyBytes(NotifyString, "set", c.Args[i])
	}
	c.Eng.dirty += int64(len(c.Args) / 2)
	c.W.WriteStatus(statusOK)
}

// msetFits checks, before MSET or MSETNX sets anything, that each of its
// values fits in an entry (maxValueLen), and replies the error if one
// does not: setting it would fail after the pairs before it were set,
// leaving the command half done. (A value that long needs
// proto-max-bulk-len raised past 4 GiB, or a script. Keys are checked
// before any command runs: tooLongKey.)
func msetFits(c *Ctx) bool {
	for i := 2; i < len(c.Args); i += 2 {
		if len(c.Args[i]) > maxValueLen {
			c.W.WriteError(ErrStringTooLong)
			return false
		}
	}
	return true
}

// MSETNX key value [key value ...]
func cmdMSetNX(c *Ctx) {
	if len(c.Args)%2 == 0 {
		c.W.WriteError(ErrWrongArgs("msetnx"))
		return
	}
	for i := 1; i < len(c.Args); i += 2 {
		if c.Eng.lookup(c.Args[i], c.Now) != nil {
			c.W.WriteInt(0)
			return
		}
	}
	if !msetFits(c) {
		return
	}
	for i := 1; i < len(c.Args); i += 2 {
		c.Eng.setString(c.Args[i], c.Args[i+1], 0, false, c.Now)
		c.Eng.notifyBytes(NotifyString, "set", c.Args[i])
	}
	c.Eng.dirty += int64(len(c.Args) / 2)
	c.W.WriteInt(1)
}

// GETRANGE key start end
func cmdGetRange(c *Ctx) {
	start, ok1 := parseInt(c.Args[2])
	end, ok2 := parseInt(c.Args[3])
	if !ok1 || !ok2 {
		c.W.WriteError(ErrNotInteger)
		return
	}
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteBulkString("")
		return
	}
	s := c.replyValue(ent) // (a substring of it is the reply)
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		c.W.WriteBulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.W.WriteBulkString("")
		return
	}
	c.W.WriteBulkString(s[start : end+1])
}

// STRLEN key
func cmdStrlen(c *Ctx) {
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	c.W.WriteInt(int64(len(ent.str())))
}

// APPEND key value
func cmdAppend(c *Ctx) {
	key := c.Args[1]
	ent := c.Eng.lookup(key, c.Now)
	if ent == nil {
		c.Eng.setString(key, c.Args[2], 0, false, c.Now)
		c.Eng.notifyBytes(NotifyString, "append", key)
		c.Eng.dirty++
		c.W.WriteInt(int64(len(c.Args[2])))
		return
	}
	if ent.kind() != KindString {
		c.W.WriteError(ErrWrongType)
		return
	}
	add := c.Args[2]
	if !c.Eng.stringFits(int(ent.vlen), len(add)) {
		c.W.WriteError(ErrStringTooLong)
		return
	}
	// Redis's dbUnshareStringValue: even an empty APPEND leaves a "raw"
	// string (an empty "embstr" appended nothing becomes one).
	n := uint64(ent.vlen) + uint64(len(add))
	if room, grown := ent.grown(); grown && n <= uint64(room) {
		// in place, past the bytes any reader holds (grownString)
		copy(unsafe.Slice((*byte)(unsafe.Add(ent.data(), uintptr(ent.keyLen())+uintptr(ent.vlen))), len(add)), add)
		ent.vlen = uint32(n)
	} else {
		// cmd_object.go: APPEND leaves a "raw" string, with room to grow
		nu := newGrownEntry(key, ent.str(), add)
		c.Eng.replaceEntry(ent, nu, ent.deadline)
		ent = nu
	}
	c.Eng.modified(ent.key())
	c.Eng.notify(NotifyString, "append", ent.key())
	c.Eng.dirty++
	c.W.WriteInt(int64(ent.vlen))
}

// appendMaxPrealloc is Redis's SDS_MAX_PREALLOC: a string growing past it
// gets that much room more, not twice its length.
const appendMaxPrealloc = 1 << 20

// newGrownEntry returns an entry for key holding the raw string val+add
// with room to grow, as sdsMakeRoomFor's greedy policy (greedyRoom).
func newGrownEntry(key []byte, val string, add []byte) *entry {
	n := len(val) + len(add)
	ent, b := newEditableEntry(key, val, n, greedyRoom(n))
	copy(b[len(val):], add)
	return ent
}

// greedyRoom is sdsMakeRoomFor's greedy policy for a string growing to n
// bytes: twice n below 1 MB, 1 MB more beyond (never past maxEntryValue).
func greedyRoom(n int) int {
	room := 2 * n
	if n >= appendMaxPrealloc {
		room = n + appendMaxPrealloc
	}
	return min(room, maxEntryValue)
}

// newEditableEntry returns an entry for key holding a raw string of n
// bytes, prefix then zeros, edited in place from now on (grownString)
// with room for room >= n bytes; its value bytes, returned, may be written
// until it is stored (and in place after, as grownString says).
func newEditableEntry(key []byte, prefix string, n, room int) (*entry, []byte) {
	ent, b := newRawEntry(key, prefix, room)
	ent.vlen = uint32(n)
	*(**object)(unsafe.Add(unsafe.Pointer(ent), entryHeader)) = &object{kind: KindString, v: &grownString{owner: ent, capacity: uint32(room)}}
	return ent, b[:n]
}

// incrDecr is Redis's incrDecrCommand: the value must hold an integer;
// overflow is an error; the TTL is kept.
func incrDecr(c *Ctx, by int64) {
	key := c.Args[1]
	ent := c.Eng.lookup(key, c.Now)
	var cur int64
	if ent != nil {
		if ent.kind() != KindString {
			c.W.WriteError(ErrWrongType)
			return
		}
		v, ok := parseInt([]byte(ent.str()))
		if !ok {
			c.W.WriteError(ErrNotInteger)
			return
		}
		cur = v
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		c.W.WriteError(ErrOverflow)
		return
	}
	cur += by
	var buf [20]byte
	c.Eng.setString(key, strconv.AppendInt(buf[:0], cur, 10), 0, true, c.Now)
	c.Eng.notifyBytes(NotifyString, "incrby", key)
	c.Eng.dirty++
	c.W.WriteInt(cur)
}

// INCR key
func cmdIncr(c *Ctx) { incrDecr(c, 1) }

// DECR key
func cmdDecr(c *Ctx) { incrDecr(c, -1) }

// INCRBY key increment
func cmdIncrBy(c *Ctx) {
	by, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	incrDecr(c, by)
}

// INCRBYFLOAT key increment
//
// Redis's incrbyfloatCommand: the value and the increment are read and
// added as C long doubles (x87's 64-bit mantissa, longdouble.go) and the
// sum is written as "%.17Lf" without trailing zeros; an infinite or NaN
// sum is an error. The TTL is kept; the value is stored as a plain string
// (never int-encoded).
func cmdIncrByFloat(c *Ctx) {
	key := c.Args[1]
	ent := c.Eng.lookup(key, c.Now)
	cur := new(big.Float)
	if ent != nil {
		if ent.kind() != KindString {
			c.W.WriteError(ErrWrongType)
			return
		}
		v, ok := parseLongDouble([]byte(ent.str()))
		if !ok {
			c.W.WriteError(ErrNotFloat)
			return
		}
		cur = v
	}
	incr, ok := parseLongDouble(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotFloat)
		return
	}
	if cur.IsInf() || incr.IsInf() { // inf, or NaN for inf + -inf
		c.W.WriteError(ErrIncrNaNOrInf)
		return
	}
	sum := addLongDouble(cur, incr)
	if ldOverflows(sum) {
		c.W.WriteError(ErrIncrNaNOrInf)
		return
	}
	val := []byte(formatLongDoubleHuman(sum))
	nu := newObjEntry(key, val, &object{kind: KindString, v: plainString{}})
	if ent == nil {
		c.Eng.putNew(nu)
	} else {
		c.Eng.replaceEntry(ent, nu, ent.deadline)
	}
	c.Eng.modified(nu.key())
	c.Eng.notify(NotifyString, "incrbyfloat", nu.key())
	c.Eng.dirty++
	c.W.WriteBulk(val)
}

// DECRBY key decrement
func cmdDecrBy(c *Ctx) {
	by, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if by == math.MinInt64 {
		c.W.WriteError(ErrDecrOverflow)
		return
	}
	incrDecr(c, -by)
}
