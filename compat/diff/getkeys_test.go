package diff

import (
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// TestCommandGetKeysDiff runs COMMAND GETKEYS (and GETKEYSANDFLAGS, with
// each key's access flags) for every command and
// subcommand tumbler has, with argument lists of every length up to eight
// (plain words, and counts where a numkeys argument may stand), on both
// servers: the keys found, or the error, must be Redis's. It checks the
// key positions tumbler's commands declare (their key ranges and key
// finders, which CLIENT TRACKING uses too) against Redis's key specs.
func TestCommandGetKeysDiff(t *testing.T) {
	rc, tc := dialPair(t)

	names := commandNames(t, tc)
	if len(names) < 100 {
		t.Fatalf("only %d commands listed", len(names))
	}
	words := []string{"k1", "2", "k3", "k4", "1", "k6", "k7", "k8"}
	compared, withKeys := 0, 0
	for _, name := range names {
		for n := 0; n <= len(words); n++ {
			for _, variant := range [][]string{words[:n], numericFirst(words[:n])} {
				sub := "GETKEYS"
				if n%2 == 1 {
					sub = "GETKEYSANDFLAGS" // every other length: the access flags too
				}
				args := append(append([]string{"COMMAND", sub}, strings.Split(name, "|")...), variant...)
				want, err := rc.do(args...)
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(string(want), "-ERR Invalid command specified") {
					continue // a command Redis 7.0 lacks
				}
				if redis72Arity[name] != "" && len(variant) > 2 && strings.HasPrefix(string(want), "-ERR Invalid number of arguments") {
					continue // 7.2's arity (ZRANK's WITHSCORE: cmdinfo_test.go) takes more
				}
				got, err := tc.do(args...)
				if err != nil {
					t.Fatal(err)
				}
				compared++
				if want[0] == '*' && string(want) != "*0\r\n" {
					withKeys++
				}
				if string(want) != string(got) {
					t.Errorf("%s:\n redis:   %q\n tumbler: %q", strings.Join(args, " "), want, got)
				}
			}
		}
	}
	if withKeys < 100 {
		t.Fatalf("%d of %d comparisons found keys: the test compares too little", withKeys, compared)
	}
}

// numericFirst is words with a count ("2") first, where the numkeys of
// ZUNION, SINTERCARD, EVAL's third word and the like stand.
func numericFirst(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	out := append([]string{"2"}, words[1:]...)
	return out
}

// commandNames lists tumbler's commands, and for a command with
// subcommands each "name|sub".
func commandNames(t *testing.T, c *conn) []string {
	t.Helper()
	r, err := c.do("COMMAND")
	if err != nil {
		t.Fatal(err)
	}
	_, cmds, ok := Elements(r)
	if !ok {
		t.Fatalf("COMMAND: %q", r)
	}
	var names []string
	for _, raw := range cmds {
		_, info, ok := Elements(raw)
		if !ok || len(info) < 10 {
			t.Fatalf("COMMAND entry %q", raw)
		}
		name, _ := bulkText(info[0])
		_, subs, _ := Elements(info[9])
		if len(subs) == 0 {
			names = append(names, name)
			continue
		}
		for _, sub := range subs {
			_, sinfo, ok := Elements(sub)
			if !ok || len(sinfo) == 0 {
				t.Fatalf("subcommand entry %q", sub)
			}
			sname, _ := bulkText(sinfo[0])
			names = append(names, sname)
		}
	}
	return names
}

// dialPair starts a redis-server and an in-process tumbler and returns a
// connection to each, closed when the test ends.
func dialPair(t *testing.T) (redis, tumbler *conn) {
	t.Helper()
	var err error
	if redis, err = dial(startRedis(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(redis.close)
	if tumbler, err = dial(server.RunT(t).Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tumbler.close)
	return redis, tumbler
}
