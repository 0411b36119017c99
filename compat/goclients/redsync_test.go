package goclients

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/server"
)

// newRedsync returns a redsync over one go-redis client (default options)
// per address, and those clients for inspecting the servers.
func newRedsync(t *testing.T, addrs ...string) (*redsync.Redsync, []*redis.Client) {
	t.Helper()
	var pools []rsredis.Pool
	var clients []*redis.Client
	for _, a := range addrs {
		c := newGoRedis(t, a, 0)
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...), clients
}

func TestRedsyncLockUnlockExtend(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rs, cl := newRedsync(t, srv.Addr())
	rdb := cl[0]
	ctx := testCtx(t, 20*time.Second)

	// Default options: 8 s expiry, 32 tries.
	m := rs.NewMutex("rs-lock")
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if m.Value() == "" {
		t.Fatalf("no lock value after Lock")
	}
	if v, err := rdb.Get(ctx, "rs-lock").Result(); err != nil || v != m.Value() {
		t.Fatalf("GET rs-lock = %q, %v; want the mutex value %q", v, err, m.Value())
	}
	// redsync sends "set rs-lock <v> ex 8 nx": the manual clock makes the TTL exact.
	if d, err := rdb.PTTL(ctx, "rs-lock").Result(); err != nil || d != 8*time.Second {
		t.Fatalf("PTTL = %v, %v; want 8s", d, err)
	}
	if until := time.Until(m.Until()); until <= 7*time.Second || until > 8*time.Second {
		t.Fatalf("Until is %v away, want just under 8s", until)
	}

	// A second mutex on the same name cannot take it.
	other := rs.NewMutex("rs-lock", redsync.WithTries(1))
	err := other.TryLockContext(ctx)
	var taken *redsync.ErrTaken
	if !errors.As(err, &taken) || !slices.Equal(taken.Nodes, []int{0}) {
		t.Fatalf("TryLock on a held lock: err = %v; want ErrTaken{Nodes: [0]}", err)
	}
	// Its Unlock and Extend fail without touching the holder's key.
	if ok, err := other.UnlockContext(ctx); ok || err == nil {
		t.Fatalf("Unlock by non-holder = %v, %v; want false and an error", ok, err)
	}
	if ok, err := other.ExtendContext(ctx); ok || err == nil {
		t.Fatalf("Extend by non-holder = %v, %v; want false and an error", ok, err)
	}
	if v, err := rdb.Get(ctx, "rs-lock").Result(); err != nil || v != m.Value() {
		t.Fatalf("GET after non-holder attempts = %q, %v; want %q", v, err, m.Value())
	}

	// Extend resets the TTL: 5 s into an 8 s lock, PTTL goes 3 s -> 8 s.
	srv.Advance(5 * time.Second)
	if d, err := rdb.PTTL(ctx, "rs-lock").Result(); err != nil || d != 3*time.Second {
		t.Fatalf("PTTL after 5s = %v, %v; want 3s", d, err)
	}
	if ok, err := m.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("Extend = %v, %v; want true", ok, err)
	}
	if d, err := rdb.PTTL(ctx, "rs-lock").Result(); err != nil || d != 8*time.Second {
		t.Fatalf("PTTL after Extend = %v, %v; want 8s", d, err)
	}
	// Deprecated Valid still works (a GET compare).
	if ok, err := m.ValidContext(ctx); !ok || err != nil {
		t.Fatalf("Valid = %v, %v; want true", ok, err)
	}

	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("Unlock = %v, %v; want true", ok, err)
	}
	if n, err := rdb.Exists(ctx, "rs-lock").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after Unlock = %d, %v; want 0", n, err)
	}
	// Unlocking again: the delete script returns -1 for a missing key.
	if ok, err := m.UnlockContext(ctx); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Fatalf("second Unlock = %v, %v; want false, ErrLockAlreadyExpired", ok, err)
	}
	// Now the other mutex gets it.
	if err := other.TryLockContext(ctx); err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}

	// WithSetNXOnExtend: Extend re-creates a lock that vanished.
	nx := rs.NewMutex("rs-nx", redsync.WithSetNXOnExtend(), redsync.WithExpiry(2500*time.Millisecond))
	if err := nx.LockContext(ctx); err != nil {
		t.Fatalf("Lock rs-nx: %v", err)
	}
	if err := rdb.Del(ctx, "rs-nx").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := nx.ExtendContext(ctx); !ok || err != nil {
		t.Fatalf("Extend with SET NX after the key vanished = %v, %v; want true", ok, err)
	}
	if v, err := rdb.Get(ctx, "rs-nx").Result(); err != nil || v != nx.Value() {
		t.Fatalf("GET rs-nx = %q, %v; want %q", v, err, nx.Value())
	}
	if d, err := rdb.PTTL(ctx, "rs-nx").Result(); err != nil || d != 2500*time.Millisecond {
		t.Fatalf("PTTL rs-nx = %v, %v; want 2.5s", d, err)
	}
}

