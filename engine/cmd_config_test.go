package engine

import (
	"strings"
	"testing"
)

// fakeConfig records CONFIG SET calls and refuses values "bad".
type fakeConfig struct {
	values  map[string]string
	calls   [][]ConfigPair
	rewrite string
}

func (f *fakeConfig) ConfigSet(pairs []ConfigPair) (int, string) {
	f.calls = append(f.calls, pairs)
	for i, p := range pairs {
		if len(p.Args) > 0 && p.Args[0] == "bad" {
			return i, "argument must be good"
		}
	}
	for _, p := range pairs {
		f.values[p.Name] = strings.Join(p.Args, "|")
	}
	return -1, ""
}

func (f *fakeConfig) ConfigRewrite() string { return f.rewrite }

func newConfigEngine(t *testing.T) (*testEngine, *fakeConfig) {
	te := newTestEngine(t)
	f := &fakeConfig{values: map[string]string{"alpha": "1", "multi": "a|b"}}
	for _, name := range []string{"alpha", "multi", "fixed"} {
		te.RegisterParamSpec(ParamSpec{Name: name, Get: func() string { return f.values[name] }, Settable: name != "fixed", MultiArg: name == "multi"})
	}
	te.SetConfigHandler(f)
	return te, f
}

func TestConfigSet_ChecksNamesBeforeSetting(t *testing.T) {
	te, f := newConfigEngine(t)
	te.expect("-ERR wrong number of arguments for 'config|set' command", "CONFIG", "SET", "alpha")
	te.expect("-ERR syntax error", "CONFIG", "SET", "alpha", "1", "multi")
	te.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'Nope'", "CONFIG", "SET", "alpha", "2", "Nope", "1")
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'FIXED') - can't set immutable config", "CONFIG", "SET", "alpha", "2", "FIXED", "1")
	// A parameter CONFIG GET reports with a default value is immutable, not unknown.
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'save') - can't set immutable config", "CONFIG", "SET", "save", "900 1")
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'appendonly') - can't set immutable config", "CONFIG", "SET", "appendonly", "yes")
	// ... but setting the value it has, persistence off, is accepted (and
	// checked with the others: duplicates, unknown names).
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'SAVE') - duplicate parameter", "CONFIG", "SET", "save", "", "SAVE", "")
	te.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'nope'", "CONFIG", "SET", "save", "", "nope", "1")
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'ALPHA') - duplicate parameter", "CONFIG", "SET", "alpha", "2", "ALPHA", "3")
	if len(f.calls) != 0 {
		t.Fatalf("handler called for refused commands: %v", f.calls)
	}
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'multi') - argument must be good", "CONFIG", "SET", "alpha", "2", "MULTI", "bad x")
	te.expect("+OK", "CONFIG", "SET", "Alpha", "2", "multi", "x  y")
	if got := f.calls[len(f.calls)-1]; len(got) != 2 || got[0].Name != "alpha" || got[1].Name != "multi" || strings.Join(got[1].Args, "|") != "x||y" {
		t.Fatalf("pairs %+v: multi-word values split at each space", got)
	}
	te.expect("+OK", "CONFIG", "SET", "save", "", "appendonly", "No")
	te.expect("+OK", "CONFIG", "SET", "appendonly", "no", "alpha", "2")
	if got := f.calls[len(f.calls)-1]; len(got) != 1 || got[0].Name != "alpha" {
		t.Fatalf("pairs %+v: the unchanged appendonly reached the handler", got)
	}
	te.expect("+OK", "CONFIG", "SET", "multi", "")
	if got := f.calls[len(f.calls)-1]; len(got[0].Args) != 0 {
		t.Fatalf("empty multi-word value: %q", got[0].Args)
	}
	te.expect("%1 $alpha $2", "CONFIG", "GET", "alpha")
}

// A hidden parameter answers only to its name; CheckSet refuses a
// parameter among the name checks, before the handler sees any value.
func TestConfig_HiddenAndCheckSet(t *testing.T) {
	te, f := newConfigEngine(t)
	te.RegisterParamSpec(ParamSpec{Name: "secret-knob", Get: func() string { return "7" }, Settable: true, Hidden: true})
	te.RegisterParamSpec(ParamSpec{Name: "guarded", Get: func() string { return "g" }, Settable: true,
		CheckSet: func(c *Ctx) string { return "can't set protected config" }})
	te.expect("%1 $secret-knob $7", "CONFIG", "GET", "secret-knob")
	te.expect("%1 $SECRET-KNOB $7", "CONFIG", "GET", "SECRET-KNOB")
	te.expect("%0", "CONFIG", "GET", "secret-*")
	te.expect("%1 $guarded $g", "CONFIG", "GET", "g*")
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'GUARDED') - can't set protected config", "CONFIG", "SET", "alpha", "bad", "GUARDED", "1")
	te.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'nope'", "CONFIG", "SET", "nope", "1", "guarded", "1")
	if len(f.calls) != 0 {
		t.Fatalf("handler called for refused commands: %v", f.calls)
	}
	te.expect("+OK", "CONFIG", "SET", "secret-knob", "8")
}

func TestConfigRewrite_NeedsHandler(t *testing.T) {
	te := newTestEngine(t)
	te.expect("-ERR The server is running without a config file", "CONFIG", "REWRITE")
	te.expect("-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config", "CONFIG", "SET", "maxmemory", "1")
	te2, f := newConfigEngine(t)
	te2.expect("+OK", "CONFIG", "REWRITE")
	f.rewrite = "ERR Rewriting config file: permission denied"
	te2.expect("-ERR Rewriting config file: permission denied", "CONFIG", "REWRITE")
}

func TestMaxMemory_RefusesDenyOOMOnly(t *testing.T) {
	te := newTestEngine(t)
	te.expect("+OK", "SET", "a", "1")
	if te.UsedMemory() == 0 {
		t.Fatal("no heap in use?")
	}
	te.SetMaxMemory(1)
	if !te.OutOfMemory() {
		t.Fatal("not out of memory at maxmemory 1")
	}
	te.expect("-"+ErrOOM, "SET", "a", "2")
	te.expect("-"+ErrOOM, "APPEND", "a", "2")
	te.expect("$1", "GET", "a")
	te.expect(":1", "DEL", "a")
	te.SetMaxMemory(1 << 62)
	te.expect("+OK", "SET", "a", "3")
	te.SetMaxMemory(0)
	if te.OutOfMemory() {
		t.Fatal("out of memory without maxmemory")
	}
}
