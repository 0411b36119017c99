package engine

import "testing"

// The encoding thresholds are read when a command chooses or changes an
// encoding, so a change applies to the next write; replies are
// redis-server's (compat/diff/testdata/encoding.txt diffs these and more).
func TestEncodingLimits_ApplyToTheNextWrite(t *testing.T) {
	e := newTestEngine(t)
	if got := e.EncodingLimits(); got != DefaultEncodingLimits() {
		t.Fatalf("a new engine has %+v", got)
	}
	lim := DefaultEncodingLimits()
	set := func(f func(l *EncodingLimits)) {
		f(&lim)
		e.SetEncodingLimits(lim)
	}
	steps := []struct {
		limits func(l *EncodingLimits)
		args   []string
		want   string
	}{
		// hashes: entries, checked after an update too; value length
		{nil, []string{"HSET", "h", "a", "1", "b", "2", "c", "3"}, ":3"},
		{func(l *EncodingLimits) { l.HashMaxListpackEntries = 2 }, []string{"OBJECT", "ENCODING", "h"}, "$listpack"},
		{nil, []string{"HSET", "h", "a", "9"}, ":0"},
		{nil, []string{"OBJECT", "ENCODING", "h"}, "$hashtable"},
		{func(l *EncodingLimits) { l.HashMaxListpackValue = 3 }, []string{"HSET", "h2", "f", "123"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "h2"}, "$listpack"},
		{nil, []string{"HINCRBY", "h2", "f", "1000"}, ":1123"},
		{nil, []string{"OBJECT", "ENCODING", "h2"}, "$hashtable"},
		{func(l *EncodingLimits) { l.HashMaxListpackEntries = 0 }, []string{"HSETNX", "h3", "a", "1"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "h3"}, "$hashtable"},
		// sets: set-max-intset-entries on add and on the STORE forms
		{func(l *EncodingLimits) { l.SetMaxIntsetEntries = 2 }, []string{"SADD", "s", "1", "2"}, ":2"},
		{nil, []string{"OBJECT", "ENCODING", "s"}, "$intset"},
		{nil, []string{"SADD", "s", "3"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "s"}, "$hashtable"},
		{nil, []string{"SADD", "s2", "1", "2"}, ":2"},
		{nil, []string{"SUNIONSTORE", "s3", "s2"}, ":2"},
		{nil, []string{"OBJECT", "ENCODING", "s3"}, "$intset"},
		{func(l *EncodingLimits) { l.SetMaxIntsetEntries = 1 }, []string{"SUNIONSTORE", "s3", "s2"}, ":2"},
		{nil, []string{"OBJECT", "ENCODING", "s3"}, "$hashtable"},
		{nil, []string{"SMEMBERS", "s2"}, "~2 $1 $2"}, // unchanged until written
		// sorted sets: creation, add, STORE results
		{func(l *EncodingLimits) { l.ZsetMaxListpackEntries = 0 }, []string{"ZADD", "z", "1", "a"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "z"}, "$skiplist"},
		{func(l *EncodingLimits) { l.ZsetMaxListpackEntries = 2 }, []string{"ZADD", "z2", "1", "a", "2", "b"}, ":2"},
		{nil, []string{"OBJECT", "ENCODING", "z2"}, "$listpack"},
		{nil, []string{"ZADD", "z2", "3", "c"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "z2"}, "$skiplist"},
		{nil, []string{"ZUNIONSTORE", "z3", "1", "z2"}, ":3"},
		{nil, []string{"OBJECT", "ENCODING", "z3"}, "$skiplist"},
		{func(l *EncodingLimits) { l.ZsetMaxListpackEntries = 3 }, []string{"ZUNIONSTORE", "z3", "1", "z2"}, ":3"},
		{nil, []string{"OBJECT", "ENCODING", "z3"}, "$listpack"},
		{func(l *EncodingLimits) { l.ZsetMaxListpackValue = 1 }, []string{"ZRANGESTORE", "z4", "z2", "0", "0"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "z4"}, "$listpack"},
		{nil, []string{"ZADD", "z4", "1", "bb"}, ":1"},
		{nil, []string{"OBJECT", "ENCODING", "z4"}, "$skiplist"},
	}
	for _, st := range steps {
		if st.limits != nil {
			set(st.limits)
		}
		e.expect(st.want, st.args...)
	}
}
