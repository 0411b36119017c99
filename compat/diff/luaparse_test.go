package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Scripts are read by Lua 5.1's parser in Redis, and by a port of it in
// tumbler (luavm/internal/luaparse). These tests send the same scripts to
// redis-server and tumbler and compare the replies byte for byte: what
// each accepts, and each refusal's message, line and token.

// luaParseCases run with EVAL (each one ends quickly, or fails to compile).
var luaParseCases = []string{
	// names Lua 5.2 took for keywords
	"local goto = 1 return goto",
	"goto x",
	"::a:: return 1",
	"local t = {goto = 2} return t.goto",
	// statements Lua 5.1 refuses
	"do; end",
	";",
	"local x = 1;; return x",
	"(f())",
	"(a) = 1",
	"a.b:c = 1",
	"a, (b) = 1, 2",
	"x",
	"f() = 1",
	"return 1 return 2",
	"break",
	"return; return",
	"if x then break end",
	"for i = 1 do end",
	"for i in do end",
	"for 1 = 1, 2 do end",
	"for a.b = 1, 2 do end",
	"for i, 1 in x do end",
	"function f(a,) end",
	"function f(a, 1) end",
	"function f(..., a) end",
	"function a.b:c.d() end",
	"function () end",
	"local function a.b() end",
	"local 1 = 2",
	"local x <const> = 1",
	"return ...",
	"function f() return ... end",
	"local f = function() return ... end",
	"x = {...}",
	"return f\n(1)",
	"f\n(1)",
	"local t = f\n(1)",
	"return a.b\n(1)",
	"return f\n'x'",
	"return f\n{1}",
	// unmatched closers, on the same line and not
	"if x then",
	"if x then\n\nreturn 1",
	"while true do",
	"while true do\nx = 1",
	"repeat x = 1",
	"repeat\nx = 1",
	"function f()\nreturn 1",
	"local t = {1, 2\n",
	"local t = {1, 2",
	"return f(1,\n2",
	"return (1\n+ 2",
	"return (1 + 2",
	"do\nx = 1",
	"for i = 1, 2 do\n",
	"if x then else elseif y then end",
	"if x then elseif end",
	"return [[a [[ b]]",
	"return [[a [[ b]] c]]",
	"return [==[a]=]b]==]",
	"return [=[a]]",
	"return [=x[a]]",
	"return [= [a]]",
	"--[[ unfinished comment",
	"--[==[ unfinished\ncomment\n",
	"return 1 --[[ comment ]] + 2",
	"return 1 --[==[\n]] ]=] \n]==] + 2",
	"return 1 -- comment\n+ 2",
	"--[ not a long comment\nreturn 3",
	// strings
	`return "\300"`,
	`return "\255\0\1"`,
	`return "\2555"`,
	`return "\x41\z\q\?\'\""`,
	"return \"a\nb\"",
	"return \"abc",
	"return 'abc\\\ndef'",
	"return \"a\\",
	"return \"\\",
	"return 'it''s'",
	"return \"\x00x\" .. y(",
	// a NUL byte: C's strchr finds it in any set (llex.c's check_next),
	// and C strings end at it
	"return 1\x00 .. 2",
	"return tostring(9007199254740\x0093)",
	"return 1 .\x00 2",
	"return .\x00..\x00..",
	"return 1.\x002.3",
	"return \x00",
	"x = 1 \x00",
	// numbers
	"return tostring(1e500)",
	"return tostring(-1e500)",
	"return tostring(1e-400)",
	"return tostring(0x1p4)",
	"return tostring(0x10), tostring(0XfF), tostring(0x.8)",
	"return tostring(0x)",
	"return 0xg",
	"return 1..2",
	"return 1 .. 2",
	"return 1e",
	"return 1e+",
	"return 3e2e",
	"return .5e1, 5., 5.e1",
	"return 0b101",
	"return 1_000",
	"return 08, 010",
	"return tostring(9007199254740993)",
	"return tostring(0xffffffffffffffffff)",
	"return tostring(1.7976931348623157e308), tostring(1.7976931348623159e308)",
	"return 1.2.3",
	"return 5x",
	"return tostring(2^63), tostring(-2^63)",
	// what errors show as the token
	"return \x01",
	"return \x7f",
	"return \xc3\xa9",
	"return @",
	"return $x",
	"return !x",
	"x = = 1",
	"x = 1 +",
	"return not",
	"return #",
	"return -",
	"local function",
	"local function f",
	"function",
	"return a.",
	"return a:",
	"return a:b",
	"return a[",
	"return a[1",
	"return {a = }",
	"return {a b}",
	"return {[1] 2}",
	"return {,}",
	"return {1,,2}",
	"return f(,)",
	"return f(1,)",
	"return \"x\" \"y\"",
	"return nil nil",
	"return true.x",
	"return ('a'):len(), (\"b\"):upper()",
	"return ('a').x",
	"return 'a':len()",
	"return {}.x",
	// line numbers: \n, \r, \r\n and \n\r are one line each
	"\n\nreturn +",
	"\r\rreturn +",
	"\r\n\r\nreturn +",
	"\n\r\n\rreturn +",
	"\n\n\rreturn +",
	"return [[\n\n]] +",
	"return \"a\\\n\\\nb\" +",
	"--[[\n\n]] return +",
	"x = 1\r\ny = \r\n",
	// the compatibility "arg" of Lua 5.0's varargs
	"local function f(...) return arg.n end return f(1,2,3)",
	"local function f(...) local x = ... return type(arg) end return f(1,2,3)",
	"local function f(a, ...) return {a, arg[1], arg[2], arg.n} end return f(1,2,3)",
	"local function f(...) return function() return arg.n end end return f(1,2)()",
	"local function f(...) local arg = 5 return arg end return f(1)",
	"return arg",
	"return type(arg)",
	// shapes that run, and must run alike
	"local a, b = (function() return 1, 2 end)() return {a, b}",
	"local function f() return 1, 2, 3 end return {(f())}",
	"local function f() return 1, 2, 3 end return {f()}",
	"local function f(...) return {(...)} end return f(4, 5, 6)",
	"local t = {} t.a = {} function t.a.m(x) return x end return t.a.m(7)",
	"local o = {v = 3} function o:get(d) return self.v + d end return o:get(4)",
	"local x = 0 for i = 10, 1, -3 do x = x * 10 + i end return x",
	"local s = 0 for _, v in ipairs({1, 2, 3}) do s = s + v end return s",
	"local i = 0 repeat local j = i i = i + 1 until j >= 3 return i",
	"return -2^2, 2^-1 * 4, 2^3^2, not nil == true, 1 .. 2 .. 3",
	"return 1 + 2 * 3 - 4 / 2 % 3, 7 % -3 * 10",
	"return #'abc' + #{1, 2}, -(-3), - -3",
	"return 1 < 2 and 'y' or 'n', nil and 1, false or nil",
	"local t = {1, 2; 3, x = 4, ['y'] = 5; [1 + 1] = 6} return {t[1], t[2], t[3], t.x, t.y}",
	"local t = {f = function(...) return select('#', ...) end} return t.f(nil, nil)",
	"return ('%d'):format(5) .. ('x'):rep(3)",
	"local a = {} a[1], a[2] = 1 return {a[1], a[2]}",
	"local a, b, c = 1 return {a, b, c}",
	"local x = 1 local function f() x = x + 1 return x end f() return f()",
	"do local x = 5 end return x",
	"if false then elseif nil then else return 'else' end",
	"while true do break end return 'out'",
	"return redis.call('ping')",
	"return redis.call(\n'echo',\n'a'\n) .. redis.call('echo', 'b')",
	"local t = {} t [1] = 1 t\n[2] = 2 return #t",
	"return 1\n;",
	"local x = 1; return x;",
	"return;",
}

