package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// rawClient speaks RESP over a plain TCP connection and returns replies
// as raw bytes, so tests check exactly what goes over the wire.
type rawClient struct {
	t    testing.TB
	conn net.Conn
	rd   *bufio.Reader
}

func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	return dialNet(t, "tcp", addr)
}

// dialNet is dial on a network of net.Dial's ("unix" with a path).
func dialNet(t testing.TB, network, addr string) *rawClient {
	t.Helper()
	conn, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{t: t, conn: conn, rd: bufio.NewReader(conn)}
}

func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (c *rawClient) send(raw string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write([]byte(raw)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// do sends one command and returns its raw reply.
func (c *rawClient) do(args ...string) string {
	c.t.Helper()
	c.send(encode(args...))
	return c.read()
}

// read returns one complete raw reply.
func (c *rawClient) read() string {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // (replies behind long work under -race)
	var b strings.Builder
	if err := readReply(c.rd, &b); err != nil {
		c.t.Fatalf("read: %v (so far %q)", err, b.String())
	}
	return b.String()
}

func readReply(rd *bufio.Reader, b *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	body := strings.TrimSuffix(line, "\r\n")
	if len(body) == 0 {
		return fmt.Errorf("empty line")
	}
	switch body[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body[1:])
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io_ReadFull(rd, buf); err != nil {
			return err
		}
		b.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body[1:])
		if err != nil {
			return err
		}
		if body[0] == '%' || body[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readReply(rd, b); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", body)
}

func io_ReadFull(rd *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := rd.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func dialErr(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }

// expectNotListening checks that srv, closed, no longer accepts
// connections at addr. The freed port may already be another listener's
// (other packages' tests run beside these), so a dial that connects is
// checked against srv's own listener.
func expectNotListening(t *testing.T, srv *Server, addr string) {
	t.Helper()
	nc, err := dialErr(addr)
	if err != nil {
		return
	}
	nc.Close()
	ln := srv.ln.(*net.TCPListener)
	_ = ln.SetDeadline(time.Now().Add(time.Second)) // an open one times out, a closed one fails at once
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed server still accepts connections at %s (Accept: %v)", addr, err)
	}
}

// CLIENT LIST lists connections in the order they were made, with Redis's
// 'x' flag and queued-command count inside MULTI, and 'b' for a client
// waiting in a blocking command or held by CLIENT PAUSE.
func TestClientList_OrderMultiAndBlockedFlags(t *testing.T) {
	srv := RunT(t, WithManualClock())
	admin := dial(t, srv.Addr())
	mx, bl, ps := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	for c, name := range map[*rawClient]string{mx: "mx", bl: "bl", ps: "ps"} {
		c.do("CLIENT", "SETNAME", name)
	}
	mx.do("MULTI")
	mx.do("SET", "k", "v")
	mx.do("GET", "k")
	bl.send(encode("BLPOP", "nosuch", "0"))
	eventually(t, "BLPOP blocked", func() bool { return srv.Engine().BlockedClients() == 1 })
	admin.do("CLIENT", "PAUSE", "100000", "WRITE")
	ps.send(encode("SET", "x", "y"))
	eventually(t, "SET held", func() bool { return srv.waitingCommands() == 1 })
	var got []string
	for _, line := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
		f := strings.Fields(line)
		var name, flags, multi string
		for _, kv := range f {
			switch k, v, _ := strings.Cut(kv, "="); k {
			case "name":
				name = v
			case "flags":
				flags = v
			case "multi":
				multi = v
			}
		}
		if name != "" {
			got = append(got, name+" "+flags+" "+multi)
		}
	}
	want := []string{"mx x 2", "bl b -1", "ps b -1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("CLIENT LIST (named clients) = %q, want %q", got, want)
	}
	admin.do("CLIENT", "UNPAUSE")
	if got := ps.read(); got != "+OK\r\n" {
		t.Fatalf("SET after the pause = %q", got)
	}
	if got := mx.do("EXEC"); !strings.HasPrefix(got, "*2\r\n") {
		t.Fatalf("EXEC = %q", got)
	}
	if line := admin.do("CLIENT", "LIST"); !strings.Contains(line, "name=mx age=") || !strings.Contains(line, "name=ps age=") {
		t.Fatalf("CLIENT LIST = %q", line)
	}
	for _, line := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
		if strings.Contains(line, "name=mx ") && (!strings.Contains(line, " flags=N ") || !strings.Contains(line, " multi=-1 ")) {
			t.Fatalf("after EXEC: %q", line)
		}
		if strings.Contains(line, "name=ps ") && !strings.Contains(line, " flags=N ") {
			t.Fatalf("after the pause: %q", line)
		}
	}
}

