package luavm

import "testing"

// pairs, next and table.foreach visit a table's keys in Lua 5.1's order
// (pairs51.go): the array part, then the hash nodes, as placed by the
// keys set, and by those deleted before a rehash (redis-server 7.0.15's
// replies; compat/diff's TestLuaPairsOrderDiff compares many more).
func TestPairs_Lua51Order(t *testing.T) {
	const keys = ` local r = {} for k in pairs(t) do r[#r+1] = tostring(k) end return r`
	expectEvals(t, []evalCase{
		{"local t = {} t.a = 1 t.b = 2 t.c = 3" + keys, "*3 $a $c $b"},
		{"local t = {} for i = 1, 12 do t['k'..i] = i end" + keys, "*12 $k12 $k9 $k8 $k1 $k3 $k2 $k10 $k11 $k6 $k7 $k4 $k5"},
		// deleted during a traversal, then new keys: the rehash drops the dead
		{"local t = {} for i = 1, 12 do t['k'..i] = i end for k in pairs(t) do if #k == 2 then t[k] = nil end end" + keys, "*3 $k12 $k10 $k11"},
		{"local t = {} for i = 1, 12 do t['k'..i] = i end for k in pairs(t) do if #k == 2 then t[k] = nil end end for i = 20, 26 do t['k'..i] = i end" + keys,
			"*10 $k12 $k20 $k10 $k24 $k21 $k23 $k11 $k26 $k25 $k22"},
		// deleted after the keys were set: their nodes stay
		{"local t = {} for i = 1, 8 do t['k'..i] = i end t.k3 = nil t.k5 = nil" + keys, "*6 $k4 $k6 $k8 $k1 $k7 $k2"},
		{"local t = {} for i = 1, 8 do t['k'..i] = i end t.k3 = nil t.k3 = 3" + keys, "*8 $k5 $k4 $k6 $k8 $k1 $k7 $k3 $k2"},
		{"local t = {} t[1] = 1 t[2] = 1 t[3] = 1 t.x = 1 t[10] = 1 t[-1] = 1 t[0.5] = 1 t[true] = 1 t[false] = 1 t[2^40] = 1" + keys,
			"*10 $1 $2 $3 $0.5 $x $10 $1099511627776 $false $-1 $true"},
		{"local t = {} for i = 1, 6 do t['k'..i] = i end local r = {} table.foreach(t, function(k) r[#r+1] = k end) return r", "*6 $k6 $k5 $k1 $k4 $k3 $k2"},
		{"local t = {} for i = 1, 6 do t['k'..i] = i end local r = {} local k = next(t) while k do r[#r+1] = k k = next(t, k) end return r", "*6 $k6 $k5 $k1 $k4 $k3 $k2"},
		// cjson.encode and cmsgpack.pack walk the same model: the
		// deleted keys' nodes count
		{"local t = {} for i = 1, 8 do t['k'..i] = i end t.k3 = nil t.k5 = nil return cjson.encode(t)", `${"k4":4,"k6":6,"k8":8,"k1":1,"k7":7,"k2":2}`},
		{"local t = {} for i = 1, 12 do t['k'..i] = i end for i = 1, 12, 2 do t['k'..i] = nil end return cjson.encode(t)", `${"k12":12,"k8":8,"k2":2,"k10":10,"k6":6,"k4":4}`},
		// a key deleted during the traversal is still a key to next
		{"local t = {a = 1, b = 2} t.b = nil return {next(t, 'b')}", "*0"},
		{"local t = {} t.a = 1 t.a = nil return {next(t, 'a')}", "*0"},
	})
}

