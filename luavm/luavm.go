package luavm

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"

	"github.com/tumblerdb/tumbler/engine"
)

func init() {
	// Lua 5.1's LUA_COMPAT_VARARG, which Redis's Lua has: a function
	// declared with "..." that does not use it gets a local "arg", the
	// table of its extra arguments with their count as "n". gopher-lua
	// gives the main chunk one too; Lua 5.1 does not, and compile takes
	// it away (it would cost a table on every script call).
	lua.CompatVarArg = true
}

// script is one compiled, cached script.
type script struct {
	sha   string
	proto *lua.FunctionProto
	fn    *lua.LFunction // bound to the VM's state, created on first run
	// shebang is set when the script starts with "#!lua", flags to the
	// flags it declares.
	shebang bool
	flags   engine.ScriptFlag
	// native is the script's Go program when it is a well-known lock
	// script (native.go).
	native *nativeMatch
}

// parseShebang is Redis's evalExtractShebangFlags. It returns the number of
// bytes of the shebang line (0 when there is none), its flags, and an
// error text.
func parseShebang(body []byte) (n int, fl engine.ScriptFlag, errMsg string) {
	if !strings.HasPrefix(string(body), "#!") {
		return 0, fl, ""
	}
	end := strings.IndexByte(string(body), '\n')
	if end < 0 {
		return 0, fl, "ERR Invalid script shebang"
	}
	parts, ok := engine.SplitArgs(string(body[:end])) // sdssplitargs: quotes too
	if !ok || len(parts) == 0 {
		return 0, fl, "ERR Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, fl, "ERR Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		flags, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, fl, "ERR Unknown lua shebang option: " + p
		}
		if flags == "" {
			continue // sdssplitlen of nothing: no flags (an empty one between commas is unexpected)
		}
		for _, f := range strings.Split(flags, ",") {
			sf, ok := engine.ParseScriptFlag(f, false)
			if !ok {
				return 0, fl, "ERR Unexpected flag in script shebang: " + f
			}
			fl |= sf
		}
	}
	return end, fl, ""
}

