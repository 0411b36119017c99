package luavm

import (
	"strings"
	"testing"
)

// TestVMErrorsReadFrames: the errors of gopher-lua's VM are worded as Lua
// 5.1 words them, which needs gopher-lua's frames, registers and open
// upvalues, read with reflect (vmerror.go). A gopher-lua that moved them
// fails here (the compat suite compares the same cases with Redis).
func TestVMErrorsReadFrames(t *testing.T) {
	f := newFixture(t)
	sha := func(s string) string { return SHA1Hex([]byte(s)) }
	cases := []struct{ script, want string }{
		{"local x return x.y", "-ERR user_script:1: attempt to index local 'x' (a nil value) script: %s, on @user_script:1."},
		{"local t = {} return t.a.b", "-ERR user_script:1: attempt to index field 'a' (a nil value) script: %s, on @user_script:1."},
		{"local t = {} t:m()", "-ERR user_script:1: attempt to call method 'm' (a nil value) script: %s, on @user_script:1."},
		{"local u local function f() return u + 1 end return f()", "-ERR user_script:1: attempt to perform arithmetic on upvalue 'u' (a nil value) script: %s, on @user_script:1."},
		{"local a = {} return 'x' .. a", "-ERR user_script:1: attempt to concatenate local 'a' (a table value) script: %s, on @user_script:1."},
		{"\n\nreturn #nil", "-ERR user_script:3: attempt to get length of a nil value script: %s, on @user_script:3."},
		{"return {} < {}", "-ERR user_script:1: attempt to compare two table values script: %s, on @user_script:1."},
		{"return ('x'):rep()", "-ERR user_script:1: bad argument #1 to 'rep' (number expected, got no value) script: %s, on @user_script:1."},
		{"return ('x'):rep({}, 1, 2)", "-ERR user_script:1: bad argument #1 to 'rep' (number expected, got table) script: %s, on @user_script:1."},
		{"for i = 1, 'x' do end", "-ERR user_script:1: 'for' limit must be a number script: %s, on @user_script:1."},
		// a generic for's hidden locals start after its expression list
		// (forLocalsAfterExplist), and a key gopher-lua loads into a
		// temporary is named (knameAt)
		{"for k, v in pairs(KEYS[1]) do end", "-ERR user_script:1: bad argument #1 to 'pairs' (table expected, got nil) script: %s, on @user_script:1."},
		{"for w in string.gmatch(nil, 'x') do end", "-ERR user_script:1: bad argument #1 to 'gmatch' (string expected, got nil) script: %s, on @user_script:1."},
		{"local t = {} for k in t.x.y do end", "-ERR user_script:1: attempt to index field 'x' (a nil value) script: %s, on @user_script:1."},
		{"local x for k, v in next, x do\nend", "-ERR user_script:1: bad argument #1 to '(for generator)' (table expected, got nil) script: %s, on @user_script:1."},
		{"local k = 'x' local t = {} return t[k].y", "-ERR user_script:1: attempt to index field '?' (a nil value) script: %s, on @user_script:1."},
	}
	for _, c := range cases {
		f.expect(strings.Replace(c.want, "%s", sha(c.script), 1), "EVAL", c.script, "0")
	}
	// caught by pcall and xpcall, with the same words
	f.expect("$user_script:1: attempt to index local 't' (a nil value)", "EVAL", "local ok, e = pcall(function() local t; return t.x end) return e", "0")
	f.expect("$H:user_script:1: attempt to call local 'f' (a nil value)", "EVAL", "local ok, e = xpcall(function() local f; f() end, function(m) return 'H:' .. m end) return e", "0")
	// pcall(string.rep): no Lua caller, so no position and no name
	f.expect("$bad argument #1 to '?' (string expected, got no value)", "EVAL", "local ok, e = pcall(string.rep) return e", "0")
	// rawset's index errors are raised in a C function: no position
	f.expect("-ERR table index is nil script: "+sha("rawset({}, nil, 1)")+", on @user_script:1.", "EVAL", "rawset({}, nil, 1)", "0")
	f.expect("$table index is NaN", "EVAL", "local ok, e = pcall(rawset, {}, 0/0, 1) return e", "0")
	f.expect("$cannot change a protected metatable", "EVAL", "local ok, e = pcall(setmetatable, setmetatable({}, {__metatable = 1}), {}) return e", "0")
}

