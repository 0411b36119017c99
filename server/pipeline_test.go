package server

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// pipelineUnread sends n GETs of key k in one stream without reading a
// reply, as redis-py's and Jedis's pipelines do, with the client's socket
// buffers small (no autotuning) so that requests and replies each
// overflow what the sockets hold. It returns the write's error, or nil
// once everything is sent (the write gives up after 30 s).
func pipelineUnread(t *testing.T, c *rawClient, k string, n int) error {
	t.Helper()
	type buffers interface {
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
	}
	sock := c.conn
	if tc, ok := sock.(*tls.Conn); ok {
		sock = tc.NetConn()
	}
	if err := sock.(buffers).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := sock.(buffers).SetWriteBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	req := []byte(strings.Repeat(encode("GET", k), n))
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	defer c.conn.SetWriteDeadline(time.Time{})
	_, err := c.conn.Write(req)
	return err
}

// sendPipelineUnread is pipelineUnread, which must send it all.
func sendPipelineUnread(t *testing.T, c *rawClient, k string, n int) {
	t.Helper()
	sent := make(chan error, 1)
	go func() { sent <- pipelineUnread(t, c, k, n) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("sending the pipeline: %v (the server stopped reading)", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the pipeline was not sent")
	}
}

// expectPipelineServed sends a pipeline of 450000 GETs of a 60-byte value
// on c before reading any reply (pipelineUnread), and checks every reply.
func expectPipelineServed(t *testing.T, c *rawClient) {
	t.Helper()
	val := strings.Repeat("v", 60)
	if got := c.do("SET", "k", val); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const n = 450000
	sendPipelineUnread(t, c, "k", n)
	want := "$60\r\n" + val + "\r\n"
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, len(want))
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(c.rd, buf); err != nil || string(buf) != want {
			t.Fatalf("reply %d: %q, %v", i, buf, err)
		}
	}
	c.conn.SetReadDeadline(time.Time{})
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after the pipeline: %q", got)
	}
}

// TestTLS_PipelineSentBeforeAnyReplyIsRead: the same over TLS, whose
// writes cannot be tried without waiting: a write that waits past
// writeStallAfter starts reading the input meanwhile (writeWaiting).
func TestTLS_PipelineSentBeforeAnyReplyIsRead(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no") }))
	tc, err := tls.Dial("tcp", srv.TLSAddr(), &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	expectPipelineServed(t, &rawClient{t: t, conn: tc, rd: bufio.NewReader(tc)})
}

// dialTLS connects to srv's TLS port, verified with p.
func dialTLS(t *testing.T, srv *Server, p *testPKI) *rawClient {
	t.Helper()
	tc, err := tls.Dial("tcp", srv.TLSAddr(), &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return &rawClient{t: t, conn: tc, rd: bufio.NewReader(tc)}
}

// expectClosedPastQueryBufLimit sets a 1 MB client-query-buffer-limit
// and checks that c, sending a 10 MB pipeline without reading a reply
// (pipelineUnread), is closed, not left waiting, and that admin is served.
func expectClosedPastQueryBufLimit(t *testing.T, srv *Server, admin, c *rawClient) {
	t.Helper()
	if got := admin.do("CONFIG", "SET", "client-query-buffer-limit", "1mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("SET", "k", strings.Repeat("v", 60)); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if err := pipelineUnread(t, c, "k", 450000); err == nil {
		t.Fatal("a 10 MB pipeline, its replies unread, was all taken with a 1 MB query buffer limit")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending the pipeline: %v, want the connection closed", err)
	}
	waitFor(t, "the client closed", func() bool { return srv.nconns.Load() == 1 })
	if got := admin.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING from another client: %q", got)
	}
}

// TestTLS_PipelineUnreadPastTheQueryBufferLimit: a TLS client whose unread
// pipeline passes client-query-buffer-limit while a write waits is closed,
// as over TCP: the write waiting under TLS fails too (breakWrite), where
// it used to wait for ever with the client.
func TestTLS_PipelineUnreadPastTheQueryBufferLimit(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no") }))
	expectClosedPastQueryBufLimit(t, srv, dial(t, srv.Addr()), dialTLS(t, srv, p))
}

// A connection that can receive pushes (CLIENT TRACKING, or SUBSCRIBE
// once, even after UNSUBSCRIBE) writes its replies through flushShared:
// it too reads its input while they wait for room.
func TestPipelineSentBeforeAnyReplyIsRead_PushCapable(t *testing.T) {
	for name, setup := range map[string][][]string{
		"tracking":     {{"CLIENT", "TRACKING", "ON"}},
		"unsubscribed": {{"SUBSCRIBE", "x"}, {"UNSUBSCRIBE", "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := RunT(t)
			c := dial(t, srv.Addr())
			for _, cmd := range setup {
				c.do(cmd...)
			}
			expectPipelineServed(t, c)
		})
	}
}

// TestPipelineUnread_UnauthenticatedReadAheadIsBounded: the input of a
// client that has not authenticated is checked against the
// unauthenticated limits (CVE-2021-32675) only as it is parsed, so while
// a write to it waits the server reads no more of it than readAheadMax,
// not client-query-buffer-limit's gigabyte.
func TestPipelineUnread_UnauthenticatedReadAheadIsBounded(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.RequirePass = "secret" }))
	c := dial(t, srv.Addr())
	if err := c.conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	// NOAUTH replies fill the socket; then a request the
	// unauthenticated limits refuse, and 64 MB more
	req := strings.Repeat("PING\r\n", 1<<20) + "*100\r\n" + strings.Repeat("x", 64<<20)
	c.conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
	n, err := c.conn.Write([]byte(req))
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() || n > 16<<20 {
		t.Fatalf("sent %d of %d bytes without authenticating (%v); want the server to stop reading after about 1 MB", n, len(req), err)
	}
}

