package engine

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// ACL users and their permissions, following Redis 7.0's src/acl.c: users
// with passwords and flags, each with a root selector and any number of
// further selectors, a selector granting commands (by command, first
// argument or category), key patterns (read, write or both) and pub/sub
// channel patterns. A command is allowed when one selector allows it
// whole: the command, every key for the access the command makes, every
// channel.
//
// # Concurrency
//
// A user's rules are immutable once built and swapped whole
// (ACLUser.rules): ACL SETUSER builds a copy, changes it and stores it, so
// a connection checking a command reads one consistent set of rules
// without a lock, and sees a change from its next command on, as Redis's
// clients share the user object. The user table (ACL.users) and the log
// are guarded by ACL.mu.
//
// # Cost
//
// A user whose root selector has every command, key and channel (the
// default user as Redis starts it) is marked full when its rules are
// built: the dispatcher's check for it is one atomic pointer load and one
// predictable branch, no map lookup, no allocation.

// ACL check results, as Redis's ACL_* codes (a higher one is the more
// relevant error when no selector allows a command).
const (
	aclOK            = 0
	aclDeniedCmd     = 1
	aclDeniedKey     = 2
	aclDeniedAuth    = 3
	aclDeniedChannel = 4
)

// Key pattern permissions (ACL_READ_PERMISSION, ACL_WRITE_PERMISSION).
const (
	aclRead  = 1
	aclWrite = 2
	aclAll   = aclRead | aclWrite
)

// aclBits is the size of a selector's command bitmap; the last bit is
// set only by +@all (allcommands), so that rules describe as starting
// from +@all (Redis's USER_COMMAND_BITS_COUNT and its "future commands"
// bit).
const (
	aclBits      = 1024
	aclFutureBit = aclBits - 1
)

// ACL error texts (src/acl.c, src/server.c, src/multi.c, src/script.c).
const (
	ErrNoPermCmd     = "NOPERM this user has no permissions to run the '%s' command"
	ErrNoPermKey     = "NOPERM this user has no permissions to access one of the keys used as arguments"
	ErrNoPermChannel = "NOPERM this user has no permissions to access one of the channels used as arguments"
	errExecNoPerm    = "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: "
)

// aclSetError is why an ACL rule was refused (ACLSetUserStringError).
type aclSetError string

const (
	aclErrSyntax       aclSetError = "Syntax error"
	aclErrUnknown      aclSetError = "Unknown command or category name in ACL"
	aclErrKeysAfterAll aclSetError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	aclErrChanAfterAll aclSetError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	aclErrNoSuchPass   aclSetError = "The password you are trying to remove from the user does not exist"
	aclErrBadHash      aclSetError = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	aclErrFirstArgSub  aclSetError = "Allowing first-arg of a subcommand is not supported"
	// AclErrDuplicate is the reason for a user defined twice in config files.
	AclErrDuplicate = "Duplicate user found. A user can only be defined once in config files"
)

// keyPattern is a ~, %R~, %W~ or %RW~ rule.
type keyPattern struct {
	pat   string
	flags uint8 // aclRead|aclWrite
}

func (p keyPattern) String() string {
	switch p.flags {
	case aclRead:
		return "%R~" + p.pat
	case aclWrite:
		return "%W~" + p.pat
	}
	return "~" + p.pat
}

// aclSelector is Redis's aclSelector: one set of permissions.
type aclSelector struct {
	root                              bool
	allKeys, allChannels, allCommands bool
	cmds                              [aclBits / 64]uint64
	firstArgs                         map[int][]string // command id -> allowed first arguments
	keys                              []keyPattern
	channels                          []string
}

func (s *aclSelector) clone() *aclSelector {
	c := *s
	c.keys = append([]keyPattern(nil), s.keys...)
	c.channels = append([]string(nil), s.channels...)
	if s.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			c.firstArgs[id] = append([]string(nil), a...)
		}
	}
	return &c
}

func (s *aclSelector) bit(id int) bool {
	if id < 0 || id >= aclBits {
		return false
	}
	return s.cmds[id/64]&(1<<(id%64)) != 0
}

