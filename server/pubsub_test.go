package server

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// ---- helpers shared by the pub/sub, tracking and probe tests ----

// bulk and eventually are in fixture_test.go.

// msg2 and msg3 are a pub/sub message as RESP2 and RESP3 encode it.
func msg2(ch, m string) string { return "*3\r\n" + bulk("message") + bulk(ch) + bulk(m) }
func msg3(ch, m string) string { return ">3\r\n" + bulk("message") + bulk(ch) + bulk(m) }
func pmsg(proto int, pat, ch, m string) string {
	h := "*4\r\n"
	if proto == 3 {
		h = ">4\r\n"
	}
	return h + bulk("pmessage") + bulk(pat) + bulk(ch) + bulk(m)
}

// confirmation is a (un)subscribe reply.
func confirmation(proto int, verb, name string, n int) string {
	h := "*3\r\n"
	if proto == 3 {
		h = ">3\r\n"
	}
	return h + bulk(verb) + bulk(name) + ":" + strconv.Itoa(n) + "\r\n"
}

// hello3 switches a raw client to RESP3.
func (c *rawClient) hello3() {
	c.t.Helper()
	if r := c.do("HELLO", "3"); !strings.HasPrefix(r, "%7\r\n") {
		c.t.Fatalf("HELLO 3: %q", r)
	}
}

// id returns the connection's CLIENT ID.
func (c *rawClient) id() string {
	c.t.Helper()
	r := c.do("CLIENT", "ID")
	if !strings.HasPrefix(r, ":") {
		c.t.Fatalf("CLIENT ID: %q", r)
	}
	return strings.TrimSuffix(r[1:], "\r\n")
}

// expect reads one frame and requires it to be want.
func (c *rawClient) expect(want string) {
	c.t.Helper()
	if got := c.read(); got != want {
		c.t.Fatalf("got %q\nwant %q", got, want)
	}
}

// expectDo sends a command and requires its next frame to be want.
func (c *rawClient) expectDo(want string, args ...string) {
	c.t.Helper()
	if got := c.do(args...); got != want {
		c.t.Fatalf("%q: got %q\nwant %q", args, got, want)
	}
}

// ---- pub/sub ----

// Messages reach every subscriber of the channel and of matching patterns,
// RESP2 as arrays and RESP3 as pushes, and PUBLISH counts each receipt.
func TestPubSub_DeliveryRESP2AndRESP3(t *testing.T) {
	srv := RunT(t)
	s2 := dial(t, srv.Addr())
	s3 := dial(t, srv.Addr())
	s3.hello3()
	pub := dial(t, srv.Addr())

	s2.expectDo(confirmation(2, "subscribe", "news", 1), "SUBSCRIBE", "news")
	s2.expectDo(confirmation(2, "psubscribe", "n*", 2), "PSUBSCRIBE", "n*")
	s3.expectDo(confirmation(3, "subscribe", "news", 1), "SUBSCRIBE", "news")
	s3.expectDo(confirmation(3, "psubscribe", "*s", 2), "PSUBSCRIBE", "*s")
	s3.expectDo(confirmation(3, "psubscribe", "x*", 3), "PSUBSCRIBE", "x*")

	pub.expectDo(":4\r\n", "PUBLISH", "news", "hello")
	s2.expect(msg2("news", "hello"))
	s2.expect(pmsg(2, "n*", "news", "hello"))
	s3.expect(msg3("news", "hello"))
	s3.expect(pmsg(3, "*s", "news", "hello"))

	pub.expectDo(":1\r\n", "PUBLISH", "nope", "x")
	s2.expect(pmsg(2, "n*", "nope", "x"))
	pub.expectDo(":0\r\n", "PUBLISH", "other", "x")
	pub.expectDo(":1\r\n", "PUBLISH", "xyz", "")
	s3.expect(pmsg(3, "x*", "xyz", ""))

	// Binary-safe channel and payload.
	bin := "a\r\nb\x00c"
	s2.expectDo(confirmation(2, "subscribe", bin, 3), "SUBSCRIBE", bin)
	pub.expectDo(":1\r\n", "PUBLISH", bin, bin)
	s2.expect(msg2(bin, bin))

	// Nothing else arrived: the next frame is the PING reply.
	s2.expectDo("*2\r\n$4\r\npong\r\n$0\r\n\r\n", "PING")
	s3.expectDo("+PONG\r\n", "PING")
}