// next keeps Lua's semantics whatever the model: every key once, a key
// the table never had an error, the same order twice, keys deleted as
// met, and many tables traversed at once.
func TestPairs_Semantics(t *testing.T) {
	expectEvals(t, []evalCase{
		{"local t = {a = 1} return next(t, 'b')", "-ERR invalid key to 'next' script: 78b12c14df7e3fc7b76adf9d071a6cfcbde42442, on @user_script:1."},
		{`local t = {} for i = 1, 300 do t['k'..i] = i t[i * 3] = i end
local a, b = {}, {}
for k in pairs(t) do a[#a+1] = tostring(k) end
for k in pairs(t) do b[#b+1] = tostring(k) end
return {#a, table.concat(a, ',') == table.concat(b, ',')}`, "*2 :600 :1"},
		{`local t = {} for i = 1, 1000 do t['k'..i] = i end
for k in pairs(t) do t[k] = nil end
return next(t) == nil`, ":1"},
		// 40 tables traversed nested
		{`local ts = {} for j = 1, 40 do local t = {} for i = 1, 50 do t['k'..i..'_'..j] = i end ts[j] = t end
local n = 0
local function walk(j) for k in pairs(ts[j]) do n = n + 1 if j < 40 and k == 'k1_' .. j then walk(j + 1) end end end
walk(1)
return n`, ":2000"},
		{`local t = {} for i = 1, 100000 do t['k'..i] = i end local n = 0 for k in pairs(t) do n = n + 1 end return n`, ":100000"},
		// an outer traversal deleting as it goes, while 20 inner ones come
		// and go: its model stays (made again, it would not know the key
		// deleted, a sparse integer, nor its place)
		{`local t = {} for i = 1, 40 do t[i * 100] = i end
local others = {} for j = 1, 20 do others[j] = {a = j} end
local n = 0
for k in pairs(t) do
  t[k] = nil
  for j = 1, 20 do for _ in pairs(others[j]) do end end
  n = n + 1
end
return n`, ":40"},
	})
}

// A table constructor's table is presized as Lua 5.1's parser sizes it
// (presize.go): its keys collide as there, its array part is its list's
// length, and a call's values last grow it (redis-server 7.0.15's
// replies).
func TestPairs_ConstructorSizes(t *testing.T) {
	const keys = ` local r = {} for k in pairs(t) do r[#r+1] = tostring(k) end return r`
	expectEvals(t, []evalCase{
		{"local t = {alpha = 1, beta = 2, gamma = 3, delta = 4, epsilon = 5}" + keys, "*5 $beta $epsilon $delta $alpha $gamma"},
		{"local t = {one = 1, two = 2, three = 3, four = 4, five = 5, six = 6, seven = 7, eight = 8, nine = 9, ten = 10, eleven = 11}" + keys,
			"*11 $four $seven $eight $nine $six $eleven $two $one $ten $five $three"},
		{"local t = {x = 1, y = 2, unpack({1, 2, 3, 4, 5})} t.z = 3" + keys, "*8 $1 $2 $3 $4 $5 $y $x $z"},
		{"return cjson.encode({alpha = 1, beta = 2, gamma = 3, delta = 4, epsilon = 5})", `${"beta":2,"epsilon":5,"delta":4,"alpha":1,"gamma":3}`},
		// {1, 2, 3} has an array part of 3: 4 is no key of it
		{"local t = {1, 2, 3} return next(t, 4)", "-ERR invalid key to 'next' script: 79f93a0a63224548402bba6dd601b5eb87bb0872, on @user_script:1."},
		{"local t = {} t[1] = 1 t[2] = 2 t[3] = 3 return {next(t, 4)}", "*0"},
		// a chunk's -0 stays -0 (the sizes are no 0 constant)
		{"local t = {[true] = 1} t[-0] = 2 return tostring(next(t))", "$-0"},
	})
}

// A RESP3 map or set reply made by a constructor is written in the order
// its presized table has in Redis (redis-server 7.0.15's replies).
func TestPairs_Resp3ConstructorOrder(t *testing.T) {
	f := newFixture(t)
	for script, want := range map[string]string{
		"return {map = {alpha = 1, beta = 2, gamma = 3, delta = 4, epsilon = 5}}":                "%5 $beta :2 $epsilon :5 $delta :4 $alpha :1 $gamma :3",
		"return {set = {alpha = true, beta = true, gamma = true, delta = true, epsilon = true}}": "~5 $beta $epsilon $delta $alpha $gamma",
	} {
		if got := f.do(3, "EVAL", script, "0"); got != want {
			t.Errorf("%s:\n got %q\nwant %q", script, got, want)
		}
	}
}

// presizeCall's sizes are Lua 5.1's luaO_int2fb rounding.
func TestPresize_Int2fb(t *testing.T) {
	for n, want := range map[int]int{0: 0, 7: 7, 8: 8, 15: 15, 16: 16, 17: 18, 100: 104, 1000: 1024} {
		if got := fb2int(int2fb(n)); got != want {
			t.Errorf("fb2int(int2fb(%d)) = %d, want %d", n, got, want)
		}
	}
}

type evalCase struct{ script, want string }

// expectEvals runs each case's script with EVAL and checks its reply.
func expectEvals(t *testing.T, cases []evalCase) {
	t.Helper()
	f := newFixture(t)
	for _, tc := range cases {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}
