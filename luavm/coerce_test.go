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

// TestLua51_ConcatWritesNumbersAsLua: the .. operator writes a number as
// Lua 5.1's lua_Number2str ("%.14g"), not with gopher-lua's Go digits,
// and a bad operand is still named by what the script wrote there. Every
// expected reply is redis-server 7.0.15's (compat/diff/testdata/
// lualib.txt diffs the same scripts against it).
func TestLua51_ConcatWritesNumbersAsLua(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return 1767225600123/1000 .. ''", "$1767225600.123"},
		{"return 0.1+0.2 .. ''", "$0.3"},
		{"return 1/3 .. ''", "$0.33333333333333"},
		{"return 100000000000000 .. ''", "$1e+14"},
		{"return 'a' .. 1e15 .. 'b' .. 2^53", "$a1e+15b9.007199254741e+15"},
		{"local z = 0 return 1/0 .. ',' .. -1/0 .. ',' .. -z", "$inf,-inf,-0"},
		{"local n = 3 return n .. n .. n", "$333"},
		{"local x = 0.25 return (x .. 'a') .. x", "$0.25a0.25"},
		{"local function f() return 1/3 end return 'x' .. f()", "$x0.33333333333333"},
		{"return 123456789012 .. ''", "$123456789012"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	for _, tc := range []struct{ script, want string }{
		{"local x local y = 1 return y .. x", "-ERR user_script:1: attempt to concatenate local 'x' (a nil value)"},
		{"local t = {} return 'a' .. t.f", "-ERR user_script:1: attempt to concatenate field 'f' (a nil value)"},
		{"local t = {} return 'x' .. t .. 'a'", "-ERR user_script:1: attempt to concatenate local 't' (a table value)"},
		{"return 'a' .. KEYS", "-ERR user_script:1: attempt to concatenate global 'KEYS' (a table value)"},
		{"local up = {} local function f() return 'a' .. up end return f()", "-ERR user_script:1: attempt to concatenate upvalue 'up' (a table value)"},
		{"return 'x' .. true", "-ERR user_script:1: attempt to concatenate a boolean value"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
		}
	}
}

// TestGlobals_MissingNameAsRedisWritesIt: the error for a missing global
// names it as Redis's luaProtectedTableError does, through lua_tostring:
// a string to its first NUL, a number as %.14g, and any other key is an
// error of its own. (Expected replies are redis-server 7.0.15's;
// compat/diff/testdata/lualib.txt diffs them against it.)
func TestGlobals_MissingNameAsRedisWritesIt(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return _G['a\\0x']", "-ERR user_script:1: Script attempted to access nonexistent global variable 'a'"},
		{"return _G[2^53]", "-ERR user_script:1: Script attempted to access nonexistent global variable '9.007199254741e+15'"},
		{"return _G[1.5]", "-ERR user_script:1: Script attempted to access nonexistent global variable '1.5'"},
		{"return _G[{}]", "-ERR user_script:1: Second argument to luaProtectedTableError must be a string or number"},
		{"return _G[true]", "-ERR user_script:1: Second argument to luaProtectedTableError must be a string or number"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
		}
	}
}
