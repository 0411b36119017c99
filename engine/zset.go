package engine

import (
	"math"
	"strings"

	"github.com/tidwall/btree"
)

// zset is the value of a sorted set key: members with scores, ordered by
// score and then by member bytes, as Redis orders them. A map finds a
// member's score; a B-tree (whose nodes count their items) keeps the
// order and finds the item at a rank. Like Redis it reports the compact
// encoding ("listpack") until it holds more than zset-max-listpack-entries
// members (128) or a member longer than zset-max-listpack-value bytes
// (64), and "skiplist" from then on.
//
// An empty sorted set never stays in the keyspace: commands delete the
// key when they remove its last member.
type zset struct {
	m    map[string]float64
	tree *btree.BTreeG[zitem]
	big  bool // reported as "skiplist"
	// ZSCAN's paging of a skiplist set (scansnap.go): members added to m
	// so far, and the snapshot an iteration reads.
	adds uint64
	snap *scanSnap
}

type zitem struct {
	score  float64
	member string
}

func zitemLess(a, b zitem) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.member < b.member
}

// newZset returns an empty sorted set; big selects the "skiplist"
// encoding from the start (Redis chooses it for ZADD when the first
// member is too long or zset-max-listpack-entries is 0).
func newZset(big bool) *zset {
	return &zset{
		m:    make(map[string]float64),
		tree: btree.NewBTreeGOptions(zitemLess, btree.Options{NoLocks: true}),
		big:  big,
	}
}

// Len returns the number of members.
func (z *zset) Len() int { return len(z.m) }

// Encoding is what OBJECT ENCODING reports.
func (z *zset) Encoding() string {
	if z.big {
		return "skiplist"
	}
	return "listpack"
}

// Score returns member's score.
func (z *zset) Score(member string) (float64, bool) {
	s, ok := z.m[member]
	return s, ok
}

// Set gives member score, adding it if it is new. A new member that
// takes the set past zset-max-listpack-entries members, or is longer than
// zset-max-listpack-value bytes, converts it to "skiplist" first, as
// zsetAdd does. The compact encoding stores a
// score as text (d2string prints an integral score as an integer), so
// there -0 becomes 0; the skip list keeps it.
func (z *zset) Set(member string, score float64, lim *EncodingLimits) {
	old, exists := z.m[member]
	if !exists && !z.big && (int64(len(z.m)+1) > lim.ZsetMaxListpackEntries || int64(len(member)) > lim.ZsetMaxListpackValue) {
		z.big = true
	}
	if score == 0 && !z.big {
		score = 0 // +0
	}
	if exists {
		if old == score { // -0 and 0 too: ZADD changes neither
			return
		}
		z.tree.Delete(zitem{old, member})
	} else {
		z.adds++ // (ZSCAN: scansnap.go)
	}
	z.m[member] = score
	z.tree.Set(zitem{score, member})
}

// Del removes member, reporting whether it was there.
func (z *zset) Del(member string) bool {
	s, ok := z.m[member]
	if !ok {
		return false
	}
	delete(z.m, member)
	z.tree.Delete(zitem{s, member})
	return true
}

// At returns the member at rank i (0 <= i < Len), lowest score first.
func (z *zset) At(i int) zitem {
	it, _ := z.tree.GetAt(i)
	return it
}

// Rank returns member's rank, lowest score first.
func (z *zset) Rank(member string) (int, bool) {
	s, ok := z.m[member]
	if !ok {
		return 0, false
	}
	return z.countBelow(zitem{s, member}), true
}

// countBelow is the number of items ordered before it.
func (z *zset) countBelow(it zitem) int {
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); zitemLess(at, it) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// clone is a deep copy (COPY).
func (z *zset) clone() *zset {
	c := &zset{m: make(map[string]float64, len(z.m)), tree: z.tree.Copy(), big: z.big}
	for k, v := range z.m {
		c.m[k] = v
	}
	return c
}

// scoreRange is Redis's zrangespec: min and max, each inclusive or not.
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

func (r scoreRange) gteMin(s float64) bool {
	if r.minex {
		return s > r.min
	}
	return s >= r.min
}

func (r scoreRange) lteMax(s float64) bool {
	if r.maxex {
		return s < r.max
	}
	return s <= r.max
}

// empty reports whether no score can lie in the range (zslIsInRange's
// first test).
func (r scoreRange) empty() bool {
	return r.min > r.max || (r.min == r.max && (r.minex || r.maxex))
}

// firstInRange is the rank of the lowest item in r, or Len.
func (z *zset) firstInRange(r scoreRange) int {
	if r.empty() {
		return z.Len()
	}
	// the first item whose score passes the minimum
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); !r.gteMin(at.score) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < z.Len() && !r.lteMax(z.At(lo).score) {
		return z.Len()
	}
	return lo
}

// lastInRange is the rank of the highest item in r, or -1.
func (z *zset) lastInRange(r scoreRange) int {
	if r.empty() {
		return -1
	}
	// the first item whose score is past the maximum, less one
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); r.lteMax(at.score) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	i := lo - 1
	if i >= 0 && !r.gteMin(z.At(i).score) {
		return -1
	}
	return i
}

