package server

import (
	"strings"
	"testing"
	"time"
)

func inval3(keys ...string) string {
	s := ">2\r\n" + bulk("invalidate") + "*" + itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += bulk(k)
	}
	return s
}

// invalRedirected is an invalidation as a RESP2 redirect client gets it: a
// message on __redis__:invalidate whose payload is the key array.
func invalRedirected(keys ...string) string {
	s := "*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + "*" + itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += bulk(k)
	}
	return s
}

// A RESP3 tracking client is told when another client writes a key it
// read, once: the key is forgotten until read again.
func TestTracking_RESP3InvalidationFromOtherClient(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("_\r\n", "GET", "k")
	a.expectDo("*2\r\n_\r\n_\r\n", "MGET", "x", "y")

	b.expectDo("+OK\r\n", "SET", "k", "1")
	a.expect(inval3("k")) // arrives without a.sending anything
	b.expectDo("+OK\r\n", "SET", "k", "2")
	b.expectDo(":0\r\n", "DEL", "y") // nothing deleted: nothing to say
	b.expectDo("+OK\r\n", "SET", "y", "1")
	a.expect(inval3("y"))
	a.expectDo("+PONG\r\n", "PING") // nothing for the second SET of k

	a.expectDo("$1\r\n2\r\n", "GET", "k")
	b.expectDo(":1\r\n", "INCR", "x")
	a.expect(inval3("x"))
	b.expectDo(":1\r\n", "DEL", "k")
	a.expect(inval3("k"))

	// Flushes invalidate everything with a null.
	a.expectDo("_\r\n", "GET", "k")
	b.expectDo("+OK\r\n", "FLUSHALL")
	a.expect(">2\r\n" + bulk("invalidate") + "_\r\n")
	b.expectDo("+OK\r\n", "SET", "k", "3") // the flush forgot k
	a.expectDo("+PONG\r\n", "PING")

	// Tracking off: silence.
	a.expectDo("$1\r\n3\r\n", "GET", "k")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "OFF")
	b.expectDo("+OK\r\n", "SET", "k", "4")
	b.expectDo("+OK\r\n", "FLUSHALL")
	a.expectDo("+PONG\r\n", "PING")
}

// The tracking client's own writes are invalidated after their reply, and
// not at all with NOLOOP.
func TestTracking_OwnWritesAfterReplyAndNoLoop(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.send(encode("GET", "k") + encode("SET", "k", "v") + encode("PING"))
	a.expect("_\r\n")
	a.expect("+OK\r\n")
	a.expect(inval3("k"))
	a.expect("+PONG\r\n")

	b := dial(t, srv.Addr())
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "NOLOOP")
	a.expectDo("$1\r\nv\r\n", "GET", "k")
	a.expectDo("+OK\r\n", "SET", "k", "w") // no invalidation for its own write
	a.expectDo("+PONG\r\n", "PING")
	a.expectDo("$1\r\nw\r\n", "GET", "k")
	b.expectDo("+OK\r\n", "SET", "k", "x")
	a.expect(inval3("k"))
}

// A blocked BLMOVE that a push serves writes its destination, which its
// client tracks: the invalidation follows the BLMOVE's reply (Redis's
// "Unblocked BLMOVE gets notification after response"), and with NOLOOP
// there is none, the write being the client's own.
func TestTracking_UnblockedBLMOVEInvalidatesAfterReply(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	for _, noloop := range []bool{false, true} {
		b.expectDo(":1\r\n", "RPUSH", "dst", "a")
		args := []string{"CLIENT", "TRACKING", "ON"}
		if noloop {
			args = append(args, "NOLOOP")
		}
		a.expectDo("+OK\r\n", args...)
		a.expectDo("*1\r\n$1\r\na\r\n", "LRANGE", "dst", "0", "-1") // tracks dst
		a.send(encode("BLMOVE", "src", "dst", "LEFT", "LEFT", "0"))
		waitBlockedClients(t, srv, 1)
		b.expectDo(":1\r\n", "RPUSH", "src", "foo")
		a.expect("$3\r\nfoo\r\n")
		if !noloop {
			a.expect(inval3("dst"))
		}
		a.expectDo("+PONG\r\n", "PING") // nothing else came in between
		a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "OFF")
		b.expectDo(":1\r\n", "DEL", "dst")
	}
}