// CLIENT HELP and ACL HELP answer (they replied "unknown subcommand
// 'help'. Try CLIENT HELP."), with the lines of what tumbler has.
func TestHelp_ClientAndACL(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"CLIENT", engine.ClientHelp},
		{"ACL", engine.ACLHelp},
	} {
		var b strings.Builder
		b.WriteString("*" + strconv.Itoa(len(tc.want)) + "\r\n")
		for _, l := range tc.want {
			b.WriteString("+" + l + "\r\n")
		}
		if got := c.do(tc.cmd, "HELP"); got != b.String() {
			t.Errorf("%s HELP = %q", tc.cmd, got)
		}
	}
	help := strings.Join(engine.ClientHelp, "\n")
	for _, sub := range []string{"CACHING", "GETNAME", "KILL", "LIST", "PAUSE", "UNPAUSE", "REPLY", "TRACKING", "UNBLOCK", "NO-EVICT", "NO-TOUCH", "SETINFO"} {
		if !strings.Contains(help, "\n"+sub+" ") && !strings.Contains(help, "\n"+sub+"\n") {
			t.Errorf("CLIENT HELP lacks %s", sub)
		}
		if got := c.do("COMMAND", "INFO", "client|"+strings.ToLower(sub)); strings.HasPrefix(got, "*1\r\n$-1") || got == "*1\r\n_\r\n" {
			t.Errorf("CLIENT HELP lists %s, which tumbler lacks", sub)
		}
	}
}

// CLIENT REPLY OFF/SKIP/ON: every expected byte stream is redis-server
// 7.0.15's for the same pipeline (errors and a blocking command's reply
// included). Inside MULTI see TestClientReply_InsideMulti.
func TestClientReply_OffSkipOn(t *testing.T) {
	srv := RunT(t)
	for _, tc := range []struct {
		cmds [][]string
		want string
	}{
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"SET", "rk", "1"}, {"GET", "rk"}, {"NOSUCH"}, {"CLIENT", "REPLY", "ON"}, {"GET", "rk"}}, "+OK\r\n$1\r\n1\r\n"},
		{[][]string{{"CLIENT", "REPLY", "SKIP"}, {"SET", "rk", "2"}, {"GET", "rk"}, {"CLIENT", "REPLY", "SKIP"}, {"CLIENT", "REPLY", "SKIP"}, {"GET", "rk"}, {"GET", "rk"}}, "$1\r\n2\r\n$1\r\n2\r\n"},
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "SKIP"}, {"GET", "rk"}, {"CLIENT", "REPLY", "ON"}, {"PING"}}, "+OK\r\n+PONG\r\n"},
		{[][]string{{"CLIENT", "REPLY", "BOGUS"}, {"CLIENT", "REPLY"}, {"CLIENT", "REPLY", "ON", "x"}, {"CLIENT", "REPLY", "ON"}},
			"-ERR syntax error\r\n-ERR wrong number of arguments for 'client|reply' command\r\n-ERR wrong number of arguments for 'client|reply' command\r\n+OK\r\n"},
		{[][]string{{"CLIENT", "REPLY", "SKIP"}, {"MULTI"}, {"SET", "rk", "3"}, {"EXEC"}, {"GET", "rk"}}, "+QUEUED\r\n*1\r\n+OK\r\n$1\r\n3\r\n"},
		{[][]string{{"DEL", "rl"}, {"CLIENT", "REPLY", "SKIP"}, {"BLPOP", "rl", "0.1"}, {"PING"}}, ":0\r\n+PONG\r\n"},
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"CLIENT", "REPLY", "BAD"}, {"CLIENT", "REPLY", "ON"}}, "+OK\r\n"},
		// RESET turns replies on again, its own included (a pooled
		// connection cleaned with RESET), but not when SKIP silences it
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"RESET"}, {"PING"}}, "+RESET\r\n+PONG\r\n"},
		{[][]string{{"CLIENT", "REPLY", "SKIP"}, {"RESET"}, {"PING"}}, "+PONG\r\n"},
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"HELLO", "3"}, {"RESET"}, {"PING"}}, "+RESET\r\n+PONG\r\n"},
	} {
		c := dial(t, srv.Addr())
		var b strings.Builder
		for _, cmd := range tc.cmds {
			b.WriteString(encode(cmd...))
		}
		b.WriteString(encode("ECHO", "end")) // replies are on again by then in every case
		c.send(b.String())
		want := tc.want + "$3\r\nend\r\n"
		var got strings.Builder
		for got.Len() < len(want) && strings.Count(got.String(), "\r\n") < strings.Count(want, "\r\n") {
			got.WriteString(c.read())
		}
		if got.String() != want {
			t.Errorf("%q:\n got %q\nwant %q", tc.cmds, got.String(), want)
		}
		c.conn.Close()
	}
}