// PUBLISH inside a script reaches subscribers (Redisson and Spring publish
// on unlock from Lua); a RESP3 caller subscribed to the channel gets the
// message before the script's reply.
func TestPubSub_PublishFromLua(t *testing.T) {
	srv := RunT(t)
	s2 := dial(t, srv.Addr())
	s3 := dial(t, srv.Addr())
	s3.hello3()
	s2.expectDo(confirmation(2, "subscribe", "lock:ch", 1), "SUBSCRIBE", "lock:ch")
	s3.expectDo(confirmation(3, "subscribe", "lock:ch", 1), "SUBSCRIBE", "lock:ch")

	pub := dial(t, srv.Addr())
	pub.expectDo(":2\r\n", "EVAL", "return redis.call('publish', KEYS[1], ARGV[1])", "1", "lock:ch", "unlocked")
	s2.expect(msg2("lock:ch", "unlocked"))
	s3.expect(msg3("lock:ch", "unlocked"))

	// A Redisson-style unlock: delete the lock, then publish, atomically.
	pub.expectDo("+OK\r\n", "SET", "lock", "me")
	unlock := "if redis.call('get', KEYS[1]) == ARGV[2] then redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1 end; return 0"
	pub.expectDo(":1\r\n", "EVAL", unlock, "2", "lock", "lock:ch", "0", "me")
	s2.expect(msg2("lock:ch", "0"))
	s3.expect(msg3("lock:ch", "0"))

	// The subscriber itself runs the script: push first, then the reply.
	s3.send(encode("EVAL", "redis.call('publish', 'lock:ch', 'a'); return redis.call('publish', 'lock:ch', 'b')", "0") + encode("PING"))
	s3.expect(msg3("lock:ch", "a"))
	s3.expect(msg3("lock:ch", "b"))
	s3.expect(":2\r\n")
	s3.expect("+PONG\r\n")
	s2.expect(msg2("lock:ch", "a"))
	s2.expect(msg2("lock:ch", "b"))
}