// TestPipelineSentBeforeAnyReplyIsRead_WhilePushesWait: a RESP3
// subscriber's pushes fill its socket, so its flusher waits in a write,
// while the client sends a pipeline before reading anything. The
// connection's goroutine, waiting for the flusher to let it write its
// replies, reads the input meanwhile too.
func TestPipelineSentBeforeAnyReplyIsRead_WhilePushesWait(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	admin.expectDo("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
	val := strings.Repeat("v", 60)
	admin.expectDo("+OK\r\n", "SET", "k", val)
	c := dial(t, srv.Addr())
	c.do("HELLO", "3")
	if got := c.do("SUBSCRIBE", "x"); !strings.HasPrefix(got, ">3\r\n") {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	msg := strings.Repeat("m", 10_000)
	const pushes = 3000 // 30 MB
	for i := 0; i < pushes; i++ {
		admin.send(encode("PUBLISH", "x", msg))
	}
	for i := 0; i < pushes; i++ {
		if got := admin.read(); got != ":1\r\n" {
			t.Fatalf("PUBLISH: %q", got)
		}
	}
	const n = 200000
	sendPipelineUnread(t, c, "k", n)
	want := "$60\r\n" + val + "\r\n"
	got, pushed := 0, 0
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for got < n {
		var b strings.Builder
		if err := readReply(c.rd, &b); err != nil {
			t.Fatalf("after %d replies and %d pushes: %v", got, pushed, err)
		}
		switch r := b.String(); {
		case strings.HasPrefix(r, ">3\r\n"):
			pushed++
		case r == want:
			got++
		default:
			t.Fatalf("reply %d: %q", got, r)
		}
	}
	if pushed != pushes {
		t.Errorf("%d pushes before the last reply, want all %d", pushed, pushes)
	}
}

// A stall (Pause) reads nothing, as a stopped process, even from a RESP3
// subscriber whose flusher the stall holds while it sends: its
// goroutine, waiting for the flusher to write its replies, does not read
// ahead as it would otherwise (WhilePushesWait above).
func TestPause_StalledServerReadsNoPushClientInput(t *testing.T) {
	srv := RunT(t)
	t.Cleanup(srv.Unpause)
	admin := dial(t, srv.Addr())
	admin.expectDo("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
	c := dial(t, srv.Addr())
	tc := c.conn.(*net.TCPConn)
	if err := tc.SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := tc.SetWriteBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	c.do("HELLO", "3")
	if got := c.do("SUBSCRIBE", "x"); !strings.HasPrefix(got, ">3\r\n") {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	msg := strings.Repeat("m", 10_000)
	const pushes = 2000 // 20 MB: more than the sockets hold
	for i := 0; i < pushes; i++ {
		admin.send(encode("PUBLISH", "x", msg))
	}
	for i := 0; i < pushes; i++ {
		admin.read()
	}
	srv.Pause(time.Minute)
	// take what the flusher wrote; it then waits for the stall, fmu held
	buf := make([]byte, 1<<20)
	for {
		c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.conn.Read(buf); err != nil {
			break
		}
	}
	req := strings.Repeat("PING\r\n", 32<<20/6)
	c.conn.SetWriteDeadline(time.Now().Add(3 * time.Second))
	if n, err := c.conn.Write([]byte(req)); err == nil || n > 16<<20 {
		t.Fatalf("a stalled server took %d of %d bytes of a push-capable client's input (%v)", n, len(req), err)
	}
}
