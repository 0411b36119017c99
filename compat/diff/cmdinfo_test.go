package diff

import (
	"strings"
	"testing"
)

// TestCommandInfoDiff compares COMMAND INFO for every command, container
// and subcommand tumbler has with redis-server's: the name, arity, flags
// (in Redis's order), first/last/step key positions, tips and key
// specifications must be byte for byte Redis's. Flags are behaviour as
// much as documentation: no_multi refuses a command inside MULTI, and
// clients (go-redis's cluster routing, for one) read them. The ACL
// categories (TestACLCategoriesDiff) and subcommand lists are not
// compared here.
func TestCommandInfoDiff(t *testing.T) {
	rc, tc := dialPair(t)

	names := commandNames(t, tc)
	seen := map[string]bool{}
	for _, n := range names {
		if c, _, ok := strings.Cut(n, "|"); ok && !seen[c] {
			seen[c] = true
			names = append(names, c) // the container too
		}
	}
	compared := 0
	for _, proto := range []string{"2", "3"} {
		do(t, rc, "HELLO", proto)
		do(t, tc, "HELLO", proto)
		compared += compareCommandInfo(t, rc, tc, names, proto)
	}
	if compared < 500 {
		t.Fatalf("only %d commands compared", compared)
	}
}

// compareCommandInfo compares the COMMAND INFO of names in protocol
// proto, and reports how many Redis knows. The subcommands field is
// compared by its type only for a container (the lists differ: tumbler
// lacks some); a command without subcommands has an empty one, a set in
// RESP3.
func compareCommandInfo(t *testing.T, rc, tc *conn, names []string, proto string) int {
	t.Helper()
	compared := 0
	for _, name := range names {
		want := infoHead(t, rc, name)
		if want == nil {
			continue // a command Redis 7.0 lacks
		}
		got := infoHead(t, tc, name)
		compared++
		if got != nil && len(want[9]) > 0 && len(got[9]) > 0 && (want[9][0] != got[9][0] || string(want[9][:2]) == "~0" && string(got[9]) != string(want[9])) {
			t.Errorf("RESP%s COMMAND INFO %s, subcommands:\n redis:   %.40q\n tumbler: %.40q", proto, name, want[9], got[9])
		}
		for i, field := range []string{"name", "arity", "flags", "first key", "last key", "step", "", "tips", "key specs"} {
			if field == "" {
				continue // the categories: TestACLCategoriesDiff
			}
			if field == "flags" && got != nil && redis72Flags[name] != "" && string(got[i]) == setIn(proto, redis72Flags[name]) {
				continue
			}
			if field == "arity" && got != nil && redis72Arity[name] != "" && string(got[i]) == redis72Arity[name] {
				continue
			}
			if got == nil || string(want[i]) != string(got[i]) {
				var g []byte
				if got != nil {
					g = got[i]
				}
				t.Errorf("RESP%s COMMAND INFO %s, %s:\n redis:   %q\n tumbler: %q", proto, name, field, want[i], g)
			}
		}
	}
	return compared
}

// redis72Flags are the commands whose flags are Redis 7.2's, not 7.0's:
// tumbler lets scripts call them, as 7.2 does (redis #11568: a blocking
// command in a script never blocks; WAIT there returns at once), where
// 7.0 flags them noscript. The random suite's "blocking list commands
// run from scripts" entry is the same choice.
var redis72Flags = map[string]string{
	"blpop":      "*2\r\n+write\r\n+blocking\r\n",
	"brpop":      "*2\r\n+write\r\n+blocking\r\n",
	"brpoplpush": "*3\r\n+write\r\n+denyoom\r\n+blocking\r\n",
	"blmove":     "*3\r\n+write\r\n+denyoom\r\n+blocking\r\n",
	"bzpopmin":   "*3\r\n+write\r\n+blocking\r\n+fast\r\n",
	"bzpopmax":   "*3\r\n+write\r\n+blocking\r\n+fast\r\n",
	"wait":       "*0\r\n",
}

// redis72Arity are the commands whose arity is Redis 7.2's: ZRANK and
// ZREVRANK take 7.2's WITHSCORE (tumbler reports 7.2).
var redis72Arity = map[string]string{
	"zrank":    ":-3\r\n",
	"zrevrank": ":-3\r\n",
}

// setIn is a RESP2 set (an array) as it is sent in protocol proto.
func setIn(proto, set string) string {
	if proto == "3" {
		return "~" + set[1:]
	}
	return set
}

// infoHead is the elements of name's COMMAND INFO entry, or nil when the
// server does not know the command.
func infoHead(t *testing.T, c *conn, name string) [][]byte {
	t.Helper()
	r, err := c.do("COMMAND", "INFO", name)
	if err != nil {
		t.Fatal(err)
	}
	_, entries, ok := Elements(r)
	if !ok || len(entries) != 1 {
		t.Fatalf("COMMAND INFO %s: %q", name, r)
	}
	_, info, ok := Elements(entries[0])
	if !ok {
		return nil // a null entry: unknown command
	}
	if len(info) != 10 {
		t.Fatalf("COMMAND INFO %s: %q", name, r)
	}
	return info
}
