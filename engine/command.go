package engine

import (
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Flag describes a command, as in Redis's command table. The dispatcher
// checks flags centrally for network and script calls alike.
type Flag uint32

// Command flags.
const (
	FlagWrite     Flag = 1 << iota // modifies the keyspace
	FlagReadonly                   // reads the keyspace
	FlagFast                       // O(1) or O(log n)
	FlagNoScript                   // refused inside scripts
	FlagNoKeys                     // connection-level: runs without the keyspace lock
	FlagAllowBusy                  // served while a script is busy
	FlagNoAuth                     // served before authentication
	FlagAdmin
	FlagDenyOOM
	FlagLoading
	FlagStale
	FlagPubSub
	FlagBlocking
	// FlagMovableKeys: the command's keys are found by its Keys function
	// (COMMAND INFO shows "movablekeys", as Redis for a getkeys_proc).
	FlagMovableKeys
	// FlagNoMandatoryKeys: the command may be given no keys at all (EVAL
	// with numkeys 0), so finding none is no error (COMMAND GETKEYS).
	FlagNoMandatoryKeys
	// FlagNoMulti: refused inside MULTI with ErrNoMulti, as Redis's
	// CMD_NO_MULTI (SYNC, PSYNC, SAVE, SHUTDOWN in 7.0; multi.go).
	FlagNoMulti
	// FlagSkipSlowlog: never in the slow log (EXEC: its commands are).
	FlagSkipSlowlog
	// FlagSkipMonitor, FlagNoAsyncLoading: shown by COMMAND INFO as Redis
	// flags them. (MONITOR's choices are server/monitor.go's; tumbler
	// never loads asynchronously.)
	FlagSkipMonitor
	FlagNoAsyncLoading
	// FlagAsking: shown by COMMAND INFO as Redis flags RESTORE-ASKING
	// (CMD_ASKING: served for a cluster's importing slot).
	FlagAsking

	// flagStats: the command reads or resets the counters a Ctx's
	// PendingStats holds (INFO, CONFIG RESETSTAT), which are flushed
	// before it runs. Not shown by COMMAND.
	flagStats
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagSkipMonitor, "skip_monitor"}, {FlagSkipSlowlog, "skip_slowlog"},
	{FlagAsking, "asking"}, {FlagFast, "fast"}, {FlagNoAuth, "no_auth"}, {FlagNoMandatoryKeys, "no_mandatory_keys"},
	{FlagNoAsyncLoading, "no_async_loading"}, {FlagNoMulti, "no_multi"},
	{FlagMovableKeys, "movablekeys"}, {FlagAllowBusy, "allow_busy"},
}

// Command is one entry of the command table.
type Command struct {
	Name  string // lower case; "container|sub" for subcommands
	Arity int    // N: exactly N args (name included); -N: at least N
	Flags Flag
	// FirstKey, LastKey and Step locate key arguments (as COMMAND INFO
	// reports them); LastKey -1 means the last argument.
	FirstKey, LastKey, Step int
	// Keys, when set, finds the positions of the key arguments of a
	// command whose keys move (a numkeys argument says how many), as
	// Redis's getkeys_proc; the command has FlagMovableKeys.
	Keys    func(args [][]byte) []int
	Group   string
	Summary string
	Fn      func(c *Ctx)
	// Subs holds subcommands by lower-case name (CLIENT, SCRIPT, ...).
	Subs map[string]*Command

	// Guard, when set, refuses the command before authentication and
	// ACL checks, and before MULTI queues it (Redis's protected commands:
	// DEBUG, MODULE LOAD); the handler checks again (a queued command).
	Guard func(c *Ctx) string

	// ACL data, set by Register (acl.go, acl_spec.go): the command's bit
	// in selectors, its categories, its key specifications and whether it
	// has keys at all, its key finder when its key access varies with the
	// arguments, its pub/sub channels, and its container.
	aclID    int
	aclCats  uint64
	tips     []string // COMMAND INFO's tips (Redis 7.0's, from the same table)
	keySpecs []keySpec
	hasKeys  bool
	aclKeys  uint8 // aclKeysSet, aclKeysBitfield: the key access varies with the arguments
	chanKind uint8
	parent   *Command
	noTouch  bool   // its lookups do not set a key's access time (noTouchCommands)
	nameB    []byte // Name, for NameBytes
	// exclusive: the command may run a script (EVAL, FCALL and their
	// kinds, EXEC), so it holds scriptRW for writing (execLocked): no
	// keyless command runs in the middle of it (execShared).
	exclusive bool
	// prepare, when set, runs before the keyspace lock is taken (or
	// before a command that takes none), for a command that will run now
	// (when queued by MULTI, before EXEC takes the lock: prepareQueued),
	// so that slow work not needing the keyspace (compiling a large
	// script) does not hold other clients up. It reports how long it
	// took, counted as the command's time.
	prepare func(c *Ctx) time.Duration

	stats cmdStats // obs: INFO commandstats counters (engine/observe.go)
}

// NameBytes is the command's name (lower case; "container|sub"), which
// rename-command does not change: the server routes by it.
func (cmd *Command) NameBytes() []byte { return cmd.nameB }

func (cmd *Command) arityOK(n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity
}

