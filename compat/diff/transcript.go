package diff

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Mode says how a command's replies are compared.
type Mode int

// Comparison modes, chosen by a line's marker.
const (
	ModeExact     Mode = iota // byte for byte
	ModeApprox                // integers within a tolerance (~)
	ModeUnordered             // aggregates as multisets, at any depth (%)
	ModeTypeOnly              // the reply type only (?)
)

// Step is one line of a case: a command, or a pause.
type Step struct {
	Line  int
	Text  string // the line as written, marker included
	Mode  Mode
	Tol   int64 // for ModeApprox
	Args  []string
	Sleep time.Duration // when non-zero, the step is a pause
	// Conn, when set, switches the following steps to the connection of
	// that name ("@conn NAME"), dialled on first use without any reset;
	// "main" is the case's first connection.
	Conn string
}

// Case is a run of steps on fresh connections.
type Case struct {
	Name  string // file:line of the first step
	Steps []Step
}

// Parse reads a transcript. name (the file's base name) prefixes the case
// names.
func Parse(name string, r io.Reader) ([]Case, error) {
	var cases []Case
	var cur *Case
	flush := func() {
		if cur != nil && len(cur.Steps) > 0 {
			cases = append(cases, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line == "---":
			flush()
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		st, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, lineNo, err)
		}
		st.Line = lineNo
		st.Text = line
		if cur == nil {
			cur = &Case{Name: name + ":" + strconv.Itoa(lineNo)}
		}
		cur.Steps = append(cur.Steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return cases, nil
}

func parseStep(line string) (Step, error) {
	var st Step
	if rest, ok := strings.CutPrefix(line, "@sleep "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d <= 0 || d > 5*time.Second {
			return st, fmt.Errorf("bad @sleep %q", rest)
		}
		st.Sleep = d
		return st, nil
	}
	if rest, ok := strings.CutPrefix(line, "@conn "); ok {
		name := strings.TrimSpace(rest)
		if name == "" || strings.ContainsAny(name, " \t") {
			return st, fmt.Errorf("bad @conn %q", rest)
		}
		st.Conn = name
		return st, nil
	}
	if strings.HasPrefix(line, "@") {
		return st, fmt.Errorf("unknown directive %q", line)
	}
	switch line[0] {
	case '~', '%', '?':
		marker, rest, ok := strings.Cut(line, " ")
		if !ok {
			return st, fmt.Errorf("marker %q without a command", marker)
		}
		switch marker[0] {
		case '~':
			st.Mode = ModeApprox
			if len(marker) > 1 {
				n, err := strconv.ParseInt(marker[1:], 10, 64)
				if err != nil || n < 0 {
					return st, fmt.Errorf("bad tolerance %q", marker)
				}
				st.Tol = n
			} else {
				st.Tol = -1 // from the command name
			}
		case '%':
			st.Mode = ModeUnordered
		case '?':
			st.Mode = ModeTypeOnly
		}
		if (marker[0] != '~' && len(marker) > 1) || st.Mode == ModeExact {
			return st, fmt.Errorf("bad marker %q", marker)
		}
		line = strings.TrimSpace(rest)
	}
	args, err := Split(line)
	if err != nil {
		return st, err
	}
	if len(args) == 0 {
		return st, fmt.Errorf("empty command")
	}
	st.Args = args
	if st.Tol < 0 {
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

// Split splits a command line shell-style: whitespace separates arguments,
// '...' is literal, "..." understands \n \r \t \0 \\ \" \' and \xHH, and
// adjacent pieces join into one argument ("" is an empty argument).
func Split(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		case c == '\'':
			inArg = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' at column %d", i+1)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inArg = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] != '\\' {
					cur.WriteByte(line[i])
					continue
				}
				i++
				if i >= len(line) {
					break
				}
				switch e := line[i]; e {
				case 'n':
					cur.WriteByte('\n')
				case 'r':
					cur.WriteByte('\r')
				case 't':
					cur.WriteByte('\t')
				case '0':
					cur.WriteByte(0)
				case '\\', '"', '\'':
					cur.WriteByte(e)
				case 'x':
					if i+2 >= len(line) {
						return nil, fmt.Errorf("short \\x escape at column %d", i)
					}
					v, err := strconv.ParseUint(line[i+1:i+3], 16, 8)
					if err != nil {
						return nil, fmt.Errorf("bad \\x escape at column %d", i)
					}
					cur.WriteByte(byte(v))
					i += 2
				default:
					return nil, fmt.Errorf("unknown escape \\%c at column %d", e, i)
				}
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
		default:
			inArg = true
			cur.WriteByte(c)
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