// A RESP3 connection publishing to itself gets the push before PUBLISH's
// reply, in a pipeline too, as in Redis.
func TestPubSub_RESP3SelfPublishOrdering(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.hello3()
	c.expectDo(confirmation(3, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	c.send(encode("PUBLISH", "ch", "1") + encode("GET", "k") + encode("PUBLISH", "ch", "2") + encode("PING"))
	c.expect(msg3("ch", "1"))
	c.expect(":1\r\n")
	c.expect("_\r\n")
	c.expect(msg3("ch", "2"))
	c.expect(":1\r\n")
	c.expect("+PONG\r\n")
}

// No message on a channel arrives after its unsubscribe confirmation, and
// UNSUBSCRIBE with no channels leaves them all.
func TestPubSub_UnsubscribeStopsDelivery(t *testing.T) {
	srv := RunT(t)
	sub := dial(t, srv.Addr())
	pub := dial(t, srv.Addr())
	sub.send(encode("SUBSCRIBE", "a", "b", "c"))
	for i, ch := range []string{"a", "b", "c"} {
		sub.expect(confirmation(2, "subscribe", ch, i+1))
	}
	sub.expectDo(confirmation(2, "unsubscribe", "b", 2), "UNSUBSCRIBE", "b")
	pub.expectDo(":0\r\n", "PUBLISH", "b", "x")
	pub.expectDo(":1\r\n", "PUBLISH", "a", "y")
	sub.expect(msg2("a", "y"))

	// No arguments: every channel goes, each confirmed (in any order).
	sub.send(encode("UNSUBSCRIBE"))
	got := sub.read() + sub.read()
	ac := confirmation(2, "unsubscribe", "a", 1) + confirmation(2, "unsubscribe", "c", 0)
	ca := confirmation(2, "unsubscribe", "c", 1) + confirmation(2, "unsubscribe", "a", 0)
	if got != ac && got != ca {
		t.Fatalf("UNSUBSCRIBE: %q; want %q (or c first)", got, ac)
	}
	pub.expectDo(":0\r\n", "PUBLISH", "a", "z")
	sub.expectDo("+PONG\r\n", "PING") // out of subscribed mode
	sub.expectDo("$-1\r\n", "GET", "k")
}

// PUBSUB CHANNELS/NUMSUB/NUMPAT see every connection's subscriptions, and
// a closed connection's subscriptions go with it.
func TestPubSub_IntrospectionAcrossConnectionsAndClose(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	q := dial(t, srv.Addr())
	a.send(encode("SUBSCRIBE", "x", "y"))
	a.read()
	a.read()
	b.expectDo(confirmation(2, "subscribe", "x", 1), "SUBSCRIBE", "x")
	b.expectDo(confirmation(2, "psubscribe", "p*", 2), "PSUBSCRIBE", "p*")
	a.expectDo(confirmation(2, "psubscribe", "p*", 3), "PSUBSCRIBE", "p*")
	b.expectDo(confirmation(2, "ssubscribe", "s", 1), "SSUBSCRIBE", "s")

	q.expectDo("*2\r\n"+bulk("x")+bulk("y"), "PUBSUB", "CHANNELS")
	q.expectDo("*1\r\n"+bulk("y"), "PUBSUB", "CHANNELS", "[y]")
	q.expectDo("*6\r\n"+bulk("x")+":2\r\n"+bulk("y")+":1\r\n"+bulk("z")+":0\r\n", "PUBSUB", "NUMSUB", "x", "y", "z")
	q.expectDo(":1\r\n", "PUBSUB", "NUMPAT")
	q.expectDo("*1\r\n"+bulk("s"), "PUBSUB", "SHARDCHANNELS")
	q.expectDo("*2\r\n"+bulk("s")+":1\r\n", "PUBSUB", "SHARDNUMSUB", "s")
	q.expectDo(":1\r\n", "SPUBLISH", "s", "m")
	b.expect("*3\r\n" + bulk("smessage") + bulk("s") + bulk("m"))
	if info := q.do("CLIENT", "LIST"); !strings.Contains(info, "flags=P db=0 sub=1 psub=1 ssub=1") || !strings.Contains(info, "flags=P db=0 sub=2 psub=1 ssub=0") {
		t.Fatalf("CLIENT LIST does not show the subscriptions: %q", info)
	}

	b.conn.Close()
	eventually(t, "b's subscriptions to go", func() bool {
		return q.do("PUBSUB", "NUMSUB", "x") == "*2\r\n"+bulk("x")+":1\r\n" && q.do("PUBSUB", "SHARDCHANNELS") == "*0\r\n"
	})
	q.expectDo(":1\r\n", "PUBSUB", "NUMPAT") // a still has p*
	q.expectDo(":1\r\n", "PUBLISH", "x", "m")
	a.expect(msg2("x", "m"))
}

// RESET leaves subscribed mode silently; the connection gets no more
// messages.
func TestPubSub_ResetLeavesSubscribedMode(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	pub := dial(t, srv.Addr())
	c.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	c.expectDo("+RESET\r\n", "RESET")
	pub.expectDo(":0\r\n", "PUBLISH", "ch", "x")
	c.expectDo("$-1\r\n", "GET", "k")
	pub.expectDo("*2\r\n"+bulk("ch")+":0\r\n", "PUBSUB", "NUMSUB", "ch")
}

// Pushes from other connections never land inside a multi-part reply: a
// RESP3 subscriber runs commands with aggregate replies while another
// connection publishes to it as fast as it can.
func TestPubSub_PushesNeverTearReplies(t *testing.T) {
	srv := RunT(t)
	sub := dial(t, srv.Addr())
	// The publisher below runs flat out, faster than a loaded machine's
	// reads below may take its pushes: the subscriber must not meet its
	// output limit (TestPubSub_PushesNeverTearBlockedReplies met it on
	// every run without the race detector).
	sub.expectDo("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
	sub.hello3()
	sub.expectDo(confirmation(3, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	sub.expectDo("+OK\r\n", "MSET", "a", "1", "b", "2", "c", "3")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pub, err := dialErr(srv.Addr())
		if err != nil {
			t.Error(err)
			return
		}
		defer pub.Close()
		go io.Copy(io.Discard, pub)
		batch := strings.Repeat(encode("PUBLISH", "ch", "payload"), 50)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := pub.Write([]byte(batch)); err != nil {
				return
			}
		}
	}()

	mget := "*3\r\n" + bulk("1") + bulk("2") + bulk("3")
	numsub := "*2\r\n" + bulk("ch") + ":1\r\n"
	push := msg3("ch", "payload")
	sub.expect(push) // the publisher is running
	const rounds = 2000
	var req strings.Builder
	for i := 0; i < rounds; i++ {
		req.WriteString(encode("MGET", "a", "b", "c"))
		req.WriteString(encode("PUBSUB", "NUMSUB", "ch"))
	}
	sub.send(req.String())
	replies, pushes := 0, 0
	for replies < 2*rounds {
		switch f := sub.read(); f {
		case push:
			pushes++
		case mget, numsub:
			if (replies%2 == 0) != (f == mget) {
				t.Fatalf("reply %d out of order: %q", replies, f)
			}
			replies++
		default:
			t.Fatalf("torn or unexpected frame after %d replies and %d pushes: %q", replies, pushes, f)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d replies interleaved with %d pushes", replies, pushes)
}

// A subscriber that does not read is disconnected once its pending output
// passes the hard limit; PUBLISH never waits for it, and a subscriber that
// reads gets every message.
func TestPubSub_SlowSubscriberDisconnectedOthersUnaffected(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = OutputBufferLimits{PubSub: OutputBufferLimit{Hard: 1 << 20}}
	}))
	slow := dial(t, srv.Addr())
	fast := dial(t, srv.Addr())
	slow.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	fast.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")

	payload := strings.Repeat("x", 1024)
	var received atomic.Int64
	readErr := make(chan error, 1)
	go func() {
		for {
			var b strings.Builder
			fast.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			if err := readReply(fast.rd, &b); err != nil {
				readErr <- err // the test closing the connection ends this
				return
			}
			if b.String() != msg2("ch", payload) {
				readErr <- fmt.Errorf("fast subscriber got %q", b.String())
				return
			}
			received.Add(1)
		}
	}()

	pub := dial(t, srv.Addr())
	published := 0
	for slowGone := false; !slowGone; {
		if published > 200_000 {
			t.Fatal("the slow subscriber is never disconnected")
		}
		var batch strings.Builder
		for i := 0; i < 50; i++ {
			batch.WriteString(encode("PUBLISH", "ch", payload))
		}
		pub.send(batch.String())
		for i := 0; i < 50; i++ {
			r := pub.read()
			if r != ":2\r\n" && r != ":1\r\n" {
				t.Fatalf("PUBLISH: %q", r)
			}
			slowGone = slowGone || r == ":1\r\n"
		}
		published += 50
	}
	eventually(t, "the fast subscriber to get every message", func() bool {
		select {
		case err := <-readErr:
			t.Fatalf("after %d messages: %v", received.Load(), err)
		default:
		}
		return received.Load() == int64(published)
	})
	pub.expectDo("*2\r\n"+bulk("ch")+":1\r\n", "PUBSUB", "NUMSUB", "ch")

	// The slow connection was closed: after what was already sent, EOF.
	slow.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, slow.conn); err != nil {
		t.Fatalf("slow subscriber: want EOF after the buffered messages, got %v", err)
	}
	t.Logf("slow subscriber dropped after %d messages of %d bytes", published, len(payload))
}

// The soft limit disconnects a subscriber whose pending output stays at or
// above it for longer than SoftSeconds; output that drains below it
// restarts the count. Checked on the rule itself, with a manual clock.
func TestPubSub_SoftOutputLimit(t *testing.T) {
	clock := expiry.NewManualClock(time.Now())
	s := New(Config{Clock: clock, OutputBufferLimits: OutputBufferLimits{PubSub: OutputBufferLimit{Soft: 100, SoftSeconds: 60}}})
	c := &client{}
	c.w.b = make([]byte, 100)
	if s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("over the soft limit for the first time: not yet")
	}
	clock.Advance(60 * time.Second)
	if s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("60s at the soft limit: not yet (Redis needs more than soft_limit_seconds)")
	}
	c.w.b = c.w.b[:10]
	if s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("below the soft limit")
	}
	c.w.b = c.w.b[:100]
	clock.Advance(61 * time.Second)
	if s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("the count restarted when the output drained")
	}
	clock.Advance(61 * time.Second)
	if !s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("61s over the soft limit: want disconnect")
	}
	c.w.b, c.ps.inflight = nil, 100 // bytes being written count too
	c.ps.softSince = 0
	cfg := *s.live()
	cfg.OutputBufferLimits.PubSub = OutputBufferLimit{Hard: 100}
	s.prod.cfg.Store(&cfg)
	if !s.overLimit(c, s.live().OutputBufferLimits.PubSub) {
		t.Fatal("in-flight bytes at the hard limit: want disconnect")
	}
}

