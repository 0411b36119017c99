package diff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// ioTimeout bounds every read and write, so a server that never answers
// fails the case instead of hanging the suite. Not less: a runaway
// recursion's stack overflow (eval.txt) takes tumbler 0.2 s to report, as
// gopher-lua walks its 8000 frames once for each (luavm/state.go), and
// 2-3 s with the race detector; with the compat packages' tests running
// beside it on two cores it passed 5 s in a shuffled run.
const ioTimeout = 20 * time.Second

// conn is a raw RESP connection.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReader(c)}, nil
}

// do sends one command and reads exactly one reply.
func (c *conn) do(args ...string) ([]byte, error) {
	if err := c.c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.c.Write(Encode(args)); err != nil {
		return nil, err
	}
	return ReadReply(c.r)
}

func (c *conn) close() { c.c.Close() }

// startRedis runs redis-server on a free loopback port until the test ends
// and returns its address (proc.StartRedis).
func startRedis(t *testing.T) string {
	t.Helper()
	return proc.StartRedis(t)
}

// target is one server under comparison.
type target struct {
	name string
	addr string
}

// open dials a fresh connection and resets the server: FLUSHALL,
// SCRIPT FLUSH and FUNCTION FLUSH.
func (tg target) open() (*conn, error) {
	c, err := dial(tg.addr)
	if err != nil {
		return nil, err
	}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"}} {
		reply, err := c.do(cmd...)
		if err == nil && string(reply) != "+OK\r\n" {
			err = fmt.Errorf("%s: %q", strings.Join(cmd, " "), reply)
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("%s: reset: %v", tg.name, err)
		}
	}
	return c, nil
}

func loadCases(t *testing.T) []Case {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata/ (%v)", err)
	}
	sort.Strings(files)
	var all []Case
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := Parse(filepath.Base(f), fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, cases...)
	}
	return all
}

// TestDiff runs every transcript case against redis-server and tumbler.
func TestDiff(t *testing.T) {
	cases := loadCases(t)
	redis := target{"redis", proc.StartRedis(t, "--enable-debug-command", "yes")} // (DEBUG: debug.txt)
	tumbler := target{"tumbler", server.RunT(t).Addr()}
	verbose := os.Getenv("TUMBLER_DIFF_VERBOSE") == "1"

	checkKnownDiffs(t, cases)
	t.Logf("%d cases, %d known diffs", len(cases), len(knownDiffs))

	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			mismatch := runCase(t, tc, redis, tumbler, verbose)
			kd, known := knownDiffs[tc.Name]
			switch {
			case known && mismatch == "" && timingDiffs[tc.Name]:
				t.Logf("known diff (%s) matched Redis this time: its reply depends on timing", kd.reason)
			case known && mismatch == "":
				t.Errorf("listed in knownDiffs (%s) but now matches Redis: remove the entry", kd.reason)
			case known:
				t.Skipf("known diff (fix in %s): %s\n%s", kd.owner, kd.reason, mismatch)
			case mismatch != "":
				t.Error(mismatch)
			}
		})
	}
}

// checkKnownDiffs fails the test when a knownDiffs entry does not name a
// case containing its match line: transcript lines moved and the table
// must follow.
func checkKnownDiffs(t *testing.T, cases []Case) {
	t.Helper()
	byName := map[string]Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	for name, kd := range knownDiffs {
		c, ok := byName[name]
		if !ok {
			t.Errorf("knownDiffs names %s, which is not a case (did its lines move?)", name)
			continue
		}
		found := false
		for _, st := range c.Steps {
			if strings.HasPrefix(st.Text, kd.match) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("knownDiffs %s: no line of that case starts with %q (did its lines move?)", name, kd.match)
		}
	}
}