// parseScoreBound is one end of zslParseRange: "(" makes it exclusive;
// the rest is read by strtod, all of it (up to a NUL, where C's string
// ends), and must not be NaN. An empty bound reads as 0, as in Redis.
func parseScoreBound(b []byte) (v float64, ex, ok bool) {
	s := string(b)
	if len(s) > 0 && s[0] == '(' {
		s, ex = s[1:], true
	}
	if i := indexNUL(s); i >= 0 {
		s = s[:i]
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	f, n := Strtod(s[i:])
	if n == 0 {
		// strtod read nothing: eptr is left at the start (before any
		// white space), so only "" is accepted, as 0
		return 0, ex, len(s) == 0
	}
	if i+n != len(s) || math.IsNaN(f) {
		return 0, false, false
	}
	return f, ex, true
}

func indexNUL(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// parseScoreRange is zslParseRange.
func parseScoreRange(min, max []byte) (r scoreRange, ok bool) {
	if r.min, r.minex, ok = parseScoreBound(min); !ok {
		return r, false
	}
	r.max, r.maxex, ok = parseScoreBound(max)
	return r, ok
}

// parseScore is getDoubleFromObject: the whole argument a number strtod
// reads, no leading space, no NaN, no overflow or underflow to zero.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	s := string(b)
	f, n := Strtod(s)
	if n != len(s) || math.IsNaN(f) {
		return 0, false
	}
	if math.IsInf(f, 0) {
		// HUGE_VAL from an overflow is ERANGE; "inf" itself is fine
		if !isInfWord(s) {
			return 0, false
		}
	}
	if f == 0 && hasNonZeroDigit(s) {
		return 0, false // underflow to zero: ERANGE
	}
	return f, true
}

func isInfWord(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return eqFoldAll([]byte(s), "inf") || eqFoldAll([]byte(s), "infinity")
}

// hasNonZeroDigit reports whether the mantissa of a number holds a
// non-zero digit (before any exponent).
func hasNonZeroDigit(s string) bool {
	hex := false
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		switch {
		case c == 'x':
			hex = true
		case (c == 'e' && !hex) || c == 'p':
			return false
		case c >= '1' && c <= '9', hex && c >= 'a' && c <= 'f':
			return true
		}
	}
	return false
}

// lexBound is one end of a lex range: a member, or "-" (below every
// member) or "+" (above every member).
type lexBound struct {
	s    string
	kind int // -1 for "-", +1 for "+", 0 for s
}

// lexRange is Redis's zlexrangespec.
type lexRange struct {
	min, max     lexBound
	minex, maxex bool
}

// cmpLex is sdscmplex: "-" and "+" below and above everything, equal
// only to themselves.
func cmpLex(a, b lexBound) int {
	switch {
	case a.kind != 0 && a.kind == b.kind:
		return 0
	case a.kind < 0 || b.kind > 0:
		return -1
	case a.kind > 0 || b.kind < 0:
		return 1
	}
	return strings.Compare(a.s, b.s)
}

func (r lexRange) gteMin(m string) bool {
	c := cmpLex(lexBound{s: m}, r.min)
	if r.minex {
		return c > 0
	}
	return c >= 0
}

func (r lexRange) lteMax(m string) bool {
	c := cmpLex(lexBound{s: m}, r.max)
	if r.maxex {
		return c < 0
	}
	return c <= 0
}

// parseLexBound is zslParseLexRangeItem: "+" or "-" alone, or "(" or "["
// before a member (exclusive or inclusive).
func parseLexBound(b []byte) (lb lexBound, ex, ok bool) {
	if len(b) == 0 {
		return lb, false, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 { // C reads "+\0..." as "+"
			return lb, false, false
		}
		if b[0] == '+' {
			return lexBound{kind: 1}, true, true
		}
		return lexBound{kind: -1}, true, true
	case '(':
		return lexBound{s: string(b[1:])}, true, true
	case '[':
		return lexBound{s: string(b[1:])}, false, true
	}
	return lb, false, false
}

// parseLexRange is zslParseLexRange.
func parseLexRange(min, max []byte) (r lexRange, ok bool) {
	if r.min, r.minex, ok = parseLexBound(min); !ok {
		return r, false
	}
	r.max, r.maxex, ok = parseLexBound(max)
	return r, ok
}

// inLexRange is zzlIsInLexRange/zslIsInLexRange: false when the range is
// always empty, or wholly past the last member or before the first.
func (z *zset) inLexRange(r lexRange) bool {
	c := cmpLex(r.min, r.max)
	if c > 0 || (c == 0 && (r.minex || r.maxex)) || z.Len() == 0 {
		return false
	}
	return r.gteMin(z.At(z.Len()-1).member) && r.lteMax(z.At(0).member)
}

// firstInLex is the rank of the first member in r, or Len. Members are
// in lex order only among equal scores (where lex ranges are meant to be
// used); for mixed scores this follows Redis's compact encoding, a scan
// from the start, on sets of its size, and a binary search on larger
// ones (where Redis's skip list gives results that depend on its random
// levels).
func (z *zset) firstInLex(r lexRange) int {
	if !z.inLexRange(r) {
		return z.Len()
	}
	i := 0
	if z.big {
		lo, hi := 0, z.Len()
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if !r.gteMin(z.At(mid).member) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		i = lo
	} else {
		for i < z.Len() && !r.gteMin(z.At(i).member) {
			i++
		}
	}
	if i < z.Len() && r.lteMax(z.At(i).member) {
		return i
	}
	return z.Len()
}

// lastInLex is the rank of the last member in r, or -1 (as firstInLex,
// from the end).
func (z *zset) lastInLex(r lexRange) int {
	if !z.inLexRange(r) {
		return -1
	}
	i := z.Len() - 1
	if z.big {
		lo, hi := 0, z.Len()
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if r.lteMax(z.At(mid).member) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		i = lo - 1
	} else {
		for i >= 0 && !r.lteMax(z.At(i).member) {
			i--
		}
	}
	if i >= 0 && r.gteMin(z.At(i).member) {
		return i
	}
	return -1
}