// CLIENT REPLY inside MULTI acts when EXEC runs it, as in Redis: OFF
// drops the rest of EXEC's replies after the array header EXEC wrote for
// them (a malformed reply, byte for byte Redis's), ON sends them again,
// SKIP skips the command after EXEC. Every expected byte stream is
// redis-server 7.0.15's. Before, OFF applied only after EXEC.
func TestClientReply_InsideMulti(t *testing.T) {
	srv := RunT(t)
	for _, tc := range []struct {
		cmds [][]string
		want string
	}{
		{[][]string{{"MULTI"}, {"CLIENT", "REPLY", "OFF"}, {"PING"}, {"EXEC"}, {"PING"}}, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n"},
		{[][]string{{"MULTI"}, {"PING"}, {"CLIENT", "REPLY", "OFF"}, {"PING"}, {"EXEC"}, {"PING"}}, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+PONG\r\n"},
		{[][]string{{"MULTI"}, {"CLIENT", "REPLY", "SKIP"}, {"PING"}, {"ECHO", "x"}, {"EXEC"}, {"PING"}}, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+PONG\r\n$1\r\nx\r\n"},
		{[][]string{{"CLIENT", "REPLY", "OFF"}, {"MULTI"}, {"PING"}, {"CLIENT", "REPLY", "ON"}, {"PING"}, {"EXEC"}, {"PING"}}, "+OK\r\n+PONG\r\n+PONG\r\n"},
		{[][]string{{"MULTI"}, {"CLIENT", "REPLY", "OFF"}, {"PING"}, {"CLIENT", "REPLY", "ON"}, {"ECHO", "y"}, {"EXEC"}, {"PING"}}, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*4\r\n+OK\r\n$1\r\ny\r\n+PONG\r\n"},
	} {
		c := dial(t, srv.Addr())
		var b strings.Builder
		for _, cmd := range tc.cmds {
			b.WriteString(encode(cmd...))
		}
		c.send(b.String())
		// Raw bytes: a cut array would swallow what follows it. As many
		// as are wanted (however slow), then whatever else comes in 300 ms.
		got := make([]byte, 0, len(tc.want))
		buf := make([]byte, 4096)
		_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			n, err := c.conn.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break // the deadline: nothing more comes
			}
			if len(got) >= len(tc.want) {
				_ = c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			}
		}
		if string(got) != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.cmds, got, tc.want)
		}
		c.conn.Close()
	}
}

