package diff

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/engine"
)

// lolwutBody is a LOLWUT reply's text (a bulk string in RESP2, a
// verbatim one in RESP3, its "txt:" kept) with the server's version
// replaced by "V", so that redis-server 7.0's and tumbler's compare; an
// error reply is returned whole.
func lolwutBody(t *testing.T, reply []byte, version string) string {
	t.Helper()
	s := string(reply)
	if s[0] == '-' {
		return s
	}
	i := strings.Index(s, "\r\n")
	if (s[0] != '$' && s[0] != '=') || i < 0 || !strings.HasSuffix(s, "\r\n") {
		t.Fatalf("LOLWUT reply %q", s)
	}
	n, err := strconv.Atoi(s[1:i])
	body := s[i+2 : len(s)-2]
	if err != nil || n != len(body) {
		t.Fatalf("LOLWUT reply: length %q for %d bytes", s[1:i], len(body))
	}
	return s[:1] + strings.ReplaceAll(body, "Redis ver. "+version+"\n", "Redis ver. V\n")
}

// TestLolwutDiff compares LOLWUT with redis-server's, in RESP2 and RESP3:
// byte for byte where Redis draws without rand() (the version line, and
// Schotter's first two rows of squares, which are never moved), errors
// and argument clamping included; where it draws at random, the
// drawing's size, its alphabet and its caption.
func TestLolwutDiff(t *testing.T) {
	rc, tc := dialBoth(t)
	info := string(do(t, rc, "INFO", "server"))
	i := strings.Index(info, "redis_version:")
	redisVersion := strings.TrimSpace(info[i+len("redis_version:"):][:strings.Index(info[i+len("redis_version:"):], "\r\n")])
	for _, resp := range []string{"2", "3"} {
		do(t, rc, "HELLO", resp)
		do(t, tc, "HELLO", resp)
		for _, args := range [][]string{
			{"LOLWUT"}, {"LOLWUT", "foo"}, {"LOLWUT", "VERSION"}, {"lolwut", "version", "7"},
			{"LOLWUT", "VERSION", "x"}, {"LOLWUT", "VERSION", "-1"}, {"LOLWUT", "VERSION", "4"},
			{"LOLWUT", "VERSION", "59"}, {"LOLWUT", "VERSION", "99999999999999999999"},
			{"LOLWUT", "VERSION", "5", "66", "8", "2"}, {"LOLWUT", "VERSION", "5", "1", "1", "1"},
			{"LOLWUT", "VERSION", "5", "10", "3", "1"}, {"LOLWUT", "VERSION", "5", "1000", "200", "2"},
			{"LOLWUT", "VERSION", "5", "0", "-5", "1"}, {"LOLWUT", "VERSION", "5", "3", "2", "2", "extra"},
			{"LOLWUT", "VERSION", "5", "2", "1", "0"}, {"LOLWUT", "VERSION", "5", "5000", "999", "-3"},
			{"LOLWUT", "VERSION", "5", "x"}, {"LOLWUT", "VERSION", "5", "66", "8", "x"},
			{"LOLWUT", "VERSION", "4294967301", "5", "2", "2"}, // (unsigned int)ver: 5
			{"LOLWUT", "VERSION", "6", "1", "1"}, {"LOLWUT", "VERSION", "6", "1", "x"},
			{"LOLWUT", "VERSION", "6", "0", "-7"},
		} {
			want := lolwutBody(t, do(t, rc, args...), redisVersion)
			got := lolwutBody(t, do(t, tc, args...), engine.Version)
			if want != got {
				t.Errorf("RESP%s %q\n redis:   %q\n tumbler: %q", resp, args, want, got)
			}
		}
		// Drawn at random: the same size, alphabet and caption.
		for _, args := range [][]string{
			{"LOLWUT", "VERSION", "5"}, {"LOLWUT", "VERSION", "5", "40", "5", "7"},
			{"LOLWUT", "VERSION", "6"}, {"LOLWUT", "VERSION", "6", "33", "17"},
		} {
			want := lolwutShape(lolwutBody(t, do(t, rc, args...), redisVersion))
			got := lolwutShape(lolwutBody(t, do(t, tc, args...), engine.Version))
			if want != got {
				t.Errorf("RESP%s %q: the drawing's shape\n redis:   %s\n tumbler: %s", resp, args, want, got)
			}
		}
	}
}

// lolwutShape describes a drawing (lolwutBody's text): its reply type,
// then each line's length in cells (a
// braille character, or one of LOLWUT 6's four coloured blanks), or the
// line itself when it is text (the caption).
func lolwutShape(reply string) string {
	body := strings.TrimPrefix(strings.TrimPrefix(reply, "$"), "=txt:")
	out := []string{reply[:1]}
	for _, line := range strings.Split(body, "\n") {
		cells := 0
		rest := line
		for rest != "" {
			if r := []rune(rest)[0]; r >= 0x2800 && r <= 0x28ff {
				cells++
				rest = rest[len(string(r)):]
				continue
			}
			matched := false
			for _, ce := range []string{"0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"} {
				if cell := "\033[" + ce + " \033[0m"; strings.HasPrefix(rest, cell) {
					cells++
					rest = rest[len(cell):]
					matched = true
					break
				}
			}
			if !matched {
				break
			}
		}
		if rest == "" {
			out = append(out, strconv.Itoa(cells))
		} else {
			out = append(out, strconv.Quote(line))
		}
	}
	return strings.Join(out, " ")
}
