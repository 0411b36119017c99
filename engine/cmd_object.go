package engine

import "unsafe"

func registerObject(e *Engine) {
	sub := func(fn func(c *Ctx)) *Command {
		return &Command{Arity: 3, Flags: FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Fn: fn}
	}
	e.Register(&Command{Name: "object", Arity: -2, Group: "generic", Subs: map[string]*Command{
		"encoding": sub(cmdObjectEncoding),
		"refcount": sub(cmdObjectRefcount),
		"freq":     sub(cmdObjectFreq),
		"idletime": sub(cmdObjectIdletime),
		"help":     {Arity: 2, Flags: FlagLoading | FlagStale, Fn: cmdObjectHelp},
	}})
}

// rawString marks a string value that Redis would hold in the "raw"
// encoding whatever its length: BITOP's result. (SETRANGE, SETBIT and
// BITFIELD make a grownString.)
type rawString struct{}

// grownString marks a "raw" string that is edited in place, as Redis's
// sds is: its entry, owner, was allocated with room for capacity value
// bytes, of which vlen hold the value. APPEND writes only past vlen,
// bytes no reader can hold. SETBIT, SETRANGE and BITFIELD write inside
// the value too, but only while exposed is false: every read that hands
// the value's bytes out beyond its command (a reply to a writer that
// keeps it, as a script or a fixture does, as a string that aliases them:
// Ctx.replyValue; SORT's lookups, which STORE keeps) goes through
// entry.shared, which sets it, and an edit of
// an exposed value makes a new entry (copy on write) that no one holds.
// So a value once handed out never changes. The room belongs to owner
// alone: COPY and RENAME give the new entry a rawString (addCopy).
type grownString struct {
	owner    *entry
	capacity uint32
	exposed  bool
}

// shared returns the string value of ent for a reader that may keep it
// past the command (see grownString): a reply to a writer that keeps it
// (Ctx.replyValue), a SORT lookup. The value is marked so that its bytes
// never change again: a grownString as exposed, a plain string as
// entryShared (entry.overwrite).
func (ent *entry) shared() string {
	if ent.klen&entryHasObj != 0 {
		if g, ok := ent.obj().v.(*grownString); ok {
			g.exposed = true
		}
	} else {
		ent.klen |= entryShared
	}
	return ent.str()
}

// replyValue returns ent's string value for c's reply. A writer that
// copies what it is given (CopyingWriter: a connection's) holds nothing
// of it after the call, so the value stays free to change in place; for
// any other (a script's keeps the reply as a Lua string that aliases the
// bytes) it is shared.
func (c *Ctx) replyValue(ent *entry) string {
	w := c.W
	if t, ok := w.(*errTap); ok {
		w = t.Writer
	}
	if _, ok := w.(CopyingWriter); ok {
		return ent.str()
	}
	return ent.shared()
}

// editable returns ent's value bytes, grown to n (n >= vlen; the new
// bytes zero), for an edit in place: when ent owns room for n bytes and
// no reader holds its value (grownString). Otherwise it returns nil and
// changes nothing.
func (ent *entry) editable(n int) []byte {
	g, ok := ent.objValue().(*grownString)
	if !ok || g.owner != ent || g.exposed || n > int(g.capacity) || n < int(ent.vlen) {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Add(ent.data(), ent.keyLen())), n)
	clear(b[ent.vlen:]) // (zero already: nothing writes past vlen but to grow it)
	ent.vlen = uint32(n)
	return b
}

// room returns the value bytes APPEND may write in place in ent: its
// capacity when APPEND made it, else 0 (no room: a new entry).
func (ent *entry) room() uint32 {
	room, _ := ent.grown()
	return room
}

// grown reports whether APPEND made ent (a "raw" string, with room to
// grow), and its capacity.
func (ent *entry) grown() (room uint32, ok bool) {
	if g, ok := ent.objValue().(*grownString); ok && g.owner == ent {
		return g.capacity, true
	}
	return 0, false
}

