package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// The wire suite: raw bytes, malformed requests included, sent to
// redis-server and tumbler started with the same options; the raw replies
// and whether the server closed the connection must be the same. TestDiff
// sends only well-formed commands to default servers; this covers the
// protocol errors, authentication, maxclients, the idle timeout and
// protected mode.

// quiet is how long a connection may stay silent before its reply is
// taken as complete (a close ends it at once).
const quiet = 250 * time.Millisecond

// wireResult is what a server did with a step: its bytes, and whether it
// closed the connection.
type wireResult struct {
	data   []byte
	closed bool
}

func (r wireResult) String() string {
	s := strconv.Quote(string(r.data))
	if r.closed {
		s += " (closed)"
	}
	return s
}

// exchange writes send (if any) and reads until the connection closes or
// stays quiet for wait.
func exchange(c net.Conn, send string, wait time.Duration) (wireResult, error) {
	if send != "" {
		_ = c.SetWriteDeadline(time.Now().Add(ioTimeout))
		if _, err := io.WriteString(c, send); err != nil {
			return wireResult{closed: true}, nil // closed before we finished writing
		}
	}
	var r wireResult
	buf := make([]byte, 64<<10)
	for {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		n, err := c.Read(buf)
		r.data = append(r.data, buf[:n]...)
		var ne net.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &ne) && ne.Timeout():
			return r, nil
		default: // EOF or reset: closed
			r.closed = true
			return r, nil
		}
	}
}

// wireStep is one write on one of a case's connections.
type wireStep struct {
	conn  int    // which connection (opened on first use)
	send  string // raw bytes; "" only reads
	wait  time.Duration
	close bool // close the connection instead (its result: nothing)
}

type wireCase struct {
	name  string
	steps []wireStep
	// oracle, if set, must be in Redis's replies: the case tests what it
	// means to.
	oracle string
}

// namesIDs reports whether a case's steps name a connection's CLIENT ID
// ("{idK}": connection K's): then each connection is asked its ID as it
// opens (unrecorded), and ":{idK}" stands for it, as an integer, in the
// replies, which so compare across servers.
func (tc wireCase) namesIDs() bool {
	for _, st := range tc.steps {
		if strings.Contains(st.send, "{id") {
			return true
		}
	}
	return false
}

// s is a step on connection 0 with the default wait.
func s(send string) wireStep { return wireStep{send: send} }

// runWire runs one case against the server at addr.
func runWire(addr string, tc wireCase) ([]wireResult, error) {
	conns := map[int]net.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var out []wireResult
	ids, askIDs := map[int]string{}, tc.namesIDs()
	for _, st := range tc.steps {
		c := conns[st.conn]
		if st.close {
			if c != nil {
				c.Close()
				delete(conns, st.conn)
			}
			time.Sleep(quiet) // the server notices the close
			out = append(out, wireResult{})
			continue
		}
		if c == nil {
			var err error
			if c, err = net.DialTimeout("tcp", addr, ioTimeout); err != nil {
				return nil, err
			}
			conns[st.conn] = c
			if askIDs {
				r, err := exchange(c, "CLIENT ID\r\n", quiet)
				if err != nil || len(r.data) < 4 || r.data[0] != ':' {
					return nil, fmt.Errorf("CLIENT ID: %v %v", r, err)
				}
				ids[st.conn] = strings.TrimSuffix(string(r.data[1:]), "\r\n")
			}
		}
		wait := st.wait
		if wait == 0 {
			wait = quiet
		}
		send := st.send
		for k, id := range ids {
			send = strings.ReplaceAll(send, "{id"+strconv.Itoa(k)+"}", id)
		}
		r, err := exchange(c, send, wait)
		if err != nil {
			return nil, err
		}
		for k, id := range ids {
			r.data = bytes.ReplaceAll(r.data, []byte(":"+id+"\r\n"), []byte(":{id"+strconv.Itoa(k)+"}\r\n"))
		}
		out = append(out, r)
	}
	return out, nil
}

