package engine

import (
	"sort"
	"strings"
)

//go:generate go run ./internal/aclgen -addr 127.0.0.1:7412 -o acl_table.go -docs docs_table.go

// This file is the data behind ACL checks that comes from Redis's command
// table: each command's ACL categories and key specifications, generated
// into acl_table.go from redis-server's COMMAND INFO (see
// internal/aclgen), and the key finding of Redis 7.0's
// getKeysUsingKeySpecs over them (src/db.c), which tells an ACL check
// which keys a command reads and which it writes.

// ACL categories, bit per category in Redis's order (ACLCommandCategories
// in src/acl.c): ACL CAT and COMMAND INFO list them in this order.
const (
	catKeyspace uint64 = 1 << iota
	catRead
	catWrite
	catSet
	catSortedset
	catList
	catHash
	catString
	catBitmap
	catHyperloglog
	catGeo
	catStream
	catPubsub
	catAdmin
	catFast
	catSlow
	catBlocking
	catDangerous
	catConnection
	catTransaction
	catScripting
)

// aclCategoryNames names the categories, bit i being 1<<i.
var aclCategoryNames = [...]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// aclCategoryByName returns a category's bit (case-insensitively), 0 when
// there is no such category.
func aclCategoryByName(name string) uint64 {
	for i, n := range aclCategoryNames {
		if eqFold([]byte(name), n) { // strcasecmp: name ends at a NUL byte
			return 1 << i
		}
	}
	return 0
}

// keyFlag is a key specification flag (Redis's CMD_KEY_*).
type keyFlag uint16

const (
	ksRo keyFlag = 1 << iota
	ksRw
	ksOw
	ksRm
	ksAccess
	ksUpdate
	ksInsert
	ksDelete
	ksNotKey
	ksIncomplete
	ksVariableFlags
)

// Where a key specification's keys begin and how they are found.
const (
	bsUnknown = iota
	bsIndex
	bsKeyword
)

const (
	fkUnknown = iota
	fkRange
	fkKeynum
)

// keySpec is one key specification of COMMAND INFO.
type keySpec struct {
	flags     keyFlag
	bs        uint8
	index     int    // bsIndex: the first key's argument index
	keyword   string // bsKeyword: the keys follow this argument...
	startFrom int    // ...searched from here (negative: from the end, backwards)
	fk        uint8
	lastKey   int // fkRange: the last key relative to the first (negative: from the end)
	keyStep   int
	limit     int // fkRange with lastKey -1: only the first 1/limit of the rest
	keynumIdx int // fkKeynum: the number of keys, relative to the begin
	firstKey  int // fkKeynum: the first key, relative to the begin
	notes     string
}

// aclEntry is one command's row of the generated table.
type aclEntry struct {
	cats  uint64
	tips  []string // COMMAND INFO's tips
	specs []keySpec
}

// keyRef is one key argument found for an ACL check: its index in the
// arguments and its key specification's flags.
type keyRef struct {
	pos   int
	flags keyFlag
}

// keysBySpecs finds the key arguments of args by the key specifications,
// as Redis's getKeysUsingKeySpecs; ok is false when a specification
// cannot be followed (unknown, incomplete, or arguments that do not fit),
// and the caller falls back to the command's own key finder.
func keysBySpecs(specs []keySpec, args [][]byte, out []keyRef) ([]keyRef, bool) {
	argc := len(args)
	for i := range specs {
		sp := &specs[i]
		if sp.flags&ksNotKey != 0 {
			continue
		}
		first := 0
		switch sp.bs {
		case bsIndex:
			first = sp.index
		case bsKeyword:
			start, end := sp.startFrom, argc-1
			if sp.startFrom <= 0 {
				start, end = argc+sp.startFrom, 1
			}
			for j := start; j != end; {
				if j >= argc || j < 1 {
					break
				}
				if EqualFoldASCII(string(cstr(args[j])), sp.keyword) { // strcasecmp
					first = j + 1
					break
				}
				if start <= end {
					j++
				} else {
					j--
				}
			}
			if first == 0 {
				continue
			}
		default:
			return out, false
		}
		var last, step int
		switch sp.fk {
		case fkRange:
			step = sp.keyStep
			switch {
			case sp.lastKey >= 0:
				last = first + sp.lastKey
			case sp.limit == 0:
				last = argc + sp.lastKey
			default:
				last = first + ((argc-first)/sp.limit + sp.lastKey)
			}
		case fkKeynum:
			step = sp.keyStep
			if sp.keynumIdx >= argc || first+sp.keynumIdx >= argc {
				return out, false
			}
			n, ok := ParseInt(args[first+sp.keynumIdx])
			if !ok || n < 0 || n > int64(argc) {
				return out, false
			}
			first += sp.firstKey
			last = first + int(n) - 1
		default:
			return out, false
		}
		if last >= argc || last < first || first >= argc {
			return out, false
		}
		if step <= 0 {
			step = 1
		}
		for j := first; j <= last; j += step {
			out = append(out, keyRef{pos: j, flags: sp.flags})
		}
		if sp.flags&ksIncomplete != 0 {
			return out, false
		}
	}
	return out, true
}

