package engine

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/tumblerdb/tumbler/expiry"
)

// DUMP, RESTORE and RESTORE-ASKING: Redis 7.0's cluster.c commands. A
// payload is a value as Redis's rdbSaveObject writes it into an RDB file
// (its type byte, then the object), then the RDB version (10, two bytes
// LE) and the CRC-64 of everything before (eight bytes LE): so that keys
// move between tumbler and Redis with migration tools, the payloads are
// Redis's, byte for byte wherever Redis's own bytes do not depend on its
// hash tables' order or a list's history (see dumpList).

// RDB object types (src/rdb.h).
const (
	rdbTypeString          = 0
	rdbTypeList            = 1 // Redis 2.x: the elements as strings
	rdbTypeSet             = 2
	rdbTypeZset            = 3 // Redis 2.x: scores as text
	rdbTypeHash            = 4
	rdbTypeZset2           = 5 // scores as binary doubles
	rdbTypeModule          = 6
	rdbTypeModule2         = 7
	rdbTypeHashZipmap      = 9 // Redis 2.4
	rdbTypeListZiplist     = 10
	rdbTypeSetIntset       = 11
	rdbTypeZsetZiplist     = 12
	rdbTypeHashZiplist     = 13
	rdbTypeListQuicklist   = 14 // nodes are ziplists
	rdbTypeStreamListpacks = 15
	rdbTypeHashListpack    = 16
	rdbTypeZsetListpack    = 17
	rdbTypeListQuicklist2  = 18 // nodes are listpacks, or plain elements
	rdbTypeStream2         = 19
)

// Quicklist node containers (QUICKLIST_NODE_CONTAINER_*) and the
// quicklist's limits (src/quicklist.c).
const (
	qlPlain  = 1 // one element, as it is
	qlPacked = 2 // a listpack
	// qlPackedThreshold: an element this long or longer has a plain node
	// of its own (packed_threshold, 1 GB; DEBUG QUICKLIST-PACKED-THRESHOLD
	// sets an engine's: Engine.qlPacked).
	qlPackedThreshold = 1 << 30
	qlSizeSafetyLimit = 8192 // SIZE_SAFETY_LIMIT
	qlSizeOverhead    = 8    // SIZE_ESTIMATE_OVERHEAD
	qlFillMax         = 1<<15 - 1
)

// qlOptimizationLevel: a node's bytes for list-max-listpack-size -1 to -5.
var qlOptimizationLevel = [...]int{4096, 8192, 16384, 32768, 65536}

// Error replies of RESTORE (src/cluster.c, src/server.c).
const (
	ErrBusyKey          = "BUSYKEY Target key name already exists."
	ErrBadTTL           = "ERR Invalid TTL value, must be >= 0"
	ErrBadIdleTime      = "ERR Invalid IDLETIME value, must be >= 0"
	ErrBadFreq          = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	ErrDumpPayload      = "ERR DUMP payload version or checksum are wrong"
	ErrBadDataFormat    = "ERR Bad data format"
	ErrRestoreNoStreams = "ERR Bad data format: tumbler has no streams"
)

func registerDump(e *Engine) {
	e.Register(
		&Command{Name: "dump", Arity: 2, Flags: FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdDump},
		&Command{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdRestore},
		// RESTORE flagged for a cluster's importing slot (Redis's
		// CMD_ASKING): on a single node, RESTORE itself.
		&Command{Name: "restore-asking", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagAsking, FirstKey: 1, LastKey: 1, Step: 1, Group: "server", Fn: cmdRestore},
	)
}

// DUMP key
//
// A null for a missing key (a read lookup: keyspace hit or miss, keymiss
// event), else the key's value as a payload RESTORE reads.
func cmdDump(c *Ctx) {
	ent := c.Eng.lookupRead(c.Args[1], c.Now)
	if ent == nil {
		c.W.WriteNull()
		return
	}
	c.W.WriteBulk(dumpFooter(c.Eng.dumpValue(nil, ent)))
}

// dumpValue appends ent's value as rdbSaveObjectType and rdbSaveObject
// write it.
func (e *Engine) dumpValue(p []byte, ent *entry) []byte {
	switch ent.kind() {
	case KindString:
		p = append(p, rdbTypeString)
		return rdbAppendString(p, strBytes(ent.str()))
	case KindHash:
		return dumpHash(p, ent.obj().v.(*hash))
	case KindList:
		return dumpList(p, ent.obj().v.(*list), e.limits().ListMaxListpackSize, e.qlPackedThreshold())
	case KindSet:
		return dumpSet(p, ent.obj().v.(*set))
	case KindZSet:
		return dumpZset(p, ent.obj().v.(*zset))
	}
	panic("dump: unknown kind")
}