// runCase runs one case and returns a description of every mismatch, or
// "" when every reply agrees. Later steps still run after a mismatch, so
// one report shows all of a case's differences. Connection failures are
// fatal.
func runCase(t *testing.T, tc Case, redis, tumbler target, verbose bool) string {
	rc, err := redis.open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	tc2, err := tumbler.open()
	if err != nil {
		t.Fatal(err)
	}
	defer tc2.close()

	// Named connections (@conn): one pair per name, "main" the first.
	type pair struct{ r, t *conn }
	conns := map[string]pair{"main": {rc, tc2}}
	defer func() {
		for name, p := range conns {
			if name != "main" {
				p.r.close()
				p.t.close()
			}
		}
		if usesACL(tc) {
			resetACL(t, redis)
			resetACL(t, tumbler)
		}
	}()

	var mismatch strings.Builder
	for _, st := range tc.Steps {
		if st.Sleep > 0 {
			time.Sleep(st.Sleep)
			continue
		}
		if st.Conn != "" {
			p, ok := conns[st.Conn]
			if !ok {
				r, err := dial(redis.addr)
				if err != nil {
					t.Fatal(err)
				}
				tt, err := dial(tumbler.addr)
				if err != nil {
					r.close()
					t.Fatal(err)
				}
				p = pair{r, tt}
				conns[st.Conn] = p
			}
			rc, tc2 = p.r, p.t
			continue
		}
		want, err := rc.do(st.Args...)
		if err != nil {
			t.Fatalf("line %d: %s: redis: %v", st.Line, show(st.Args), err)
		}
		got, err := tc2.do(st.Args...)
		if err != nil {
			t.Fatalf("line %d: %s: tumbler: %v (redis replied %q)", st.Line, show(st.Args), err, want)
		}
		if verbose {
			t.Logf("line %d: %s\n  redis:   %q\n  tumbler: %q", st.Line, show(st.Args), want, got)
		}
		if err := compare(st, want, got); err != nil {
			fmt.Fprintf(&mismatch, "line %d: %s: %v\n  redis:   %q\n  tumbler: %q\n", st.Line, show(st.Args), err, want, got)
		}
	}
	return strings.TrimSuffix(mismatch.String(), "\n")
}

// usesACL reports whether a case changes users or connections: after it
// the servers' users are put back (resetACL).
func usesACL(tc Case) bool {
	for _, st := range tc.Steps {
		if st.Conn != "" || (len(st.Args) > 0 && strings.EqualFold(st.Args[0], "acl")) {
			return true
		}
	}
	return false
}

// resetACL deletes every user but default, gives default back its
// start-up permissions and empties the ACL log, on a fresh connection.
func resetACL(t *testing.T, tg target) {
	c, err := dial(tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	do := func(args ...string) []byte {
		reply, err := c.do(args...)
		if err == nil && len(reply) > 0 && reply[0] == '-' {
			err = fmt.Errorf("%q", reply)
		}
		if err != nil {
			t.Fatalf("%s: ACL reset: %s: %v", tg.name, strings.Join(args, " "), err)
		}
		return reply
	}
	do("ACL", "SETUSER", "default", "on", "nopass", "allkeys", "allchannels", "allcommands", "clearselectors")
	do("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
	for _, name := range bulkStrings(do("ACL", "USERS")) {
		if name != "default" {
			do("ACL", "DELUSER", name)
		}
	}
	do("ACL", "LOG", "RESET")
}

// bulkStrings parses a RESP array of bulk strings.
func bulkStrings(reply []byte) []string {
	var out []string
	lines := strings.Split(string(reply), "\r\n")
	for i := 1; i+1 < len(lines); i += 2 {
		if strings.HasPrefix(lines[i], "$") {
			out = append(out, lines[i+1])
		}
	}
	return out
}

func compare(st Step, want, got []byte) error {
	switch st.Mode {
	case ModeExact:
		if !bytes.Equal(want, got) {
			return errors.New("replies differ")
		}
	case ModeApprox:
		if !Approx(want, got, st.Tol) {
			return fmt.Errorf("replies differ beyond ±%d", st.Tol)
		}
	case ModeUnordered:
		if !SameMultiset(want, got) {
			return errors.New("replies differ as multisets")
		}
	case ModeTypeOnly:
		if len(want) == 0 || len(got) == 0 || want[0] != got[0] {
			return errors.New("reply types differ")
		}
	}
	return nil
}

// show renders a command for messages, clipping long arguments.
func show(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 60 {
			a = a[:57] + "..."
		}
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// dialBoth starts a redis-server (with extra arguments) and a tumbler of
// the test's own, and connects to each, until the test ends.
func dialBoth(t *testing.T, extra ...string) (redis, tumbler *conn) {
	t.Helper()
	rc, err := dial(proc.StartRedis(t, extra...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.close)
	tc, err := dial(server.RunT(t).Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.close)
	return rc, tc
}
