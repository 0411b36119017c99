package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// busyStep is one command of TestFunctionBusyDiff: sent by the client
// running a script (run, not waited for), or by the other client, or the
// running client's reply read (read).
type busyStep struct {
	run, read bool
	args      []string
	tol       int64 // integers in the reply may differ by this much (FUNCTION STATS's duration_ms)
}

// TestFunctionBusyDiff: while a function or an EVAL's script is busy,
// other clients get Redis's BUSY replies (naming FUNCTION KILL or SCRIPT
// KILL), FUNCTION STATS shows the function, FUNCTION KILL and SCRIPT KILL
// each refuse the other's kind and stop their own, and a function that
// wrote is UNKILLABLE: replies compared byte for byte with redis-server's.
func TestFunctionBusyDiff(t *testing.T) {
	const lib = "#!lua name=busy\n" +
		"redis.register_function('spin', function(keys, args)\n  while true do end\nend)\n" +
		"redis.register_function('wspin', function(keys, args)\n  redis.call('set', keys[1], 'v')\n" +
		"  local stop = tonumber(redis.call('time')[1]) + 2\n  while tonumber(redis.call('time')[1]) < stop do end\n  return 'done'\nend)"
	steps := []busyStep{
		{args: []string{"CONFIG", "SET", "busy-reply-threshold", "100"}},
		{args: []string{"FUNCTION", "LOAD", "REPLACE", lib}},
		{run: true, args: []string{"FCALL", "spin", "1", "key", "arg"}},
		{args: []string{"PING"}},
		{args: []string{"FUNCTION", "STATS"}, tol: 2000},
		{args: []string{"SCRIPT", "KILL"}},
		{args: []string{"EVAL", "return 1", "0"}},
		{args: []string{"FCALL", "spin", "0"}},
		{args: []string{"FUNCTION", "KILL"}},
		{read: true},
		{args: []string{"PING"}},
		{run: true, args: []string{"EVAL", "while true do end", "0"}},
		{args: []string{"GET", "key"}},
		{args: []string{"FUNCTION", "STATS"}},
		{args: []string{"FUNCTION", "KILL"}},
		{args: []string{"SCRIPT", "KILL"}},
		{read: true},
		{run: true, args: []string{"FCALL", "wspin", "1", "key"}},
		{args: []string{"FUNCTION", "KILL"}},
		{args: []string{"SCRIPT", "KILL"}},
		{read: true},
		{args: []string{"GET", "key"}},
		{args: []string{"FUNCTION", "KILL"}},
		{args: []string{"FUNCTION", "STATS"}},
	}
	run := func(addr string) [][]byte {
		a, err := dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer a.close()
		b, err := dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer b.close()
		var replies [][]byte
		for _, st := range steps {
			var reply []byte
			switch {
			case st.run:
				if _, err := a.c.Write(Encode(st.args)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond) // past the 100 ms threshold
				continue
			case st.read:
				reply, err = ReadReply(a.r)
			default:
				reply, err = b.do(st.args...)
			}
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			replies = append(replies, reply)
		}
		return replies
	}
	want := run(startRedis(t))
	got := run(server.RunT(t).Addr())
	i := 0
	for _, st := range steps {
		if st.run {
			continue
		}
		what := "the running client's reply"
		if !st.read {
			what = strings.Join(st.args, " ")
		}
		if !Approx(want[i], got[i], st.tol) {
			t.Errorf("%s:\n redis:   %q\n tumbler: %q", what, want[i], got[i])
		}
		i++
	}
}
