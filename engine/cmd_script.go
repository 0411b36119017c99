package engine

import "time"

// Scripter runs Lua scripts for EVAL and friends. luavm implements it.
// Every method except Kill is called with the keyspace lock held (Run) or
// from SCRIPT subcommands; Kill may be called from any goroutine while Run
// is in progress.
type Scripter interface {
	// Run executes body, or the cached script sha when body is nil, with
	// KEYS and ARGV, writing the script's reply to c.W. It reports false
	// when sha is not cached (the caller replies NOSCRIPT).
	Run(c *Ctx, sha, body []byte, keys, argv [][]byte) bool
	// Load compiles and caches body, returning its SHA1 or an error text;
	// prepared is what Precompile compiled of it (Ctx.Prepared), or nil.
	Load(body []byte, prepared any) (sha string, errMsg string)
	// Exists reports whether sha (any case) is cached.
	Exists(sha []byte) bool
	// Flush empties the cache.
	Flush()
	// Kill asks the running script to stop.
	Kill()
}

// Precompiler is implemented by a Scripter that can compile a script
// before EVAL takes the keyspace lock: a large script's compiling (a
// fraction of a second a megabyte) then holds no other client up.
// Precompile returns what it compiled, for Run (and RunNative) to find in
// Ctx.Prepared, or nil (when the script is cached, at once), and how
// long compiling took; it caches nothing (an EVAL refused meanwhile
// caches nothing, as in Redis), and is safe to call from any goroutine,
// while another script runs. One script compiles at a time: compiling
// takes about forty times the script's size in memory at its peak, and
// many large EVALs at once must not take more than one did when they
// compiled in turn under the keyspace lock. The wait for another's is
// not in the time returned, which is the command's.
type Precompiler interface {
	Precompile(body []byte) (prepared any, took time.Duration)
}

// PrecompileMin is the size from which an EVAL's script is compiled
// before the keyspace lock is taken (Precompiler): below it, compiling
// takes less than a millisecond or so, and a lock script is a few
// hundred bytes.
const PrecompileMin = 4 << 10

// precompileEval is EVAL's and EVAL_RO's prepare (Command.prepare).
func precompileEval(c *Ctx) time.Duration { return precompileArg(c, c.Args[1]) }

// precompileScriptLoad is SCRIPT LOAD's prepare. SCRIPT LOAD runs
// without the keyspace lock, except queued in MULTI; either way its
// compiling takes its turn with the others' (Precompiler) before.
func precompileScriptLoad(c *Ctx) time.Duration { return precompileArg(c, c.Args[2]) }

func precompileArg(c *Ctx, body []byte) time.Duration {
	if len(body) < PrecompileMin {
		return 0
	}
	p, ok := c.Eng.scripter.(Precompiler)
	if !ok {
		return 0
	}
	var took time.Duration
	c.Prepared, took = p.Precompile(body)
	return took
}

// NativeRunner is implemented by a Scripter that can run some scripts
// without its interpreter, with the same replies and effects. RunNative
// reports false, having done nothing, when the script must go to Run.
// A native run is short and never busy, so it skips the busy-script
// bookkeeping.
type NativeRunner interface {
	RunNative(c *Ctx, sha, body []byte, keys, argv [][]byte) bool
}

func registerScript(e *Engine) {
	e.Register(
		// The keys follow numkeys (Redis's evalGetKeys); a script may be
		// given none.
		&Command{Name: "eval", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true, Fn: func(c *Ctx) { evalGeneric(c, false, false) }, prepare: precompileEval},
		&Command{Name: "evalsha", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true, Fn: func(c *Ctx) { evalGeneric(c, true, false) }},
		&Command{Name: "eval_ro", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagReadonly | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true, Fn: func(c *Ctx) { evalGeneric(c, false, true) }, prepare: precompileEval},
		&Command{Name: "evalsha_ro", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagReadonly | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true, Fn: func(c *Ctx) { evalGeneric(c, true, true) }},
		&Command{Name: "script", Arity: -2, Group: "scripting", Subs: map[string]*Command{
			"load":   {Arity: 3, Flags: FlagNoScript | FlagNoKeys | FlagStale, Fn: cmdScriptLoad, prepare: precompileScriptLoad},
			"exists": {Arity: -3, Flags: FlagNoScript | FlagNoKeys, Fn: cmdScriptExists},
			"flush":  {Arity: -2, Flags: FlagNoScript | FlagNoKeys, Fn: cmdScriptFlush},
			"kill":   {Arity: 2, Flags: FlagNoScript | FlagNoKeys | FlagAllowBusy, Fn: func(c *Ctx) { killGeneric(c, true) }},
			"help":   {Arity: 2, Flags: FlagNoKeys | FlagLoading | FlagStale, Fn: cmdScriptHelp},
			"debug":  {Arity: 3, Flags: FlagNoScript | FlagNoKeys, Fn: cmdScriptDebug},
		}},
	)
}

