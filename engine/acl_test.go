package engine

import (
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// setUser applies rules to a user and fails the test on an error.
func setUser(t *testing.T, e *testEngine, name string, rules ...string) *ACLUser {
	t.Helper()
	if msg, _ := e.ACL().SetUser(name, rules); msg != "" {
		t.Fatalf("SETUSER %s %q: %s", name, rules, msg)
	}
	return e.ACL().User(name)
}

// runAs runs a command as a client authenticated as u.
func runAs(e *testEngine, cl *Client, args ...string) string {
	w := &enginetest.TextWriter{}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	e.Exec(&Ctx{Args: bargs, W: w, Client: cl})
	return w.String()
}

func TestACLRules_Describe(t *testing.T) {
	e := newTestEngine(t)
	cases := []struct {
		rules []string
		want  string
	}{
		{nil, "off resetchannels -@all"},
		{[]string{"on", "nopass", "~*", "&*", "+@all"}, "on nopass ~* &* +@all"},
		{[]string{"on", ">p", ">p"}, "on #" + hashOf("p") + " resetchannels -@all"},
		{[]string{">p", "<p"}, "off resetchannels -@all"},
		{[]string{"%R~a", "%W~b", "~c", "%RW~d", "%R~e", "%W~e"}, "off %R~a %W~b ~c ~d ~e resetchannels -@all"},
		{[]string{"&x", "&y", "&x"}, "off resetchannels &x &y -@all"},
		{[]string{"+@all", "-@dangerous"}, "off resetchannels +@all -@dangerous"},
		{[]string{"allcommands", "-get"}, "off resetchannels +@all -get"},
		{[]string{"+@hash"}, "off resetchannels -@all +@hash"},
		{[]string{"+config|get"}, "off resetchannels -@all +config|get"},
		{[]string{"+select|0", "+select|1", "+SELECT|1"}, "off resetchannels -@all +select|0 +select|1"},
		{[]string{"+select|0", "+select"}, "off resetchannels -@all +select"},
		{[]string{"reset"}, "off sanitize-payload resetchannels -@all"},
		{[]string{"skip-sanitize-payload"}, "off skip-sanitize-payload resetchannels -@all"},
		{[]string{"~a", "+get", "(~b +set)", "(%R~c", "+@string)"}, "off ~a resetchannels -@all +get (~b resetchannels -@all +set) (%R~c resetchannels -@all +@string)"},
		{[]string{"(~b +set)", "clearselectors"}, "off resetchannels -@all"},
	}
	for i, c := range cases {
		name := "u" + string(rune('a'+i))
		u := setUser(t, e, name, c.rules...)
		if got := u.Snapshot().Rules; got != c.want {
			t.Errorf("%q: %q, want %q", c.rules, got, c.want)
		}
	}
}

func hashOf(p string) string {
	var u ACLUser
	var a ACL
	a.users = map[string]*ACLUser{}
	r := a.newRules()
	a.applyUserOp(r, ">"+p)
	u.rules.Store(r)
	return r.passwords[0]
}

func TestACLRules_Errors(t *testing.T) {
	e := newTestEngine(t)
	setUser(t, e, "keep", "on", "~k")
	cases := []struct {
		rules []string
		want  string
	}{
		{[]string{"bogus"}, "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]string{"+nosuch"}, "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		// names compare in ASCII case only, as Redis's strcasecmp: a Kelvin
		// sign (U+212A) is no K
		{[]string{"+\u212aeys"}, "ERR Error in ACL SETUSER modifier '+\u212aeys': Unknown command or category name in ACL"},
		{[]string{"+command|get\u212aeys"}, "ERR Error in ACL SETUSER modifier '+command|get\u212aeys': Unknown command or category name in ACL"},
		{[]string{"-@nosuch"}, "ERR Error in ACL SETUSER modifier '-@nosuch': Unknown command or category name in ACL"},
		{[]string{"+config|get|x"}, "ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"},
		{[]string{"+get|"}, "ERR Error in ACL SETUSER modifier '+get|': Syntax error"},
		{[]string{"-get|x"}, "ERR Error in ACL SETUSER modifier '-get|x': Unknown command or category name in ACL"},
		{[]string{"#abc"}, "ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{[]string{"<nope"}, "ERR Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist"},
		{[]string{"allkeys", "~x"}, "ERR Error in ACL SETUSER modifier '~x': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{[]string{"&*", "&x"}, "ERR Error in ACL SETUSER modifier '&x': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{[]string{"%X~a"}, "ERR Error in ACL SETUSER modifier '%X~a': Syntax error"},
		{[]string{"~a b"}, "ERR Error in ACL SETUSER modifier '~a b': Syntax error"},
		{[]string{"(~a", "+get"}, "ERR Unmatched parenthesis in acl selector starting at '(~a'."},
		{[]string{"(~a +nosuch)"}, "ERR Error in ACL SETUSER modifier '(~a +nosuch)': Unknown command or category name in ACL"},
		{[]string{"off", "+nosuch"}, "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
	}
	for _, c := range cases {
		if got, _ := e.ACL().SetUser("keep", c.rules); got != c.want {
			t.Errorf("%q: %q, want %q", c.rules, got, c.want)
		}
	}
	// nothing of a refused SETUSER took effect
	if got := e.ACL().User("keep").Snapshot().Rules; got != "on ~k resetchannels -@all" {
		t.Errorf("after refusals: %q", got)
	}
}

func TestACLCheck_CommandsKeysChannels(t *testing.T) {
	e := newTestEngine(t)
	u := setUser(t, e, "app", "on", "%R~r:*", "%W~w:*", "~b:*", "&ch.*", "+@all", "-flushall", "-config|set")
	cl := &Client{ACL: u}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"GET", "r:1"}, "(nil)"},
		{[]string{"GET", "w:1"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]string{"SET", "w:1", "v"}, "+OK"},
		{[]string{"SET", "w:1", "v", "GET"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]string{"SET", "b:1", "v", "GET"}, "(nil)"},
		{[]string{"SET", "r:1", "v"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]string{"EXISTS", "w:1"}, ":1"},      // no access flag: any pattern allows it
		{[]string{"COPY", "r:1", "w:2"}, ":0"}, // source read, destination written
		{[]string{"COPY", "w:1", "r:2"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]string{"FLUSHALL"}, "-NOPERM this user has no permissions to run the 'flushall' command"},
		{[]string{"CONFIG", "SET", "maxmemory", "0"}, "-NOPERM this user has no permissions to run the 'config|set' command"},
		{[]string{"PUBLISH", "ch.a", "m"}, ":0"},
		{[]string{"PUBLISH", "other", "m"}, "-NOPERM this user has no permissions to access one of the channels used as arguments"},
	}
	for _, c := range cases {
		if got := runAs(e, cl, c.args...); got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
}

func TestACLCheck_SelectorsAndFirstArgs(t *testing.T) {
	e := newTestEngine(t)
	u := setUser(t, e, "s", "on", "~a", "+get", "(~b +set)", "+select|0")
	cl := &Client{ACL: u}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"GET", "a"}, "(nil)"},
		{[]string{"SET", "b", "v"}, "+OK"},
		{[]string{"GET", "b"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"}, // root has GET, only the selector has b
		{[]string{"SET", "a", "v"}, "-NOPERM this user has no permissions to access one of the keys used as arguments"},
		{[]string{"DEL", "a"}, "-NOPERM this user has no permissions to run the 'del' command"},
		{[]string{"SELECT", "0"}, "+OK"},
		{[]string{"SELECT", "1"}, "-NOPERM this user has no permissions to run the 'select' command"},
	}
	for _, c := range cases {
		if got := runAs(e, cl, c.args...); got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	if n := len(e.ACL().Log(100)); n != 4 {
		t.Errorf("ACL log has %d entries, want 4 (one per refusal)", n)
	}
	le := e.ACL().Log(1)[0]
	if le.Reason != "command" || le.Object != "select" || le.Username != "s" || le.Context != "toplevel" || le.Count != 1 {
		t.Errorf("newest log entry %+v", le)
	}
	runAs(e, cl, "SELECT", "1")
	if le := e.ACL().Log(1)[0]; le.Count != 2 {
		t.Errorf("a repeated refusal is counted in its entry: %+v", le)
	}
}

// A full user costs no allocation on the dispatch path.
func TestACLCheck_FullUserNoAlloc(t *testing.T) {
	e := newTestEngine(t)
	cl := &Client{ACL: e.ACL().Default()}
	ctx := &Ctx{Args: [][]byte{[]byte("GET"), []byte("k")}, W: nopWriter{}, Client: cl}
	e.Exec(ctx)
	if n := testing.AllocsPerRun(100, func() { e.Exec(ctx) }); n != 0 {
		t.Errorf("GET as the default user allocates %v times", n)
	}
	if !e.ACL().Default().rules.Load().full {
		t.Error("the default user is not marked full")
	}
	setUser(t, e, "default", "-get")
	if e.ACL().Default().rules.Load().full {
		t.Error("a restricted default user is still marked full")
	}
	if got := runAs(e, cl, "GET", "k"); got != "-NOPERM this user has no permissions to run the 'get' command" {
		t.Errorf("restricted default: %q", got)
	}
}

func TestACLDescribe_CategoriesTable(t *testing.T) {
	e := newTestEngine(t)
	for _, c := range []struct{ cmd, want string }{
		{"get", "@read @string @fast"},
		{"set", "@write @string @slow"},
		{"eval", "@slow @scripting"},
		{"flushall", "@keyspace @write @slow @dangerous"},
	} {
		if got := strings.Join(e.lookupFull([]byte(c.cmd)).Categories(), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, got, c.want)
		}
	}
}

func TestACLMergeSelectorArgs(t *testing.T) {
	got, bad := MergeSelectorArgs([]string{"on", "(~a", "+get", "-set)", "(~b)", "x"})
	if bad != -1 || strings.Join(got, "|") != "on|(~a +get -set)|(~b)|x" {
		t.Errorf("%q %d", got, bad)
	}
	if got, bad := MergeSelectorArgs([]string{"on", "(~a", "+get"}); got != nil || bad != 1 {
		t.Errorf("unmatched: %q %d", got, bad)
	}
}
