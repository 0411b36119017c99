// Package replay proves clients that cannot be installed here (Java, .NET,
// Python ones newer than Debian's) by replaying the exact command sequences
// their sources send, as raw RESP over several connections at once, against
// a real redis-server (the oracle) and against tumbler, and diffing every
// frame that comes back.
//
// Each file in testdata/*.replay is one scenario read from one client's
// source: its handshake, its lock scripts byte for byte (so their SHA1s are
// the client's), and the interleaving of its connections (a waiter
// SUBSCRIBEd on one connection gets the message an unlock script PUBLISHes
// on another; a BLPOP is woken by an LPUSH inside Lua; a WATCHed key is
// written by someone else before EXEC).
//
// # Format
//
// Blank lines and lines starting with # are ignored. A file starts with a
// header naming where its sequences come from; all three are required:
//
//	@client  Redisson
//	@version redisson-4.7.0 (commit 0c286e86...)
//	@source  redisson/src/main/java/org/redisson/RedissonLock.java
//
// (@source repeats, one path in the client's repository a line.) Then the
// steps, one a line:
//
//	[c1] SET k v NX PX 30000     send on connection c1, read one frame, compare
//	[c2] @send BLPOP q 0         send, read nothing now (the reply comes later)
//	[c2] <recv>                  read one more frame (a reply or a push), compare
//	@sleep 50ms                  pause (at most 2s), e.g. so a BLPOP is blocked
//	@expect "+OK\r\n"            the next step's frame must be this (see below)
//
//	[c1] ? @capture cid CLIENT ID            keep the reply's value as cid
//	[c2] CLIENT TRACKING ON REDIRECT ${cid}  ... and send it back
//
// Connections are named by the word in brackets and opened on first use;
// every file runs on fresh servers and fresh connections. Arguments are split
// as compat/diff splits them: whitespace separates, '...' is literal, "..."
// knows \n \r \t \0 \\ \" \' and \xHH. A connection with replies still owed
// to <recv> (after @send) may not run a command, so pipelines are written as
// @send lines followed by one <recv> each. A connection that needs RESP3
// sends HELLO 3 itself, as its client does.
//
// Values that differ by nature between the two servers and must be sent
// back (a connection's CLIENT ID, for REDIRECT or CLIENT KILL ID) are kept
// with @capture NAME, after the step's marker if it has one: each server's
// reply (an integer, a simple or a bulk string) is kept for that server,
// and ${NAME} in a later argument is replaced, on each server, by the
// value that server gave. A variable must be captured once, before its
// first use.
//
// # Comparisons
//
// Frames compare byte for byte unless the step carries a marker between the
// connection and the command (or <recv>). Markers are for values that differ
// by nature, and for nothing else:
//
//	~N   integers (at any depth) within N; a bare ~ means 2 for TTL and
//	     EXPIRETIME, 1500 for PTTL and PEXPIRETIME (TTLs and scripts
//	     returning pttl)
//	%    aggregates compare as multisets (KEYS, LRANGE of unordered pushes)
//	?    the reply type only (CLIENT ID, INFO)
//	?a,b the reply is a map (RESP3 %) or a flat key/value array (RESP2 *):
//	     same keys in the same order, every value byte for byte except
//	     those of fields a and b, which need only the same type (HELLO's
//	     server, version and id)
//
// @expect "<RESP>" gives the frame the next command or <recv> must produce,
// replacing the oracle's, for commands the oracle (Redis 7.0) is too old to
// know: CLIENT SETINFO (7.2), SET ... IFEQ and DELEX (8.4). The oracle still
// runs the step and must answer, but its frame is not used. A file that
// uses @expect quotes, in its header comment, the Redis documentation the
// expected frames come from.
//
// Every EVALSHA must name the SHA1 of a script that appears in the same file
// (as an EVAL or SCRIPT LOAD argument), so a mistyped hash cannot turn a
// replay into NOSCRIPT errors both servers agree on.
//
// # Running
//
//	cd compat && go test ./replay/
//
// TestReplay starts a redis-server of its own per file on a free loopback
// port (with DEBUG enabled, as RunT enables it for tumbler) and an
// in-process tumbler (server.RunT), runs each file on both in
// lockstep (each step on the oracle, then on tumbler) and reports every step
// whose frames differ, with file:line, the step and both frames. A file the
// oracle itself does not answer as written (a <recv> that gets no frame, a
// closed connection, a frame no step read) fails the test whatever else: the
// replay is wrong. Without redis-server on PATH the test is skipped, unless
// TUMBLER_REQUIRE_REDIS=1. TUMBLER_REPLAY_VERBOSE=1 logs every step with
// both frames.
//
// Files that need commands tumbler does not have yet are listed in pending
// (replay_test.go) with the reason: they still run, are skipped with their
// first difference while they differ, and fail once they match completely,
// so the entry gets removed.
//
// Reads are bounded (5s for a reply, 2s for a <recv>), so a server that
// never answers fails the step instead of hanging the suite; after a failed
// read a connection is not used again and its later steps are reported as
// such.
package replay
