package luavm

import (
	"strings"
	"testing"
)

// TestLua51_NumericForTakesNumericStrings: Lua 5.1's numeric for converts
// a string init, limit or step as arithmetic does; gopher-lua refused it
// ("'for' initial value must be a number"), which broke Redisson's read
// lock watchdog and unlock scripts (for c=counter, 1, -1 over an HGET).
// Every expected reply is redis-server 7.0.15's (compat/diff/testdata/
// lualib.txt diffs the same scripts against it).
func TestLua51_NumericForTakesNumericStrings(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"local n = 0 for i = '3', 1, -1 do n = n + i end return n", ":6"},
		{"local n = 0 for i = 1, '3' do n = n + i end return n", ":6"},
		{"local n = 0 for i = 3, 1, '-1' do n = n + i end return n", ":6"},
		{"local n = 0 for i = 1, '2.5', '0.5' do n = n + 1 end return n", ":4"},
		{"for i = ' 0x10 ', 16 do return i end", ":16"},
		{"for i = '1e1', 10 do return i end", ":10"},
		{"for i = '2', 2 do return type(i) end", "$number"},
		{"local function f(c) local n = 0 for i = c, 1, -1 do n = n + 1 end return n end return f('2')", ":2"},
		{"redis.call('hset', KEYS[1], 'f', '3') local n = 0 for c = redis.call('hget', KEYS[1], 'f'), 1, -1 do n = n * 10 + c end return n", ":321"},
		{"local n = 0 for i = 1, #KEYS do n = n + 1 end return n", ":1"},
	} {
		if got := f.do(2, "EVAL", tc.script, "1", "fornum:h"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	// what is not a number stays an error, Lua 5.1's
	for _, tc := range []struct{ script, want string }{
		{"for i = 'x', 1 do end", "-ERR user_script:1: 'for' initial value must be a number"},
		{"for i = 1, 'y' do end", "-ERR user_script:1: 'for' limit must be a number"},
		{"for i = 1, 2, {} do end", "-ERR user_script:1: 'for' step must be a number"},
		{"for i = nil, 2 do end", "-ERR user_script:1: 'for' initial value must be a number"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
		}
	}
}
