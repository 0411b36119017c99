package goclients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/server"
)

func TestRedislockObtainRefreshRelease(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t, server.WithManualClock())
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			locker := redislock.New(rdb)
			ctx := testCtx(t, 20*time.Second)

			lock, err := locker.Obtain(ctx, "rl-key", 30*time.Second, nil)
			if err != nil {
				t.Fatalf("Obtain: %v", err)
			}
			if lock.Key() != "rl-key" || len(lock.Token()) != 22 || lock.Metadata() != "" {
				t.Fatalf("lock key=%q token=%q metadata=%q", lock.Key(), lock.Token(), lock.Metadata())
			}
			if v, err := rdb.Get(ctx, "rl-key").Result(); err != nil || v != lock.Token() {
				t.Fatalf("GET = %q, %v; want the token %q", v, err, lock.Token())
			}
			// TTL runs the PTTL script; the manual clock makes it exact.
			if d, err := lock.TTL(ctx); err != nil || d != 30*time.Second {
				t.Fatalf("TTL = %v, %v; want 30s", d, err)
			}
			srv.Advance(10 * time.Second)
			if d, err := lock.TTL(ctx); err != nil || d != 20*time.Second {
				t.Fatalf("TTL after 10s = %v, %v; want 20s", d, err)
			}

			// Someone else: not obtained, with and without retries.
			if _, err := locker.Obtain(ctx, "rl-key", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("second Obtain: err = %v; want ErrNotObtained", err)
			}
			start := time.Now()
			_, err = locker.Obtain(ctx, "rl-key", time.Second, &redislock.Options{
				RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(10*time.Millisecond), 3),
			})
			if !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Obtain with 3 linear retries: err = %v; want ErrNotObtained", err)
			}
			if el := time.Since(start); el < 25*time.Millisecond {
				t.Fatalf("3 retries at 10ms took only %v: the retry strategy was not used", el)
			}
			shortCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err = locker.Obtain(shortCtx, "rl-key", time.Second, &redislock.Options{
				RetryStrategy: redislock.ExponentialBackoff(16*time.Millisecond, 32*time.Millisecond),
			})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Obtain with exponential backoff past the deadline: err = %v; want DeadlineExceeded", err)
			}
			// The failed attempts left the holder's value alone.
			if v, _ := rdb.Get(ctx, "rl-key").Result(); v != lock.Token() {
				t.Fatalf("the held lock's value changed to %q", v)
			}

			// Refresh sets a new TTL.
			if err := lock.Refresh(ctx, 45*time.Second, nil); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if d, err := rdb.PTTL(ctx, "rl-key").Result(); err != nil || d != 45*time.Second {
				t.Fatalf("PTTL after Refresh = %v, %v; want 45s", d, err)
			}

			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if n, err := rdb.Exists(ctx, "rl-key").Result(); err != nil || n != 0 {
				t.Fatalf("EXISTS after Release = %d, %v; want 0", n, err)
			}
			if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("second Release: err = %v; want ErrLockNotHeld", err)
			}
			if err := lock.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Refresh after Release: err = %v; want ErrNotObtained", err)
			}
			if d, err := lock.TTL(ctx); err != nil || d != 0 {
				t.Fatalf("TTL after Release = %v, %v; want 0", d, err)
			}

			// Custom token and metadata: the value is token+metadata, and
			// obtaining again with the same token re-enters (the obtain script
			// compares GETRANGE of the token prefix) and resets the TTL.
			opt := &redislock.Options{Token: "my-token", Metadata: "|meta"}
			l1, err := locker.Obtain(ctx, "rl-meta", 5*time.Second, opt)
			if err != nil {
				t.Fatalf("Obtain with token: %v", err)
			}
			if l1.Token() != "my-token" || l1.Metadata() != "|meta" {
				t.Fatalf("token=%q metadata=%q", l1.Token(), l1.Metadata())
			}
			if v, err := rdb.Get(ctx, "rl-meta").Result(); err != nil || v != "my-token|meta" {
				t.Fatalf("GET rl-meta = %q, %v; want my-token|meta", v, err)
			}
			srv.Advance(2 * time.Second)
			l2, err := locker.Obtain(ctx, "rl-meta", 7*time.Second, &redislock.Options{Token: "my-token", Metadata: "|new"})
			if err != nil {
				t.Fatalf("re-Obtain with the same token: %v", err)
			}
			if v, err := rdb.Get(ctx, "rl-meta").Result(); err != nil || v != "my-token|new" {
				t.Fatalf("GET rl-meta after re-obtain = %q, %v; want my-token|new", v, err)
			}
			if d, err := l2.TTL(ctx); err != nil || d != 7*time.Second {
				t.Fatalf("TTL after re-obtain = %v, %v; want 7s", d, err)
			}
			// A different token with a shared prefix does not re-enter.
			if _, err := locker.Obtain(ctx, "rl-meta", time.Second, &redislock.Options{Token: "my-tokeX"}); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Obtain with another token: err = %v; want ErrNotObtained", err)
			}
			// l1's value is stale (metadata changed): its release fails; l2's works.
			if err := l1.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Fatalf("Release with stale value: err = %v; want ErrLockNotHeld", err)
			}
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("Release l2: %v", err)
			}
		})
	}
}

