package diff

// knownDiff is a case where tumbler's reply differs from Redis's and the
// fix lies outside this suite's reach. The case still runs: while it
// differs it is skipped with the reason; once it matches, the test fails so
// the entry gets removed.
type knownDiff struct {
	// match must be a prefix of one of the case's lines; it guards against
	// an entry that silently points at another case after lines moved.
	match string
	// owner is where the fix lies.
	owner  string
	reason string
}

// timingDiffs are the knownDiffs whose oracle reply depends on how fast
// Redis runs the case: matching Redis on some runs does not mean the entry
// is stale.
var timingDiffs = map[string]bool{"eval.txt:565": true}

// knownDiffs is keyed by case name (file:line of the case's first line).
var knownDiffs = map[string]knownDiff{
	// ---- luavm: redis.error_reply ----

	// ---- luavm: error() objects that are not strings or tables ----

	// ---- version difference, not a bug ----
	"eval.txt:565": {`EVAL "redis.call('set', KEYS[1], 'v', 'PX', 1); local t = 0; for i = 1, 200000 do t = t + i end; return redis.call('pttl'`, "none (deliberate)",
		"Redis 7.0's TTL/PTTL measure from mstime() even inside a script; 7.2+ use commandTimeSnapshot(), which tumbler follows (docs/semantics.md): inside a script a key set with PX 1 has PTTL 1 in 7.2 and tumbler, 0 in the 7.0 oracle (1 too when its loop ends within the millisecond)"},
}

// knownWireDiffs are the wire suite's (wire_test.go) cases where tumbler
// differs, keyed by subtest name; match is informative only. Like
// knownDiffs, a listed case that matches Redis again fails.
var knownWireDiffs = map[string]knownDiff{
	"TestWire_Protocol/multibulk_length_too_large": {"*1048577", "none (deliberate)",
		"tumbler caps a request at 1M arguments (Config.MaxMultibulkLen, docs/configuration.md Limits); Redis 7.0 accepts up to INT_MAX from an authenticated client"},
	"TestWire_RequirePass/HELLO_AUTH_wrong": {"HELLO", "none (version)",
		"tumbler has Redis 7.2's NOAUTH text for HELLO ('HELLO <proto> AUTH <user> <pass>'); the 7.0 oracle says 'HELLO AUTH <user> <pass>'"},
	"TestWire_IdleTimeout/tracking_client_times_out": {"TRACKING", "server/conn.go",
		"tumbler exempts client-tracking connections (docs/configuration.md); Redis's clientsCronHandleTimeout exempts only replicas/MONITOR, blocked and pub/sub clients"},
}
