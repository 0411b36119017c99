package server

import (
	"bufio"
	"crypto/tls"
	"io"
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

// expectPipelineServed sends a pipeline of 450000 GETs of a 60-byte value
// on c before reading any reply (pipelineUnread), and checks every reply.
func expectPipelineServed(t *testing.T, c *rawClient) {
	t.Helper()
	val := strings.Repeat("v", 60)
	if got := c.do("SET", "k", val); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const n = 450000
	sent := make(chan error, 1)
	go func() { sent <- pipelineUnread(t, c, "k", n) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("sending the pipeline: %v (the server stopped reading)", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the pipeline was not sent")
	}
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
