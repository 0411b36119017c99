package goclients

// The failures the Redis lock literature warns about, reproduced with the
// tumbler fixture against unmodified redsync and bsm/redislock: a holder
// stalled past its TTL, a Redlock majority lost to nodes that restart
// empty (and the delayed restart that prevents it), fencing tokens that
// stop a stale holder, and a manual clock that expires a 30-second lock
// without sleeping.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis/rueidislock"
	"github.com/tumblerdb/tumbler/server"
)

// TestFixture_StalledHolderLosesTheLock is the GC-pause scenario: the
// holder stops (a GC pause, a stopped VM) for longer than its lock's TTL;
// the lock expires, another client takes it, and the holder finds out only
// when its extend or release fails.
func TestFixture_StalledHolderLosesTheLock(t *testing.T) {
	t.Run("redsync", func(t *testing.T) {
		srv := server.RunT(t, server.WithManualClock())
		rs, _ := newRedsync(t, srv.Addr())
		ctx := testCtx(t, 20*time.Second)

		a := rs.NewMutex("job", redsync.WithExpiry(8*time.Second))
		if err := a.LockContext(ctx); err != nil {
			t.Fatalf("A Lock: %v", err)
		}
		srv.Advance(9 * time.Second) // A is stalled for 9 s: nothing runs on its side

		b := rs.NewMutex("job", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
		if err := b.TryLockContext(ctx); err != nil {
			t.Fatalf("B TryLock after A's TTL: %v", err)
		}
		// A resumes: extending and releasing both fail (the key holds
		// another value: "taken"), and leave B's lock alone.
		for name, op := range map[string]func(context.Context) (bool, error){"Extend": a.ExtendContext, "Unlock": a.UnlockContext} {
			ok, err := op(ctx)
			var taken *redsync.ErrTaken
			if ok || !errors.As(err, &taken) || !slices.Equal(taken.Nodes, []int{0}) {
				t.Fatalf("A %s = %v, %v; want false and ErrTaken on node 0", name, ok, err)
			}
		}
		if v, ok := srv.Get("job"); !ok || v != b.Value() {
			t.Fatalf("job = %q, %v; want B's value", v, ok)
		}
		if d := srv.TTL("job"); d != 8*time.Second {
			t.Fatalf("TTL = %v; A's Extend must not have touched B's lock", d)
		}
	})

	t.Run("redislock", func(t *testing.T) {
		srv := server.RunT(t, server.WithManualClock())
		rdbA := newGoRedis(t, srv.Addr(), 0)
		rdbB := newGoRedis(t, srv.Addr(), 0)
		ctx := testCtx(t, 20*time.Second)

		a, err := redislock.Obtain(ctx, rdbA, "job", 8*time.Second, nil)
		if err != nil {
			t.Fatalf("A Obtain: %v", err)
		}
		srv.Advance(9 * time.Second)
		b, err := redislock.Obtain(ctx, rdbB, "job", 8*time.Second, nil)
		if err != nil {
			t.Fatalf("B Obtain after A's TTL: %v", err)
		}
		if err := a.Refresh(ctx, 8*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("A Refresh: %v; want ErrNotObtained", err)
		}
		if err := a.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("A Release: %v; want ErrLockNotHeld", err)
		}
		if v, _ := srv.Get("job"); v != b.Token() {
			t.Fatalf("job = %q; want B's token", v)
		}
	})

	// The same failure when the server is the one that stalls: the holder's
	// extend is sent in time but waits in a 10-second server stall, during
	// which its 8-second lock expires.
	t.Run("server-stall", func(t *testing.T) {
		srv := server.RunT(t, server.WithManualClock())
		rdbA := newGoRedis(t, srv.Addr(), 0)
		rdbB := newGoRedis(t, srv.Addr(), 0)
		ctx := testCtx(t, 20*time.Second)

		a, err := redislock.Obtain(ctx, rdbA, "job", 8*time.Second, nil)
		if err != nil {
			t.Fatalf("A Obtain: %v", err)
		}
		srv.Pause(10 * time.Second)
		refreshed := make(chan error, 1)
		go func() { refreshed <- a.Refresh(ctx, 8*time.Second, nil) }()
		// The refresh reached the server in time, and the stall holds it.
		if err := srv.WaitHeld(1, 10*time.Second); err != nil {
			t.Fatalf("A's refresh is not held by the stall: %v", err)
		}
		srv.Advance(10 * time.Second) // the stall ends; the lock expired inside it
		if err := <-refreshed; !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("A Refresh across the stall: %v; want ErrNotObtained", err)
		}
		if _, err := redislock.Obtain(ctx, rdbB, "job", 8*time.Second, nil); err != nil {
			t.Fatalf("B Obtain: %v", err)
		}
	})
}