// The pub/sub output limit defaults to Redis's 32mb 8mb 60, and a zero
// hard and soft limit disables the check.
func TestPubSub_DefaultOutputLimit(t *testing.T) {
	s := New(Config{})
	if got := s.live().OutputBufferLimits.PubSub; got != (OutputBufferLimit{Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60}) {
		t.Fatalf("default limit %+v", got)
	}
	s = New(Config{OutputBufferLimits: OutputBufferLimits{Normal: OutputBufferLimit{Hard: 1 << 40}}})
	c := &client{}
	c.w.shared, c.ps.pubsub = true, true
	c.w.b = make([]byte, 64<<20)
	if s.pushOverLimit(c) {
		t.Fatal("a zero pub/sub limit must disable the check")
	}
}

// A push-capable client is held to its class's limit, as Redis's
// getClientType picks it: pubsub when subscribed, normal otherwise
// (MONITOR, a RESP3 tracking client). Once over, its output is dropped
// and it is reported once.
func TestPushOverLimit_Class(t *testing.T) {
	s := New(Config{OutputBufferLimits: OutputBufferLimits{Normal: OutputBufferLimit{Hard: 100}, PubSub: OutputBufferLimit{Hard: 1000}}})
	c := &client{}
	c.w.shared = true
	c.w.b = make([]byte, 500)
	c.ps.pubsub = true
	if s.pushOverLimit(c) {
		t.Fatal("subscribed, 500 bytes: under the pubsub class's 1000")
	}
	c.ps.pubsub = false
	if !s.pushOverLimit(c) {
		t.Fatal("not subscribed, 500 bytes: over the normal class's 100")
	}
	if c.w.b != nil || !c.ps.killed {
		t.Fatalf("over the limit: output %d bytes, killed %v; want dropped, killed", len(c.w.b), c.ps.killed)
	}
	c.w.b = make([]byte, 500)
	if s.pushOverLimit(c) {
		t.Fatal("reported twice")
	}
	d := &client{}
	d.w.b = make([]byte, 500)
	if s.pushOverLimit(d) {
		t.Fatal("a client that cannot receive pushes is checked by outputOverLimit, not here")
	}
	// Closed by a push (another goroutine): its own goroutine, checking
	// after a command, stops the batch too.
	c.w.b = nil
	if !s.outputOverLimit(c) {
		t.Fatal("outputOverLimit of a client a push closed: want true, the batch stops")
	}
}

