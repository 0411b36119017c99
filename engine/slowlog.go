package engine

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// The slow log, as Redis 7's slowlog.c: commands that ran for at least
// slowlog-log-slower-than microseconds (negative: none; 0: every command)
// are kept, newest first, up to slowlog-max-len entries.

// Slow-log defaults and limits (Redis's slowlog.h).
const (
	DefaultSlowlogSlowerThan = 10000 // µs
	DefaultSlowlogMaxLen     = 128
	slowlogMaxArgc           = 32
	slowlogMaxString         = 128
)

// SlowlogEntry is one slow-log record.
type SlowlogEntry struct {
	ID       int64
	Time     int64 // unix seconds
	Duration int64 // µs
	Args     []string
	Addr     string // client "ip:port"
	Name     string // client name
}

// PeerAddr is implemented by the value in Client.Conn when the client has
// a network address, which the slow log reports.
type PeerAddr interface {
	PeerAddr() string
}

type slowlog struct {
	slowerThan atomic.Int64
	maxLen     atomic.Int64
	mu         sync.Mutex
	entries    []SlowlogEntry // oldest first
	nextID     int64
}

func (l *slowlog) init() {
	l.slowerThan.Store(DefaultSlowlogSlowerThan)
	l.maxLen.Store(DefaultSlowlogMaxLen)
}

func (l *slowlog) wants(us int64) bool {
	t := l.slowerThan.Load()
	return t >= 0 && us >= t && l.maxLen.Load() > 0
}