// TestFixture_RedlockRestartWithoutPersistence: A holds a Redlock on 3 of 5
// nodes (the other two were unreachable for it). Two of A's three nodes
// crash and restart empty. Without a restart delay B then gets 4 of 5 nodes
// while A still believes it holds the lock: two holders. With the delayed
// restart (the nodes refuse new locks for one max-TTL) B fails, and gets
// the lock once A's TTL has passed everywhere.
func TestFixture_RedlockRestartWithoutPersistence(t *testing.T) {
	const ttl = 30 * time.Second
	setup := func(t *testing.T, opts ...server.Option) ([]*server.Server, *redsync.Redsync, *redsync.Mutex) {
		nodes := server.RunN(t, 5, append([]server.Option{server.WithManualClock()}, opts...)...)
		addrs := make([]string, len(nodes))
		for i, n := range nodes {
			addrs[i] = n.Addr()
			n.Advance(ttl) // a restart delay also covers the first start
		}
		rs, _ := newRedsync(t, addrs...)
		ctx := testCtx(t, 20*time.Second)
		// A cannot reach nodes 3 and 4: their SET fails once.
		nodes[3].FailNextCmd("set", 1, "ERR network partition")
		nodes[4].FailNextCmd("set", 1, "ERR network partition")
		a := rs.NewMutex("res", redsync.WithExpiry(ttl), redsync.WithTries(1))
		if err := a.LockContext(ctx); err != nil {
			t.Fatalf("A Lock on 3 of 5: %v", err)
		}
		if on := holding(nodes, a.Value()); !slices.Equal(on, []int{0, 1, 2}) {
			t.Fatalf("A's lock on nodes %v, want [0 1 2]", on)
		}
		for _, i := range []int{1, 2} {
			if err := nodes[i].Restart(false); err != nil {
				t.Fatal(err)
			}
		}
		return nodes, rs, a
	}

	t.Run("double-grant", func(t *testing.T) {
		nodes, rs, a := setup(t)
		ctx := testCtx(t, 20*time.Second)
		b := rs.NewMutex("res", redsync.WithExpiry(ttl), redsync.WithTries(1))
		if err := b.LockContext(ctx); err != nil {
			t.Fatalf("B Lock: %v", err)
		}
		if on := holding(nodes, b.Value()); !slices.Equal(on, []int{1, 2, 3, 4}) {
			t.Fatalf("B's lock on nodes %v, want [1 2 3 4]", on)
		}
		// A has not been told anything: its lock is valid by its own clock.
		if time.Now().After(a.Until()) {
			t.Fatalf("A's validity ended at %v", a.Until())
		}
		t.Logf("two holders: A until %v on node 0 only, B on a majority", a.Until().Format(time.TimeOnly))
	})

	t.Run("delayed-restart", func(t *testing.T) {
		nodes, rs, a := setup(t, server.WithRestartDelay(ttl))
		ctx := testCtx(t, 20*time.Second)
		b := rs.NewMutex("res", redsync.WithExpiry(ttl), redsync.WithTries(1))
		err := b.LockContext(ctx)
		var taken *redsync.ErrTaken
		if !errors.As(err, &taken) {
			t.Fatalf("B Lock during the restart delay: %v; want ErrTaken", err)
		}
		if got := slices.Sorted(slices.Values(taken.Nodes)); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("taken on nodes %v, want [0 1 2] (A's node and the two delayed ones)", got)
		}
		if on := holding(nodes, b.Value()); len(on) != 0 {
			t.Fatalf("B's failed attempt left its value on nodes %v", on)
		}
		// One max-TTL later A's lock has expired everywhere and B may take it.
		for _, n := range nodes {
			n.Advance(ttl + time.Millisecond) // past the deadline's millisecond
		}
		if err := b.LockContext(ctx); err != nil {
			t.Fatalf("B Lock after the delay: %v", err)
		}
		if on := holding(nodes, b.Value()); len(on) != 5 {
			t.Fatalf("B's lock on nodes %v, want all five", on)
		}
		if ok, _ := a.ExtendContext(ctx); ok {
			t.Fatal("A extended a lock B holds")
		}
	})
}

