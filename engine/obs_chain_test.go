package engine

import (
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// chainScripter runs every script natively: two calls of a command that
// sleeps, as a native lock script calls GET then DEL.
type chainScripter struct{}

func (chainScripter) Run(c *Ctx, sha, body []byte, keys, argv [][]byte) bool { return false }
func (chainScripter) Load(body []byte) (string, string)                      { return "", "" }
func (chainScripter) Exists(sha []byte) bool                                 { return true }
func (chainScripter) Flush()                                                 {}
func (chainScripter) Kill()                                                  {}
func (chainScripter) RunNative(c *Ctx, sha, body []byte, keys, argv [][]byte) bool {
	for i := 0; i < 2; i++ {
		c.Call([][]byte{[]byte("napx")}, &enginetest.TextWriter{})
	}
	return true
}

// TestCommandStats_NativeScriptTimesChain: a native script's calls take
// their start from the clock read that ended the call before (Ctx.Call),
// so their times must still add up: each call at least its own sleep, not
// its predecessor's too, and the script at least the sum of its calls. A
// start carried over from a stale read would count a sleep twice.
func TestCommandStats_NativeScriptTimesChain(t *testing.T) {
	te := newTestEngine(t)
	sc := chainScripter{}
	if _, ok := Scripter(sc).(NativeRunner); !ok {
		t.Fatal("test scripter is not a NativeRunner")
	}
	te.SetScripter(sc)
	const nap = 50 * time.Millisecond
	te.Register(&Command{Name: "napx", Arity: 1, Flags: FlagNoKeys, Group: "server", Fn: func(c *Ctx) {
		time.Sleep(nap)
		c.W.WriteInt(1)
	}})
	for round := 0; round < 3; round++ {
		if got := te.do("EVALSHA", "0123456789012345678901234567890123456789", "0"); got != "" && got[0] == '-' {
			t.Fatalf("EVALSHA: %s", got)
		}
		evalsha, napx := te.Lookup([]byte("evalsha")), te.Lookup([]byte("napx"))
		script, calls := evalsha.stats.nanos.Load(), napx.stats.nanos.Load()
		n := napx.stats.calls.Load()
		if n != int64(2*(round+1)) {
			t.Fatalf("round %d: napx counted %d calls, want %d", round, n, 2*(round+1))
		}
		if calls < int64(n)*int64(nap) || calls > int64(n)*int64(nap)*5/4 {
			t.Fatalf("round %d: %d naps of %v took %v in all: a call's start was not its own", round, n, nap, time.Duration(calls))
		}
		if script < calls {
			t.Fatalf("round %d: the scripts took %v, less than their calls' %v", round, time.Duration(script), time.Duration(calls))
		}
	}
}