// INFO counts channels, patterns and tracking clients.
func TestPubSub_InfoCounts(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.send(encode("SUBSCRIBE", "x", "y") + encode("PSUBSCRIBE", "p*"))
	a.read()
	a.read()
	a.read()
	b.hello3()
	b.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	info := b.do("INFO")
	for _, want := range []string{"\r\npubsub_channels:2\r\n", "\r\npubsub_patterns:1\r\n", "\r\ntracking_clients:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
}

// SSUBSCRIBE inside MULTI is refused when EXEC runs it (Redis 7.0: the
// client is DENY BLOCKING there), and leaves no subscription; SUBSCRIBE
// and PSUBSCRIBE are still allowed. Replies are redis-server 7.0.15's.
func TestPubSub_SSubscribeRefusedInExec(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.send(encode("MULTI") + encode("SSUBSCRIBE", "x") + encode("SUBSCRIBE", "y") + encode("PSUBSCRIBE", "z*") + encode("SUNSUBSCRIBE", "x") + encode("EXEC"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n",
		"*4\r\n-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\r\n" +
			"*3\r\n$9\r\nsubscribe\r\n$1\r\ny\r\n:1\r\n" +
			"*3\r\n$10\r\npsubscribe\r\n$2\r\nz*\r\n:2\r\n" +
			"*3\r\n$12\r\nsunsubscribe\r\n$1\r\nx\r\n:0\r\n"} {
		c.expect(want)
	}
	d := dial(t, srv.Addr())
	d.hello3()
	d.send(encode("MULTI") + encode("SSUBSCRIBE", "x") + encode("EXEC") + encode("PING"))
	for _, want := range []string{"+OK\r\n", "+QUEUED\r\n", "*1\r\n-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\r\n", "+PONG\r\n"} {
		d.expect(want)
	}
	if got := d.do("PUBSUB", "SHARDNUMSUB", "x"); got != "*2\r\n$1\r\nx\r\n:0\r\n" {
		t.Errorf("PUBSUB SHARDNUMSUB x = %q: the refused SSUBSCRIBE subscribed", got)
	}
}

// A subscriber over the soft limit is disconnected once SoftSeconds have
// passed even when no message comes after that to make a delivery check
// it, as Redis's clientsCron checks every client (found by Redis's
// obuf-limits unit: tumbler kept such a subscriber for good).
func TestPubSub_SoftLimitCheckedWithoutTraffic(t *testing.T) {
	clock := expiry.NewManualClock(time.Now())
	srv := RunT(t, WithConfig(func(c *Config) {
		c.Clock = clock
		c.OutputBufferLimits = OutputBufferLimits{PubSub: OutputBufferLimit{Soft: 64 << 10, SoftSeconds: 3}}
	}))
	slow := dial(t, srv.Addr())
	slow.expectDo("+OK\r\n", "CLIENT", "SETNAME", "slow")
	slow.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	pub := dial(t, srv.Addr())
	publishUntilBacklog(t, pub, 1<<20) // well over the soft limit, unread
	// No more messages. The time runs out on the server's clock.
	clock.Advance(4 * time.Second)
	eventually(t, "the slow subscriber to be disconnected", func() bool {
		return pub.do("PUBSUB", "NUMSUB", "ch") == "*2\r\n"+bulk("ch")+":0\r\n"
	})
	slow.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, slow.conn); err != nil {
		t.Fatalf("slow subscriber: want EOF after the buffered messages, got %v", err)
	}
}

// CLIENT LIST shows a subscriber's unwritten output as omem (and
// tot-mem): what a slow reader leaves queued, which operators watch.
func TestPubSub_ClientListShowsPendingOutput(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = OutputBufferLimits{PubSub: OutputBufferLimit{}} // no limit
	}))
	slow := dialSlow(t, srv.Addr())
	slow.expectDo("+OK\r\n", "CLIENT", "SETNAME", "slow")
	slow.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	pub := dial(t, srv.Addr())
	// The confirmation the client has read may still count for a moment:
	// the writer settles its accounting after the write the client saw.
	deadline := time.Now().Add(5 * time.Second)
	for n := slowOmem(t, pub); n != 0; n = slowOmem(t, pub) {
		if time.Now().After(deadline) {
			t.Fatalf("omem %d before any message", n)
		}
		time.Sleep(time.Millisecond)
	}
	// publishUntilBacklog reads omem as it goes: it returns once over 1 MB.
	publishUntilBacklog(t, pub, 1<<20)
}

