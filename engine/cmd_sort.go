package engine

import (
	"bytes"
	"math"
	"math/big"
	"slices"
	"strings"
)

// This file is SORT and SORT_RO, as Redis 7.0's sort.c: the options, the
// BY and GET patterns (with "->field" hash dereference and "#"), numeric
// and ALPHA ordering, LIMIT, and STORE into a list.

func registerSort(e *Engine) {
	e.Register(
		&Command{Name: "sort", Arity: -2, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1,
			Keys: sortKeys, Group: "generic", Summary: "Sort the elements in a list, set or sorted set",
			Fn: func(c *Ctx) { sortGeneric(c, false) }},
		&Command{Name: "sort_ro", Arity: -2, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1,
			Keys: func([][]byte) []int { return []int{1} }, Group: "generic",
			Summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
			Fn:      func(c *Ctx) { sortGeneric(c, true) }},
	)
}

// ErrSortScores is SORT's reply when a weight is not a number.
const ErrSortScores = "ERR One or more scores can't be converted into double"

// sortKeys is Redis's sortGetKeys: the sorted key, and the last STORE's
// destination. As Redis's, it skips LIMIT's two arguments and GET's and
// BY's one, but not STORE's.
func sortKeys(args [][]byte) []int {
	if p := sortStorePos(args); p != 0 {
		return []int{1, p}
	}
	return []int{1}
}

