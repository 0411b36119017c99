package goclients

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/tumblerdb/tumbler/server"
)

// newRueidisDefault returns a rueidis client with its default options:
// RESP3 with client-side caching, which makes it send HELLO 3, CLIENT
// TRACKING ON OPTIN and, first of all, CLUSTER SLOTS.
func newRueidisDefault(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatalf("rueidis.NewClient with default options: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitFresh polls read until it returns want from the server rather than
// the client's cache, failing after 10s: the invalidation push reaches
// the client asynchronously.
func waitFresh(t *testing.T, what, want string, read func() (string, bool, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, hit, err := read()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatalf("%s: %v", what, err)
		}
		if v == want && !hit {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %q (cache hit %v), want a fresh %q: the invalidation never arrived", what, v, hit, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// DoCache reads are served from rueidis's client-side cache until another
// client writes the key; tumbler's invalidation then makes the next read
// go to the server. This is the wire shape DoCache uses without MULTI:
// CLIENT CACHING YES, then the read.
func TestRueidisCache_DefaultOptionsInvalidatedByOtherWriter(t *testing.T) {
	srv := server.RunT(t)
	c := newRueidisDefault(t, srv.Addr())
	writer := newRueidis(t, srv.Addr(), false)
	ctx := testCtx(t, 20*time.Second)

	info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
	if err != nil || !strings.Contains(info, " resp=3 ") || !strings.Contains(info, " flags=t ") {
		t.Fatalf("CLIENT INFO = %q, %v; want RESP3 with tracking on", info, err)
	}

	read := func(key string) func() (string, bool, error) {
		return func() (string, bool, error) {
			r := c.DoCache(ctx, c.B().Get().Key(key).Cache().ToStaticTTL(), time.Minute)
			v, err := r.ToString()
			return v, r.IsCacheHit(), err
		}
	}
	mustSet := func(key, val string) {
		t.Helper()
		if err := writer.Do(ctx, writer.B().Set().Key(key).Value(val).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}

	mustSet("cached", "v1")
	if v, hit, err := read("cached")(); err != nil || v != "v1" || hit {
		t.Fatalf("first DoCache = %q (hit %v), %v; want v1 from the server", v, hit, err)
	}
	if v, hit, err := read("cached")(); err != nil || v != "v1" || !hit {
		t.Fatalf("second DoCache = %q (hit %v), %v; want v1 from the cache", v, hit, err)
	}
	mustSet("cached", "v2")
	waitFresh(t, "DoCache after another client's SET", "v2", read("cached"))
	if v, hit, err := read("cached")(); err != nil || v != "v2" || !hit {
		t.Fatalf("DoCache after the refresh = %q (hit %v), %v; want v2 cached again", v, hit, err)
	}

	// A missing key is cached as nil, and a write makes it appear.
	if _, _, err := read("later")(); !rueidis.IsRedisNil(err) {
		t.Fatalf("DoCache of a missing key: %v; want a Redis nil", err)
	}
	mustSet("later", "here")
	waitFresh(t, "DoCache after the key appeared", "here", read("later"))

	// Deletion, expiry and flushes invalidate too.
	if err := writer.Do(ctx, writer.B().Del().Key("cached").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFresh(t, "DoCache after DEL", "", read("cached"))
	if err := writer.Do(ctx, writer.B().Set().Key("short").Value("x").Px(50*time.Millisecond).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if v, _, err := read("short")(); err != nil || v != "x" {
		t.Fatalf("DoCache short = %q, %v", v, err)
	}
	waitFresh(t, "DoCache after the key expired", "", read("short"))
	if v, hit, _ := read("later")(); v != "here" || !hit {
		t.Fatalf("later should be cached: %q hit=%v", v, hit)
	}
	if err := writer.Do(ctx, writer.B().Flushall().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFresh(t, "DoCache after FLUSHALL", "", read("later"))
}

// The default DoCache wire shape wraps the read in MULTI/EXEC with a PTTL;
// CLIENT CACHING YES must last through the transaction.
func TestRueidisCache_DoCacheWithMulti(t *testing.T) {
	srv := server.RunT(t)
	c := newRueidisDefault(t, srv.Addr())
	writer := newRueidis(t, srv.Addr(), false)
	ctx := testCtx(t, 20*time.Second)
	if !hasCommand(ctx, t, writer, "multi") {
		t.Fatal("COMMAND INFO does not list MULTI: rueidis's default DoCache needs it")
	}
	read := func() (string, bool, error) {
		r := c.DoCache(ctx, c.B().Get().Key("k").Cache(), time.Minute)
		v, err := r.ToString()
		return v, r.IsCacheHit(), err
	}
	if err := writer.Do(ctx, writer.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if v, hit, err := read(); err != nil || v != "v1" || hit {
		t.Fatalf("first DoCache = %q (hit %v), %v", v, hit, err)
	}
	if v, hit, err := read(); err != nil || v != "v1" || !hit {
		t.Fatalf("second DoCache = %q (hit %v), %v; want a cache hit", v, hit, err)
	}
	if err := writer.Do(ctx, writer.B().Set().Key("k").Value("v2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFresh(t, "DoCache (MULTI) after another client's SET", "v2", read)
}

// hasCommand reports whether the server knows the command.
func hasCommand(ctx context.Context, t *testing.T, c rueidis.Client, name string) bool {
	t.Helper()
	msgs, err := c.Do(ctx, c.B().CommandInfo().CommandName(name).Build()).ToArray()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("COMMAND INFO %s: %v %v", name, msgs, err)
	}
	return !msgs[0].IsNil()
}

// rueidis's pub/sub over RESP3 (pushes on the command connection) and
// RESP2: subscription confirmations must match what rueidis expects, or it
// panics with a protocol bug.
func TestRueidis_PubSub(t *testing.T) {
	for _, resp2 := range []bool{false, true} {
		name := "resp3-default"
		if resp2 {
			name = "resp2"
		}
		t.Run(name, func(t *testing.T) {
			srv := server.RunT(t)
			var sub rueidis.Client
			if resp2 {
				sub = newRueidis(t, srv.Addr(), true)
			} else {
				sub = newRueidisDefault(t, srv.Addr())
			}
			pub := newRueidis(t, srv.Addr(), false)
			ctx := testCtx(t, 20*time.Second)

			got := make(chan string, 16)
			subscribed := make(chan struct{})
			recvDone := make(chan error, 1)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				recvDone <- sub.Receive(rctx, sub.B().Subscribe().Channel("news").Build(), func(m rueidis.PubSubMessage) {
					got <- m.Channel + "=" + m.Message
				})
			}()
			// Publish until the subscription is in place (PUBLISH counts it).
			go func() {
				for {
					n, err := pub.Do(ctx, pub.B().PubsubNumsub().Channel("news").Build()).AsIntMap()
					if err == nil && n["news"] == 1 {
						close(subscribed)
						return
					}
					if ctx.Err() != nil {
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()
			select {
			case <-subscribed:
			case <-ctx.Done():
				t.Fatal("subscription never showed in PUBSUB NUMSUB")
			}
			for _, m := range []string{"one", "two"} {
				if n, err := pub.Do(ctx, pub.B().Publish().Channel("news").Message(m).Build()).AsInt64(); err != nil || n != 1 {
					t.Fatalf("PUBLISH %s = %d, %v", m, n, err)
				}
			}
			lua := rueidis.NewLuaScript("return redis.call('publish', KEYS[1], ARGV[1])")
			if n, err := lua.Exec(ctx, pub, []string{"news"}, []string{"from-lua"}).AsInt64(); err != nil || n != 1 {
				t.Fatalf("publish from Lua = %d, %v", n, err)
			}
			for _, want := range []string{"news=one", "news=two", "news=from-lua"} {
				select {
				case m := <-got:
					if m != want {
						t.Fatalf("received %q, want %q", m, want)
					}
				case <-ctx.Done():
					t.Fatalf("message %q never arrived", want)
				}
			}
			// The subscriber connection still serves commands (RESP3) or
			// another pooled one does (RESP2).
			if err := sub.Do(ctx, sub.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
				t.Fatalf("SET on the subscribing client: %v", err)
			}
			cancel()
			if err := <-recvDone; err != nil && err != context.Canceled {
				t.Fatalf("Receive: %v", err)
			}
		})
	}
}

// TestRueidisDefaultOptionsLock: the SET NX PX lock on rueidis with its
// default options (RESP3, client-side caching on: HELLO 3, CLIENT TRACKING
// ON OPTIN), the holder and a contender each on its own client. The
// contender reads the lock key through the cache; the release script's
// DEL must invalidate that cached value.
func TestRueidisDefaultOptionsLock(t *testing.T) {
	srv := server.RunT(t)
	a := newRueidisDefault(t, srv.Addr())
	b := newRueidisDefault(t, srv.Addr())
	ctx := testCtx(t, 20*time.Second)
	for _, c := range []rueidis.Client{a, b} {
		info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
		if err != nil || !strings.Contains(info, " resp=3 ") || !strings.Contains(info, " flags=t ") {
			t.Fatalf("CLIENT INFO = %q, %v; want RESP3 with tracking on", info, err)
		}
	}
	set := func(c rueidis.Client, val string) rueidis.RedisResult {
		return c.Do(ctx, c.B().Set().Key("rd-lock").Value(val).Nx().PxMilliseconds(10000).Build())
	}
	if s, err := set(a, "tok-a").ToString(); err != nil || s != "OK" {
		t.Fatalf("A SET NX PX = %q, %v; want OK", s, err)
	}
	if err := set(b, "tok-b").Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("B SET NX PX on a held lock: %v; want a Redis nil", err)
	}
	read := func() (string, bool, error) {
		r := b.DoCache(ctx, b.B().Get().Key("rd-lock").Cache(), time.Minute)
		v, err := r.ToString()
		return v, r.IsCacheHit(), err
	}
	if v, hit, err := read(); err != nil || v != "tok-a" || hit {
		t.Fatalf("B DoCache GET = %q (hit %v), %v; want tok-a from the server", v, hit, err)
	}
	if v, hit, err := read(); err != nil || v != "tok-a" || !hit {
		t.Fatalf("B DoCache GET again = %q (hit %v), %v; want tok-a from the cache", v, hit, err)
	}
	release := rueidis.NewLuaScript(releaseSrc)
	if n, err := release.Exec(ctx, b, []string{"rd-lock"}, []string{"tok-b"}).AsInt64(); err != nil || n != 0 {
		t.Fatalf("B release of A's lock = %d, %v; want 0", n, err)
	}
	if n, err := release.Exec(ctx, a, []string{"rd-lock"}, []string{"tok-a"}).AsInt64(); err != nil || n != 1 {
		t.Fatalf("A release = %d, %v; want 1", n, err)
	}
	waitFresh(t, "B's cached lock value after A's release script", "", read)
	if s, err := set(b, "tok-b").ToString(); err != nil || s != "OK" {
		t.Fatalf("B SET NX PX after the release = %q, %v; want OK", s, err)
	}
	if n, err := release.Exec(ctx, b, []string{"rd-lock"}, []string{"tok-b"}).AsInt64(); err != nil || n != 1 {
		t.Fatalf("B release = %d, %v; want 1", n, err)
	}
}

// TestRueidisDefaultOptionsMutualExclusion: TestRueidisMutualExclusion
// with rueidis's default options (client-side caching on), the workers
// spread over two clients.
func TestRueidisDefaultOptionsMutualExclusion(t *testing.T) {
	srv := server.RunT(t)
	clients := []rueidis.Client{newRueidisDefault(t, srv.Addr()), newRueidisDefault(t, srv.Addr())}
	release := rueidis.NewLuaScript(releaseSrc)
	var calls atomic.Int64
	checkMutex(t, 20, 50, 20*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
		c := clients[calls.Add(1)%2]
		tok := uniqueToken()
		for {
			err := c.Do(ctx, c.B().Set().Key("rd-mutex").Value(tok).Nx().PxMilliseconds(10000).Build()).Error()
			if err == nil {
				return func(ctx context.Context) error {
					n, err := release.Exec(ctx, c, []string{"rd-mutex"}, []string{tok}).AsInt64()
					if err == nil && n != 1 {
						err = errorf("release returned %d, want 1", n)
					}
					return err
				}, nil
			}
			if !rueidis.IsRedisNil(err) {
				return nil, err
			}
			if err := sleepCtx(ctx, jitter()); err != nil {
				return nil, err
			}
		}
	})
}
