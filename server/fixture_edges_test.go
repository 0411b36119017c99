package server

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Edges of the fixture API a user of it ran into: counts that lagged a
// DropConnections, Close after a Restart, "forever" pauses, the command
// log behind a held command, and the helpers' argument checks.

// dialWhileDropped runs dialers that connect and send cmd (with %d their
// number) without waiting, calls drop while they do, then stops them. It
// returns the connections, in number order.
func dialWhileDropped(t *testing.T, addr, cmd string, drop func()) []net.Conn {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				mu.Lock()
				id := len(conns)
				conns = append(conns, nc)
				mu.Unlock()
				fmt.Fprintf(nc, cmd, id)
			}
		}()
	}
	time.Sleep(3 * time.Millisecond)
	drop()
	close(stop)
	wg.Wait()
	t.Cleanup(func() {
		for _, nc := range conns {
			nc.Close()
		}
	})
	return conns
}

// A connection accepted while DropConnections closes the connections (a
// client that registers during its walk) is closed too, and a command it
// sent never runs: a pause held it, and its client saw the connection
// dropped. It used to register after the walk of the clients had passed,
// unkilled: its command ran once the pause ended.
func TestDropConnections_ConnectionsArrivingMeanwhile(t *testing.T) {
	for iter := range 20 {
		srv := RunT(t, WithManualClock())
		srv.Pause(time.Hour)
		conns := dialWhileDropped(t, srv.Addr(), "SET k%d x\r\n", func() { srv.DropConnections() })
		srv.Unpause()
		var dropped []int
		for i, nc := range conns {
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 8)
			n, err := nc.Read(buf)
			switch {
			case err != nil:
				dropped = append(dropped, i)
			case string(buf[:n]) != "+OK\r\n":
				t.Fatalf("connection %d: %q", i, buf[:n])
			}
		}
		time.Sleep(20 * time.Millisecond) // for what a dropped one would still run
		for _, i := range dropped {
			if _, ok := srv.Get(fmt.Sprint("k", i)); ok {
				t.Fatalf("iteration %d: connection %d of %d was dropped, yet its command ran", iter, i, len(conns))
			}
		}
		srv.Close()
	}
}

// Restart while connections arrive during a pause returns: it used to
// wait for the goroutine of one that registered during its walk of the
// clients, unkilled, whose command the pause held.
func TestRestart_ConnectionsArrivingMeanwhile(t *testing.T) {
	srv := RunT(t, WithManualClock())
	srv.Pause(time.Hour)
	for iter := range 40 {
		dialWhileDropped(t, srv.Addr(), "SET lock %d NX PX 30000\r\n", func() {
			done := make(chan error, 1)
			go func() { done <- srv.Restart(false) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: Restart hangs (Held %d)", iter, srv.Held())
			}
		})
		srv.Pause(time.Hour)
	}
}