// VM is the script runner. Create it with New and install it with
// engine.SetScripter.
type VM struct {
	// handler is the message handler of protected calls, closer the
	// function run after one fails, errorFn the script's error()
	// (vmerror.go)
	handler, closer, errorFn *lua.LFunction
	pcallBases               []int        // the registers of the functions pcall runs, innermost last
	catchers                 []lua.LValue // the protected calls running: nil for pcall, xpcall's handler

	mu     sync.RWMutex
	bySHA  map[string]*script
	byBody map[string]*script
	// scriptBytes: the SHA1s and bodies of byBody's scripts (CachedScriptBytes)
	scriptBytes int
	flushes     atomic.Uint64 // SCRIPT FLUSHes: recent's entries from before one are void
	// precompiling is held while Precompile compiles: one at a time
	precompiling sync.Mutex

	// recent holds the last scripts found by SHA (lookupRecent), for the
	// callers that hold the keyspace lock: one at a time.
	recent     [4]recentScript
	recentNext int

	L       *lua.LState
	globals *lua.LTable // the real globals, behind the read-only proxy
	env     *lua.LTable // the read-only proxy scripts see as _G
	ro      map[*lua.LTable]bool
	roReal  map[*lua.LTable]*lua.LTable // a read-only proxy's table
	rand48  uint64                      // math.random's generator (random.go)

	// cjson.null, the global cjson's settings (cjson.go), and the count
	// of SCRIPT FLUSHes those settings have seen: they persist from
	// script to script until a flush.
	cjsonNull    *lua.LUserData
	cjsonCfg     *cjsonConfig
	cjsonFlushes uint64
	// collectgarbage's "setpause" and "setstepmul" values: the scripts'
	// (Lua's defaults again after SCRIPT FLUSH, as cjson's settings) and
	// the functions', as Redis keeps them in its two Lua states
	gcEval, gcFn gcParams

	// functions (functions.go): their globals, the read-only view of them
	// they see as _G, the libraries' environment and its metatable, what
	// a library sees while it loads, the library loading, and the count
	// of Lua states replaced (resetState), which makes functions again.
	fnGlobals *lua.LTable
	fnG       *lua.LTable
	fnEnv     *lua.LTable
	fnEnvMeta *lua.LTable
	fnLoadAPI *lua.LTable
	loading   *loadRun
	stateGen  uint64

	// per run
	pairs pairsCache // next's models of the tables traversed (pairs51.go)
	// the sizes of the tables constructors made, and the function that
	// notes them (presize.go)
	presized  presizes
	presizeFn *lua.LFunction
	ctx       *engine.Ctx
	resp      int
	// redis.call's argument vector and reply writer, reused: scripts run
	// one at a time and a call never nests (redisCall)
	callArgs [][]byte
	callW    luaWriter
	// the last run's KEYS and ARGV, their lengths, and stateGen+1 when
	// they were made (0: none), for setArgs
	keysT, argvT *lua.LTable
	keysN, argvN int
	argsGen      uint64
	// runEnv is the globals of the code running: chunks made by load and
	// loadstring get it (an EVAL's, or the functions').
	runEnv *lua.LTable
	// lastErr is the value most recently raised by error() and the line it
	// was raised on, to report the line of a non-table error.
	lastErr     lua.LValue
	lastErrLine string
	// chunkSources maps the chunk names of what load and loadstring made
	// during the run (chunkID) to their sources as given, and errSource
	// and errLine are the source and line Redis's handler finds for an
	// error escaping the run from one of them (noteErrSource).
	chunkSources       map[string]string
	errSource, errLine string
	errObj             lua.LValue // the error they are for, as the handler left it
	killMu             sync.Mutex
	cancel             context.CancelFunc
	killed             bool
	timedOut           bool // pcall's timeout stopped the run
	running            bool
	closed             bool
	rctx               *runContext // the Lua state's context (memory.go)

	// the memory bound (memory.go): gen counts Lua runs and memKilled
	// says the watchdog stopped the current one; both guarded by killMu.
	memLimit  atomic.Int64
	gen       uint64
	memKilled bool
	mem       memWatch
	started   chan struct{}
	watchOnce sync.Once
	watchDone chan struct{}

	// the last lock scripts IsLockScript found, replaced round-robin
	lockSeen     [8]atomic.Pointer[lockSeen]
	lockSeenNext atomic.Uint32

	// nat is the state of native runs (native.go); luaOnly turns them off.
	nat        native
	luaOnly    bool
	nativeRuns atomic.Int64
	concat     concatSizes // the sizes of the concatenations being built (coerce.go)
}

// NativeRuns counts the scripts run natively (see native.go).
func (vm *VM) NativeRuns() int64 { return vm.nativeRuns.Load() }

// SetLuaOnly makes every script run in Lua, the well-known lock scripts
// included (see native.go); for differential tests and benchmarks. Call it
// before scripts run.
func (vm *VM) SetLuaOnly(on bool) { vm.luaOnly = on }

// New returns a VM with an empty cache.
func New() *VM {
	vm := &VM{
		bySHA:   make(map[string]*script),
		byBody:  make(map[string]*script),
		ro:      make(map[*lua.LTable]bool),
		roReal:  make(map[*lua.LTable]*lua.LTable),
		rand48:  rand48Default,
		started: make(chan struct{}, 1),
		gcEval:  gcDefaults, gcFn: gcDefaults,
	}
	vm.memLimit.Store(DefaultMemoryLimit)
	vm.initConcatSizes()
	vm.presizeFn = &lua.LFunction{IsG: true, Env: coercionEnv, GFunction: vm.presize}
	vm.initState()
	return vm
}