// wireDiff runs the cases against both servers, side by side.
func wireDiff(t *testing.T, redisAddr, tumblerAddr string, cases []wireCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type res struct {
				r   []wireResult
				err error
			}
			rc, tc2 := make(chan res, 1), make(chan res, 1)
			go func() { r, err := runWire(redisAddr, tc); rc <- res{r, err} }()
			go func() { r, err := runWire(tumblerAddr, tc); tc2 <- res{r, err} }()
			want, got := <-rc, <-tc2
			if want.err != nil || got.err != nil {
				t.Fatalf("redis: %v, tumbler: %v", want.err, got.err)
			}
			var all []byte
			for _, r := range want.r {
				all = append(all, r.data...)
			}
			if !bytes.Contains(all, []byte(tc.oracle)) {
				t.Fatalf("redis-server's replies %q lack %q: the case no longer tests what it should", all, tc.oracle)
			}
			kd, known := knownWireDiffs[t.Name()]
			differs := false
			for i := range tc.steps {
				if want.r[i].String() != got.r[i].String() {
					differs = true
					if known {
						t.Skipf("known diff (%s): %s\nredis   %v\ntumbler %v", kd.owner, kd.reason, want.r[i], got.r[i])
					}
					t.Errorf("step %d %q:\nredis   %v\ntumbler %v", i, trunc(tc.steps[i].send), want.r[i], got.r[i])
				}
			}
			if known && !differs {
				t.Errorf("listed in knownWireDiffs (%s) but now matches Redis: remove the entry", kd.reason)
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..." + strconv.Itoa(len(s)) + " bytes"
	}
	return s
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startRedisWith runs redis-server on host (a free port) with extra
// arguments until the test ends.
func startRedisWith(t *testing.T, host string, extra ...string) string {
	t.Helper()
	bin := proc.RedisBinary(t)
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", host,
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			"--dir", t.TempDir(), "--logfile", ""}, extra...)
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		proc.DieWithParent(cmd) // even if this test binary crashes
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		if waitListening(addr, exited) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return addr
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("cannot start redis-server %s: %s", strings.Join(args, " "), out.String())
		}
	}
}