// holding returns the nodes where the lock key holds value.
func holding(nodes []*server.Server, value string) []int {
	var on []int
	for i, n := range nodes {
		if v, ok := n.Get("res"); ok && v == value {
			on = append(on, i)
		}
	}
	return on
}

// fencedStore is a resource that checks fencing tokens: it refuses a
// write whose token is older than one it has already seen.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	writes  []string
}

var errStaleToken = errors.New("stale fencing token")

func (s *fencedStore) Write(token int64, data string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errStaleToken
	}
	s.highest = token
	s.writes = append(s.writes, data)
	return nil
}

// TestFixture_FencingTokenStopsAStaleHolder: each holder takes a token
// with INCR when it gets the lock. A stalls past its TTL, B takes the lock
// (and a newer token) and writes; when A wakes up and writes, the store
// refuses its older token.
func TestFixture_FencingTokenStopsAStaleHolder(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rdbA := newGoRedis(t, srv.Addr(), 0)
	rdbB := newGoRedis(t, srv.Addr(), 0)
	ctx := testCtx(t, 20*time.Second)
	store := &fencedStore{}

	acquire := func(rdb *redis.Client) (*redislock.Lock, int64) {
		t.Helper()
		lock, err := redislock.Obtain(ctx, rdb, "lock:file", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		token, err := rdb.Incr(ctx, "fence:file").Result()
		if err != nil {
			t.Fatalf("INCR: %v", err)
		}
		return lock, token
	}

	_, tokA := acquire(rdbA)
	srv.Advance(11 * time.Second) // A stalls past its TTL before writing
	lockB, tokB := acquire(rdbB)
	if tokB <= tokA {
		t.Fatalf("tokens %d then %d: not increasing", tokA, tokB)
	}
	if err := store.Write(tokB, "B"); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	if err := store.Write(tokA, "A"); !errors.Is(err, errStaleToken) {
		t.Fatalf("A's stale write: %v; want it refused", err)
	}
	if !slices.Equal(store.writes, []string{"B"}) {
		t.Fatalf("store holds %v", store.writes)
	}
	if err := lockB.Release(ctx); err != nil {
		t.Fatalf("B Release: %v", err)
	}
	// The counter lives on the lock server and survives expiries of the lock.
	if v, _ := srv.Get("fence:file"); v != "2" {
		t.Fatalf("fence:file = %q", v)
	}
}

// TestFixture_AdvanceExpiresA30sLockWithoutSleeping: the manual clock moves
// a 30-second lock to its end in one call.
func TestFixture_AdvanceExpiresA30sLockWithoutSleeping(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rdb := newGoRedis(t, srv.Addr(), 0)
	rs, _ := newRedsync(t, srv.Addr())
	ctx := testCtx(t, 10*time.Second)
	start := time.Now()

	held, err := redislock.Obtain(ctx, rdb, "lock:30s", 30*time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	m := rs.NewMutex("lock:30s", redsync.WithExpiry(30*time.Second), redsync.WithTries(1))
	if err := m.TryLockContext(ctx); err == nil {
		t.Fatal("redsync took a held lock")
	}
	srv.Advance(30*time.Second + time.Millisecond) // past the deadline, as Redis: now > deadline
	if err := m.TryLockContext(ctx); err != nil {
		t.Fatalf("redsync after Advance(30s): %v", err)
	}
	if err := held.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("expired holder's Release: %v", err)
	}
	t.Logf("a 30 s lock expired and was retaken in %v", time.Since(start).Round(time.Millisecond))
}

// TestFixture_FaultsSeenByGoRedis: injected errors, latency and dropped
// connections as a go-redis application sees them.
func TestFixture_FaultsSeenByGoRedis(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 20*time.Second)

	t.Run("FailNextCmd", func(t *testing.T) {
		rdb := newGoRedis(t, srv.Addr(), 0)
		srv.FailNextCmd("evalsha", 1, "ERR injected")
		_, err := redislock.Obtain(ctx, rdb, "f", time.Second, nil)
		if err == nil || err.Error() != "ERR injected" {
			t.Fatalf("Obtain with EVALSHA failing: %v", err)
		}
		l, err := redislock.Obtain(ctx, rdb, "f", time.Second, nil)
		if err != nil {
			t.Fatalf("Obtain after the failure: %v", err)
		}
		_ = l.Release(ctx)
	})

	t.Run("SetLatency", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		srv.SetLatency(300 * time.Millisecond)
		defer srv.SetLatency(0)
		err := rdb.Set(ctx, "slow", "v", 0).Err()
		var ne interface{ Timeout() bool }
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("SET with 300 ms latency and a 50 ms read timeout: %v; want a timeout", err)
		}
	})

	t.Run("DropConnections", func(t *testing.T) {
		rdb := newGoRedis(t, srv.Addr(), 0)
		l, err := redislock.Obtain(ctx, rdb, "d", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.DropConnections(); n == 0 {
			t.Fatal("no connection dropped")
		}
		// go-redis notices the dead pooled connection and redials.
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release after the connections dropped: %v", err)
		}
	})

	t.Run("Commands", func(t *testing.T) {
		srv.ResetCommands()
		rs, _ := newRedsync(t, srv.Addr())
		m := rs.NewMutex("logged", redsync.WithTries(1))
		if err := m.TryLockContext(ctx); err != nil {
			t.Fatal(err)
		}
		var sets []string
		for _, r := range srv.Commands() {
			if r.Name() == "set" {
				sets = append(sets, strings.Join(r.Args, " "))
			}
		}
		want := "set logged " + m.Value() + " ex 8 nx"
		if !slices.Equal(sets, []string{want}) {
			t.Fatalf("SETs sent = %q, want [%q]", sets, want)
		}
	})
}