// setACLData gives cmd (at Register) its ACL bit, its categories and key
// specifications from the generated table, or, for a command Redis 7.0
// lacks, the categories its flags imply (setImplicitACLCategories) and
// its FirstKey..LastKey as keys both read and written.
func (e *Engine) setACLData(cmd *Command) {
	cmd.aclID = e.aclIDFor(cmd.Name)
	if ent, ok := aclTable[cmd.Name]; ok {
		cmd.aclCats = ent.cats
		cmd.tips = ent.tips
		cmd.keySpecs = ent.specs
		if cmd.keySpecs == nil {
			cmd.keySpecs = []keySpec{}
		}
		cmd.hasKeys = cmd.Keys != nil
		for _, sp := range ent.specs {
			if sp.flags&ksNotKey == 0 {
				cmd.hasKeys = true
			}
		}
	} else {
		cmd.aclCats = impliedCategories(cmd.Flags)
		cmd.keySpecs = nil
		cmd.hasKeys = cmd.Keys != nil || cmd.FirstKey > 0
	}
	switch cmd.Name {
	case "set":
		cmd.aclKeys = aclKeysSet
	case "bitfield":
		cmd.aclKeys = aclKeysBitfield
	case "sort":
		cmd.aclKeys = aclKeysSort
	case "sort_ro":
		cmd.aclKeys = aclKeysSortRO
	}
	switch cmd.Name {
	case "subscribe", "ssubscribe":
		cmd.chanKind = chanSubscribe
	case "psubscribe":
		cmd.chanKind = chanPSubscribe
	case "publish", "spublish":
		cmd.chanKind = chanPublish
	}
}

// impliedCategories are the categories Redis gives a command by its
// flags.
func impliedCategories(f Flag) uint64 {
	var c uint64
	if f&FlagWrite != 0 {
		c |= catWrite
	}
	if f&FlagReadonly != 0 {
		c |= catRead
	}
	if f&FlagAdmin != 0 {
		c |= catAdmin | catDangerous
	}
	if f&FlagPubSub != 0 {
		c |= catPubsub
	}
	if f&FlagFast != 0 {
		c |= catFast
	}
	if f&FlagBlocking != 0 {
		c |= catBlocking
	}
	if c&catFast == 0 {
		c |= catSlow
	}
	return c
}

// Commands whose key access varies with the arguments (Redis's key specs
// flagged variable_flags, whose getkeys_proc decides).
const (
	aclKeysSpecs = iota
	aclKeysSet
	aclKeysBitfield
	aclKeysSort   // SORT: its key specs are incomplete (BY and GET patterns)
	aclKeysSortRO // SORT_RO
)

// setKeys is SET's key access (Redis's setGetKeys): with GET the key is
// read and written, else only written.
func setKeys(args [][]byte, out []keyRef) []keyRef {
	if len(args) < 2 {
		return out
	}
	for _, a := range args[min(3, len(args)):] {
		if len(a) == 3 && EqFold(a, "get") {
			return append(out, keyRef{pos: 1, flags: ksRw | ksAccess | ksUpdate})
		}
	}
	return append(out, keyRef{pos: 1, flags: ksOw | ksUpdate})
}

