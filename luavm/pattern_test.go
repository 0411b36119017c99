package luavm

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// Lua 5.1's pattern matching (pattern.go). Every expected reply is
// redis-server 7.0.15's for the same script; the transcript
// compat/diff/testdata/luapattern.txt diffs many more against it, and
// TestRandomDiffWide's "random patterns" family random ones.
func TestPattern_Lua51(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return string.gsub('key:123', '%f[%w]%w+', '<%0>')", "$<key>:<123>"},
		{"return {string.find('THE END', '%f[%a]%a+%f[%A]')}", "*2 :1 :3"},
		{"return {string.find('a', '%f[%z]')}", "*2 :2 :1"},
		// '^' is no anchor in gmatch: it matches itself
		{"local t = {} for w in string.gmatch('x y', '^x') do t[#t+1] = w end return t", "*0"},
		{"local t = {} for w in string.gmatch('^x y', '^x') do t[#t+1] = w end return t", "*1 $^x"},
		// find's start is clamped to the string's end, where '' is found
		{"return {string.find('abc', '', 10)}", "*2 :4 :3"},
		{"return {string.find('abc', '(c)', -10)}", "*3 :3 :3 $c"},
		{"return {string.find('abc', 'b', '2')}", "*2 :2 :2"},
		{"return {string.match('abc', '()b()')}", "*2 :2 :3"},
		{"return {string.gsub('abc', '()b', '%1')}", "*2 $a2c :1"},
		{"return {string.match('f(a(b)c)d', '%b()')}", "*1 $(a(b)c)"},
		{"return {string.match('aaa', '(a)%1')}", "*1 $a"},
		{"return {string.match('aaa', '()%1')}", "*0"},
		{"return {string.match('a]c', '[]]')}", "*1 $]"},
		{"return {string.match('a-b', '[a-]+')}", "*1 $a-"},
		{"return {string.match('\\1\\2x', '%c+')}", "*1 $\x01\x02"},
		{"return {string.match('!@#a', '%p+')}", "*1 $!@#"},
		{"return {string.match('abc$', 'c$$')}", "*1 $c$"},
		{"return {string.match('abc$d', 'c$d')}", "*1 $c$d"},
		// a pattern ends at a NUL, as a C string does; a plain find does not
		{"return {string.match('a\\0b', 'a\\0x')}", "*1 $a"},
		{"return {string.find('a\\0b\\0(', 'b\\0(')}", "*2 :3 :5"},
		// replacement strings: '%' then a non-digit is that character, a
		// final '%' the string's NUL
		{"return {string.gsub('abc', 'b', '%x')}", "*2 $axc :1"},
		{"return {string.gsub('abc', 'b', '%')}", "*2 $a\x00c :1"},
		{"return {string.gsub('abc', 'b', '%1')}", "*2 $abc :1"},
		{"return {string.gsub('abc', '.', {a=1, b=2.5})}", "*2 $12.5c :3"},
		{"return {string.gsub('x', 'x', 1e100)}", "*2 $1e+100 :1"},
		{"return {string.gsub('ab', '.', {a=false})}", "*2 $ab :2"},
		{"return {string.gsub('abc', 'b', setmetatable({}, {__index=function(t,k) return k..k end}))}", "*2 $abbc :1"},
		{"return {string.gsub('ab', '()', function(p) return p end)}", "*2 $1a2b3 :3"},
		{"return {string.gsub('abc', '.', 'x', 2)}", "*2 $xxc :2"},
		{"return {string.gsub('abc', '.', 'x', 2^32+1)}", "*2 $xbc :1"},
		{"return {string.gsub('abc', '^.', 'x')}", "*2 $xbc :1"},
		{"return {string.gsub('abc', 'x*', '-')}", "*2 $-a-b-c- :4"},
		{"return {string.gsub(123, 2, 9)}", "*2 $193 :1"},
		{"return type(string.gfind)", "$function"},
		{"return {pcall(string.find, 'a', '[a')}", "*2 (nil) $malformed pattern (missing ']')"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	for _, tc := range []struct{ script, want string }{
		{"return string.find('a', '%')", "-ERR user_script:1: malformed pattern (ends with '%')"},
		{"return string.find('abc', '[a')", "-ERR user_script:1: malformed pattern (missing ']')"},
		{"return string.match('abc', '%fa')", "-ERR user_script:1: missing '[' after '%f' in pattern"},
		{"return string.match('abc', '%b(')", "-ERR user_script:1: unbalanced pattern"},
		{"return string.match('abc', '(b')", "-ERR user_script:1: unfinished capture"},
		{"return string.gsub('abc', 'b)', 'x')", "-ERR user_script:1: invalid pattern capture"},
		{"return string.gsub('abc', 'b', '%2')", "-ERR user_script:1: invalid capture index"},
		{"return string.match('aaa', '(a%1)')", "-ERR user_script:1: invalid capture index"},
		{"return string.match('abc', string.rep('(', 33) .. 'a' .. string.rep(')', 33))", "-ERR user_script:1: too many captures"},
		{"return string.gsub('abc', 'b', true)", "-ERR user_script:1: bad argument #3 to 'gsub' (string/function/table expected)"},
		{"return string.gsub('abc', '.')", "-ERR user_script:1: bad argument #3 to 'gsub' (string/function/table expected)"},
		{"return string.gsub('abc', '.', 'x', 'z')", "-ERR user_script:1: bad argument #4 to 'gsub' (number expected, got string)"},
		{"return string.gsub('abc', '%w', {a='1', b=true})", "-ERR user_script:1: invalid replacement value (a boolean)"},
		{"return string.gsub('abc', '.', function() return {} end)", "-ERR user_script:1: invalid replacement value (a table)"},
		{"return string.find(nil, 'b')", "-ERR user_script:1: bad argument #1 to 'find' (string expected, got nil)"},
		{"return string.find('abc', 'b', 'x')", "-ERR user_script:1: bad argument #3 to 'find' (number expected, got string)"},
		{"return string.gmatch('abc')", "-ERR user_script:1: bad argument #2 to 'gmatch' (string expected, got no value)"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
		}
	}
}

// A backtracking pattern over a long string runs for minutes in one
// library call; SCRIPT KILL (and with it the busy timeout and the memory
// bound, which cancel the same way) stops it. Redis cannot.
func TestPattern_KillStopsLongMatch(t *testing.T) {
	for _, script := range []string{
		"return string.find(string.rep('a', 200000), '.-.-.-b')",
		"return string.gsub(string.rep('a', 200000), 'a*a*a*b', 'x')",
		"for w in string.gmatch(string.rep('(', 200000), '%b()') do end",
	} {
		e := engine.New(engine.Config{BusyThreshold: 10 * time.Millisecond})
		vm := Install(e)
		done := runBusy(t, e, script)
		vm.Kill()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
				t.Fatalf("%s: killed script replied %q", script, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: SCRIPT KILL did not stop the match", script)
		}
	}
}

// The matcher recurses once per pattern item; a pattern of a million
// items is refused rather than growing the stack without bound.
func TestPattern_DeepPatternRefused(t *testing.T) {
	f := newFixture(t)
	got := f.do(2, "EVAL", "return string.match(string.rep('a', 200000), string.rep('a?', 200000))", "0")
	if !strings.HasPrefix(got, "-ERR user_script:1: pattern too complex script: ") {
		t.Fatalf("got %q", got)
	}
	// shallower ones still match, as in Lua 5.1
	if got := f.do(2, "EVAL", "return #string.match(string.rep('a', 5000), string.rep('a?', 5000))", "0"); got != ":5000" {
		t.Fatalf("got %q", got)
	}
}

// gsub builds its result in one call: past the memory limit it stops
// with "not enough memory", as string.rep does.
func TestPattern_GsubBoundedBySizeLimit(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(1 << 20)
	withoutWatchdog(f.vm) // gsub's own check, not the watchdog's tick
	got := f.do(2, "EVAL", "return #string.gsub(string.rep('a', 100000), 'a', string.rep('b', 100))", "0")
	if !strings.HasPrefix(got, "-ERR user_script:1: not enough memory") {
		t.Fatalf("got %q", got)
	}
	if got := f.do(2, "EVAL", "return #string.gsub(string.rep('a', 1000), 'a', string.rep('b', 100))", "0"); got != ":100000" {
		t.Fatalf("got %q", got)
	}
}

// BenchmarkPattern runs typical scripts' pattern calls (a key's prefix, a
// whitespace squeeze, a split) over a short string.
func BenchmarkPattern(b *testing.B) {
	for _, bc := range []struct{ name, script, want string }{
		{"match", "return string.match(ARGV[1], '^(%a+):(%d+)')", "$lock"},
		{"gsub", "return (string.gsub(ARGV[1], '%s+', ' '))", "$lock:12345 owner a b c"},
		{"gmatch", "local n = 0 for w in string.gmatch(ARGV[1], '%S+') do n = n + 1 end return n", ":5"},
		{"findplain", "return string.find(ARGV[1], 'owner', 1, true)", ":12"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := engine.New(engine.Config{})
			Install(e)
			a := args("EVAL", bc.script, "0", "lock:12345 owner  a\tb   c")
			expect(b, e, bc.want, a)
			b.ReportAllocs()
			for b.Loop() {
				e.Exec(&engine.Ctx{Args: a, W: discard{}})
			}
		})
	}
}