// waitListening waits for addr to accept connections. It only connects:
// with protected mode or maxclients a command could not tell readiness.
func waitListening(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, ioTimeout); err == nil {
			c.Close()
			time.Sleep(50 * time.Millisecond) // the server notices the close
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestWire_Protocol(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	big := strings.Repeat("a", 70<<10)
	wireDiff(t, redis, tumbler, []wireCase{
		{"too big inline request", []wireStep{s(big)}, "too big inline request"},
		{"too big inline request after a command", []wireStep{s("PING\r\n" + big)}, ""},
		{"inline just under the limit", []wireStep{s("ECHO " + strings.Repeat("b", 60<<10) + "\r\n")}, ""},
		{"invalid multibulk length", []wireStep{s("*abc\r\n")}, "invalid multibulk length"},
		{"multibulk length too large", []wireStep{s("*1048577\r\n")}, ""},
		{"multibulk length negative", []wireStep{s("*-5\r\nPING\r\n")}, ""},
		{"multibulk length zero", []wireStep{s("*0\r\nPING\r\n")}, ""},
		{"invalid bulk length", []wireStep{s("*1\r\n$abc\r\n")}, "invalid bulk length"},
		{"negative bulk length", []wireStep{s("*1\r\n$-1\r\n")}, ""},
		{"bulk length over proto-max-bulk-len", []wireStep{s("*1\r\n$536870913\r\n")}, ""},
		{"expected dollar", []wireStep{s("*1\r\nfoo\r\n")}, "expected '$', got 'f'"},
		{"expected dollar got colon", []wireStep{s("*2\r\n$4\r\nECHO\r\n:1\r\n")}, ""},
		{"unbalanced quotes", []wireStep{s("SET \"a b\r\n")}, "unbalanced quotes in request"},
		{"unbalanced single quotes", []wireStep{s("SET 'a b\r\n")}, ""},
		{"quote followed by text", []wireStep{s("ECHO \"a\"b\r\n")}, ""},
		{"inline quoted escapes", []wireStep{s("ECHO \"a\\x41\\n\"\r\n")}, ""},
		{"inline tab separator", []wireStep{s("ECHO\tx\r\n")}, ""},
		{"inline single quote escapes", []wireStep{s("ECHO 'a\\'b\\n'\r\n")}, ""},
		{"inline escaped quote", []wireStep{s("ECHO \"a\\\"b\"\r\n")}, ""},
		{"empty inline lines", []wireStep{s("\r\n\n   \r\nPING\r\n")}, ""},
		{"inline with bare newline", []wireStep{s("PING\n")}, ""},
		{"inline carriage return then spaces", []wireStep{s("\r  \nPING\r\n")}, ""},
		{"inline two carriage returns", []wireStep{s("ECHO x\r\r\n")}, ""},
		{"inline carriage return inside", []wireStep{s("ECHO a\rb\r\n")}, ""},
		{"inline vertical tab and form feed", []wireStep{s("\v\fECHO\vx\r\n")}, ""},
		{"inline quote inside a word", []wireStep{s("ECHO a\"b c\"\r\n")}, ""},
		{"inline empty quoted words", []wireStep{s("SET \"\" ''\r\nGET \"\"\r\n")}, ""},
		{"inline short hex escape", []wireStep{s("ECHO \"\\x4\"\r\nECHO \"\\xZZ\"\r\n")}, ""},
		{"inline escapes outside quotes", []wireStep{s("ECHO a\\nb\r\n")}, ""},
		{"inline backslash at the end of quotes", []wireStep{s("ECHO \"a\\\"\r\n")}, ""},
		{"inline words after a quoted one", []wireStep{s("ECHO \"a\"\tb\r\n")}, ""},
		{"inline many requests", []wireStep{s(strings.Repeat("SET k v\r\nGET k\r\n", 200))}, ""},
		{"pipeline then error", []wireStep{s("PING\r\nECHO x\r\n*1\r\n$x\r\nPING\r\n")}, ""},
		{"unknown command inline", []wireStep{s("NOSUCH a b\r\n")}, ""},
		{"request split across writes", []wireStep{s("*2\r\n$4\r\nEC"), s("HO\r\n$2\r\nhi\r\n")}, ""},
		// Redis skips the two bytes after a bulk payload unread.
		{"bulk trailer not CRLF", []wireStep{s("*1\r\n$4\r\nPINGxx*2\r\n$4\r\nECHO\r\n$2\r\nhi\n\nPING\r\n")}, "+PONG\r\n$2\r\nhi\r\n+PONG"},
		{"big bulk trailer not CRLF", []wireStep{s("*2\r\n$4\r\nECHO\r\n$70000\r\n" + strings.Repeat("c", 70000) + "ab*1\r\n$4\r\nPING\r\n")}, "+PONG"},
		{"bulk trailer in its own write", []wireStep{s("*2\r\n$4\r\nECHO\r\n$2\r\nhi"), s("::"), s("*1\r\n$4\r\nPING\r\n")}, "+PONG"},
		// A header line ends at its first CR and the byte after it, any byte.
		{"header line CR then any byte", []wireStep{s("*2\r\n$4\rXECHO\r\n$2\rXhi\r\n*1\rX$4\r\nPING\r\n*-1\rXPING\r\n")}, "$2\r\nhi\r\n+PONG\r\n+PONG"},
		{"header line CR then CR", []wireStep{s("*1\r\r\n$4\r\nPING\r\n")}, "expected '$', got ' '"},
		{"bulk length CR then junk", []wireStep{s("*1\r\n$4\rx\nPING\r\n"), s("PING\r\n")}, "+PONG"},
		{"header line CR at the end of a write", []wireStep{s("*2\r\n$4\r"), s("XECHO\r\n$2\r"), s("Xhi\r\n")}, "$2\r\nhi"},
		{"count line of 64 KB then its CR", []wireStep{s("*" + strings.Repeat("1", 64<<10-1) + "\r\n")}, "invalid multibulk length"},
		{"header line LF only waits for a CR", []wireStep{s("*1\n"), s("$4\r\nPING\r\n")}, "invalid multibulk length"},
		{"bulk length LF only waits for a CR", []wireStep{s("*1\r\n$4\n"), s("PING\r\n")}, "invalid bulk length"},
		// CLIENT REPLY inside MULTI acts as EXEC runs it: OFF cuts EXEC's
		// array short (malformed, as Redis's), ON sends replies again.
		{"client reply off inside multi", []wireStep{s("MULTI\r\nPING\r\nCLIENT REPLY OFF\r\nPING\r\nEXEC\r\nPING\r\n")}, "*3\r\n+PONG\r\n"},
		{"client reply on inside multi", []wireStep{s("CLIENT REPLY OFF\r\nMULTI\r\nPING\r\nCLIENT REPLY ON\r\nECHO y\r\nEXEC\r\nPING\r\n")}, "+OK\r\n$1\r\ny\r\n+PONG"},
		// CLIENT KILL of itself inside MULTI: the rest of EXEC's replies
		// are dropped (a malformed reply, as Redis's); its writes are made.
		{"client kill of itself inside multi", []wireStep{
			// a user of its own: the other cases run at the same time
			s("ACL SETUSER wire-killme on nopass +@all ~*\r\nAUTH wire-killme x\r\n"),
			s("MULTI\r\nPING\r\nCLIENT KILL USER wire-killme SKIPME no\r\nPING\r\nCLIENT REPLY ON\r\nSET kill:after 1\r\nEXEC\r\nPING\r\n"),
			{conn: 1, send: "GET kill:after\r\n"}}, "*5\r\n+PONG\r\n:1\r\n"},
		{"client reply skip inside multi", []wireStep{s("MULTI\r\nCLIENT REPLY SKIP\r\nECHO x\r\nEXEC\r\nPING\r\nECHO z\r\n")}, "$1\r\nx\r\n$1\r\nz"},
	})
}

func TestWire_RequirePass(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1", "--requirepass", "secret")
	tumbler := server.RunT(t, server.WithConfig(func(c *server.Config) { c.RequirePass = "secret" })).Addr()
	wireDiff(t, redis, tumbler, []wireCase{
		{"NOAUTH", []wireStep{s("GET k\r\n"), s("*1\r\n$4\r\nPING\r\n")}, "-NOAUTH Authentication required."},
		{"WRONGPASS", []wireStep{s("AUTH nope\r\n"), s("AUTH default nope\r\n"), s("AUTH nobody secret\r\n")}, "-WRONGPASS"},
		{"AUTH arity", []wireStep{s("AUTH\r\n"), s("AUTH a b c\r\n")}, ""},
		{"HELLO AUTH wrong", []wireStep{s("HELLO 3 AUTH default nope\r\n"), s("HELLO 2\r\n")}, ""},
		{"AUTH then command", []wireStep{s("AUTH secret\r\n"), s("GET k\r\n")}, ""},
		{"allowed before AUTH", []wireStep{s("QUIT\r\n")}, ""},
		{"protocol error before AUTH", []wireStep{s("*1\r\n$x\r\n")}, ""},
		{"big multibulk before AUTH", []wireStep{s("*100\r\n$4\r\nPING\r\n")}, ""},
		{"big bulk before AUTH", []wireStep{s("*1\r\n$100000\r\n")}, ""},
	})
}

func TestWire_MaxClients(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1", "--maxclients", "2")
	tumbler := server.RunT(t, server.WithConfig(func(c *server.Config) { c.MaxClients = 2 })).Addr()
	full := wireCase{"third connection", []wireStep{
		{conn: 0, send: "PING\r\n"},
		{conn: 1, send: "PING\r\n"},
		{conn: 2, send: "PING\r\n"},
		{conn: 2, send: ""},
	}, "max number of clients"}
	// Not parallel: the connection count is the server's.
	for _, tc := range []wireCase{full} {
		want, err := runWire(redis, tc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(want), "-ERR max number of clients reached") {
			t.Fatalf("redis-server: %v", want)
		}
		got, err := runWire(tumbler, tc)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%s:\nredis   %v\ntumbler %v", tc.name, want, got)
		}
	}
}

