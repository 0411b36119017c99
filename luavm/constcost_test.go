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
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (40001 distinct constants, used 120001 times; 0 operator visits folding)"},
		{"nested function", "local t = {}\nlocal function f()\n" + numbered(1, 40000) + "end\nreturn 1",
			"user_script:2: too many constants or operators for tumbler to compile in the function at line 2 (40001 distinct constants, used 120000 times; 0 operator visits folding)"},
		// few distinct constants, the last of them used over and over
		{"repeated use", "local t = {}\n" + numbered(1, 3000) + strings.Repeat("t[3000] = 2\n", 100000) + "return #t",
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (3001 distinct constants, used 309001 times; 0 operator visits folding)"},
		// 0/0 folds to NaN, which never equals a constant found before
		{"NaN", "local t = {}\n" + strings.Repeat("t[1] = 0/0\n", 20000) + "return 1",
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (20002 distinct constants, used 60001 times; 20000 operator visits folding)"},
		// each + folds the whole chain under it: n²/2 visits
		{"operator chain", "local x = 0\nreturn x" + strings.Repeat("+1", 20000),
			"user_script:1: too many constants or operators for tumbler to compile in the main chunk (3 distinct constants, used 20002 times; 200010000 operator visits folding)"},
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
	want := "$nil|[string \"local t = {}...\"]:1: too many constants or operators for tumbler to compile in the main chunk (40001 distinct constants, used 120000 times; 0 operator visits folding)"
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
}
