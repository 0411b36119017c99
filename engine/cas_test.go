package engine

import (
	"strings"
	"testing"
	"time"
)

// Redis 8.4's compare-and-set / compare-and-delete, checked here because
// the redis-server oracle (7.0) has no IFEQ, DELEX or DIGEST. Expected
// digests come from the redis.io DIGEST page and from libxxhash.

func TestDigest_XXH3HexWithLeadingZeros(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "Hello world")
	e.expect("$b6acb9d84a38ff74", "DIGEST", "k") // the redis.io example
	zeros := "v8lf0c11xh8ymlqztfd3eeq16kfn4sspw7fqmnuuq3k3t75em5wdizgcdw7uc26nnf961u2jkfzkjytls2kwlj7626sd"
	e.expect("+OK", "SET", "z", zeros)
	e.expect("$00006c38adf31777", "DIGEST", "z") // redis/redis#14496: always 16 digits
	e.expect("(nil)", "DIGEST", "missing")
	e.expect(":1", "RPUSH", "l", "a")
	e.expect("-"+ErrWrongType, "DIGEST", "l")
	e.expect("-ERR wrong number of arguments for 'digest' command", "DIGEST")
	e.expect("-ERR wrong number of arguments for 'digest' command", "DIGEST", "k", "x")
}

func TestSet_IFEQ(t *testing.T) {
	e := newTestEngine(t)
	e.expect("(nil)", "SET", "k", "v", "IFEQ", "x") // missing: not created
	e.expect(":0", "EXISTS", "k")
	e.expect("+OK", "SET", "k", "v1", "EX", "100")
	e.expect("(nil)", "SET", "k", "v2", "IFEQ", "other")
	e.expect("$v1", "GET", "k")
	e.expect(":100", "TTL", "k")
	e.expect("+OK", "SET", "k", "v2", "ifeq", "v1")
	e.expect("$v2", "GET", "k")
	e.expect(":-1", "TTL", "k") // a successful SET discards the TTL
	e.expect("+OK", "SET", "k", "v3", "IFEQ", "v2", "PX", "5000")
	e.expect(":5000", "PTTL", "k")
	e.expect("+OK", "SET", "k", "v4", "KEEPTTL", "IFEQ", "v3")
	e.expect(":5000", "PTTL", "k")
	e.expect("+OK", "SET", "k", "v5", "IFEQ", "a", "IFEQ", "v4") // the same condition repeated: the last wins
	e.expect("$v5", "GET", "k")
}

func TestSet_IFNE(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "v1", "IFNE", "x") // missing: created
	e.expect("$v1", "GET", "k")
	e.expect("(nil)", "SET", "k", "v2", "IFNE", "v1")
	e.expect("$v1", "GET", "k")
	e.expect("+OK", "SET", "k", "v2", "IFNE", "other")
	e.expect("$v2", "GET", "k")
}

func TestSet_IFDEQAndIFDNE(t *testing.T) {
	e := newTestEngine(t)
	const d = "b6acb9d84a38ff74" // DIGEST of "Hello world"
	e.expect("(nil)", "SET", "k", "v", "IFDEQ", d)
	e.expect(":0", "EXISTS", "k")
	e.expect("+OK", "SET", "k", "Hello world")
	e.expect("(nil)", "SET", "k", "v", "IFDNE", d)
	e.expect("+OK", "SET", "k", "v", "IFDEQ", strings.ToUpper(d)) // hex case does not matter
	e.expect("$v", "GET", "k")
	e.expect("(nil)", "SET", "k", "w", "IFDEQ", d)
	e.expect("+OK", "SET", "k", "w", "IFDNE", d)
	e.expect("+OK", "SET", "new", "x", "IFDNE", d) // missing: created
	e.expect("$x", "GET", "new")
	for _, bad := range []string{"6c38adf31777", "b6acb9d84a38ff740", ""} {
		e.expect("-"+ErrDigestLength, "SET", "k", "v", "IFDEQ", bad)
		e.expect("-"+ErrDigestLength, "SET", "missing", "v", "IFDNE", bad)
	}
	e.expect(":0", "EXISTS", "missing")
	e.expect("(nil)", "SET", "k", "v", "IFDEQ", "zzzzzzzzzzzzzzzz") // 16 characters that match nothing
}

func TestSet_ConditionWithGET(t *testing.T) {
	e := newTestEngine(t)
	e.expect("(nil)", "SET", "k", "v", "IFEQ", "a", "GET")
	e.expect(":0", "EXISTS", "k")
	e.expect("(nil)", "SET", "k", "v1", "IFNE", "a", "GET")
	e.expect("$v1", "SET", "k", "v2", "GET", "IFEQ", "nope") // old value even when not set
	e.expect("$v1", "GET", "k")
	e.expect("$v1", "SET", "k", "v2", "GET", "IFEQ", "v1")
	e.expect("$v2", "GET", "k")
}