// TestRedsyncExpiry: a 30 s lock is gone after 31 s of (manual) time;
// another client takes it, and the old holder's Extend and Unlock fail the
// way redsync reports them.
func TestRedsyncExpiry(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rsA, cl := newRedsync(t, srv.Addr())
	rsB, _ := newRedsync(t, srv.Addr())
	rdb := cl[0]
	ctx := testCtx(t, 20*time.Second)

	a := rsA.NewMutex("exp-lock", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	b := rsB.NewMutex("exp-lock", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := a.LockContext(ctx); err != nil {
		t.Fatalf("A Lock: %v", err)
	}
	srv.Advance(29 * time.Second)
	var taken *redsync.ErrTaken
	if err := b.LockContext(ctx); !errors.As(err, &taken) {
		t.Fatalf("B Lock at 29s: err = %v; want ErrTaken", err)
	}
	if d, err := rdb.PTTL(ctx, "exp-lock").Result(); err != nil || d != time.Second {
		t.Fatalf("PTTL at 29s = %v, %v; want 1s", d, err)
	}
	srv.Advance(2 * time.Second)
	if _, err := rdb.Get(ctx, "exp-lock").Result(); err != redis.Nil {
		t.Fatalf("GET at 31s: err = %v; want redis.Nil", err)
	}
	if err := b.LockContext(ctx); err != nil {
		t.Fatalf("B Lock after expiry: %v", err)
	}
	// A's Extend: the key holds B's value, the touch script returns 0.
	if ok, err := a.ExtendContext(ctx); ok || !errors.As(err, &taken) {
		t.Fatalf("A Extend after expiry = %v, %v; want false, ErrTaken", ok, err)
	}
	// A's Unlock: the delete script returns 0 (someone else's value).
	if ok, err := a.UnlockContext(ctx); ok || !errors.As(err, &taken) {
		t.Fatalf("A Unlock after expiry = %v, %v; want false, ErrTaken", ok, err)
	}
	if v, err := rdb.Get(ctx, "exp-lock").Result(); err != nil || v != b.Value() {
		t.Fatalf("GET after A's attempts = %q, %v; want B's value", v, err)
	}
	if d, err := rdb.PTTL(ctx, "exp-lock").Result(); err != nil || d != 30*time.Second {
		t.Fatalf("PTTL of B's lock = %v, %v; want 30s (A's Extend must not touch it)", d, err)
	}
	// B's lock expires too, with nobody taking it: Unlock reports
	// ErrLockAlreadyExpired (the delete script's -1).
	srv.Advance(31 * time.Second)
	if ok, err := b.UnlockContext(ctx); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Fatalf("B Unlock after expiry = %v, %v; want false, ErrLockAlreadyExpired", ok, err)
	}
	if ok, err := b.ExtendContext(ctx); ok || err == nil {
		t.Fatalf("B Extend after expiry = %v, %v; want false and an error", ok, err)
	}
	if n, err := rdb.Exists(ctx, "exp-lock").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS = %d, %v; want 0 (a failed Extend must not create the key)", n, err)
	}
}

