package replay

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const header = "@client c\n@version v\n@source s\n"

func TestParse_Steps(t *testing.T) {
	f, err := Parse("x.replay", strings.NewReader(header+`
# a comment
[c1] SET k "a b" NX PX 30000
[c2] @send BLPOP q 0
@sleep 50ms
[c2] ~3 <recv>
@expect "$-1\r\n"
[c1] ?server,version HELLO 3
[c1] ~ PTTL k
[c1] % KEYS *
[c1] ? INFO
[c1] ? @capture cid CLIENT ID
[c2] CLIENT TRACKING ON REDIRECT ${cid}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Client != "c" || f.Version != "v" || !reflect.DeepEqual(f.Sources, []string{"s"}) {
		t.Fatalf("header: %+v", f)
	}
	want := []Step{
		{Line: 6, Kind: KindCommand, Conn: "c1", Args: []string{"SET", "k", "a b", "NX", "PX", "30000"}},
		{Line: 7, Kind: KindSend, Conn: "c2", Args: []string{"BLPOP", "q", "0"}},
		{Line: 8, Kind: KindSleep, Sleep: 50 * time.Millisecond},
		{Line: 9, Kind: KindRecv, Conn: "c2", Mode: ModeApprox, Tol: 3},
		{Line: 11, Kind: KindCommand, Conn: "c1", Args: []string{"HELLO", "3"}, Mode: ModeFields, Fields: []string{"server", "version"}, Expect: []byte("$-1\r\n")},
		{Line: 12, Kind: KindCommand, Conn: "c1", Args: []string{"PTTL", "k"}, Mode: ModeApprox, Tol: 1500},
		{Line: 13, Kind: KindCommand, Conn: "c1", Args: []string{"KEYS", "*"}, Mode: ModeUnordered},
		{Line: 14, Kind: KindCommand, Conn: "c1", Args: []string{"INFO"}, Mode: ModeTypeOnly},
		{Line: 15, Kind: KindCommand, Conn: "c1", Args: []string{"CLIENT", "ID"}, Mode: ModeTypeOnly, Capture: "cid"},
		{Line: 16, Kind: KindCommand, Conn: "c2", Args: []string{"CLIENT", "TRACKING", "ON", "REDIRECT", "${cid}"}},
	}
	if len(f.Steps) != len(want) {
		t.Fatalf("got %d steps, want %d", len(f.Steps), len(want))
	}
	for i, st := range f.Steps {
		st.Text = ""
		if !reflect.DeepEqual(st, want[i]) {
			t.Errorf("step %d:\n got  %+v\n want %+v", i, st, want[i])
		}
	}
}

func TestParse_Errors(t *testing.T) {
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" // sha1("return 1")
	cases := []struct {
		name, body, want string
	}{
		{"no client", "@version v\n@source s\n[a] PING\n", "lacks @client"},
		{"no version", "@client c\n@source s\n[a] PING\n", "lacks @version"},
		{"no source", "@client c\n@version v\n[a] PING\n", "lacks @source"},
		{"no steps", header, "no steps"},
		{"header after a step", header + "[a] PING\n@source t\n", "belongs in the header"},
		{"unknown directive", header + "@wait 1s\n", "unknown directive"},
		{"step without connection", header + "PING\n", "starts with [conn]"},
		{"bad connection name", header + "[a b] PING\n", "starts with [conn]"},
		{"unknown connection directive", header + "[a] @close\n", "unknown connection directive"},
		{"sleep too long", header + "@sleep 10s\n", "bad @sleep"},
		{"expect at the end", header + "[a] PING\n@expect \"+OK\\r\\n\"\n", "@expect at the end"},
		{"expect not RESP", header + "@expect \"+OK\"\n[a] PING\n", "not a RESP frame"},
		{"expect with trailing bytes", header + "@expect \"+OK\\r\\n+OK\\r\\n\"\n[a] PING\n", "after the RESP frame"},
		{"expect on send", header + "@expect \"+OK\\r\\n\"\n[a] @send PING\n[a] <recv>\n", "cannot apply to @send"},
		{"expect before sleep", header + "@expect \"+OK\\r\\n\"\n@sleep 1ms\n[a] PING\n", "must be followed"},
		{"command while a reply is pending", header + "[a] @send BLPOP q 0\n[a] PING\n", "still has 1"},
		{"send never read", header + "[a] @send BLPOP q 0\n", "never read"},
		{"approx without tolerance", header + "[a] ~ EVAL x 0\n", "explicit tolerance"},
		{"approx recv without tolerance", header + "[a] ~ <recv>\n", "explicit tolerance"},
		{"bad tolerance", header + "[a] ~x PTTL k\n", "bad tolerance"},
		{"bad field list", header + "[a] ?a,,b HELLO 3\n", "bad field list"},
		{"marker alone", header + "[a] ?\n", "without a command"},
		{"unterminated quote", header + "[a] SET k \"v\n", "unterminated"},
		{"unknown EVALSHA", header + "[a] EVALSHA " + sha + " 0\n", "SHA1 of no script"},
		{"variable never captured", header + "[a] CLIENT TRACKING ON REDIRECT ${id}\n", "names no variable"},
		{"variable captured later", header + "[a] ECHO ${id}\n[a] @capture id CLIENT ID\n", "names no variable"},
		{"capture twice", header + "[a] @capture id CLIENT ID\n[b] @capture id CLIENT ID\n", "a second time"},
		{"bad capture name", header + "[a] @capture 1d CLIENT ID\n", "bad @capture name"},
		{"capture on recv", header + "[a] @send PING\n[a] @capture x <recv>\n", "needs a command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.replay", strings.NewReader(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	// the same EVALSHA is fine once its script is in the file
	ok := header + "[a] SCRIPT LOAD \"return 1\"\n[a] EVALSHA " + sha + " 0\n"
	if _, err := Parse("x.replay", strings.NewReader(ok)); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	hello3 := "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n"
	cases := []struct {
		name      string
		st        Step
		want, got string
		ok        bool
	}{
		{"exact same", Step{}, "+OK\r\n", "+OK\r\n", true},
		{"exact differs", Step{}, "+OK\r\n", "+Ok\r\n", false},
		{"approx within", Step{Mode: ModeApprox, Tol: 2}, ":10\r\n", ":12\r\n", true},
		{"approx beyond", Step{Mode: ModeApprox, Tol: 2}, ":10\r\n", ":13\r\n", false},
		{"approx nested", Step{Mode: ModeApprox, Tol: 2}, "*2\r\n:10\r\n:-1\r\n", "*2\r\n:9\r\n:-1\r\n", true},
		{"approx type", Step{Mode: ModeApprox, Tol: 2}, ":10\r\n", "$2\r\n10\r\n", false},
		{"unordered", Step{Mode: ModeUnordered}, "*2\r\n+a\r\n+b\r\n", "*2\r\n+b\r\n+a\r\n", true},
		{"type only", Step{Mode: ModeTypeOnly}, ":1\r\n", ":2\r\n", true},
		{"type only differs", Step{Mode: ModeTypeOnly}, ":1\r\n", "$1\r\n1\r\n", false},
		{"fields ignored", Step{Mode: ModeFields, Fields: []string{"server", "version"}}, hello3,
			"%3\r\n$6\r\nserver\r\n$7\r\ntumbler\r\n$7\r\nversion\r\n$5\r\n7.2.4\r\n$5\r\nproto\r\n:3\r\n", true},
		{"fields: another field differs", Step{Mode: ModeFields, Fields: []string{"server", "version"}}, hello3,
			"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n", false},
		{"fields: ignored value of another type", Step{Mode: ModeFields, Fields: []string{"version"}}, hello3,
			"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n:7\r\n$5\r\nproto\r\n:3\r\n", false},
		{"fields: keys in another order", Step{Mode: ModeFields, Fields: []string{"server"}}, hello3,
			"%3\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n", false},
		{"fields: RESP2 flat array", Step{Mode: ModeFields, Fields: []string{"id"}},
			"*4\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$1\r\nx\r\n", "*4\r\n$2\r\nid\r\n:6\r\n$4\r\nmode\r\n$1\r\nx\r\n", true},
		{"fields: an error instead of a map", Step{Mode: ModeFields, Fields: []string{"id"}}, hello3, "-ERR unknown command 'HELLO'\r\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Compare(c.st, []byte(c.want), []byte(c.got))
			if (err == nil) != c.ok {
				t.Fatalf("Compare(%q, %q) = %v, want ok=%v", c.want, c.got, err, c.ok)
			}
		})
	}
}
