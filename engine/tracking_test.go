package engine

import (
	"reflect"
	"strings"
	"testing"
)

type readLog struct{ reads []string }

func (l *readLog) hook(cl *Client, key []byte) {
	l.reads = append(l.reads, strings.TrimSpace(cl.Name+" "+string(key)))
}

// Read-only commands of a client with TrackKeys report their key
// arguments; writes, keyless reads and other clients report nothing.
func TestTracking_ReadOnlyCommandsReportKeys(t *testing.T) {
	e := newTestEngine(t)
	log := &readLog{}
	e.SetOnRead(log.hook)
	tr := &Client{Name: "t", TrackKeys: true}
	other := &Client{Name: "o"}
	for _, args := range [][]string{
		{"GET", "a"},
		{"MGET", "b", "c", "d"},
		{"EXISTS", "e", "f"},
		{"PTTL", "g"},
		{"STRLEN", "h"},
		{"SET", "w", "1"},
		{"MSET", "w1", "1", "w2", "2"},
		{"KEYS", "*"},
		{"DBSIZE"},
		{"EVAL_RO", "return 1", "1", "ro"},
	} {
		execAs(e, tr, 2, args...)
	}
	execAs(e, other, 2, "GET", "a")
	want := []string{"t a", "t b", "t c", "t d", "t e", "t f", "t g", "t h"}
	if !reflect.DeepEqual(log.reads, want) {
		t.Fatalf("reads %q, want %q", log.reads, want)
	}
}

// Inside a script the keys of each read command it calls count for the
// caller (Redis 7.2), declared or not.
func TestTracking_ScriptReadsCountForCaller(t *testing.T) {
	e := newTestEngine(t)
	log := &readLog{}
	e.SetOnRead(log.hook)
	cl := &Client{Name: "t", TrackKeys: true}
	callAs(e, cl, "get", "x")
	callAs(e, cl, "set", "y", "1")
	callAs(e, cl, "mget", "p", "q")
	if want := []string{"t x", "t p", "t q"}; !reflect.DeepEqual(log.reads, want) {
		t.Fatalf("reads %q, want %q", log.reads, want)
	}
}

// Key-modification hooks see which client's command runs; FLUSHALL runs
// the flush hooks first and marks the per-key reports as a flush.
func TestTracking_CurrentClientAndFlush(t *testing.T) {
	e := newTestEngine(t)
	var events []string
	e.AddOnModified(func(key string) {
		who := "-"
		if c := e.Current(); c != nil {
			who = c.Name
		}
		if e.Flushing() {
			who += "(flush)"
		}
		events = append(events, who+" "+key)
	})
	e.AddOnFlush(func() { events = append(events, "flush") })
	a := &Client{Name: "a"}
	execAs(e, a, 2, "SET", "k", "v")
	e.expect("+OK", "SET", "j", "v") // no client
	callAs(e, a, "del", "j")
	execAs(e, a, 2, "FLUSHALL")
	want := []string{"a k", "- j", "a j", "flush", "a(flush) k"}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events %q, want %q", events, want)
	}
	e.Lock()
	cur := e.Current()
	e.Unlock()
	if cur != nil {
		t.Fatalf("Current outside a command = %v, want nil", cur)
	}
}

func TestCommand_KeyArgs(t *testing.T) {
	args := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	for _, tc := range []struct {
		cmd  *Command
		args string
		want string
	}{
		{&Command{FirstKey: 1, LastKey: 1, Step: 1}, "get k", "k"},
		{&Command{FirstKey: 1, LastKey: -1, Step: 1}, "mget a b c", "a b c"},
		{&Command{FirstKey: 1, LastKey: -1, Step: 2}, "mset a 1 b 2", "a b"},
		{&Command{FirstKey: 1, LastKey: -2, Step: 1}, "blpop a b 0", "a b"},
		{&Command{FirstKey: 0}, "keys *", ""},
		{&Command{FirstKey: 2, LastKey: 2, Step: 1}, "x", ""},
	} {
		var got []string
		tc.cmd.keyArgs(args(tc.args), func(k []byte) { got = append(got, string(k)) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q with keys %d..%d/%d: %q, want %q", tc.args, tc.cmd.FirstKey, tc.cmd.LastKey, tc.cmd.Step, got, tc.want)
		}
	}
}
