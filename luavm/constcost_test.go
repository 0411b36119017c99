package luavm

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
)

// numbered returns n lines "t[i] = 1": n distinct constants (the
// indexes) for the compiler to search through.
func numbered(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		b.WriteString("t[" + strconv.Itoa(i) + "] = 1\n")
	}
	return b.String()
}

// Scripts whose constants gopher-lua's compiler would take too long to
// search, or whose operators it would take too long to fold, are refused
// before compiling (constcost.go); others compile as before, large
// generated ones included.
func TestConstCost_RefusesWhatWouldCompileForMinutes(t *testing.T) {
	f := newFixture(t)
	// 5,000 distinct constants: a fraction of a second, compiled
	f.expect(":5000", "EVAL", "local t = {}\n"+numbered(1, 5000)+"return #t", "0")

	for _, tc := range []struct{ name, body, want string }{
		{"main chunk", "local t = {}\n" + numbered(1, 40000) + "return #t",
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (40000 distinct constants, used 80000 times; 0 operator visits folding)"},
		{"nested function", "local t = {}\nlocal function f()\n" + numbered(1, 40000) + "end\nreturn 1",
			"user_script:2: too many constants or operators for tumbler to compile in the function at line 2 (40000 distinct constants, used 80000 times; 0 operator visits folding)"},
		// few distinct constants, the last of them used over and over
		{"repeated use", "local t = {}\n" + numbered(1, 3000) + strings.Repeat("t[3000] = 2\n", 100000) + "return #t",
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (3000 distinct constants, used 206000 times; 0 operator visits folding)"},
		// 0/0 folds to NaN, which never equals a constant found before
		{"NaN", "local t = {}\n" + strings.Repeat("t[1] = 0/0\n", 20000) + "return 1",
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (20001 distinct constants, used 40001 times; 20000 operator visits folding)"},
		// each + folds the whole chain under it: n²/2 visits
		{"operator chain", "local x = 0\nreturn x" + strings.Repeat("+1", 20000),
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (2 distinct constants, used 20001 times; 200010000 operator visits folding)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "-ERR Error compiling script (new function): " + tc.want
			if got := f.do(2, "EVAL", tc.body, "0"); got != want {
				t.Errorf("EVAL:\n got %.300q\nwant %.300q", got, want)
			}
			f.expect("*1 :0", "SCRIPT", "EXISTS", SHA1Hex([]byte(tc.body)))
		})
	}
	// loadstring returns the error, as for any compile error
	body := "local t = {}\n" + numbered(1, 40000)
	want := "$nil|[string \"local t = {}...\"]:1: too many constants or operators for tumbler to compile in the main chunk (40000 distinct constants, used 80000 times; 0 operator visits folding)"
	if got := f.do(2, "EVAL", "local fn, err = loadstring(ARGV[1]) return tostring(fn) .. '|' .. err", "0", body); got != want {
		t.Errorf("loadstring:\n got %.300q\nwant %.300q", got, want)
	}
	// and FUNCTION LOAD (which compiles under the keyspace lock); an
	// operator chain with its constant end on top folds that end once,
	// and is not refused for it (the global x is missing at load)
	if got := f.do(2, "FUNCTION", "LOAD", "#!lua name=big\nreturn 0"+strings.Repeat("+1", 20000)+"+x"); !strings.Contains(got, "nonexistent global variable 'x'") {
		t.Errorf("FUNCTION LOAD: %.200q", got)
	}
	for _, lib := range []string{body, "local x = 0\nreturn x" + strings.Repeat("+1", 20000)} {
		if got := f.do(2, "FUNCTION", "LOAD", "#!lua name=big\n"+lib); !strings.Contains(got, "too many constants or operators for tumbler to compile") {
			t.Errorf("FUNCTION LOAD: %.200q", got)
		}
	}
	// Operators that fold whole, long or not, and short chains compile.
	f.expect(":20001", "EVAL", "return 1"+strings.Repeat("+1", 20000), "0")
	f.expect(":2000", "EVAL", "local x = 0\nreturn x"+strings.Repeat("+1", 2000), "0")
	f.expect(":20000", "EVAL", "local x = 0\n"+strings.Repeat("x = x + 1\n", 20000)+"return x", "0")
	f.expect(":-1", "EVAL", "return -(-(-(-(-1))))", "0")
	// a unary minus over a constant tree is folded once, in place: the
	// folds of the chain above it visit it as one node (0.25 s)
	f.expect(":-99999", "EVAL", "local x = 1\nreturn x"+strings.Repeat(" + -("+strings.Repeat("1+", 99)+"1)", 1000), "0")
}

// The count's distinct constants are the ones gopher-lua's compiler
// makes, function by function: globals are constants, locals (of the
// function or one it is in, while in scope) are not. A local taken for a
// constant would refuse scripts that compile in a moment.
func TestConstCost_CountsWhatTheCompilerMakes(t *testing.T) {
	for _, src := range []string{
		"local t = {}\nt[1] = 'a'\nreturn t",
		"do local x = 1 end\nreturn x",                         // out of scope: a global
		"local x = x\nreturn x",                                // the global, then the local
		"local a, b = 1, a\nreturn b",                          // a is not in scope yet
		"repeat local r = 5 until r\nreturn 1",                 // the condition sees r
		"while w do local v = 1 end\nreturn v",                 // v is gone after
		"if c then local i = 1 else local j = i end\nreturn i", // each branch its own
		"for i = i, 10 do end",                                 // the bounds see the global i
		"for i = 1, 10 do local k = i end",
		"for k, v in pairs(t) do local z = k .. v end\nreturn z",
		"local function f(n) return f(n) end\nreturn f",
		"local f = function() return f end\nreturn f", // (in scope in its body, as in gopher-lua)
		"local g, h = 1, function() return h end\nreturn g",
		"local o = {}\nfunction o:m(a) return self, a, o, q end\nfunction o.n(a) return self, a end\nreturn o",
		"function top(...) return arg, ... end\nlocal function v2(...) local arg = 1 return arg end\nreturn top",
		"local u = 1\nlocal function outer()\n  local function inner() return u, w end\n  return inner, u\nend\nreturn outer",
		"local s = 'x'\nreturn s:upper(), s.len, ('y'):rep(2), -u, 2^3, #s",
		"local n = 0\nfor i = 1, 3 do n = n + i * 2.5 end\nreturn n",
		"x = 1; local x = 2; y = x; do local y = 3; z = y end; return x, y, z",
		// numbers are one constant by value, folded or not; NaN never
		"local t = {} t[1] = -1 t[2] = -1 t[3] = 2*60 t[4] = 120 t[5] = -0 t[6] = 0 t[7] = 1.0 t[8] = 1 t[9] = 0/0 t[10] = 0/0",
		"local t = {} t[1] = 7 % 3 t[2] = 1 t[3] = 2^10 t[4] = 1024 t[5] = -(3) t[6] = 0x10 t[7] = 16 t[8] = 5 / 2 t[9] = 2.5",
		"local x = 1 return x + 1 + 2, x * -1, -x, 1 - x, (1+2) * x, 3",
		"local s = '1' return s .. 1, #s, s + 1",
		// a literal condition is known true: no constant
		"while 'w' do break end if 7 then x = 1 end repeat y = 2 until 'r' if not 'n' then end if 'a' and 'b' then end",
		"if 'o' or 'p' then end if not ('q' or 'r') then end if x and 's' or not 't' then end while not not 'u' do end",
	} {
		// as the server compiles: luaparse, the coercions wrapped
		chunk, err := luaparse.Parse([]byte(src), "t")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		wrapCoercions(chunk)
		var got []int
		cc := constCost{onDone: func(c *constCounter) { got = append(got, len(c.index)) }}
		cc.count(chunk)
		proto, err := lua.Compile(chunk, "t")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		var want []int
		var post func(p *lua.FunctionProto)
		post = func(p *lua.FunctionProto) {
			for _, c := range p.FunctionPrototypes {
				post(c)
			}
			want = append(want, len(p.Constants))
		}
		post(proto)
		if !slices.Equal(got, want) {
			t.Errorf("%q: distinct constants by function %v, the compiler's %v", src, got, want)
		}
	}
}

// A script that uses its locals over and over, after thousands of
// constants, compiles: uses of a local search nothing.
func TestConstCost_LocalsAreFree(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	b.WriteString("local t, n = {}, 0\n" + numbered(1, 12000))
	for range 40000 {
		b.WriteString("n = n + #t\n")
	}
	b.WriteString("return n")
	f.expect(":480000000", "EVAL", b.String(), "0")
}

// Numbers are counted by value, as the compiler finds them: a generated
// script of thousands of -1 (each folded from 1) compiles. And a global
// assigned to is searched for twice, as the compiler does: thousands of
// distinct globals assigned once are refused sooner than read once.
func TestConstCost_NumbersByValueGlobalsAssignedTwice(t *testing.T) {
	f := newFixture(t)
	f.expect(":-1", "EVAL", "local t = {}\n"+strings.Repeat("t[1] = -1\n", 17000)+"return t[1]", "0")

	var b strings.Builder
	for i := range 16300 {
		b.WriteString("g" + strconv.Itoa(i) + " = 1\n")
	}
	want := "-ERR Error compiling script (new function): user_script:1: too many constants or operators for tumbler to compile in the main chunk (16301 distinct constants, used 48900 times; 0 operator visits folding)"
	if got := f.do(2, "EVAL", b.String(), "0"); got != want {
		t.Errorf("globals assigned:\n got %.300q\nwant %.300q", got, want)
	}
}

// The compiler walks the chain of open blocks for each name and as it
// leaves each block: a chain of thousands of elseif (each a block in the
// one before) compiles for seconds, and is refused; one of hundreds
// compiles. And long strings of one length are compared byte by byte:
// each search past one counts a step more for every longStepBytes.
func TestConstCost_DeepBlocksLongStrings(t *testing.T) {
	f := newFixture(t)
	chain := func(n int) string {
		return "local x = ARGV[1] if x == 'a' then return 1 " + strings.Repeat("elseif x == 'a' then return 1 ", n) + "elseif x == 'b' then return 2 end"
	}
	f.expect(":2", "EVAL", chain(500), "0", "b")
	want := "-ERR Error compiling script (new function): user_script:1: too many constants or operators for tumbler to compile in the main chunk (5 distinct constants, used 40006 times; 0 operator visits folding)"
	if got := f.do(2, "EVAL", chain(20000), "0", "b"); got != want {
		t.Errorf("elseif chain:\n got %.300q\nwant %.300q", got, want)
	}

	c := newConstCounter(0)
	long := strings.Repeat("x", 4*longStepBytes)
	for i := range 100 {
		c.add('s', long+strconv.Itoa(1000+i)) // 100 distinct, of one length
	}
	c.add('s', long+"1000") // found, first
	c.add('s', "short")
	if want := 100*99/2 + 100 + 100*99/2*4 + 100*4; c.steps != want {
		t.Errorf("steps %d, want %d", c.steps, want)
	}
}
