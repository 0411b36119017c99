package luavm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/tumblerdb/tumbler/luavm/internal/luaparse"
)

// longTableScript expands the placeholders of a test script: L<n> the
// list items 1, ..., n; L50c the items c('1'), ..., c('50'); L2000 the
// items 1 to 2000, with "x<i> = i" and "[tostring(i) .. 'k'] = i" after
// each 50th.
func longTableScript(s string) string {
	var big []string
	for i := 1; i <= 2000; i++ {
		if i%50 == 0 {
			big = append(big, fmt.Sprintf("%d, x%d = %d, [tostring(%d) .. 'k'] = %d", i, i, i, i, i))
		} else {
			big = append(big, fmt.Sprint(i))
		}
	}
	calls := make([]string, 50)
	for i := range calls {
		calls[i] = fmt.Sprintf("c('%d')", i+1)
	}
	list := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(s, ", ")
	}
	s = strings.ReplaceAll(s, "L2000", strings.Join(big, ", "))
	s = strings.ReplaceAll(s, "L50c", strings.Join(calls, ", "))
	for _, n := range []int{100, 60, 50, 49} {
		s = strings.ReplaceAll(s, fmt.Sprintf("L%d", n), list(n))
	}
	return s
}

// TestTableConstructor_Lua51Stores: constructors of 50 list items or
// more store their fields as Lua 5.1 does (longtable.go): a call's values
// after exactly 50 or 100 items, a record field after the 50th item
// storing last, registers a record's value used not stored, and, in any
// constructor, a record ending it whose value is a call adds no item. The
// fields are evaluated in order, a store's error comes where Lua 5.1's
// does, with its line, and the error naming a field's variable is as
// before. Wanted replies are redis-server 7.0.15's.
func TestTableConstructor_Lua51Stores(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"local t = {L50, unpack({'a', 'b', 'c'})} return #t .. ' ' .. t[1] .. ' ' .. t[50] .. ' ' .. t[51] .. t[53]", "$53 1 50 ac"},
		{"local function f(...) return {L100, ...} end local t = f('a', 'b') return #t .. ' ' .. t[1] .. t[101] .. t[102]", "$102 1ab"},
		{"local function f(...) return {L50, x = 1, ...} end local t = f('a', 'b') return #t .. ' ' .. t[1] .. t[51] .. t[52]", "$52 1ab"},
		{"local t = {L50, [28] = 'r'} return t[28]", "$r"},
		{"local t = {L50, x = 1, [28] = 'r', [50] = 's', 51} return t[28] .. t[50] .. #t", "$rs51"},
		{"local t = {L100, [28] = 'r', [77] = 's'} return t[28] .. t[77]", "$rs"},
		{"local t = {L49, [50] = 'r', 50, [50] = 's'} return t[50]", "$s"},
		{"local t = {L60, [55] = 'r'} return t[55]", ":55"},
		{"local function f() return 'v' end local t = {L50, x = f(), y = {'v', 'v'}} return t[1] .. t[2] .. t[3] .. t.x", "$123v"},
		{"local function f() return 'v' end local t = {1, x = f()} return tostring(t[2]) .. t.x", "$nilv"},
		{"local function f(...) return {1, 2, x = ...} end local t = f('v', 'w') return tostring(t[3]) .. t.x", "$nilv"},
		{"local s = '' local function c(x) s = s .. x return x end local t = {L50c, [c('k')] = c('v'), c('b'), c('m'), x = c('x')} return s",
			"$1234567891011121314151617181920212223242526272829303132333435363738394041424344454647484950kvbmx"},
		{"local n = 0 local function c() n = n + 1 return n end local z local ok, e = pcall(function() return {L50,\n x = c(),\n [z] =\n c(), c()} end) return e .. ' ' .. n",
			"$user_script:4: table index is nil 2"},
		{"local n = 0 local function c() n = n + 1 return n end local ok, e = pcall(function() return {L50, x = c(), [0/0] = c(),\n c()} end) return e .. ' ' .. n",
			"$user_script:1: table index is NaN 2"},
		{"local t = {L50, x = 1, [28] = 'r', y = 2, 51} local o = {} for k, v in pairs(t) do if type(k) == 'string' or k == 28 or k > 49 then o[#o+1] = k .. '=' .. v end end return table.concat(o, ' ')",
			"$28=r 50=50 51=51 y=2 x=1"},
		{"local t = {L2000, unpack({1, 2, 3})} local s = 0 for i = 1, #t do s = s + t[i] end return #t .. ' ' .. s .. ' ' .. t.x1000 .. t['1000k']", "$2003 2001006 10001000"},
		{"local t = {L50, x = {L50, y = 1, unpack({'a'})}, unpack({'b'})} return #t .. t[51] .. #t.x .. t.x[51] .. t.x.y", "$51b51a1"},
	} {
		if got := f.do(2, "EVAL", longTableScript(c.script), "0"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.script, got, c.want)
		}
	}
	for _, c := range []struct{ script, want string }{
		{"local t = {L50,\n [nil] = 1}", "-ERR user_script:2: table index is nil"},
		{"local a local t = {L50, x = 1,\n y = a.b}", "-ERR user_script:2: attempt to index local 'a' (a nil value)"},
	} {
		s := longTableScript(c.script)
		want := c.want + " script: " + SHA1Hex([]byte(s)) + ", on @user_script:2."
		if got := f.do(2, "EVAL", s, "0"); got != want {
			t.Errorf("%s: got %q, want %q", c.script, got, want)
		}
	}
}

