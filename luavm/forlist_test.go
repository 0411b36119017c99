package luavm

import "testing"

// TestGenericFor_ExplistAdjustedToThree: a generic for's explist gives
// three values, the missing ones nil, however many variables the loop
// has, as in Lua 5.1 (padForExplists). gopher-lua alone left the control
// value with what evaluating the explist had put in its register ("for
// k, v in next, r.s" failed with "invalid key to 'next'") and lost the
// state of "for k in f, g()". Wanted replies are redis-server 7.0.15's.
func TestGenericFor_ExplistAdjustedToThree(t *testing.T) {
	f := newFixture(t)
	const rec = "local got = 'unset' local function it(s, c) got = tostring(s) .. ' ' .. tostring(c) end "
	for _, c := range []struct{ script, want string }{
		{"local r = {s = {'q'}} local o = {} for k, v in next, r.s do o[#o+1] = k end return o", "*1 :1"},
		{"local t = {x = {a = 1}} local n = 0 for k in next, t.x do n = n + 1 end return n", ":1"},
		{rec + "local r = {s = 1} for k in it, r.s do end return got", "$1 nil"},
		{rec + "local r = {s = 1} for k, v in it, r['s'] do end return got", "$1 nil"},
		{rec + "local x = 3 for k in it, x + 1 do end return got", "$4 nil"},
		{rec + "local x = 'a' for k in it, x .. 'b' do end return got", "$ab nil"},
		{rec + "for k in it, {1} do end return type(got)", "$string"},
		{rec + "local t = {s = 5} for k in it, (t.s) do end return got", "$5 nil"},
		{rec + "local x = {} for k in it, x[1] do end return got", "$nil nil"},
		{rec + "local function g() return 5 end for k in it, g() do end return got", "$5 nil"},
		{rec + "local function g() return 5, 6, 7 end for k in it, g() do end return got", "$5 6"},
		{rec + "local function g() end for k in it, g() do end return got", "$nil nil"},
		{rec + "local function g() return 5 end for k, v in it, g() do end return got", "$5 nil"},
		{rec + "for k in it, 1, 2, 3 do end return got", "$1 2"},
		{rec + "local function h(...) for k in it, ... do end end h(8) return got", "$8 nil"},
		{rec + "local function h(...) for k in it, 4, ... do end end h() return got", "$4 nil"},
		{"local o = {} local t = {x = {a = 1}} for k, v, z in next, t.x do o[#o+1] = k o[#o+1] = tostring(z) end return o", "*2 $a $nil"},
		{"local o = {} for i, v in ipairs({10, 20}) do o[#o+1] = v end return o", "*2 :10 :20"},
		{"redis.setresp(3) local r = redis.call('hgetall', 'nokey') local n = 0 for k, v in next, r.map do n = n + 1 end return n", ":0"},
	} {
		if got := f.do(2, "EVAL", c.script, "0"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.script, got, c.want)
		}
	}
}
