package server

import (
	"strings"
	"testing"
)

// TestFailNextCmd_NamesCompareInASCIICase: FailNextCmd finds a command
// by its name in ASCII case only, as Redis's strcasecmp: a command
// renamed to a name that is no ASCII is found by it (FailNextCmd panicked,
// "no such command", though clients ran it), and a name that only
// Unicode case folding makes a command's (a Kelvin sign for K) is none.
func TestFailNextCmd_NamesCompareInASCIICase(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.RenameCommands = []CommandRename{{From: "set", To: "Сет"}, {From: "get", To: "ÄGET"}}
	}))
	c := dial(t, srv.Addr())
	for _, name := range []string{"Сет", "ÄgEt"} { // Ä as renamed, the rest in any ASCII case
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("FailNextCmd(%q) of a renamed command panicked: %v", name, r)
				}
			}()
			srv.FailNextCmd(name, 1, "ERR injected "+name)
		}()
	}
	if got := c.do("Сет", "k", "v"); got != "-ERR injected Сет\r\n" {
		t.Errorf("Сет = %q, want the injected failure", got)
	}
	if got := c.do("ÄGET", "k"); got != "-ERR injected ÄgEt\r\n" {
		t.Errorf("ÄGET = %q, want the injected failure", got)
	}
	// CommandRecord.Name lowers ASCII letters only, likewise
	if cs := srv.Commands(); len(cs) == 0 || cs[len(cs)-1].Name() != "Äget" {
		t.Errorf("the last command's Name() = %q, want \"Äget\"", cs[len(cs)-1].Name())
	}
	// äget is not ÄGET (Ä is no ASCII), nor a Kelvin sign K
	for _, name := range []string{"äget", "\u212AEYS"} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.Contains(r, "no such command") {
					t.Errorf("FailNextCmd(%q) recovered %q, want no such command", name, r)
				}
			}()
			srv.FailNextCmd(name, 1, "ERR injected")
		}()
	}
}
