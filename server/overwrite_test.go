package server

import (
	"io"
	"testing"
	"time"
)

// A SET of a value of the same size overwrites the old one in place
// (engine's entry.overwrite). The value the fixture's Get returned aliases
// the old bytes: it must not change with the key.
func TestFixtureGet_ValueStaysWhenTheKeyIsSet(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	srv.Set("k", "old1", 0)
	v, ok := srv.Get("k")
	if !ok || v != "old1" {
		t.Fatal(v, ok)
	}
	for _, val := range []string{"new1", "new2"} {
		if got := c.do("SET", "k", val); got != "+OK\r\n" {
			t.Fatal(got)
		}
	}
	if v != "old1" {
		t.Fatalf("the value Get returned is now %q", v)
	}
	if v, _ := srv.Get("k"); v != "new2" {
		t.Fatal(v)
	}
}

// Replies of one batch are written after all its commands have run: a
// GET's reply, built before a SET of the same key overwrites the value
// in place, must hold the old value (the connection's writer copies it).
func TestPipeline_GetThenSetInOneBatch(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("SET", "k", "old1")
	c.send(encode("GET", "k") + encode("SET", "k", "new1") + encode("GET", "k") +
		encode("SET", "k", "new2", "GET") + encode("MULTI") + encode("GET", "k") +
		encode("SET", "k", "new3") + encode("EXEC"))
	want := "$4\r\nold1\r\n+OK\r\n$4\r\nnew1\r\n$4\r\nnew1\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n" +
		"*2\r\n$4\r\nnew2\r\n+OK\r\n"
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.rd, got); err != nil || string(got) != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
}