// Client is the per-connection state the engine needs. The server owns it
// and keeps its own state in Conn.
type Client struct {
	ID        int64
	Name      string
	LibName   string
	LibVer    string
	NeedsAuth bool // true until the connection authenticates, when a password is set
	User      string
	// ACL is the connection's user, whose permissions every command is
	// checked against (acl.go); nil: no checks (the server's own calls).
	// Set only by the connection's own goroutine.
	ACL  *ACLUser
	Conn any

	tx *multiState // MULTI/WATCH state, nil until first used (multi.go)
	// multiLen is 0 outside MULTI, else 1 + the commands queued: CLIENT
	// LIST reads it from other connections' goroutines (MultiCount).
	multiLen atomic.Int32
	// multiMem is CLIENT LIST's multi-mem: the bytes of the queued
	// commands' arguments, and a pointer for each (Redis's
	// mstate.argv_len_sums); read from other goroutines too.
	multiMem atomic.Int64
	// watchN is how many keys it watches (WatchedCount); read from other
	// goroutines too.
	watchN atomic.Int32
	// Subscribed is set while the connection has pub/sub subscriptions;
	// in RESP2 it then runs only (P|S)(UN)SUBSCRIBE, PING, QUIT and RESET.
	Subscribed bool
	// db is the SELECTed database (databases.go); CLIENT LIST reads it
	// from other goroutines.
	db atomic.Int32
	// TrackKeys is set while CLIENT TRACKING is on (not BCAST): the keys
	// its read-only commands read are reported (SetOnRead).
	TrackKeys bool
	// NoTouch is set while CLIENT NO-TOUCH is on: the keys its commands
	// (and its scripts' commands) look up keep their access time, but for
	// TOUCH's (Redis 7.2's CLIENT_NO_TOUCH). Set by its own goroutine.
	NoTouch bool
	// killed is set when another client closes the connection (Kill).
	killed atomic.Bool
}

// Kill marks the client closed by another (CLIENT KILL): a command of it
// blocked on keys is served nothing from then on, even by a command that
// runs before the client's own goroutine sees the kill (a push later in
// the EXEC that killed it), as Redis frees a killed client at once. Safe
// from any goroutine.
func (cl *Client) Kill() { cl.killed.Store(true) }

// Killed reports whether Kill was called.
func (cl *Client) Killed() bool { return cl.killed.Load() }

// Ctx is one command invocation.
type Ctx struct {
	Eng    *Engine
	Args   [][]byte // Args[0] is the command name as sent
	Now    int64    // monotonic ms, read once per command, frozen in scripts
	W      Writer
	Client *Client
	Cmd    *Command
	Script *ScriptRun // non-nil while running inside a script
	// Prepared is what the command's prepare left for it to run with (a
	// script compiled before the keyspace lock: Precompiler), nil after.
	Prepared any

	// Pending, when set, collects the counters of the commands run with
	// this Ctx (and the calls of its scripts) until FlushStats.
	Pending *PendingStats

	last   cmdCacheEntry // the command this Ctx ran last, as spelled (resolve)
	tap    errTap        // obs: counts the handler's error replies (engine/observe.go)
	clk    int64         // obs: the last clock read (nowNs) timing this command, for chaining (callAt)
	clkEnd bool          // obs: clk also ends the command (a native script: nothing but its reply after its last call)
	prep   time.Duration // obs: what the command's prepare took, before the keyspace lock (callAt adds it)
	chain  bool          // obs: in a batch, clk (the last command's end) starts the next command (StartBatch)
	// Blocking commands (blocking.go): the caller sets CanBlock when it
	// can wait for a blocked client; a command that blocks sets Blocked,
	// and the caller then waits and calls Engine.FinishWait.
	CanBlock bool
	Blocked  *Waiter
	// RestOfExec, set by a command EXEC runs, takes the transaction's
	// later replies (CLIENT REPLY OFF or ON inside MULTI, which act at
	// once in Redis: InExec).
	RestOfExec Writer
}

// ScriptRun is the state of one running script, shared by its nested calls.
type ScriptRun struct {
	ReadOnly bool
	Wrote    bool
	AllowOOM bool // flagged allow-oom: its writes run over maxmemory
	native   bool // run by the NativeRunner: no code runs between its calls (Ctx.Call)
	sub      Ctx
}

// Register adds commands to the table, replacing any of the same name.
// It must not run while commands do.
func (e *Engine) Register(cmds ...*Command) {
	e.callCache = [len(e.callCache)]callCacheEntry{}
	e.cmdGen++ // voids every Ctx's last command (resolve)
	for _, cmd := range cmds {
		name := strings.ToLower(cmd.Name)
		cmd.Name = name
		if cmd.Keys != nil {
			cmd.Flags |= FlagMovableKeys
		}
		for subName, sub := range cmd.Subs {
			if !strings.Contains(sub.Name, "|") {
				sub.Name = name + "|" + subName
			}
			if sub.Group == "" {
				sub.Group = cmd.Group // as Redis's docs file them (COMMAND DOCS, FILTERBY ACLCAT)
			}
			sub.parent = cmd
			sub.noTouch = noTouchCommands[name]
			e.setACLData(sub)
		}
		cmd.noTouch = noTouchCommands[name]
		cmd.nameB = []byte(name)
		e.setACLData(cmd)
		if old := e.cmds[name]; old != nil {
			for i, c := range e.cmdList {
				if c == old {
					e.cmdList = append(e.cmdList[:i], e.cmdList[i+1:]...)
					break
				}
			}
		}
		e.cmds[name] = cmd
		e.cmds[strings.ToUpper(name)] = cmd
		e.origCmds[name] = cmd
		e.cmdList = append(e.cmdList, cmd)
	}
	sort.Slice(e.cmdList, func(i, j int) bool { return e.cmdList[i].Name < e.cmdList[j].Name })
	if e.aclOnly != nil { // registered after FinishCommands: served now
		for _, cmd := range cmds {
			delete(e.aclOnly, cmd.Name)
		}
		e.buildACLAll()
	}
}