// patternFuzzScript calls every pattern function on ARGV, catching their
// errors: a Go panic in the matcher would show as a "runtime error".
const patternFuzzScript = `
local s, p, r, i = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local out = {}
local function try(f, ...)
  local res = {pcall(f, ...)}
  for k = 2, #res do out[#out+1] = tostring(res[k]) end
end
try(string.find, s, p, i)
try(string.match, s, p, i)
try(string.gsub, s, p, r)
try(string.gsub, s, p, {a = 'A', b = false})
try(string.gsub, s, p, function(...) return select('#', ...) end, i)
try(function() local n = 0 for a, b in string.gmatch(s, p) do n = n + 1 if n > 100 then break end end return n end)
return out`

// FuzzPattern runs the matcher on arbitrary subjects, patterns and
// replacement strings: it must never panic, and every call must end
// (runaway backtracking is killed after fuzzRunLimit).
func FuzzPattern(f *testing.F) {
	for _, c := range [][3]string{
		{"hello world", "(%w+)", "%1 %1"}, {"key:123", "%f[%w]%w+", "<%0>"}, {"f(a(b)c)d", "%b()", "%0"},
		{"aaa", "(a)%1", "%2"}, {"abc", "[a-", "%"}, {"a\x00b", "a%zb", "x"}, {"x y", "^x", ""},
		{"abc", "()b()", "%1%2"}, {"abc", "((((a))))", "%4"}, {"a]c", "[]]", "%%"}, {"abc", "%", "%9"},
	} {
		f.Add(c[0], c[1], c[2], 1)
		f.Add(c[0], c[1], c[2], -2)
	}
	e := engine.New(engine.Config{})
	vm := Install(e)
	vm.SetMemoryLimit(16 << 20)
	f.Cleanup(vm.Close)
	f.Fuzz(func(t *testing.T, s, p, r string, init int) {
		if len(s) > 1024 || len(p) > 256 || len(r) > 256 {
			return
		}
		w := &enginetest.TextWriter{}
		timer := time.AfterFunc(fuzzRunLimit, vm.Kill)
		e.Exec(&engine.Ctx{Args: args("EVAL", patternFuzzScript, "0", s, p, r, strconv.Itoa(init)), W: w})
		timer.Stop()
		got := w.String()
		if strings.HasPrefix(got, "-") && !strings.Contains(got, "Script killed") {
			t.Fatalf("%q %q %q %d: %s", s, p, r, init, got)
		}
		if strings.Contains(got, "runtime error") || strings.Contains(got, "goroutine") {
			t.Fatalf("%q %q %q %d: a Go panic: %s", s, p, r, init, got)
		}
	})
}

// One replacement may repeat a long match many times: gsub refuses the
// result before building it past the limit, not after (it had built
// 100 GB in one replacement for a single EVAL).
func TestPattern_GsubRefusesBeforeBuilding(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(1 << 20)
	withoutWatchdog(f.vm) // gsub's own check, not the watchdog's tick
	script := "local s = string.rep('a', 1000) local r = string.rep('%0', 20000) return tostring(pcall(string.gsub, s, '.+', r))"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := f.do(2, "EVAL", script, "0")
	runtime.ReadMemStats(&after)
	if got != "$false" {
		t.Fatalf("got %q", got)
	}
	// the match repeated 20000 times is 20 MB; refused at the 1 MB limit
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("gsub allocated %d bytes before refusing", grew)
	}
}