// CLIENT INFO and CLIENT LIST show each connection's socket descriptor
// (fd=), as Redis does: in-process, it is one of this process's sockets,
// and two connections have two.
func TestClientList_FdIsTheSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/fd")
	}
	srv := RunT(t)
	fds := map[int]bool{}
	for _, c := range []*rawClient{dial(t, srv.Addr()), dial(t, srv.Addr())} {
		info := c.do("CLIENT", "INFO")
		_, rest, _ := strings.Cut(info, " fd=")
		fd, err := strconv.Atoi(strings.Fields(rest)[0])
		if err != nil || fd <= 2 {
			t.Fatalf("CLIENT INFO fd: %q", info)
		}
		if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil || !strings.HasPrefix(target, "socket:") {
			t.Fatalf("fd=%d is %q (%v), not a socket", fd, target, err)
		}
		fds[fd] = true
	}
	if len(fds) != 2 {
		t.Fatalf("two connections share fd %v", fds)
	}
}

// CLIENT INFO and CLIENT LIST show the client's database; RESET selects 0.
func TestClient_ShowsDatabase(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	admin := dial(t, srv.Addr())
	c.do("CLIENT", "SETNAME", "dbshow")
	if got := c.do("SELECT", "13"); got != "+OK\r\n" {
		t.Fatalf("SELECT 13 = %q", got)
	}
	if got := c.do("CLIENT", "INFO"); !strings.Contains(got, " db=13 ") {
		t.Fatalf("CLIENT INFO: %q", got)
	}
	found := false
	for _, line := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
		if strings.Contains(line, " name=dbshow ") {
			found = true
			if !strings.Contains(line, " db=13 ") {
				t.Fatalf("CLIENT LIST: %q", line)
			}
		}
	}
	if !found {
		t.Fatal("CLIENT LIST lacks the client")
	}
	c.do("SET", "k", "13")
	if got := c.do("RESET"); got != "+RESET\r\n" {
		t.Fatal(got)
	}
	if got := c.do("CLIENT", "INFO"); !strings.Contains(got, " db=0 ") {
		t.Fatalf("CLIENT INFO after RESET: %q", got)
	}
	if got := c.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("GET after RESET found database 13's key: %q", got)
	}
}

