package luaparse

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// FuzzParse: no input makes the parser (or gopher-lua's compiler, on
// what the parser accepts) panic or hang; an error is always Lua's
// "chunk:line: message".
func FuzzParse(f *testing.F) {
	for _, s := range scripts {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		"return (((((1)))))", "local function f(...) return arg end", "x = [==[\n]==]",
		"return 1\x00 .. 2", "f\n(1)", "goto = 1", "return 0x1p4, 1e500, .5", "a.b:c'd'{e}(f)",
		"--[[\r\n]] return \"\\300\"", "for i = 1, 2 do break end", "repeat local x until x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		stmts, err := Parse(src, "user_script")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "user_script:") {
				t.Fatalf("error without its position: %q", err)
			}
			return
		}
		if _, err := lua.Compile(stmts, "user_script"); err != nil {
			if _, ok := err.(*lua.CompileError); !ok {
				t.Fatalf("compile: %T %v", err, err)
			}
		}
	})
}
