package engine

import (
	"testing"
	"time"
)

// RENAME, RENAMENX, COPY, TOUCH: replies are redis-server's (keys.txt
// diffs them and more against it).
func TestRename_MovesValueAndTTL(t *testing.T) {
	e := newTestEngine(t)
	e.expect("-"+ErrNoSuchKey, "RENAME", "a", "b")
	e.expect("-"+ErrNoSuchKey, "RENAMENX", "a", "a")
	e.expect("+OK", "SET", "a", "1")
	e.expect("+OK", "RENAME", "a", "a")
	e.expect(":0", "RENAMENX", "a", "a")
	e.expect("+OK", "SET", "c", "2", "EX", "100")
	e.expect("+OK", "RENAME", "c", "a") // overwrites, TTL moves with the value
	e.expect(":0", "EXISTS", "c")
	e.expect("$2", "GET", "a")
	e.expect(":100", "TTL", "a")
	e.expect("+OK", "SET", "d", "3")
	e.expect(":0", "RENAMENX", "d", "a")
	e.expect(":1", "RENAMENX", "d", "e")
	e.expect(":-1", "TTL", "e")
	e.expect(":2", "RPUSH", "l", "x", "y")
	e.expect("+OK", "RENAME", "l", "l2")
	e.expect("*2 $x $y", "LRANGE", "l2", "0", "-1")
	e.expect("+none", "TYPE", "l")
}

func TestCopy_DeepCopiesWithTTL(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "HSET", "h", "f", "v")
	e.expect(":1", "COPY", "h", "h2")
	e.expect(":1", "HSET", "h2", "g", "w")
	e.expect(":1", "HLEN", "h") // the copy is its own hash
	e.expect(":2", "RPUSH", "l", "x", "y")
	e.expect(":1", "COPY", "l", "l2")
	e.expect(":3", "RPUSH", "l2", "z")
	e.expect(":2", "LLEN", "l")
	e.expect(":0", "COPY", "h", "h2")
	e.expect(":1", "COPY", "h", "h2", "REPLACE")
	e.expect(":1", "HLEN", "h2")
	e.expect(":0", "COPY", "nosuch", "x")
	e.expect("-"+ErrSameObject, "COPY", "h", "h")
	e.expect("-"+ErrDBIndex, "COPY", "h", "x", "DB", "16")
	e.expect("-"+ErrDBIndex, "COPY", "h", "x", "DB", "-1")
	e.expect("-"+ErrSameObject, "COPY", "h", "h", "DB", "0")
	e.expect("-"+ErrSyntax, "COPY", "h", "x", "DB")
	e.expect("-"+ErrNotInteger, "COPY", "h", "x", "DB", "x")
	e.expect("+OK", "SET", "t", "5", "PX", "100000")
	e.expect(":1", "COPY", "t", "t2", "DB", "0")
	e.expect(":100000", "PTTL", "t2")
	e.expect(":2", "TOUCH", "t", "t2", "nosuch")
}

// A list renamed onto a key a client waits for wakes it, as Redis's
// dbAdd signals the key ready.
func TestRename_WakesBlockedClient(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	if got := a.run("BLPOP", "q", "0"); got != "" {
		t.Fatalf("a blocked BLPOP replied %q", got)
	}
	w := a.ctx.Blocked
	if got := b.run("RPUSH", "src", "x"); got != ":1" {
		t.Fatalf("RPUSH = %q", got)
	}
	if got := b.run("RENAME", "src", "q"); got != "+OK" {
		t.Fatalf("RENAME = %q", got)
	}
	if !isClosed(w.Done()) {
		t.Fatal("waiter not served after RENAME")
	}
	if got := a.finish(WaitWoken); got != "*2 $q $x" {
		t.Fatalf("served reply %q", got)
	}
	e.noWaiters()
}

func TestRandomKey(t *testing.T) {
	e := newTestEngine(t)
	e.expect("(nil)", "RANDOMKEY")
	keys := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d"} {
		e.expect("+OK", "SET", k, "v")
		keys[k] = true
	}
	seen := map[string]bool{}
	for i := 0; i < 400; i++ {
		got := e.do("RANDOMKEY")
		k := got[1:]
		if !keys[k] {
			t.Fatalf("RANDOMKEY = %q", got)
		}
		seen[k] = true
	}
	// every key is as likely (keyTable.random): 400 draws miss one of four
	// with a chance of 4·(3/4)^400
	if len(seen) != len(keys) {
		t.Fatalf("400 draws gave only %v", seen)
	}
}

// An expired key drawn is reclaimed and another drawn: with only expired
// keys left, RANDOMKEY empties the keyspace and replies nil.
func TestRandomKey_SkipsExpired(t *testing.T) {
	e := newTestEngine(t)
	for _, k := range []string{"a", "b", "c"} {
		e.expect("+OK", "SET", k, "v", "PX", "10")
	}
	e.expect("+OK", "SET", "live", "v")
	e.clock.Advance(20 * time.Millisecond)
	for i := 0; i < 20; i++ {
		e.expect("$live", "RANDOMKEY")
	}
	e.expect(":1", "DEL", "live")
	e.expect("(nil)", "RANDOMKEY")
}
