package server_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// Examples of the rest of the test fixture: every one runs on a manual
// clock or needs no clock at all, so its output never depends on timing.

// SetLatency delays every reply, as a slow network would; the command
// itself runs at once.
func ExampleServer_SetLatency() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	srv.SetLatency(50 * time.Millisecond)
	start := time.Now()
	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))
	fmt.Println("reply took at least 50ms:", time.Since(start) >= 50*time.Millisecond)
	srv.SetLatency(0)
	fmt.Println(c.do("GET", "lock"))
	// Output:
	// OK
	// reply took at least 50ms: true
	// "tok"
}

// DropConnections closes every client connection, as a network failure
// would; the server and its data stay, and clients reconnect.
func ExampleServer_DropConnections() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())
	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))

	fmt.Println("closed:", srv.DropConnections())
	fmt.Println("old connection fails:", strings.HasPrefix(c.do("PING"), "(error)"))
	c = dialExample(srv.Addr())
	fmt.Println(c.do("GET", "lock"))
	// Output:
	// OK
	// closed: 1
	// old connection fails: true
	// "tok"
}

// DropClient cuts off one client, named by the ClientID of a command it
// sent (Commands), as the lock holder's network would fail: the others
// stay connected, and the lock stays until its deadline.
func ExampleServer_DropClient() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", CommandLog: 100})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	holder, other := dialExample(srv.Addr()), dialExample(srv.Addr())
	fmt.Println(holder.do("SET", "lock", "tok", "PX", "30000", "NX"))

	for _, cmd := range srv.Commands() {
		if cmd.Name() == "set" {
			fmt.Println("dropped:", srv.DropClient(cmd.ClientID))
		}
	}
	fmt.Println("holder's connection fails:", strings.HasPrefix(holder.do("PING"), "(error)"))
	fmt.Println(other.do("SET", "lock", "mine", "PX", "30000", "NX"))
	// Output:
	// OK
	// dropped: true
	// holder's connection fails: true
	// (nil)
}

// FailNext fails the next n commands, whatever they are, with your error.
func ExampleServer_FailNext() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	srv.FailNext(2, "ERR connection lost")
	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))
	fmt.Println(c.do("GET", "lock"))
	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))
	// Output:
	// (error) ERR connection lost
	// (error) ERR connection lost
	// OK
}

// FailWhen fails the commands a predicate picks: here every release
// (the compare-and-delete script) of lock:a, while its acquire and other
// locks' releases run.
func ExampleServer_FailWhen() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	stop := srv.FailWhen(func(cmd server.CommandRecord) (string, bool) {
		return "ERR network partition", cmd.Name() == "eval" && len(cmd.Args) > 3 && cmd.Args[3] == "lock:a"
	})
	release := "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
	fmt.Println(c.do("SET", "lock:a", "tok", "PX", "30000", "NX"))
	fmt.Println(c.do("EVAL", release, "1", "lock:a", "tok"))
	fmt.Println(c.do("SET", "lock:b", "tok", "PX", "30000", "NX"))
	fmt.Println(c.do("EVAL", release, "1", "lock:b", "tok"))
	stop()
	fmt.Println(c.do("EVAL", release, "1", "lock:a", "tok"))
	// Output:
	// OK
	// (error) ERR network partition
	// OK
	// (integer) 1
	// (integer) 1
}

// Get reads a key as GET does, without a client.
func ExampleServer_Get() {
	srv := startManual()
	defer srv.Close()
	dialExample(srv.Addr()).do("SET", "lock", "tok", "PX", "30000", "NX")

	v, ok := srv.Get("lock")
	fmt.Printf("%q %v\n", v, ok)
	v, ok = srv.Get("nosuch")
	fmt.Printf("%q %v\n", v, ok)
	// Output:
	// "tok" true
	// "" false
}

// Set writes a key, with a TTL on the server's clock, as a test's setup:
// here a lock someone else holds.
func ExampleServer_Set() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	srv.Set("lock", "someone-else", 10*time.Second)
	fmt.Println(c.do("SET", "lock", "me", "PX", "30000", "NX"))
	srv.Advance(10*time.Second + time.Millisecond)
	fmt.Println(c.do("SET", "lock", "me", "PX", "30000", "NX"))
	// Output:
	// (nil)
	// OK
}

// TTL reports a key's time left as PTTL does, with PTTL's -1 and -2 as
// durations.
func ExampleServer_TTL() {
	srv := startManual()
	defer srv.Close()
	srv.Set("lock", "tok", 30*time.Second)
	srv.Set("forever", "v", 0)

	srv.Advance(10 * time.Second)
	fmt.Println(srv.TTL("lock"))
	fmt.Println(srv.TTL("forever") == -1, srv.TTL("nosuch") == -2)
	// Output:
	// 20s
	// true true
}

