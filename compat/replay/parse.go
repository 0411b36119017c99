package replay

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/compat/diff"
)

// File is one parsed replay: the client it was taken from and its steps.
type File struct {
	Name    string   // base name of the file
	Client  string   // @client
	Version string   // @version: tag and commit the sequences were read at
	Sources []string // @source: paths in the client's repository
	Steps   []Step
}

// Kind is what a step does.
type Kind int

// Step kinds.
const (
	KindCommand Kind = iota // send a command, read one frame, compare
	KindSend                // @send: send a command, read nothing now
	KindRecv                // <recv>: read one frame, compare
	KindSleep               // @sleep: pause
)

// Mode says how two frames are compared.
type Mode int

// Comparison modes, chosen by a step's marker.
const (
	ModeExact     Mode = iota // byte for byte (no marker)
	ModeApprox                // ~ / ~N: integers within a tolerance
	ModeUnordered             // %: aggregates as multisets
	ModeTypeOnly              // ?: the type byte only
	ModeFields                // ?f1,f2: a map (or flat pair array) whose listed fields compare by type only
)

// Step is one line of a replay that does something.
type Step struct {
	Line   int
	Text   string // the line as written
	Kind   Kind
	Conn   string   // connection name, without brackets
	Args   []string // the command (KindCommand, KindSend)
	Mode   Mode
	Tol    int64         // ModeApprox
	Fields []string      // ModeFields
	Expect []byte        // from a preceding @expect: the reply that replaces the oracle's
	Sleep  time.Duration // KindSleep
	// Capture, on a command, names the variable that keeps the value of
	// its reply (per server) for later ${name} arguments.
	Capture string
}

var connName = regexp.MustCompile(`^\[([A-Za-z0-9_-]+)\]$`)

var (
	varName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	varRef  = regexp.MustCompile(`\$\{([^}]*)\}`)
)

// maxSleep bounds @sleep so a replay cannot stall the suite.
const maxSleep = 2 * time.Second