// Keys read inside a script are tracked for the script's caller, declared
// or not (Redis 7.2 tracks the keys of each read command a script runs;
// 7.0 tracked the script's declared KEYS).
func TestTracking_KeysReadInsideScripts(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("_\r\n", "EVAL", "return redis.call('get', KEYS[1])", "1", "declared")
	a.expectDo("_\r\n", "EVAL", "return redis.call('get', 'undeclared')", "0")
	a.expectDo("+OK\r\n", "EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "written")
	b.expectDo("+OK\r\n", "MSET", "declared", "1", "undeclared", "2", "written", "3")
	a.expect(inval3("declared"))
	a.expect(inval3("undeclared"))
	a.expectDo("+PONG\r\n", "PING") // "written" was never read
}

// rueidislock's shape: OPTOUT tracking, a script that SETs NX then GETs.
// A waiter's failed attempt tracks the lock key, so the holder's release
// (DEL from a script) invalidates it and wakes the waiter.
func TestTracking_LockReleaseWakesWaiter(t *testing.T) {
	srv := RunT(t)
	acquire := "local r = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]); redis.call('GET', KEYS[1]); return r"
	release := "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end; return 0"
	holder := dial(t, srv.Addr())
	waiter := dial(t, srv.Addr())
	for _, c := range []*rawClient{holder, waiter} {
		c.hello3()
		c.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "OPTOUT")
	}
	holder.expectDo("+OK\r\n", "EVAL", acquire, "1", "lock", "h", "60000")
	waiter.expectDo("_\r\n", "EVAL", acquire, "1", "lock", "w", "60000")
	holder.expectDo(":1\r\n", "EVAL", release, "1", "lock", "h")
	holder.expect(inval3("lock")) // its own tracked read, after the reply
	waiter.expect(inval3("lock")) // no command needed: the push wakes it
	waiter.expectDo("+OK\r\n", "EVAL", acquire, "1", "lock", "w", "60000")
}

// OPTIN tracks only the command after CLIENT CACHING YES; OPTOUT tracks
// all but the command after CLIENT CACHING NO.
func TestTracking_OptInOptOut(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "OPTIN")
	a.send(encode("GET", "no1") + encode("CLIENT", "CACHING", "YES") + encode("GET", "yes1") + encode("GET", "no2"))
	a.expect("_\r\n")
	a.expect("+OK\r\n")
	a.expect("_\r\n")
	a.expect("_\r\n")
	// Other CLIENT commands between CACHING and the read keep the flag.
	a.send(encode("CLIENT", "CACHING", "YES") + encode("CLIENT", "ID") + encode("GET", "yes2"))
	a.expect("+OK\r\n")
	a.read()
	a.expect("_\r\n")
	b.expectDo("+OK\r\n", "MSET", "no1", "1", "yes1", "1", "no2", "1", "yes2", "1")
	a.expect(inval3("yes1"))
	a.expect(inval3("yes2"))
	a.expectDo("+PONG\r\n", "PING")

	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "OFF")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "OPTOUT")
	a.send(encode("CLIENT", "CACHING", "NO") + encode("GET", "no1") + encode("GET", "yes1"))
	a.expect("+OK\r\n")
	a.expect("$1\r\n1\r\n")
	a.expect("$1\r\n1\r\n")
	b.expectDo("+OK\r\n", "MSET", "no1", "2", "yes1", "2")
	a.expect(inval3("yes1"))
	a.expectDo("+PONG\r\n", "PING")
}

