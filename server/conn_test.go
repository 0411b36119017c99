package server

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// A push-capable connection gets frames appended by other goroutines while
// its own commands run: every frame arrives whole, and its own replies stay
// in order.
func TestPush_InterleavesWithRepliesWithoutTearing(t *testing.T) {
	srv := RunT(t)
	var (
		mu     sync.Mutex
		target *client
	)
	srv.eng.Register(&engine.Command{Name: "testpush", Arity: 1, Flags: engine.FlagNoKeys | engine.FlagNoScript, Fn: func(c *engine.Ctx) {
		me := cl(c)
		srv.enablePush(me)
		mu.Lock()
		target = me
		mu.Unlock()
		c.W.WriteStatus("OK")
	}})
	c := dial(t, srv.Addr())
	c.send(encode("TESTPUSH"))
	var b strings.Builder
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := readReply(c.rd, &b); err != nil || b.String() != "+OK\r\n" {
		t.Fatalf("TESTPUSH: %q %v", b.String(), err)
	}
	mu.Lock()
	me := target
	mu.Unlock()

	const pushes, echoes = 500, 500
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < pushes; i++ {
			me.push(func(w *respWriter) {
				w.WritePush(2)
				w.WriteBulkString("message")
				w.WriteBulkString(strings.Repeat("p", 100))
			})
		}
	}()
	var req string
	for i := 0; i < echoes; i++ {
		req += encode("ECHO", "e"+string(rune('0'+i%10)))
	}
	c.send(req)
	gotPush, gotEcho := 0, 0
	for gotPush < pushes || gotEcho < echoes {
		b.Reset()
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := readReply(c.rd, &b); err != nil {
			t.Fatalf("after %d pushes and %d echoes: %v", gotPush, gotEcho, err)
		}
		switch s := b.String(); {
		case strings.HasPrefix(s, "*2\r\n$7\r\nmessage\r\n$100\r\n"):
			gotPush++
		case s == "$2\r\ne"+string(rune('0'+gotEcho%10))+"\r\n":
			gotEcho++
		default:
			t.Fatalf("frame %q out of order or torn (after %d echoes)", s, gotEcho)
		}
	}
	<-done
}

// Close ends connections that are idle in a read.
func TestClose_EndsIdleConnections(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, srv.Addr())
	c.send(encode("PING"))
	var b strings.Builder
	if err := readReply(c.rd, &b); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with an idle connection open")
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.rd.ReadByte(); err == nil {
		t.Fatal("connection still open after Close")
	}
}

// On a push-capable connection the flusher goroutine can write a batch's
// replies while the batch still runs (a push arrived): the commands whose
// replies went out are counted by then, as the batch's own flush counts
// them before it writes (engine.PendingStats).
func TestPush_RepliesFlushedMidBatchAreCounted(t *testing.T) {
	srv := RunT(t)
	var (
		mu     sync.Mutex
		target *client
	)
	srv.eng.Register(&engine.Command{Name: "testpush", Arity: 1, Flags: engine.FlagNoKeys | engine.FlagNoScript, Fn: func(c *engine.Ctx) {
		me := cl(c)
		srv.enablePush(me)
		mu.Lock()
		target = me
		mu.Unlock()
		c.W.WriteStatus("OK")
	}})
	entered, release := make(chan struct{}), make(chan struct{})
	srv.eng.Register(&engine.Command{Name: "testwait", Arity: 1, Flags: engine.FlagNoKeys | engine.FlagNoScript, Fn: func(c *engine.Ctx) {
		close(entered)
		<-release
		c.W.WriteStatus("OK")
	}})
	c, d := dial(t, srv.Addr()), dial(t, srv.Addr())
	if got := c.do("TESTPUSH"); got != "+OK\r\n" {
		t.Fatalf("TESTPUSH: %q", got)
	}
	d.do("CONFIG", "RESETSTAT")
	c.send(encode("GET", "a") + encode("TESTWAIT"))
	<-entered
	mu.Lock()
	me := target
	mu.Unlock()
	me.push(func(w *respWriter) { w.WriteStatus("pushed") }) // wakes the flusher: the GET's reply goes out
	if got := c.read(); got != "$-1\r\n" {
		close(release)
		t.Fatalf("GET: %q", got)
	}
	n := cmdstatCalls(t, d.do("INFO", "commandstats"), "get")
	close(release)
	if n != 1 {
		t.Errorf("a GET whose reply went out: get calls=%d, want 1", n)
	}
	c.read()
	c.read()
}

// A command that ends once SHUTDOWN NOSAVE has stopped a busy script
// (TestShutdown_SentBeforeTheBusyThresholdWaitsForIt) gets no reply, as
// Redis exits there; its client sees the connection close.
func TestHandle_CommandEndingAfterShutdownCutAScriptShortGetsNoReply(t *testing.T) {
	srv := RunT(t)
	srv.eng.Register(&engine.Command{Name: "testclosing", Arity: 1, Flags: engine.FlagNoKeys | engine.FlagNoScript, Fn: func(c *engine.Ctx) {
		srv.cutShort.Store(true) // as SHUTDOWN NOSAVE, before it closes the server
		c.W.WriteError("ERR Script killed by user with SCRIPT KILL...")
	}})
	c := dial(t, srv.Addr())
	c.send(encode("TESTCLOSING"))
	c.expectClosed()
}