// Commands returns the command table sorted by name.
func (e *Engine) Commands() []*Command { return e.cmdList }

// Lookup finds a command by name, case-insensitively, without allocating.
func (e *Engine) Lookup(name []byte) *Command {
	if cmd, ok := e.cmds[string(name)]; ok { // lower case, or upper (Register adds both)
		return cmd
	}
	var buf [32]byte
	if len(name) > len(buf) {
		if e.longNames { // a name given by rename-command
			return e.cmds[LowerASCII(string(name))]
		}
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return e.cmds[string(buf[:len(name)])]
}

// Rename gives the command named from the name to, or takes it out of the
// table when to is "", as redis.conf's rename-command: the command is
// then known by its new name only, to clients and scripts alike (names
// are case-insensitive), and keeps its own name wherever Redis shows
// that (COMMAND INFO, INFO commandstats, CLIENT LIST's cmd, arity
// errors). ACL rules go on naming commands by their own names, as Redis's
// go by its original command table. The errors are Redis's. It must run
// once the table is complete (after FinishCommands), before commands run.
func (e *Engine) Rename(from, to string) error {
	e.initUnserved()
	lfrom := LowerASCII(from)
	cmd := e.cmds[lfrom]
	switch {
	case cmd != nil:
		delete(e.cmds, lfrom)
		delete(e.cmds, upperASCII(from))
	case e.unserved[lfrom]: // a Redis command tumbler does not serve: only its name moves
		delete(e.unserved, lfrom)
	default:
		return errors.New("No such command in rename-command")
	}
	e.callCache = [len(e.callCache)]callCacheEntry{}
	e.cmdGen++ // voids every Ctx's last command (LookupFor)
	e.renamed = true
	if to == "" {
		for i, c := range e.cmdList {
			if c == cmd {
				e.cmdList = append(e.cmdList[:i:i], e.cmdList[i+1:]...)
				break
			}
		}
		return nil
	}
	lto := LowerASCII(to)
	if e.cmds[lto] != nil || e.unserved[lto] {
		return errors.New("Target command name already exists")
	}
	if cmd == nil {
		e.unserved[lto] = true
		return nil
	}
	e.cmds[lto] = cmd
	e.cmds[upperASCII(to)] = cmd
	if len(to) > 32 {
		e.longNames = true
	}
	return nil
}

// initUnserved fills unserved, once, with the names of Redis 7.0's
// commands tumbler does not serve (makeUnserved), which rename-command
// may name as Redis's own table has them.
func (e *Engine) initUnserved() {
	if e.unserved != nil {
		return
	}
	e.makeUnserved()
	e.unserved = map[string]bool{}
	for name := range e.aclOnly {
		e.unserved[name] = true
	}
}

// CommandNames returns, in lower case, the names rename-command may
// rename now: the served commands' and those of Redis's commands tumbler
// does not serve.
func (e *Engine) CommandNames() []string {
	e.initUnserved()
	var names []string
	for name := range e.cmds {
		if name == LowerASCII(name) {
			names = append(names, name)
		}
	}
	for name := range e.unserved {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Renamed reports whether rename-command has changed the table.
func (e *Engine) Renamed() bool { return e.renamed }

// CommandName is the own name of the command name names (NameBytes), or
// nil when it names none; while no command is renamed, name itself, as
// spelled. Code that treats a command by its name (MONITOR's redaction,
// the slow log's, the server's routing) asks it, so that a renamed
// command is treated as itself, as Redis treats c->cmd.
func (e *Engine) CommandName(name []byte) []byte {
	if !e.renamed {
		return name
	}
	if cmd := e.Lookup(name); cmd != nil {
		return cmd.nameB
	}
	return nil
}

// LowerASCII and upperASCII change the case of ASCII letters only, as
// Redis's command table compares names (strcasecmp) and its config
// parser lowers directive names (sdstolower): unlike strings.ToLower,
// the Kelvin sign stays no "k" and bytes that are no UTF-8 stay as they
// are. LowerASCII returns s itself when it has no upper-case letter.
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			var b strings.Builder
			b.Grow(len(s))
			b.WriteString(s[:i])
			for ; i < len(s); i++ {
				b.WriteByte(lower(s[i]))
			}
			return b.String()
		}
	}
	return s
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// LookupFor is Lookup of the name of c's command (c.Args[0], which must
// exist) for a client that sends it again and again: a client mostly
// sends the command it sent last (a pipeline of acquires, or of
// releases), so c keeps that name as spelled, and its command, and a
// name equal to it is not hashed for the map (2% of a pipelined
// release). Register voids what every Ctx keeps.
func (e *Engine) LookupFor(c *Ctx) *Command {
	name := c.Args[0]
	l := &c.last
	if l.n != 0 && l.gen == e.cmdGen && int(l.n) == len(name) && string(l.name[:l.n]) == string(name) {
		return l.cmd
	}
	cmd := e.Lookup(name)
	if cmd != nil && len(name) <= len(l.name) {
		l.n, l.cmd, l.gen = uint8(copy(l.name[:], name)), cmd, e.cmdGen
	}
	return cmd
}

// callCacheEntry is a name a script called, as it spelled it, and its
// command (lookupCall).
type callCacheEntry struct {
	name [15]byte
	n    uint8 // 0: free
	cmd  *Command
}

// cmdCacheEntry is the name of the last command a client sent, as it
// spelled it, and what it named while the command table was at gen.
type cmdCacheEntry struct {
	callCacheEntry
	gen uint32
}

// lookupCall is Lookup for Ctx.Call, under the keyspace lock: a lock
// script calls the same two or three commands on every run, so the last
// four names found are compared first, as spelled, before the map. Register
// empties the list.
func (e *Engine) lookupCall(name []byte) *Command {
	for i := range e.callCache {
		if ce := &e.callCache[i]; ce.n != 0 && int(ce.n) == len(name) && string(ce.name[:ce.n]) == string(name) {
			return ce.cmd
		}
	}
	cmd := e.Lookup(name)
	if cmd != nil && len(name) > 0 && len(name) <= len(e.callCache[0].name) {
		ce := &e.callCache[e.callNext%uint8(len(e.callCache))]
		e.callNext++
		ce.n = uint8(copy(ce.name[:], name))
		ce.cmd = cmd
	}
	return cmd
}

func lookupSub(cmd *Command, name []byte) *Command {
	var buf [64]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return cmd.Subs[string(buf[:len(name)])]
}

// resolve finds the command (or subcommand) for args and checks arity. On
// failure it returns nil and the error text to reply.
func (e *Engine) resolve(c *Ctx) (*Command, string) {
	args := c.Args
	cmd := e.LookupFor(c)
	if cmd == nil {
		return nil, ErrUnknownCommand(args)
	}
	if cmd.Subs != nil && len(args) >= 2 {
		sub := lookupSub(cmd, args[1])
		if sub == nil {
			return nil, ErrUnknownSubcommand(args[1], upperASCII(string(args[0]))) // as sent (a renamed container's new name)
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		cmd.stats.rejected.Add(1) // obs: rejected_calls (engine/observe.go)
		return nil, ErrWrongArgs(cmd.Name)
	}
	return cmd, ""
}

// Exec runs one command from a client: lookup, arity, authentication, busy
// check, MULTI queueing (multi.go), then the handler under the keyspace
// lock (unless FlagNoKeys).
func (e *Engine) Exec(c *Ctx) {
	if len(c.Args) == 0 {
		return
	}
	cmd, errMsg := e.resolve(c)
	if cmd == nil {
		e.reject(c, nil, errMsg) // reject, not WriteError: flags an open MULTI (multi.go)
		return
	}
	if cl := c.Client; cl != nil {
		// Redis refuses a protected command (DEBUG, MODULE LOAD) first,
		// before NOAUTH and ACL checks, and inside MULTI when queued.
		if cmd.Guard != nil {
			if msg := cmd.Guard(c); msg != "" {
				e.reject(c, cmd, msg)
				return
			}
		}
		if cl.NeedsAuth && cmd.Flags&FlagNoAuth == 0 {
			e.reject(c, cmd, ErrNoAuth)
			return
		}
		// ACL: for a user with every permission, one load and one branch.
		if u := cl.ACL; u != nil {
			if r := u.rules.Load(); !r.full {
				ctx := aclCtxToplevel
				if c.inMulti() {
					ctx = aclCtxMulti
				}
				if res, _ := e.aclDenied(cl, c.Args, cmd, r, ctx); res != aclOK {
					e.reject(c, cmd, noPermText(res, cmd))
					return
				}
			}
		}
	}
	if msg := subscribedRefusal(c, cmd); msg != "" { // pub/sub: RESP2 subscribed mode (pubsub.go)
		e.reject(c, cmd, msg)
		return
	}
	allowBusy := cmd.Flags&FlagAllowBusy != 0
	if !allowBusy && e.Busy() {
		e.reject(c, cmd, e.BusyError())
		return
	}
	if e.denyOOMCall(c, cmd) && e.OutOfMemory() { // maxmemory (memory.go)
		e.reject(c, cmd, ErrOOM) // flags an open MULTI, as Redis's rejectCommand
		return
	}
	if e.noReplicas.Load() && e.writeCall(c, cmd) { // min-replicas-to-write (replicas.go)
		e.reject(c, cmd, ErrNoReplicas)
		return
	}
	if cmd.stats.script {
		e.collectForScript() // maxmemory: a script checks under the lock, where it cannot collect (memory.go)
	}
	c.Cmd = cmd
	c.Eng = e
	if c.WouldQueue(cmd) { // inside MULTI: queued for EXEC, not run (multi.go)
		if allowBusy {
			if e.awaitScripts(c) {
				e.queue(c, cmd)
			}
		} else if !e.queueShared(c, cmd) {
			e.reject(c, cmd, e.BusyError())
		}
		return
	}
	if cmd.Flags&flagStats != 0 {
		e.FlushStats(c) // INFO sees, and CONFIG RESETSTAT clears, this client's commands so far
	}
	if cmd.prepare != nil {
		if c.prep = cmd.prepare(c); c.prep != 0 {
			// Timed from now on, plus prep: in a batch the command's
			// time would start before the prepare, counting it twice.
			c.Unchain()
		}
	}
	if cmd.Flags&FlagNoKeys != 0 || c.watchInMulti(cmd) {
		if allowBusy {
			if !e.awaitScripts(c) {
				return
			}
			e.callNow(c, cmd) // obs: sets c.Now, runs cmd.Fn timed for commandstats and the slow log (engine/observe.go)
		} else if !e.execShared(c, cmd) {
			e.reject(c, cmd, e.BusyError())
			return
		}
		e.countCommand(c) // once it has run, as Redis's call(): INFO does not see itself
	} else {
		e.execLocked(c, cmd, allowBusy)
	}
	c.prep, c.Prepared = 0, nil // (callAt took prep, unless the command was refused after waiting)
}

// noTouchCommands look keys up without it counting as an access (OBJECT
// IDLETIME): Redis's LOOKUP_NOTOUCH (TYPE, TTL, EXISTS...), and the
// commands that read its dictionary directly or only expire keys (OBJECT,
// MEMORY USAGE, SCAN, KEYS, RANDOMKEY).
var noTouchCommands = map[string]bool{"type": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"exists": true, "object": true, "memory": true, "scan": true, "keys": true, "randomkey": true}

// execLocked runs cmd under the keyspace lock. (A function of its own, with
// few returns, so that its defers are open-coded: with Exec's many returns
// the compiler made them runtime defers, about 1% of the CPU of a
// pipelined release.)
func (e *Engine) execLocked(c *Ctx, cmd *Command, allowBusy bool) {
	if cmd.exclusive {
		if !e.scriptRW.TryLock() {
			c.Unchain() // a wait for keyless commands, or a script, is not this command's time
			e.scriptRW.Lock()
		}
		if e.busyYield.Load() {
			e.scriptRW.Unlock()
			c.Unchain()
			if !e.exclusiveOrBusy(allowBusy) {
				e.reject(c, cmd, e.BusyError())
				return
			}
		}
		e.rwWriter = true
		defer e.leaveExclusive()
	}
	if !e.mu.TryLock() {
		c.Unchain() // a wait for another client's command is not this one's time
		e.mu.Lock()
	}
	if e.busyYield.Load() {
		e.mu.Unlock()
		c.Unchain() // a wait for a busy script, or the BUSY reply, is not this command's time
		if !e.lockOrBusy(allowBusy) {
			e.reject(c, cmd, e.BusyError())
			return
		}
	}
	if c.Client != nil && c.Client.Killed() {
		// Killed while it waited for the lock (CLIENT KILL in the EXEC
		// that held it): it runs nothing, as Redis frees a killed client
		// at once, and nobody reads its reply.
		e.mu.Unlock()
		return
	}
	defer e.mu.Unlock()
	defer e.endCommand() // tracking: the command's client (tracking.go)
	e.beginCommand(c)
	e.enterDB(c)        // the client's SELECTed database (databases.go); endCommand goes back to 0
	e.blk.top = cmd     // blocking.go: only a top-level command may block
	e.callNow(c, cmd)   // obs: sets c.Now, runs cmd.Fn timed for commandstats and the slow log (engine/observe.go)
	e.countCommand(c)   // once it has run: an EXEC's or a script's commands count before it
	e.trackRead(c, cmd) // tracking: remember the keys read (tracking.go)
	if len(e.blk.ready) > 0 {
		c.Unchain() // serving other clients is not the next command's time
	}
	e.serveBlocked() // blocking.go: serve clients waiting on keys the command made ready
}

// execShared runs a keyless command (FlagNoKeys, not AllowBusy: ACL,
// CONFIG, CLIENT...) holding scriptRW for reading, so that it never runs
// in the middle of a script, which holds it for writing (execLocked): as
// in Redis, it runs after the script, or gets BUSY (false) once the
// script has passed the busy threshold and yielded (YieldIfBusy).
// Keyless commands still run side by side with each other and with keyed
// ones, which take the keyspace lock.
func (e *Engine) execShared(c *Ctx, cmd *Command) bool {
	if !e.enterShared(c) {
		return false
	}
	defer e.scriptRW.RUnlock() // (deferred: a panicking command must not keep scripts out)
	e.callNow(c, cmd)          // obs: sets c.Now, runs cmd.Fn timed for commandstats and the slow log (engine/observe.go)
	return true
}

// queueShared queues a command inside MULTI as execShared runs one: as
// Redis reads nothing while a script runs, a command sent then is queued
// after the script, or refused BUSY (flagging the transaction) once the
// script is busy.
func (e *Engine) queueShared(c *Ctx, cmd *Command) bool {
	if !e.enterShared(c) {
		return false
	}
	defer e.scriptRW.RUnlock()
	e.queue(c, cmd)
	return true
}

// awaitScripts waits, as a command sent while a script or an EXEC runs
// reaches Redis only once the script is busy or over, for one or the
// other: for scriptRW, which they hold for writing and a busy script
// yields. It holds nothing after: the allow-busy commands that wait here
// (MULTI, DISCARD, SCRIPT KILL...) run whether a script is busy or not.
// Only a client's own commands come here, never those an EXEC runs from
// its queue (callAt), which holds scriptRW itself. It reports false when
// the client was killed while it waited (CLIENT KILL in that EXEC): as
// Redis frees it before reading the command, the command does not run.
func (e *Engine) awaitScripts(c *Ctx) bool {
	if !e.scriptRW.TryRLock() {
		c.Unchain() // a wait for another client's script is not this command's time
		e.waitShared()
		return c.Client == nil || !c.Client.Killed()
	}
	e.scriptRW.RUnlock()
	return true
}

// waitShared waits until scriptRW could be taken for reading: no script
// or EXEC holds it, or a busy script has yielded it (then it reports
// true). A busy script it finds not yielded yet it yields itself, as the
// server's watcher would (YieldIfBusy): an Engine run without one (the
// luavm tests) does not wait for ever.
func (e *Engine) waitShared() (yielded bool) {
	for {
		if e.scriptRW.TryRLock() {
			yielded = e.busyYield.Load()
			e.scriptRW.RUnlock()
			return yielded
		}
		e.gate.Lock()
		start := e.scriptStart.Load()
		if start != 0 && e.Busy() {
			again := e.yielded // yielded, but taken meanwhile by a command that will let go
			e.gate.Unlock()
			if again {
				time.Sleep(time.Millisecond)
			}
			e.YieldIfBusy()
			continue
		}
		if start != 0 {
			if !e.waitEndOrBusy(start) {
				continue // busy now
			}
		} else {
			e.gate.Unlock()
		}
		// The script ended, or none runs (an EXEC between its scripts, a
		// script about to start or end): wait in line. Readers waiting
		// get in before the writers that come after them: a stream of
		// scripts from other clients cannot hold this off.
		e.scriptRW.RLock()
		yielded = e.busyYield.Load()
		e.scriptRW.RUnlock()
		return yielded
	}
}

// enterShared takes scriptRW for reading, or reports false, holding
// nothing, while a busy script has yielded it.
func (e *Engine) enterShared(c *Ctx) bool {
	if !e.scriptRW.TryRLock() {
		c.Unchain() // a wait for another client's script is not this command's time
		e.scriptRW.RLock()
	}
	if e.busyYield.Load() {
		e.scriptRW.RUnlock()
		return false
	}
	return true
}

// WaitScripts waits, as a command sent then reaches Redis only then, for
// every running script and EXEC to end (true) or for a busy script to
// yield (false). SHUTDOWN uses it: it never cuts short an EXEC, nor a
// script it could not stop without NOSAVE.
func (e *Engine) WaitScripts() bool {
	if !e.exclusiveOrBusy(false) {
		return false
	}
	e.scriptRW.Unlock()
	return true
}

// leaveExclusive lets go of scriptRW, which execLocked took for writing.
func (e *Engine) leaveExclusive() {
	e.rwWriter = false
	e.scriptRW.Unlock()
}

// exclusiveOrBusy takes scriptRW for writing, or reports false (the
// caller replies BUSY) while a busy script has yielded it, as lockOrBusy
// does for the keyspace lock.
func (e *Engine) exclusiveOrBusy(allowBusy bool) bool {
	for {
		e.scriptRW.Lock()
		if !e.busyYield.Load() {
			return true
		}
		e.scriptRW.Unlock()
		if !allowBusy {
			return false
		}
		e.waitScriptEnd()
	}
}

// lockOrBusy takes the keyspace lock, or reports false (the caller replies
// BUSY) when it was handed over by a script past the busy threshold: that
// script yields the lock (YieldIfBusy) so that every command queued behind
// it gets BUSY, as Redis answers clients while a slow script runs.
// Commands flagged AllowBusy wait for the script to end instead.
func (e *Engine) lockOrBusy(allowBusy bool) bool {
	for {
		e.mu.Lock()
		if !e.busyYield.Load() {
			return true
		}
		e.mu.Unlock()
		if !allowBusy {
			return false
		}
		e.waitScriptEnd()
	}
}

// waitScriptEnd waits for the running script to end, or a moment when
// none runs (it is taking its locks back).
func (e *Engine) waitScriptEnd() {
	if done := e.scriptDoneChan(); done != nil {
		<-done
	} else {
		time.Sleep(time.Millisecond) // the script is re-taking the lock
	}
}

// YieldIfBusy is called periodically by the server. When the running
// script has passed the busy threshold it releases the keyspace lock on the
// script's behalf (a Go mutex may be unlocked by another goroutine), so
// that commands waiting for it wake, see busyYield and reply BUSY without
// touching the keyspace; the script takes the lock back when it ends.
func (e *Engine) YieldIfBusy() {
	e.gate.Lock()
	defer e.gate.Unlock()
	if e.scriptStart.Load() != 0 && !e.yielded && e.Busy() {
		e.yielded = true
		e.busyYield.Store(true)
		e.mu.Unlock()
		if e.yieldRW {
			e.scriptRW.Unlock() // keyless commands waiting (execShared) wake, and get BUSY too
		}
	}
}

// scriptDoneChan returns a channel closed when the running script ends, or
// nil when no script is running.
func (e *Engine) scriptDoneChan() chan struct{} {
	e.gate.Lock()
	defer e.gate.Unlock()
	if e.scriptStart.Load() == 0 {
		return nil
	}
	if e.scriptDone == nil {
		e.scriptDone = make(chan struct{})
	}
	return e.scriptDone
}

// Call runs a command from inside the script whose context is c, with the
// keyspace lock already held and c's frozen time. The reply goes to w.
func (c *Ctx) Call(args [][]byte, w Writer) {
	e := c.Eng
	// A call refused before it runs counts as an error reply, and as a
	// rejected call of its command, as Redis's scriptCall counts it; the
	// script's own error reply, should it end with this one, is not
	// counted again (WriteErrorNoStats).
	reject := func(cmd *Command, msg string) {
		e.countError(msg)
		if cmd != nil {
			cmd.stats.rejected.Add(1)
		}
		w.WriteError(msg)
	}
	cmd, msg := c.refusal(args, true)
	if msg != "" {
		reject(cmd, msg)
		return
	}
	if cmd.Flags&FlagWrite != 0 && !c.Script.Wrote {
		if !e.scriptWrite() {
			e.countError(ErrScriptKilled) // counted here: the script's reply will not count it again
			w.WriteError(ErrScriptKilled)
			return
		}
		c.Script.Wrote = true
	}
	if cmd.Flags&flagStats != 0 {
		e.FlushStats(c) // as Exec
	}
	sub := &c.Script.sub
	*sub = Ctx{Eng: e, Args: args, Now: c.Now, W: w, Client: c.Client, Cmd: cmd, Script: c.Script, Pending: c.Pending}
	// A native script runs no code between its calls: the clock read that
	// ended the last one (or started the script) starts this one.
	start := c.clk
	if !c.Script.native || start == 0 {
		start = e.nowNs()
	}
	e.callAt(sub, cmd, start) // obs: cmd.Fn(sub), timed for commandstats and the slow log (engine/observe.go)
	e.countCommand(c)         // once it has run, as Redis's call()
	c.clk = sub.clk
	e.trackRead(sub, cmd) // tracking: keys read inside scripts count for the caller (tracking.go)
	sub.Args, sub.W = nil, nil
}

// refusal finds the command a script's call names and why Call refuses
// it before it runs ("": it runs): Redis's scriptCall checks, in its
// order. log records an ACL refusal in ACL LOG.
func (c *Ctx) refusal(args [][]byte, log bool) (*Command, string) {
	e := c.Eng
	cmd := e.lookupCall(args[0])
	if cmd == nil {
		return nil, ErrScriptUnknownCmd
	}
	if cmd.Subs != nil && len(args) >= 2 {
		sub := lookupSub(cmd, args[1])
		if sub == nil {
			// Redis's scriptCall finds no command for an unknown subcommand
			return nil, ErrScriptUnknownCmd
		}
		cmd = sub
	}
	if !cmd.arityOK(len(args)) {
		return cmd, ErrScriptArity
	}
	if cmd.Flags&FlagNoScript != 0 {
		return cmd, ErrScriptNoScript
	}
	if cl := c.Client; cl != nil && cl.ACL != nil { // ACL (acl.go), as Redis's scriptVerifyACL
		if r := cl.ACL.rules.Load(); !r.full {
			res := aclOK
			if log {
				res, _ = e.aclDenied(cl, args, cmd, r, aclCtxLua)
			} else {
				res, _ = r.check(cmd, args)
			}
			if res != aclOK {
				return cmd, scriptNoPermText(res)
			}
		}
	}
	if cmd.Flags&FlagWrite != 0 {
		if c.Script.ReadOnly {
			return cmd, ErrScriptWriteRO
		}
		// min-replicas-to-write (replicas.go), for a script without a
		// shebang (one with it was refused before it ran): only before
		// its first write, as Redis's scriptVerifyWriteCommandAllow.
		if !c.Script.Wrote && e.noReplicas.Load() {
			return cmd, ErrNoReplicas
		}
		// maxmemory (memory.go): only before a script's first write, as Redis.
		if cmd.Flags&FlagDenyOOM != 0 && !c.Script.Wrote && !c.Script.AllowOOM && e.outOfMemoryLocked() {
			return cmd, ErrOOM
		}
	}
	return cmd, ""
}

// CallRefused reports whether Call would not run args as asked: it would
// refuse them (an unknown command, arity, ACL, a read-only script,
// min-replicas-to-write, maxmemory), or the host refuses the write
// (SetWriteGate). A native script program asks before its first call and
// leaves a script whose call would be refused to Lua, whose error reply
// it is. Nothing is logged or counted.
func (c *Ctx) CallRefused(args [][]byte) bool {
	cmd, msg := c.refusal(args, false)
	if msg != "" {
		return true
	}
	g := c.Eng.writeGate
	return g != nil && cmd.Flags&FlagWrite != 0 && g(c, cmd)
}

// CallsFree reports whether nothing could refuse a script's call now but
// its command itself (unknown, arity, no-script): no ACL restriction, no
// read-only script, no min-replicas-to-write or maxmemory to check, no
// write the host refuses. A few loads: a native program asks it first,
// and CallRefused only when it says no.
func (c *Ctx) CallsFree() bool {
	e := c.Eng
	if e.renamed { // a template's command may be unknown now
		return false
	}
	if cl := c.Client; cl != nil && cl.ACL != nil && !cl.ACL.rules.Load().full {
		return false
	}
	if c.Script.ReadOnly || !c.Script.Wrote && (e.noReplicas.Load() || e.mem.max.Load() != 0) {
		return false
	}
	g := e.writeGate
	return g == nil || !g(c, nil)
}

// SetWriteGate installs the host's own refusal of writes (the fixture's
// restart delay, which answers them in its wrapper of the command's
// handler), for CallRefused: whether it refuses the write cmd from c now,
// or (cmd nil) any write. It must be set before commands run.
func (e *Engine) SetWriteGate(refuses func(c *Ctx, cmd *Command) bool) { e.writeGate = refuses }

// Recovered puts c back in order after a command panicked (the server
// answers the panic with an error reply and goes on): its writer is w
// again, not a command's wrapper of it, and it runs no script.
func (c *Ctx) Recovered(w Writer) {
	c.W, c.Script, c.clk, c.clkEnd = w, nil, 0, false
	c.prep, c.Prepared = 0, nil
	c.tap.Writer = nil
}

// Now returns the current monotonic time in ms from the engine's clock.
func (e *Engine) Now() int64 { return e.clock.Mono() }

// scriptBegin and scriptEnd bracket a script run for busy detection. fn
// is the function an FCALL runs, with the FCALL's arguments; nil for an
// EVAL.
func (e *Engine) scriptBegin(fn *Function, args [][]byte) {
	e.gate.Lock()
	e.yielded = false
	e.scriptWrote.Store(false)
	e.killRequested = false
	e.runFn, e.runArgs = fn, args
	e.fnRunning.Store(fn != nil)
	e.yieldRW = e.rwWriter
	e.scriptStart.Store(time.Now().UnixNano())
	e.gate.Unlock()
	e.Stats.ScriptRuns.Add(1)
	select {
	case e.scriptStarted <- struct{}{}:
	default:
	}
}

// BusyError is the reply to a command refused while a script is busy:
// Redis names the command that stops it, SCRIPT KILL for an EVAL's script
// and FUNCTION KILL for a function.
func (e *Engine) BusyError() string {
	if e.fnRunning.Load() {
		return ErrBusyFunction
	}
	return ErrBusy
}

// ScriptStarted receives (coalesced) when a script starts; with
// ScriptStart it lets a watcher sleep until a script could become busy.
func (e *Engine) ScriptStarted() <-chan struct{} { return e.scriptStarted }

// ScriptStart returns when the running script started, or the zero time
// when none is running.
func (e *Engine) ScriptStart() time.Time {
	if ns := e.scriptStart.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// scriptWrite records, before a script's first write, that the script has
// written, unless SCRIPT KILL got there first: the kill decision and the
// first write are ordered under one mutex, so a killed script never writes
// and a script that wrote is never killed.
func (e *Engine) scriptWrite() bool {
	e.gate.Lock()
	defer e.gate.Unlock()
	if e.killRequested {
		return false
	}
	e.scriptWrote.Store(true)
	return true
}

// waitEndOrBusy waits, called with e.gate held, which it lets go, for the
// script that started at start to end (true) or to pass the busy
// threshold (false).
func (e *Engine) waitEndOrBusy(start int64) bool {
	if e.scriptDone == nil {
		e.scriptDone = make(chan struct{})
	}
	done := e.scriptDone
	wait := time.Duration(e.busyThreshold.Load()) - time.Duration(time.Now().UnixNano()-start)
	e.gate.Unlock()
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// busyScript waits, as a command sent while a script or an EXEC runs
// reaches Redis only once a script has passed the busy threshold or the
// script or EXEC has ended, for one or the other: it returns the busy
// script's start (0 when none runs), and its function and FCALL arguments
// (nil for an EVAL), with e.gate held, so that the script stays as
// reported until the caller unlocks it. c is the caller: run by an EXEC,
// which holds scriptRW itself, it waits for nothing.
func (e *Engine) busyScript(c *Ctx) (fn *Function, args [][]byte, start int64) {
	for {
		e.gate.Lock()
		if c.Client != nil && c.Client.Killed() {
			// killed while it waited (CLIENT KILL in the EXEC it waited
			// for): Redis frees the client before it reads the command
			return nil, nil, 0
		}
		start := e.scriptStart.Load()
		if start != 0 && e.Busy() {
			return e.runFn, e.runArgs, start
		}
		if start == 0 && c.InExec() {
			return nil, nil, 0
		}
		if start != 0 {
			if !e.waitEndOrBusy(start) {
				continue // busy now
			}
		} else {
			e.gate.Unlock()
		}
		// The script ended, or none runs; but an EXEC may still run, with
		// a script to come that may be busy before the EXEC ends. Wait
		// for scriptRW, which the EXEC holds, as for the script: for the
		// EXEC to end or to yield a busy script.
		yielded := e.waitShared()
		e.gate.Lock()
		if !yielded {
			return nil, nil, 0 // a moment with no script or EXEC running
		}
		ended := e.scriptStart.Load() == 0
		e.gate.Unlock()
		if ended {
			time.Sleep(time.Millisecond) // the busy script ended: it is taking its locks back
		}
	}
}

// killScript is SCRIPT KILL's (eval) and FUNCTION KILL's decision, made
// once the running script is busy (busyScript). It replies NOTBUSY when no
// script is running, UNKILLABLE once the script has written, and BUSY when
// the script is of the other kind (a function for SCRIPT KILL, an EVAL's
// for FUNCTION KILL), as Redis's scriptKill.
func (e *Engine) killScript(c *Ctx, eval bool) string {
	fn, _, start := e.busyScript(c)
	defer e.gate.Unlock()
	switch {
	case start == 0:
		return ErrNotBusy
	case e.scriptWrote.Load():
		return ErrUnkillable
	case eval && fn != nil:
		return ErrBusyFunction
	case !eval && fn == nil:
		return ErrBusy
	}
	e.killRequested = true
	e.scripter.Kill()
	return ""
}

func (e *Engine) scriptEnd() {
	e.gate.Lock()
	yielded, yieldRW := e.yielded, e.yieldRW
	e.yielded, e.yieldRW = false, false
	e.killRequested = false // the kill was this script's: the next run, native ones too, starts unkilled
	e.scriptStart.Store(0)
	e.runFn, e.runArgs = nil, nil
	e.fnRunning.Store(false)
	if e.scriptDone != nil {
		close(e.scriptDone)
		e.scriptDone = nil
	}
	e.gate.Unlock()
	if yielded {
		// Take back the lock YieldIfBusy released; whoever holds it now
		// only replies BUSY and lets go. Clearing busyYield while holding
		// it means the next holder sees the script's writes.
		if yieldRW {
			e.scriptRW.Lock() // (execLocked lets go of it)
		}
		e.mu.Lock()
		e.busyYield.Store(false)
		e.Kick() // the expiry loop skipped its turn while the script was busy
	}
}