// dumpHash: a compact hash is its listpack (field, value, field, value...
// in the hash's order, which is Redis's: insertion order, an update in
// place); a hashtable its pairs, counted (in Go's map order: Redis writes
// its dict's).
func dumpHash(p []byte, h *hash) []byte {
	if h.m == nil {
		w := newLPWriter(lpEmptyBytes + 4*len(h.lp))
		for _, pr := range h.lp {
			w.appendString(pr.field)
			w.appendString(pr.value)
		}
		p = append(p, rdbTypeHashListpack)
		return rdbAppendString(p, w.bytes())
	}
	p = append(p, rdbTypeHash)
	p = rdbAppendLen(p, uint64(len(h.m)))
	for f, v := range h.m {
		p = rdbAppendString(p, strBytes(f))
		p = rdbAppendString(p, strBytes(v))
	}
	return p
}

// dumpSet: an intset as its blob (intset.go); a hashtable its members,
// counted, in the set's order (Redis: its dict's).
func dumpSet(p []byte, s *set) []byte {
	if s.intset {
		vals := make([]int64, len(s.list))
		for i, m := range s.list {
			vals[i], _ = parseInt([]byte(m))
		}
		p = append(p, rdbTypeSetIntset)
		return rdbAppendString(p, intsetBlob(vals, s.width))
	}
	p = append(p, rdbTypeSet)
	p = rdbAppendLen(p, uint64(len(s.list)))
	for _, m := range s.list {
		p = rdbAppendString(p, strBytes(m))
	}
	return p
}

// dumpZset: a compact sorted set as its listpack (member, score, ... in
// order; a whole score within ±2^62 as an integer, others as d2string
// writes them: zzlInsertAt); a skiplist its length, then its members from
// the highest down, each with its score as a binary double.
func dumpZset(p []byte, z *zset) []byte {
	if !z.big {
		w := newLPWriter(lpEmptyBytes + 4*z.Len())
		z.tree.Scan(func(it zitem) bool {
			w.appendString(it.member)
			if it.score == math.Trunc(it.score) && math.Abs(it.score) <= 1<<62 {
				w.appendInt(int64(it.score))
			} else {
				w.appendString(d2string(it.score))
			}
			return true
		})
		p = append(p, rdbTypeZsetListpack)
		return rdbAppendString(p, w.bytes())
	}
	p = append(p, rdbTypeZset2)
	p = rdbAppendLen(p, uint64(z.Len()))
	z.tree.Reverse(func(it zitem) bool {
		p = rdbAppendString(p, strBytes(it.member))
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(it.score))
		return true
	})
	return p
}

// dumpList writes a list as Redis 7.0's quicklist (RDB_TYPE_LIST_QUICKLIST_2):
// the number of nodes, then each node's container and its listpack (or,
// for an element of 1 GB or more, the element as it is). tumbler keeps no
// nodes, so they are cut where Redis would have cut them had the list
// been built by RPUSH alone under the list-max-listpack-size (and
// plain-node threshold) in force now (listNodes). A list Redis built otherwise (LPUSH, LINSERT, pops,
// LTRIM...) or under another setting may have other nodes, and so other
// bytes; RESTORE reads either. list-compress-depth changes nothing: a
// node Redis keeps compressed is written as rdbSaveRawString would
// write it uncompressed.
func dumpList(p []byte, l *list, fill int64, packed int) []byte {
	nodes := listNodes(l, fill, packed)
	p = append(p, rdbTypeListQuicklist2)
	p = rdbAppendLen(p, uint64(len(nodes)))
	for _, nd := range nodes {
		if nd.plain {
			p = rdbAppendLen(p, qlPlain)
			p = rdbAppendString(p, strBytes(l.At(nd.start)))
			continue
		}
		w := newLPWriter(nd.size)
		for i := nd.start; i < nd.end; i++ {
			w.appendString(l.At(i))
		}
		p = rdbAppendLen(p, qlPacked)
		p = rdbAppendString(p, w.bytes())
	}
	return p
}

// qlNode is a quicklist node: elements [start, end) of the list, size
// its listpack's bytes.
type qlNode struct {
	start, end, size int
	plain            bool
}

