package diff

import "testing"

// TestACLCategoriesDiff checks that every command (and subcommand)
// tumbler shares with redis-server has exactly Redis's ACL categories in
// COMMAND INFO: the table engine/acl_table.go is generated from
// redis-server (engine/internal/aclgen) and this catches a stale one.
// Commands redis-server lacks are skipped.
func TestACLCategoriesDiff(t *testing.T) {
	redis, tumbler := dialPair(t)
	names := commandNames(t, tumbler)
	if len(names) < 100 {
		t.Fatalf("only %d commands", len(names))
	}
	compared := 0
	for _, name := range names {
		want, err := redis.do("COMMAND", "INFO", name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tumbler.do("COMMAND", "INFO", name)
		if err != nil {
			t.Fatal(err)
		}
		wantCats, ok := categoriesOf(want)
		if !ok {
			continue // redis-server has no such command
		}
		gotCats, ok := categoriesOf(got)
		if !ok {
			t.Errorf("%s: tumbler's COMMAND INFO %q", name, got)
			continue
		}
		compared++
		if string(wantCats) != string(gotCats) {
			t.Errorf("%s: categories %q, redis-server %q", name, gotCats, wantCats)
		}
	}
	if compared < 100 {
		t.Errorf("only %d commands compared", compared)
	}
}

// categoriesOf returns the raw categories element of a one-command
// COMMAND INFO reply; false for a null entry.
func categoriesOf(reply []byte) ([]byte, bool) {
	_, entries, ok := Elements(reply)
	if !ok || len(entries) != 1 {
		return nil, false
	}
	_, info, ok := Elements(entries[0])
	if !ok || len(info) < 7 {
		return nil, false
	}
	return info[6], true
}