// TestTableConstructor_OthersCompileAsBefore: constructors gopher-lua
// compiles right are left as they are (rewriteConstructors changes
// nothing of their code), and so is a chunk naming longTableMarker.
func TestTableConstructor_OthersCompileAsBefore(t *testing.T) {
	for _, s := range []string{
		"return {L50}",
		"return {L50, 51}",
		"return {L49, x = 1, 50}",
		"return {x = 1, L50, 51, y = 2}",
		"return {L60, x = 1, [55] = 2}",
		"return {L49, unpack({1})}",
		"return {L60, unpack({1})}",
		"return {L100, 101, x = f}",
		"return {L50, 51, x = f(), 52}",
		"local t = {x = f(), y = ...}",
		"return {L50, x = 1, '\x00tumbler:long-table\x00'}",
	} {
		s = longTableScript(s)
		before, err := luaparse.Parse([]byte(s), "t")
		if err != nil {
			t.Fatal(err)
		}
		after, _ := luaparse.Parse([]byte(s), "t")
		_, own := wrapCoercions(after) // (none to wrap: whether it has a marker)
		rewriteConstructors(after, own)
		p1, err1 := lua.Compile(before, "t")
		p2, err2 := lua.Compile(after, "t")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if p1.String() != p2.String() {
			t.Errorf("%.60s: compiles to other code:\n%s\nwas\n%s", s, p2, p1)
		}
	}
}

// TestRewrites_AScriptsOwnMarkerStaysAString: a chunk that has one of
// the rewrites' marker strings of its own gets none of the rewrites, so
// the constant is not made the marker's function by another rewrite's
// (setCoercions replaces every marker): a traversal's constructors, a
// concatenation, a numeric for and a long constructor beside each.
func TestRewrites_AScriptsOwnMarkerStaysAString(t *testing.T) {
	f := newFixture(t)
	for _, m := range []string{forNumberMarker, concatMarker, concatFirstMarker, concatNextMarker, concatLastMarker, presizeMarker, longTableMarker} {
		lit := strings.ReplaceAll(m, "\x00", "\\0")
		for _, body := range []string{
			"local t = {a = 1} for k in pairs(t) do end",
			"local x = 'a' .. tostring(1)",
			"local n = 1 for i = n, 2 do end",
			longTableScript("local t = {L50, [28] = 'r'}"),
		} {
			s := "local m = \"" + lit + "\" " + body + " return type(m) .. #m"
			if got, want := f.do(2, "EVAL", s, "0"), "$string"+strconv.Itoa(len(m)); got != want {
				t.Errorf("%q with %q: got %q, want %q", body, m, got, want)
			}
		}
	}
}