// dialSlow connects a client with a small receive buffer, which never
// reads what it is sent: a slow subscriber.
func dialSlow(t *testing.T, addr string) *rawClient {
	c := dial(t, addr)
	if tc, ok := c.conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	return c
}

// publishUntilBacklog publishes 1 KB messages on ch until CLIENT LIST
// shows the client named slow with at least min bytes queued in the
// server (how much the sockets absorb first depends on the machine's
// buffer sizes), each PUBLISH reaching one subscriber.
func publishUntilBacklog(t *testing.T, pub *rawClient, min int) {
	t.Helper()
	payload := strings.Repeat("x", 1024)
	var batch strings.Builder
	for i := 0; i < 100; i++ {
		batch.WriteString(encode("PUBLISH", "ch", payload))
	}
	for sent := 0; slowOmem(t, pub) < min; sent += 100 {
		if sent > 256<<10 {
			t.Fatalf("%d MB published and the server queues no %d bytes", sent>>10, min)
		}
		pub.send(batch.String())
		for i := 0; i < 100; i++ {
			if r := pub.read(); r != ":1\r\n" {
				t.Fatalf("PUBLISH after %d: %q (the subscriber was disconnected)", sent+i, r)
			}
		}
	}
}

// slowOmem is CLIENT LIST's omem for the client named slow (checking
// that tot-mem is omem, the input buffers' fields and Redis's estimate of
// its one channel subscription).
func slowOmem(t *testing.T, pub *rawClient) int {
	t.Helper()
	omem := func() int {
		for _, line := range strings.Split(pub.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " name=slow ") {
				field := func(name string) int {
					_, rest, _ := strings.Cut(line, " "+name+"=")
					v, _, _ := strings.Cut(rest, " ")
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("%s in %q: %v", name, line, err)
					}
					return n
				}
				n := field("omem")
				if in := field("qbuf") + field("qbuf-free") + field("argv-mem") + field("multi-mem"); field("tot-mem") != n+in+int(channelsMem(1)) {
					t.Fatalf("tot-mem is not omem+%d in %q", in, line)
				}
				return n
			}
		}
		t.Fatal("no client named slow")
		return 0
	}
	return omem()
}