// Keys lists the live keys, sorted: expired ones are gone.
func ExampleServer_Keys() {
	srv := startManual()
	defer srv.Close()
	srv.Set("lock:b", "tok", 30*time.Second)
	srv.Set("lock:a", "tok", 10*time.Second)
	srv.Set("fence", "7", 0)

	fmt.Println(srv.Keys())
	srv.Advance(10*time.Second + time.Millisecond)
	fmt.Println(srv.Keys())
	// Output:
	// [fence lock:a lock:b]
	// [fence lock:b]
}

// Unpause ends a Pause early: the held commands then run, in order.
func ExampleServer_Unpause() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	srv.Pause(time.Hour)
	reply := make(chan string)
	go func() { reply <- c.do("SET", "lock", "tok", "PX", "30000", "NX") }()
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		panic(err)
	}
	_, set := srv.Get("lock")
	fmt.Println("held:", srv.Held(), "ran:", set)
	srv.Unpause()
	fmt.Println(<-reply)
	// Output:
	// held: 1 ran: false
	// OK
}

// WaitHeld tells a test that commands sent from other goroutines reached
// the server and are held by a stall, so that what it does next happens
// during the stall, not before the commands arrive.
func ExampleServer_WaitHeld() {
	srv := startManual()
	defer srv.Close()
	a, b := dialExample(srv.Addr()), dialExample(srv.Addr())

	srv.Pause(5 * time.Second)
	replies := make(chan string, 2)
	go func() { replies <- a.do("SET", "lock", "a", "PX", "30000", "NX") }()
	go func() { replies <- b.do("SET", "lock", "b", "PX", "30000", "NX") }()
	if err := srv.WaitHeld(2, 10*time.Second); err != nil {
		panic(err)
	}
	srv.Advance(5 * time.Second)
	got := []string{<-replies, <-replies}
	fmt.Println(strings.Contains(strings.Join(got, " "), "OK"), strings.Contains(strings.Join(got, " "), "(nil)"))
	// Output:
	// true true
}

// WithManualClock: time moves only when the test says so.
func ExampleWithManualClock() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.cleanup()
	srv := server.RunT(t, server.WithManualClock())
	c := dialExample(srv.Addr())

	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	fmt.Println(c.do("PTTL", "lock")) // no time has passed
	srv.Advance(30*time.Second + time.Millisecond)
	fmt.Println(c.do("GET", "lock"))
	// Output:
	// (integer) 30000
	// (nil)
}

// WithRestartDelay: a node that (re)started refuses to grant locks until
// the longest lock it could have forgotten has expired.
func ExampleWithRestartDelay() {
	t := &exampleT{}
	defer t.cleanup()
	srv := server.RunT(t, server.WithManualClock(), server.WithRestartDelay(10*time.Second))
	c := dialExample(srv.Addr())

	fmt.Println(c.do("SET", "lock", "tok", "PX", "10000", "NX")) // as if held
	fmt.Println(strings.HasPrefix(c.do("SET", "other", "v"), "(error) ERR restart delay"))
	srv.Advance(10 * time.Second)
	fmt.Println(c.do("SET", "lock", "tok", "PX", "10000", "NX"))
	// Output:
	// (nil)
	// true
	// OK
}

// WithCommandLog sets how many commands Commands keeps: the last n.
func ExampleWithCommandLog() {
	t := &exampleT{}
	defer t.cleanup()
	srv := server.RunT(t, server.WithCommandLog(2))
	c := dialExample(srv.Addr())

	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	c.do("PEXPIRE", "lock", "30000")
	c.do("DEL", "lock")
	for _, r := range srv.Commands() {
		fmt.Println(r)
	}
	// Output:
	// PEXPIRE lock 30000
	// DEL lock
}

// WithConfig changes any Config field RunT starts the server with: here a
// password.
func ExampleWithConfig() {
	t := &exampleT{}
	defer t.cleanup()
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) { c.RequirePass = "s3cret" }))
	c := dialExample(srv.Addr())

	fmt.Println(c.do("SET", "lock", "tok", "NX"))
	fmt.Println(c.do("AUTH", "s3cret"))
	fmt.Println(c.do("SET", "lock", "tok", "NX"))
	// Output:
	// (error) NOAUTH Authentication required.
	// OK
	// OK
}

// Addr is the address the server listens on: with port 0, the free port
// it was given.
func ExampleServer_Addr() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0"})
	fmt.Println(srv.Addr()) // not started: the configured address
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Addr())
	fmt.Println(host, port != "0")
	// Output:
	// 127.0.0.1:0
	// 127.0.0.1 true
}

// Close stops the server: its clients' connections close, and it cannot
// be started again. Closing twice is harmless.
func ExampleServer_Close() {
	srv := startManual()
	c := dialExample(srv.Addr())
	fmt.Println(c.do("PING"))

	fmt.Println(srv.Close())
	fmt.Println("connection closed:", strings.HasPrefix(c.do("PING"), "(error)"))
	fmt.Println(errors.Is(srv.Start(), server.ErrClosed), srv.Close())
	// Output:
	// PONG
	// <nil>
	// connection closed: true
	// true <nil>
}