// bitfieldKeys is BITFIELD's key access (bitfieldGetKeys): read only
// when every subcommand is GET (or OVERFLOW).
func bitfieldKeys(args [][]byte, out []keyRef) []keyRef {
	if len(args) < 2 {
		return out
	}
	ro := true
scan:
	for i := 2; i < len(args); i++ {
		rem := len(args) - i - 1
		switch a := args[i]; {
		case EqFold(a, "get") && rem >= 2:
			i += 2
			continue
		case (EqFold(a, "set") || EqFold(a, "incrby")) && rem >= 3:
			ro = false
		case EqFold(a, "overflow") && rem >= 1:
			i++
			continue
		default:
			ro = false
		}
		break scan
	}
	if ro {
		return append(out, keyRef{pos: 1, flags: ksRo | ksAccess})
	}
	return append(out, keyRef{pos: 1, flags: ksRw | ksAccess | ksUpdate})
}

// sortKeyRefs is SORT's key access (Redis's sortGetKeys and
// sortROGetKeys): the sorted key is read, STORE's destination written.
func sortKeyRefs(args [][]byte, out []keyRef, ro bool) []keyRef {
	if len(args) < 2 {
		return out
	}
	out = append(out, keyRef{pos: 1, flags: ksRo | ksAccess})
	if !ro {
		if p := sortStorePos(args); p != 0 {
			out = append(out, keyRef{pos: p, flags: ksOw | ksUpdate})
		}
	}
	return out
}

// Categories returns a command's ACL categories, "@"-prefixed, in
// Redis's order (COMMAND INFO).
func (cmd *Command) Categories() []string {
	var out []string
	for i, n := range aclCategoryNames {
		if cmd.aclCats&(1<<i) != 0 {
			out = append(out, "@"+n)
		}
	}
	return out
}

// aclIDFor returns a command name's bit in ACL selectors, the same for
// the name whenever it is asked.
func (e *Engine) aclIDFor(name string) int {
	if e.aclIDs == nil {
		e.aclIDs = map[string]int{}
	}
	id, ok := e.aclIDs[name]
	if !ok {
		id = len(e.aclIDs)
		if id >= aclFutureBit {
			id = aclBits // no bit: allowed only by allcommands
		}
		e.aclIDs[name] = id
	}
	return id
}

// FinishCommands gives ACL data to subcommands added to a container's
// Subs after Register (the server adds CLIENT's that way), and makes the
// ACL-only commands; the server calls it once its command table is
// complete, before users are loaded.
func (e *Engine) FinishCommands() {
	for _, cmd := range e.cmdList {
		for _, sub := range cmd.Subs {
			if sub.Group == "" {
				sub.Group = cmd.Group
			}
			sub.parent = cmd
			e.setACLData(sub)
		}
	}
	e.makeUnserved()
	e.buildACLAll()
}

// makeUnserved makes the ACL-only commands: Redis 7.0's commands tumbler
// does not serve (aclUnserved: streams, geo, HyperLogLog, MODULE...),
// which ACL rules may still name (+pfadd, -xadd, -@geo), as in Redis, so
// that users and ACL files written for Redis load, and read back, the
// same. Each takes an ACL bit and its categories; nothing dispatches to
// them (the commands stay unknown, and ACL DRYRUN does not find them).
func (e *Engine) makeUnserved() {
	if e.aclOnly != nil {
		return
	}
	e.aclOnly = map[string]*Command{}
	names := make([]string, 0, len(aclUnserved))
	for n := range aclUnserved {
		names = append(names, n)
	}
	sort.Strings(names) // a container before its subcommands
	for _, n := range names {
		base, sub, isSub := strings.Cut(n, "|")
		if e.cmds[base] != nil {
			continue
		}
		cmd := &Command{Name: n, aclCats: aclUnserved[n], aclID: e.aclIDFor(n)}
		if !isSub {
			e.aclOnly[n] = cmd
			continue
		}
		if parent := e.aclOnly[base]; parent != nil {
			if parent.Subs == nil {
				parent.Subs = map[string]*Command{}
			}
			cmd.parent = parent
			parent.Subs[sub] = cmd
		}
	}
}

// buildACLAll lists the served and ACL-only top-level commands in name
// order (Engine.aclAll).
func (e *Engine) buildACLAll() {
	all := append([]*Command(nil), e.cmdList...)
	for _, cmd := range e.aclOnly {
		all = append(all, cmd)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	e.aclAll = all
}

// aclCommands returns the top-level commands ACL rules go through: the
// served ones and, once FinishCommands has run, the ACL-only ones.
func (e *Engine) aclCommands() []*Command {
	if e.aclAll != nil {
		return e.aclAll
	}
	return e.cmdList
}
