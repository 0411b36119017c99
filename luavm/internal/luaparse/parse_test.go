package luaparse

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// gopherLuaDir is the module directory of gopher-lua, whose test suites
// (Lua 5.1's own, and gopher-lua's) are the corpus of these tests.
func gopherLuaDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/yuin/gopher-lua").Output()
	if err != nil {
		t.Fatalf("go list gopher-lua: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func corpus(t *testing.T) map[string][]byte {
	t.Helper()
	dir := gopherLuaDir(t)
	files := map[string][]byte{}
	for _, sub := range []string{"_lua5.1-tests", "_glua-tests"} {
		paths, err := filepath.Glob(filepath.Join(dir, sub, "*.lua"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no Lua files in %s/%s (%v)", dir, sub, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files[sub+"/"+filepath.Base(p)] = b
		}
	}
	for name, src := range scripts {
		files["script:"+name] = []byte(src)
	}
	return files
}

// scripts are lock scripts and other shapes worth comparing by hand.
var scripts = map[string]string{
	"release":  `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
	"extend":   "if redis.call(\"get\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"pexpire\", KEYS[1], ARGV[2])\nelse\n  return 0\nend",
	"redisson": "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);",
	"parens":   "local a, b = (f()), ((g())); local c = (...); local d = ((...)); local e = (1 + 2)\n* 3; return (a):m(), (b).x, (c)[1]",
	"methods":  "local t = {} function t.a.b:c(x, ...) return self, x, ... end function t.f(...) local n = select('#', ...) return n end",
	"loops":    "for i = 1, 10, 2 do local x = i end for k, v in pairs({}) do break end while true do break end repeat local y = 1 until y",
	"ifs":      "if a then b() elseif c then d() elseif e then f() else g() end if x then end",
	"tables":   "local t = {1, 2; 3, x = 4, ['y'] = 5, f(), ...}\nlocal u = {[1]=1,}",
	"numbers":  "return 1, 1.5, .5, 3., 1e10, 1E-3, 0x10, 0XfF, 9007199254740993, 1e308",
	"strings": `return "a\n\t\\\"", 'b\'', [[long
string]], [==[x]]y]==], "\65\066\0677"`,
	"ops":       "return -x^2, not a == b, a .. b .. c, 1 + 2 * 3 - 4 / 5 % 6, a and b or c, #t, - - x, a < b, a <= b, a > b, a >= b, a ~= b",
	"calls":     "f{1} f'x' f\"y\" f[[z]] a.b.c:d(1)(2){3}'s' return f(...), (f(...))",
	"multiline": "local x = f(\n1,\n2\n)\nlocal y = a\n+\nb\nreturn x\n..\ny",
}

// refused are the scripts of the corpus that gopher-lua's parser reads
// and Lua 5.1 does not, with Lua 5.1's error (redis-server 7.0 gives the
// same for the same line).
var refused = map[string]string{
	// "do;": an empty statement is Lua 5.2's (gopher-lua edited the test)
	"_lua5.1-tests/pm.lua": "_lua5.1-tests/pm.lua:89: unexpected symbol near ';'",
}

// TestSameTreeAsGopherLua: for every script both parsers read, gopher-lua's
// compiler makes the same function of both trees, code, constants and
// line numbers alike.
func TestSameTreeAsGopherLua(t *testing.T) {
	compared := 0
	for name, src := range corpus(t) {
		want, err := parse.Parse(strings.NewReader(string(src)), name)
		if err != nil {
			continue // a script gopher-lua refuses (Lua 5.1's test suite has some)
		}
		got, err := Parse(src, name)
		if msg, ok := refused[name]; ok {
			if err == nil || err.Error() != msg {
				t.Errorf("%s: got error %v, want %q", name, err, msg)
			}
			continue
		}
		if err != nil {
			if usesGoto(want) {
				continue // goto and labels are Lua 5.2's
			}
			t.Errorf("%s: gopher-lua parses it, luaparse says: %v", name, err)
			continue
		}
		wp, werr := lua.Compile(want, name)
		gp, gerr := lua.Compile(got, name)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: compile errors differ: gopher-lua's tree %v, ours %v", name, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		if !sameProto(wp, gp) {
			t.Errorf("%s: the compiled functions differ\n--- gopher-lua's tree:\n%s\n--- ours:\n%s", name, clip(wp.String()), clip(gp.String()))
			continue
		}
		compared++
	}
	if compared < 30 {
		t.Fatalf("only %d scripts compared", compared)
	}
	t.Logf("%d scripts compiled alike", compared)
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "..."
	}
	return s
}

// sameProto compares two compiled functions; NaN constants are equal.
func sameProto(a, b *lua.FunctionProto) bool {
	if len(a.Constants) != len(b.Constants) || len(a.FunctionPrototypes) != len(b.FunctionPrototypes) {
		return false
	}
	for i := range a.Constants {
		x, y := a.Constants[i], b.Constants[i]
		if xn, ok := x.(lua.LNumber); ok {
			if yn, ok := y.(lua.LNumber); ok && math.IsNaN(float64(xn)) && math.IsNaN(float64(yn)) {
				continue
			}
		}
		if x != y {
			return false
		}
	}
	for i := range a.FunctionPrototypes {
		if !sameProto(a.FunctionPrototypes[i], b.FunctionPrototypes[i]) {
			return false
		}
	}
	ac, bc := *a, *b
	ac.Constants, bc.Constants = nil, nil
	ac.FunctionPrototypes, bc.FunctionPrototypes = nil, nil
	return reflect.DeepEqual(ac, bc)
}

func usesGoto(stmts []ast.Stmt) bool {
	found := false
	var walk func([]ast.Stmt)
	walk = func(ss []ast.Stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *ast.GotoStmt, *ast.LabelStmt:
				found = true
			case *ast.DoBlockStmt:
				walk(s.Stmts)
			case *ast.WhileStmt:
				walk(s.Stmts)
			case *ast.RepeatStmt:
				walk(s.Stmts)
			case *ast.IfStmt:
				walk(s.Then)
				walk(s.Else)
			case *ast.NumberForStmt:
				walk(s.Stmts)
			case *ast.GenericForStmt:
				walk(s.Stmts)
			case *ast.FuncDefStmt:
				walk(s.Func.Stmts)
			}
		}
	}
	walk(stmts)
	return found
}

// TestParseReader: a chunk read in pieces parses as the whole, and the
// parser stops asking for more at its first error, as lua_load does (a
// reader that never ends would otherwise never end).
func TestParseReader(t *testing.T) {
	pieces := []string{"local x ", "= 1 ", "return ", "x + 1", ""}
	calls := 0
	stmts, err := ParseReader(func() []byte {
		calls++
		return []byte(pieces[calls-1])
	}, "c")
	if err != nil || len(stmts) != 2 || calls != 5 {
		t.Fatalf("ParseReader: %d statements, %d calls, %v", len(stmts), calls, err)
	}
	calls = 0
	_, err = ParseReader(func() []byte { calls++; return []byte("x =") }, "(load)")
	if err == nil || err.Error() != "(load):1: unexpected symbol near '='" || calls > 3 {
		t.Fatalf("endless reader: %v after %d calls", err, calls)
	}
}
