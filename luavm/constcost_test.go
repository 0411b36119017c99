package luavm

import (
	"strconv"
	"strings"
	"testing"
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

// Scripts whose constants would take gopher-lua's compiler too long to
// search are refused before compiling (constcost.go); others compile as
// before, large generated ones included.
func TestConstCost_RefusesWhatWouldCompileForMinutes(t *testing.T) {
	f := newFixture(t)
	// 5,000 distinct constants: a fraction of a second, compiled
	f.expect(":5000", "EVAL", "local t = {}\n"+numbered(1, 5000)+"return #t", "0")

	for _, tc := range []struct{ name, body, want string }{
		{"main chunk", "local t = {}\n" + numbered(1, 40000) + "return #t",
			"user_script:1: too many constants for tumbler to compile in the main chunk (40001 distinct, used 120001 times)"},
		{"nested function", "local t = {}\nlocal function f()\n" + numbered(1, 40000) + "end\nreturn 1",
			"user_script:2: too many constants for tumbler to compile in the function at line 2 (40001 distinct, used 120000 times)"},
		// few distinct constants, the last of them used over and over
		{"repeated use", "local t = {}\n" + numbered(1, 3000) + strings.Repeat("t[3000] = 2\n", 100000) + "return #t",
			"user_script:1: too many constants for tumbler to compile in the main chunk (3001 distinct, used 309001 times)"},
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
	want := "$nil|[string \"local t = {}...\"]:1: too many constants for tumbler to compile in the main chunk (40001 distinct, used 120000 times)"
	if got := f.do(2, "EVAL", "local fn, err = loadstring(ARGV[1]) return tostring(fn) .. '|' .. err", "0", body); got != want {
		t.Errorf("loadstring:\n got %.300q\nwant %.300q", got, want)
	}
	// and FUNCTION LOAD
	if got := f.do(2, "FUNCTION", "LOAD", "#!lua name=big\n"+body); !strings.Contains(got, "too many constants for tumbler to compile") {
		t.Errorf("FUNCTION LOAD: %.200q", got)
	}
}