// TestRedsyncRedlock runs Redlock over three tumbler instances.
func TestRedsyncRedlock(t *testing.T) {
	srvs := []*server.Server{server.RunT(t), server.RunT(t), server.RunT(t)}
	addrs := []string{srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()}
	rs, cl := newRedsync(t, addrs...)
	ctx := testCtx(t, 30*time.Second)

	holders := func(key, value string) []int {
		t.Helper()
		var on []int
		for i, c := range cl {
			if i < len(srvs) && srvs[i] == nil {
				continue
			}
			v, err := c.Get(ctx, key).Result()
			if err != nil && err != redis.Nil {
				t.Fatalf("GET on node %d: %v", i, err)
			}
			if err == nil && v == value {
				on = append(on, i)
			}
		}
		return on
	}

	t.Run("all-up", func(t *testing.T) {
		m := rs.NewMutex("redlock")
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if on := holders("redlock", m.Value()); !slices.Equal(on, []int{0, 1, 2}) {
			t.Fatalf("lock value on nodes %v, want [0 1 2]", on)
		}
		other := rs.NewMutex("redlock", redsync.WithTries(1))
		var taken *redsync.ErrTaken
		if err := other.TryLockContext(ctx); !errors.As(err, &taken) || len(taken.Nodes) != 3 {
			t.Fatalf("second TryLock: err = %v; want ErrTaken on 3 nodes", err)
		}
		if ok, err := m.ExtendContext(ctx); !ok || err != nil {
			t.Fatalf("Extend = %v, %v", ok, err)
		}
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("Unlock = %v, %v", ok, err)
		}
		if on := holders("redlock", m.Value()); len(on) != 0 {
			t.Fatalf("lock still on nodes %v after Unlock", on)
		}
	})

	t.Run("minority-held-by-other", func(t *testing.T) {
		// Someone else holds the key on node 2 only: quorum still reachable.
		if err := cl[2].Set(ctx, "split", "foreign", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		m := rs.NewMutex("split", redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock with node 2 taken: %v", err)
		}
		if on := holders("split", m.Value()); !slices.Equal(on, []int{0, 1}) {
			t.Fatalf("lock value on nodes %v, want [0 1]", on)
		}
		if v, _ := cl[2].Get(ctx, "split").Result(); v != "foreign" {
			t.Fatalf("node 2's foreign value was overwritten: %q", v)
		}
		if ok, err := m.UnlockContext(ctx); !ok {
			t.Fatalf("Unlock = %v, %v", ok, err)
		}
		// Held on two nodes by someone else: no quorum, ErrTaken names them.
		if err := cl[1].Set(ctx, "split", "foreign", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		m2 := rs.NewMutex("split", redsync.WithTries(1))
		var taken *redsync.ErrTaken
		err := m2.LockContext(ctx)
		if !errors.As(err, &taken) {
			t.Fatalf("Lock with nodes 1,2 taken: err = %v; want ErrTaken", err)
		}
		got := slices.Sorted(slices.Values(taken.Nodes))
		if !slices.Equal(got, []int{1, 2}) {
			t.Fatalf("ErrTaken nodes %v, want [1 2]", got)
		}
		// The failed attempt released what it took on node 0.
		if n, err := cl[0].Exists(ctx, "split").Result(); err != nil || n != 0 {
			t.Fatalf("node 0 still has the key after a failed Redlock: %d, %v", n, err)
		}
	})

	t.Run("one-down", func(t *testing.T) {
		srvs[2].Close()
		srvs[2] = nil
		m := rs.NewMutex("redlock-1down")
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock with one node down: %v", err)
		}
		if on := holders("redlock-1down", m.Value()); !slices.Equal(on, []int{0, 1}) {
			t.Fatalf("lock value on nodes %v, want [0 1]", on)
		}
		other := rs.NewMutex("redlock-1down", redsync.WithTries(1))
		if err := other.TryLockContext(ctx); err == nil {
			t.Fatalf("second TryLock succeeded while the lock is held on 2 of 3 nodes")
		}
		if ok, err := m.ExtendContext(ctx); !ok {
			t.Fatalf("Extend with one node down = %v, %v; want true", ok, err)
		}
		// Unlock reaches quorum; redsync reports the dead node's error only when
		// under quorum, so ok must be true.
		if ok, err := m.UnlockContext(ctx); !ok {
			t.Fatalf("Unlock with one node down = %v, %v; want true", ok, err)
		}
		if on := holders("redlock-1down", m.Value()); len(on) != 0 {
			t.Fatalf("lock still on nodes %v after Unlock", on)
		}
	})

	t.Run("two-down", func(t *testing.T) {
		srvs[1].Close()
		srvs[1] = nil
		m := rs.NewMutex("redlock-2down", redsync.WithTries(2), redsync.WithRetryDelay(10*time.Millisecond))
		err := m.LockContext(ctx)
		if err == nil {
			t.Fatalf("Lock with two of three nodes down succeeded")
		}
		var rerr *redsync.RedisError
		if !errors.As(err, &rerr) {
			t.Fatalf("Lock with two nodes down: err = %v; want a RedisError for a dead node", err)
		}
		// The surviving node holds nothing: the failed attempt released it.
		if n, err := cl[0].Exists(ctx, "redlock-2down").Result(); err != nil || n != 0 {
			t.Fatalf("node 0 keeps the key after a failed Redlock: %d, %v", n, err)
		}
	})
}

// redsyncAcquire uses redsync's own retry loop with short delays.
func redsyncAcquire(rs *redsync.Redsync, key string) acquireFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		m := rs.NewMutex(key, redsync.WithTries(math.MaxInt32),
			redsync.WithRetryDelayFunc(func(int) time.Duration { return jitter() }))
		if err := m.LockContext(ctx); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			ok, err := m.UnlockContext(ctx)
			if !ok && err == nil {
				err = errors.New("Unlock returned false")
			}
			return err
		}, nil
	}
}

func TestRedsyncMutualExclusion(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		srv := server.RunT(t)
		rs, _ := newRedsync(t, srv.Addr())
		checkMutex(t, 20, 50, 20*time.Second, redsyncAcquire(rs, "rs-mutex"))
	})
	t.Run("redlock-3", func(t *testing.T) {
		a, b, c := server.RunT(t), server.RunT(t), server.RunT(t)
		rs, _ := newRedsync(t, a.Addr(), b.Addr(), c.Addr())
		checkMutex(t, 10, 10, 20*time.Second, redsyncAcquire(rs, "rl-mutex"))
	})
}