// EVAL script numkeys [key ...] [arg ...] (and EVALSHA, EVAL_RO, EVALSHA_RO)
func evalGeneric(c *Ctx, bySHA, readOnly bool) {
	e := c.Eng
	if bySHA && len(c.Args[1]) != 40 {
		// Redis's evalShaCommand: no SHA of another length can match, so
		// NOSCRIPT comes before numkeys is looked at.
		c.W.WriteError(ErrNoScript)
		return
	}
	numkeys, ok := parseInt(c.Args[2])
	if !ok {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if numkeys > int64(len(c.Args)-3) {
		c.W.WriteError(ErrNumKeysTooMany)
		return
	}
	if numkeys < 0 {
		c.W.WriteError(ErrNumKeysNeg)
		return
	}
	if e.scripter == nil {
		c.W.WriteError("ERR scripting is not available")
		return
	}
	keys := c.Args[3 : 3+numkeys]
	argv := c.Args[3+numkeys:]
	var sha, body []byte
	if bySHA {
		sha = c.Args[1]
	} else {
		body = c.Args[1]
	}
	run := &e.scriptRun
	*run = ScriptRun{ReadOnly: readOnly, native: true}
	c.Script = run
	if nr, ok := e.scripter.(NativeRunner); ok && nr.RunNative(c, sha, body, keys, argv) {
		e.countScript(c)
		c.Script = nil
		c.clkEnd = true // the script's time ends with its last call's (observe.go)
		return
	}
	run.native = false
	e.scriptBegin(nil, nil)
	// deferred: scriptEnd may have to take back the keyspace lock, and must
	// do so before Exec releases it, even if Run panics
	defer e.scriptEnd()
	found := e.scripter.Run(c, sha, body, keys, argv)
	c.Script = nil
	e.restoreDB(c) // a SELECT in the script lasted for the script only
	if !found {
		c.W.WriteError(ErrNoScript)
	}
}

// SCRIPT LOAD script
func cmdScriptLoad(c *Ctx) {
	if c.Eng.scripter == nil {
		c.W.WriteError("ERR scripting is not available")
		return
	}
	sha, errMsg := c.Eng.scripter.Load(c.Args[2], c.Prepared)
	if errMsg != "" {
		c.W.WriteError(errMsg)
		return
	}
	c.W.WriteBulkString(sha)
}

// SCRIPT EXISTS sha1 [sha1 ...]
func cmdScriptExists(c *Ctx) {
	c.W.WriteArray(len(c.Args) - 2)
	for _, sha := range c.Args[2:] {
		if c.Eng.scripter != nil && c.Eng.scripter.Exists(sha) {
			c.W.WriteInt(1)
		} else {
			c.W.WriteInt(0)
		}
	}
}

// SCRIPT FLUSH [ASYNC|SYNC]
func cmdScriptFlush(c *Ctx) {
	if len(c.Args) > 3 || (len(c.Args) == 3 && !eqFold(c.Args[2], "async") && !eqFold(c.Args[2], "sync")) {
		c.W.WriteError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	if c.Eng.scripter != nil {
		c.Eng.scripter.Flush()
	}
	c.W.WriteStatus(statusOK)
}

// SCRIPT KILL (eval) and FUNCTION KILL
func killGeneric(c *Ctx, eval bool) {
	if msg := c.Eng.killScript(c, eval); msg != "" {
		c.W.WriteError(msg)
		return
	}
	c.W.WriteStatus(statusOK)
}

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
}

// SCRIPT DEBUG YES|SYNC|NO
//
// tumbler has no Lua debugger: NO (the default) is accepted, YES and SYNC
// are refused.
func cmdScriptDebug(c *Ctx) {
	switch {
	case eqFold(c.Args[2], "no"):
		c.W.WriteStatus(statusOK)
	case eqFold(c.Args[2], "yes"), eqFold(c.Args[2], "sync"):
		c.W.WriteError("ERR SCRIPT DEBUG is not supported by tumbler")
	default:
		c.W.WriteError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

// SCRIPT HELP
func cmdScriptHelp(c *Ctx) { WriteHelp(c, scriptHelp) }
