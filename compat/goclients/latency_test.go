package goclients

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/tumblerdb/tumbler/server"
)

// SetLatency is a delay line: a client with several requests in flight
// on one connection gets each reply d after its request reached the
// server, as on a slow network; a connection not read while its replies
// wait gave some of them up to 2 d. d is large, the requests 25-50 ms
// apart, and only a generous bound is asserted: under 1.5 d.

const (
	latencyD   = 200 * time.Millisecond
	latencyMax = latencyD * 3 / 2
)

// rueidis sends every caller's command down one connection (here
// PipelineMultiplex -1: exactly one) without waiting for the replies.
func TestSetLatency_RueidisCallersOnOneConnection(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 20*time.Second)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, PipelineMultiplex: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// A call whose context has no deadline starts rueidis's pipelining
	// writer: until then it sends one command at a time, alone on the
	// connection (its syncDo), and the others wait for its reply.
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Do(wctx, c.B().Ping().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	srv.SetLatency(latencyD)
	defer srv.SetLatency(0)
	const callers = 8
	took := make([]time.Duration, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 25 * time.Millisecond)
			start := time.Now()
			key := "lock" + strconv.Itoa(i)
			errs[i] = c.Do(ctx, c.B().Set().Key(key).Value("tok").Nx().PxMilliseconds(30000).Build()).Error()
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if took[i] < latencyD || took[i] >= latencyMax {
			t.Errorf("caller %d's SET took %v, want about %v (under %v)", i, took[i], latencyD, latencyMax)
		}
	}
	if n := len(srv.Keys()); n != callers {
		t.Fatalf("%d keys, want %d", n, callers)
	}
}

// go-redis's pub/sub connection: PINGs sent 50 ms apart, their replies
// read by its receiver, each d after it was sent; a command of another
// client sent while they wait runs at once (its effect seen by a lock
// attempt, whose own reply waits d).
func TestSetLatency_GoRedis(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 20*time.Second)
	t.Run("pubsub-pings", func(t *testing.T) {
		rdb := newGoRedis(t, srv.Addr(), 0)
		ps := rdb.Subscribe(ctx, "ch")
		t.Cleanup(func() { _ = ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the subscription
			t.Fatal(err)
		}
		srv.SetLatency(latencyD)
		defer srv.SetLatency(0)
		const n = 5
		sent := make([]time.Time, n)
		errc := make(chan error, 1)
		go func() {
			for i := range n {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				sent[i] = time.Now()
				if err := ps.Ping(ctx, strconv.Itoa(i)); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		got := make([]time.Time, n)
		for i := range n {
			m, err := ps.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := m.(*redis.Pong); !ok || p.Payload != strconv.Itoa(i) {
				t.Fatalf("reply %d: %#v, want the pong %d", i, m, i)
			}
			got[i] = time.Now()
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if took := got[i].Sub(sent[i]); took < latencyD || took >= latencyMax {
				t.Errorf("pong %d came %v after its PING, want about %v (under %v)", i, took, latencyD, latencyMax)
			}
		}
	})
	t.Run("locks-run-at-once", func(t *testing.T) {
		a, b := newGoRedis(t, srv.Addr(), 0), newGoRedis(t, srv.Addr(), 0)
		for _, c := range []*redis.Client{a, b} {
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		srv.SetLatency(latencyD)
		defer srv.SetLatency(0)
		done := make(chan error, 1)
		go func() { done <- a.SetNX(ctx, "job", "a", 30*time.Second).Err() }()
		for _, ok := srv.Get("job"); !ok; _, ok = srv.Get("job") { // a's SET has run; its reply waits
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		if ok, err := b.SetNX(ctx, "job", "b", 30*time.Second).Result(); err != nil || ok {
			t.Fatalf("b's SET NX while a's reply waits: %v, %v; want false: a holds the lock", ok, err)
		}
		if took := time.Since(start); took < latencyD || took >= latencyMax {
			t.Errorf("b's SET NX took %v, want about %v", took, latencyD)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
