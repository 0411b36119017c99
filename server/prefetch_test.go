package server

import (
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

func TestPrefetchKeys(t *testing.T) {
	cmd := func(args ...string) redcon.Command {
		var c redcon.Command
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		return c
	}
	long := strings.Repeat("x", 65)
	cmds := []redcon.Command{
		cmd("GET", "a"),
		cmd("PING"),
		cmd("set", "b", "v", "NX", "PX", "30000"),
		cmd("EVALSHA", "sha", "1", "c", "tok"),
		cmd("evalsha", "sha", "0"),
		cmd("eval", "return 1", "0", "x"),
		cmd("Eval", "script", "2", "d", "e"),
		cmd("EVALSHA", "sha", "1"), // too short: its key slot is missing
		cmd("GET", long),
		cmd("EXPIRE", "f", "10"),
		cmd("Del", "g"),
		cmd("DELX", "h"),
	}
	got, leaving := prefetchKeys(nil, cmds)
	want := []string{"a", "b", "c", "d", "f", "g", "h"}
	// the scripts' keys, EXPIRE's and DEL's: c, d, f, g
	if wantMask := uint32(1<<2 | 1<<3 | 1<<4 | 1<<5); leaving != wantMask {
		t.Fatalf("leaving mask %b, want %b", leaving, wantMask)
	}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("key %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func TestIsEval_AnyCaseOnly(t *testing.T) {
	for _, n := range []string{"eval", "EVAL", "Eval", "evalsha", "EVALSHA", "EvalSha"} {
		if !isEval([]byte(n)) {
			t.Errorf("isEval(%q) = false", n)
		}
	}
	for _, n := range []string{"", "eva", "evals", "evalsh", "evalshaa", "eval_ro", "fval", "EVAl\x00", "evalsh\x01", "get", "\x45\x56\x41\x4c\x13\x08\x01"} {
		if isEval([]byte(n)) {
			t.Errorf("isEval(%q) = true", n)
		}
	}
}

func TestChangesDeadline(t *testing.T) {
	for _, n := range []string{"del", "DEL", "Unlink", "GETDEL", "expire", "PEXPIRE", "persist"} {
		if !changesDeadline([]byte(n)) {
			t.Errorf("changesDeadline(%q) = false", n)
		}
	}
	for _, n := range []string{"", "de", "dex", "get", "set", "expireat", "pexpireat", "unlin", "ttl", "DEl\x00", "persis"} {
		if changesDeadline([]byte(n)) {
			t.Errorf("changesDeadline(%q) = true", n)
		}
	}
}