// CLIENT LIST's input fields: the asking client's qbuf counts its batch's
// requests and what came after them, argv-mem its command's arguments; a
// client waiting in the middle of a request shows the bytes it sent, and
// one in MULTI the size of its queue, back to 0 once EXEC has run, one
// blocked in BLPOP its command's arguments until served (compat/diff's TestClientListInputFields compares them with Redis's).
func TestClientList_InputFields(t *testing.T) {
	srv := RunT(t)
	admin, part, mx := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	part.do("CLIENT", "SETNAME", "part")
	mx.do("CLIENT", "SETNAME", "mx")
	mx.do("MULTI")
	mx.do("SET", "k", "v")
	part.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nab")
	fieldsOf := func(name string) string {
		t.Helper()
		for _, line := range strings.Split(admin.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " name="+name+" ") {
				_, rest, _ := strings.Cut(line, " multi=")
				f, _, _ := strings.Cut(rest, " rbs=")
				return "multi=" + f
			}
		}
		t.Fatalf("no client named %s", name)
		return ""
	}
	eventually(t, "the partial request read", func() bool {
		return strings.Contains(fieldsOf("part"), " qbuf=2 ")
	})
	// as Redis: what its parser would not have taken yet, and the
	// complete arguments
	if got, want := fieldsOf("part"), "multi=-1 qbuf=2 qbuf-free="; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " argv-mem=4 multi-mem=0") {
		t.Errorf("waiting mid-request: %q", got)
	}
	// An argument of 32 KB or more (PROTO_MBULK_BIG_ARG): Redis sizes its
	// query buffer for the whole of it once its header is read, and the
	// room for the rest is qbuf-free; below that, nothing is reserved.
	big, small := dial(t, srv.Addr()), dial(t, srv.Addr())
	big.do("CLIENT", "SETNAME", "big")
	small.do("CLIENT", "SETNAME", "small")
	big.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000\r\n" + strings.Repeat("x", 20_000))
	small.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$32767\r\nab")
	eventually(t, "the partial large argument read", func() bool {
		return strings.Contains(fieldsOf("big"), " qbuf=20000 ")
	})
	if got, want := fieldsOf("big"), "multi=-1 qbuf=20000 qbuf-free=380002 argv-mem=4 multi-mem=0"; got != want {
		t.Errorf("waiting in a large argument: %q, want %q", got, want)
	}
	eventually(t, "the partial argument read", func() bool {
		return strings.Contains(fieldsOf("small"), " qbuf=2 ")
	})
	if got := fieldsOf("small"); !strings.Contains(got, " qbuf-free=") || strings.Contains(got, " qbuf-free=32767 ") {
		t.Errorf("waiting in a 32767-byte argument: %q", got)
	}
	if free, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(fieldsOf("small"), "multi=-1 qbuf=2 qbuf-free="))[0]); free >= 32767 {
		t.Errorf("a 32767-byte argument reserved %d bytes: Redis reserves from 32768", free)
	}
	// Nor is the room counted before the commands ahead of it have run:
	// Redis parses its header only then.
	ahead := dial(t, srv.Addr())
	ahead.send(encode("CLIENT", "INFO") + "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000\r\nxx")
	info := ahead.read()
	_, after, _ := strings.Cut(info, " qbuf-free=")
	if free, err := strconv.Atoi(strings.Fields(after + " ")[0]); err != nil || free >= 100_000 {
		t.Errorf("CLIENT INFO ahead of a large argument counted its room: %q", info)
	}
	if got := fieldsOf("mx"); !strings.HasPrefix(got, "multi=1 qbuf=0 ") || !strings.HasSuffix(got, " argv-mem=0 multi-mem=29") {
		t.Errorf("in MULTI: %q", got)
	}
	admin.do("CLIENT", "SETNAME", "admin")
	if got := fieldsOf("admin"); !strings.HasPrefix(got, "multi=-1 qbuf=26 ") || !strings.HasSuffix(got, " argv-mem=10 multi-mem=0") {
		t.Errorf("the asking client: %q", got)
	}
	mx.do("EXEC")
	if got := fieldsOf("mx"); !strings.HasPrefix(got, "multi=-1 qbuf=0 ") || !strings.HasSuffix(got, " multi-mem=0") {
		t.Errorf("after EXEC: %q", got)
	}
	bl := dial(t, srv.Addr())
	bl.do("CLIENT", "SETNAME", "bl")
	bl.send(encode("BLPOP", "nosuchlist", "0"))
	// (The engine counts the client blocked a moment before its
	// goroutine publishes the blocked command's arguments.)
	eventually(t, "BLPOP blocked, its arguments shown", func() bool {
		return srv.Engine().BlockedClients() == 1 && strings.HasSuffix(fieldsOf("bl"), " argv-mem=16 multi-mem=0")
	})
	admin.do("RPUSH", "nosuchlist", "x")
	if got := bl.read(); got != "*2\r\n$10\r\nnosuchlist\r\n$1\r\nx\r\n" {
		t.Fatalf("BLPOP = %q", got)
	}
	// (and drops them a moment after its reply is written)
	eventually(t, "the served BLPOP's arguments gone", func() bool { return strings.HasSuffix(fieldsOf("bl"), " argv-mem=0 multi-mem=0") })
	part.send("cdefghij\r\n")
	if got := part.read(); got != "+OK\r\n" {
		t.Fatalf("SET = %q", got)
	}
	if got := fieldsOf("part"); !strings.HasPrefix(got, "multi=-1 qbuf=0 ") {
		t.Errorf("after the request: %q", got)
	}
}