func TestWire_IdleTimeout(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1", "--timeout", "1")
	tumbler := server.RunT(t, server.WithConfig(func(c *server.Config) { c.Timeout = time.Second })).Addr()
	// Redis checks idle clients from its cron, at hz 10, in batches. (No
	// MONITOR case: the cases run in parallel, and a monitor would see the
	// others' commands; server/limits_test.go covers its exemption.)
	idle := 3 * time.Second
	wireDiff(t, redis, tumbler, []wireCase{
		{"idle connection closed", []wireStep{s("PING\r\n"), {wait: idle}}, ""},
		{"subscriber exempt", []wireStep{s("SUBSCRIBE ch\r\n"), {wait: idle}, s("PING\r\n")}, ""},
		{"blocked client exempt", []wireStep{s("BLPOP nokey 0\r\n"), {wait: idle}}, ""},
		{"unsubscribed client times out", []wireStep{s("SUBSCRIBE ch\r\n"), s("UNSUBSCRIBE\r\n"), {wait: idle}}, ""},
		{"tracking client times out", []wireStep{s("HELLO 3\r\n"), s("CLIENT TRACKING ON\r\n"), {wait: idle}}, ""},
	})
}

// A pause holds a command, and what follows it on its connection; the
// replies of what came before it go out meanwhile. Servers of its own: a
// pause would hold the other cases' commands.
func TestWire_ClientPause(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	wireDiff(t, redis, tumbler, []wireCase{
		{"replies before the held write go out", []wireStep{
			s("CLIENT PAUSE 5000 WRITE\r\n"),
			{conn: 1, send: "GET k\r\nSET k 1\r\nGET k\r\n"},
			s("CLIENT UNPAUSE\r\n"),
			{conn: 1},
		}, "$-1\r\n+OK\r\n+OK\r\n"}, // the GET answered before the UNPAUSE
	})
}

