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
		{"SINTERCARD", "2", "s1", "s2", "LIMIT", "1"},
		{"ZUNION", "2", "z1", "z2", "WITHSCORES"},
		{"ZINTER", "1", "z3"},
		{"ZDIFF", "2", "z4", "z5"},
		{"ZINTERCARD", "1", "z6"},
		{"ZUNION", "3", "bad", "numkeys"},
		{"ZUNIONSTORE", "dst", "1", "z7"},
		{"ZMPOP", "1", "z8", "MIN"},
	} {
		execAs(e, tr, 2, args...)
	}
	execAs(e, other, 2, "GET", "a")
	want := []string{"t a", "t b", "t c", "t d", "t e", "t f", "t g", "t h",
		"t s1", "t s2", "t z1", "t z2", "t z3", "t z4", "t z5", "t z6"}
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
		// numkeys: Redis's genericGetKeys, numkeys read by atoi
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 2 a b withscores", "a b"},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 2x a b", "a b"},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion +1 a b", "a"},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 4294967298 a b", "a b"}, // (int) cuts it to 2
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 3 a b", ""},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 0 a", ""},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion -1 a", ""},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion x a", ""},
		{&Command{Keys: numkeysKeys(0, 1)}, "zunion 99999999999999999999 a", ""},
		{&Command{Keys: numkeysKeys(1, 2)}, "zunionstore d 2 a b weights 1 2", "a b d"},
		{&Command{Keys: numkeysKeys(0, 2)}, "bzmpop 0 2 a b min", "a b"},
		{&Command{Keys: numkeysKeys(0, 2)}, "bzmpop 0", ""},
	} {
		var got []string
		tc.cmd.keyArgs(args(tc.args), func(k []byte) { got = append(got, string(k)) })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q with keys %d..%d/%d: %q, want %q", tc.args, tc.cmd.FirstKey, tc.cmd.LastKey, tc.cmd.Step, got, tc.want)
		}
	}
}

// Commands whose keys a numkeys argument counts show "movablekeys" (after
// the other flags, as Redis orders them) and the legacy key positions
// Redis shows: none, or ZUNIONSTORE's destination.
func TestCommand_InfoMovableKeys(t *testing.T) {
	e := newTestEngine(t)
	for _, tc := range []struct{ name, want string }{
		{"zunion", "*10 $zunion :-3 ~2 +readonly +movablekeys :0 :0 :0"},
		{"zinter", "*10 $zinter :-3 ~2 +readonly +movablekeys :0 :0 :0"},
		{"zdiff", "*10 $zdiff :-3 ~2 +readonly +movablekeys :0 :0 :0"},
		{"zintercard", "*10 $zintercard :-3 ~2 +readonly +movablekeys :0 :0 :0"},
		{"zunionstore", "*10 $zunionstore :-4 ~3 +write +denyoom +movablekeys :1 :1 :1"},
		{"zinterstore", "*10 $zinterstore :-4 ~3 +write +denyoom +movablekeys :1 :1 :1"},
		{"zdiffstore", "*10 $zdiffstore :-4 ~3 +write +denyoom +movablekeys :1 :1 :1"},
		{"zmpop", "*10 $zmpop :-4 ~2 +write +movablekeys :0 :0 :0"},
		{"bzmpop", "*10 $bzmpop :-5 ~3 +write +blocking +movablekeys :0 :0 :0"},
		{"sintercard", "*10 $sintercard :-3 ~2 +readonly +movablekeys :0 :0 :0"},
		{"lmpop", "*10 $lmpop :-4 ~2 +write +movablekeys :0 :0 :0"},
		{"blmpop", "*10 $blmpop :-5 ~3 +write +blocking +movablekeys :0 :0 :0"},
		{"zrangestore", "*10 $zrangestore :-5 ~2 +write +denyoom :1 :2 :1"},
		{"zrandmember", "*10 $zrandmember :-2 ~1 +readonly :1 :1 :1"},
		{"bzpopmin", "*10 $bzpopmin :-3 ~3 +write +blocking +fast :1 :-2 :1"},
		{"multi", "*10 $multi :1 ~5 +noscript +loading +stale +fast +allow_busy :0 :0 :0"},
	} {
		got := e.do("COMMAND", "INFO", tc.name)
		if !strings.HasPrefix(got, "*1 "+tc.want+" ") {
			t.Errorf("COMMAND INFO %s = %q, want it to start %q", tc.name, got, tc.want)
		}
	}
}