// TestFixture_AbsoluteDeadlinesAfterAdvance: rueidislock takes its keys
// with SET NX PXAT, an absolute deadline from the client's own clock.
// Advance moves the server's wall clock too, so afterwards the client's
// deadlines are in the server's past: every SET NX PXAT stores a key that
// is already gone and every locker "gets" the lock. AdvanceMonotonic(d)
// moves TTLs and leaves the server's wall clock beside the client's, as
// Advance(d) then JumpWallClock(-d) does.
func TestFixture_AbsoluteDeadlinesAfterAdvance(t *testing.T) {
	const validity = 5 * time.Second
	t.Run("wall-ahead-of-the-client", func(t *testing.T) {
		srv := server.RunT(t, server.WithManualClock())
		srv.Advance(time.Minute)
		a, b := newLocker(t, srv.Addr(), validity), newLocker(t, srv.Addr(), validity)
		ctx := testCtx(t, 20*time.Second)
		_, releaseA, errA := a.TryWithContext(ctx, "job")
		_, releaseB, errB := b.TryWithContext(ctx, "job")
		if errA != nil || errB != nil {
			t.Fatalf("TryWithContext = %v, %v; the PXATs a minute in the server's past were expected to grant both", errA, errB)
		}
		releaseA()
		releaseB()
		if keys := srv.Keys(); len(keys) != 0 {
			t.Fatalf("keys %v: SET PXAT in the past must leave none", keys)
		}
	})

	t.Run("wall-put-back", func(t *testing.T) {
		srv := server.RunT(t, server.WithManualClock())
		step := srv.AdvanceMonotonic
		step(time.Minute)
		a, b := newLocker(t, srv.Addr(), validity), newLocker(t, srv.Addr(), validity)
		ctx := testCtx(t, 20*time.Second)
		lockedA, _, err := a.TryWithContext(ctx, "job")
		if err != nil {
			t.Fatalf("A: %v", err)
		}
		if _, _, err := b.TryWithContext(ctx, "job"); !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("B while A holds the lock: %v; want ErrNotLocked", err)
		}
		// A stalls past its validity (no extension runs: its timer is real
		// time); its keys expire and the invalidation tells A's locker. The
		// manual wall clock does not follow the real one: the PXATs A sent
		// are later on it by the real time the test has run, hence the
		// second more.
		step(validity + time.Second)
		if _, releaseB, err := b.TryWithContext(ctx, "job"); err != nil {
			t.Fatalf("B after A's validity: %v", err)
		} else {
			defer releaseB()
		}
		select {
		case <-lockedA.Done():
		case <-ctx.Done():
			t.Fatal("A's lock context was not cancelled when its keys expired")
		}
	})
}