// listNodes cuts l into the nodes quicklistPushTail makes when each
// element is pushed in turn, with fill the list-max-listpack-size
// (_quicklistNodeAllowInsert) and packed the plain-node threshold.
func listNodes(l *list, fill int64, packed int) []qlNode {
	fill = min(max(fill, -5), qlFillMax) // quicklistSetFill
	var nodes []qlNode
	var cur *qlNode
	for i := 0; i < l.Len(); i++ {
		s := l.At(i)
		if len(s) >= packed {
			nodes = append(nodes, qlNode{start: i, end: i + 1, size: len(s), plain: true})
			cur = nil
			continue
		}
		if cur != nil && qlAllowInsert(cur, fill, len(s)) {
			cur.end++
			cur.size += lpEntrySize(s)
			continue
		}
		nodes = append(nodes, qlNode{start: i, end: i + 1, size: lpEmptyBytes + lpEntrySize(s)})
		cur = &nodes[len(nodes)-1]
	}
	return nodes
}

// qlAllowInsert is _quicklistNodeAllowInsert for an element of sz bytes.
func qlAllowInsert(nd *qlNode, fill int64, sz int) bool {
	newSize := nd.size + sz + qlSizeOverhead
	if fill < 0 {
		return newSize <= qlOptimizationLevel[-fill-1]
	}
	return newSize <= qlSizeSafetyLimit && int64(nd.end-nd.start) < fill
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
//
// restoreCommand: the options first (IDLETIME and FREQ exclude each
// other), then BUSYKEY, the TTL, the payload's footer, its value. A TTL
// of 0 is none; a deadline already past (ABSTTL in the past) creates
// nothing, and a key REPLACE removed is then reported deleted. IDLETIME
// sets the key's access time that many seconds back (objectSetLRUOrLFU);
// tumbler keeps no LFU counters (it has no LFU policy): FREQ is checked
// and has no effect, as in Redis without an LFU policy.
//
// Redis 7.0 by default (sanitize-dump-payload no) checks only the outer
// shape of a payload's compact blobs, and may crash later on a corrupt
// one; tumbler always checks them whole, as Redis does with
// sanitize-dump-payload yes, and replies "Bad data format".
func cmdRestore(c *Ctx) {
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	args := c.Args
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch a := args[j]; {
		case eqFold(a, "replace"):
			replace = true
		case eqFold(a, "absttl"):
			absTTL = true
		case eqFold(a, "idletime") && more >= 1 && freq == -1:
			v, ok := parseInt(args[j+1])
			if !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			if v < 0 {
				c.W.WriteError(ErrBadIdleTime)
				return
			}
			idle = v
			j++
		case eqFold(a, "freq") && more >= 1 && idle == -1:
			v, ok := parseInt(args[j+1])
			if !ok {
				c.W.WriteError(ErrNotInteger)
				return
			}
			if v < 0 || v > 255 {
				c.W.WriteError(ErrBadFreq)
				return
			}
			freq = v
			j++
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	e := c.Eng
	key := args[1]
	if !replace && e.lookup(key, c.Now) != nil {
		c.W.WriteError(ErrBusyKey)
		return
	}
	ttl, ok := parseInt(args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if ttl < 0 {
		c.W.WriteError(ErrBadTTL)
		return
	}
	payload := args[3]
	if !verifyDumpPayload(payload) {
		c.W.WriteError(ErrDumpPayload)
		return
	}
	val, msg := e.loadValue(payload)
	if msg != "" {
		c.W.WriteError(msg)
		return
	}
	// REPLACE: dbDelete, with no lookup first, so a key past its
	// deadline and not yet reclaimed counts as deleted too.
	deleted := false
	if replace {
		if old := e.keys.get(key); old != nil {
			e.removeKey(old.key(), old)
			deleted = true
		}
	}
	var deadline int64
	if ttl != 0 {
		_, wall := expiry.Read(e.clock)
		// Redis adds its wall clock to a relative TTL, wrapping on
		// overflow (a deadline in the past), and finds the key already
		// expired when its deadline is not after now (checkAlreadyExpired)
		at := ttl
		if !absTTL {
			at = int64(uint64(wall) + uint64(ttl))
		}
		if at <= wall {
			if deleted {
				e.modified(string(key))
				e.notifyBytes(NotifyGeneric, "del", key)
				e.dirty++
			}
			c.W.WriteStatus(statusOK)
			return
		}
		if absTTL {
			deadline = c.wallToMono(at)
		} else {
			deadline = c.Now + min(ttl, math.MaxInt64-max(c.Now, 0))
		}
	}
	var nu *entry
	if val.obj == nil {
		nu = newEntry(key, val.str)
	} else {
		nu = newObjEntry(key, nil, val.obj)
	}
	e.putNew(nu)
	if deadline != 0 {
		e.setDeadlineKey(nu.key(), nu, deadline)
	}
	if idle >= 0 {
		e.keys.setIdle(nu.key(), lruBack(lruNow(c.Now), idle))
	}
	if k := nu.kind(); k == KindList || k == KindZSet {
		e.signalReady(nu.key())
	}
	e.modified(nu.key())
	e.notifyBytes(NotifyGeneric, "restore", key)
	e.dirty++ // (one, whether or not REPLACE deleted a key first)
	c.W.WriteStatus(statusOK)
}

// restored is a value read from a payload: a string's bytes, or an object.
type restored struct {
	str []byte
	obj *object
}

// loadValue reads the value of a verified payload as rdbLoadObjectType
// and rdbLoadObject read it, with the encodings Redis 7.0 gives it under
// the current thresholds. A payload that fails any check gives the error
// to reply. What follows the value (before the footer) is ignored, as
// Redis ignores it.
func (e *Engine) loadValue(payload []byte) (restored, string) {
	r := &rdbReader{b: payload}
	typ, ok := r.byte()
	if !ok {
		return restored{}, ErrBadDataFormat
	}
	lim := e.limits()
	var obj *object
	switch typ {
	case rdbTypeString:
		s, ok := r.string()
		if !ok {
			return restored{}, ErrBadDataFormat
		}
		return restored{str: s}, ""
	case rdbTypeList:
		obj = r.loadListV1()
	case rdbTypeSet:
		obj = r.loadSet(lim)
	case rdbTypeZset, rdbTypeZset2:
		obj = r.loadZset(typ == rdbTypeZset2, lim)
	case rdbTypeHash:
		obj = r.loadHash(lim)
	case rdbTypeListQuicklist, rdbTypeListQuicklist2:
		obj = r.loadQuicklist(typ == rdbTypeListQuicklist2)
	case rdbTypeHashZipmap, rdbTypeListZiplist, rdbTypeSetIntset, rdbTypeZsetZiplist,
		rdbTypeZsetListpack, rdbTypeHashZiplist, rdbTypeHashListpack:
		blob, ok := r.string()
		if ok {
			obj = loadBlob(typ, blob, lim)
		}
	case rdbTypeStreamListpacks, rdbTypeStream2:
		return restored{}, ErrRestoreNoStreams
	}
	if obj == nil {
		return restored{}, ErrBadDataFormat
	}
	return restored{obj: obj}, ""
}

// count reads an element count: at least one (an empty value is an
// "empty key", refused), and not more than there are bytes left, as
// every element takes one at least. (Like rdbLoadLen without isencoded,
// it takes a string encoding's byte for a 6-bit length.)
func (r *rdbReader) count() (int, bool) {
	n, _, ok := r.length()
	if !ok || n == 0 || n > uint64(len(r.b)-r.pos) {
		return 0, false
	}
	return int(n), true
}

// str reads a string as a Go string.
func (r *rdbReader) str() (string, bool) {
	b, ok := r.string()
	return string(b), ok
}

// loadListV1 reads RDB_TYPE_LIST: the elements, as strings.
func (r *rdbReader) loadListV1() *object {
	n, ok := r.count()
	if !ok {
		return nil
	}
	l := &list{}
	for ; n > 0; n-- {
		s, ok := r.str()
		if !ok {
			return nil
		}
		l.PushBack(s)
	}
	return &object{kind: KindList, v: l}
}

// loadQuicklist reads a quicklist: its nodes, each a listpack (a ziplist
// in RDB_TYPE_LIST_QUICKLIST) or, with v2, a plain element. Empty nodes
// are skipped; a list left empty is refused.
func (r *rdbReader) loadQuicklist(v2 bool) *object {
	n, ok := r.count()
	if !ok {
		return nil
	}
	l := &list{}
	for ; n > 0; n-- {
		container := uint64(qlPacked)
		if v2 {
			container, _, ok = r.length()
			if !ok || (container != qlPacked && container != qlPlain) {
				return nil
			}
		}
		data, ok := r.string()
		if !ok || len(data) == 0 {
			return nil
		}
		if container == qlPlain {
			l.PushBack(string(data))
			continue
		}
		read := lpRead
		if !v2 {
			read = zlRead
		}
		if !read(data, func(s string) bool { l.PushBack(s); return true }) {
			return nil
		}
	}
	if l.Len() == 0 {
		return nil
	}
	return &object{kind: KindList, v: l}
}

// loadSet reads RDB_TYPE_SET: an intset while the members are integers
// and no more than set-max-intset-entries, a hashtable otherwise.
// Duplicates are refused.
func (r *rdbReader) loadSet(lim *EncodingLimits) *object {
	n, ok := r.count()
	if !ok {
		return nil
	}
	maxEntries := min(lim.SetMaxIntsetEntries, 1<<30)
	s := &set{idx: make(map[string]int, min(n, 1024)), intset: int64(n) <= maxEntries}
	for ; n > 0; n-- {
		m, ok := r.str()
		if !ok {
			return nil
		}
		if _, dup := s.idx[m]; dup {
			return nil
		}
		if s.intset {
			if v, isInt := parseInt([]byte(m)); isInt {
				s.width = max(s.width, intsetWidth(v))
			} else {
				s.intset = false
			}
		}
		s.idx[m] = len(s.list)
		s.list = append(s.list, m)
	}
	return &object{kind: KindSet, v: s}
}

// loadZset reads RDB_TYPE_ZSET_2 (binary scores) or RDB_TYPE_ZSET (scores
// as text): a skiplist, made compact after when it is small enough
// (zset-max-listpack-entries, -value). A NaN score or a duplicate member
// is refused.
func (r *rdbReader) loadZset(binaryScores bool, lim *EncodingLimits) *object {
	n, ok := r.count()
	if !ok {
		return nil
	}
	type pair struct {
		member string
		score  float64
	}
	pairs := make([]pair, 0, min(n, 1024))
	maxLen, total := 0, 0
	for ; n > 0; n-- {
		m, ok := r.str()
		if !ok {
			return nil
		}
		var score float64
		if binaryScores {
			b, ok := r.read(8)
			if !ok {
				return nil
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(b))
		} else if score, ok = r.textScore(); !ok {
			return nil
		}
		if math.IsNaN(score) {
			return nil
		}
		maxLen = max(maxLen, len(m))
		total += len(m)
		pairs = append(pairs, pair{m, score})
	}
	big := !(int64(len(pairs)) <= lim.ZsetMaxListpackEntries && int64(maxLen) <= lim.ZsetMaxListpackValue && total <= lpMaxSafetySize)
	z := newZset(big)
	for _, p := range pairs {
		if !z.put(p.member, p.score) {
			return nil
		}
	}
	return &object{kind: KindZSet, v: z}
}

// textScore is rdbLoadDoubleValue: a length byte (253 NaN, 254 +inf, 255
// -inf), then that many bytes, read by sscanf's %lg (leading white space
// skipped, anything after the number ignored).
func (r *rdbReader) textScore() (float64, bool) {
	n, ok := r.byte()
	if !ok {
		return 0, false
	}
	switch n {
	case 253:
		return math.NaN(), true
	case 254:
		return math.Inf(1), true
	case 255:
		return math.Inf(-1), true
	}
	b, ok := r.read(uint64(n))
	if !ok {
		return 0, false
	}
	s := string(b)
	if j := indexNUL(s); j >= 0 {
		s = s[:j] // the C string ends there
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	f, used := Strtod(s[i:])
	return f, used > 0
}

// put adds a member read from a payload, with no conversion; a compact
// set keeps a zero score as +0, as its listpack does (zzlInsertAt). It
// reports false for a member already there.
func (z *zset) put(member string, score float64) bool {
	if _, dup := z.m[member]; dup {
		return false
	}
	if score == 0 && !z.big {
		score = 0
	}
	z.m[member] = score
	z.tree.Set(zitem{score, member})
	return true
}

// loadHash reads RDB_TYPE_HASH: a listpack while there are no more than
// hash-max-listpack-entries fields and no field or value is longer than
// hash-max-listpack-value, a hashtable from the first that is (or from
// the start, when there are too many). Duplicates are refused.
func (r *rdbReader) loadHash(lim *EncodingLimits) *object {
	n, ok := r.count()
	if !ok {
		return nil
	}
	h := &hash{}
	seen := make(map[string]struct{}, min(n, 1024))
	if int64(n) > lim.HashMaxListpackEntries {
		h.m = make(map[string]string, min(n, 1024))
	}
	lpSize := lpEmptyBytes
	for ; n > 0; n-- {
		f, ok := r.str()
		if !ok {
			return nil
		}
		v, ok := r.str()
		if !ok {
			return nil
		}
		if h.m == nil {
			if _, dup := seen[f]; dup {
				return nil
			}
			seen[f] = struct{}{}
			if int64(len(f)) > lim.HashMaxListpackValue || int64(len(v)) > lim.HashMaxListpackValue || lpSize+len(f)+len(v) > lpMaxSafetySize {
				h.convert()
			} else {
				lpSize += lpEntrySize(f) + lpEntrySize(v)
				h.lp = append(h.lp, hashPair{f, v})
				continue
			}
		}
		if _, dup := h.m[f]; dup {
			return nil
		}
		h.m[f] = v
	}
	return &object{kind: KindHash, v: h}
}

// loadBlob reads the value of a type stored as one blob: an intset, a
// listpack, or the ziplist or zipmap of older versions, converted to
// Redis 7.0's encodings. As in Redis, only the count decides whether a
// compact value becomes a table (a zipmap's longest field or value too):
// a listpack holding longer strings than hash-max-listpack-value, say,
// stays compact.
func loadBlob(typ byte, blob []byte, lim *EncodingLimits) *object {
	switch typ {
	case rdbTypeSetIntset:
		vals, width, ok := intsetRead(blob)
		if !ok {
			return nil
		}
		s := &set{idx: make(map[string]int, len(vals)), list: make([]string, len(vals)), width: width}
		s.intset = int64(len(vals)) <= lim.SetMaxIntsetEntries
		for i, v := range vals {
			m := strconv.FormatInt(v, 10)
			s.list[i] = m
			s.idx[m] = i
		}
		return &object{kind: KindSet, v: s}
	case rdbTypeListZiplist:
		l := &list{}
		if !zlRead(blob, func(s string) bool { l.PushBack(s); return true }) || l.Len() == 0 {
			return nil
		}
		return &object{kind: KindList, v: l}
	case rdbTypeHashListpack, rdbTypeHashZiplist, rdbTypeHashZipmap:
		var items []string
		var ok bool
		switch typ {
		case rdbTypeHashListpack:
			items, ok = lpStrings(blob)
		case rdbTypeHashZiplist:
			items, ok = zlStrings(blob)
		default:
			items, ok = zipmapPairs(blob)
		}
		if !ok || len(items) == 0 || len(items)%2 != 0 {
			return nil
		}
		h := &hash{lp: make([]hashPair, 0, len(items)/2)}
		seen := make(map[string]struct{}, len(items)/2)
		maxLen := 0
		for i := 0; i < len(items); i += 2 {
			if _, dup := seen[items[i]]; dup {
				return nil
			}
			seen[items[i]] = struct{}{}
			maxLen = max(maxLen, len(items[i]), len(items[i+1]))
			h.lp = append(h.lp, hashPair{items[i], items[i+1]})
		}
		if int64(len(h.lp)) > lim.HashMaxListpackEntries || (typ == rdbTypeHashZipmap && int64(maxLen) > lim.HashMaxListpackValue) {
			h.convert()
		}
		return &object{kind: KindHash, v: h}
	case rdbTypeZsetListpack, rdbTypeZsetZiplist:
		var items []string
		var ok bool
		if typ == rdbTypeZsetListpack {
			items, ok = lpStrings(blob)
		} else {
			items, ok = zlStrings(blob)
		}
		if !ok || len(items) == 0 || len(items)%2 != 0 {
			return nil
		}
		z := newZset(int64(len(items)/2) > lim.ZsetMaxListpackEntries)
		for i := 0; i < len(items); i += 2 {
			score, ok := parseBlobScore(items[i+1])
			if !ok || !z.put(items[i], score) {
				return nil
			}
		}
		return &object{kind: KindZSet, v: z}
	}
	return nil
}

// parseBlobScore reads a score a compact sorted set holds as text: a
// whole number strtod reads, not NaN. (Redis reads what strtod reads of
// it and takes anything; a score Redis wrote is always one.)
func parseBlobScore(s string) (float64, bool) {
	if len(s) == 0 || isCSpace(s[0]) {
		return 0, false
	}
	f, n := Strtod(s)
	return f, n == len(s) && !math.IsNaN(f)
}