// A pause keeps the dataset still: a read sees an expired key missing but
// leaves it (DBSIZE counts it) until the pause ends. The pause starts at
// the end of the transaction that set the key. Servers of its own: the
// cases of TestWire_ClientPause run in parallel, and pauses are global.
func TestWire_ClientPauseKeepsExpiredKeys(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	wireDiff(t, redis, tumbler, []wireCase{
		{"expired keys stay in place during a pause", []wireStep{
			s("MULTI\r\nSET pk v PX 1\r\nCLIENT PAUSE 5000 WRITE\r\nEXEC\r\n"),
			{send: "PING\r\n", wait: 100 * time.Millisecond},
			s("GET pk\r\nEXISTS pk\r\nDBSIZE\r\n"),
			s("CLIENT UNPAUSE\r\nGET pk\r\nDBSIZE\r\n"),
		}, "$-1\r\n:0\r\n:1\r\n"},
	})
}

// CLIENT PAUSE WRITE lets a script flagged no-writes run, alone or queued
// for EXEC (Redis's evalGetCommandFlags). Servers of its own, as above.
func TestWire_ClientPauseNoWritesScripts(t *testing.T) {
	redis := startRedisWith(t, "127.0.0.1")
	tumbler := server.RunT(t).Addr()
	ro := string(Encode([]string{"EVAL", "#!lua flags=no-writes\nreturn 12", "0"}))
	wireDiff(t, redis, tumbler, []wireCase{
		{"no-writes scripts run during a write pause", []wireStep{
			s("CLIENT PAUSE 5000 WRITE\r\n"),
			{conn: 1, send: ro + "MULTI\r\n" + ro + ro + "EXEC\r\n"},
			s("CLIENT UNPAUSE\r\n"),
		}, ":12\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:12\r\n:12\r\n"},
	})
}

// Protected mode refuses clients whose address is not a loopback one. To
// get such a client without any traffic leaving loopback, the test runs
// itself again in a network namespace of its own (unshare --net, as root)
// whose lo also carries netnsAddr: both servers listen there, and the
// client connects from it. Without unshare, ip or root it skips (tumbler's
// own DENIED tests are in server/auth_test.go).
func TestWire_ProtectedMode(t *testing.T) {
	if os.Getenv(netnsEnv) != "1" {
		runInNetns(t, "^TestWire_ProtectedMode$")
		return
	}
	redis := startRedisWith(t, netnsAddr)
	tumbler := server.RunT(t, server.WithConfig(func(c *server.Config) { c.Addr = net.JoinHostPort(netnsAddr, "0") })).Addr()
	wireDiff(t, redis, tumbler, []wireCase{
		{"DENIED", []wireStep{s("PING\r\n")}, "-DENIED Redis is running in protected mode"},
	})
}

const (
	netnsEnv  = "TUMBLER_IN_NETNS"
	netnsAddr = "10.99.0.1" // exists only inside the test's own namespace
)

// runInNetns runs the tests matching run in this test binary again, inside
// a new network namespace with lo up and netnsAddr on it.
func runInNetns(t *testing.T, run string) {
	t.Helper()
	_, errU := exec.LookPath("unshare")
	_, errIP := exec.LookPath("ip")
	if errU != nil || errIP != nil || os.Geteuid() != 0 {
		t.Skip("needs unshare, ip and root to make a network namespace of its own")
	}
	script := `ip link set lo up && ip addr add ` + netnsAddr + `/32 dev lo && exec "$0" "$@"`
	cmd := exec.Command("unshare", "--net", "sh", "-c", script, os.Args[0], "-test.run", run, "-test.v")
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("Operation not permitted")) {
			t.Skipf("no network namespace here: %s", out)
		}
		t.Fatalf("in a network namespace: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS")) {
		t.Fatalf("the test did not run in the namespace:\n%s", out)
	}
}