// RESP2 clients get invalidations through a REDIRECT client subscribed to
// __redis__:invalidate; flushes arrive as a null payload in the tracking
// client's protocol.
func TestTracking_RESP2Redirect(t *testing.T) {
	srv := RunT(t)
	redir := dial(t, srv.Addr())
	id := redir.id()
	redir.expectDo(confirmation(2, "subscribe", "__redis__:invalidate", 1), "SUBSCRIBE", "__redis__:invalidate")
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id)
	a.expectDo(":"+id+"\r\n", "CLIENT", "GETREDIR")
	a.expectDo("$-1\r\n", "GET", "k")
	b.expectDo("+OK\r\n", "SET", "k", "1")
	redir.expect(invalRedirected("k"))

	// The tracking client's own write goes to the redirect client too.
	a.expectDo("$1\r\n1\r\n", "GET", "k")
	a.expectDo("+OK\r\n", "SET", "k", "2")
	redir.expect(invalRedirected("k"))

	b.expectDo("+OK\r\n", "FLUSHDB")
	redir.expect("*3\r\n" + bulk("message") + bulk("__redis__:invalidate") + "$-1\r\n")

	// CLIENT LIST shows the tracking and the redirect.
	if l := b.do("CLIENT", "LIST"); !strings.Contains(l, " flags=t db=0 ") || !strings.Contains(l, " redir="+id+" ") {
		t.Fatalf("CLIENT LIST: %q", l)
	}
	// A RESP3 redirect target that is subscribed gets pushes.
	r3 := dial(t, srv.Addr())
	r3.hello3()
	id3 := r3.id()
	r3.expectDo(confirmation(3, "subscribe", "other", 1), "SUBSCRIBE", "other")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id3)
	a.expectDo("$-1\r\n", "GET", "j")
	b.expectDo("+OK\r\n", "SET", "j", "1")
	r3.expect(inval3("j"))
}

// When the redirect client is gone, a RESP3 tracking client is told with
// a tracking-redir-broken push, and TRACKINGINFO shows it.
func TestTracking_BrokenRedirect(t *testing.T) {
	srv := RunT(t)
	redir := dial(t, srv.Addr())
	id := redir.id()
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id)
	a.expectDo("_\r\n", "GET", "k")
	redir.conn.Close()
	eventually(t, "the redirect client to go", func() bool {
		return !strings.Contains(b.do("CLIENT", "LIST"), "id="+id+" ")
	})
	broken := ">2\r\n" + bulk("tracking-redir-broken") + ":" + id + "\r\n"
	b.expectDo("+OK\r\n", "SET", "k", "1")
	a.expect(broken)
	info := a.do("CLIENT", "TRACKINGINFO")
	want := "%3\r\n" + bulk("flags") + "~2\r\n" + bulk("on") + bulk("broken_redirect") + bulk("redirect") + ":" + id + "\r\n" + bulk("prefixes") + "*0\r\n"
	if info != want {
		t.Fatalf("TRACKINGINFO %q\nwant %q", info, want)
	}
	if l := a.do("CLIENT", "INFO"); !strings.Contains(l, " flags=tR ") {
		t.Fatalf("CLIENT INFO: %q", l)
	}
	// Its own write: the notice comes after the reply.
	a.expectDo("$1\r\n1\r\n", "GET", "k")
	a.send(encode("SET", "k", "2") + encode("PING"))
	a.expect("+OK\r\n")
	a.expect(broken)
	a.expect("+PONG\r\n")
	// A redirect to a client that is already gone is refused.
	a.expectDo("-ERR The client ID you want redirect to does not exist\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id)
}

// A tracked key that expires is invalidated without any command, by the
// active expiry.
func TestTracking_ExpiryInvalidates(t *testing.T) {
	srv := RunT(t, WithManualClock())
	a := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "SET", "k", "v", "PX", "1000")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("$1\r\nv\r\n", "GET", "k")
	srv.Advance(1001 * time.Millisecond) // past the deadline's millisecond
	a.expect(inval3("k"))
	a.expectDo("_\r\n", "GET", "k")
}

