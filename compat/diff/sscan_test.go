package diff

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSScanDiff iterates a hashtable-encoded set with SSCAN on both
// servers: each pages it (the pages differ, as the servers' orders do),
// no page passes COUNT by much, and the members returned, MATCH applied,
// are the same. Small sets and intsets come whole on both, byte for byte
// (testdata/set.txt).
func TestSScanDiff(t *testing.T) {
	rc, tc := dialPair(t)
	members := []string{"SADD", "big"}
	for i := range 2000 {
		members = append(members, "member:"+strconv.Itoa(i))
	}
	for _, c := range []*conn{rc, tc} {
		do(t, c, "DEL", "big")
		if got := string(do(t, c, members...)); got != ":2000\r\n" {
			t.Fatalf("SADD: %q", got)
		}
	}
	for _, opts := range [][]string{{"COUNT", "10"}, {"COUNT", "100", "MATCH", "member:1*"}, {"MATCH", "*7"}} {
		var got [2][]string
		for k, c := range []*conn{rc, tc} {
			cursor, calls := "0", 0
			for {
				calls++
				if calls > 2000 {
					t.Fatalf("%d: SSCAN %v did not terminate", k, opts)
				}
				cur, page := sscanPage(t, c, cursor, opts)
				got[k] = append(got[k], page...)
				if cursor = cur; cursor == "0" {
					break
				}
			}
			if calls < 5 {
				t.Errorf("%d: SSCAN %v took %d calls: no paging", k, opts, calls)
			}
			slices.Sort(got[k])
			got[k] = slices.Compact(got[k])
		}
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("SSCAN %v: redis returned %d members, tumbler %d", opts, len(got[0]), len(got[1]))
		}
	}
}

// sscanPage runs one SSCAN big cursor opts... and returns the next
// cursor and the members.
func sscanPage(t *testing.T, c *conn, cursor string, opts []string) (string, []string) {
	t.Helper()
	r := string(do(t, c, append([]string{"SSCAN", "big", cursor}, opts...)...))
	lines := strings.Split(strings.TrimSuffix(r, "\r\n"), "\r\n")
	// *2 $n cursor *m ($len member)...
	if len(lines) < 4 || lines[0] != "*2" {
		t.Fatalf("SSCAN reply %q", r)
	}
	var page []string
	for i := 5; i < len(lines); i += 2 {
		page = append(page, lines[i])
	}
	return lines[2], page
}