// TestRedislockRetryObtains: a waiter with a retry strategy gets the lock
// once the holder releases it.
func TestRedislockRetryObtains(t *testing.T) {
	srv := server.RunT(t)
	rdb := newGoRedis(t, srv.Addr(), 0)
	ctx := testCtx(t, 10*time.Second)

	held, err := redislock.Obtain(ctx, rdb, "rl-wait", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		released <- held.Release(ctx)
	}()
	start := time.Now()
	got, err := redislock.Obtain(ctx, rdb, "rl-wait", 10*time.Second, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond),
	})
	if err != nil {
		t.Fatalf("Obtain with retries: %v", err)
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("obtained after %v, before the holder released at 100ms", el)
	}
	if err := <-released; err != nil {
		t.Fatalf("holder Release: %v", err)
	}
	if v, _ := rdb.Get(ctx, "rl-wait").Result(); v != got.Token() {
		t.Fatalf("GET = %q, want the waiter's token %q", v, got.Token())
	}
	if err := got.Release(ctx); err != nil {
		t.Fatalf("waiter Release: %v", err)
	}
}

// TestRedislockExpiry: a 30 s lock is gone after 31 s; another client takes
// it; the old holder's Refresh/Release/TTL report the loss.
func TestRedislockExpiry(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rdbA := newGoRedis(t, srv.Addr(), 0)
	rdbB := newGoRedis(t, srv.Addr(), 0)
	ctx := testCtx(t, 10*time.Second)

	a, err := redislock.Obtain(ctx, rdbA, "rl-exp", 30*time.Second, nil)
	if err != nil {
		t.Fatalf("A Obtain: %v", err)
	}
	srv.Advance(29 * time.Second)
	if _, err := redislock.Obtain(ctx, rdbB, "rl-exp", 30*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("B Obtain at 29s: err = %v; want ErrNotObtained", err)
	}
	if d, err := a.TTL(ctx); err != nil || d != time.Second {
		t.Fatalf("A TTL at 29s = %v, %v; want 1s", d, err)
	}
	srv.Advance(2 * time.Second)
	if d, err := a.TTL(ctx); err != nil || d != 0 {
		t.Fatalf("A TTL at 31s = %v, %v; want 0", d, err)
	}
	if _, err := rdbB.Get(ctx, "rl-exp").Result(); err != redis.Nil {
		t.Fatalf("GET at 31s: err = %v; want redis.Nil", err)
	}
	b, err := redislock.Obtain(ctx, rdbB, "rl-exp", 30*time.Second, nil)
	if err != nil {
		t.Fatalf("B Obtain after expiry: %v", err)
	}
	if err := a.Refresh(ctx, 30*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("A Refresh after expiry: err = %v; want ErrNotObtained", err)
	}
	if err := a.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("A Release after expiry: err = %v; want ErrLockNotHeld", err)
	}
	if d, err := a.TTL(ctx); err != nil || d != 0 {
		t.Fatalf("A TTL = %v, %v; want 0", d, err)
	}
	if v, err := rdbB.Get(ctx, "rl-exp").Result(); err != nil || v != b.Token() {
		t.Fatalf("GET = %q, %v; want B's token", v, err)
	}
	if d, err := b.TTL(ctx); err != nil || d != 30*time.Second {
		t.Fatalf("B TTL = %v, %v; want 30s", d, err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B Release: %v", err)
	}
}

func TestRedislockMutualExclusion(t *testing.T) {
	srv := server.RunT(t)
	rdb := newGoRedis(t, srv.Addr(), 0)
	locker := redislock.New(rdb)
	checkMutex(t, 20, 50, 20*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
		lock, err := locker.Obtain(ctx, "rl-mutex", 10*time.Second, &redislock.Options{
			RetryStrategy: redislock.LinearBackoff(time.Millisecond),
		})
		if err != nil {
			return nil, err
		}
		return lock.Release, nil
	})
}
