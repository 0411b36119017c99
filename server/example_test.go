package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
	"github.com/tumblerdb/tumbler/server"
)

// Start a tumbler on a free loopback port, take a lock and release it.
func Example() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	send := func(cmd string) string {
		fmt.Fprintf(conn, "%s\r\n", cmd) // inline commands, as redis-cli can send them
		line, _ := rd.ReadString('\n')
		return line[:len(line)-2]
	}
	fmt.Println(send("SET lock:orders tok1 PX 30000 NX"))
	fmt.Println(send("SET lock:orders tok2 PX 30000 NX"))
	fmt.Println(send(`EVAL "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end" 1 lock:orders tok1`))
	// Output:
	// +OK
	// $-1
	// :1
}

// The release and extend scripts every Redis lock client uses, in the
// shape redsync and bsm/redislock send them.
const (
	release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	extend  = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)

// In a test, RunT takes the test's *testing.T, starts a server on a free
// loopback port and closes it when the test ends. Here a stand-in plays t.
func ExampleRunT() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.cleanup()

	srv := server.RunT(t, server.WithManualClock())
	c := dialExample(srv.Addr())
	fmt.Println(c.do("SET", "lock", "me", "PX", "30000", "NX"))
	fmt.Println(srv.TTL("lock"))
	// Output:
	// OK
	// 30s
}

// Advance moves a manual clock: a 30-second lock expires at once, with no
// sleeping, and another client can take it. As in Redis, a key lives
// through its deadline's millisecond and is gone once the clock passes it.
func ExampleServer_Advance() {
	srv := startManual()
	defer srv.Close()
	a, b := dialExample(srv.Addr()), dialExample(srv.Addr())

	fmt.Println(a.do("SET", "lock", "a", "PX", "30000", "NX"))
	srv.Advance(30 * time.Second)
	fmt.Println(b.do("SET", "lock", "b", "PX", "30000", "NX")) // still held: PTTL 0
	srv.Advance(time.Millisecond)
	fmt.Println(b.do("SET", "lock", "b", "PX", "30000", "NX"))   // expired: b takes it
	fmt.Println(a.do("EVAL", extend, "1", "lock", "a", "30000")) // a finds out
	// Output:
	// OK
	// (nil)
	// OK
	// (integer) 0
}

// JumpWallClock moves only the wall clock, as an NTP step does: the
// lock's TTL does not change (tumbler's deadlines are monotonic), while
// the absolute expiry time reported for it moves with the wall clock.
func ExampleServer_JumpWallClock() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", Clock: expiry.NewManualClock(time.Unix(1_700_000_000, 0))})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	c := dialExample(srv.Addr())

	c.do("SET", "lock", "me", "PX", "60000")
	fmt.Println(c.do("PEXPIRETIME", "lock"))
	srv.JumpWallClock(time.Hour)
	fmt.Println(c.do("PTTL", "lock"))
	fmt.Println(c.do("PEXPIRETIME", "lock"))
	// Output:
	// (integer) 1700000060000
	// (integer) 60000
	// (integer) 1700003660000
}

// Pause stalls the server as a long GC pause or a stopped process would.
// On a manual clock the pause lasts until Advance moves the clock past
// it: here the holder's extend is stuck in a 10-second stall, the
// 8-second lock expires meanwhile, and the extend fails when it runs.
// WaitHeld makes sure the extend reached the server and is held before
// the clock moves.
func ExampleServer_Pause() {
	srv := startManual()
	defer srv.Close()
	holder := dialExample(srv.Addr())
	fmt.Println(holder.do("SET", "lock", "tok", "PX", "8000", "NX"))

	srv.Pause(10 * time.Second)
	extended := make(chan string)
	go func() { extended <- holder.do("EVAL", extend, "1", "lock", "tok", "8000") }()
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("held:", srv.Held())
	srv.Advance(10 * time.Second) // the stall ends; the lock expired during it
	fmt.Println(<-extended)

	other := dialExample(srv.Addr())
	fmt.Println(other.do("SET", "lock", "other", "PX", "8000", "NX"))
	// Output:
	// OK
	// held: 1
	// (integer) 0
	// OK
}

// FailNextCmd makes a command fail with the error of your choice: here the
// release is refused once, as a failing replica would refuse it.
func ExampleServer_FailNextCmd() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	srv.FailNextCmd("eval", 1, "READONLY You can't write against a read only replica.")
	fmt.Println(c.do("EVAL", release, "1", "lock", "tok"))
	fmt.Println(c.do("EVAL", release, "1", "lock", "tok"))
	// Output:
	// (error) READONLY You can't write against a read only replica.
	// (integer) 1
}

