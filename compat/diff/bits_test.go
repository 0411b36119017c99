package diff

import (
	"bytes"
	"testing"
)

// bitCommands are the commands of engine/cmd_bits.go.
var bitCommands = []string{"setrange", "getbit", "setbit", "bitcount", "bitpos", "bitop", "bitfield", "bitfield_ro", "lcs"}

// TestBitsCommandInfoDiff compares the whole COMMAND INFO of the bit
// commands with redis-server's, key specifications included (BITFIELD's
// has notes). COMMAND GETKEYS is compared for every command by
// TestCommandGetKeysDiff and in testdata/bits.txt.
func TestBitsCommandInfoDiff(t *testing.T) {
	rc, tc := dialPair(t)
	for _, name := range bitCommands {
		want, err := rc.do("COMMAND", "INFO", name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.do("COMMAND", "INFO", name)
		if err != nil {
			t.Fatal(err)
		}
		w, g := commandInfoFields(t, want), commandInfoFields(t, got)
		if len(w) != 10 || len(g) != 10 {
			t.Fatalf("%s: COMMAND INFO redis %q, tumbler %q", name, want, got)
		}
		if bulk(w[0]) != name {
			t.Fatalf("%s: redis named it %q", name, w[0])
		}
		for i, field := range []string{"name", "arity", "flags", "first key", "last key", "step", "ACL categories", "tips", "key specs", "subcommands"} {
			if !bytes.Equal(w[i], g[i]) {
				t.Errorf("%s: %s differs:\n redis:   %q\n tumbler: %q", name, field, w[i], g[i])
			}
		}
	}
}

// commandInfoFields returns the fields of a COMMAND INFO reply for one
// command.
func commandInfoFields(t *testing.T, reply []byte) [][]byte {
	t.Helper()
	_, outer, ok := Elements(reply)
	if !ok || len(outer) != 1 {
		t.Fatalf("COMMAND INFO reply %q", reply)
	}
	_, fields, ok := Elements(outer[0])
	if !ok {
		t.Fatalf("COMMAND INFO entry %q", outer[0])
	}
	return fields
}