// Held counts the commands a pause holds: under CLIENT PAUSE WRITE, a
// write waits while a read is answered.
func ExampleServer_Held() {
	srv := startManual()
	defer srv.Close()
	admin, writer, reader := dialExample(srv.Addr()), dialExample(srv.Addr()), dialExample(srv.Addr())

	fmt.Println(admin.do("CLIENT", "PAUSE", "60000", "WRITE"))
	written := make(chan string)
	go func() { written <- writer.do("SET", "lock", "tok", "PX", "30000", "NX") }()
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		panic(err)
	}
	fmt.Println(reader.do("GET", "lock"), "held:", srv.Held())
	fmt.Println(admin.do("CLIENT", "UNPAUSE"))
	fmt.Println(<-written, "held:", srv.Held())
	// Output:
	// OK
	// (nil) held: 1
	// OK
	// OK held: 0
}

// AdvanceMonotonic moves TTLs and leaves the wall clock where it was,
// for clients that send absolute deadlines computed from their own
// clock (rueidislock's SET NX PXAT): with Advance, the deadline they
// send next would already be in the server's past.
func ExampleServer_AdvanceMonotonic() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())
	// the client's deadline: its own clock, 30 s on
	pxat := func() string { return strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10) }

	c.do("SET", "lock", "a", "PXAT", pxat(), "NX")
	srv.AdvanceMonotonic(31 * time.Second) // the lock expires
	fmt.Println(c.do("GET", "lock"))
	fmt.Println(c.do("SET", "lock", "b", "PXAT", pxat(), "NX")) // still 30 s ahead of the server's wall clock
	fmt.Println(c.do("GET", "lock"))
	// Output:
	// (nil)
	// OK
	// "b"
}

// RestartAfter is a crash with the node down for a while: connecting is
// refused until it listens again, and without persistence it comes back
// empty.
func ExampleServer_RestartAfter() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())
	c.do("SET", "lock", "tok", "PX", "30000", "NX")

	done := make(chan error)
	go func() { done <- srv.RestartAfter(time.Second, false) }()
	c.rd.ReadString('\n') // until the crash closes the connection: no longer listening
	_, err := net.Dial("tcp", srv.Addr())
	fmt.Println("refused while down:", err != nil)
	fmt.Println("restarted:", <-done)
	c = dialExample(srv.Addr())
	fmt.Println(c.do("GET", "lock"))
	// Output:
	// refused while down: true
	// restarted: <nil>
	// (nil)
}

// WaitBlocked waits for a blocking command sent from another goroutine to
// be waiting, so that moving the clock then times it out.
func ExampleServer_WaitBlocked() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	reply := make(chan string)
	go func() { reply <- c.do("BLPOP", "queue", "5") }()
	if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
		panic(err)
	}
	srv.Advance(5*time.Second + time.Millisecond) // a timeout lives through its last millisecond
	fmt.Println(<-reply)                          // the null array: timed out
	// Output:
	// *-1
}

// DB inspects another database, for a lock client configured with a
// database index.
func ExampleServer_DB() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())
	c.do("SELECT", "2")
	c.do("SET", "lock", "tok", "PX", "30000", "NX")

	_, inZero := srv.Get("lock")
	v, inTwo := srv.DB(2).Get("lock")
	fmt.Println(inZero, inTwo, v, srv.DB(2).TTL("lock"))
	// Output:
	// false true tok 30s
}

// PendingFailures counts the failures FailNext and FailNextCmd queued and
// no command has used yet; ClearFailures drops them (and every FailWhen).
func ExampleServer_PendingFailures() {
	srv := startManual()
	defer srv.Close()
	c := dialExample(srv.Addr())

	srv.FailNextCmd("evalsha", 2, "ERR boom")
	c.do("SET", "lock", "tok", "PX", "30000", "NX") // not an EVALSHA
	fmt.Println(srv.PendingFailures())
	srv.ClearFailures()
	fmt.Println(srv.PendingFailures())
	// Output:
	// 2
	// 0
}

// EndRestartDelay ends the restart delay early: on the system clock,
// where Advance cannot move past it.
func ExampleServer_EndRestartDelay() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", RestartDelay: time.Hour})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	c := dialExample(srv.Addr())

	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))
	srv.EndRestartDelay()
	fmt.Println(c.do("SET", "lock", "tok", "PX", "30000", "NX"))
	// Output:
	// (nil)
	// OK
}

// ResetCommands empties the command log, so that a test sees only the
// commands of the part it checks.
func ExampleServer_ResetCommands() {
	srv := server.New(server.Config{Addr: "127.0.0.1:0", CommandLog: 100})
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	c := dialExample(srv.Addr())
	c.do("SET", "setup", "1")

	srv.ResetCommands()
	c.do("SET", "lock", "tok", "PX", "30000", "NX")
	for _, cmd := range srv.Commands() {
		fmt.Println(cmd)
	}
	// Output:
	// SET lock tok PX 30000 NX
}
