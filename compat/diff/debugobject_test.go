package diff

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDebugObjectDiff compares DEBUG OBJECT's line for a value of each
// type and encoding (a list's quicklist fields included) and OBJECT
// IDLETIME, with redis-server's: the same words, refcount, encoding and
// serialized length; the LRU clock and idle seconds within a second or
// two (both servers count seconds of their own clock); the address
// aside. RESTORE IDLETIME sets the idle time on both.
func TestDebugObjectDiff(t *testing.T) {
	rc, tc := dialBoth(t, "--enable-debug-command", "yes")
	both := func(args ...string) (redis, tumbler string) {
		t.Helper()
		return string(do(t, rc, args...)), string(do(t, tc, args...))
	}
	long := strings.Repeat("abc", 40)
	for _, cmd := range [][]string{
		{"SET", "s", "hello"}, {"SET", "n", "12345"}, {"SET", "sh", "7"}, {"SET", "long", long},
		{"SET", "r", strings.Repeat("x", 100)}, {"APPEND", "ap", "x"},
		{"RPUSH", "l", "a", "b", "c", "dd", "1", "2", "300000"},
		{"HSET", "h", "f", "v", "g", "w"}, {"HSET", "hbig", "f", long},
		{"SADD", "is", "1", "2", "3"}, {"SADD", "st", "1", "x"},
		{"ZADD", "z", "1", "a", "2", "b"}, {"ZADD", "zbig", "1", long},
	} {
		if r, g := both(cmd...); r != g {
			t.Fatalf("%q: redis %q, tumbler %q", cmd, r, g)
		}
	}
	addr := regexp.MustCompile(`^\+Value at:0x[0-9a-f]+ `)
	num := regexp.MustCompile(` (lru|lru_seconds_idle):([0-9]+)`)
	fields := func(s string) (string, map[string]int64) {
		m := map[string]int64{}
		for _, f := range num.FindAllStringSubmatch(s, -1) {
			m[f[1]], _ = strconv.ParseInt(f[2], 10, 64)
		}
		return num.ReplaceAllString(addr.ReplaceAllString(s, "+Value "), " $1:N"), m
	}
	check := func(k string) {
		t.Helper()
		r, g := both("DEBUG", "OBJECT", k)
		rs, rn := fields(r)
		gs, gn := fields(g)
		if rs != gs {
			t.Errorf("DEBUG OBJECT %s\n redis:   %q\n tumbler: %q", k, r, g)
			return
		}
		for f, v := range rn {
			if d := v - gn[f]; d < -2 || d > 2 {
				t.Errorf("DEBUG OBJECT %s: %s %d, redis %d", k, f, gn[f], v)
			}
		}
	}
	for _, k := range []string{"s", "n", "sh", "long", "r", "ap", "l", "h", "hbig", "is", "st", "z", "zbig", "missing"} {
		check(k)
	}
	// a list's quicklist fields follow list-max-listpack-size and
	// list-compress-depth (Redis keeps those a list was made under; a
	// list made after the change is the same on both)
	both("CONFIG", "SET", "list-max-listpack-size", "4")
	both("RPUSH", "l4", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	check("l4")
	both("CONFIG", "SET", "list-compress-depth", "1")
	both("RPUSH", "lc", long, long, long)
	check("lc")
	dump, _ := both("DUMP", "s")
	payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
	for _, idle := range []string{"0", "1000", "86400"} {
		if r, g := both("RESTORE", "ri"+idle, "0", payload, "IDLETIME", idle); r != g || r != "+OK\r\n" {
			t.Fatalf("RESTORE IDLETIME %s: redis %q, tumbler %q", idle, r, g)
		}
		r, g := both("OBJECT", "IDLETIME", "ri"+idle)
		rv, _ := strconv.ParseInt(strings.Trim(r, ":\r\n"), 10, 64)
		gv, _ := strconv.ParseInt(strings.Trim(g, ":\r\n"), 10, 64)
		if r[0] != ':' || g[0] != ':' || rv-gv < -2 || rv-gv > 2 {
			t.Errorf("OBJECT IDLETIME after RESTORE IDLETIME %s: redis %q, tumbler %q", idle, r, g)
		}
	}
	for _, cmd := range [][]string{
		{"OBJECT", "IDLETIME", "missing"}, {"OBJECT", "IDLETIME"}, {"OBJECT", "IDLETIME", "s", "x"},
		{"RESTORE", "ri0", "0", payload, "IDLETIME", "-1", "REPLACE"}, {"OBJECT", "HELP"},
		{"DEBUG", "OBJECT"}, {"DEBUG", "OBJECT", "a", "b"},
	} {
		if r, g := both(cmd...); r != g {
			t.Errorf("%q\n redis:   %q\n tumbler: %q", cmd, r, g)
		}
	}
}
