package engine

import "math"

// Client-side caching support (CLIENT TRACKING lives in the server): the
// engine reports which keys a tracking client's read-only commands read,
// which client is running the current command, and flushes.

// SetOnRead installs the hook called, with the keyspace lock held, for each
// key read by a read-only command run by (or, inside a script, for) a
// client with TrackKeys set. The keys are those of the command's key
// positions (FirstKey, LastKey, Step), as Redis 7.2's trackingRememberKeys
// takes them; inside a script they are the keys of each read command the
// script calls. key is only valid during the call. Call it before the
// engine serves commands.
func (e *Engine) SetOnRead(fn func(cl *Client, key []byte)) { e.onRead = fn }

// AddOnFlush adds a hook run under the keyspace lock when FLUSHDB or
// FLUSHALL starts, before the onModified hooks hear of each key removed
// (see Flushing). Call it before the engine serves commands.
func (e *Engine) AddOnFlush(fn func()) { e.onFlush = append(e.onFlush, fn) }

// Flushing reports, to a key-modification hook, that the key is being
// removed by FLUSHDB/FLUSHALL rather than written on its own. It requires
// the keyspace lock.
func (e *Engine) Flushing() bool { return e.flushing }

// Current returns the client whose command holds the keyspace lock, or nil
// when the lock is held outside a client's command (active expiry, an
// embedder). It requires the keyspace lock.
func (e *Engine) Current() *Client { return e.current }

// beginCommand and endCommand bracket a client's command under the lock.
// runner stays the client whose goroutine runs the command while a
// blocked client's command is served inside it (rerun sets current).
func (e *Engine) beginCommand(c *Ctx) { e.current, e.runner = c.Client, c.Client }
func (e *Engine) endCommand() {
	e.current, e.runner = nil, nil
	if e.db != 0 {
		e.use(0) // between commands the current database is 0 (databases.go)
	}
}

// beginFlush and endFlush bracket the removal of every key.
func (e *Engine) beginFlush() {
	for _, fn := range e.onFlush {
		fn()
	}
	e.flushing = true
}

func (e *Engine) endFlush() { e.flushing = false }

// trackRead reports the keys cmd read to the onRead hook when c's client
// tracks keys. Read-only commands without key positions (KEYS, SCAN) and
// scripts (EVAL_RO, tracked by the commands they run) report nothing.
func (e *Engine) trackRead(c *Ctx, cmd *Command) {
	if cmd.Flags&FlagReadonly == 0 || c.Client == nil || !c.Client.TrackKeys || e.onRead == nil || (cmd.FirstKey <= 0 && cmd.Keys == nil) {
		return
	}
	if cmd.Group == "scripting" {
		return // EVAL_RO: tracked by the commands it runs, as Redis's call() does
	}
	cmd.keyArgs(c.Args, func(key []byte) { e.onRead(c.Client, key) })
}

// keyArgs calls fn with each key argument of args, located by the
// command's Keys function, or by its FirstKey, LastKey (negative: counted
// from the end) and Step.
func (cmd *Command) keyArgs(args [][]byte, fn func(key []byte)) {
	if cmd.Keys != nil {
		for _, i := range cmd.Keys(args) {
			fn(args[i])
		}
		return
	}
	first, last, step := cmd.FirstKey, cmd.LastKey, cmd.Step
	if first <= 0 {
		return
	}
	if last < 0 {
		last += len(args)
	}
	if step <= 0 {
		step = 1
	}
	for i := first; i <= last && i < len(args); i += step {
		fn(args[i])
	}
}

// numkeysKeys is Redis's genericGetKeys: the key positions of a command
// whose numkeys argument (at numkeysIdx, read as atoi reads it) counts
// the keys that follow it, and (store > 0) the destination key at store,
// last. A count below 1 or past the arguments gives no keys.
func numkeysKeys(store, numkeysIdx int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if numkeysIdx >= len(args) {
			return nil
		}
		first := numkeysIdx + 1
		n := atoi(args[numkeysIdx])
		if n < 1 || n > len(args)-first {
			return nil
		}
		pos := make([]int, 0, n+1)
		for i := 0; i < n; i++ {
			pos = append(pos, first+i)
		}
		if store > 0 {
			pos = append(pos, store)
		}
		return pos
	}
}

// atoi is C's atoi on glibc: (int)strtol(s, NULL, 10): leading white
// space, a sign, the digits up to the first other byte (none: 0); a value
// past a long clamps to it, then is cut to 32 bits.
func atoi(b []byte) int {
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var v uint64
	over := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > (math.MaxUint64-9)/10 {
			over = true
			continue
		}
		v = v*10 + uint64(b[i]-'0')
	}
	var l int64
	switch {
	case neg && (over || v > 1<<63):
		l = math.MinInt64
	case neg:
		l = -int64(v)
	case over || v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int(int32(l))
}