func (s *aclSelector) setBit(id int, on bool) {
	if id < 0 || id >= aclBits {
		return
	}
	if on {
		s.cmds[id/64] |= 1 << (id % 64)
	} else {
		s.cmds[id/64] &^= 1 << (id % 64)
		s.allCommands = false
	}
}

// aclRules is a user's state: flags, password hashes and selectors. It
// is never changed once stored in an ACLUser (see the package comment).
type aclRules struct {
	on, nopass bool
	sanitize   uint8    // 0, sanitizePayload or skipSanitizePayload
	passwords  []string // lowercase hex SHA-256, in the order added
	sels       []*aclSelector
	// full: the root selector allows every command, key and channel.
	full bool
}

const (
	sanitizePayload     = 1
	skipSanitizePayload = 2
)

func (r *aclRules) clone() *aclRules {
	c := *r
	c.passwords = append([]string(nil), r.passwords...)
	c.sels = make([]*aclSelector, len(r.sels))
	for i, s := range r.sels {
		c.sels[i] = s.clone()
	}
	return &c
}

// ACLUser is a user. Connections hold it (Client.ACL) and see changes
// to its rules from their next command.
type ACLUser struct {
	Name  string
	acl   *ACL
	rules atomic.Pointer[aclRules]
}

// On reports whether the user is enabled.
func (u *ACLUser) On() bool { return u.rules.Load().on }

// NoPass reports whether the user takes any password.
func (u *ACLUser) NoPass() bool { return u.rules.Load().nopass }

// CheckPassword reports whether pass is one of the user's passwords (or
// the user is nopass); it does not look at on/off. Digests are compared
// in constant time, every one every time.
func (u *ACLUser) CheckPassword(pass []byte) bool {
	r := u.rules.Load()
	if r.nopass {
		return true
	}
	d := sha256.Sum256(pass)
	var h [64]byte
	hex.Encode(h[:], d[:])
	ok := 0
	for _, p := range r.passwords {
		if len(p) == len(h) {
			ok |= subtle.ConstantTimeCompare(h[:], []byte(p))
		}
	}
	return ok == 1
}

// ACL is the server's users and ACL log.
type ACL struct {
	e     *Engine
	mu    sync.Mutex
	users map[string]*ACLUser
	def   *ACLUser
	// pubsubAll: new users get allchannels (acl-pubsub-default).
	pubsubAll atomic.Bool
	log       aclLog
	// ClientInfo describes a client for the ACL log (the server's CLIENT
	// INFO line); nil gives "".
	ClientInfo func(*Client) string
}

// ACL returns the engine's users.
func (e *Engine) ACL() *ACL { return &e.acl }

func (a *ACL) init(e *Engine) {
	a.e = e
	a.users = map[string]*ACLUser{}
	a.log.max.Store(128)
	a.def = a.newUser("default")
	a.store(a.def, a.defaultRules())
}

// defaultRules are the default user's rules as Redis starts
// (ACLCreateDefaultUser).
func (a *ACL) defaultRules() *aclRules {
	r := a.newRules()
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = a.applyUserOp(r, op)
	}
	return r
}

// SetPubsubDefault sets acl-pubsub-default: true for allchannels.
func (a *ACL) SetPubsubDefault(all bool) { a.pubsubAll.Store(all) }

// newRules is a new user's state: off, and a root selector with no
// permissions (channels per acl-pubsub-default).
func (a *ACL) newRules() *aclRules {
	return &aclRules{sels: []*aclSelector{a.newSelector(true)}}
}

func (a *ACL) newSelector(root bool) *aclSelector {
	return &aclSelector{root: root, allChannels: a.pubsubAll.Load()}
}

// newUser adds a user with no permissions (a.mu held, or at init).
func (a *ACL) newUser(name string) *ACLUser {
	u := &ACLUser{Name: name, acl: a}
	u.rules.Store(a.newRules())
	a.users[name] = u
	return u
}

func (a *ACL) store(u *ACLUser, r *aclRules) {
	root := r.sels[0]
	r.full = root.allCommands && root.allKeys && root.allChannels
	u.rules.Store(r)
}

// Default returns the default user.
func (a *ACL) Default() *ACLUser { return a.def }

