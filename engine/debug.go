package engine

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"strconv"
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