func TestSet_ConditionOnOtherKindIsWrongType(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "RPUSH", "l", "a")
	for _, cond := range [][]string{{"IFEQ", "a"}, {"IFNE", "a"}, {"IFDEQ", "0123456789abcdef"}, {"IFDNE", "0123456789abcdef"}} {
		e.expect("-"+ErrWrongType, append([]string{"SET", "l", "v"}, cond...)...)
		e.expect("-"+ErrWrongType, append([]string{"SET", "l", "v", "GET"}, cond...)...)
	}
	e.expect("$a", "LINDEX", "l", "0")
	e.expect("+OK", "SET", "l", "v") // plain SET still overwrites any kind
}

func TestSet_ConditionConflictsAreSyntaxErrors(t *testing.T) {
	e := newTestEngine(t)
	for _, args := range [][]string{
		{"SET", "k", "v", "NX", "IFEQ", "a"},
		{"SET", "k", "v", "IFEQ", "a", "XX"},
		{"SET", "k", "v", "IFEQ", "a", "IFNE", "b"},
		{"SET", "k", "v", "IFDEQ", "0123456789abcdef", "IFEQ", "a"},
		{"SET", "k", "v", "IFDNE", "0123456789abcdef", "IFDEQ", "0123456789abcdef"},
		{"SET", "k", "v", "IFEQ"},
		{"GETEX", "k", "IFEQ", "a"},
	} {
		e.expect("-"+ErrSyntax, args...)
	}
	e.expect(":0", "EXISTS", "k")
	e.expect(":1", "SETNX", "k", "v") // SETNX and friends are untouched
	e.expect(":0", "SETNX", "k", "v")
}

func TestDelex(t *testing.T) {
	e := newTestEngine(t)
	// without a condition: any kind, like DEL of one key
	e.expect(":1", "RPUSH", "l", "a")
	e.expect(":1", "DELEX", "l")
	e.expect(":0", "DELEX", "l")
	e.expect("+OK", "SET", "k", "token")
	e.expect(":0", "DELEX", "k", "IFEQ", "other")
	e.expect(":1", "DELEX", "k", "ifeq", "token")
	e.expect(":0", "EXISTS", "k")
	e.expect("+OK", "SET", "k", "token")
	e.expect(":0", "DELEX", "k", "IFNE", "token")
	e.expect(":1", "DELEX", "k", "IFNE", "other")
	e.expect("+OK", "SET", "k", "Hello world")
	e.expect(":0", "DELEX", "k", "IFDNE", "B6ACB9D84A38FF74")
	e.expect(":0", "DELEX", "k", "IFDEQ", "0000000000000000")
	e.expect("-"+ErrDigestLength, "DELEX", "k", "IFDEQ", "b6acb9d84a38ff7")
	e.expect(":1", "DELEX", "k", "IFDEQ", "B6ACB9D84A38FF74")
	e.expect("+OK", "SET", "k", "x")
	e.expect(":1", "DELEX", "k", "IFDNE", "b6acb9d84a38ff74")
	// a missing key is not deleted, whatever the condition
	e.expect(":0", "DELEX", "missing", "IFNE", "x")
	e.expect(":0", "DELEX", "missing", "IFDNE", "short")
	// a condition needs a string
	e.expect(":1", "HSET", "h", "f", "v")
	e.expect("-"+ErrWrongType, "DELEX", "h", "IFEQ", "v")
	e.expect(":1", "EXISTS", "h")
	e.expect("-"+ErrSyntax, "DELEX", "k", "IFGT", "v")
	e.expect("-ERR wrong number of arguments for 'delex' command", "DELEX", "k", "IFEQ")
	e.expect("-ERR wrong number of arguments for 'delex' command", "DELEX", "k", "IFEQ", "a", "b")
	e.expect("-ERR wrong number of arguments for 'delex' command", "DELEX")
}

func TestDelex_ExpiredKeyIsMissing(t *testing.T) {
	e := newTestEngine(t)
	e.expect("+OK", "SET", "k", "token", "PX", "10")
	e.clock.Advance(11 * time.Millisecond) // past the deadline's millisecond
	e.expect(":0", "DELEX", "k", "IFEQ", "token")
	e.expect("(nil)", "SET", "k", "v", "IFEQ", "token")
}

// The version stays 7.2.x: clients switch command sets at 8.x.
func TestVersion_StillReports72(t *testing.T) {
	if !strings.HasPrefix(Version, "7.2.") {
		t.Fatalf("Version = %q", Version)
	}
}
