package replay

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/compat/diff"
)

// Options bound the runner's waiting. The zero value means the defaults.
type Options struct {
	// IOTimeout bounds dialing, every write, and the read of a command's
	// reply. Default 5s.
	IOTimeout time.Duration
	// RecvTimeout bounds the read of a <recv>. Default 2s.
	RecvTimeout time.Duration
	// DrainWait is how long the runner waits, after the last step, for
	// frames nobody read. Default 50ms.
	DrainWait time.Duration
	// Logf, when set, receives every step with both frames.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.IOTimeout <= 0 {
		o.IOTimeout = 5 * time.Second
	}
	if o.RecvTimeout <= 0 {
		o.RecvTimeout = 2 * time.Second
	}
	if o.DrainWait <= 0 {
		o.DrainWait = 50 * time.Millisecond
	}
	return o
}

// Diff is one step where the target did not give the frame the oracle
// (or the step's @expect) gave.
type Diff struct {
	Line int
	Text string
	Why  string
	Want []byte // nil when there was no frame to compare with
	Got  []byte
}

func (d Diff) String() string {
	return fmt.Sprintf("line %d: %s\n    %s\n    want: %q\n    got:  %q", d.Line, clip(d.Text), d.Why, d.Want, d.Got)
}

// OracleError says the replay itself is broken: the oracle did not answer
// a step as the file assumes (no frame for a <recv>, a closed connection,
// frames nobody read). Fix the file, not the target.
type OracleError struct {
	File string
	Line int
	Text string
	Err  error
}

func (e *OracleError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: oracle: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: oracle: %s: %v", e.File, e.Line, clip(e.Text), e.Err)
}

// Run replays f on fresh connections to oracle and target in lockstep:
// each step runs on the oracle, then on the target, and their frames are
// compared. It returns the target's differences, every one of them, or an
// *OracleError when the oracle does not answer as the file assumes.
func Run(f *File, oracle, target string, opt Options) ([]Diff, error) {
	opt = opt.withDefaults()
	o := newSide("oracle", oracle, opt)
	t := newSide("target", target, opt)
	defer o.close()
	defer t.close()
	var diffs []Diff
	oerr := func(st Step, err error) error {
		return &OracleError{File: f.Name, Line: st.Line, Text: st.Text, Err: err}
	}
	for _, st := range f.Steps {
		if st.Kind == KindSleep {
			time.Sleep(st.Sleep)
			continue
		}
		want, err := o.do(st)
		if err != nil {
			return diffs, oerr(st, err)
		}
		if err := o.capture(st, want); err != nil {
			return diffs, oerr(st, err)
		}
		got, terr := t.do(st)
		if terr == nil {
			terr = t.capture(st, got)
		}
		if st.Kind == KindSend {
			if terr != nil {
				diffs = append(diffs, Diff{Line: st.Line, Text: st.Text, Why: terr.Error()})
			}
			continue
		}
		if opt.Logf != nil {
			if st.Expect != nil {
				opt.Logf("%s:%d: %s\n  oracle: %q (replaced by @expect)\n  expect: %q\n  target: %q", f.Name, st.Line, clip(st.Text), want, st.Expect, got)
			} else {
				opt.Logf("%s:%d: %s\n  oracle: %q\n  target: %q", f.Name, st.Line, clip(st.Text), want, got)
			}
		}
		if st.Expect != nil {
			want = st.Expect
		}
		if terr != nil {
			diffs = append(diffs, Diff{Line: st.Line, Text: st.Text, Why: terr.Error(), Want: want})
			continue
		}
		if err := Compare(st, want, got); err != nil {
			diffs = append(diffs, Diff{Line: st.Line, Text: st.Text, Why: err.Error(), Want: want, Got: got})
		}
	}
	// Every frame the oracle sent must have been read by a step; frames
	// the target sends beyond the oracle's are differences.
	for _, name := range o.names() {
		if extra := o.drain(name); extra != nil {
			return diffs, &OracleError{File: f.Name, Err: fmt.Errorf("[%s] sent a frame no step read: %q", name, extra)}
		}
	}
	for _, name := range t.names() {
		if extra := t.drain(name); extra != nil {
			diffs = append(diffs, Diff{Text: "[" + name + "] (after the last step)", Why: "a frame the oracle did not send", Got: extra})
		}
	}
	return diffs, nil
}