// DropConnections takes the held commands of the connections it closes
// out of Held at once, and counts each connection once.
func TestDropConnections_HeldDropsAtOnceCountedOnce(t *testing.T) {
	srv := RunT(t, WithManualClock())
	srv.Pause(time.Hour)
	a := dial(t, srv.Addr())
	a.send(encode("PING"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := srv.DropConnections(); n != 1 {
		t.Fatalf("DropConnections = %d, want 1", n)
	}
	if n := srv.Held(); n != 0 {
		t.Fatalf("Held right after DropConnections = %d, want 0", n)
	}
	if n := srv.DropConnections(); n != 0 {
		t.Fatalf("a second DropConnections = %d, want 0: it closed nothing", n)
	}
	a.expectClosed()

	// WaitHeld now waits for a command that really is held.
	b := dial(t, srv.Addr())
	var sent atomic.Bool
	go func() {
		time.Sleep(100 * time.Millisecond)
		sent.Store(true)
		b.send(encode("PING"))
	}()
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !sent.Load() {
		t.Fatal("WaitHeld(1) returned before the only live client sent its command")
	}
	srv.Unpause()
	b.expect("+PONG\r\n")
}

// Close while RestartAfter has the listener closed is a clean close.
func TestClose_WhileRestartIsDown(t *testing.T) {
	srv := RunT(t)
	addr := srv.Addr()
	errc := make(chan error, 1)
	go func() { errc <- srv.RestartAfter(time.Minute, false) }()
	eventually(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if err := srv.Close(); err != nil {
		t.Fatalf("Close during a restart = %v, want nil", err)
	}
	select {
	case err := <-errc:
		if err != ErrClosed {
			t.Fatalf("RestartAfter = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RestartAfter did not return after Close")
	}
}

// math.MaxInt64, Go's "forever", pauses (it overflowed to a past deadline).
func TestPause_Forever(t *testing.T) {
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 999999} {
		srv := RunT(t)
		srv.Pause(d)
		c := dial(t, srv.Addr())
		c.send(encode("PING"))
		if err := srv.WaitHeld(1, 5*time.Second); err != nil {
			t.Fatalf("Pause(%d): %v", int64(d), err)
		}
		srv.Unpause()
		c.expect("+PONG\r\n")
	}
}

// A command pipelined behind a held one is logged when it arrives, with
// its arrival time, not when it gets to run.
func TestCommands_PipelinedBehindAHeldCommand(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	c.do("PING") // connected
	srv.ResetCommands()
	start := srv.ManualClock().Wall()
	srv.Pause(10 * time.Second)
	c.send(encode("ECHO", "a") + encode("ECHO", "b"))
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	log := srv.Commands()
	if len(log) != 2 || log[0].String() != "ECHO a" || log[1].String() != "ECHO b" {
		t.Fatalf("log while held = %v, want both ECHOs", log)
	}
	srv.Advance(10 * time.Second)
	c.expect(bulk("a"))
	c.expect(bulk("b"))
	for i, r := range srv.Commands() {
		if !r.Time.Equal(start) {
			t.Fatalf("record %d (%s) at %v, want its arrival %v", i, r, r.Time, start)
		}
	}
}

// FailNext's message may come with its '-'; FailNextCmd aims at one
// subcommand, and refuses a name that can never match.
func TestFailNext_MessageAndSubcommandNames(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	srv.FailNext(1, "-ERR x")
	c.expectDo("-ERR x\r\n", "PING")
	srv.FailNext(1, "-")
	c.expectDo("-ERR injected failure\r\n", "PING")

	srv.FailNextCmd("CLIENT|ID", 1, "ERR no id")
	if got := c.do("CLIENT", "GETNAME"); got != "$-1\r\n" {
		t.Fatalf("CLIENT GETNAME = %q: a failure for CLIENT ID took it", got)
	}
	c.expectDo("-ERR no id\r\n", "client", "id")
	if n := srv.PendingFailures(); n != 0 {
		t.Fatalf("PendingFailures = %d", n)
	}
	srv.FailNextCmd("client", 1, "ERR any client")
	c.expectDo("-ERR any client\r\n", "CLIENT", "GETNAME")

	for _, bad := range []string{"client id", "nosuch", "client|nosuch", "set|x"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "no such command") {
					t.Errorf("FailNextCmd(%q) panicked with %v, want no such command", bad, r)
				}
			}()
			srv.FailNextCmd(bad, 1, "ERR x")
		}()
	}
	if n := srv.PendingFailures(); n != 0 {
		t.Fatalf("PendingFailures = %d after refused names", n)
	}
}

// Set rounds a TTL up to whole milliseconds, as Pause and the blocking
// timeouts do.
func TestSet_TTLRoundsUp(t *testing.T) {
	srv := RunT(t, WithManualClock())
	srv.Set("a", "v", 1500*time.Microsecond)
	srv.Set("b", "v", 300*time.Microsecond)
	c := dial(t, srv.Addr())
	c.expectDo(":2\r\n", "PTTL", "a")
	c.expectDo(":1\r\n", "PTTL", "b")
}

