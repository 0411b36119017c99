package replay

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/diff"
)

// fakeServer is a tiny RESP server for testing the runner without
// redis-server: handle maps a command to the frame to answer ("" answers
// nothing) and to a frame for every other connection ("" sends none).
type fakeServer struct {
	ln     net.Listener
	handle func(args []string) (reply, others string)
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startFake(t *testing.T, handle func(args []string) (reply, others string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, handle: handle}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return ln.Addr().String()
}

func (f *fakeServer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeServer) serve(c net.Conn) {
	defer f.wg.Done()
	r := bufio.NewReader(c)
	for {
		raw, err := diff.ReadReply(r)
		if err != nil {
			return
		}
		_, elems, _ := diff.Elements(raw)
		args := make([]string, len(elems))
		for i, e := range elems {
			args[i], _ = stringOf(e)
		}
		reply, others := f.handle(args)
		f.mu.Lock()
		if others != "" {
			for _, o := range f.conns {
				if o != c {
					o.Write([]byte(others))
				}
			}
		}
		if reply != "" {
			c.Write([]byte(reply))
		}
		f.mu.Unlock()
	}
}

// oracleHandler is the fake oracle: PING, ECHO, RAW <frame> (answers the
// frame as given), SILENT (answers nothing) and PUB <text> (answers :1 and
// sends +<text> to every other connection).
func oracleHandler(args []string) (string, string) {
	switch strings.ToUpper(args[0]) {
	case "PING":
		return "+PONG\r\n", ""
	case "ECHO":
		return "$" + strconv.Itoa(len(args[1])) + "\r\n" + args[1] + "\r\n", ""
	case "RAW":
		return args[1], ""
	case "SILENT":
		return "", ""
	case "PUB":
		return ":1\r\n", "+" + args[1] + "\r\n"
	}
	return "-ERR unknown command '" + args[0] + "'\r\n", ""
}

// overriding returns a handler that answers cmd with reply and otherwise
// behaves as the fake oracle.
func overriding(cmd, reply, others string) func([]string) (string, string) {
	return func(args []string) (string, string) {
		if strings.EqualFold(args[0], cmd) {
			return reply, others
		}
		return oracleHandler(args)
	}
}

func mustParse(t *testing.T, body string) *File {
	t.Helper()
	f, err := Parse("test.replay", strings.NewReader("@client test\n@version 0\n@source none\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var fastOpt = Options{IOTimeout: time.Second, RecvTimeout: 150 * time.Millisecond, DrainWait: 30 * time.Millisecond}

func TestRun_SameServersAgree(t *testing.T) {
	f := mustParse(t, `
[a] PING
[b] @send ECHO x
[b] @send ECHO y
[b] <recv>
[b] <recv>
[a] PUB hi
[b] <recv>
@expect "$2\r\nok\r\n"
[a] RAW "$2\r\nok\r\n"
`)
	o := startFake(t, oracleHandler)
	tg := startFake(t, oracleHandler)
	diffs, err := Run(f, o, tg, fastOpt)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("err %v, diffs:\n%s", err, Render(diffs))
	}
}

func TestRun_ReportsEveryDifferingStep(t *testing.T) {
	f := mustParse(t, `
[a] PING
[a] ECHO same
[a] PING
`)
	o := startFake(t, oracleHandler)
	tg := startFake(t, overriding("PING", "+PANG\r\n", ""))
	diffs, err := Run(f, o, tg, fastOpt)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || diffs[0].Line != 5 || diffs[1].Line != 7 {
		t.Fatalf("want differences on lines 5 and 7, got:\n%s", Render(diffs))
	}
	d := diffs[0]
	if string(d.Want) != "+PONG\r\n" || string(d.Got) != "+PANG\r\n" || d.Text != "[a] PING" {
		t.Fatalf("difference does not carry both frames and the step: %+v", d)
	}
}

func TestRun_TargetSilentOnRecvIsADifferenceNotAHang(t *testing.T) {
	f := mustParse(t, `
[sub] PING
[pub] PUB hello
[sub] <recv>
[sub] PING
`)
	o := startFake(t, oracleHandler)
	tg := startFake(t, overriding("PUB", ":0\r\n", "")) // delivers nothing
	start := time.Now()
	diffs, err := Run(f, o, tg, fastOpt)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the runner waited %v", time.Since(start))
	}
	if len(diffs) != 3 {
		t.Fatalf("want 3 differences (PUB reply, no frame, unusable connection), got:\n%s", Render(diffs))
	}
	if !strings.Contains(diffs[1].Why, "no frame") || !strings.Contains(diffs[2].Why, "unusable") {
		t.Fatalf("unexpected reasons:\n%s", Render(diffs))
	}
}

func TestRun_OracleSilentOnRecvFailsTheReplay(t *testing.T) {
	f := mustParse(t, `
[a] PING
[a] <recv>
`)
	o := startFake(t, oracleHandler)
	tg := startFake(t, oracleHandler)
	_, err := Run(f, o, tg, fastOpt)
	var oe *OracleError
	if !errors.As(err, &oe) || oe.Line != 6 {
		t.Fatalf("want an OracleError for line 6, got %v", err)
	}
}

func TestRun_ExpectReplacesTheOracle(t *testing.T) {
	f := mustParse(t, `
@expect "+OK\r\n"
[a] NEWCMD
`)
	o := startFake(t, overriding("NEWCMD", "-ERR syntax error\r\n", ""))
	good := startFake(t, overriding("NEWCMD", "+OK\r\n", ""))
	if diffs, err := Run(f, o, good, fastOpt); err != nil || len(diffs) != 0 {
		t.Fatalf("a target answering as @expect says must agree: %v\n%s", err, Render(diffs))
	}
	asOld := startFake(t, overriding("NEWCMD", "-ERR syntax error\r\n", ""))
	diffs, err := Run(f, o, asOld, fastOpt)
	if err != nil || len(diffs) != 1 || string(diffs[0].Want) != "+OK\r\n" {
		t.Fatalf("a target answering as the old oracle must differ from @expect: %v\n%s", err, Render(diffs))
	}
}

func TestRun_UnreadFrames(t *testing.T) {
	f := mustParse(t, `
[a] PING
`)
	o := startFake(t, oracleHandler)
	extra := startFake(t, overriding("PING", "+PONG\r\n+EXTRA\r\n", ""))
	diffs, err := Run(f, o, extra, fastOpt)
	if err != nil || len(diffs) != 1 || string(diffs[0].Got) != "+EXTRA\r\n" {
		t.Fatalf("an extra target frame must be a difference: %v\n%s", err, Render(diffs))
	}
	_, err = Run(f, extra, o, fastOpt)
	var oe *OracleError
	if !errors.As(err, &oe) {
		t.Fatalf("an extra oracle frame must fail the replay, got %v", err)
	}
}

func TestRun_MarkersApply(t *testing.T) {
	f := mustParse(t, `
[a] ~10 RAW ":100\r\n"
[a] ? RAW ":7\r\n"
[a] % RAW "*2\r\n+a\r\n+b\r\n"
[a] ?id RAW "%2\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$1\r\nx\r\n"
`)
	o := startFake(t, oracleHandler)
	// the target gets RAW frames rewritten by the table below
	rewrite := map[string]string{
		":100\r\n":           ":95\r\n",
		":7\r\n":             ":8\r\n",
		"*2\r\n+a\r\n+b\r\n": "*2\r\n+b\r\n+a\r\n",
		"%2\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$1\r\nx\r\n": "%2\r\n$2\r\nid\r\n:9\r\n$4\r\nmode\r\n$1\r\nx\r\n",
	}
	tg := startFake(t, func(args []string) (string, string) {
		if strings.EqualFold(args[0], "RAW") {
			return rewrite[args[1]], ""
		}
		return oracleHandler(args)
	})
	if diffs, err := Run(f, o, tg, fastOpt); err != nil || len(diffs) != 0 {
		t.Fatalf("markers should accept these: %v\n%s", err, Render(diffs))
	}
}

// withID answers ID with :id and IS <n> with +YES when n is that id, +NO
// otherwise; everything else as the fake oracle.
func withID(id string) func([]string) (string, string) {
	return func(args []string) (string, string) {
		switch strings.ToUpper(args[0]) {
		case "ID":
			return ":" + id + "\r\n", ""
		case "IS":
			if args[1] == "<"+id+">" {
				return "+YES\r\n", ""
			}
			return "+NO\r\n", ""
		}
		return oracleHandler(args)
	}
}

func TestRun_CaptureSubstitutesEachServersOwnValue(t *testing.T) {
	f := mustParse(t, `
[a] ? @capture cid ID
[b] IS <${cid}>
[b] @send IS <${cid}>
[b] <recv>
`)
	o := startFake(t, withID("5"))
	tg := startFake(t, withID("12"))
	if diffs, err := Run(f, o, tg, fastOpt); err != nil || len(diffs) != 0 {
		t.Fatalf("each server must get its own id back: %v\n%s", err, Render(diffs))
	}
	// a capture of something that is no integer or string
	bad := mustParse(t, `
[a] ? @capture x RAW "*0\r\n"
`)
	_, err := Run(bad, o, tg, fastOpt)
	var oe *OracleError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "no integer or string") {
		t.Fatalf("want an OracleError for the capture, got %v", err)
	}
}