// Install creates a VM and installs it as e's scripter and as the engine
// of "#!lua" function libraries.
func Install(e *engine.Engine) *VM {
	vm := New()
	e.SetScripter(vm)
	e.RegisterFunctionEngine("LUA", vm)
	return vm
}

// SHA1Hex returns the lowercase hex SHA1 of b.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Chunk names: Redis compiles an EVAL's script as "@user_script" and a
// function library as "@user_function", and errors name a line as
// "user_script:3:".
const (
	chunkScript   = "user_script"
	chunkFunction = "user_function"
)

// compile parses body as Redis's Lua 5.1 does (luaparse), as the chunk
// named chunk. The error is Lua 5.1's: "<chunk>:<line>: <message>".
func (vm *VM) compile(body []byte, chunk string) (*lua.FunctionProto, string) {
	parsed, err := luaparse.Parse(body, chunk)
	if err != nil {
		return nil, err.Error()
	}
	return vm.compileParsed(parsed, chunk)
}

// compileParsed compiles a parsed main chunk; chunk names it in runtime
// errors.
func (vm *VM) compileParsed(parsed []ast.Stmt, chunk string) (*lua.FunctionProto, string) {
	parsed = splitMultiAssigns(parsed)              // a gopher-lua bug (multiassign.go)
	wrapped, own := wrapCoercions(parsed)           // fornum.go
	sized, long := rewriteConstructors(parsed, own) // presize.go, a gopher-lua bug (longtable.go)
	guardLoopBreaks(parsed)                         // a gopher-lua bug (loopjump.go)
	padForExplists(parsed)                          // another (forlist.go)
	if msg := checkConstCost(parsed, chunk); msg != "" {
		return nil, msg // (constcost.go)
	}
	proto, err := lua.Compile(parsed, chunk)
	if err != nil {
		// gopher-lua's own limits: "compile error near line(N) chunk: ..."
		return nil, strings.ReplaceAll(err.Error(), "\n", " ")
	}
	if wrapped || sized || long {
		vm.setCoercions(proto)
	}
	// the names in errors (vmerror.go)
	forLocalsAfterExplist(proto)
	proto.IsVarArg &^= lua.VarArgNeedsArg | lua.VarArgHasArg // the main chunk has no "arg" (init)
	// the compiler's spare room, 16 KB a function (scriptmem.go)
	trimProto(proto)
	return proto, ""
}