// A RESP3 connection subscribed to its own keyspace events gets each
// before the reply of the command that raised it, inside EXEC's array
// too, as in Redis (redis-server 7.0.15's frames).
func TestPubSub_RESP3OwnKeyspaceEventsInPlace(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.hello3()
	c.expectDo("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "KEA")
	c.expectDo(confirmation(3, "subscribe", "__keyevent@0__:set", 1), "SUBSCRIBE", "__keyevent@0__:set")
	c.send(encode("SET", "k", "v") + encode("MULTI") + encode("SET", "k", "w") + encode("EXEC"))
	c.expect(msg3("__keyevent@0__:set", "k"))
	c.expect("+OK\r\n")
	c.expect("+OK\r\n") // MULTI
	c.expect("+QUEUED\r\n")
	c.expect("*1\r\n" + msg3("__keyevent@0__:set", "k"))
	c.expect("+OK\r\n")
	c.expectDo("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "")
}

// The same for pops and set stores, where Redis writes some events
// before the reply, some inside it and some after (redis-server
// 7.0.15's frames): ZPOPMIN's event follows its array header and the
// del follows the reply; SPOP's event precedes the reply and the del
// follows it; SINTERSTORE replies before its event, but deletes the
// destination of a missing key's intersection before replying.
func TestPubSub_RESP3OwnEventsAroundPopsAndStores(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.hello3()
	c.expectDo("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "KEA")
	for i, ch := range []string{"zpopmin", "del", "spop", "sinterstore"} {
		c.expectDo(confirmation(3, "subscribe", "__keyevent@0__:"+ch, i+1), "SUBSCRIBE", "__keyevent@0__:"+ch)
	}
	ev := func(event, key string) string { return msg3("__keyevent@0__:"+event, key) }
	c.expectDo(":2\r\n", "ZADD", "z", "1", "a", "2", "b")
	c.send(encode("ZPOPMIN", "z", "5"))
	c.expect("*2\r\n" + ev("zpopmin", "z") + "*2\r\n$1\r\na\r\n,1\r\n")
	c.expect("*2\r\n$1\r\nb\r\n,2\r\n")
	c.expect(ev("del", "z"))
	c.expectDo(":1\r\n", "SADD", "s", "1")
	c.send(encode("SPOP", "s"))
	c.expect(ev("spop", "s"))
	c.expect("$1\r\n1\r\n")
	c.expect(ev("del", "s"))
	c.expectDo(":2\r\n", "SADD", "s", "1", "2")
	c.send(encode("SPOP", "s", "5"))
	c.expect(ev("spop", "s"))
	c.expect("~2\r\n$1\r\n1\r\n$1\r\n2\r\n")
	c.expect(ev("del", "s"))
	c.expectDo(":1\r\n", "SADD", "a", "1")
	c.send(encode("SINTERSTORE", "d", "a", "a"))
	c.expect(":1\r\n")
	c.expect(ev("sinterstore", "d"))
	c.send(encode("SINTERSTORE", "d", "a", "nokey"))
	c.expect(ev("del", "d"))
	c.expect(":0\r\n")
	c.expectDo("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "")
}

// Nor do they tear the reply of a command that blocked (WAITAOF's
// two-element array, BLPOP's): it is written after the wait, and pushes
// arriving meanwhile wait for it, as during any command. Before, a push
// could land between its elements.
func TestPubSub_PushesNeverTearBlockedReplies(t *testing.T) {
	srv := RunT(t)
	sub := dial(t, srv.Addr())
	// No output limit: a reader starved on a loaded machine is not closed.
	sub.expectDo("+OK\r\n", "CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 0 0")
	sub.hello3()
	sub.expectDo(confirmation(3, "subscribe", "ch", 1), "SUBSCRIBE", "ch")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pub, err := dialErr(srv.Addr())
		if err != nil {
			t.Error(err)
			return
		}
		defer pub.Close()
		go io.Copy(io.Discard, pub)
		batch := strings.Repeat(encode("PUBLISH", "ch", "payload"), 50)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := pub.Write([]byte(batch)); err != nil {
				return
			}
			// Paced: flat out (without the race detector), it published
			// faster than the reads below take the pushes, and the server
			// closed the subscriber at its pubsub output limit.
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	push := msg3("ch", "payload")
	sub.expect(push) // the publisher is running
	waitaof := "*2\r\n:0\r\n:0\r\n"
	const rounds = 400
	var req strings.Builder
	for i := 0; i < rounds; i++ {
		req.WriteString(encode("WAITAOF", "0", "1", "1")) // 1 ms: it blocks, then times out
		req.WriteString(encode("BLPOP", "nosuchlist", "0.001"))
	}
	sub.send(req.String())
	replies, pushes := 0, 0
	for replies < 2*rounds {
		switch f := sub.read(); f {
		case push:
			pushes++
		case waitaof, "_\r\n":
			if (replies%2 == 0) != (f == waitaof) {
				t.Fatalf("reply %d out of order: %q", replies, f)
			}
			replies++
		default:
			t.Fatalf("torn or unexpected frame after %d replies and %d pushes: %q", replies, pushes, f)
		}
	}
	t.Logf("%d blocked replies interleaved with %d pushes", replies, pushes)
}

// PUNSUBSCRIBE with no pattern confirms the patterns in the order they
// were subscribed in, as Redis 7.0 keeps a client's patterns (a list).
func TestPunsubscribe_AllInSubscriptionOrder(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	pats := []string{"p3*", "a*", "z?", "m[ab]", "b*"}
	c.send(encode(append([]string{"PSUBSCRIBE"}, pats...)...))
	for range pats {
		c.read()
	}
	c.send(encode("PUNSUBSCRIBE", "a*"))
	c.read()
	c.send(encode("PUNSUBSCRIBE"))
	left := []string{"p3*", "z?", "m[ab]", "b*"}
	for i, p := range left {
		want := fmt.Sprintf("*3\r\n$12\r\npunsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(p), p, len(left)-1-i)
		if got := c.read(); got != want {
			t.Fatalf("confirmation %d: %q, want %q", i, got, want)
		}
	}
}