func TestLuaParseDiff(t *testing.T) {
	rc, tc := dialPair(t)
	diffCommands(t, rc, tc, []string{"EVAL"}, luaParseCases, "0")
}

// luaLimitCases are generated scripts at and past Lua 5.1's limits:
// local variables, upvalues, nesting, variables in one assignment.
func luaLimitCases() []string {
	var out []string
	names := func(prefix string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s%d", prefix, i)
		}
		return b.String()
	}
	// (200 locals and a temporary are past gopher-lua's 200 registers,
	// which Lua 5.1's 250 allow: "local a0, ..., a199 return 1" compiles
	// in Redis and not in tumbler.)
	for _, n := range []int{199, 200, 201} {
		out = append(out,
			"local "+names("a", n),
			"local function f() local "+names("a", n)+" end return 1",
			"local "+names("a", n-3)+" for i = 1, 2 do end return 1",
			"local "+names("a", n-4)+" for k, v in pairs({}) do end return 1",
			"function f(...) local "+names("a", n-1)+" end return 1",
			"local o = {} function o:m() local "+names("a", n-1)+" end return 1",
		)
	}
	for _, n := range []int{59, 60, 61} {
		var b strings.Builder
		b.WriteString("local " + names("u", n) + "\nlocal function f()\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  u%d = 1\n", i)
		}
		b.WriteString("end\nreturn 1")
		out = append(out, b.String())
		// an upvalue of an upvalue
		out = append(out, "local "+names("u", n)+"\nlocal function f()\n  return function() return "+strings.ReplaceAll(names("u", n), ",", " +")+" end\nend\nreturn 1")
	}
	for n := 194; n <= 202; n++ {
		out = append(out,
			"return "+strings.Repeat("(", n)+"1"+strings.Repeat(")", n),
			strings.Repeat("do ", n)+strings.Repeat("end ", n)+"return 1",
			"return "+strings.Repeat("-", n)+"1",
			"return "+strings.Repeat("{", n)+strings.Repeat("}", n),
			"return 1"+strings.Repeat(" .. 1", n),
			"return 2"+strings.Repeat(" ^ 1", n),
			"return 1"+strings.Repeat(" + 1", n),
			"local function f() "+strings.Repeat("if x then ", n/2)+strings.Repeat("end ", n/2)+"end return 1",
		)
	}
	for _, n := range []int{196, 197, 198, 199, 200} {
		out = append(out, names("v", n)+" = 1", "do "+names("v", n)+" = 1 end")
	}
	return out
}