// lookup finds a cached script by SHA (either case).
func (vm *VM) lookup(sha []byte) *script {
	var buf [40]byte
	for i, c := range sha {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	vm.mu.RLock()
	s := vm.bySHA[string(buf[:len(sha)])]
	vm.mu.RUnlock()
	return s
}

// CachedScripts implements engine.ScriptCounter: the scripts SCRIPT LOAD,
// EVAL and EVALSHA have cached since the last SCRIPT FLUSH.
func (vm *VM) CachedScripts() int {
	vm.mu.RLock()
	defer vm.mu.RUnlock()
	return len(vm.bySHA)
}

// CachedScriptBytes returns the bytes of the cached scripts' bodies and
// SHA1s (INFO memory's used_memory_scripts_eval).
func (vm *VM) CachedScriptBytes() int {
	vm.mu.RLock()
	defer vm.mu.RUnlock()
	return vm.scriptBytes
}

// flagsOf returns the shebang flags of the script an EVAL (arg is the
// body) or EVALSHA (evalsha; arg is the SHA) runs, as Redis's
// evalGetCommandFlags finds them: ok is false when the command keeps its
// own flags (no shebang, a shebang in error, an unknown SHA).
func (vm *VM) flagsOf(evalsha bool, arg []byte) (fl engine.ScriptFlag, ok bool) {
	var s *script
	if evalsha {
		if len(arg) != 40 {
			return fl, false
		}
		if s = vm.lookup(arg); s == nil {
			return fl, false
		}
	} else {
		vm.mu.RLock()
		s = vm.byBody[string(arg)]
		vm.mu.RUnlock()
		if s == nil {
			n, fl, errMsg := parseShebang(arg)
			return fl, errMsg == "" && n > 0
		}
	}
	return s.flags, s.shebang
}

// MayWrite reports whether Redis flags this EVAL or EVALSHA (see flagsOf;
// ro: EVAL_RO or EVALSHA_RO) as a write or may-replicate command, which
// CLIENT PAUSE WRITE holds: a script with a shebang writes unless it is
// flagged no-writes; without one, EVAL may replicate and EVAL_RO only
// reads.
func (vm *VM) MayWrite(evalsha, ro bool, arg []byte) bool {
	fl, ok := vm.flagsOf(evalsha, arg)
	if !ok {
		return !ro
	}
	return fl.Writes()
}

// ScriptFlags implements engine.ScriptFlagger (flagsOf).
func (vm *VM) ScriptFlags(evalsha bool, arg []byte) (engine.ScriptFlag, bool) {
	return vm.flagsOf(evalsha, arg)
}

// recentScript is a script lookupRecent found, under the SHA bytes as a
// client sent them.
type recentScript struct {
	sha     [40]byte
	flushes uint64
	s       *script
}

// lookupRecent is lookup for callers holding the keyspace lock (EVALSHA):
// a lock client sends the same few scripts over and over, so the last
// four found are compared first, byte for byte, before the cache's hash
// and lock.
func (vm *VM) lookupRecent(sha []byte) *script {
	if len(sha) != 40 {
		return vm.lookup(sha)
	}
	fl := vm.flushes.Load()
	for i := range vm.recent {
		if r := &vm.recent[i]; r.s != nil && r.flushes == fl && string(r.sha[:]) == string(sha) {
			return r.s
		}
	}
	s := vm.lookup(sha)
	if s != nil {
		r := &vm.recent[vm.recentNext]
		vm.recentNext = (vm.recentNext + 1) % len(vm.recent)
		copy(r.sha[:], sha)
		r.flushes, r.s = fl, s
	}
	return s
}

// precompiled is a script Precompile compiled (or failed to: errMsg).
type precompiled struct {
	body   []byte // the body, as the command has it (not a copy)
	sha    string // its SHA1
	s      *script
	errMsg string
}

// of reports whether p was compiled from body: the very bytes (the
// command's own argument, for the command's own run).
func (p *precompiled) of(body []byte) bool {
	return len(p.body) == len(body) && len(body) > 0 && &p.body[0] == &body[0]
}

// Precompile implements engine.Precompiler: it compiles body, unless it is
// cached, for the EVAL about to run it (load); nil when it is cached. A
// cached script (a large lock script an event loop runs) never waits for
// another's compiling.
func (vm *VM) Precompile(body []byte) (any, time.Duration) {
	vm.mu.RLock()
	s := vm.byBody[string(body)]
	vm.mu.RUnlock()
	if s != nil {
		return nil, 0
	}
	vm.precompiling.Lock() // one at a time (engine.Precompiler)
	defer vm.precompiling.Unlock()
	start := time.Now()
	sha := SHA1Hex(body)
	s, errMsg := vm.compileScript(sha, body)
	return &precompiled{body: body, sha: sha, s: s, errMsg: errMsg}, time.Since(start)
}

// compileScript compiles the script body, whose SHA1 is sha.
func (vm *VM) compileScript(sha string, body []byte) (*script, string) {
	// The shebang line is dropped but its newline kept, so line numbers
	// in errors are the script's own.
	n, fl, errMsg := parseShebang(body)
	if errMsg != "" {
		return nil, errMsg
	}
	proto, errMsg := vm.compile(body[n:], chunkScript)
	if errMsg != "" {
		return nil, "ERR Error compiling script (new function): " + errMsg
	}
	s := &script{sha: sha, proto: proto, shebang: n > 0, flags: fl}
	if n == 0 {
		s.native = matchNative(body)
	}
	return s, ""
}

// load returns the cached script for body, compiling it on first sight,
// unless prepared (the command's Ctx.Prepared) holds what Precompile
// compiled of it.
func (vm *VM) load(body []byte, prepared any) (*script, string) {
	vm.mu.RLock()
	s := vm.byBody[string(body)]
	vm.mu.RUnlock()
	if s != nil {
		return s, ""
	}
	pre, _ := prepared.(*precompiled)
	if pre != nil && !pre.of(body) {
		pre = nil
	}
	sha := ""
	if pre != nil {
		sha = pre.sha
	} else {
		sha = SHA1Hex(body)
	}
	vm.mu.RLock()
	s = vm.bySHA[sha]
	vm.mu.RUnlock()
	if s == nil {
		var errMsg string
		if pre != nil {
			s, errMsg = pre.s, pre.errMsg
		} else {
			s, errMsg = vm.compileScript(sha, body)
		}
		if errMsg != "" {
			return nil, errMsg
		}
	}
	vm.mu.Lock()
	if old := vm.bySHA[sha]; old != nil {
		s = old
	} else {
		vm.bySHA[sha] = s
	}
	if _, ok := vm.byBody[string(body)]; !ok {
		vm.scriptBytes += len(sha) + len(body)
	}
	vm.byBody[string(body)] = s
	vm.mu.Unlock()
	return s, ""
}

// Load implements engine.Scripter. A large script was compiled by
// Precompile (SCRIPT LOAD's prepare), one at a time with the others, for
// the memory compiling takes.
func (vm *VM) Load(body []byte, prepared any) (string, string) {
	s, errMsg := vm.load(body, prepared)
	if errMsg != "" {
		return "", errMsg
	}
	return s.sha, ""
}

// IsLockScript reports whether the script, given by body or (body nil)
// by SHA, matches one of the well-known lock scripts (native.go) and was
// cached when first asked about. Such a script is short in either path,
// native or Lua: it never loops and is never busy; run after a SCRIPT
// FLUSH it fails at once (NOSCRIPT) or compiles and runs as short. It
// neither compiles nor caches anything, and is safe to call from any
// goroutine.
//
// An event loop asks before every EVAL and EVALSHA (server.mayWait), so
// the last lock scripts found are kept in lockSeen and compared first,
// without the cache's lock and hash. Whether a script is a lock script
// depends on its body alone, which its SHA names, so they never go stale.
func (vm *VM) IsLockScript(sha, body []byte) bool {
	if vm.lockSeenHas(sha, body) {
		return true
	}
	var s *script
	if body != nil {
		vm.mu.RLock()
		s = vm.byBody[string(body)]
		vm.mu.RUnlock()
	} else if len(sha) == 40 {
		s = vm.lookup(sha)
	}
	if s == nil || s.native == nil {
		return false
	}
	e := &lockSeen{body: string(body)}
	if body == nil {
		e.sha = string(sha)
	}
	vm.lockSeen[vm.lockSeenNext.Add(1)%uint32(len(vm.lockSeen))].Store(e)
	return true
}

// lockSeen is a lock script IsLockScript found: by the SHA as a client
// sent it, or by body.
type lockSeen struct {
	sha, body string
}

func (vm *VM) lockSeenHas(sha, body []byte) bool {
	for i := range vm.lockSeen {
		e := vm.lockSeen[i].Load()
		if e == nil {
			continue
		}
		if body != nil {
			if e.body == string(body) && e.sha == "" {
				return true
			}
		} else if e.sha == string(sha) && e.sha != "" {
			return true
		}
	}
	return false
}

// CachedBody reports whether the script body is cached: loading it again
// compiles nothing.
func (vm *VM) CachedBody(body []byte) bool {
	vm.mu.RLock()
	defer vm.mu.RUnlock()
	return vm.byBody[string(body)] != nil
}

// Exists implements engine.Scripter.
func (vm *VM) Exists(sha []byte) bool { return len(sha) == 40 && vm.lookup(sha) != nil }

// Flush implements engine.Scripter.
func (vm *VM) Flush() {
	vm.mu.Lock()
	vm.bySHA = make(map[string]*script)
	vm.byBody = make(map[string]*script)
	vm.scriptBytes = 0
	vm.mu.Unlock()
	vm.flushes.Add(1) // after: a lookupRecent that saw the old count found the old map
}

// Close stops the running script, if any, and makes every later run fail
// at once: a server shutting down must not wait for queued scripts.
func (vm *VM) Close() {
	vm.killMu.Lock()
	vm.closed = true
	if vm.running && vm.cancel != nil {
		vm.killed = true
		vm.cancel()
	}
	vm.stopWatchdog()
	vm.killMu.Unlock()
}

// Kill implements engine.Scripter.
func (vm *VM) Kill() {
	vm.killMu.Lock()
	if vm.running && vm.cancel != nil {
		vm.killed = true
		vm.cancel()
	}
	vm.killMu.Unlock()
}

func (vm *VM) isKilled() bool {
	vm.killMu.Lock()
	defer vm.killMu.Unlock()
	return vm.killed
}

// Run implements engine.Scripter.
func (vm *VM) Run(c *engine.Ctx, sha, body []byte, keys, argv [][]byte) bool {
	var s *script
	if body != nil {
		var errMsg string
		if s, errMsg = vm.load(body, c.Prepared); errMsg != "" {
			c.W.WriteError(errMsg)
			return true
		}
	} else if s = vm.lookup(sha); s == nil {
		return false
	}
	if s.shebang {
		if c.Script.ReadOnly && s.flags.Writes() {
			c.W.WriteError(engine.ErrScriptWriteFlagRO)
			return true
		}
		if !s.flags.Writes() {
			c.Script.ReadOnly = true
		}
		c.Script.AllowOOM = s.flags&engine.ScriptAllowOOM != 0
	}
	if n := vm.flushes.Load(); n != vm.cjsonFlushes {
		// Redis's SCRIPT FLUSH makes a new Lua state: cjson's settings
		// start again from their defaults.
		vm.cjsonFlushes = n
		vm.resetCjson()
		vm.gcEval = gcDefaults
	}
	if s.fn == nil {
		s.fn = vm.L.NewFunctionFromProto(s.proto)
		s.fn.Env = vm.env
	}
	vm.setArgs(keys, argv)
	vm.run(c, s.fn, nil, where{s.sha, chunkScript}, vm.env)
	return true
}

// where names a running script in its errors, as Redis's
// " script: <name>, on @<chunk>:<line>.": an EVAL's by its SHA1, a
// function by its name.
type where struct{ name, chunk string }

func (w where) at(line string) string {
	return " script: " + w.name + ", on @" + w.chunk + ":" + line + "."
}

// run calls fn with args as one script run (an EVAL's script, or an
// FCALL's function, with env its globals) and writes its reply, or its
// error, to c.W.
func (vm *VM) run(c *engine.Ctx, fn *lua.LFunction, args []lua.LValue, w where, env *lua.LTable) {
	vm.ctx, vm.resp, vm.runEnv = c, 2, env
	vm.lastErr, vm.lastErrLine = nil, ""
	vm.errSource, vm.errLine, vm.errObj = "", "", nil
	clear(vm.chunkSources)
	err, stop := vm.pcall(fn, 1, 0, args...)
	switch {
	case stop == stopClosed:
		c.W.WriteError("ERR server is shutting down")
	case err == nil:
		ret := vm.L.Get(-1)
		vm.L.Pop(1)
		writeLuaValue(c.W, ret, vm.resp, replyStackBase, &vm.presized)
	case stop == stopMemory:
		c.W.WriteError(memoryError(w, vm.memLimit.Load(), err))
		vm.resetState()
	case stop == stopKilled:
		c.W.WriteError(engine.ErrScriptKilled + w.at(lineOf(err, w.chunk)))
	default:
		vm.writeRunError(c.W, w, err)
	}
	vm.ctx, vm.runEnv = nil, vm.env
}

// stopCause says what stopped a Lua run before its end.
type stopCause uint8

const (
	stopNone    stopCause = iota
	stopKilled            // Kill: SCRIPT KILL, FUNCTION KILL, a closing server
	stopMemory            // the memory bound (memory.go)
	stopTimeout           // pcall's timeout
	stopClosed            // the VM is closed: nothing ran
)

// pcall calls fn with args on the Lua state, leaving nret results on its
// stack, as one Lua run: the memory bound watches it, and Kill, or
// timeout when it passes (0: none), stops it. The cause it reports
// matters only with an error: a run that ended as it was stopped ended.
func (vm *VM) pcall(fn *lua.LFunction, nret int, timeout time.Duration, args ...lua.LValue) (error, stopCause) {
	L := vm.L
	vm.concat.open = vm.concat.open[:0] // (counts an error left open: coerce.go)
	vm.presized.reset()
	vm.killMu.Lock()
	if vm.closed {
		vm.killMu.Unlock()
		return nil, stopClosed
	}
	vm.running = true
	vm.memStart()
	gen := vm.gen
	vm.killMu.Unlock()
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			vm.killMu.Lock()
			if vm.running && vm.gen == gen && vm.cancel != nil {
				vm.timedOut = true
				vm.cancel()
			}
			vm.killMu.Unlock()
		})
	}

	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	err := vm.protectedCall(L, len(args), nret, vm.handler)

	if timer != nil {
		timer.Stop()
	}
	vm.pairs.reset()
	vm.killMu.Lock()
	vm.running = false
	stop := stopNone
	switch {
	case vm.memKilled:
		stop = stopMemory
	case vm.killed:
		stop = stopKilled
	case vm.timedOut:
		stop = stopTimeout
	}
	if stop != stopNone {
		vm.killed, vm.memKilled, vm.timedOut = false, false, false
		vm.newContext()
	}
	vm.killMu.Unlock()
	return err, stop
}

