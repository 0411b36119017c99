package diff

import (
	"bufio"
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	got := string(Encode([]string{"SET", "k", ""}))
	want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if got != want {
		t.Fatalf("Encode = %q, want %q", got, want)
	}
}

func TestReadReply_OneReplyAtATime(t *testing.T) {
	replies := []string{
		"+OK\r\n",
		"-ERR bad\r\n",
		":-42\r\n",
		"$-1\r\n",
		"$0\r\n\r\n",
		"$4\r\na\r\nb\r\n", // CRLF inside a bulk
		"*-1\r\n",
		"*0\r\n",
		"*2\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n",
		"_\r\n",
		"#t\r\n",
		",3.5\r\n",
		"(12345678901234567890\r\n",
		"=8\r\ntxt:abcd\r\n",
		"!3\r\nERR\r\n",
		"%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n%1\r\n:1\r\n~1\r\n_\r\n",
		"~2\r\n+a\r\n+b\r\n",
		">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n",
		"|1\r\n+key\r\n+val\r\n:7\r\n", // an attribute travels with its reply
		"+" + strings.Repeat("x", 10000) + "\r\n",
	}
	r := bufio.NewReaderSize(strings.NewReader(strings.Join(replies, "")), 16)
	for _, want := range replies {
		got, err := ReadReply(r)
		if err != nil {
			t.Fatalf("ReadReply(%q): %v", want, err)
		}
		if string(got) != want {
			t.Fatalf("ReadReply = %q, want %q", got, want)
		}
	}
	if _, err := ReadReply(r); err != io.EOF {
		t.Fatalf("at end: err = %v, want io.EOF", err)
	}
}

func TestReadReply_Malformed(t *testing.T) {
	for _, in := range []string{
		"?what\r\n",
		"+no crlf\n",
		"$5\r\nab\r\n",
		"$x\r\n",
		"*2\r\n:1\r\n",
		"$3\r\nabcXY",
	} {
		if got, err := ReadReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("ReadReply(%q) = %q, want an error", in, got)
		}
	}
}

func TestCompare(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	cases := []struct {
		mode   Mode
		tol    int64
		a, b   string
		agrees bool
	}{
		{ModeExact, 0, "+OK\r\n", "+OK\r\n", true},
		{ModeExact, 0, "$-1\r\n", "*-1\r\n", false},
		{ModeExact, 0, ":1\r\n", ":2\r\n", false},
		{ModeApprox, 2, ":100\r\n", ":98\r\n", true},
		{ModeApprox, 2, ":100\r\n", ":97\r\n", false},
		{ModeApprox, 2, ":100\r\n", "$3\r\n100\r\n", false},
		{ModeApprox, 2, ":-2\r\n", "-ERR x\r\n", false},
		{ModeApprox, 5, "*2\r\n:10\r\n$2\r\n20\r\n", "*2\r\n:12\r\n$2\r\n19\r\n", true},
		{ModeApprox, 5, "*2\r\n:10\r\n+a\r\n", "*2\r\n:10\r\n+b\r\n", false},
		{ModeUnordered, 0, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{ModeUnordered, 0, "*2\r\n$1\r\na\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", false},
		{ModeUnordered, 0, "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n", false},
		{ModeUnordered, 0, "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n", "*2\r\n$1\r\n0\r\n*2\r\n$1\r\ny\r\n$1\r\nx\r\n", true},
		{ModeUnordered, 0, "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", "%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n", true},
		{ModeUnordered, 0, "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", "%2\r\n+a\r\n:2\r\n+b\r\n:1\r\n", false},
		{ModeTypeOnly, 0, "%1\r\n+a\r\n:1\r\n", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", true},
		{ModeTypeOnly, 0, "%1\r\n+a\r\n:1\r\n", "*2\r\n+a\r\n:1\r\n", false},
	}
	for _, c := range cases {
		err := compare(Step{Mode: c.mode, Tol: c.tol}, b(c.a), b(c.b))
		if (err == nil) != c.agrees {
			t.Errorf("compare(mode %d, %q, %q) = %v, want agreement %v", c.mode, c.a, c.b, err, c.agrees)
		}
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{`SET k v`, []string{"SET", "k", "v"}},
		{`  SET   k	v  `, []string{"SET", "k", "v"}},
		{`EVAL "return 'a b'" 0`, []string{"EVAL", "return 'a b'", "0"}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO ''`, []string{"ECHO", ""}},
		{`ECHO 'a\nb'`, []string{"ECHO", `a\nb`}},
		{`ECHO "a\r\n\t\0\\\"\'\x41"`, []string{"ECHO", "a\r\n\t\x00\\\"'A"}},
		{`ECHO a"b c"'d e'`, []string{"ECHO", "ab cd e"}},
	}
	for _, c := range cases {
		got, err := Split(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`ECHO "abc`, `ECHO 'abc`, `ECHO "\q"`, `ECHO "\x4"`, `ECHO "\xzz"`} {
		if got, err := Split(bad); err == nil {
			t.Errorf("Split(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParse(t *testing.T) {
	src := `# comment
SET k v
~ TTL k
~5 EVAL "return 1" 0

% KEYS *
---
? HELLO 3
@sleep 10ms
GET k
`
	cases, err := Parse("t.txt", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("got %d cases, want 3", len(cases))
	}
	if cases[0].Name != "t.txt:2" || cases[1].Name != "t.txt:6" || cases[2].Name != "t.txt:8" {
		t.Errorf("names %s %s %s", cases[0].Name, cases[1].Name, cases[2].Name)
	}
	s := cases[0].Steps
	if s[0].Mode != ModeExact || s[1].Mode != ModeApprox || s[1].Tol != 2 || s[2].Tol != 5 {
		t.Errorf("steps %+v", s)
	}
	if cases[1].Steps[0].Mode != ModeUnordered || cases[2].Steps[0].Mode != ModeTypeOnly {
		t.Errorf("markers not parsed")
	}
	if cases[2].Steps[1].Sleep == 0 || cases[2].Steps[1].Args != nil {
		t.Errorf("@sleep not parsed: %+v", cases[2].Steps[1])
	}
	for _, bad := range []string{"~ GET k", "~x TTL k", "%% KEYS *", "@nap 1s", "@sleep forever", "~", `GET "k`} {
		if _, err := Parse("bad.txt", strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q): want an error", bad)
		}
	}
}

func TestCanonicalKeepsHeader(t *testing.T) {
	a := []byte("*2\r\n$1\r\nb\r\n$1\r\na\r\n")
	if got := canonical(a); !bytes.Equal(got, []byte("*2\r\n$1\r\na\r\n$1\r\nb\r\n")) {
		t.Fatalf("canonical = %q", got)
	}
}