// Parse reads a replay. name (the file's base name) is used in errors.
func Parse(name string, r io.Reader) (*File, error) {
	f := &File{Name: name}
	var expect []byte // a pending @expect
	expectLine := 0
	outstanding := map[string]int{} // @send replies not yet read, per connection
	captured := map[string]bool{}   // variables defined by an earlier @capture
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	lineNo := 0
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if dir, rest, ok := directive(line); ok {
			switch dir {
			case "@client", "@version", "@source":
				if len(f.Steps) > 0 || expect != nil {
					return nil, fail("%s belongs in the header, before the first step", dir)
				}
				if rest == "" {
					return nil, fail("%s needs a value", dir)
				}
				switch dir {
				case "@client":
					if f.Client != "" {
						return nil, fail("a second @client")
					}
					f.Client = rest
				case "@version":
					if f.Version != "" {
						return nil, fail("a second @version")
					}
					f.Version = rest
				default:
					f.Sources = append(f.Sources, rest)
				}
			case "@sleep":
				if expect != nil {
					return nil, fail("@expect on line %d must be followed by a command or <recv>", expectLine)
				}
				d, err := time.ParseDuration(rest)
				if err != nil || d <= 0 || d > maxSleep {
					return nil, fail("bad @sleep %q (a Go duration, at most %v)", rest, maxSleep)
				}
				f.Steps = append(f.Steps, Step{Line: lineNo, Text: line, Kind: KindSleep, Sleep: d})
			case "@expect":
				if expect != nil {
					return nil, fail("two @expect lines in a row")
				}
				raw, err := parseRESP(rest)
				if err != nil {
					return nil, fail("@expect: %v", err)
				}
				expect, expectLine = raw, lineNo
			default:
				return nil, fail("unknown directive %s", dir)
			}
			continue
		}
		st, err := parseStep(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		st.Line, st.Text = lineNo, line
		for _, a := range st.Args {
			for _, m := range varRef.FindAllStringSubmatch(a, -1) {
				if !captured[m[1]] {
					return nil, fail("${%s} names no variable captured before this line", m[1])
				}
			}
		}
		if st.Capture != "" {
			if captured[st.Capture] {
				return nil, fail("@capture %s a second time", st.Capture)
			}
			captured[st.Capture] = true
		}
		switch st.Kind {
		case KindSend:
			if expect != nil {
				return nil, fail("@expect cannot apply to @send; put it before the <recv>")
			}
			outstanding[st.Conn]++
		case KindRecv:
			if outstanding[st.Conn] > 0 {
				outstanding[st.Conn]--
			}
		case KindCommand:
			if outstanding[st.Conn] > 0 {
				return nil, fail("[%s] still has %d @send repl(ies) to <recv> before a command", st.Conn, outstanding[st.Conn])
			}
		}
		st.Expect, expect = expect, nil
		f.Steps = append(f.Steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if expect != nil {
		return nil, fmt.Errorf("%s:%d: @expect at the end of the file", name, expectLine)
	}
	for c, n := range outstanding {
		if n > 0 {
			return nil, fmt.Errorf("%s: [%s] ends with %d @send repl(ies) never read by <recv>", name, c, n)
		}
	}
	switch {
	case f.Client == "":
		return nil, fmt.Errorf("%s: header lacks @client", name)
	case f.Version == "":
		return nil, fmt.Errorf("%s: header lacks @version", name)
	case len(f.Sources) == 0:
		return nil, fmt.Errorf("%s: header lacks @source", name)
	case len(f.Steps) == 0:
		return nil, fmt.Errorf("%s: no steps", name)
	}
	if err := checkSHAs(f); err != nil {
		return nil, err
	}
	return f, nil
}

// directive splits "@word rest"; ok is false for lines that are not one.
func directive(line string) (dir, rest string, ok bool) {
	if !strings.HasPrefix(line, "@") {
		return "", "", false
	}
	dir, rest, _ = strings.Cut(line, " ")
	return dir, strings.TrimSpace(rest), true
}

// parseRESP reads the single quoted argument of @expect and checks that it
// is exactly one complete RESP frame.
func parseRESP(s string) ([]byte, error) {
	args, err := diff.Split(s)
	if err != nil {
		return nil, err
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("want one quoted RESP frame, got %d arguments", len(args))
	}
	raw := []byte(args[0])
	r := bufio.NewReader(bytes.NewReader(raw))
	frame, err := diff.ReadReply(r)
	if err != nil {
		return nil, fmt.Errorf("not a RESP frame: %v", err)
	}
	if len(frame) != len(raw) {
		return nil, fmt.Errorf("%d bytes after the RESP frame", len(raw)-len(frame))
	}
	return raw, nil
}

func parseStep(line string) (Step, error) {
	var st Step
	first, rest, _ := strings.Cut(line, " ")
	m := connName.FindStringSubmatch(first)
	if m == nil {
		return st, fmt.Errorf("a step starts with [conn], @sleep or @expect: %q", line)
	}
	st.Conn = m[1]
	rest = strings.TrimSpace(rest)
	if r, ok := strings.CutPrefix(rest, "@send "); ok {
		st.Kind = KindSend
		args, err := diff.Split(r)
		if err != nil {
			return st, err
		}
		if len(args) == 0 {
			return st, fmt.Errorf("@send without a command")
		}
		st.Args = args
		return st, nil
	}
	if strings.HasPrefix(rest, "@") && !strings.HasPrefix(rest, "@capture ") {
		return st, fmt.Errorf("unknown connection directive %q", rest)
	}
	if rest != "" && strings.ContainsRune("~%?", rune(rest[0])) {
		marker, r, ok := strings.Cut(rest, " ")
		if !ok {
			return st, fmt.Errorf("marker %q without a command", marker)
		}
		if err := parseMarker(&st, marker); err != nil {
			return st, err
		}
		rest = strings.TrimSpace(r)
	}
	if r, ok := strings.CutPrefix(rest, "@capture "); ok {
		name, r, _ := strings.Cut(strings.TrimSpace(r), " ")
		if !varName.MatchString(name) {
			return st, fmt.Errorf("bad @capture name %q", name)
		}
		st.Capture = name
		rest = strings.TrimSpace(r)
		if rest == "" || rest == "<recv>" {
			return st, fmt.Errorf("@capture %s needs a command", name)
		}
	}
	if rest == "<recv>" {
		st.Kind = KindRecv
		if st.Mode == ModeApprox && st.Tol < 0 {
			return st, fmt.Errorf("~ on <recv> needs an explicit tolerance (~N)")
		}
		return st, nil
	}
	st.Kind = KindCommand
	args, err := diff.Split(rest)
	if err != nil {
		return st, err
	}
	if len(args) == 0 {
		return st, fmt.Errorf("empty command")
	}
	st.Args = args
	if st.Mode == ModeApprox && st.Tol < 0 {
		switch strings.ToLower(args[0]) {
		case "ttl", "expiretime":
			st.Tol = 2
		case "pttl", "pexpiretime":
			st.Tol = 1500
		default:
			return st, fmt.Errorf("~ needs an explicit tolerance (~N) for %s", args[0])
		}
	}
	return st, nil
}

func parseMarker(st *Step, marker string) error {
	switch marker[0] {
	case '~':
		st.Mode, st.Tol = ModeApprox, -1
		if len(marker) > 1 {
			n, err := strconv.ParseInt(marker[1:], 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("bad tolerance %q", marker)
			}
			st.Tol = n
		}
	case '%':
		if marker != "%" {
			return fmt.Errorf("bad marker %q", marker)
		}
		st.Mode = ModeUnordered
	case '?':
		if marker == "?" {
			st.Mode = ModeTypeOnly
			return nil
		}
		st.Mode = ModeFields
		for _, f := range strings.Split(marker[1:], ",") {
			if f == "" {
				return fmt.Errorf("bad field list in %q", marker)
			}
			st.Fields = append(st.Fields, f)
		}
	}
	return nil
}

// checkSHAs makes sure every EVALSHA names the SHA1 of a script body that
// appears in the same file (as EVAL's or SCRIPT LOAD's argument), so a
// mistyped hash cannot turn a replay into a string of NOSCRIPT errors that
// both servers happen to agree on.
func checkSHAs(f *File) error {
	known := map[string]bool{}
	for _, st := range f.Steps {
		a := st.Args
		switch {
		case len(a) >= 2 && (strings.EqualFold(a[0], "eval") || strings.EqualFold(a[0], "eval_ro")):
			known[sha1hex(a[1])] = true
		case len(a) >= 3 && strings.EqualFold(a[0], "script") && strings.EqualFold(a[1], "load"):
			known[sha1hex(a[2])] = true
		}
	}
	for _, st := range f.Steps {
		a := st.Args
		if len(a) >= 2 && (strings.EqualFold(a[0], "evalsha") || strings.EqualFold(a[0], "evalsha_ro")) && !known[a[1]] {
			return fmt.Errorf("%s:%d: EVALSHA %s is the SHA1 of no script in this file (EVAL or SCRIPT LOAD)", f.Name, st.Line, a[1])
		}
	}
	return nil
}

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