// newContext gives the Lua state a new context; killMu is held (the
// memory watchdog reads it).
func (vm *VM) newContext() {
	ctx := &runContext{vm: vm, done: make(chan struct{})}
	vm.rctx, vm.cancel = ctx, ctx.cancel
	vm.L.SetContext(ctx)
}

// setArgs gives the run its KEYS and ARGV tables: a script may modify
// them, and nothing it does may reach the next script. A table the last
// run left as it was made is refilled rather than made again (two
// tables, their arrays and two global assignments a run): it has the
// elements it was given and nothing else, no script can have kept a
// reference to it (the globals and libraries are read-only), so the
// next run cannot tell it from a new one.
func (vm *VM) setArgs(keys, argv [][]byte) {
	if vm.argsGen != vm.stateGen+1 { // none yet, or a new Lua state
		vm.keysT, vm.argvT = nil, nil
	}
	if t, ok := refillArgTable(vm.keysT, vm.keysN, keys); ok {
		vm.keysT = t
	} else {
		vm.keysT = vm.argTable(keys)
		vm.globals.RawSetString("KEYS", vm.keysT)
	}
	if t, ok := refillArgTable(vm.argvT, vm.argvN, argv); ok {
		vm.argvT = t
	} else {
		vm.argvT = vm.argTable(argv)
		vm.globals.RawSetString("ARGV", vm.argvT)
	}
	vm.keysN, vm.argvN = len(keys), len(argv)
	vm.argsGen = vm.stateGen + 1
}

