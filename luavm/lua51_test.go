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
