package diff

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLuaLibDiff calls the functions of the scripts' libraries with
// every argument of a set of values, and random pairs and triples of
// them, under pcall, on redis-server and tumbler, and compares what they
// return or raise. One script does every call (EVALSHA, the function and
// its arguments in ARGV), so that neither server compiles thousands.
//
// What a call returns is written as type:value. Tables and functions
// show as their type, and tostring's of them as "address" (their
// addresses differ), and NaN as "nan": glibc's
// NaNs carry a sign that depends on the function (log(-1) is -nan,
// log10(-1) nan), Go's do not (the README lists this).
//
// For longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_LUALIB_SEED=7 TUMBLER_LUALIB_CASES=100000 \
//	    go test -run TestLuaLibDiff ./diff/
func TestLuaLibDiff(t *testing.T) {
	seed, cases := seedAndCases(t, "LUALIB", 4000)
	rc, tc := dialPair(t)
	sha := scriptLoad(t, luaLibScript, rc, tc)
	mismatches := 0
	check := func(args []string) {
		full := append([]string{"EVALSHA", sha, "0"}, args...)
		want, err := rc.do(full...)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do(full...)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if !bytes.Equal(want, got) {
			mismatches++
			if mismatches <= 30 {
				t.Errorf("%s(%s)\nredis:   %q\ntumbler: %q", args[0], strings.Join(args[1:], ", "), want, got)
			}
		}
	}
	// every function with no argument and with each one value
	for _, f := range luaLibFuncs {
		check([]string{f})
		for _, v := range luaLibValues {
			check([]string{f, v})
		}
	}
	// random pairs and triples
	r := rand.New(rand.NewPCG(seed, 0x6c6962))
	for i := 0; i < cases; i++ {
		args := []string{luaLibFuncs[r.IntN(len(luaLibFuncs))]}
		for n := 2 + r.IntN(2); n > 0; n-- {
			args = append(args, luaLibValues[r.IntN(len(luaLibValues))])
		}
		check(args)
	}
	if mismatches > 0 {
		t.Errorf("%d calls differ (seed %d)", mismatches, seed)
	}
}

// luaLibScript calls ARGV[1] (a dotted name) with the values ARGV[2..]
// encode: n nil, t {}, T {1, 2, 3}, b true, B false, s:<string>,
// d:<number>.
const luaLibScript = `
local f = _G
for part in string.gmatch(ARGV[1], '[^.]+') do f = f[part] end
local args, n = {}, #ARGV - 1
for i = 2, #ARGV do
  local a, v = ARGV[i], nil
  if a == 't' then v = {} elseif a == 'T' then v = {1, 2, 3}
  elseif a == 'b' then v = true elseif a == 'B' then v = false
  elseif a:sub(1, 2) == 's:' then v = a:sub(3)
  elseif a:sub(1, 2) == 'd:' then v = tonumber(a:sub(3)) end
  args[i - 1] = v
end
local function pack(...) return {n = select('#', ...), ...} end
local r = pack(pcall(f, unpack(args, 1, n)))
local out = {}
for i = 1, r.n do
  local v = r[i]
  local ty = type(v)
  if ty == 'table' or ty == 'function' then out[i] = ty
  elseif v ~= v then out[i] = 'nan'
  elseif ty == 'string' and (v:find('^table: ') or v:find('^function: ')) then out[i] = 'address'
  else out[i] = ty .. ':' .. tostring(v) end
end
return out
`

var luaLibFuncs = []string{
	"string.sub", "string.rep", "string.byte", "string.char", "string.upper", "string.lower",
	"string.len", "string.reverse", "string.format", "string.find", "string.match", "string.gsub",
	"table.insert", "table.remove", "table.concat", "table.sort", "table.getn", "table.maxn",
	"math.floor", "math.ceil", "math.abs", "math.max", "math.min", "math.fmod", "math.modf",
	"math.sqrt", "math.pow", "math.log", "math.log10", "math.exp", "math.frexp", "math.ldexp",
	"math.atan2", "math.deg", "math.rad",
	"select", "assert", "setmetatable", "getmetatable", "tonumber", "tostring", "type", "unpack",
	"rawequal", "rawget", "ipairs", "pairs", "error", "next",
	"bit.band", "bit.bor", "bit.bxor", "bit.bnot", "bit.lshift", "bit.rshift", "bit.arshift",
	"bit.rol", "bit.tobit", "bit.tohex", "bit.bswap",
	"cjson.encode", "cjson.decode",
}

var luaLibValues = []string{
	"n", "d:1", "d:-1", "d:0", "d:2.5", "d:-0.5", "d:3", "d:100", "d:-100", "d:4294967296",
	"s:abc", "s:", "s:10", "s:  12  ", "s:0x10", "s:x%d", "s:%s", "s:%", "s:[a", "s:(.)", "s:%a+",
	"s:[1,2]", "t", "T", "b", "B",
}

// TestLuaErrHandlerDiff: Redis 7.0 defines __redis__err__handler, its
// message handler for EVAL's scripts, as a global that scripts see and
// may call (functions do not have it). What it returns is compared.
func TestLuaErrHandlerDiff(t *testing.T) {
	rc, tc := dialPair(t)
	for _, args := range [][]string{
		{"EVAL", "return type(__redis__err__handler)", "0"},
		{"EVAL", "return __redis__err__handler('x')", "0"},
		{"EVAL", "local t = __redis__err__handler(ARGV[1])\nreturn {t.err, t.source, t.line}", "0", "msg"},
		{"EVAL", "\n\nlocal t = __redis__err__handler({a=1})\nreturn {tostring(t.err), t.source, t.line, t.a}", "0"},
		{"EVAL", "local ok, t = pcall(__redis__err__handler, 5)\nreturn {tostring(ok), t.err, t.source, t.line}", "0"},
		{"EVAL", "local t = __redis__err__handler(true) return {t.err, __redis__err__handler(nil).err}", "0"},
		{"EVAL", "local t = __redis__err__handler(setmetatable({}, {__tostring = function() return 'm' end})) return tostring(t.err)", "0"},
		{"EVAL", "__redis__err__handler = nil", "0"},
		{"FUNCTION", "LOAD", "REPLACE", "#!lua name=eh\nredis.register_function('eh', function() return type(__redis__err__handler) end)"},
		{"FCALL", "eh", "0"},
	} {
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do(args...)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%q\nredis:   %q\ntumbler: %q", args, want, got)
		}
	}
}
