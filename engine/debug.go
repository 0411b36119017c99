package engine

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"unsafe"

	"github.com/tumblerdb/tumbler/expiry"
)

// DEBUG's subcommands that read or write the keyspace: DIGEST,
// DIGEST-VALUE and POPULATE. The server owns DEBUG (it runs without the
// keyspace lock, FlagNoKeys) and calls these, which take the lock.

// WithKeyspace runs fn as a command that runs without the keyspace lock
// (FlagNoKeys) would run a keyed one: under the lock, in c's database.
// Inside EXEC, which holds the lock already, it runs fn as it is.
func (e *Engine) WithKeyspace(c *Ctx, fn func(c *Ctx)) {
	if c.InExec() {
		fn(c)
		return
	}
	if !e.lockOrBusy(false) {
		c.W.WriteError(e.BusyError())
		return
	}
	defer e.mu.Unlock()
	defer e.endCommand()
	e.beginCommand(c)
	e.enterDB(c)
	e.lru = lruClock{now: lruNow(c.Now)} // keys it stores are new; a lookup is no access
	fn(c)
}

// dsDigest is Redis's 20-byte dataset digest (debug.c): SHA1 digests
// combined by xor where order does not matter and by mixing where it does.
type dsDigest [sha1.Size]byte

// xor is xorDigest: d ^= SHA1(b).
func (d *dsDigest) xor(b []byte) {
	h := sha1.Sum(b)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix is mixDigest: d = SHA1(d ^ SHA1(b)), which depends on the order of
// the calls.
func (d *dsDigest) mix(b []byte) {
	d.xor(b)
	*d = sha1.Sum(d[:])
}

func (d *dsDigest) mixString(s string) { d.mix(strBytes(s)) }

// Redis's object type numbers (OBJ_STRING...), which the dsDigest mixes in.
var redisObjType = [...]uint32{KindString: 0, KindList: 1, KindSet: 2, KindZSet: 3, KindHash: 4}

// xorObject is xorObjectDigest: ent's type, value and whether it has a
// deadline, added to d.
func xorObject(d *dsDigest, ent *entry) {
	var typ [4]byte
	binary.BigEndian.PutUint32(typ[:], redisObjType[ent.kind()]) // htonl
	d.mix(typ[:])
	switch v := ent.objValue().(type) {
	case *list:
		for i := 0; i < v.Len(); i++ {
			d.mixString(v.At(i))
		}
	case *set:
		for _, m := range v.list {
			d.xor(strBytes(m))
		}
	case *zset:
		for m, score := range v.m {
			var ed dsDigest
			ed.mixString(m)
			ed.mixString(d2string(score)) // %.17g
			d.xor(ed[:])
		}
	case *hash:
		v.Each(func(field, value string) {
			var ed dsDigest
			ed.mixString(field)
			ed.mixString(value)
			d.xor(ed[:])
		})
	default:
		d.mixString(ent.str())
	}
	if ent.deadline != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

// DebugDigest is DEBUG DIGEST: a dsDigest of every database's keys, values
// and whether each has a deadline, as computeDatasetDigest makes it, so
// two servers holding the same data (tumbler or Redis) give the same
// dsDigest. Keys past their deadline and not yet reclaimed count, as in
// Redis. Forty zeros when there are no keys. Requires the keyspace lock.
func DebugDigest(c *Ctx) {
	e := c.Eng
	var final dsDigest
	for j := range e.dbs {
		d := &e.dbs[j]
		if d.size() == 0 {
			continue
		}
		var id [4]byte
		binary.BigEndian.PutUint32(id[:], uint32(j))
		final.mix(id[:]) // the same data in another database digests otherwise
		d.keys.each(func(ent *entry) bool {
			var kd dsDigest
			kd.mixString(ent.key())
			xorObject(&kd, ent)
			final.xor(kd[:])
			return true
		})
	}
	c.W.WriteStatus(hex.EncodeToString(final[:]))
}

// DebugDigestValue is DEBUG DIGEST-VALUE key [key ...]: each key's value
// dsDigest (forty zeros for a missing key), without expiring it, as Redis
// reads the dictionary directly. Requires the keyspace lock.
func DebugDigestValue(c *Ctx) {
	keys := c.Args[2:]
	c.W.WriteArray(len(keys))
	for _, k := range keys {
		var d dsDigest
		if ent := c.Eng.keys.get(k); ent != nil {
			xorObject(&d, ent)
		}
		c.W.WriteStatus(hex.EncodeToString(d[:]))
	}
}

// DebugPopulate is DEBUG POPULATE count [prefix] [size]: string keys
// prefix:0 to prefix:count-1 (prefix "key") with the values value:0...,
// each cut or padded with zero bytes to size bytes when size is given;
// keys that exist are left alone. As Redis: a key name is at most 127
// bytes (its snprintf buffer), the keys are added as dbAdd adds them
// (the "new" event, WATCH and tracking see them) and they are not
// counted as changes since the last save. Requires the keyspace lock.
func DebugPopulate(c *Ctx) {
	count, ok := populateArg(c, c.Args[2])
	if !ok {
		return
	}
	var size int64
	if len(c.Args) == 5 {
		if size, ok = populateArg(c, c.Args[4]); !ok {
			return
		}
		// Redis allocates whatever size says (and dies of a large one)
		if !c.Eng.lengthFits(0, size) || size > maxEntryValue {
			c.W.WriteError(ErrStringTooLong)
			return
		}
	}
	prefix := []byte("key")
	if len(c.Args) >= 4 {
		prefix = c.Args[3]
	}
	e := c.Eng
	var key, val []byte
	for j := int64(0); j < count; j++ {
		key = strconv.AppendInt(append(append(key[:0], prefix...), ':'), j, 10)
		if len(key) > 127 {
			key = key[:127]
		}
		if e.lookup(key, c.Now) != nil {
			continue
		}
		val = strconv.AppendInt(append(val[:0], "value:"...), j, 10)
		if size != 0 {
			if int64(len(val)) >= size {
				val = val[:size]
			} else {
				val = append(val, make([]byte, size-int64(len(val)))...)
			}
		}
		e.setStringAt(key, nil, val, 0, false)
	}
	c.W.WriteStatus(statusOK)
}

// populateArg parses a count or size as getPositiveLongFromObjectOrReply
// does, whose one error covers text and negative numbers alike.
func populateArg(c *Ctx, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 {
		c.W.WriteError("ERR value is out of range, must be positive")
		return 0, false
	}
	return n, true
}

// reloadSnapshot is what DEBUG RELOAD saves and loads back: every key of
// every database (expired ones not yet reclaimed too, as rdbSave writes
// them) as its DUMP payload without the footer, with its deadline, and
// the function libraries. It stands for Redis's dump.rdb, in memory: it
// is kept for DEBUG RELOAD NOSAVE until the next save replaces it.
type reloadSnapshot struct {
	dbs  [][]snapKey
	libs [][]byte // the libraries' code, created again by each load
}

type snapKey struct {
	key      string
	payload  []byte
	deadline int64
}

// snapshot saves the data set (rdbSave). Requires e.mu.
func (e *Engine) snapshot() *reloadSnapshot {
	s := &reloadSnapshot{dbs: make([][]snapKey, len(e.dbs))}
	for _, lib := range e.functionLibs().sorted() {
		s.libs = append(s.libs, lib.Code)
	}
	for i := range e.dbs {
		d := &e.dbs[i]
		if d.size() == 0 {
			continue
		}
		keys := make([]snapKey, 0, d.size())
		d.keys.each(func(ent *entry) bool {
			keys = append(keys, snapKey{ent.key(), e.dumpValue(nil, ent), ent.deadline})
			return true
		})
		s.dbs[i] = keys
	}
	return s
}

// errReload is DEBUG RELOAD's reply when the load fails.
const errReload = "ERR Error trying to load the RDB dump"

// DebugReload is DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE], as Redis's:
// save the data set and the functions, empty them, and load them back,
// which gives every value the encoding a load gives it under the current
// thresholds, and drops the keys whose deadline has passed (a master
// loading an RDB file). NOSAVE loads what the last DEBUG RELOAD saved,
// NOFLUSH loads over the data set as it is, MERGE lets what is loaded
// replace a key or library of the same name.
//
// The save is in memory, not a file (tumbler keeps no data on disk), so
// it is not counted as one: LASTSAVE and rdb_changes_since_last_save
// stay as they were. Where Redis's load fails partway (a library already
// there), or kills the server (a key already there, NOFLUSH without
// MERGE), this one checks first and fails with nothing changed. As in
// Redis, emptying the data set counts as a flush for WATCH and client
// tracking, and loading sends no keyspace event and wakes no client
// blocked on a key; a key MERGE replaces counts as modified. Requires the
// keyspace lock.
func DebugReload(c *Ctx) {
	flush, save, merge := true, true, false
	for _, opt := range c.Args[2:] {
		switch {
		case eqFold(opt, "merge"):
			merge = true
		case eqFold(opt, "noflush"):
			flush = false
		case eqFold(opt, "nosave"):
			save = false
		default:
			c.W.WriteError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	e := c.Eng
	if save {
		e.reloadSnap = e.snapshot()
	}
	snap := e.reloadSnap
	if snap == nil { // no dump.rdb
		c.W.WriteError(errReload)
		return
	}
	// the libraries, as FUNCTION LOAD creates them (their code runs again:
	// a library's state starts afresh, as in Redis)
	libs := newLibSet()
	for _, code := range snap.libs {
		if _, msg := e.createLibrary(libs, code, false, nil, FunctionLoadTimeout); msg != "" {
			c.W.WriteError(errReload)
			return
		}
	}
	if !flush {
		saved := libs
		libs = e.functionLibs().clone()
		if libs.join(saved, merge) != "" {
			c.W.WriteError(errReload)
			return
		}
		if !merge && snap.clashes(e, c.Now) {
			c.W.WriteError(errReload)
			return
		}
	}
	defer e.use(e.db)
	if flush {
		e.beginFlush() // tracking: one invalidation for all keys (tracking.go)
		e.flushAll()
		e.endFlush()
	}
	e.funcs.libs.Store(libs)
	for i, keys := range snap.dbs {
		if len(keys) == 0 {
			continue
		}
		e.use(i)
		for _, k := range keys {
			if expiry.Expired(k.deadline, c.Now) {
				continue
			}
			val, msg := e.loadValue(k.payload)
			if msg != "" {
				continue // (a payload this engine wrote loads)
			}
			if old := e.keys.getString(k.key); old != nil { // MERGE
				e.removeKey(old.key(), old)
				e.modified(old.key())
			}
			var nu *entry
			if val.obj == nil {
				nu = newEntry(strBytes(k.key), val.str)
			} else {
				nu = newObjEntry(strBytes(k.key), nil, val.obj)
			}
			e.keys.put(nu)
			if k.deadline != 0 {
				e.setDeadlineKey(nu.key(), nu, k.deadline)
			}
		}
	}
	c.W.WriteStatus(statusOK)
}

// clashes reports whether a key of s that a load at now would add is in
// e's data set (expired or not, as Redis's load finds it in the
// dictionary).
func (s *reloadSnapshot) clashes(e *Engine, now int64) bool {
	for i, keys := range s.dbs {
		if len(keys) == 0 || e.dbs[i].size() == 0 {
			continue
		}
		for _, k := range keys {
			if !expiry.Expired(k.deadline, now) && e.dbs[i].keys.getString(k.key) != nil {
				return true
			}
		}
	}
	return false
}

// DebugObject is DEBUG OBJECT key, as Redis's: the key's value read from
// the dictionary (an expired key not yet reclaimed too, and no access),
// as "Value at:<address> refcount:<n> encoding:<e> serializedlength:<n>
// lru:<clock> lru_seconds_idle:<s>", and for a list its quicklist's
// nodes as Redis would cut them (dumpList), under the list settings in
// force now (Redis keeps those a list was made under: a list made before
// a CONFIG SET of list-max-listpack-size or list-compress-depth may show
// other nodes there). The address is the entry's
// (Go's objects do not move); serializedlength the value's RDB bytes, as
// DUMP writes them without the type and footer. Requires the keyspace
// lock.
func DebugObject(c *Ctx) {
	e := c.Eng
	ent := e.keys.get(c.Args[2])
	if ent == nil {
		c.W.WriteError(ErrNoSuchKey)
		return
	}
	lru, _ := e.keys.idle(c.Args[2])
	var addr uintptr
	if ent.klen&entryHasObj != 0 {
		addr = uintptr(unsafe.Pointer(ent.obj()))
	} else {
		addr = uintptr(unsafe.Pointer(ent))
	}
	b := []byte("Value at:0x")
	b = strconv.AppendUint(b, uint64(addr), 16)
	b = append(b, " refcount:"...)
	b = strconv.AppendInt(b, refcount(ent), 10)
	b = append(b, " encoding:"...)
	b = append(b, objectEncoding(ent)...)
	b = append(b, " serializedlength:"...)
	b = strconv.AppendInt(b, int64(len(e.dumpValue(nil, ent))-1), 10)
	b = append(b, " lru:"...)
	b = strconv.AppendUint(b, lru, 10)
	b = append(b, " lru_seconds_idle:"...)
	b = strconv.AppendInt(b, idleSeconds(lru, c.Now), 10)
	if ent.kind() == KindList {
		lim := e.limits()
		l := ent.obj().v.(*list)
		nodes := listNodes(l, lim.ListMaxListpackSize, e.qlPackedThreshold())
		size := 0
		for _, nd := range nodes {
			size += nd.size
		}
		compressed := 0
		if lim.ListCompressDepth != 0 {
			compressed = 1
		}
		b = append(b, " ql_nodes:"...)
		b = strconv.AppendInt(b, int64(len(nodes)), 10)
		b = append(b, " ql_avg_node:"...)
		b = strconv.AppendFloat(b, float64(l.Len())/float64(len(nodes)), 'f', 2, 64)
		b = append(b, " ql_listpack_max:"...)
		b = strconv.AppendInt(b, min(max(lim.ListMaxListpackSize, -5), qlFillMax), 10)
		b = append(b, " ql_compressed:"...)
		b = strconv.AppendInt(b, int64(compressed), 10)
		b = append(b, " ql_uncompressed_size:"...)
		b = strconv.AppendInt(b, int64(size), 10)
	}
	c.W.WriteStatus(string(b))
}

// SetQuicklistPackedThreshold is DEBUG QUICKLIST-PACKED-THRESHOLD size:
// the length from which a list element has a quicklist node of its own
// (plain), as DUMP and DEBUG OBJECT cut a list; 0 restores 1 GB. As
// Redis's quicklistisSetPackedThreshold it refuses a size above 4 GB
// less 1 MB, reporting false.
func (e *Engine) SetQuicklistPackedThreshold(size uint64) bool {
	if size > 1<<32-1<<20 {
		return false
	}
	if size == 0 {
		size = qlPackedThreshold
	}
	e.qlPacked.Store(int64(size))
	return true
}

// qlPackedThreshold is the plain-node threshold in force.
func (e *Engine) qlPackedThreshold() int {
	if n := e.qlPacked.Load(); n != 0 {
		return int(n)
	}
	return qlPackedThreshold
}
