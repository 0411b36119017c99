package diff

import (
	"strings"
	"testing"
)

// TestCommandDocsDiff compares COMMAND DOCS of every command and
// subcommand tumbler has with redis-server's, in RESP2 and RESP3: the
// summary, since, group, complexity, doc flags, history and argument
// trees must be byte for byte Redis's. A container's entry lists its
// subcommands in Redis's hash order, so it is compared as a multiset,
// and only where tumbler has the same subcommands (each of which is
// compared exactly on its own).
func TestCommandDocsDiff(t *testing.T) {
	rc, tc := dialPair(t)
	names := commandNames(t, tc)
	containers := map[string]bool{}
	for _, n := range names {
		if c, _, ok := strings.Cut(n, "|"); ok {
			containers[c] = true
		}
	}
	for c := range containers {
		names = append(names, c)
	}
	compared := 0
	for _, proto := range []string{"2", "3"} {
		for _, c := range []*conn{rc, tc} {
			if _, err := c.do("HELLO", proto); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range names {
			want, err := rc.do("COMMAND", "DOCS", name)
			if err != nil {
				t.Fatal(err)
			}
			if _, e, _ := Elements(want); len(e) == 0 {
				continue // a command Redis 7.0 lacks
			}
			got, err := tc.do("COMMAND", "DOCS", name)
			if err != nil {
				t.Fatal(err)
			}
			if containers[name] {
				if !sameSubcommands(t, rc, tc, name) {
					continue
				}
				if !SameMultiset(want, got) {
					t.Errorf("RESP%s COMMAND DOCS %s (as a multiset):\n redis:   %q\n tumbler: %q", proto, name, want, got)
				}
			} else if string(want) != string(got) {
				t.Errorf("RESP%s COMMAND DOCS %s:\n redis:   %q\n tumbler: %q", proto, name, want, got)
			}
			compared++
		}
	}
	if compared < 500 {
		t.Fatalf("only %d entries compared", compared)
	}
}

// sameSubcommands reports whether both servers list the same subcommands
// of container.
func sameSubcommands(t *testing.T, rc, tc *conn, container string) bool {
	t.Helper()
	var lists [2]string
	for i, c := range []*conn{rc, tc} {
		r, err := c.do("COMMAND", "LIST", "FILTERBY", "PATTERN", container+"|*")
		if err != nil {
			t.Fatal(err)
		}
		lists[i] = string(r)
	}
	return SameMultiset([]byte(lists[0]), []byte(lists[1]))
}
