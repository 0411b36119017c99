// Package diff is tumbler's differential test suite: command transcripts in
// testdata/ are sent, one command at a time, to a real redis-server and to
// an in-process tumbler, and the raw RESP replies are compared byte for
// byte. Redis is the oracle; a reply that differs is a tumbler bug unless it
// is listed as a known difference in the test.
//
// # Transcripts
//
// testdata/*.txt hold the cases. One command per line, its arguments split
// shell-style (whitespace separates; '...' is literal; "..." understands
// \n \r \t \0 \\ \" \' and \xHH; adjacent pieces join into one argument).
// A line whose first non-blank character is # is a comment. A blank line
// or a line "---" ends a case; every case starts on fresh connections to
// both servers after FLUSHALL and SCRIPT FLUSH.
//
// A line may start with a marker, separated from the command by a space:
//
//	~       the reply is an integer (or an aggregate of them) compared
//	        with a tolerance: 2 for TTL and EXPIRETIME, 1500 for PTTL and
//	        PEXPIRETIME; "~N" sets the tolerance N explicitly
//	%       aggregates compare as unordered multisets of their elements,
//	        at every depth (KEYS, SCAN)
//	?       only the reply's type (its first byte) must match (HELLO, TIME)
//
// and a line "@sleep DURATION" (Go syntax: 150ms) pauses the case.
//
// # Running
//
//	cd compat && go test ./diff/
//
// redis-server is started on a free loopback port; when it is not on PATH
// the test is skipped, unless TUMBLER_REQUIRE_REDIS=1, when it fails.
// TUMBLER_DIFF_VERBOSE=1 logs every command with both replies.
package diff
