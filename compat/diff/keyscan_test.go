package diff

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKeyScanDiff pages large collections with SSCAN, HSCAN and ZSCAN on
// both servers (a hashtable set, a hashtable hash, a skip list): each
// server pages them (the pages differ, as the servers' orders do), and
// the items returned, MATCH applied, are the same: members, field and
// value pairs, member and score pairs. Small collections come whole on
// both, byte for byte (testdata/set.txt, hash.txt, zset.txt).
func TestKeyScanDiff(t *testing.T) {
	rc, tc := dialPair(t)
	const n = 2000
	sadd, hset, zadd := []string{"SADD", "big"}, []string{"HSET", "big"}, []string{"ZADD", "big"}
	for i := range n {
		m := "member:" + strconv.Itoa(i)
		sadd = append(sadd, m)
		hset = append(hset, m, "v"+strconv.Itoa(i*7))
		zadd = append(zadd, strconv.FormatFloat(float64(i)/3, 'g', -1, 64), m)
	}
	for _, c := range []struct {
		cmd  string
		fill []string
	}{{"SSCAN", sadd}, {"HSCAN", hset}, {"ZSCAN", zadd}} {
		for _, opts := range [][]string{{"COUNT", "10"}, {"COUNT", "100", "MATCH", "member:1*"}, {"MATCH", "*7"}} {
			var got [2][]string
			for k, conn := range []*conn{rc, tc} {
				do(t, conn, "DEL", "big")
				if r := string(do(t, conn, c.fill...)); r != ":"+strconv.Itoa(n)+"\r\n" {
					t.Fatalf("%s: %q", c.fill[0], r)
				}
				cursor, calls := "0", 0
				for {
					calls++
					if calls > 4*n {
						t.Fatalf("%d: %s %v did not terminate", k, c.cmd, opts)
					}
					cur, page := keyScanPage(t, conn, c.cmd, cursor, opts)
					got[k] = append(got[k], page...)
					if cursor = cur; cursor == "0" {
						break
					}
				}
				if calls < 5 {
					t.Errorf("%d: %s %v took %d calls: no paging", k, c.cmd, opts, calls)
				}
				slices.Sort(got[k])
				got[k] = slices.Compact(got[k])
			}
			if !slices.Equal(got[0], got[1]) {
				t.Errorf("%s %v: redis returned %d items, tumbler %d", c.cmd, opts, len(got[0]), len(got[1]))
			}
		}
	}
}

// keyScanPage runs one cmd big cursor opts... and returns the next
// cursor and the items (a member, or "field value" / "member score").
func keyScanPage(t *testing.T, c *conn, cmd, cursor string, opts []string) (string, []string) {
	t.Helper()
	r := string(do(t, c, append([]string{cmd, "big", cursor}, opts...)...))
	lines := strings.Split(strings.TrimSuffix(r, "\r\n"), "\r\n")
	// *2 $n cursor *m ($len word)...
	if len(lines) < 4 || lines[0] != "*2" {
		t.Fatalf("%s reply %q", cmd, r)
	}
	var words []string
	for i := 5; i < len(lines); i += 2 {
		words = append(words, lines[i])
	}
	if cmd == "SSCAN" {
		return lines[2], words
	}
	var items []string
	for i := 0; i+1 < len(words); i += 2 {
		items = append(items, words[i]+" "+words[i+1])
	}
	return lines[2], items
}

// TestScanCursorDiff: cursors are read as strtoul reads a C string.
func TestScanCursorDiff(t *testing.T) {
	rc, tc := dialPair(t)
	cursors := []string{"0", "1\x00", "\x00", "1\x00x", "-1\x00", " 1\x00", "0\x009", "x", "", "18446744073709551616"}
	diffCommands(t, rc, tc, []string{"SCAN"}, cursors)
	for _, cmd := range []string{"HSCAN", "SSCAN", "ZSCAN"} {
		diffCommands(t, rc, tc, []string{cmd, "nokey"}, cursors)
	}
}