// BCAST clients hear of every write under their prefixes, gathered per
// command read, one message per prefix.
func TestTracking_BCAST(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "job:")
	b.expectDo("+OK\r\n", "MSET", "user:2", "x", "other", "y", "user:1", "z", "job:9", "w")
	a.expect(inval3("job:9"))
	a.expect(inval3("user:1", "user:2"))
	// A pipeline's writes are gathered into one message.
	b.send(encode("SET", "user:3", "a") + encode("DEL", "user:1") + encode("SET", "nope", "b"))
	b.expect("+OK\r\n")
	b.expect(":1\r\n")
	b.expect("+OK\r\n")
	a.expect(inval3("user:1", "user:3"))
	a.expectDo("+PONG\r\n", "PING")

	// NOLOOP drops the client's own writes from what it hears.
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "OFF")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP")
	a.expectDo("+OK\r\n", "SET", "mine", "1")
	b.expectDo("+OK\r\n", "SET", "theirs", "1")
	a.expect(inval3("theirs"))
	a.expectDo("+PONG\r\n", "PING")
}

// RESET and closing the connection end tracking; when nobody tracks, the
// table is emptied.
func TestTracking_ResetAndCloseEndTracking(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("_\r\n", "GET", "k")
	a.expectDo("+RESET\r\n", "RESET")
	b.expectDo("+OK\r\n", "SET", "k", "1")
	a.expectDo("*6\r\n"+bulk("flags")+"*1\r\n"+bulk("off")+bulk("redirect")+":-1\r\n"+bulk("prefixes")+"*0\r\n", "CLIENT", "TRACKINGINFO")

	c := dial(t, srv.Addr())
	c.hello3()
	c.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p")
	c.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q")
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	a.expectDo("$1\r\n1\r\n", "GET", "k")
	if n := srv.trk.nclients.Load(); n != 2 {
		t.Fatalf("%d tracking clients, want 2", n)
	}
	c.conn.Close()
	a.conn.Close()
	eventually(t, "tracking to end with the connections", func() bool { return srv.trk.nclients.Load() == 0 })
	srv.trk.mu.Lock()
	keys, prefixes := len(srv.trk.keys), len(srv.trk.prefixes)
	srv.trk.mu.Unlock()
	if keys != 0 || prefixes != 0 {
		t.Fatalf("after the last tracking client left: %d keys, %d prefixes remain", keys, prefixes)
	}
	b.expectDo("+OK\r\n", "MSET", "k", "2", "p1", "x", "q1", "y")
}

// Tracking costs nothing when nobody tracks: writes skip the table.
func BenchmarkTracking_WriteWithoutTrackers(b *testing.B) {
	srv := RunT(b)
	c := dial(b, srv.Addr())
	req := encode("SET", "k", "v")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.send(req)
		c.read()
	}
}

// tracking-table-max-keys holds the tracking table to its size: keys
// taken at random are invalidated for the clients that may cache them,
// the reader included, NOLOOP or not. No key a client read is left both
// out of the table and uninvalidated (it would stay in its cache, stale).
func TestTracking_TableMaxKeys(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "NOLOOP")
	b.expectDo("+OK\r\n", "CONFIG", "SET", "tracking-table-max-keys", "10")
	evicted := map[string]bool{}
	// readPushes reads replies until want, collecting invalidations
	readPushes := func(want string) {
		t.Helper()
		for {
			r := a.read()
			if r == want {
				return
			}
			if !strings.HasPrefix(r, ">2\r\n"+bulk("invalidate")+"*1\r\n") {
				t.Fatalf("reply %q, want %q or an invalidation", r, want)
			}
			k := strings.Split(r, "\r\n")[5]
			if evicted[k] {
				t.Fatalf("%s invalidated twice", k)
			}
			evicted[k] = true
		}
	}
	for i := range 30 {
		a.send(encode("GET", "k"+itoa(i)))
		readPushes("_\r\n")
	}
	a.send(encode("PING"))
	readPushes("+PONG\r\n")
	if len(evicted) != 20 {
		t.Fatalf("%d keys invalidated by the limit, want 20: %v", len(evicted), evicted)
	}
	if got := infoField(t, b, "stats", "tracking_total_keys"); got != "10" {
		t.Fatalf("tracking_total_keys = %s, want 10", got)
	}
	// the other ten are still tracked: writing every key invalidates them
	for i := range 30 {
		b.do("SET", "k"+itoa(i), "v")
	}
	before := len(evicted)
	a.send(encode("PING"))
	readPushes("+PONG\r\n")
	if len(evicted) != 30 || before != 20 {
		t.Fatalf("after writing every key, %d invalidated in all (%d before), want 30", len(evicted), before)
	}
	// a lower limit holds at once
	clear(evicted)
	b.expectDo("+OK\r\n", "CONFIG", "SET", "tracking-table-max-keys", "100")
	for i := range 30 {
		a.send(encode("GET", "k"+itoa(i)))
		readPushes("$1\r\nv\r\n")
	}
	b.expectDo("+OK\r\n", "CONFIG", "SET", "tracking-table-max-keys", "4")
	if got := infoField(t, b, "stats", "tracking_total_keys"); got != "4" {
		t.Fatalf("tracking_total_keys after lowering the limit = %s, want 4", got)
	}
	a.send(encode("PING"))
	readPushes("+PONG\r\n")
	if len(evicted) != 26 {
		t.Fatalf("%d keys invalidated by the lower limit, want 26", len(evicted))
	}
}

