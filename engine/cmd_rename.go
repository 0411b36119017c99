package engine

import (
	"math/rand/v2"
	"slices"
)

// RENAME, RENAMENX, COPY, TOUCH and RANDOMKEY: Redis's db.c commands over
// tumbler's one database.

func registerRename(e *Engine) {
	e.Register(
		&Command{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Fn: func(c *Ctx) { renameGeneric(c, false) }},
		&Command{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Fn: func(c *Ctx) { renameGeneric(c, true) }},
		&Command{Name: "move", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Fn: cmdMove},
		&Command{Name: "copy", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Fn: cmdCopy},
		&Command{Name: "touch", Arity: -2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Fn: cmdExists},
		&Command{Name: "randomkey", Arity: 1, Flags: FlagReadonly, Group: "generic", Fn: cmdRandomKey},
	)
}

// RENAME key newkey / RENAMENX key newkey
//
// renameGenericCommand: a missing key is an error (even when both names
// are the same, which is otherwise a no-op); the value moves with its
// TTL; RENAME overwrites newkey, RENAMENX leaves an existing one (0).
// Clients blocked on newkey wake if a list lands there.
func renameGeneric(c *Ctx, nx bool) {
	src, dst := c.Args[1], c.Args[2]
	ent := c.Eng.lookup(src, c.Now)
	if ent == nil {
		c.W.WriteError(ErrNoSuchKey)
		return
	}
	if string(src) == string(dst) {
		if nx {
			c.W.WriteInt(0)
		} else {
			c.W.WriteStatus("OK")
		}
		return
	}
	if old := c.Eng.lookup(dst, c.Now); old != nil {
		if nx {
			c.W.WriteInt(0)
			return
		}
		c.Eng.removeKey(old.key(), old)
	}
	c.Eng.addCopy(dst, ent, ent.obj())
	c.Eng.removeKey(ent.key(), ent)
	c.Eng.modified(string(src))
	c.Eng.modified(string(dst))
	c.Eng.notifyBytes(NotifyGeneric, "rename_from", src)
	c.Eng.notifyBytes(NotifyGeneric, "rename_to", dst)
	c.Eng.dirty++
	if nx {
		c.W.WriteInt(1)
	} else {
		c.W.WriteStatus("OK")
	}
}

// addCopy adds under key (missing) an entry holding ent's value, with obj
// as its object (nil for a plain string) and ent's deadline, and wakes
// clients waiting for a list or sorted set there. A string edited in place
// (grownString) becomes a plain raw one: the new entry has no room, and
// must not keep ent's allocation alive, nor share its exposed mark.
func (e *Engine) addCopy(key []byte, ent *entry, obj *object) *entry {
	if obj != nil {
		if _, grown := obj.v.(*grownString); grown {
			obj = &object{kind: KindString, v: rawString{}}
		}
	}
	var nu *entry
	if obj == nil {
		nu = newEntry(key, []byte(ent.str()))
	} else {
		nu = newObjEntry(key, []byte(ent.str()), obj)
	}
	e.putNew(nu)
	if ent.deadline != 0 {
		e.setDeadlineKey(nu.key(), nu, ent.deadline)
	}
	if k := nu.kind(); k == KindList || k == KindZSet {
		e.signalReady(nu.key())
	}
	return nu
}

// COPY source destination [DB destination-db] [REPLACE]
//
// copyCommand: 1 if copied, 0 if source is missing or destination exists
// (without REPLACE); the copy keeps the TTL. DB names the destination's
// database.
func cmdCopy(c *Ctx) {
	e := c.Eng
	replace := false
	src, dstDB := e.db, e.db
	for j := 3; j < len(c.Args); j++ {
		switch opt := lowerC(c.Args[j]); {
		case opt == "replace":
			replace = true
		case opt == "db" && j+1 < len(c.Args):
			db, ok := parseDBIndex(c, c.Args[j+1])
			if !ok {
				return
			}
			dstDB = db
			j++
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	from, dst := c.Args[1], c.Args[2]
	if src == dstDB && string(from) == string(dst) {
		c.W.WriteError(ErrSameObject)
		return
	}
	ent := e.lookupRead(from, c.Now)
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	e.use(dstDB)
	defer e.use(src)
	if old := e.lookup(dst, c.Now); old != nil {
		if !replace {
			c.W.WriteInt(0)
			return
		}
		e.removeKey(old.key(), old)
		e.modified(old.key())
	}
	var obj *object
	if o := ent.obj(); o != nil {
		obj = &object{kind: o.kind, v: cloneValue(o.v)}
	} else if _, shared := stringEncoding(ent); shared {
		obj = &object{kind: KindString, v: unsharedInt{}} // dupStringObject
	}
	e.addCopy(dst, ent, obj)
	e.modified(string(dst))
	e.notifyBytes(NotifyGeneric, "copy_to", dst)
	e.dirty++
	c.W.WriteInt(1)
}

// cloneValue is a deep copy of an object's value (the strings themselves
// are immutable and shared).
func cloneValue(v any) any {
	switch v := v.(type) {
	case *hash:
		h := &hash{}
		if v.m != nil {
			h.m = make(map[string]string, len(v.m))
			for f, val := range v.m {
				h.m[f] = val
			}
		} else {
			h.lp = slices.Clone(v.lp)
		}
		return h
	case *list:
		l := &list{buf: slices.Clone(v.buf), head: v.head, n: v.n}
		return l
	case *zset:
		return v.clone()
	case *set:
		return v.clone()
	}
	return v // the string encoding markers hold nothing
}

// RANDOMKEY
//
// A key drawn at random, every key about equally likely
// (keyTable.random), or nil when there is none. An expired key
// found is reclaimed and another drawn; after 100 such draws (while
// CLIENT PAUSE holds expired keys in place) the last one is returned, as
// Redis's dbRandomKey does on a replica.
func cmdRandomKey(c *Ctx) {
	e := c.Eng
	for tries := 0; e.keys.len() > 0; tries++ {
		key := e.keys.random(rand.Uint64).key()
		if tries >= 100 || e.lookup([]byte(key), c.Now) != nil {
			c.W.WriteBulkString(key)
			return
		}
	}
	c.W.WriteNull()
}