// TestVMErrorsKeepUpvalues: a caught error closes only the variables of
// the functions it unwound, as Lua does; gopher-lua alone closed every
// function's, so that closures stopped sharing their variables.
func TestVMErrorsKeepUpvalues(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"local x = 1 local function get() return x end pcall(error, 'e') x = 2 return get()", ":2"},
		{"local a = 1 local function get() return a end pcall(function() pcall(function() error('in') end) a = 5 error('out') end) a = a + 1 return get()", ":6"},
		{"local t = {} pcall(function() local x = 1; t.f = function() return x end; error('e') end) local a, b, c = 7, 8, 9 return t.f()", ":1"},
		{"local fs = {} for i = 1, 3 do pcall(function() local v = i fs[i] = function() v = v + 10 return v end error('e') end) end return fs[1]() + fs[2]() + fs[1]()", ":44"},
	} {
		f.expect(c.want, "EVAL", c.script, "0")
	}
	// nothing is left open for the next script to share by mistake
	f.expect(":3", "EVAL", "local n = 1 local function inc() n = n + 1 return n end inc() return inc()", "0")
}

// TestCallDepth_AsLua51: a Lua function may recurse 7999 levels, then
// "stack overflow" (luaMaxCalls; Redis's Lua goes deeper), and protected
// calls nest 198 deep before "C stack overflow" (LUAI_MAXCCALLS), which
// pcall and xpcall catch, with no position. gopher-lua's default call
// stack let 255 levels through, and pcalls 127.
func TestCallDepth_AsLua51(t *testing.T) {
	f := newFixture(t)
	const rec = "local function r(n) if n == 0 then return 0 end return 1 + r(n-1) end "
	f.expect(":7999", "EVAL", rec+"return r(7999)", "0")
	overflow := rec + "return r(8000)"
	f.expect("-ERR user_script:1: stack overflow script: "+SHA1Hex([]byte(overflow))+", on @user_script:1.", "EVAL", overflow, "0")
	f.expect("*2 :1 :300", "EVAL", rec+"return {pcall(r, 300)}", "0")
	// FCALL runs in the same state, as deep
	f.expect("$deep", "FUNCTION", "LOAD", "#!lua name=deep\n"+rec+"redis.register_function('f', function(keys, args) return r(tonumber(args[1])) end)")
	f.expect(":7998", "FCALL", "f", "0", "7998")
	for _, c := range []struct{ script, want string }{
		{"local function r(n) local ok, v = pcall(r, n+1) if not ok then return {n, v} end return v end return r(0)", "*2 :198 $C stack overflow"},
		{"local function r(n) local ok, v = xpcall(function() return r(n+1) end, function(m) return 'h:' .. tostring(m) end) if not ok then return {n, v} end return v end return r(0)", "*2 :198 $h:C stack overflow"},
		// the count is of the calls open: closed ones do not add up
		{"local n = 0 for i = 1, 1000 do if pcall(function() n = n + 1 end) then end end return n", ":1000"},
		{"local function r(n) local ok, v = pcall(r, n+1) if not ok then return {n, v} end return v end r(0) return r(0)", "*2 :198 $C stack overflow"},
	} {
		f.expect(c.want, "EVAL", c.script, "0")
	}
}

// TestLoadedChunkErrorSource: an error escaping the run from a chunk
// loadstring or load made is "on" that chunk's source as given, with its
// line, as Redis's error handler finds it; the script's own errors, and
// a load whose reader failed and was caught, stay "on @user_script".
func TestLoadedChunkErrorSource(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"return loadstring('y = 1')()", `ERR [string "y = 1"]:1: Attempt to modify a readonly table script: %s, on y = 1:1.`},
		{"return loadstring('\\n\\nerror(\\'boom\\')', '=mychunk')()", "ERR mychunk:3: boom script: %s, on =mychunk:3."},
		{"loadstring('error(\\'x\\', 2)')()", "ERR user_script:1: x script: %s, on error('x', 2):1."},
		{"return loadstring('return redis.call(\\'nosuch\\')', '@f.lua')()", "ERR Unknown Redis command called from script script: %s, on @f.lua:1."},
		{"local r = loadstring('error(1)') local f = load(r) return nil + 1", "ERR user_script:1: attempt to perform arithmetic on a nil value script: %s, on @user_script:1."},
		// a loaded chunk's handled error is not the one that escapes at a
		// full call stack (no handler runs then)
		{"local h = loadstring('error(\\'in h\\')', '=mychunk') xpcall(nil, h) local function r() return 1 + r() end return r()", "ERR user_script:1: stack overflow script: %s, on @user_script:1."},
		// a chunk named as the script's own is not taken for it
		{"local f = loadstring('return 1', '=user_script') f() error('boom')", "ERR user_script:1: boom script: %s, on @user_script:1."},
	} {
		f.expect("-"+strings.Replace(c.want, "%s", SHA1Hex([]byte(c.script)), 1), "EVAL", c.script, "0")
	}
}