// CLIENT SETINFO has its own handler in Redis 7.2 (clientSetinfoCommand),
// so it ends a CLIENT CACHING window as a command other than CLIENT does
// (resetClient keeps the window after clientCommand only); its error
// names the attribute as sent.
func TestTracking_SetInfoEndsACachingWindow(t *testing.T) {
	srv := RunT(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "OPTIN")
	a.send(encode("CLIENT", "CACHING", "YES") + encode("CLIENT", "SETINFO", "lib-name", "x") + encode("GET", "k"))
	a.expect("+OK\r\n")
	a.expect("+OK\r\n")
	a.expect("_\r\n")
	b.expectDo("+OK\r\n", "SET", "k", "1")
	a.expectDo("+PONG\r\n", "PING") // no invalidation before it: k was not tracked
	a.expectDo("-ERR Lib-Name cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETINFO", "Lib-Name", "a b")
}

// A RESP3 redirect target gets invalidations as pushes even if it never
// subscribed, tracked or monitored anything (Redis's sendTrackingMessage
// pushes to any RESP3 client), whether an event loop or its goroutine
// serves it, idle, blocked in BLPOP or not: BCAST's, a flush's null (in
// the tracking client's protocol), under CLIENT REPLY OFF too. Back to RESP2 it gets
// nothing, as in Redis; a target that turns RESP3 after the redirect was
// set gets them from then on.
func TestTracking_RESP3RedirectTargetNotSubscribed(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"loop", func(c *Config) { c.EventLoops = 1 }},
		{"goroutine", func(c *Config) { c.NoEventLoop = true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := RunT(t, WithConfig(mode.cfg))
			r := dial(t, srv.Addr())
			r.hello3()
			id := r.id()
			a := dial(t, srv.Addr()) // RESP2 tracking client
			b := dial(t, srv.Addr())
			a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id)
			a.expectDo("$-1\r\n", "GET", "k")
			b.expectDo("+OK\r\n", "SET", "k", "1")
			r.expect(inval3("k")) // without r sending anything
			r.expectDo("+PONG\r\n", "PING")

			// Its replies and the pushes stay whole and in order.
			a.expectDo("$1\r\n1\r\n", "GET", "k")
			b.expectDo("+OK\r\n", "SET", "k", "2")
			r.expect(inval3("k"))
			a.expectDo("$1\r\n2\r\n", "GET", "k")
			b.expectDo("+OK\r\n", "FLUSHALL")
			r.expect(">2\r\n" + bulk("invalidate") + "$-1\r\n") // a's null
			r.send(encode("CLIENT", "REPLY", "OFF"))
			a.expectDo("$-1\r\n", "GET", "k")
			b.expectDo("+OK\r\n", "SET", "k", "3")
			r.expect(inval3("k"))
			r.send(encode("CLIENT", "REPLY", "ON"))
			r.expect("+OK\r\n")

			// Back to RESP2, not subscribed: nothing, as Redis.
			r.send(encode("HELLO", "2"))
			if h := r.read(); !strings.HasPrefix(h, "*14\r\n") {
				t.Fatalf("HELLO 2: %q", h)
			}
			a.expectDo("$1\r\n3\r\n", "GET", "k")
			b.expectDo("+OK\r\n", "SET", "k", "4")
			r.expectDo("+PONG\r\n", "PING")

			// A target blocked in BLPOP gets them while it waits.
			w := dial(t, srv.Addr())
			w.hello3()
			wid := w.id()
			d := dial(t, srv.Addr())
			d.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", wid)
			d.expectDo("$-1\r\n", "GET", "bk")
			w.send(encode("BLPOP", "blist", "0"))
			eventually(t, "the target to block", func() bool {
				return strings.Contains(b.do("CLIENT", "LIST"), "id="+wid+" ") &&
					strings.Contains(b.do("CLIENT", "LIST"), "cmd=blpop")
			})
			b.expectDo("+OK\r\n", "SET", "bk", "1")
			w.expect(inval3("bk"))
			b.expectDo(":1\r\n", "RPUSH", "blist", "a")
			w.expect("*2\r\n" + bulk("blist") + bulk("a"))

			// BCAST, to a target that turned RESP3 after the redirect.
			q := dial(t, srv.Addr())
			qid := q.id()
			c := dial(t, srv.Addr())
			c.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", qid, "BCAST", "PREFIX", "u:")
			q.hello3()
			b.expectDo("+OK\r\n", "SET", "u:1", "x")
			q.expect(inval3("u:1"))
			q.expectDo("+PONG\r\n", "PING")
		})
	}
}

