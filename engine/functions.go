package engine

import (
	"bytes"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Functions (Redis 7.0's src/functions.c): libraries of named functions
// loaded by FUNCTION LOAD and run by FCALL and FCALL_RO. The engine keeps
// the libraries, parses their "#!<engine> name=<library>" line, and runs
// every FUNCTION subcommand; compiling a library and running a function
// belong to a FunctionEngine (luavm's Lua engine), as in Redis, where
// src/function_lua.c is one engine behind src/functions.c.
//
// # Concurrency
//
// The libraries are an immutable libSet behind an atomic pointer: a
// command that changes them (LOAD, DELETE, FLUSH, RESTORE) runs under the
// keyspace lock, builds a new set and publishes it, so FCALL (under the
// lock too) sees one set for its whole run, and what reads them without the
// lock (FUNCTION STATS, the flags a command is admitted by) sees a
// complete one.

// ScriptFlag is a flag of a function (register_function's flags) or of a
// script's "#!lua flags=..." line: Redis's SCRIPT_FLAG_*.
type ScriptFlag uint8

// The flags scripts and functions may declare.
const (
	ScriptNoWrites       ScriptFlag = 1 << iota // may not write; FCALL_RO and EVAL_RO may run it
	ScriptAllowOOM                              // runs, and writes, over maxmemory
	ScriptAllowStale                            // runs on a stale replica (none here)
	ScriptNoCluster                             // refused in cluster mode (never here)
	ScriptAllowCrossSlot                        // keys of several slots (one node here)
)

// scriptFlagNames are the flags' names in Redis's order
// (scripts_flags_def), which FUNCTION LIST follows.
var scriptFlagNames = [...]struct {
	f    ScriptFlag
	name string
}{
	{ScriptNoWrites, "no-writes"},
	{ScriptAllowOOM, "allow-oom"},
	{ScriptAllowStale, "allow-stale"},
	{ScriptNoCluster, "no-cluster"},
	{ScriptAllowCrossSlot, "allow-cross-slot-keys"},
}

// DenyOOM reports whether a script or function with these flags is
// refused over maxmemory before it runs: unless it is flagged no-writes
// or allow-oom (Redis's scriptFlagsToCmdFlags).
func (f ScriptFlag) DenyOOM() bool { return f&(ScriptNoWrites|ScriptAllowOOM) == 0 }

// Writes reports whether a script or function with these flags counts as
// a write command (CLIENT PAUSE WRITE holds it): unless it is flagged
// no-writes.
func (f ScriptFlag) Writes() bool { return f&ScriptNoWrites == 0 }

// ParseScriptFlag returns the flag named s. A function's flags are
// matched ignoring case (fold), a shebang's exactly, as in Redis.
func ParseScriptFlag(s string, fold bool) (ScriptFlag, bool) {
	for _, f := range scriptFlagNames {
		if s == f.name || (fold && eqFold([]byte(s), f.name)) {
			return f.f, true
		}
	}
	return 0, false
}

// FunctionLoadTimeout bounds the run of a library's code when FUNCTION
// LOAD (or RESTORE) loads it: it should only register functions (Redis's
// LOAD_TIMEOUT_MS).
const FunctionLoadTimeout = 500 * time.Millisecond

// FunctionEngine compiles function libraries and runs their functions
// (Redis's engine struct, src/functions.h). Create and Call are called
// with the keyspace lock held, never at the same time.
type FunctionEngine interface {
	// Create compiles body (a library's code from the newline that ends
	// its shebang line on, so that line numbers are the library's own)
	// and runs it, bounded by timeout, so that it registers its functions
	// with lib.AddFunction. It returns an error text without "ERR ".
	// prepared is what PrecompileLibrary compiled of body before the
	// keyspace lock was taken (LibraryPrecompiler), or nil.
	Create(lib *Library, body []byte, prepared any, timeout time.Duration) string
	// Call runs fn with KEYS and ARGV, writing its reply to c.W; c.Script
	// is set.
	Call(c *Ctx, fn *Function, keys, args [][]byte)
}

// Library is a loaded function library.
type Library struct {
	Name   string
	Engine string // the engine's name, as FUNCTION LIST shows it ("LUA")
	Code   []byte // the whole code, shebang line included
	eng    FunctionEngine
	funcs  []*Function // in the order registered
}

// Function is one function of a library.
type Function struct {
	Name  string
	Desc  *string // nil: none given
	Flags ScriptFlag
	Lib   *Library
	// Impl is the engine's compiled function.
	Impl any
}

// Functions returns the library's functions in the order registered.
func (lib *Library) Functions() []*Function { return lib.funcs }

// Function returns the library's function named name (case-sensitive),
// or nil.
func (lib *Library) Function(name string) *Function {
	for _, f := range lib.funcs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// AddFunction registers a function of lib while its engine creates it
// (Redis's functionLibCreateFunction). It returns an error text without
// "ERR ", or "".
func (lib *Library) AddFunction(name string, desc *string, flags ScriptFlag, impl any) string {
	if !validFunctionName(name) {
		return errFunctionName
	}
	if lib.Function(name) != nil {
		return "Function already exists in the library"
	}
	lib.funcs = append(lib.funcs, &Function{Name: name, Desc: desc, Flags: flags, Lib: lib, Impl: impl})
	return ""
}

// Function error texts (src/functions.c).
const (
	ErrFunctionNotFound  = "ERR Function not found"
	ErrBusyFunction      = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	ErrScriptWriteFlagRO = "ERR Can not execute a script with write flag using *_ro command."
	errFunctionNumKeys   = "ERR Bad number of keys provided"
	errFunctionName      = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
)

// validFunctionName is functionsVerifyName: [a-zA-Z0-9_]+, for library
// and function names alike.
func validFunctionName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// functionState is the engine's part of functions.
type functionState struct {
	// engines by lower-case name (Redis looks them up ignoring case);
	// set before the engine serves.
	engines map[string]*namedEngine
	libs    atomic.Pointer[libSet]
}

type namedEngine struct {
	name string
	fe   FunctionEngine
}

// RegisterFunctionEngine makes fe the engine of libraries whose shebang
// names name (any case), as Redis's functionsRegisterEngine. Call it
// before the engine serves.
func (e *Engine) RegisterFunctionEngine(name string, fe FunctionEngine) {
	if e.funcs.engines == nil {
		e.funcs.engines = map[string]*namedEngine{}
	}
	e.funcs.engines[foldName(name)] = &namedEngine{name: name, fe: fe}
}

// foldName is name in lower case, ASCII letters only, as Redis's
// strcasecmp compares function and engine names.
func foldName(name string) string {
	b := []byte(name)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

// libSet is the loaded libraries (Redis's functionsLibCtx). A published
// set is never changed: changes are made to a clone.
type libSet struct {
	libs  map[string]*Library  // by name, case-sensitive
	funcs map[string]*Function // by lower-case name: FCALL ignores case
}

func newLibSet() *libSet {
	return &libSet{libs: map[string]*Library{}, funcs: map[string]*Function{}}
}

// functionLibs returns the published libraries.
func (e *Engine) functionLibs() *libSet {
	if s := e.funcs.libs.Load(); s != nil {
		return s
	}
	return newLibSet()
}

func (s *libSet) clone() *libSet {
	n := &libSet{libs: make(map[string]*Library, len(s.libs)), funcs: make(map[string]*Function, len(s.funcs))}
	for k, v := range s.libs {
		n.libs[k] = v
	}
	for k, v := range s.funcs {
		n.funcs[k] = v
	}
	return n
}

// lookup finds a function by name, ignoring case.
func (s *libSet) lookup(name []byte) *Function {
	if f := s.funcs[string(name)]; f != nil {
		return f
	}
	return s.funcs[foldName(string(name))]
}

// link adds lib and its functions. A library whose functions differ
// only by case (which Redis lets register) keeps the first under the
// shared name.
func (s *libSet) link(lib *Library) {
	s.libs[lib.Name] = lib
	for _, f := range lib.funcs {
		k := foldName(f.Name)
		if s.funcs[k] == nil {
			s.funcs[k] = f
		}
	}
}

// unlink removes lib and its functions.
func (s *libSet) unlink(lib *Library) {
	delete(s.libs, lib.Name)
	for _, f := range lib.funcs {
		k := foldName(f.Name)
		if s.funcs[k] == f {
			delete(s.funcs, k)
		}
	}
}

// sorted returns the libraries by name: FUNCTION LIST and DUMP's order
// (Redis's is its dict's, which varies from run to run).
func (s *libSet) sorted() []*Library {
	out := make([]*Library, 0, len(s.libs))
	for _, lib := range s.libs {
		out = append(out, lib)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// bytes is the memory the libraries hold, as INFO's used_memory_functions
// tells it: their names and code, and their functions' names and
// descriptions.
func (s *libSet) bytes() int {
	n := 0
	for _, lib := range s.libs {
		n += len(lib.Name) + len(lib.Code)
		for _, f := range lib.funcs {
			n += len(f.Name)
			if f.Desc != nil {
				n += len(*f.Desc)
			}
		}
	}
	return n
}

// FunctionCounts returns the functions and libraries loaded (INFO's
// number_of_functions and number_of_libraries) and the memory they hold
// (used_memory_functions).
func (e *Engine) FunctionCounts() (functions, libraries, bytes int) {
	s := e.functionLibs()
	return len(s.funcs), len(s.libs), s.bytes()
}

// FunctionFlags returns the flags of the function FCALL or FCALL_RO
// would run, for the checks made before a command runs (Redis's
// fcallGetCommandFlags); ok is false when there is no such function.
func (e *Engine) FunctionFlags(name []byte) (flags ScriptFlag, ok bool) {
	f := e.functionLibs().lookup(name)
	if f == nil {
		return 0, false
	}
	return f.Flags, true
}

// LibraryPrecompiler is implemented by a FunctionEngine that can compile
// a library's code before FUNCTION LOAD takes the keyspace lock, as a
// Precompiler does an EVAL's script: a large library's compiling then
// holds no other client up. PrecompileLibrary compiles body (as Create
// is given it) and returns what it compiled, for Create to find, and
// how long compiling took; it is safe to call from any goroutine, while
// a script runs, and compiles one library or script at a time.
type LibraryPrecompiler interface {
	PrecompileLibrary(body []byte) (prepared any, took time.Duration)
}

// precompileFunctionLoad is FUNCTION LOAD's prepare (Command.prepare): a
// large library that the load would compile (its shebang, name and
// options right, no library of its name unless REPLACE) is compiled
// before the keyspace lock is taken.
func precompileFunctionLoad(c *Ctx) time.Duration {
	code := c.Args[len(c.Args)-1]
	if len(code) < PrecompileMin {
		return 0
	}
	replace := false
	for _, a := range c.Args[2 : len(c.Args)-1] {
		if !eqFold(a, "replace") {
			return 0
		}
		replace = true
	}
	md, msg := parseLibMeta(code)
	if msg != "" || !validFunctionName(md.name) {
		return 0
	}
	if !replace && c.Eng.functionLibs().libs[md.name] != nil {
		return 0
	}
	eng := c.Eng.funcs.engines[foldName(md.engine)] // (registered before serving: read only)
	if eng == nil {
		return 0
	}
	p, ok := eng.fe.(LibraryPrecompiler)
	if !ok {
		return 0
	}
	var took time.Duration
	c.Prepared, took = p.PrecompileLibrary(md.body)
	return took
}

// libMeta is a library's shebang line, parsed.
type libMeta struct {
	engine, name string
	body         []byte // the code from the newline that ends the shebang on
}

// parseLibMeta is functionExtractLibMetaData: "#!<engine> name=<name>".
func parseLibMeta(code []byte) (libMeta, string) {
	var md libMeta
	if !bytes.HasPrefix(code, []byte("#!")) {
		return md, "Missing library metadata"
	}
	// strchr(payload, '\n'): a NUL byte ends the C string first
	end := bytes.IndexAny(code, "\n\x00")
	if end < 0 || code[end] == 0 {
		return md, "Invalid library metadata"
	}
	parts, ok := SplitArgs(string(code[:end]))
	if !ok || len(parts) == 0 {
		return md, "Invalid library metadata"
	}
	md.engine = parts[0][min(2, len(parts[0])):]
	named := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && eqFold([]byte(p[:5]), "name=") {
			if named {
				return md, "Invalid metadata value, name argument was given multiple times"
			}
			md.name, named = p[5:], true
			continue
		}
		return md, "Invalid metadata value given: " + p
	}
	if !named {
		return md, "Library name was not given"
	}
	md.body = code[end:]
	return md, ""
}

// createLibrary is functionsCreateWithLibraryCtx: it parses code's
// shebang, has the engine create the library and links it into s,
// replacing a library of the same name only when replace is set. It
// returns the new library or an error text without "ERR ". prepared is
// what the engine precompiled of it (LibraryPrecompiler), or nil.
func (e *Engine) createLibrary(s *libSet, code []byte, replace bool, prepared any, timeout time.Duration) (*Library, string) {
	md, msg := parseLibMeta(code)
	if msg != "" {
		return nil, msg
	}
	if !validFunctionName(md.name) {
		return nil, errFunctionName
	}
	eng := e.funcs.engines[foldName(md.engine)]
	if eng == nil {
		return nil, "Engine '" + md.engine + "' not found"
	}
	old := s.libs[md.name]
	if old != nil && !replace {
		return nil, "Library '" + md.name + "' already exists"
	}
	lib := &Library{Name: md.name, Engine: eng.name, Code: code, eng: eng.fe}
	if msg := eng.fe.Create(lib, md.body, prepared, timeout); msg != "" {
		return nil, msg
	}
	if len(lib.funcs) == 0 {
		return nil, "No functions registered"
	}
	for _, f := range lib.funcs {
		if other := s.funcs[foldName(f.Name)]; other != nil && other.Lib != old {
			return nil, "Function " + f.Name + " already exists"
		}
	}
	if old != nil {
		s.unlink(old)
	}
	s.link(lib)
	return lib, ""
}

// join is libraryJoin: it adds src's libraries to s. A library of a name
// s has fails the join, or with replace takes its place; a function of a
// name s has in another library fails it.
func (s *libSet) join(src *libSet, replace bool) string {
	for _, lib := range src.sorted() {
		if old := s.libs[lib.Name]; old != nil {
			if !replace {
				return "Library " + lib.Name + " already exists"
			}
			s.unlink(old)
		}
	}
	for _, lib := range src.sorted() {
		for _, f := range lib.funcs {
			if s.funcs[foldName(f.Name)] != nil {
				return "Function " + f.Name + " already exists"
			}
		}
	}
	for _, lib := range src.libs {
		s.link(lib)
	}
	return ""
}

func registerFunctions(e *Engine) {
	e.Register(
		// The keys follow numkeys, as EVAL's (Redis's functionGetKeys).
		&Command{Name: "fcall", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true,
			Summary: "Invoke a function", Fn: func(c *Ctx) { fcallGeneric(c, false) }},
		&Command{Name: "fcall_ro", Arity: -3, Flags: FlagNoScript | FlagStale | FlagSkipMonitor | FlagReadonly | FlagNoMandatoryKeys, Keys: numkeysKeys(0, 2), Group: "scripting", exclusive: true,
			Summary: "Invoke a read-only function", Fn: func(c *Ctx) { fcallGeneric(c, true) }},
		&Command{Name: "function", Arity: -2, Group: "scripting", Summary: "A container for function commands", Subs: map[string]*Command{
			"delete": {Arity: 3, Flags: FlagNoScript | FlagWrite, Summary: "Delete a function by name", Fn: cmdFunctionDelete},
			"dump":   {Arity: 2, Flags: FlagNoScript, Summary: "Dump all functions into a serialized binary payload", Fn: cmdFunctionDump},
			"flush":  {Arity: -2, Flags: FlagNoScript | FlagWrite, Summary: "Deleting all functions", Fn: cmdFunctionFlush},
			"help": {Arity: 2, Flags: FlagNoKeys | FlagLoading | FlagStale, Summary: "Show helpful text about the different subcommands",
				Fn: func(c *Ctx) { WriteHelp(c, functionHelp) }},
			// KILL and STATS answer while a script is busy: without the
			// keyspace lock, which the script holds.
			"kill":    {Arity: 2, Flags: FlagNoScript | FlagAllowBusy | FlagNoKeys, Summary: "Kill the function currently in execution.", Fn: func(c *Ctx) { killGeneric(c, false) }},
			"list":    {Arity: -2, Flags: FlagNoScript, Summary: "List information about all the functions", Fn: cmdFunctionList},
			"load":    {Arity: -3, Flags: FlagNoScript | FlagWrite | FlagDenyOOM, Summary: "Create a function with the given arguments (name, code, description)", Fn: cmdFunctionLoad, prepare: precompileFunctionLoad},
			"restore": {Arity: -3, Flags: FlagNoScript | FlagWrite | FlagDenyOOM, Summary: "Restore all the functions on the given payload", Fn: cmdFunctionRestore},
			"stats":   {Arity: 2, Flags: FlagNoScript | FlagAllowBusy | FlagNoKeys, Summary: "Return information about the function currently running (name, description, duration)", Fn: cmdFunctionStats},
		}},
	)
}

// FCALL function numkeys [key ...] [arg ...] (and FCALL_RO)
func fcallGeneric(c *Ctx, readOnly bool) {
	e := c.Eng
	fn := e.functionLibs().lookup(c.Args[1])
	if fn == nil {
		c.W.WriteError(ErrFunctionNotFound)
		return
	}
	numkeys, ok := parseInt(c.Args[2])
	switch {
	case !ok:
		c.W.WriteError(errFunctionNumKeys)
		return
	case numkeys > int64(len(c.Args)-3):
		c.W.WriteError(ErrNumKeysTooMany)
		return
	case numkeys < 0:
		c.W.WriteError(ErrNumKeysNeg)
		return
	}
	// scriptPrepareForRun: a function that may write is not run by
	// FCALL_RO; one flagged no-writes runs read-only under either.
	noWrites := fn.Flags&ScriptNoWrites != 0
	if readOnly && !noWrites {
		c.W.WriteError(ErrScriptWriteFlagRO)
		return
	}
	run := &e.scriptRun
	*run = ScriptRun{ReadOnly: readOnly || noWrites, AllowOOM: fn.Flags&ScriptAllowOOM != 0}
	c.Script = run
	e.scriptBegin(fn, c.Args)
	defer e.scriptEnd() // as in evalGeneric
	fn.Lib.eng.Call(c, fn, c.Args[3:3+numkeys], c.Args[3+numkeys:])
	c.Script = nil
	e.restoreDB(c) // a SELECT in the function lasted for it only
}

// FUNCTION LOAD [REPLACE] function-code
func cmdFunctionLoad(c *Ctx) {
	replace := false
	i := 2
	for ; i < len(c.Args)-1; i++ {
		if !eqFold(c.Args[i], "replace") {
			c.W.WriteError(errorLine("ERR Unknown option given: " + string(c.Args[i])))
			return
		}
		replace = true
	}
	e := c.Eng
	s := e.functionLibs().clone()
	lib, msg := e.createLibrary(s, bytes.Clone(c.Args[i]), replace, c.Prepared, FunctionLoadTimeout)
	if msg != "" {
		c.W.WriteError("ERR " + msg)
		return
	}
	e.funcs.libs.Store(s)
	e.dirty++ // the libraries are data too (functions.c)
	c.W.WriteBulkString(lib.Name)
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *Ctx) {
	e := c.Eng
	lib := e.functionLibs().libs[string(c.Args[2])]
	if lib == nil {
		c.W.WriteError("ERR Library not found")
		return
	}
	s := e.functionLibs().clone()
	s.unlink(lib)
	e.funcs.libs.Store(s)
	e.dirty++
	c.W.WriteStatus(statusOK)
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Ctx) {
	switch {
	case len(c.Args) > 3:
		c.W.WriteError(ErrSubcommandSyntax(c.Args))
		return
	case len(c.Args) == 3 && !eqFold(c.Args[2], "sync") && !eqFold(c.Args[2], "async"):
		c.W.WriteError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.Eng.funcs.libs.Store(newLibSet())
	c.Eng.dirty++
	c.W.WriteStatus(statusOK)
}

// FUNCTION STATS
//
// As a command sent while a script runs reaches Redis only once the
// script is busy (or over), it waits for one or the other; a busy EVAL
// gets BUSY.
func cmdFunctionStats(c *Ctx) {
	e := c.Eng
	fn, args, start := e.busyScript(c)
	if start != 0 && fn == nil {
		e.gate.Unlock()
		c.W.WriteError(ErrBusy)
		return
	}
	c.W.WriteMap(2)
	c.W.WriteBulkString("running_script")
	if start == 0 {
		c.W.WriteNull()
	} else {
		c.W.WriteMap(3)
		c.W.WriteBulkString("name")
		c.W.WriteBulkString(fn.Name)
		c.W.WriteBulkString("command")
		c.W.WriteArray(len(args))
		for _, a := range args {
			c.W.WriteBulk(a)
		}
		c.W.WriteBulkString("duration_ms")
		c.W.WriteInt((time.Now().UnixNano() - start) / int64(time.Millisecond))
	}
	// args were the busy FCALL's: from here on its reply may be written
	e.gate.Unlock()
	s := e.functionLibs()
	names := make([]string, 0, len(e.funcs.engines))
	for k := range e.funcs.engines {
		names = append(names, k)
	}
	sort.Strings(names)
	c.W.WriteBulkString("engines")
	c.W.WriteMap(len(names))
	for _, k := range names {
		eng := e.funcs.engines[k]
		libs, funcs := 0, 0
		for _, lib := range s.libs {
			if lib.eng == eng.fe {
				libs++
				funcs += len(lib.funcs)
			}
		}
		c.W.WriteBulkString(eng.name)
		c.W.WriteMap(2)
		c.W.WriteBulkString("libraries_count")
		c.W.WriteInt(int64(libs))
		c.W.WriteBulkString("functions_count")
		c.W.WriteInt(int64(funcs))
	}
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
func cmdFunctionList(c *Ctx) {
	withCode := false
	var pattern []byte
	for i := 2; i < len(c.Args); i++ {
		a := c.Args[i]
		if !withCode && eqFold(a, "withcode") {
			withCode = true
			continue
		}
		if pattern == nil && eqFold(a, "libraryname") {
			if i >= len(c.Args)-1 {
				c.W.WriteError("ERR library name argument was not given")
				return
			}
			i++
			pattern = c.Args[i]
			continue
		}
		c.W.WriteError(errorLine("ERR Unknown argument " + string(cstr(a)))) // sdscatfmt %s
		return
	}
	var libs []*Library
	for _, lib := range c.Eng.functionLibs().sorted() {
		if pattern == nil || Match(pattern, []byte(lib.Name), true) {
			libs = append(libs, lib)
		}
	}
	c.W.WriteArray(len(libs))
	for _, lib := range libs {
		n := 3
		if withCode {
			n++
		}
		c.W.WriteMap(n)
		c.W.WriteBulkString("library_name")
		c.W.WriteBulkString(lib.Name)
		c.W.WriteBulkString("engine")
		c.W.WriteBulkString(lib.Engine)
		c.W.WriteBulkString("functions")
		c.W.WriteArray(len(lib.funcs))
		for _, f := range lib.funcs {
			c.W.WriteMap(3)
			c.W.WriteBulkString("name")
			c.W.WriteBulkString(f.Name)
			c.W.WriteBulkString("description")
			if f.Desc != nil {
				c.W.WriteBulkString(*f.Desc)
			} else {
				c.W.WriteNull()
			}
			c.W.WriteBulkString("flags")
			var names []string
			for _, fl := range scriptFlagNames {
				if f.Flags&fl.f != 0 {
					names = append(names, fl.name)
				}
			}
			c.W.WriteSet(len(names))
			for _, name := range names {
				c.W.WriteStatus(name)
			}
		}
		if withCode {
			c.W.WriteBulkString("library_code")
			c.W.WriteBulk(lib.Code)
		}
	}
}

// FUNCTION DUMP
//
// The payload is Redis's: each library as RDB_OPCODE_FUNCTION2 and its
// code as an RDB string, then the RDB version and a CRC-64.
func cmdFunctionDump(c *Ctx) {
	var p []byte
	for _, lib := range c.Eng.functionLibs().sorted() {
		p = append(p, rdbOpFunction2)
		p = rdbAppendString(p, lib.Code)
	}
	c.W.WriteBulk(dumpFooter(p))
}

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
//
// Unlike Redis, which loads a payload's libraries with no time limit
// (a library that loops forever hangs it), each is bounded as FUNCTION
// LOAD bounds one.
func cmdFunctionRestore(c *Ctx) {
	if len(c.Args) > 4 {
		c.W.WriteError(ErrSubcommandSyntax(c.Args))
		return
	}
	policy := "append"
	if len(c.Args) == 4 {
		switch {
		case eqFold(c.Args[3], "append"), eqFold(c.Args[3], "replace"), eqFold(c.Args[3], "flush"):
			policy = foldName(string(c.Args[3]))
		default:
			c.W.WriteError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	data := c.Args[2]
	if !verifyDumpPayload(data) {
		c.W.WriteError("ERR DUMP payload version or checksum are wrong")
		return
	}
	e := c.Eng
	src, msg := e.loadDump(data)
	if msg != "" {
		c.W.WriteError("ERR " + msg)
		return
	}
	if policy != "flush" {
		s := e.functionLibs().clone()
		if msg := s.join(src, policy == "replace"); msg != "" {
			c.W.WriteError("ERR " + msg)
			return
		}
		src = s
	}
	e.funcs.libs.Store(src)
	e.dirty++
	c.W.WriteStatus(statusOK)
}

// loadDump creates the libraries of a verified DUMP payload into a new
// set, as FUNCTION RESTORE reads them before its policy applies.
func (e *Engine) loadDump(data []byte) (*libSet, string) {
	s := newLibSet()
	r := &rdbReader{b: data}
	// everything but the footer's ten bytes (a string may still read
	// into them, as in Redis)
	for len(data)-r.pos > 10 {
		typ, _ := r.byte()
		var code []byte
		switch typ {
		case rdbOpFunction2:
			var ok bool
			if code, ok = r.string(); !ok {
				return nil, "Failed loading library payload"
			}
		case rdbOpFunction:
			var msg string
			if code, msg = r.oldFunction(); msg != "" {
				return nil, msg
			}
		default:
			return nil, "given type is not a function"
		}
		if _, msg := e.createLibrary(s, code, false, nil, FunctionLoadTimeout); msg != "" {
			return nil, msg
		}
	}
	return s, ""
}

// oldFunction reads a library in the format of Redis 7.0's release
// candidates (RDB_OPCODE_FUNCTION) and returns its code in today's form.
func (r *rdbReader) oldFunction() ([]byte, string) {
	name, ok := r.string()
	if !ok {
		return nil, "Failed loading library name"
	}
	engine, ok := r.string()
	if !ok {
		return nil, "Failed loading engine name"
	}
	hasDesc, _, ok := r.length()
	if !ok {
		return nil, "Failed loading library description indicator"
	}
	if hasDesc != 0 {
		if _, ok := r.string(); !ok {
			return nil, "Failed loading library description"
		}
	}
	blob, ok := r.string()
	if !ok {
		return nil, "Failed loading library blob"
	}
	code := append([]byte("#!"), engine...)
	code = append(append(append(code, " name="...), name...), '\n')
	return append(code, blob...), ""
}

// errorLine is msg as Redis's addReplyErrorFormat sends it: CR and LF
// trimmed from its ends and turned to spaces within.
func errorLine(msg string) string {
	b := []byte(strings.Trim(msg, "\r\n"))
	for i, ch := range b {
		if ch == '\r' || ch == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Library description",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Prints this help.",
}
