// Package engine owns tumbler's keyspace, its command table, reply writing
// and the error texts, all copied verbatim from Redis 7.
//
// Every command, from the network or from a script, passes through one
// dispatcher (Engine.Exec for clients, Ctx.Call for scripts) that checks
// arity and flags centrally, as Redis's processCommand and scriptCall do.
// Replies are written to a Writer: the server encodes them as RESP2/RESP3,
// the Lua VM turns them into Lua values. The engine never imports the
// network, redcon, gopher-lua or the server; scripting reaches it through
// the Scripter and FunctionEngine interfaces defined here.
//
// # Time
//
// Each command reads the clock once (Ctx.Now, monotonic milliseconds); a
// script's nested calls reuse its caller's reading, so time is frozen for
// the whole script. A key is gone when now > deadline (as Redis's
// keyIsExpired), for lazy expiry on
// access and for active reclamation (ReclaimDue) alike.
//
// # Concurrency
//
// One mutex guards the keyspace, as Redis's single thread does: a command
// runs to completion, and a script runs all its calls, with no other command
// interleaved. Commands flagged NoKeys (connection commands such as PING or
// HELLO) run without the lock. A script (or function) that has run longer
// than the busy threshold makes commands fail with BUSY, both new ones and
// those already waiting behind it, except those flagged AllowBusy (SCRIPT
// KILL and FUNCTION KILL among them).
//
// There are 16 numbered databases (Config.Databases): databases.go.
package engine
