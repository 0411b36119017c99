package luavm

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// Lua 5.1 and Redis library behaviour that gopher-lua lacked. Every
// expected reply is redis-server 7.0.15's for the same script (the
// transcript compat/diff/testdata/lualib.txt diffs them against it).
func TestLua51_LibraryCompat(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		// C locale: ASCII letters only, other bytes untouched
		{"return string.upper('a\\255b\\195\\169')", "$A\xffB\xc3\xa9"},
		{"return string.lower('A\\255B\\195\\137')", "$a\xffb\xc3\x89"},
		{"return string.upper(12)", "$12"},
		// LuaBitOp rounds half to even, then keeps the low 32 bits
		{"return bit.band(1.5, 255)..','..bit.band(2.5,255)..','..bit.band(-1.5,255)..','..bit.tobit(2^32+0.5)..','..bit.bor(0.49999)", "$2,2,254,0,0"},
		// numbers in redis.setresp/log/set_repl: numeric strings count
		{"redis.setresp('3') return 1", ":1"},
		{"redis.setresp(3.5) return 1", ":1"},
		{"redis.log('3', 'x') return 1", ":1"},
		{"redis.set_repl('2') return 1", ":1"},
		{"return table.foreach({10,20,x=5}, function(k,v) if v==20 then return k*100 end end)", ":200"},
		{"return table.foreachi({7,8}, function(i,v) return nil end)", "(nil)"},
		{"return table.foreachi({7,8}, function(i,v) if v == 8 then return i end end)", ":2"},
		{"return type(gcinfo())", "$number"},
		// big numbers, \r and \n made spaces (a bulk string in RESP2: the
		// transcript checks the wire form)
		{"return {big_number='-1\\r\\n'}", "(-1  "},
	} {
		if got := f.do(2, "EVAL", tc.script, "1", "k"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	if got := f.do(3, "EVAL", "return {{big_number='123'}, {big_number=5}}", "0"); got != "*2 (123 *0" {
		t.Errorf("RESP3 big_number: %q", got)
	}
	for _, tc := range []struct{ script, want string }{
		{"return string.lower({})", "-ERR user_script:1: bad argument #1 to 'lower' (string expected, got table)"},
		{"return redis.setresp('x')", "-ERR RESP version must be 2 or 3."},
		{"return redis.log(99, 'x')", "-ERR Invalid debug level."},
		{"return redis.log()", "-ERR redis.log() requires two arguments or more."},
		{"return redis.log('x', 'y')", "-ERR First argument must be a number (log level)."},
		{"return redis.set_repl(99)", "-ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."},
		{"return redis.set_repl()", "-ERR redis.set_repl() requires two arguments."},
		{"return table.setn({}, 1)", "-ERR user_script:1: 'setn' is obsolete"},
		{"return table.foreach({1}, 5)", "-ERR user_script:1: bad argument #2 to 'foreach' (function expected, got number)"},
		{"return table.foreachi()", "-ERR user_script:1: bad argument #1 to 'foreachi' (table expected, got no value)"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
		}
	}
}

// A script's write over maxmemory is checked under the keyspace lock,
// where no garbage collection may run: EVAL collects first, outside it,
// when the sample is over the limit, so garbage alone does not refuse a
// script's write (only refused scripts running would never collect).
func TestMaxMemory_ScriptsCollectGarbageFirst(t *testing.T) {
	f := newFixture(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	f.e.SetMaxMemory(liveHeapNow() + 32<<20)
	for i := 0; i < 64; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil                         // 64 MiB of garbage, never collected by itself now
	time.Sleep(150 * time.Millisecond) // older than the used-memory sample
	f.expect("+OK", "EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k")
}

var sink [][]byte

// Read-only tables are proxies here, flagged tables in Redis: pairs, next
// and rawget must still see the library's entries, getmetatable find no
// metatable on a library, and table.insert must not write into a proxy,
// where the entry would outlive the script. Replies are redis-server
// 7.0.15's (transcript lualib.txt).
func TestLua51_ReadOnlyTablesSeenThrough(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"local n = 0 for k in pairs(string) do n = n + 1 end return n", ":15"},
		{"local n = 0 for k in pairs(redis) do n = n + 1 end return n", ":23"},
		{"local n = 0 for k in pairs(table) do n = n + 1 end return n", ":9"},
		{"local k, v = next(string) return type(v)", "$function"},
		{"return _GOPHER_LUA_VERSION", "-ERR user_script:1: Script attempted to access nonexistent global variable '_GOPHER_LUA_VERSION'"},
		{"return {rawget(_G, 'nosuch') == nil, rawget(_G, 'redis') ~= nil, type(rawget(string, 'format'))}", "*3 :1 :1 $function"},
		{"return {type(getmetatable(string)), tostring(getmetatable(cjson)), type(getmetatable(_G))}", "*3 $nil $nil $table"},
		// the proxy's own table is never handed out
		{"local f, t = pairs(string) return rawequal(t, string)", ":1"},
		{"local _, t = pairs(string) t.x = 1 return 1", "-ERR user_script:1: Attempt to modify a readonly table"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want && !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	for _, s := range []string{"table.insert(string, 'x')", "table.insert(redis, 1, 'x')", "table.insert(_G, 'x')"} {
		if got := f.do(2, "EVAL", s, "0"); !strings.HasPrefix(got, "-ERR Attempt to modify a readonly table script: ") {
			t.Errorf("%s: %q", s, got)
		}
	}
	if got := f.do(2, "EVAL", "return {string[1] == nil, redis[1] == nil, rawget(_G, 1) == nil}", "0"); got != "*3 :1 :1 :1" {
		t.Errorf("a refused insert left %q", got)
	}
}

// table.insert is Lua 5.1's: two or three arguments, a position past the
// end grows the table to it, one before the start shifts from it.
func TestLua51_TableInsert(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"local t={1,2} table.insert(t, 5, 'x') return {t[3], t[5]}", "*0"},
		{"local t={1,2} table.insert(t, 5, 'x') return {t[1], t[2], t[5]}", "*3 :1 :2 $x"},
		{"local t={1,2} table.insert(t, 0, 'x') return {t[0], t[1], t[2], t[3]}", "*1 $x"},
		{"local t={1,2} table.insert(t, 0, 'x') return {t[2], t[3]}", "*2 :1 :2"},
		{"local t={1,2} table.insert(t, '2', 'x') return t", "*3 :1 $x :2"},
		{"local t={1,2} table.insert(t, 2.7, 'x') return t", "*3 :1 $x :2"},
		{"local t={1,2,3} table.insert(t, 'x') return t", "*4 :1 :2 :3 $x"},
		{"local t={1,2} table.insert(t, 1, 'x', 'y') return t", "-ERR user_script:1: wrong number of arguments to 'insert'"},
		{"table.insert(5, 1)", "-ERR user_script:1: bad argument #1 to 'insert' (table expected, got number)"},
		{"table.insert({}, 'a', 1)", "-ERR user_script:1: bad argument #2 to 'insert' (number expected, got string)"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want && !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}

// math.random is Redis's lrand48-based one: a fresh server's sequence,
// carried from script to script, and a seed's sequence are Redis's
// (redis-server 7.0.15's replies; lualib.txt diffs the seeded ones).
func TestLua51_MathRandomIsRedis(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return {math.random(100), math.random(100), string.format('%.14g', math.random())}", "*3 :40 :85 $0.35333609737146"},
		{"return math.random(1000)", ":447"}, // the sequence goes on
		{"math.randomseed(42) return {math.random(1000), math.random(1000), string.format('%.14g', math.random())}", "*3 :745 :343 $0.11108528222474"},
		{"return {math.random(-2^31, 2^31-1)}", "*1 :-2147483648"},
		{"math.randomseed(2^40+3) return math.random(100)", ":79"},
		{"return math.random(0)", "-ERR user_script:1: bad argument #1 to 'random' (interval is empty)"},
		{"return math.random(3, 2)", "-ERR user_script:1: bad argument #2 to 'random' (interval is empty)"},
		{"return math.random(1, 2, 3)", "-ERR user_script:1: wrong number of arguments"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want && !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}

// tostring and table.concat write numbers with %.14g, and table.concat's
// range is Lua 5.1's (redis-server 7.0.15's replies; lualib.txt diffs
// them).
func TestLua51_NumbersAsText(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return {tostring(0.1+0.2), tostring(1/3), tostring(2^53), tostring(-0), tostring(1/0)}", "*5 $0.3 $0.33333333333333 $9.007199254741e+15 $-0 $inf"},
		{"return tostring(setmetatable({}, {__tostring=function() return 'T' end}))", "$T"},
		{"return table.concat({1, 2.5, 1/3, 'a', 2^53}, ',')", "$1,2.5,0.33333333333333,a,9.007199254741e+15"},
		{"return table.concat({1,2,3}, 5)", "$15253"},
		{"return table.concat({1,2,3}, '-', 3, 1)", "$"},
		{"return table.concat({1,2,3}, '-', 2, 5)", "-ERR user_script:1: invalid value (nil) at index 4 in table for 'concat'"},
		{"return table.concat({1,2,3}, '-', 0)", "-ERR user_script:1: invalid value (nil) at index 0 in table for 'concat'"},
		{"return table.concat({1,{},3})", "-ERR user_script:1: invalid value (table) at index 2 in table for 'concat'"},
		{"return tostring()", "-ERR user_script:1: bad argument #1 to 'tostring' (value expected)"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want && !strings.HasPrefix(got, tc.want+" script: ") {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
	// a result past the size limit is refused before it is built whole,
	// by the library's own checks (the watchdog, which would stop a script
	// holding more than the limit for a moment, is off)
	f.vm.SetMemoryLimit(1 << 20)
	withoutWatchdog(f.vm)
	if got := f.do(2, "EVAL", "local t = {} for i = 1, 1000 do t[i] = i end return #table.concat(t, string.rep('x', 4000))", "0"); !strings.HasPrefix(got, "-ERR user_script:1: not enough memory") {
		t.Errorf("concat past the limit: %q", got)
	}
	// string.format too: long %s and %q items refused before they are
	// appended; any other growth once the result passes the limit
	for _, script := range []string{
		"local s = string.rep('x', 300000) return #string.format('%s%s%s%s', s, s, s, s)",
		"local s = string.rep('\\0', 300000) return #string.format('%q', s)", // \000: four bytes each
		"local t = {} for i = 1, 100 do t[i] = i end return #string.format(string.rep('y', 1040000) .. string.rep('%99d', 100), unpack(t))",
	} {
		if got := f.do(2, "EVAL", script, "0"); !strings.HasPrefix(got, "-ERR user_script:1: not enough memory") {
			t.Errorf("%s: %q", script, got)
		}
	}
	for script, want := range map[string]string{ // under the limit
		"local s = string.rep('x', 200000) return #string.format('%s%s', s, s)": ":400000",
		"local s = string.rep('\\0', 200000) return #string.format('%q', s)":    ":800002",
	} {
		if got := f.do(2, "EVAL", script, "0"); got != want {
			t.Errorf("%s: %q, want %q", script, got, want)
		}
	}
}

// A RESP3 map or set returned as a Lua table is written in lua_next's
// order, as Redis walks the table (redis-server 7.0.15's replies;
// lualib.txt diffs more).
func TestLua51_Resp3MapSetOrder(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"return {set={a=true,b=true,c=true,d=true,e=true}}", "~5 $a $c $b $e $d"},
		{"return {map={a=1,b=2,c=3,z=4,y=5}}", "%5 $a :1 $c :3 $b :2 $y :5 $z :4"},
	} {
		if got := f.do(3, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}

// table.insert and table.concat read keys outside gopher-lua's array part
// (0, negatives, past 2^26) too (redis-server 7.0.15's replies).
func TestLua51_TableFunctionsReadEveryKey(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ script, want string }{
		{"local t={[0]='a','b'} table.insert(t,0,'z') return {tostring(t[0]),tostring(t[1]),tostring(t[2])}", "*3 $z $a $b"},
		{"local t={[0]='a',[-1]='q'} return table.concat(t,',',-1,0)", "$q,a"},
		{"local t={} t[2^27]='a' t[2^27+1]='b' return table.concat(t,',',2^27,2^27+1)", "$a,b"},
	} {
		if got := f.do(2, "EVAL", tc.script, "0"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}