// unsharedInt marks a small integer string that Redis holds in an object
// of its own instead of a shared one: COPY's dupStringObject makes one,
// so OBJECT REFCOUNT says 1.
type unsharedInt struct{}

// plainString marks a string value Redis stores without trying the "int"
// encoding (createStringObject, as INCRBYFLOAT does): "embstr" up to 44
// bytes, "raw" beyond, even when it reads as an integer.
type plainString struct{}

// Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT and OBJ_SHARED_INTEGERS.
const (
	embstrSizeLimit = 44
	sharedIntegers  = 10000
)

// stringEncoding is the encoding Redis's tryObjectEncoding picks for a
// value stored by SET and friends: "int" for a canonical integer of at
// most 20 characters, "embstr" up to 44 bytes, "raw" beyond.
func stringEncoding(ent *entry) (enc string, shared bool) {
	s := ent.str()
	switch ent.objValue().(type) {
	case rawString, *grownString:
		return "raw", false
	case unsharedInt:
		return "int", false
	case plainString:
		if len(s) <= embstrSizeLimit {
			return "embstr", false
		}
		return "raw", false
	}
	if len(s) <= 20 {
		if n, ok := parseInt([]byte(s)); ok {
			return "int", n >= 0 && n < sharedIntegers
		}
	}
	if len(s) <= embstrSizeLimit {
		return "embstr", false
	}
	return "raw", false
}

// objectLookup finds OBJECT's key, counting a keyspace hit or miss but
// raising no keymiss event, as Redis's objectCommandLookup; a missing key
// replies a null.
func objectLookup(c *Ctx) *entry {
	ent := c.Eng.lookupCounted(c.Args[2], c.Now)
	if ent == nil {
		c.W.WriteNull()
	}
	return ent
}

// OBJECT ENCODING key
//
// Lists report "quicklist", as Redis 7.0 does for lists of any size.
func cmdObjectEncoding(c *Ctx) {
	ent := objectLookup(c)
	if ent == nil {
		return
	}
	if enc := objectEncoding(ent); enc != "" {
		c.W.WriteBulkString(enc)
	} else {
		c.W.WriteNull()
	}
}

// objectEncoding is ent's encoding as Redis names it ("" for none).
func objectEncoding(ent *entry) string {
	switch ent.kind() {
	case KindString:
		enc, _ := stringEncoding(ent)
		return enc
	case KindHash:
		return ent.obj().v.(*hash).Encoding()
	case KindList:
		return "quicklist"
	case KindZSet:
		return ent.obj().v.(*zset).Encoding()
	case KindSet:
		return ent.obj().v.(*set).Encoding()
	}
	return ""
}

// OBJECT REFCOUNT key
//
// Small integers are shared objects in Redis, reported with INT_MAX.
func cmdObjectRefcount(c *Ctx) {
	ent := objectLookup(c)
	if ent == nil {
		return
	}
	c.W.WriteInt(refcount(ent))
}

// refcount is ent's value's reference count as Redis reports it.
func refcount(ent *entry) int64 {
	if ent.kind() == KindString {
		if _, shared := stringEncoding(ent); shared {
			return 2147483647
		}
	}
	return 1
}

// OBJECT FREQ key: tumbler, like Redis without an LFU policy, does not
// track access frequency.
func cmdObjectFreq(c *Ctx) {
	if objectLookup(c) == nil {
		return
	}
	c.W.WriteError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

// OBJECT IDLETIME key: the seconds since the key was last accessed, on
// Redis's 24-bit LRU clock (keyTable's slots keep it). As in Redis, a
// command accesses the keys it reads or writes; TYPE, TTL, EXISTS, OBJECT,
// SCAN and a few others do not (noTouchCommands).
func cmdObjectIdletime(c *Ctx) {
	if objectLookup(c) == nil {
		return
	}
	lru, _ := c.Eng.keys.idle(c.Args[2])
	c.W.WriteInt(idleSeconds(lru, c.Now))
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// OBJECT HELP
func cmdObjectHelp(c *Ctx) { WriteHelp(c, objectHelp) }
