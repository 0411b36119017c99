package engine

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MIGRATE keeps its connection to a target for the next MIGRATE (INFO's
// migrate_cached_sockets counts it), and Engine.Close (the server
// closing) closes it: the target sees its end.
func TestMigrate_CloseEndsCachedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- c
	}()
	te := newTestEngine(t)
	te.expect("+OK", "SET", "k", "v")
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	done := make(chan string, 1)
	go func() { done <- te.do("MIGRATE", "127.0.0.1", port, "k", "0", "5000", "COPY") }()
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("MIGRATE did not connect")
	}
	defer c.Close()
	// a fake target: +OK to SELECT and to the RESTORE
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("+OK\r\n+OK\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "+OK" {
		t.Fatalf("MIGRATE = %q", got)
	}
	sent := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := r.Read(sent)
	if !strings.Contains(string(sent[:n]), "RESTORE") {
		t.Fatalf("the target got %q", sent[:n])
	}
	if got := te.infoField("stats", "migrate_cached_sockets"); got != "1" {
		t.Fatalf("migrate_cached_sockets = %q with a connection kept, want 1", got)
	}
	te.Close()
	if got := te.infoField("stats", "migrate_cached_sockets"); got != "0" {
		t.Fatalf("migrate_cached_sockets = %q after Close, want 0", got)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadByte(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("after Close the target's connection is still open (%v)", err)
	}
}

// A connection unused for migrateSocketIdle is closed, and no longer
// counted, by the next INFO (as Redis's cron closes it within a second).
func TestMigrate_IdleConnectionsCloseAndUncount(t *testing.T) {
	te := newTestEngine(t)
	ours, theirs := net.Pipe()
	defer theirs.Close()
	te.migrate.conns = map[string]*migrateConn{
		"idle:1":  {c: ours, r: bufio.NewReader(ours), lastDB: -1, lastUse: time.Now().Add(-migrateSocketIdle - time.Second)},
		"fresh:1": {c: nopConn{}, lastDB: -1, lastUse: time.Now()},
	}
	if got := te.infoField("stats", "migrate_cached_sockets"); got != "1" {
		t.Fatalf("migrate_cached_sockets = %q, want 1 (the idle one closed)", got)
	}
	_ = theirs.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := theirs.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the idle connection is still open (%v)", err)
	}
}

// nopConn is a net.Conn that does nothing.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// A target's reply line is read into Redis's 1024-byte buffer: a longer
// line is cut at 1023 bytes and its rest read as the next reply, as
// redis-server 7.0.15 reads it (checked against a fake target): an error
// line of 1500 bytes is reported cut, and the next MIGRATE on the cached
// connection takes the rest as its reply (no '-': success). A target
// streaming bytes without a newline is answered at once the same way;
// before, the line was kept whole, growing for the whole timeout.
func TestMigrate_ReplyLineCutAt1023Bytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	// The fake target answers each command it reads (SELECT, RESTORE)
	// with the next of replies, in order, however the commands arrive.
	replies := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := readCommand(r); err != nil {
						return
					}
					select {
					case reply := <-replies:
						if _, err := c.Write([]byte(reply)); err != nil {
							return
						}
					case <-done:
						return
					}
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	te := newTestEngine(t)
	defer te.Close()
	te.expect("+OK", "SET", "k", "v")
	replies <- "+OK\r\n"                                // SELECT
	replies <- "-" + strings.Repeat("E", 1499) + "\r\n" // RESTORE: an error line of 1500 bytes
	want := "-ERR Target instance replied with error: " + strings.Repeat("E", migrateLineMax-1)
	if got := te.do("MIGRATE", "127.0.0.1", port, "k", "0", "5000"); got != want {
		t.Fatalf("MIGRATE = %.80q... (%d bytes), want %d bytes", got, len(got), len(want))
	}
	te.expect(":1", "EXISTS", "k") // not moved
	// The rest of the error line (477 bytes) is the next MIGRATE's first
	// reply, its SELECT's (sent again after a target's error).
	replies <- ""        // SELECT
	replies <- "+OK\r\n" // RESTORE
	te.expect("+OK", "MIGRATE", "127.0.0.1", port, "k", "0", "5000")
	te.expect(":0", "EXISTS", "k") // moved
	// A reply that never ends its line: its first 1023 bytes are one.
	te.expect("+OK", "SET", "k", "v")
	replies <- strings.Repeat("x", 1<<20) // RESTORE (the same database: no SELECT)
	te.expect("+OK", "MIGRATE", "127.0.0.1", port, "k", "0", "5000", "COPY")
	// A bare newline is a socket error (after one retry on a new
	// connection, which this target never answers: the timeout).
	te.Close()
	te = newTestEngine(t)
	defer te.Close()
	te.expect("+OK", "SET", "k", "v")
	replies <- "+OK\r\n" // SELECT
	replies <- "\n"      // RESTORE
	te.expect("-IOERR error or timeout reading to target instance", "MIGRATE", "127.0.0.1", port, "k", "0", "500", "COPY")
}

// readCommand reads one RESP command (an array of bulk strings) from r.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:l])
	}
	return args, nil
}
