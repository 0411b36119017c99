package diff

import (
	"bytes"
	"strings"
	"testing"
)

// luaRuntimeCases fail as they run (or catch their failure): Lua 5.1
// names the value at fault (luaG_typeerror, getobjname), tumbler rewords
// gopher-lua's errors to match (luavm/vmerror.go). Some check that
// closures keep sharing their variables after a caught error.
var luaRuntimeCases = []string{
	// index
	"local x return x.y",
	"local x = false return x.y",
	"local x = redis.call('get', 'nokey') return x.y",
	"local t = {} return t.a.b",
	"local t = {} t.x.y = 1",
	"local t = {} t.a.b.c = 1",
	"local s = 5 s.x = 1",
	"local u = nil local function f() return u.x end return f()",
	"local t = nil return t[1]",
	"return KEYS[1].x",
	"local a = {} return a.b.c.d",
	"local a = {b = {}} return a.b.c.d",
	"local x = 1 return x[1]",
	"return (nil).x",
	// a loop of __index / __newindex tables (luaV_gettable, luaV_settable)
	"local t = setmetatable({}, {}) getmetatable(t).__index = t return t.x",
	"local t = setmetatable({}, {}) getmetatable(t).__newindex = t t.x = 1",
	"local a, b = {}, {} setmetatable(a, {__index = b}) setmetatable(b, {__index = a}) return a.x",
	"local t = setmetatable({}, {}) getmetatable(t).__index = t local ok, e = pcall(function() return t.x end) return e",
	// call
	"local t = {} return t.f()",
	"local t = {} return t:m()",
	"return ('x'):bad()",
	"return redis.nosuchfunction()",
	"local f return f()",
	"local t = {f = 1} return t.f(2)",
	"local u local function g() return u() end return g()",
	"return ({})()",
	"for k in nil do end",
	"local t = {} return t[1]()",
	"return KEYS[1]()",
	// arithmetic
	"return 1 + nil",
	"local x return x + 1",
	"local a, b = 1 return a + b",
	"return 1 + {}",
	"return 2 * '3' + {}",
	"return '2' + 'x'",
	"return 'x' * 2",
	"local s = 'abc' return s - 1",
	"return -{}",
	"local t = {} return -t",
	"local x = {} x = x + 1",
	"return 10 % nil",
	"return 2 ^ {}",
	"local t = {n = 'x'} return t.n * 2",
	"return ARGV[1] + 1",
	// concatenation
	"return 'a' .. nil",
	"local t = {} return t .. 'x'",
	"local a = KEYS[1] .. nil",
	"local s = 'a' .. 1 .. {} .. 'b'",
	"local x = {} return 'a' .. 'b' .. x",
	"local x = {} return x .. 'a' .. 'b'",
	"local t = {} return t.a .. 'x'",
	"return 1 .. true",
	"local b = true return 'x' .. b .. 'y'",
	// length
	"return #nil",
	"local n = 5 return #n",
	"local t = {} return #t.x",
	// comparison
	"return {} < {}",
	"return 1 < 'x'",
	"return nil < 1",
	"local a, b = {}, {} return a <= b",
	"return true > false",
	// a generic for's expression list is named as any other call; the
	// generator its loop calls is "(for generator)"
	"for k, v in pairs(KEYS[1]) do end return 1",
	"for k, v in ipairs(redis.call('get', 'nokey')) do end",
	"for w in string.gmatch(nil, 'x') do end",
	"local s = 'q' for a in s:gmatch(nil) do end",
	"local x for k, v in next, x do end",
	"local t = {} for k in t.x.y do end",
	"local k = 'x' local t = {} return t[k].y",
	"local t = {a = {}} for k, v in pairs(t) do for a, b in pairs(v.q) do end end",
	"local t = {} for k, v in pairs(t) do end return t.x.y",
	// for loops
	"for i = 'a', 2 do end",
	"for i = 1, 'b' do end",
	"for i = 1, 2, {} do end",
	// library arguments
	"return math.floor('x')",
	"return string.rep()",
	"return ('x'):rep()",
	"return ('x'):rep({})",
	"local f = string.rep return f()",
	"return string.sub()",
	"local s = ('x'):sub({})",
	"return tostring()",
	"return tonumber()",
	"return string.format('%d', 'x')",
	"return table.concat({}, 1)",
	"return ('x'):len(1)",
	"error('bad argument #1 to x (y, got nil)')",
	// caught: pcall and xpcall see the same words
	"local ok, e = pcall(function() local t; return t.x end) return e",
	"local ok, e = pcall(function() return 1 + nil end) return e",
	"local ok, e = pcall(string.rep) return e",
	"local ok, e = xpcall(function() local t; return t.x end, function(m) return 'H:' .. m end) return e",
	"local ok, e = xpcall(function() return #nil end, function(m) return m end) return {ok and 1 or 0, e}",
	"local ok, e = pcall(error, 'e') return e",
	"local ok, e = pcall(error, {err = 'X'}) return e",
	"local ok, e = pcall(function() redis.call('nosuch') end) return e",
	// loadstring and load: Lua 5.1's parser and chunk names
	"local f, e = loadstring('x =') return e",
	"local f, e = loadstring('x =', 'mychunk') return e",
	"local f, e = loadstring('x =', '=mychunk') return e",
	"local f, e = loadstring('x =', '@file.lua') return e",
	"local f, e = loadstring('\\27Lua') return e",
	"local f, e = loadstring('return 1 +\\nfoo bar') return e",
	"local f, e = loadstring(string.rep('x', 100) .. ' =') return e",
	"local f, e = loadstring(string.rep('y', 70), '@' .. string.rep('z', 90)) return e",
	"local f, e = loadstring('a\\nb =') return e",
	"local f, e = loadstring('local goto = 3 return goto') return f()",
	"local f = loadstring('local t = nil return t.x') local ok, e = pcall(f) return e",
	"local f = loadstring(string.rep('x', 100) .. ' = nil + 1') local ok, e = pcall(f) return e",
	"local f = loadstring('local x = ... return x.y', '=c') local ok, e = pcall(f) return e",
	"local f = loadstring('return ...') return {f(1, 2)}",
	"local f, e = loadstring(string.dump(function() return 1 end)) return {type(f), e}",
	"local ok, e = pcall(string.dump, tostring) return e",
	"local i = 0 local f, e = load(function() i = i + 1 if i == 1 then return 'return ' elseif i == 2 then return '42' end end) return f()",
	"local f, e = load(function() return 'x =' end, 'nm') return e",
	"local n = 0 local f, e = load(function() n = n + 1 if n < 4 then return 'a' end end) return {n, e}",
	// an error escaping from a loaded chunk is "on" the chunk's source
	"return loadstring('y = 1')()",
	"return loadstring('\\n\\nerror(\\'boom\\')', '=mychunk')()",
	"return loadstring('return redis.call(\\'nosuch\\')')()",
	"return loadstring('local t = nil return t.x', '@file.lua')()",
	"local f = loadstring('return function() error(\\'x\\') end')() f()",
	"loadstring('error(\\'x\\', 2)')()",
	"loadstring('\\nerror({err = \\'tab\\'})')()",
	"loadstring('return string.rep()')()",
	"loadstring(string.rep('x', 100) .. ' = nil + 1')()",
	"local r = loadstring('error(1)') local f = load(r) return nil + 1",
	"local h = loadstring('error(\\'in h\\')', '=mychunk') xpcall(nil, h) local function r() return 1 + r() end return r()",
	"local f = loadstring('return 1', '=user_script') f() error('boom')",
	// an error table's line breaks become spaces, trailing ones too
	"error({err = 'ab\\r\\n'})",
	"error({err = 'ab\\r\\n\\0cd'})",
	// load's reader: its errors are load's result, as its handler makes them
	"local a, b = load(function() error('rd') end) return {tostring(a), b}",
	"return {pcall(function() local a, b = load(function() error('rd') end) return tostring(a), b end)}",
	"return {xpcall(function() local a, b = load(function() error('rd') end) return tostring(a), b end, function(m) return 'H' end)}",
	"local a, b = load(function() return {} end) return {tostring(a), b}",
	"return {pcall(function() local a, b = load(function() return {} end) return tostring(a), b end)}",
	"local a, b = load(function() error({err = 'X y'}) end) return {tostring(a), b}",
	"local a, b = load(function() error(5) end) return {tostring(a), b}",
	// xpcall: any value is called, any value handles, a failing handler
	// is called again
	"return {xpcall(function() error('a') end, function(m) error('b') end)}",
	"return {xpcall(function() error('a') end, function(m) return nil + m end)}",
	"local n = 0 return {xpcall(function() error('a') end, function(m) n = n + 1 if n < 5 then error('h' .. n) end return 'ok' end)}",
	"return {xpcall(nil, function(m) return 'H:' .. m end)}",
	"return {xpcall(function() return 5 end, 1)}",
	"return {xpcall(function() error('e') end, 1)}",
	"return {xpcall(setmetatable({}, {__call = function() return 7 end}), function(m) return m end)}",
	"xpcall(error)",
	// calls nest deep (Lua 5.1: 16383 levels in a state that never went
	// deeper, 19998 after; tumbler 7999), and 198 protected calls
	"local function r(n) if n == 0 then return 0 end return 1 + r(n-1) end return r(7999)",
	"local function r(n) if n == 0 then return 0 end return 1 + r(n-1) end return r(30000)",
	"local function r(n) if n == 0 then return 0 end return 1 + r(n-1) end return {pcall(r, 300)}",
	"local function r(n) local ok, v = pcall(r, n+1) if not ok then return {n, v} end return v end return r(0)",
	"local function r(n) local ok, v = xpcall(function() return r(n+1) end, function(m) return 'h:' .. tostring(m) end) if not ok then return {n, v} end return v end return r(0)",
	// errors raised in a C function have no position: rawset's index
	// errors always, luaL_error's when a C function (pcall) called it
	"rawset({}, nil, 1)",
	"return {pcall(rawset, {}, nil, 1)}",
	"rawset({}, 0/0, 1)",
	"return {pcall(rawset, {}, 0/0, 1)}",
	"return {pcall(rawset, {}, nil)}",
	"local t = setmetatable({}, {__metatable = 1}) setmetatable(t, {})",
	"return {pcall(setmetatable, setmetatable({}, {__metatable = 1}), {})}",
	"local t = setmetatable({}, {__metatable = false}) setmetatable(t, {}) return 1",
	// a reply nests as deep as Redis's Lua stack lets it convert it
	"local t = {} local c = t for i = 1, 7994 do c[1] = {} c = c[1] end return t",
	"local t = {} local c = t for i = 1, 7995 do c[1] = {} c = c[1] end return t",
	"local t = {} t[1] = t return t",
	"local t = {} local c = t for i = 1, 7993 do c[1] = {} c = c[1] end c[1] = {1, 2, {3}} return t",
	"redis.setresp(3) local t = {} local c = t for i = 1, 2664 do local n = {} c.map = {a = n} c = n end return t",
	"redis.setresp(3) local t = {} local c = t for i = 1, 2665 do local n = {} c.map = {a = n} c = n end return t",
	"redis.setresp(3) local t = {} local c = t for i = 1, 2663 do local n = {} c.map = {[n] = 1} c = n end return t",
	"redis.setresp(3) local t = {} local c = t for i = 1, 2665 do local n = {} c.set = {[n] = true} c = n end return t",
	// loops whose body begins with break (gopher-lua miscompiled the
	// jump back: the first ran for ever)
	"for k, v in pairs({}) do end for k in pairs({1}) do break end return 1",
	"while true do break end repeat break until false for i = 1, 3 do break end return 'ok'",
	"local t = {} for i = 1, 3 do for k in pairs({1, 2}) do break end t[#t + 1] = i end return t",
	"for k, v in pairs({}) do end for k in pairs({1}) do if nil then local x = 1 end break end return 1",
	// collectgarbage's options and results (its values kept between
	// scripts: this order sets them back)
	"return collectgarbage('setpause', 100)",
	"return collectgarbage('setpause', 200)",
	"return collectgarbage('setstepmul', 300)",
	"return collectgarbage('setstepmul', '200')",
	"return collectgarbage('nosuch')",
	"return collectgarbage({})",
	"return collectgarbage(5)",
	"return collectgarbage('setpause', 'x')",
	"return {pcall(collectgarbage, 'x')}",
	"return {collectgarbage(), collectgarbage(nil), collectgarbage('collect'), collectgarbage('step'), 1}",
	"return {collectgarbage('stop'), collectgarbage('restart'), type(collectgarbage('count')), type(gcinfo())}",
	// an error's and a status's text end at a NUL (C strings); a double
	// reply's NaN keeps its sign, as glibc prints it
	"return {err='ab\\0cd'}",
	"return redis.status_reply('ab\\0cd')",
	"return redis.error_reply('ab\\0cd')",
	"error('ab\\0cd')",
	"error({err='x\\0y'})",
	"return {double=0/0}",
	"return {double=-(0/0)}",
	// string.byte's results fit Lua's C stack
	"return string.byte(string.rep('x', 9000), 1, -1)",
	"return #{string.byte(string.rep('x', 7997), 1, -1)}",
	"return #{string.byte(string.rep('x', 7998), 1, -1)}",
	// next with a key the table does not have
	"local t = {a = 1, b = 2, c = 3} return next(t, 'zz')",
	"local t = {1, 2, 3} return next(t, 4)",
	"local t = {1, 2, 3} return next(t, 1.5)",
	"local t = {a = 1} t.a = nil return next(t, 'a')",
	"local t = {} t[100] = 1 return next(t, 100)",
	"local ok, e = pcall(next, {}, 'x') return e",
	"local t = {} for i = 1, 50 do t['k' .. i] = i end local n = 0 for k in next, t do t[k] = nil n = n + 1 end return n",
	// closures share their variables after a caught error
	"local x = 1 local function get() return x end pcall(error, 'e') x = 2 return get()",
	"local x = 1 local function get() return x end pcall(function() error('e') end) x = 2 return get()",
	"local x = 1 local function get() return x end xpcall(function() error('e') end, function(m) return m end) x = 2 return get()",
	"local t = {} pcall(function() local x = 1; t.f = function() return x end; error('e') end) local a, b, c = 7, 8, 9 return t.f()",
	"local n = 0 local function inc() n = n + 1 end for i = 1, 3 do pcall(function() inc() error('x') end) end return n",
	"local function outer() local v = 'a' local function get() return v end pcall(function() local w = 1 return w.x end) v = 'b' return get() end return outer()",
	"local x = 0 local ok = pcall(function() local y = 5 local f = function() return y end x = f() error('z') end) return x",
	"local fs = {} for i = 1, 3 do pcall(function() local v = i * 10 fs[i] = function() return v end error('e') end) end return {fs[1](), fs[2](), fs[3]()}",
	"local a = 1 local function get() return a end local ok = pcall(function() pcall(function() error('in') end) a = 5 error('out') end) a = a + 1 return get()",
	"local got local x = 'before' local ok, e = xpcall(function() local y = 'inner' got = function() return y end error('e') end, function(m) x = 'handled' return m end) return {x, got()}",
	"local c = 0 local function counter() c = c + 1 return c end for i = 1, 5 do pcall(counter) pcall(error) end return counter()",
	"local t = setmetatable({}, {__index = function(t, k) return k .. '!' end}) local ok, e = pcall(function() return t.a .. nil end) return {t.b, e}",
	"local ok, e = pcall(function() local t = {} t.x.y = 1 end) local ok2, e2 = pcall(function() return #nil end) return {e, e2}",
}

func TestLuaRuntimeErrorDiff(t *testing.T) {
	rc, tc := dialPair(t)
	diffCommands(t, rc, tc, []string{"EVAL"}, luaRuntimeCases, "0")
}

// diffCommands sends "cmd... arg after..." for each of args to both
// servers and compares the replies byte for byte.
func diffCommands(t *testing.T, rc, tc *conn, cmd []string, args []string, after ...string) {
	t.Helper()
	for _, a := range args {
		full := append(append(append([]string{}, cmd...), a), after...)
		want, err := rc.do(full...)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do(full...)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s %q\nredis:   %q\ntumbler: %q", strings.Join(cmd, " "), clipScript(a), want, got)
		}
	}
}