func (l *slowlog) add(c *Ctx, us int64) {
	// dated when it is logged, after the command ran, as Redis's
	// slowlogCreateEntry (time(NULL)): a slow command is dated by its end
	ent := SlowlogEntry{Time: c.Eng.clock.Wall().Unix(), Duration: us, Args: slowlogArgs(c.Args, c.Eng.CommandName(c.Args[0]))}
	if c.Script != nil {
		// a command a script called: Redis logs its Lua client, which has
		// no name and no address (getClientPeerId of no connection)
		ent.Addr = "?:0"
	} else if cl := c.Client; cl != nil {
		ent.Name = cl.Name
		if pa, ok := cl.Conn.(PeerAddr); ok {
			ent.Addr = pa.PeerAddr()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ent.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, ent)
	if n := int(l.maxLen.Load()); len(l.entries) > n {
		drop := len(l.entries) - n
		l.entries = append(l.entries[:0], l.entries[drop:]...)
	}
}

// slowlogArgs copies args for the log, trimmed as Redis trims them: at
// most 32 (the last saying how many more there were), each at most 128
// bytes (then saying how many more bytes), and passwords redacted (name
// is the command's own name: Engine.CommandName).
func slowlogArgs(args [][]byte, name []byte) []string {
	n := min(len(args), slowlogMaxArgc)
	out := make([]string, n)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgc-1 && len(args) > slowlogMaxArgc {
			out[i] = "... (" + strconv.Itoa(len(args)-slowlogMaxArgc+1) + " more arguments)"
			break
		}
		a := args[i]
		if len(a) > slowlogMaxString {
			out[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		} else {
			out[i] = string(a)
		}
	}
	redact(name, args, out)
	return out
}

const redacted = "(redacted)"

// ValidClientName reports whether a client name (or attribute) has only
// the characters Redis allows, '!' through '~' (validateClientName).
func ValidClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// redact hides credentials as Redis's redactClientCommandArgument does:
// every argument of AUTH, the user name and password of HELLO ... AUTH
// (each unless the command is refused first), ACL SETUSER's arguments,
// the values of CONFIG SET's SENSITIVE_CONFIG parameters (in a CONFIG SET
// with whole pairs: Redis checks the count first), MIGRATE's AUTH and
// AUTH2 credentials (MigrateSecrets).
func redact(name []byte, args [][]byte, out []string) {
	switch {
	case EqFold(name, "config") && len(args) >= 4 && len(args)%2 == 0 && EqFold(args[1], "set"):
		for i := 2; i+1 < len(out); i += 2 {
			if EqFold(args[i], "requirepass") || EqFold(args[i], "masterauth") || EqFold(args[i], "masteruser") {
				out[i+1] = redacted
			}
		}
	case EqFold(name, "auth"):
		if len(args) > 3 {
			return // authCommand refuses it before it redacts
		}
		for i := 1; i < len(out); i++ {
			out[i] = redacted
		}
	case EqFold(name, "acl") && len(args) >= 3 && EqFold(args[1], "setuser"):
		// aclCommand redacts the user name and every rule, passwords among
		// them, before it checks any
		for i := 2; i < len(out); i++ {
			if i < slowlogMaxArgc-1 || len(args) <= slowlogMaxArgc {
				out[i] = redacted
			}
		}
	case EqFold(name, "migrate"):
		for _, i := range MigrateSecrets(args) {
			// (not the last place when it says how many more arguments)
			if i < len(out) && (i < slowlogMaxArgc-1 || len(args) <= slowlogMaxArgc) {
				out[i] = redacted
			}
		}
	case EqFold(name, "hello"):
		if len(args) >= 2 {
			// helloCommand refuses a bad protocol version before it redacts
			if v, ok := ParseInt(args[1]); !ok || v < 2 || v > 3 {
				return
			}
		}
		for j := 2; j < len(args); j++ {
			if EqFold(args[j], "auth") && j+2 < len(args) {
				for k := j + 1; k <= j+2 && k < len(out); k++ {
					out[k] = redacted
				}
				j += 2
			} else if EqFold(args[j], "setname") && j+1 < len(args) && ValidClientName(args[j+1]) {
				j++
			} else {
				return // a syntax error: helloCommand reads no further option
			}
		}
	}
}

// SlowlogGet returns up to n entries, newest first (n < 0: all).
func (e *Engine) SlowlogGet(n int) []SlowlogEntry {
	l := &e.obs.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	out := make([]SlowlogEntry, n)
	for i := range out {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

// SlowlogLen returns the number of entries in the slow log.
func (e *Engine) SlowlogLen() int {
	e.obs.slowlog.mu.Lock()
	defer e.obs.slowlog.mu.Unlock()
	return len(e.obs.slowlog.entries)
}

// SlowlogReset empties the slow log; entry ids keep counting.
func (e *Engine) SlowlogReset() {
	e.obs.slowlog.mu.Lock()
	e.obs.slowlog.entries = nil
	e.obs.slowlog.mu.Unlock()
}

// SetSlowlogSlowerThan sets slowlog-log-slower-than in µs (negative
// disables the log, 0 logs every command). CONFIG SET uses it; Redis
// accepts -1 and up.
func (e *Engine) SetSlowlogSlowerThan(us int64) { e.obs.slowlog.slowerThan.Store(us) }

// SetSlowlogMaxLen sets slowlog-max-len (Redis accepts 0 and up). The log
// is trimmed to it when the next entry is added, as in Redis.
func (e *Engine) SetSlowlogMaxLen(n int64) { e.obs.slowlog.maxLen.Store(n) }

// SlowlogSlowerThan and SlowlogMaxLen return the current settings.
func (e *Engine) SlowlogSlowerThan() int64 { return e.obs.slowlog.slowerThan.Load() }
func (e *Engine) SlowlogMaxLen() int64     { return e.obs.slowlog.maxLen.Load() }

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
	"HELP",
	"    Prints this help.",
}

const errSlowlogCount = "ERR count should be greater than or equal to -1"

func registerObserve(e *Engine) {
	e.obs.slowlog.init()
	e.markScriptCommands()
	const f = FlagNoKeys | FlagAdmin | FlagLoading | FlagStale
	e.Register(&Command{Name: "slowlog", Arity: -2, Flags: FlagNoKeys, Group: "server", Summary: "A container for slow log commands.", Subs: map[string]*Command{
		"get":   {Arity: -2, Flags: f, Fn: cmdSlowlogGet},
		"len":   {Arity: 2, Flags: f, Fn: func(c *Ctx) { c.W.WriteInt(int64(c.Eng.SlowlogLen())) }},
		"reset": {Arity: 2, Flags: f, Fn: func(c *Ctx) { c.Eng.SlowlogReset(); c.W.WriteStatus(statusOK) }},
		"help":  {Arity: 2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: cmdSlowlogHelp},
	}})
	e.RegisterParam("slowlog-log-slower-than", func() string { return strconv.FormatInt(e.SlowlogSlowerThan(), 10) })
	e.RegisterParam("slowlog-max-len", func() string { return strconv.FormatInt(e.SlowlogMaxLen(), 10) })
	e.RegisterParam("latency-monitor-threshold", func() string { return strconv.FormatInt(e.obs.latMon.threshold.Load(), 10) })
}

// SLOWLOG GET [count]
func cmdSlowlogGet(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(ErrSubcommandSyntax(c.Args))
		return
	}
	n := int64(10)
	if len(c.Args) == 3 {
		v, ok := parseInt(c.Args[2])
		if !ok || v < -1 {
			c.W.WriteError(errSlowlogCount)
			return
		}
		n = v
	}
	if n > 1<<31 {
		n = 1 << 31
	}
	ents := c.Eng.SlowlogGet(int(n))
	c.W.WriteArray(len(ents))
	for _, ent := range ents {
		c.W.WriteArray(6)
		c.W.WriteInt(ent.ID)
		c.W.WriteInt(ent.Time)
		c.W.WriteInt(ent.Duration)
		c.W.WriteArray(len(ent.Args))
		for _, a := range ent.Args {
			c.W.WriteBulkString(a)
		}
		c.W.WriteBulkString(ent.Addr)
		c.W.WriteBulkString(ent.Name)
	}
}

// SLOWLOG HELP
func cmdSlowlogHelp(c *Ctx) { WriteHelp(c, slowlogHelp) }
