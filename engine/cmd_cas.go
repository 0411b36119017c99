package engine

import (
	"strconv"
	"strings"
)

// Compare-and-set and compare-and-delete, as Redis 8.4 added them (while
// tumbler keeps reporting version 7.2.x): SET's conditions IFEQ, IFNE,
// IFDEQ and IFDNE, DELEX, and DIGEST. A digest is the XXH3 64-bit hash of
// a string value as 16 lower-case hexadecimal digits; IFDEQ/IFDNE take
// exactly 16 hexadecimal characters, compared without regard to case.

func registerCAS(e *Engine) {
	e.Register(
		&Command{Name: "delex", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdDelex},
		&Command{Name: "digest", Arity: 2, Flags: FlagReadonly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Fn: cmdDigest},
	)
}

// SET's condition flags, after those of cmd_string.go.
const (
	objIFEQ = objPXAT << (iota + 1)
	objIFNE
	objIFDEQ
	objIFDNE
	objIfConds = objIFEQ | objIFNE | objIFDEQ | objIFDNE
)

// ErrDigestLength is the reply to an IFDEQ/IFDNE digest of another length.
const ErrDigestLength = "ERR must be exactly 16 hexadecimal characters"

// setCondFlag returns the flag of a SET condition keyword, or 0.
func setCondFlag(opt []byte) int {
	switch {
	case eqFold(opt, "ifeq"):
		return objIFEQ
	case eqFold(opt, "ifne"):
		return objIFNE
	case eqFold(opt, "ifdeq"):
		return objIFDEQ
	case eqFold(opt, "ifdne"):
		return objIFDNE
	}
	return 0
}

// validCondValue checks the value of a condition: a digest must have 16
// characters. It replies the error otherwise.
func validCondValue(c *Ctx, opt, value []byte) bool {
	if (eqFold(opt, "ifdeq") || eqFold(opt, "ifdne")) && len(value) != 16 {
		c.W.WriteError(ErrDigestLength)
		return false
	}
	return true
}

// digest is DIGEST's text for a value.
func digest(s string) string {
	d := strconv.FormatUint(xxh3([]byte(s)), 16)
	return strings.Repeat("0", 16-len(d)) + d
}

// Results of setCondition.
const (
	condOK      = iota // no condition, or it holds
	condFailed         // the condition is false: SET aborts
	condReplied        // an error was replied
)

// setCondition evaluates SET's IF* condition on key. A missing key fails
// IFEQ and IFDEQ and passes IFNE and IFDNE; a key of another kind is a
// WRONGTYPE error.
func setCondition(c *Ctx, flags int, key, match []byte, found bool) int {
	if flags&objIfConds == 0 {
		return condOK
	}
	if !found {
		if flags&(objIFEQ|objIFDEQ) != 0 {
			return condFailed
		}
		return condOK
	}
	ent := c.Eng.lookupRead(key, c.Now)
	if ent.kind() != KindString {
		c.W.WriteError(ErrWrongType)
		return condReplied
	}
	if condHolds(flags&objIfConds, ent.str(), match) {
		return condOK
	}
	return condFailed
}

// condHolds evaluates one condition (objIFEQ...) on a string value.
func condHolds(cond int, value string, match []byte) bool {
	switch cond {
	case objIFEQ:
		return value == string(match)
	case objIFNE:
		return value != string(match)
	case objIFDEQ:
		return EqualFoldASCII(digest(value), string(match))
	default: // objIFDNE
		return !EqualFoldASCII(digest(value), string(match))
	}
}

// DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest]
//
// Without a condition it deletes a key of any kind; with one the key must
// hold a string. It replies 1 when it deleted the key, else 0.
func cmdDelex(c *Ctx) {
	key := c.Args[1]
	if len(c.Args) != 2 && len(c.Args) != 4 {
		c.W.WriteError(ErrWrongArgs("delex"))
		return
	}
	var cond int
	if len(c.Args) == 4 {
		if cond = setCondFlag(c.Args[2]); cond == 0 {
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	ent := c.Eng.lookup(key, c.Now)
	if ent == nil {
		c.W.WriteInt(0)
		return
	}
	if cond != 0 {
		if ent.kind() != KindString {
			c.W.WriteError(ErrWrongType)
			return
		}
		match := c.Args[3]
		if !validCondValue(c, c.Args[2], match) {
			return
		}
		if !condHolds(cond, ent.str(), match) {
			c.W.WriteInt(0)
			return
		}
	}
	c.Eng.del(key, c.Now)
	c.Eng.dirty++ // a key deleted, as DEL counts it
	c.W.WriteInt(1)
}

// DIGEST key
func cmdDigest(c *Ctx) {
	ent, ok := getString(c, c.Args[1])
	if !ok {
		return
	}
	if ent == nil {
		c.W.WriteNull()
		return
	}
	c.W.WriteBulkString(digest(ent.str()))
}
