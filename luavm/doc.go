// Package luavm runs EVAL scripts and FCALL functions for the engine with
// gopher-lua.
//
// It implements engine.Scripter: compiled chunks are cached by the
// lowercase SHA1 of the exact script bytes, one reused Lua state runs them
// (scripts are serialised by the engine's keyspace lock, so one state is
// enough), and redis.call goes straight to the engine's dispatcher with no
// RESP round trip. Values cross the boundary as Redis converts them
// (src/script_lua.c).
//
// It is also the Lua engine of function libraries (engine.FunctionEngine,
// functions.go): FUNCTION LOAD runs a library once, with only
// redis.register_function and a few fields to see, and FCALL calls the
// functions it registered, on the same state with globals of their own.
//
// The sandbox is Redis 7's: base (without dofile, loadfile, require,
// module, print, getfenv, setfenv), table, string, math, cjson, bit,
// struct and cmsgpack;
// no os, io, package or debug. Globals are read-only: assigning one fails with
// "Attempt to modify a readonly table", reading an unknown one with
// "Script attempted to access nonexistent global variable".
//
// # Concurrency
//
// Run, Create and Call are called with the engine's keyspace lock held and
// never concurrently with each other. Load, Exists and Flush take the cache's own
// lock. Kill may be called from any goroutine.
//
// # Caveats
//
// gopher-lua cannot bound a script's allocations, so memory is bounded
// from outside (memory.go, lua-memory-limit): a watchdog stops a script
// whose heap growth passes the limit, after the fact and approximately.
// A library call runs to its end before either stops the script, but
// the long ones are bounded: string.rep, table.concat and string.gsub
// refuse results past the size limit, and a pattern match (pattern.go)
// checks the script's context as it goes.
//
// Redis's struct and cmsgpack libraries (struct.go, cmsgpack.go) follow
// the C ones byte for byte, errors included, and cmsgpack.pack, like
// pairs, next and table.foreach, writes a map's pairs in Lua 5.1's order,
// rebuilt by a model of its tables (lua51table.go, pairs51.go,
// presize.go; the README says where it can differ). Error messages
// produced by the Lua runtime itself (for example indexing a nil value)
// are reworded as Lua 5.1 words them, naming the value at fault
// (vmerror.go).
package luavm
