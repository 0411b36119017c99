package diff

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMinReplicasInfoDiff compares what testdata/replicas.txt cannot
// (its replies hold run-dependent values): INFO replication's fields
// while min-replicas-to-write is on and off, and the commandstats of
// refused writes, without their times.
func TestMinReplicasInfoDiff(t *testing.T) {
	rc, tc := dialPair(t)
	names := regexp.MustCompile(`(?m)^([a-z_]+):.*$`)
	times := regexp.MustCompile(`usec=[0-9]+,usec_per_call=[0-9.]+`)
	both := func(args ...string) (redis, tumbler string) {
		t.Helper()
		r, g := do(t, rc, args...), do(t, tc, args...)
		return string(r), string(g)
	}
	for _, on := range []string{"1", "0"} {
		both("CONFIG", "SET", "min-replicas-to-write", on)
		r, g := both("INFO", "replication")
		if r, g = names.ReplaceAllString(r, "$1"), names.ReplaceAllString(g, "$1"); r != g {
			t.Errorf("min-replicas-to-write %s: INFO replication fields\n redis:   %q\n tumbler: %q", on, r, g)
		}
	}
	both("CONFIG", "RESETSTAT")
	both("CONFIG", "SET", "min-replicas-to-write", "1")
	both("SET", "k", "v")
	both("EVAL", "return redis.call('set','x',2)", "0")
	both("EVAL", "#!lua\nreturn 1", "0")
	both("MULTI")
	both("SET", "k", "v")
	both("EXEC")
	both("CONFIG", "SET", "min-replicas-to-write", "0")
	r, g := both("INFO", "commandstats")
	lines := func(s string) []string {
		l := strings.Split(times.ReplaceAllString(s, ""), "\r\n")[1:]
		slices.Sort(l)
		return l
	}
	if rl, gl := lines(r), lines(g); strings.Join(rl, "\n") != strings.Join(gl, "\n") {
		t.Errorf("commandstats after refused writes\n redis:   %q\n tumbler: %q", rl, gl)
	}
}