// The redirect target becomes push-capable while it is busy with its own
// requests: its replies and the pushes stay whole, none lost.
func TestTracking_RESP3RedirectTargetBusy(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"loop", func(c *Config) { c.EventLoops = 1 }},
		{"goroutine", func(c *Config) { c.NoEventLoop = true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := RunT(t, WithConfig(mode.cfg))
			for round := 0; round < 20; round++ {
				r := dial(t, srv.Addr())
				r.hello3()
				id := r.id()
				a := dial(t, srv.Addr())
				b := dial(t, srv.Addr())
				a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON", "REDIRECT", id)
				for i := 0; i < 5; i++ {
					a.expectDo("$-1\r\n", "GET", "k")
					r.send(strings.Repeat(encode("PING"), 50))
					b.send(encode("SET", "k", "1") + encode("DEL", "k"))
					b.expect("+OK\r\n")
					b.expect(":1\r\n")
					pongs, pushes := 0, 0
					for pongs < 50 || pushes < 1 {
						switch f := r.read(); f {
						case "+PONG\r\n":
							pongs++
						case inval3("k"):
							pushes++
						default:
							t.Fatalf("round %d: %q", round, f)
						}
					}
					r.expectDo("+PONG\r\n", "PING")
				}
				r.conn.Close()
				a.conn.Close()
				b.conn.Close()
			}
		})
	}
}

// An unknown subcommand ends the CLIENT CACHING window, as any command
// but CLIENT's own, also one a Kelvin sign spells like a subcommand
// ("\u212aILL", which Unicode lowers to "kill"): subcommands are found in
// ASCII case only, as Redis's.
func TestTracking_CachingWindowEndsAtAnUnknownSubcommand(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "client", "tracking", "on", "optin")
	a.expectDo("+OK\r\n", "client", "caching", "yes")
	if got := a.do("client", "\u212aILL", "x"); !strings.HasPrefix(got, "-ERR unknown subcommand") {
		t.Fatalf("CLIENT \\u212aILL = %q", got)
	}
	a.expectDo("_\r\n", "get", "k") // not tracked: the window has ended
	b.expectDo("+OK\r\n", "set", "k", "1")
	a.expectDo("+PONG\r\n", "ping")
}