// User returns the user called name, or nil.
func (a *ACL) User(name string) *ACLUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// Users returns every user, sorted by name (as Redis's radix tree).
func (a *ACL) Users() []*ACLUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*ACLUser, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Authenticate returns the user called name when it exists, is on and
// pass is one of its passwords; nil otherwise.
func (a *ACL) Authenticate(name, pass []byte) *ACLUser {
	a.mu.Lock()
	u := a.users[string(name)]
	a.mu.Unlock()
	if u == nil || !u.On() || !u.CheckPassword(pass) {
		return nil
	}
	return u
}

// SetDefaultPassword is requirepass: the default user's passwords become
// pass alone, or nopass when pass is "" (ACLUpdateDefaultUserPassword).
func (a *ACL) SetDefaultPassword(pass string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.def.rules.Load().clone()
	_ = a.applyUserOp(r, "resetpass")
	if pass != "" {
		_ = a.applyUserOp(r, ">"+pass)
	} else {
		_ = a.applyUserOp(r, "nopass")
	}
	a.store(a.def, r)
}

// MergeSelectorArgs joins a selector spread over several arguments
// ("(~a" "+get)") into one, as ACLMergeSelectorArguments. On an
// unmatched parenthesis it returns nil and the index of the argument
// that opened it.
func MergeSelectorArgs(ops []string) ([]string, int) {
	out := make([]string, 0, len(ops))
	open := -1
	var sel string
	for j, op := range ops {
		if open == -1 && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			sel, open = op, j
			continue
		}
		if open != -1 {
			sel += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				out = append(out, sel)
			}
			continue
		}
		out = append(out, op)
	}
	if open != -1 {
		return nil, open
	}
	return out, -1
}

