package luavm

import (
	"testing"
	"time"
)

// TestLoopBreakFirst_RunsAsLua: loops whose body begins with break run as
// in Lua. gopher-lua alone miscompiled the jump back to such a body
// (guardLoopBreaks): the first script ran for ever.
func TestLoopBreakFirst_RunsAsLua(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"for k,v in pairs({}) do end for k in pairs({1}) do break end return 1", ":1"},
		{"for k,v in pairs({}) do end for k in pairs({1}) do break end for k,v in pairs({}) do end return 1", ":1"},
		{"while true do break end repeat break until false for i = 1, 3 do break end return 'ok'", "$ok"},
		{"local n = 0 for k in pairs({1, 2, 3}) do do break end end for k in pairs({}) do end for k in pairs({1}) do n = n + 1 break end return n", ":1"},
		{"local t = {} for i = 1, 3 do for k in pairs({1, 2}) do break end t[#t+1] = i end return t", "*3 :1 :2 :3"},
		{"for k,v in pairs({}) do end for k in pairs({1}) do if false then end break end return 1", ":1"},
		{"for k,v in pairs({}) do end for k in pairs({1}) do if nil then local x = 1 end break end return 1", ":1"},
		{"local n = 0 for i = 1, 5 do if i % 2 == 0 then n = n + i end end return n", ":6"},
	} {
		done := make(chan string, 1)
		go func() { done <- f.do(2, "EVAL", c.script, "0") }()
		select {
		case got := <-done:
			if got != c.want {
				t.Errorf("%s: got %q, want %q", c.script, got, c.want)
			}
		case <-time.After(5 * time.Second):
			f.vm.Kill()
			t.Fatalf("%s: still running after 5 s", c.script)
		}
	}
}