// side is one server's connections, by name.
type side struct {
	name  string
	addr  string
	opt   Options
	conns map[string]*conn
	vars  map[string]string // @capture values this server gave
}

type conn struct {
	c      net.Conn
	r      *bufio.Reader
	broken error // set after a failed read or write; later steps do no I/O
}

func newSide(name, addr string, opt Options) *side {
	return &side{name: name, addr: addr, opt: opt, conns: map[string]*conn{}, vars: map[string]string{}}
}

// capture keeps the value of frame in the step's variable, if it names
// one: an integer, a simple string or a bulk string.
func (s *side) capture(st Step, frame []byte) error {
	if st.Capture == "" {
		return nil
	}
	if len(frame) > 3 && frame[0] == ':' {
		s.vars[st.Capture] = string(frame[1 : len(frame)-2])
		return nil
	}
	if v, ok := stringOf(frame); ok {
		s.vars[st.Capture] = v
		return nil
	}
	return fmt.Errorf("@capture %s: %q is no integer or string", st.Capture, frame)
}

// args returns the step's command with every ${name} replaced by the
// value this server gave for it.
func (s *side) args(st Step) []string {
	out := make([]string, len(st.Args))
	for i, a := range st.Args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			return s.vars[ref[2:len(ref)-1]]
		})
	}
	return out
}

func (s *side) close() {
	for _, c := range s.conns {
		if c.c != nil {
			c.c.Close()
		}
	}
}

func (s *side) names() []string {
	var ns []string
	for n := range s.conns {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// get returns the named connection, dialing it on first use.
func (s *side) get(name string) *conn {
	if c, ok := s.conns[name]; ok {
		return c
	}
	c := &conn{}
	nc, err := net.DialTimeout("tcp", s.addr, s.opt.IOTimeout)
	if err != nil {
		c.broken = fmt.Errorf("dial: %v", err)
	} else {
		c.c, c.r = nc, bufio.NewReader(nc)
	}
	s.conns[name] = c
	return c
}

var errBroken = errors.New("connection unusable after an earlier failure on it")

// do runs one step on this side and returns the frame it read, if any.
func (s *side) do(st Step) ([]byte, error) {
	c := s.get(st.Conn)
	if c.broken != nil {
		return nil, fmt.Errorf("%w (%v)", errBroken, c.broken)
	}
	if st.Kind == KindCommand || st.Kind == KindSend {
		if err := c.c.SetWriteDeadline(time.Now().Add(s.opt.IOTimeout)); err != nil {
			c.broken = err
			return nil, err
		}
		if _, err := c.c.Write(diff.Encode(s.args(st))); err != nil {
			c.broken = fmt.Errorf("write: %v", err)
			return nil, c.broken
		}
		if st.Kind == KindSend {
			return nil, nil
		}
	}
	wait := s.opt.IOTimeout
	if st.Kind == KindRecv {
		wait = s.opt.RecvTimeout
	}
	if err := c.c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		c.broken = err
		return nil, err
	}
	frame, err := diff.ReadReply(c.r)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("no frame within %v", wait)
		}
		c.broken = err
		return nil, err
	}
	return frame, nil
}

// drain returns a frame that arrives on the named connection within
// DrainWait, or nil.
func (s *side) drain(name string) []byte {
	c := s.conns[name]
	if c == nil || c.broken != nil {
		return nil
	}
	if c.r.Buffered() == 0 {
		if err := c.c.SetReadDeadline(time.Now().Add(s.opt.DrainWait)); err != nil {
			return nil
		}
	}
	frame, err := diff.ReadReply(c.r)
	if err != nil && len(frame) == 0 {
		return nil
	}
	return frame
}

// clip shortens a step's text for messages.
func clip(s string) string {
	if len(s) <= 160 {
		return s
	}
	return s[:150] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// FirstDiff renders the first difference, for skip messages.
func FirstDiff(diffs []Diff) string {
	if len(diffs) == 0 {
		return ""
	}
	return diffs[0].String()
}

// Render renders all differences, one block each.
func Render(diffs []Diff) string {
	var b strings.Builder
	for i, d := range diffs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}