// Restart(false) is a crash of a node without persistence: the lock it
// held is gone. With a restart delay (Config.RestartDelay, --restart-delay)
// the restarted node refuses to grant locks until the longest lock it
// could have held has expired.
func ExampleServer_Restart() {
	srv := server.New(server.Config{
		Addr:         "127.0.0.1:0",
		Clock:        expiry.NewManualClock(time.Now()),
		RestartDelay: 30 * time.Second, // the longest lock TTL in use
	})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Advance(30 * time.Second) // the delay applies to the first start too

	c := dialExample(srv.Addr())
	fmt.Println(c.do("SET", "lock", "a", "PX", "30000", "NX"))
	if err := srv.Restart(false); err != nil {
		panic(err)
	}
	c = dialExample(srv.Addr()) // the old connection died with the old process
	fmt.Println(c.do("GET", "lock"))
	fmt.Println(c.do("SET", "lock", "b", "PX", "30000", "NX")) // refused, as if held
	srv.Advance(30 * time.Second)
	fmt.Println(c.do("SET", "lock", "b", "PX", "30000", "NX"))
	// Output:
	// OK
	// (nil)
	// (nil)
	// OK
}

// Commands shows what clients sent, in order.
func ExampleServer_Commands() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", CommandLog: 100})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	c := dialExample(srv.Addr())
	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	c.do("EVAL", release, "1", "lock", "tok")

	for _, r := range srv.Commands() {
		fmt.Println(r.Name(), r.Args[1:2])
	}
	// Output:
	// set [lock]
	// eval [if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end]
}

// RunN starts independent servers for Redlock. Two of five nodes crash
// and come back empty: a second client then finds a majority free while
// the first still believes it holds the lock.
func ExampleRunN() {
	t := &exampleT{}
	defer t.cleanup()
	nodes := server.RunN(t, 5, server.WithManualClock())

	nodes[3].FailNextCmd("set", 1, "ERR unreachable") // A cannot reach nodes 3 and 4
	nodes[4].FailNextCmd("set", 1, "ERR unreachable")
	fmt.Println("A holds the lock on", grants(nodes, "A"), "of 5 nodes")
	nodes[1].Restart(false)
	nodes[2].Restart(false)
	fmt.Println("B holds the lock on", grants(nodes, "B"), "of 5 nodes")
	// Output:
	// A holds the lock on 3 of 5 nodes
	// B holds the lock on 4 of 5 nodes
}

// AdvanceAll moves every node's clock at once: the lock a client took on
// a majority expires everywhere together, and the next client gets it.
func ExampleAdvanceAll() {
	t := &exampleT{}
	defer t.cleanup()
	nodes := server.RunN(t, 3, server.WithManualClock())

	fmt.Println("A holds the lock on", grants(nodes, "A"), "of 3 nodes")
	server.AdvanceAll(29*time.Second, nodes...)
	fmt.Println("B holds the lock on", grants(nodes, "B"), "of 3 nodes")
	server.AdvanceAll(time.Second+time.Millisecond, nodes...)
	fmt.Println("B holds the lock on", grants(nodes, "B"), "of 3 nodes")
	// Output:
	// A holds the lock on 3 of 3 nodes
	// B holds the lock on 0 of 3 nodes
	// B holds the lock on 3 of 3 nodes
}

// ---- helpers for the examples ----

// grants asks every node for the lock on behalf of client, and counts
// the nodes that grant it.
func grants(nodes []*server.Server, client string) int {
	n := 0
	for _, node := range nodes {
		if dialExample(node.Addr()).do("SET", "lock", client, "PX", "30000", "NX") == "OK" {
			n++
		}
	}
	return n
}

func startManual() *server.Server {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", Clock: expiry.NewManualClock(time.Now())})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	return srv
}

// exampleClient is a minimal Redis client: do sends one command and
// returns its reply as redis-cli prints it.
type exampleClient struct {
	conn net.Conn
	rd   *bufio.Reader
}

func dialExample(addr string) *exampleClient {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	return &exampleClient{conn: conn, rd: bufio.NewReader(conn)}
}

func (c *exampleClient) do(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return "(error) " + err.Error()
	}
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return "(error) " + err.Error()
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:]
	case '-':
		return "(error) " + line[1:]
	case ':':
		return "(integer) " + line[1:]
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "(nil)"
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.rd, buf); err != nil {
			return "(error) " + err.Error()
		}
		return strconv.Quote(string(buf[:n]))
	}
	return line
}

// exampleT stands in for *testing.T in the examples.
type exampleT struct{ cleanups []func() }

func (t *exampleT) Helper()                           {}
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