// WaitBlocked returns once a blocking command waits; its timeout then
// passes one millisecond after its last, as in Redis.
func TestWaitBlocked_ThenTheTimeout(t *testing.T) {
	srv := RunT(t, WithManualClock())
	if err := srv.WaitBlocked(1, 20*time.Millisecond); err == nil {
		t.Fatal("WaitBlocked(1) with nobody blocked returned nil")
	}
	c := dial(t, srv.Addr())
	c.send(encode("BLPOP", "q", "1"))
	if err := srv.WaitBlocked(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Advance(time.Second)
	c.expectSilent(100 * time.Millisecond)
	srv.Advance(time.Millisecond)
	c.expect("*-1\r\n")
	srv.Close()
	if err := srv.WaitBlocked(1, 10*time.Second); err != ErrClosed {
		t.Fatalf("WaitBlocked on a closed server = %v", err)
	}
}

// fatalT is a Tester whose Fatalf records the message and ends the
// goroutine, as testing.T's does.
type fatalT struct {
	msg      string
	cleanups []func()
}

func (f *fatalT) Helper()           {}
func (f *fatalT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// runFatal runs fn with a fatalT and returns what it failed with.
func runFatal(fn func(*fatalT)) string {
	f := &fatalT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for _, c := range f.cleanups {
		c()
	}
	return f.msg
}

func TestRunT_RunN_Failures(t *testing.T) {
	taken := RunT(t)
	msg := runFatal(func(f *fatalT) { RunT(f, WithConfig(func(c *Config) { c.Addr = taken.Addr() })) })
	if !strings.HasPrefix(msg, "tumbler: ") || strings.HasPrefix(msg, "tumbler: tumbler:") {
		t.Fatalf("RunT on a taken port failed with %q: want one \"tumbler: \" prefix", msg)
	}
	msg = runFatal(func(f *fatalT) { RunN(f, -1) })
	if !strings.Contains(msg, "RunN(-1)") {
		t.Fatalf("RunN(-1) failed with %q", msg)
	}
	if msg := runFatal(func(f *fatalT) {
		if n := len(RunN(f, 0)); n != 0 {
			f.Fatalf("RunN(0) gave %d servers", n)
		}
	}); msg != "" {
		t.Fatal(msg)
	}
}

// logT is a Tester with Logf, recording what is logged through it.
type logT struct {
	cleanups []func()
	mu       sync.Mutex
	lines    []string
}

func (t *logT) Helper()                           {}
func (t *logT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *logT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *logT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func (t *logT) Logf(format string, args ...any) {
	t.mu.Lock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *logT) logged(s string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// RunT's server logs through the test's Logf (not stderr), and, once the
// test's cleanups have run, no longer: Logf would panic then. A Logger set
// by an option is kept.
func TestRunT_LogsThroughTheTest(t *testing.T) {
	ft := &logT{}
	srv := RunT(ft)
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "DEBUG", "LOG", "through-the-test")
	if !ft.logged("DEBUG LOG: through-the-test") || !ft.logged("level=WARN") {
		t.Fatalf("the test's Logf got %q", ft.lines)
	}
	ft.cleanup()
	n := len(ft.lines)
	srv.Logger().Warn("after the test")
	if len(ft.lines) != n {
		t.Fatalf("logged through the test after its cleanups: %q", ft.lines[n:])
	}

	var own strings.Builder
	var mu sync.Mutex
	ft = &logT{}
	srv = RunT(ft, WithConfig(func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return own.Write(p)
		}), nil))
	}))
	defer ft.cleanup()
	dial(t, srv.Addr()).expectDo("+OK\r\n", "DEBUG", "LOG", "own-logger")
	mu.Lock()
	got := own.String()
	mu.Unlock()
	if !strings.Contains(got, "own-logger") || ft.logged("own-logger") {
		t.Fatalf("with a Logger set: it got %q, the test's Logf %q", got, ft.lines)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