// SetUser applies ACL rules to the user called name, creating it when
// it does not exist, as ACL SETUSER: every rule is checked on a copy
// before any takes effect. It returns the error reply text ("" on
// success) and, for an existing user, its rules before and after (the
// caller disconnects pub/sub clients whose channels were revoked).
func (a *ACL) SetUser(name string, ops []string) (errMsg string, created bool) {
	merged, bad := MergeSelectorArgs(ops)
	if merged == nil {
		return "ERR Unmatched parenthesis in acl selector starting at '" + cstr(ops[bad]) + "'.", false // %s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var r *aclRules
	if u != nil {
		r = u.rules.Load().clone()
	} else {
		r = a.newRules()
	}
	for _, op := range merged {
		if err := a.applyUserOp(r, op); err != "" {
			return "ERR Error in ACL SETUSER modifier '" + cstr(op) + "': " + string(err), false // %s
		}
	}
	if u == nil {
		u = a.newUser(name)
		created = true
	}
	a.store(u, r)
	return "", created
}

// CheckRules reports whether rules would be accepted for a user of the
// config file or ACL file (ACLAppendUserForLoading): "" when they would,
// else the reason and the index of the offending (merged) rule. Unknown
// commands and categories are not errors here unless strict.
func (a *ACL) CheckRules(ops []string, strict bool) (reason string, bad int) {
	merged, open := MergeSelectorArgs(ops)
	if merged == nil {
		return "Unmatched parenthesis in acl selector starting at '" + ops[open] + "'.", open
	}
	r := a.newRules()
	for j, op := range merged {
		if err := a.applyUserOp(r, op); err != "" && (strict || err != aclErrUnknown) {
			return string(err), j
		}
	}
	return "", -1
}

// RuleError is a rule that could not be applied to a user.
type RuleError struct {
	User, Rule, Reason string
}

// CheckUserRules reports whether rules would be accepted by a config
// file's user directive (ACLAppendUserForLoading): unknown commands and
// categories are found only when the users are loaded. It returns the
// reason and the index of the offending rule among the merged rules.
func CheckUserRules(ops []string) (reason string, bad int) {
	var a ACL
	return a.CheckRules(ops, false)
}

// Replace installs users (names[i] with rules[i]) in place of every user
// but default, as start-up and ACL LOAD do: default, when listed, is
// reset and given its rules, and otherwise gets Redis's start-up rules
// with requirepass as its password when that is set. Every rule is
// checked before anything changes. It returns the users replaced (their
// clients must be disconnected), or the first bad rule.
func (a *ACL) Replace(names []string, rules [][]string, requirepass string) ([]*ACLUser, *RuleError) {
	built := make([]*aclRules, len(names))
	var defRules *aclRules
	for i, name := range names {
		merged, open := MergeSelectorArgs(rules[i])
		if merged == nil {
			return nil, &RuleError{User: name, Rule: rules[i][open], Reason: "Unmatched parenthesis in acl selector starting at '" + rules[i][open] + "'."}
		}
		r := a.newRules()
		if name == "default" {
			_ = a.applyUserOp(r, "reset")
		}
		for _, op := range merged {
			if err := a.applyUserOp(r, op); err != "" {
				return nil, &RuleError{User: name, Rule: op, Reason: string(err)}
			}
		}
		built[i] = r
		if name == "default" {
			defRules = r
		}
	}
	if defRules == nil {
		defRules = a.defaultRules()
		if requirepass != "" {
			_ = a.applyUserOp(defRules, "resetpass")
			_ = a.applyUserOp(defRules, ">"+requirepass)
		}
	}
	return a.install(names, built, defRules), nil
}

// denyAll is the rules of a deleted user: its connections, closing, can
// run nothing.
var denyAll = &aclRules{sels: []*aclSelector{{root: true}}}

// DelUser deletes users; it returns the deleted ones (their clients must
// be disconnected) or an error text when one of them is "default".
func (a *ACL) DelUser(names []string) ([]*ACLUser, string) {
	for _, n := range names {
		if n == "default" {
			return nil, "ERR The 'default' user cannot be removed"
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone []*ACLUser
	for _, n := range names {
		if u := a.users[n]; u != nil {
			delete(a.users, n)
			u.rules.Store(denyAll)
			gone = append(gone, u)
		}
	}
	return gone, ""
}

// applyUserOp is ACLSetUser: one rule applied to r.
func (a *ACL) applyUserOp(r *aclRules, op string) aclSetError {
	if op == "" {
		return ""
	}
	switch lop := LowerASCII(cstr(op)); { // strcasecmp
	case lop == "on":
		r.on = true
	case lop == "off":
		r.on = false
	case lop == "skip-sanitize-payload":
		r.sanitize = skipSanitizePayload
	case lop == "sanitize-payload":
		r.sanitize = sanitizePayload
	case lop == "nopass":
		r.nopass, r.passwords = true, nil
	case lop == "resetpass":
		r.nopass, r.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		var h string
		if op[0] == '>' {
			d := sha256.Sum256([]byte(op[1:]))
			h = hex.EncodeToString(d[:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = op[1:]
		}
		if !contains(r.passwords, h) {
			r.passwords = append(r.passwords, h)
		}
		r.nopass = false
	case op[0] == '<' || op[0] == '!':
		var h string
		if op[0] == '<' {
			d := sha256.Sum256([]byte(op[1:]))
			h = hex.EncodeToString(d[:])
		} else {
			if !validHash(op[1:]) {
				return aclErrBadHash
			}
			h = op[1:]
		}
		i := indexOf(r.passwords, h)
		if i < 0 {
			return aclErrNoSuchPass
		}
		r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := a.newSelector(false)
		inner, _ := SplitArgs(op[1 : len(op)-1]) // unbalanced quotes: no rules, as sdssplitargs
		for _, iop := range inner {
			if err := a.applySelectorOp(s, iop); err != "" {
				return err
			}
		}
		r.sels = append(r.sels, s)
	case lop == "clearselectors":
		r.sels = r.sels[:1]
	case lop == "reset":
		for _, o := range []string{"resetpass", "resetkeys", "resetchannels"} {
			_ = a.applyUserOp(r, o)
		}
		if a.pubsubAll.Load() {
			_ = a.applyUserOp(r, "allchannels")
		}
		for _, o := range []string{"off", "sanitize-payload", "clearselectors", "-@all"} {
			_ = a.applyUserOp(r, o)
		}
	default:
		return a.applySelectorOp(r.sels[0], op)
	}
	return ""
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool { return indexOf(list, s) >= 0 }

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// hasSpace reports whether s has whitespace or NUL (ACLStringHasSpaces).
func hasSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f', 0:
			return true
		}
	}
	return false
}

// HasSpace reports whether a user name has whitespace or NUL, which
// Redis refuses.
func HasSpace(s string) bool { return hasSpace(s) }

// applySelectorOp is ACLSetSelector: one rule applied to a selector.
//
// Redis compares the words with strcasecmp and looks commands and
// categories up by C string: they end at a NUL byte (cop), where
// patterns and passwords are the whole op.
func (a *ACL) applySelectorOp(s *aclSelector, op string) aclSetError {
	cop := cstr(op)
	lop := LowerASCII(cop)
	switch {
	case lop == "allkeys" || cop == "~*":
		s.allKeys, s.keys = true, nil
	case lop == "resetkeys":
		s.allKeys, s.keys = false, nil
	case lop == "allchannels" || cop == "&*":
		s.allChannels, s.channels = true, nil
	case lop == "resetchannels":
		s.allChannels, s.channels = false, nil
	case lop == "allcommands" || lop == "+@all":
		for i := range s.cmds {
			s.cmds[i] = ^uint64(0)
		}
		s.allCommands, s.firstArgs = true, nil
	case lop == "nocommands" || lop == "-@all":
		s.cmds = [aclBits / 64]uint64{}
		s.allCommands, s.firstArgs = false, nil
	case op[0] == '~' || op[0] == '%':
		if s.allKeys {
			return aclErrKeysAfterAll
		}
		flags, off := uint8(0), 1
		if op[0] == '%' {
			for ; off < len(op); off++ {
				c := op[off]
				if (c == 'R' || c == 'r') && flags&aclRead == 0 {
					flags |= aclRead
				} else if (c == 'W' || c == 'w') && flags&aclWrite == 0 {
					flags |= aclWrite
				} else if c == '~' {
					off++
					break
				} else {
					return aclErrSyntax
				}
			}
			if flags == 0 {
				// As Redis since the fix for CVE-2024-31227 (Debian's
				// 7.0.15 has it): 7.0.15 as released accepts "%~x" and
				// then cannot describe the pattern (it panics).
				return aclErrSyntax
			}
		} else {
			flags = aclAll
		}
		pat := op[off:]
		if hasSpace(pat) {
			return aclErrSyntax
		}
		found := false
		for i := range s.keys {
			if s.keys[i].pat == pat {
				s.keys[i].flags |= flags
				found = true
				break
			}
		}
		if !found {
			s.keys = append(s.keys, keyPattern{pat: pat, flags: flags})
		}
		s.allKeys = false
	case op[0] == '&':
		if s.allChannels {
			return aclErrChanAfterAll
		}
		pat := op[1:]
		if hasSpace(pat) {
			return aclErrSyntax
		}
		if !contains(s.channels, pat) {
			s.channels = append(s.channels, pat)
		}
		s.allChannels = false
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := cop[1:]
		bar := strings.LastIndexByte(name, '|')
		if bar < 0 {
			cmd := a.e.aclLookup(name)
			if cmd == nil {
				return aclErrUnknown
			}
			s.changePerm(cmd, true)
			return ""
		}
		cmd := a.e.aclLookup(name[:bar])
		if cmd == nil {
			return aclErrUnknown
		}
		if cmd.parent != nil {
			return aclErrFirstArgSub
		}
		sub := name[bar+1:]
		if sub == "" {
			return aclErrSyntax
		}
		if cmd.Subs != nil {
			sc := a.e.aclLookup(name)
			if sc == nil {
				return aclErrUnknown
			}
			s.changePerm(sc, true)
			return ""
		}
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		for _, x := range s.firstArgs[cmd.aclID] {
			if EqualFoldASCII(x, sub) {
				return ""
			}
		}
		s.firstArgs[cmd.aclID] = append(s.firstArgs[cmd.aclID], sub)
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		cmd := a.e.aclLookup(cop[1:])
		if cmd == nil {
			return aclErrUnknown
		}
		s.changePerm(cmd, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		cat := aclCategoryByName(op[2:])
		if cat == 0 {
			return aclErrUnknown
		}
		a.e.setCategory(s, cat, op[0] == '+')
	default:
		return aclErrSyntax
	}
	return ""
}

// changePerm allows or denies a command, and all of a container's
// subcommands (ACLChangeSelectorPerm).
func (s *aclSelector) changePerm(cmd *Command, allow bool) {
	s.setBit(cmd.aclID, allow)
	delete(s.firstArgs, cmd.aclID)
	for _, sub := range cmd.Subs {
		s.setBit(sub.aclID, allow)
	}
}

// setCategory allows or denies every command of a category.
func (e *Engine) setCategory(s *aclSelector, cat uint64, allow bool) {
	e.eachACLCommand(func(cmd *Command) {
		if cmd.aclCats&cat != 0 {
			s.changePerm(cmd, allow)
		}
	})
}

// eachACLCommand calls f for every command, each container followed by
// its subcommands, in name order.
func (e *Engine) eachACLCommand(f func(cmd *Command)) {
	for _, cmd := range e.aclCommands() {
		f(cmd)
		for _, sub := range sortedSubs(cmd) {
			f(sub)
		}
	}
}

// aclLookup finds a command by "name" or "container|sub", strictly (a
// command without subcommands given one is not found), as Redis's
// lookupCommandBySds.
func (e *Engine) aclLookup(name string) *Command {
	if e == nil {
		return nil
	}
	base, sub, hasSub := strings.Cut(name, "|")
	if hasSub && strings.Contains(sub, "|") {
		return nil
	}
	// ASCII case only, as Redis's dict compares names (strcasecmp): a
	// Kelvin sign is no K
	base = LowerASCII(base)
	cmd := e.origCmds[base] // by its own name, whatever rename-command did (Rename)
	if cmd == nil {
		cmd = e.aclOnly[base] // named by a rule, not served (makeUnserved)
	}
	if cmd == nil || !hasSub {
		return cmd
	}
	if cmd.Subs == nil {
		return nil
	}
	return cmd.Subs[LowerASCII(sub)]
}

// ---- the checks ----

// aclKeys finds the key arguments of args and the access each gets, as
// Redis's getKeysFromCommandWithSpecs: by the key specifications, unless
// their flags vary with the arguments (SET, BITFIELD: the command's own
// rule) or they cannot be followed (then the command's key finder, every
// key taken as read and written).
func aclKeys(cmd *Command, args [][]byte, out []keyRef) []keyRef {
	switch cmd.aclKeys { // direct calls: out, on the caller's stack, does not escape
	case aclKeysSet:
		return setKeys(args, out)
	case aclKeysBitfield:
		return bitfieldKeys(args, out)
	case aclKeysSort, aclKeysSortRO:
		return sortKeyRefs(args, out, cmd.aclKeys == aclKeysSortRO)
	}
	if cmd.keySpecs != nil {
		if keys, ok := keysBySpecs(cmd.keySpecs, args, out); ok {
			return keys
		}
		out = out[:0]
	}
	if cmd.Keys != nil {
		for _, p := range cmd.Keys(args) {
			out = append(out, keyRef{pos: p, flags: ksRw | ksAccess | ksUpdate})
		}
		return out
	}
	if cmd.keySpecs == nil && cmd.FirstKey > 0 {
		last := cmd.LastKey
		if last < 0 {
			last = len(args) + last
		}
		step := max(cmd.Step, 1)
		for p := cmd.FirstKey; p <= last && p < len(args); p += step {
			out = append(out, keyRef{pos: p, flags: ksRw | ksAccess | ksUpdate})
		}
	}
	return out
}

// keyAccess is the permission a key needs for its key spec's flags.
func keyAccess(f keyFlag) uint8 {
	var need uint8
	if f&ksAccess != 0 {
		need |= aclRead
	}
	if f&(ksInsert|ksDelete|ksUpdate) != 0 {
		need |= aclWrite
	}
	return need
}

// checkKey is ACLSelectorCheckKey.
func (s *aclSelector) checkKey(key []byte, f keyFlag) bool {
	if s.allKeys {
		return true
	}
	need := keyAccess(f)
	for _, p := range s.keys {
		if p.flags&need == need && Match([]byte(p.pat), key, false) {
			return true
		}
	}
	return false
}

// checkChannel is ACLCheckChannelAgainstList: a pattern subscription is
// compared literally, a channel matched against the patterns.
func checkChannel(list []string, ch []byte, isPattern bool) bool {
	for _, p := range list {
		if (isPattern && p == string(ch)) || (!isPattern && Match([]byte(p), ch, false)) {
			return true
		}
	}
	return false
}

// Channel kinds of the pub/sub commands (Redis's commands_with_channels).
const (
	chanNone = iota
	chanSubscribe
	chanPSubscribe
	chanPublish
)

// checkCmd is ACLSelectorCheckCmd: aclOK, or why not and the argument.
// keys are the command's key arguments (aclKeys), found by the caller
// when the selector has not allkeys.
func (s *aclSelector) checkCmd(cmd *Command, args [][]byte, keys []keyRef) (int, int) {
	if !s.allCommands && cmd.Flags&FlagNoAuth == 0 && !s.bit(cmd.aclID) {
		fa := s.firstArgs[cmd.aclID]
		idx := 1
		if cmd.parent != nil {
			idx = 2
		}
		ok := false
		if len(args) > idx {
			for _, x := range fa {
				if EqualFoldASCII(string(cstr(args[idx])), x) { // strcasecmp
					ok = true
					break
				}
			}
		}
		if !ok {
			return aclDeniedCmd, 0
		}
	}
	if !s.allKeys && cmd.hasKeys {
		for _, k := range keys {
			if !s.checkKey(args[k.pos], k.flags) {
				return aclDeniedKey, k.pos
			}
		}
	}
	if !s.allChannels && cmd.chanKind != chanNone {
		last := len(args) - 1
		if cmd.chanKind == chanPublish {
			last = min(last, 1)
		}
		for i := 1; i <= last; i++ {
			if !checkChannel(s.channels, args[i], cmd.chanKind == chanPSubscribe) {
				return aclDeniedChannel, i
			}
		}
	}
	return aclOK, 0
}

// check is ACLCheckAllUserCommandPerm: aclOK when one selector allows
// the command, else the most relevant refusal and its argument index.
func (r *aclRules) check(cmd *Command, args [][]byte) (int, int) {
	if r.full {
		return aclOK, 0
	}
	// The keys are found once for all the selectors, into buf (on the
	// stack: a lock client's SET NX PX checks without allocating).
	var buf [8]keyRef
	var keys []keyRef
	found := false
	res, pos := aclDeniedCmd, 0
	for _, s := range r.sels {
		if !found && !s.allKeys && cmd.hasKeys {
			keys, found = aclKeys(cmd, args, buf[:0]), true
		}
		got, p := s.checkCmd(cmd, args, keys)
		if got == aclOK {
			return aclOK, 0
		}
		if got > res || (got == res && p > pos) {
			res, pos = got, p
		}
	}
	return res, pos
}

// CheckChannel reports whether the user may use a channel (or, with
// isPattern, a pattern subscription), as ACLUserCheckChannelPerm.
func (u *ACLUser) CheckChannel(ch []byte, isPattern bool) bool {
	for _, s := range u.rules.Load().sels {
		if s.allChannels || checkChannel(s.channels, ch, isPattern) {
			return true
		}
	}
	return false
}

// AllChannels reports whether some selector of the user has every channel.
func (u *ACLUser) AllChannels() bool {
	for _, s := range u.rules.Load().sels {
		if s.allChannels {
			return true
		}
	}
	return false
}

// Log contexts (ACL_LOG_CTX_*).
const (
	aclCtxToplevel = iota
	aclCtxMulti
	aclCtxLua
)

// aclDenied checks a command of cl against rules r and logs a refusal:
// aclOK, or why not and the offending argument.
func (e *Engine) aclDenied(cl *Client, args [][]byte, cmd *Command, r *aclRules, ctx int) (int, int) {
	res, pos := r.check(cmd, args)
	if res != aclOK {
		e.acl.logDenial(cl, res, ctx, cmd, args, pos)
	}
	return res, pos
}

// noPermText is processCommand's NOPERM reply for a refusal.
func noPermText(res int, cmd *Command) string {
	switch res {
	case aclDeniedCmd:
		return "NOPERM this user has no permissions to run the '" + cmd.Name + "' command"
	case aclDeniedKey:
		return ErrNoPermKey
	default:
		return ErrNoPermChannel
	}
}

// scriptNoPermText is the error of a call a script may not make
// (scriptVerifyACL with getAclErrorMessage).
func scriptNoPermText(res int) string {
	switch res {
	case aclDeniedCmd:
		return "ERR The user executing the script can't run this command or subcommand"
	case aclDeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	default:
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
}

// execNoPermText is EXEC's reply to a queued command no longer allowed.
func execNoPermText(res int) string {
	switch res {
	case aclDeniedCmd:
		return errExecNoPerm + "no permission to execute the command or subcommand"
	case aclDeniedKey:
		return errExecNoPerm + "no permission to touch the specified keys"
	default:
		return errExecNoPerm + "no permission to access one of the channels used as arguments"
	}
}

// DryRun is ACL DRYRUN's check of args (a command already found, arity
// checked) for u: "" when allowed, else Redis's explanation.
func (e *Engine) DryRun(u *ACLUser, cmd *Command, args [][]byte) string {
	res, pos := u.rules.Load().check(cmd, args)
	switch res {
	case aclOK:
		return ""
	case aclDeniedCmd:
		return "This user has no permissions to run the '" + cmd.Name + "' command"
	case aclDeniedKey:
		return "This user has no permissions to access the '" + string(args[pos]) + "' key"
	default:
		return "This user has no permissions to access the '" + string(args[pos]) + "' channel"
	}
}

// Allows reports whether the client's user may run args (cmd, found
// and arity checked), without logging: for layers that decide before
// Exec whether a command will run (MONITOR).
func (cl *Client) Allows(cmd *Command, args [][]byte) bool {
	if cl.ACL == nil {
		return true
	}
	r := cl.ACL.rules.Load()
	if r.full {
		return true
	}
	res, _ := r.check(cmd, args)
	return res == aclOK
}

// Allowed reports whether u may run args (redis.acl_check_cmd).
func (e *Engine) Allowed(u *ACLUser, cmd *Command, args [][]byte) bool {
	if u == nil {
		return true
	}
	res, _ := u.rules.Load().check(cmd, args)
	return res == aclOK
}

// LookupArgs finds the command, or subcommand, args names (nil when
// there is none), as Redis's lookupCommand.
func (e *Engine) LookupArgs(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	cmd := e.Lookup(args[0])
	if cmd == nil || cmd.Subs == nil || len(args) < 2 {
		return cmd
	}
	return lookupSub(cmd, args[1])
}

// ArityOK reports whether n arguments (the name included) suit cmd.
func (cmd *Command) ArityOK(n int) bool { return cmd.arityOK(n) }

// unrestrictedKeyAccess is ACLUserCheckCmdWithUnrestrictedKeyAccess with
// CMD_KEY_ACCESS: whether c's user has a selector that allows the
// command and may read every key (allkeys, or a ~* or %R~* pattern).
// SORT's BY and GET patterns, which name keys no key spec can find, need
// it.
func (c *Ctx) unrestrictedKeyAccess() bool {
	if c.Client == nil || c.Client.ACL == nil {
		return true
	}
	r := c.Client.ACL.rules.Load()
	if r.full {
		return true
	}
	var buf [8]keyRef
	for _, s := range r.sels {
		var keys []keyRef
		if !s.allKeys && c.Cmd.hasKeys {
			keys = aclKeys(c.Cmd, c.Args, buf[:0])
		}
		if res, _ := s.checkCmd(c.Cmd, c.Args, keys); res != aclOK {
			continue
		}
		if s.allKeys {
			return true
		}
		for _, p := range s.keys {
			if p.flags&aclRead == aclRead && p.pat == "*" {
				return true
			}
		}
	}
	return false
}