// sortStorePos is the position of the last STORE's destination, 0 for
// none, found as sortGetKeys finds it.
func sortStorePos(args [][]byte) int {
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case EqFold(args[i], "limit"):
			i += 2
		case EqFold(args[i], "get"), EqFold(args[i], "by"):
			i++
		case EqFold(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	return store
}

// sortElem is one element to sort (Redis's redisSortObject).
type sortElem struct {
	obj   string
	score float64
	cmp   string // ALPHA BY: the weight
	hasBy bool   // ALPHA BY: the weight was found
}

// sortGeneric is Redis's sortCommandGeneric; readonly is SORT_RO (no
// STORE).
func sortGeneric(c *Ctx, readonly bool) {
	var (
		desc, alpha, dontsort bool
		limStart, limCount    int64 = 0, -1
		sortBy, store         []byte
		gets                  [][]byte
	)
	args := c.Args
	fullAccess := -1 // unknown until a pattern needs it (ACL)
	mayRead := func() bool {
		if fullAccess < 0 {
			fullAccess = 0
			if c.unrestrictedKeyAccess() {
				fullAccess = 1
			}
		}
		return fullAccess == 1
	}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case EqFold(a, "asc"):
			desc = false
		case EqFold(a, "desc"):
			desc = true
		case EqFold(a, "alpha"):
			alpha = true
		case EqFold(a, "limit") && left >= 2:
			var ok bool
			if limStart, ok = parseLong(c, args[j+1]); !ok {
				return
			}
			if limCount, ok = parseLong(c, args[j+2]); !ok {
				return
			}
			j += 2
		case !readonly && EqFold(a, "store") && left >= 1:
			store = args[j+1]
			j++
		case EqFold(a, "by") && left >= 1:
			sortBy = args[j+1]
			// A constant BY (no '*') means no sorting at all; as in
			// Redis, a later BY with a pattern does not undo it. Redis
			// looks with strchr: a '*' after a NUL byte is none.
			if bytes.IndexByte(cstr(sortBy), '*') < 0 {
				dontsort = true
			} else if !mayRead() {
				c.W.WriteError("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case EqFold(a, "get") && left >= 1:
			if !mayRead() {
				c.W.WriteError("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, args[j+1])
			j++
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}

	e := c.Eng
	ent := e.lookupRead(args[1], c.Now)
	kind := KindList // a missing key sorts as an empty list
	if ent != nil {
		kind = ent.kind()
		if kind != KindList && kind != KindSet && kind != KindZSet {
			c.W.WriteError(ErrWrongType)
			return
		}
	}
	// A set has no order of its own: unsorted output that is stored, or
	// goes to a script, is sorted ALPHA so that it is the same everywhere.
	if dontsort && kind == KindSet && (store != nil || c.Script != nil) {
		dontsort, alpha, sortBy = false, true, nil
	}

	n := 0
	if ent != nil {
		switch v := ent.objValue().(type) {
		case *list:
			n = v.Len()
		case *set:
			n = v.Len()
		case *zset:
			n = v.Len()
			v.big = true // Redis converts a sorted set it sorts to a skip list, for good
		}
	}
	start := min(max(limStart, 0), int64(n))
	limCount = min(max(limCount, -1), int64(n))
	end := start + limCount - 1
	if limCount < 0 {
		end = int64(n) - 1
	}
	if start >= int64(n) {
		start, end = int64(n)-1, int64(n)-2
	}
	end = min(end, int64(n)-1)

	// Load the elements. A list or sorted set left in its own order loads
	// just the range LIMIT selects, in the order DESC asks for.
	var vec []sortElem
	ranged := dontsort && (kind == KindList || kind == KindZSet)
	var val any
	if ent != nil {
		val = ent.objValue()
	}
	switch v := val.(type) {
	case *list:
		if ranged {
			if end >= start {
				for i := start; i <= end; i++ {
					at := i
					if desc {
						at = int64(n) - 1 - i
					}
					vec = append(vec, sortElem{obj: v.At(int(at))})
				}
				end -= start
				start = 0
			}
		} else {
			vec = make([]sortElem, n)
			for i := range vec {
				vec[i].obj = v.At(i)
			}
		}
	case *set:
		for _, m := range v.Members() {
			vec = append(vec, sortElem{obj: m})
		}
	case *zset:
		if ranged {
			for i := start; i <= end; i++ {
				at := i
				if desc {
					at = int64(n) - 1 - i
				}
				vec = append(vec, sortElem{obj: v.At(int(at)).member})
			}
			end -= start
			start = 0
		} else {
			vec = make([]sortElem, n)
			for i := range vec {
				vec[i].obj = v.At(i).member
			}
		}
	}

	badScore := false
	if !dontsort {
		for i := range vec {
			el := &vec[i]
			by := el.obj
			if sortBy != nil {
				var ok bool
				if by, ok = e.sortLookup(sortBy, el.obj, c.Now); !ok {
					continue
				}
			}
			if alpha {
				if sortBy != nil {
					el.cmp, el.hasBy = by, true
				}
				continue
			}
			f, ok := sortScore(by)
			el.score = f
			if !ok {
				badScore = true
			}
		}
		cmp := sortCompare(alpha, sortBy != nil, store != nil)
		if desc {
			slices.SortStableFunc(vec, func(a, b sortElem) int { return -cmp(a, b) })
		} else {
			slices.SortStableFunc(vec, cmp)
		}
	}

	perElem := int64(max(len(gets), 1))
	outLen := perElem * (end - start + 1)
	if badScore {
		c.W.WriteError(ErrSortScores)
		return
	}
	if store == nil {
		c.W.WriteArray(int(outLen))
		for i := start; i <= end; i++ {
			if len(gets) == 0 {
				c.W.WriteBulkString(vec[i].obj)
			}
			for _, g := range gets {
				if v, ok := e.sortLookup(g, vec[i].obj, c.Now); ok {
					c.W.WriteBulkString(v)
				} else {
					c.W.WriteNull()
				}
			}
		}
		return
	}
	old := e.lookup(store, c.Now)
	if outLen == 0 {
		if old != nil {
			e.removeKey(old.key(), old)
			e.modified(old.key())
			e.notifyBytes(NotifyGeneric, "del", store)
			e.dirty++
		}
		c.W.WriteInt(0)
		return
	}
	l := &list{}
	for i := start; i <= end; i++ {
		if len(gets) == 0 {
			l.PushBack(vec[i].obj)
		}
		for _, g := range gets {
			v, _ := e.sortLookup(g, vec[i].obj, c.Now) // "" when missing
			l.PushBack(v)
		}
	}
	if old != nil {
		e.replaceEntry(old, newObjEntry(store, nil, &object{kind: KindList, v: l}), 0)
	} else {
		nu := newObjEntry(store, nil, &object{kind: KindList, v: l})
		e.putNew(nu)
		e.signalReady(nu.key()) // clients blocked on the new list are served
	}
	e.modified(string(store))
	e.notifyBytes(NotifyList, "sortstore", store)
	e.dirty += outLen // an element stored
	c.W.WriteInt(outLen)
}

// sortScore reads a weight as Redis's SORT does, with C's strtod on the
// string up to its first NUL byte: leading white space is skipped, an
// empty string is 0, and anything left over, NaN, or a value out of
// range (overflow, or underflow to a subnormal or zero) is an error.
func sortScore(s string) (float64, bool) {
	s = cstr(s)
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	f, n := Strtod(s[i:])
	if n == 0 {
		return 0, s == "" // nothing read: strtod's end is the start
	}
	if i+n != len(s) || math.IsNaN(f) {
		return f, false
	}
	if math.IsInf(f, 0) && !isInfWord(s[i:]) {
		return f, false // overflow: ERANGE
	}
	if f == 0 && hasNonZeroDigit(s[i:]) || f != 0 && math.Abs(f) < 0x1p-1022 && !exactFloat(s[i:i+n], f) {
		return f, false // underflow (to zero, or an inexact subnormal): ERANGE
	}
	return f, true
}

// exactFloat reports whether the number strtod read as f has exactly
// f's value (glibc's strtod reports ERANGE for a subnormal result only
// when it was rounded).
func exactFloat(num string, f float64) bool {
	x, _, err := big.ParseFloat(num, 0, 4096, big.ToNearestEven)
	return err == nil && x.Cmp(big.NewFloat(f)) == 0
}

// sortCompare returns SORT's comparison (Redis's sortCompare) for the
// options given: numbers, ties broken by the elements' bytes; ALPHA by
// the elements, or by the BY weights with missing ones first. ALPHA
// without STORE compares as strcoll does in the C locale (up to the
// first NUL byte), with STORE as bytes.
func sortCompare(alpha, byPattern, store bool) func(a, b sortElem) int {
	text := func(a, b string) int {
		if !store {
			a, b = cstr(a), cstr(b)
		}
		return strings.Compare(a, b)
	}
	switch {
	case !alpha:
		return func(a, b sortElem) int {
			switch {
			case a.score > b.score:
				return 1
			case a.score < b.score:
				return -1
			}
			return strings.Compare(a.obj, b.obj)
		}
	case byPattern:
		return func(a, b sortElem) int {
			switch {
			case !a.hasBy && !b.hasBy:
				return 0
			case !a.hasBy:
				return -1
			case !b.hasBy:
				return 1
			}
			return text(a.cmp, b.cmp)
		}
	default:
		return func(a, b sortElem) int { return text(a.obj, b.obj) }
	}
}

// sortLookup is Redis's lookupKeyByPattern: "#" is subst itself;
// otherwise the first '*' of pattern is replaced by subst to name a key,
// whose string value is returned, or, when "->field" follows the '*',
// that field of the hash under the key. ok is false when there is no '*',
// no such key, or a key (or field) of another kind. As in Redis, the
// pattern is searched only up to its first NUL byte.
func (e *Engine) sortLookup(pattern []byte, subst string, now int64) (string, bool) {
	if len(pattern) > 0 && pattern[0] == '#' && (len(pattern) == 1 || pattern[1] == 0) {
		return subst, true
	}
	cpat := cstr(pattern)
	star := bytes.IndexByte(cpat, '*')
	if star < 0 {
		return "", false
	}
	keyEnd := len(pattern)
	var field []byte
	if f := bytes.Index(cpat[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(cpat) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, star+len(subst)+keyEnd-star-1)
	key = append(append(append(key, pattern[:star]...), subst...), pattern[star+1:keyEnd]...)
	ent := e.lookupRead(key, now)
	if ent == nil {
		return "", false
	}
	if field != nil {
		h, ok := ent.objValue().(*hash)
		if !ok || ent.kind() != KindHash {
			return "", false
		}
		return h.Get(string(field))
	}
	if ent.kind() != KindString {
		return "", false
	}
	return ent.shared(), true // (STORE keeps it)
}
