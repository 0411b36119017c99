package luavm

import (
	"testing"

	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
	"github.com/yuin/gopher-lua/ast"
)

// TestMultiAssign_ValuesFirstThenRightToLeft: an assignment to several
// targets evaluates all its values before it assigns any, and assigns the
// last target first, as Lua 5.1 (splitMultiAssigns). gopher-lua alone
// made "a, b = b, a" 2, 2 (yuin/gopher-lua#440). Wanted replies are
// redis-server 7.0.15's.
func TestMultiAssign_ValuesFirstThenRightToLeft(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"local a, b = 1, 2 a, b = b, a return {a, b}", "*2 :2 :1"},
		{"local a, b, c = 1, 2, 3 a, b, c = c, a, b return {a, b, c}", "*3 :3 :1 :2"},
		{"local a, b = 0, 0 a, b = a + 1, a + b return {a, b}", "*2 :1 :0"},
		{"local fa, fb = 0, 1 for i = 1, 10 do fa, fb = fb, fa + fb end return fa", ":55"},
		{"local t = {} t, t.x = 5, 1 return type(t)", "$number"},
		{"local t = {} local u = t t.x, t = 1, 5 return u.x", ":1"},
		{"local a = {} local i = 3 i, a[i] = i + 1, 20 return {i, a[3] or 0, a[4] or 0}", "*3 :4 :20 :0"},
		{"local a = {} local i = 3 a[i], i = 20, i + 1 return {i, a[3] or 0, a[4] or 0}", "*3 :4 :20 :0"},
		{"local a a, a = 1, 2 return a", ":1"},
		{"local a, b = 1 a, b = b, a return {tostring(a), tostring(b)}", "*2 $nil $1"},
		{"local function f() return 7, 8, 9 end local a, b, c = 1, 2, 3 a, b, c = 0, f() return {a, b, c}", "*3 :0 :7 :8"},
		{"local function f(...) local a, b = 1, 2 a, b = ... return {tostring(a), tostring(b)} end return f(9)", "*2 $9 $nil"},
		{"local a, b = 1, 2 local function g() a, b = b, a end g() return {a, b}", "*2 :2 :1"},
		// a value that runs code reading a target as an upvalue sees its old value
		{"local a = 1 local function f() return a end local b a, b = 2, f() return {a, b}", "*2 :2 :1"},
		{"local a = 1 local t = setmetatable({}, {__index = function() return a end}) local b a, b = 2, t.x return {a, b}", "*2 :2 :1"},
		{"local a = 1 local m = {__add = function() return a end} local t = setmetatable({}, m) local b a, b = 2, t + 1 return {a, b}", "*2 :2 :1"},
		{"local a = 'x' local m = {__concat = function() return a end} local t = setmetatable({}, m) local b a, b = 'y', t .. 'z' return {a, b}", "*2 $y $x"},
		{"local a, b for i = 1, 3 do a, b = i, nil end return a", ":3"},
		{"local o = {} local t = setmetatable({}, {__newindex = function(t, k, v) o[#o+1] = k end}) t.a, t.b, t.c = 1, 2, 3 return o", "*3 $c $b $a"},
		{"local t = nil local y t.x, y = 1, 2", "-ERR user_script:1: attempt to index local 't' (a nil value) script: 4b3990dbef7ba9256c8cad8fb92f0e3f7d4d4b58, on @user_script:1."},
		{"local a = {} local y a.b.c, y = 1, 2", "-ERR user_script:1: attempt to index field 'b' (a nil value) script: 8d446923d77a2378bb4524b8c41aff3d378fff5f, on @user_script:1."},
		// no local of the rewrite is named in a later error
		{"local a = 1 a, a = 3, 4 local c = true return 1 .. c", "-ERR user_script:1: attempt to concatenate local 'c' (a boolean value) script: ac180b373d0334fd7f1cc6e84b35bdfea947a211, on @user_script:1."},
		{"local a, b, c = 1, 2, 3 a, b = 3, 4 local d = {} return d + 1", "-ERR user_script:1: attempt to perform arithmetic on local 'd' (a table value) script: 058994914eb58a8dbd3e29dd0226f85a26e9f0c6, on @user_script:1."},
	} {
		if got := f.do(2, "EVAL", c.script, "0"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.script, got, c.want)
		}
	}
}

// TestMultiAssign_RewritesOnlyWhatCanGoWrong: the rewrite (a call each
// time the statement runs) is kept to the assignments gopher-lua could
// get wrong: a target named twice, or read, or code run that might read
// it.
func TestMultiAssign_RewritesOnlyWhatCanGoWrong(t *testing.T) {
	for _, c := range []struct {
		src     string
		rewrite bool
	}{
		{"a, b = 1, 2", false},
		{"a, b = c, nil", false},
		{"a, b = {c}, function() return a end", false},
		{"t.x, t.y = t.y, t.x", false},
		{"a, b = c and d, not e", false},
		{"a, b = b, a", true},
		{"a, a = 1, 2", true},
		{"a, b = {a}, 1", true},
		{"a, b = f(), 1", true},
		{"a, b = KEYS[1], ARGV[1]", true},
		{"a, b = c + 1, 2", true},
		{"a, b = c .. d, 2", true},
		{"a, b = c < d, 2", true},
		{"a, b = -c, 2", true},
		{"a, b = #c, 2", true},
		{"t[i], i = 1, 2", true},
	} {
		ss, err := luaparse.Parse([]byte(c.src), "t")
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		a, ok := ss[0].(*ast.AssignStmt)
		if !ok {
			t.Fatalf("%s: parsed as %T", c.src, ss[0])
		}
		if got := needsSplit(a); got != c.rewrite {
			t.Errorf("%s: rewritten %v, want %v", c.src, got, c.rewrite)
		}
		out := splitMultiAssigns(ss)
		if out[0] != ss[0] && !c.rewrite {
			t.Errorf("%s: rewritten, want it left as it is", c.src)
		}
	}
}