func TestLuaParseLimitsDiff(t *testing.T) {
	rc, tc := dialPair(t)
	diffCommands(t, rc, tc, []string{"SCRIPT", "LOAD"}, luaLimitCases())
}

func clipScript(s string) string {
	if len(s) > 200 {
		return s[:100] + " ... " + s[len(s)-100:]
	}
	return s
}

// TestLuaParseFunctionDiff: a library's compile errors name
// "user_function".
func TestLuaParseFunctionDiff(t *testing.T) {
	rc, tc := dialPair(t)
	for _, body := range []string{
		"#!lua name=lib\nredis.register_function('f', function() return 1 end) x =",
		"#!lua name=lib\n\nlocal goto = 1\nredis.register_function('f', function() return goto end)",
		"#!lua name=lib\nlocal function f(...) return arg.n end\nredis.register_function('g', function() return f(1, 2) end)",
		"#!lua name=lib\nreturn 1e",
		"#!lua name=lib\nredis.register_function('f', function() return (\n1",
	} {
		for _, c := range []*conn{rc, tc} {
			if _, err := c.do("FUNCTION", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		want, err := rc.do("FUNCTION", "LOAD", body)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do("FUNCTION", "LOAD", body)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("FUNCTION LOAD %q\nredis:   %q\ntumbler: %q", body, want, got)
			continue
		}
		if bytes.HasPrefix(want, []byte("$")) {
			want, _ = rc.do("FCALL", "g", "0")
			got, _ = tc.do("FCALL", "g", "0")
			if !bytes.Equal(want, got) {
				t.Errorf("FCALL g after %q\nredis:   %q\ntumbler: %q", body, want, got)
			}
		}
	}
}

// TestLuaParseRandomDiff compiles mutations of valid scripts (bytes and
// tokens deleted, repeated, swapped and inserted) on both servers with
// SCRIPT LOAD, which compiles without running, and evaluates random
// numerals. For longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_LUAPARSE_SEED=7 TUMBLER_LUAPARSE_CASES=200000 \
//	    go test -run TestLuaParseRandomDiff ./diff/
func TestLuaParseRandomDiff(t *testing.T) {
	seed, cases := seedAndCases(t, "LUAPARSE", 3000)
	rc, tc := dialPair(t)
	r := rand.New(rand.NewPCG(seed, 0x6c7561))
	var bases []string
	for _, s := range luaParseCases {
		if !strings.Contains(s, "redis.") {
			bases = append(bases, s)
		}
	}
	mismatches, accepted := 0, 0
	for i := 0; i < cases && mismatches < 20; i++ {
		var args []string
		if i%4 == 3 {
			args = []string{"EVAL", "return tostring(" + randomNumeral(r) + ")", "0"}
		} else {
			s := bases[r.IntN(len(bases))]
			for n := 1 + r.IntN(3); n > 0; n-- {
				s = mutateLua(r, s)
			}
			args = []string{"SCRIPT", "LOAD", s}
		}
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do(args...)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if want[0] != '-' {
			accepted++
		}
		if !bytes.Equal(want, got) {
			mismatches++
			t.Errorf("seed %d case %d: %q\nredis:   %q\ntumbler: %q", seed, i, args, want, got)
		}
	}
	if accepted < cases/10 {
		t.Errorf("only %d of %d cases compiled: the mutations are too harsh to test much that is valid", accepted, cases)
	}
}

var luaPieces = []string{
	" ", "\n", "\r", "\r\n", ";", ",", ".", "..", "...", ":", "::", "(", ")", "[", "]", "{", "}",
	"[[", "]]", "[=[", "]=]", "--", "--[[", "]]", "'", "\"", "\\", "=", "==", "~=", "<=", ">=", "<", ">",
	"+", "-", "*", "/", "%", "^", "#", "and", "or", "not", "nil", "true", "false", "local", "function",
	"return", "break", "do", "end", "if", "then", "elseif", "else", "while", "repeat", "until", "for",
	"in", "goto", "arg", "self", "x", "f", "0", "1", "1e", "0x", ".5", "\\300", "\\n", "\x00", "\x01", "\xff",
}

// mutateLua changes s in one random way.
func mutateLua(r *rand.Rand, s string) string {
	if len(s) == 0 {
		return luaPieces[r.IntN(len(luaPieces))]
	}
	i := r.IntN(len(s) + 1)
	j := i + r.IntN(min(8, len(s)-i)+1)
	switch r.IntN(5) {
	case 0: // delete a run of bytes
		return s[:i] + s[j:]
	case 1: // repeat it
		return s[:j] + s[i:j] + s[j:]
	case 2: // insert a piece of Lua
		return s[:i] + luaPieces[r.IntN(len(luaPieces))] + s[i:]
	case 3: // replace a byte
		if i < len(s) {
			return s[:i] + string([]byte{byte(r.IntN(128))}) + s[i+1:]
		}
		return s
	default: // swap two runs
		k := r.IntN(len(s) + 1)
		if k < i {
			i, k = k, i
		}
		if j > k {
			j = k
		}
		return s[:i] + s[j:k] + s[i:j] + s[k:]
	}
}

// randomNumeral is a short run of the bytes that make and break numbers.
func randomNumeral(r *rand.Rand) string {
	const first = "0123456789."
	const rest = "0123456789.eE+-xXaAbBfFpP_"
	n := 1 + r.IntN(10)
	b := []byte{first[r.IntN(len(first))]}
	for len(b) < n {
		b = append(b, rest[r.IntN(len(rest))])
	}
	return string(b)
}

// seedAndCases reads a random test's seed and number of cases from
// TUMBLER_<name>_SEED and TUMBLER_<name>_CASES (seed 1 and cases by
// default).
func seedAndCases(t *testing.T, name string, cases int) (uint64, int) {
	t.Helper()
	seed := uint64(1)
	if s := os.Getenv("TUMBLER_" + name + "_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TUMBLER_%s_SEED=%q: %v", name, s, err)
		}
		seed = n
	}
	if s := os.Getenv("TUMBLER_" + name + "_CASES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("TUMBLER_%s_CASES=%q: want a positive integer", name, s)
		}
		cases = n
	}
	return seed, cases
}