// maxRefill bounds the tables kept from run to run (a large one is
// dropped, not kept alive until the next script).
const maxRefill = 64

// refillArgTable refills t, which held n values as argTable made it, with
// vals; ok=false when it cannot be reused: gone, large, or changed by the
// script (a metatable, an element removed or replaced by nil, a key added).
// An element the script replaced by another value is refilled like any.
func refillArgTable(t *lua.LTable, n int, vals [][]byte) (*lua.LTable, bool) {
	if t == nil || n > maxRefill || len(vals) > maxRefill || t.Metatable != lua.LNil {
		return nil, false
	}
	for i := 1; i <= n; i++ {
		if t.RawGetInt(i) == lua.LNil {
			return nil, false
		}
	}
	// nothing after the n-th element, in the array or the hash part
	after := lua.LValue(lua.LNil)
	if n > 0 {
		after = smallNumbers[n+2] // lua.LNumber(n), boxed once
	}
	if k, _ := t.Next(after); k != lua.LNil {
		return nil, false
	}
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	for i := len(vals) + 1; i <= n; i++ {
		t.RawSetInt(i, lua.LNil)
	}
	return t, true
}

// argTable is a new array of vals, as Redis's luaCreateArray.
func (vm *VM) argTable(vals [][]byte) *lua.LTable {
	t := vm.L.CreateTable(len(vals), 0)
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

// writeRunError formats a runtime error as Redis 7 does:
// "<err> script: <name>, on @<chunk>:<line>."
func (vm *VM) writeRunError(wr engine.Writer, w where, err error) {
	msg, line := errorInfo(err, w.chunk)
	ae, _ := err.(*lua.ApiError)
	if ae != nil && vm.lastErr != nil && ae.Object == vm.lastErr {
		line = vm.lastErrLine
	}
	// errSource is the handler's for the last error that may have escaped
	// the run: it is this one's if the handler left this very value (an
	// error at a full call stack never reaches the handler).
	if vm.errSource != "" && ae != nil && ae.Object == vm.errObj {
		msg += " script: " + w.name + ", on " + vm.errSource + ":" + vm.errLine + "."
	} else {
		msg += w.at(line)
	}
	if ae != nil {
		if t, ok := ae.Object.(*lua.LTable); ok && t.RawGetString(ignoreStatsField) == lua.LTrue {
			engine.WriteErrorNoStats(wr, msg)
			return
		}
	}
	wr.WriteError(msg)
}

// errorInfo extracts the error message and line from a script error: a
// table {err=...} raised by redis.call or error({err=...}), or a string
// "<chunk>:N: msg" which becomes "ERR <chunk>:N: msg". The message ends
// at a NUL, as Redis copies it (luaExtractErrorInformation's sdsnew).
func errorInfo(err error, chunk string) (msg, line string) {
	msg, line = errorText(err, chunk)
	return cString(msg), line
}

func errorText(err error, chunk string) (msg, line string) {
	var obj lua.LValue = lua.LNil
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	if t, ok := obj.(*lua.LTable); ok {
		// luaExtractErrorInformation reads err with lua_isstring and
		// lua_tostring: a number is "%.14g" ({err=1.5} is "-1.5 ...")
		m := "ERR unknown error"
		if s, ok := luaString(t.RawGetString("err")); ok {
			m = s
		}
		return m, "0" // (its line breaks become spaces in the reply, as in Redis)
	}
	if obj == lua.LNil {
		return "ERR nil", lineOf(err, chunk)
	}
	return "ERR " + obj.String(), lineOf(err, chunk)
}

// lineOf finds the "<chunk>:N:" position in an error message.
func lineOf(err error, chunk string) string {
	s := err.Error()
	if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil && ae.Object != lua.LNil {
		s = ae.Object.String()
	}
	tag := chunk + ":"
	i := strings.Index(s, tag)
	if i < 0 {
		return "0"
	}
	rest := s[i+len(tag):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == 0 {
		return "0"
	}
	return rest[:j]
}
