package goclients

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/tumblerdb/tumbler/server"
)

// newLocker returns a rueidislock locker with default options (RESP3,
// client-side caching with OPTOUT tracking, 3 keys per lock, majority 2),
// except KeyValidity when non-zero.
func newLocker(t *testing.T, addr string, validity time.Duration) rueidislock.Locker {
	t.Helper()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyValidity:  validity,
		// TryNextAfter is also each key's acquire timeout (20 ms by
		// default): on a loaded machine under the race detector a slower
		// reply failed the third key, which rueidislock does not retry.
		TryNextAfter: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("rueidislock.NewLocker: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

// evalCalls reads INFO's total_eval_calls (rueidislock's attempts are
// scripts).
func evalCalls(ctx context.Context, t *testing.T, c rueidis.Client) int {
	t.Helper()
	info, err := c.Do(ctx, c.B().Info().Section("stats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_eval_calls:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("total_eval_calls: %q", v)
			}
			return n
		}
	}
	t.Fatalf("INFO stats has no total_eval_calls: %q", info)
	return 0
}

// Acquire, contend and release across two lockers (two connections): the
// waiter is woken by tumbler's invalidation of the lock keys when the
// holder releases, not by the lock's validity running out.
func TestRueidisLock_WaiterWokenByInvalidation(t *testing.T) {
	srv := server.RunT(t)
	const validity = time.Minute // far beyond the test's deadline
	holder := newLocker(t, srv.Addr(), validity)
	waiter := newLocker(t, srv.Addr(), validity)
	probe := newRueidis(t, srv.Addr(), false)
	ctx := testCtx(t, 20*time.Second)

	lctx, release, err := holder.WithContext(ctx, "job")
	if err != nil {
		t.Fatalf("holder: WithContext: %v", err)
	}
	// WithContext returns once a majority (2 of 3) of the keys is held; the
	// third follows in the background. Wait for it, so that the scripts
	// counted below are the waiter's.
	deadline := time.Now().Add(10 * time.Second)
	for held := 0; held < 3; {
		held = 0
		for i := 0; i < 3; i++ {
			key := "rueidislock:" + strconv.Itoa(i) + ":job"
			pttl, err := probe.Do(ctx, probe.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil || pttl > validity.Milliseconds() {
				t.Fatalf("PTTL %s = %d, %v; want at most the lock's validity", key, pttl, err)
			}
			if pttl > 0 {
				held++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder has %d of the 3 keys", held)
		}
	}
	if _, _, err := waiter.TryWithContext(ctx, "job"); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Fatalf("TryWithContext while held: %v; want ErrNotLocked", err)
	}

	// The waiter blocks in WithContext; wait until its first attempt has
	// failed (one script: after a key fails, rueidislock skips the rest of
	// the attempt and sleeps until an invalidation).
	before := evalCalls(ctx, t, probe)
	type result struct {
		release context.CancelFunc
		err     error
	}
	acquired := make(chan result, 1)
	go func() {
		_, rel, err := waiter.WithContext(ctx, "job")
		acquired <- result{rel, err}
	}()
	deadline = time.Now().Add(10 * time.Second)
	for evalCalls(ctx, t, probe) < before+1 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never tried the lock")
		}
		time.Sleep(2 * time.Millisecond)
	}
	select {
	case r := <-acquired:
		t.Fatalf("waiter acquired a held lock: %v", r.err)
	default:
	}

	release()
	if lctx.Err() == nil {
		t.Fatal("the holder's context is still live after release")
	}
	select {
	case r := <-acquired:
		if r.err != nil {
			t.Fatalf("waiter: WithContext: %v", r.err)
		}
		r.release()
	case <-ctx.Done():
		t.Fatalf("the waiter was not woken after the release (the lock's validity is %v)", validity)
	}
	n, err := probe.Do(ctx, probe.B().Exists().Key("rueidislock:0:job", "rueidislock:1:job", "rueidislock:2:job").Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("EXISTS after both released = %d, %v; want 0", n, err)
	}
}

// Many workers on four lockers (four connections) take one lock in turn:
// never two holders at once, no lost update.
func TestRueidisLock_MutualExclusion(t *testing.T) {
	srv := server.RunT(t)
	lockers := make([]rueidislock.Locker, 4)
	for i := range lockers {
		lockers[i] = newLocker(t, srv.Addr(), 0)
	}
	var next atomic.Int64
	checkMutex(t, 16, 25, 60*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
		l := lockers[next.Add(1)%int64(len(lockers))]
		_, release, err := l.WithContext(ctx, "mutex")
		if err != nil {
			return nil, err
		}
		return func(context.Context) error { release(); return nil }, nil
	})
}
