package engine

import (
	"bufio"
	"net"
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
