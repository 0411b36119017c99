package goclients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
	"github.com/zeromicro/go-zero/core/logx"
	gzredis "github.com/zeromicro/go-zero/core/stores/redis"
)

func init() {
	// go-zero logs every failed Acquire attempt; keep test output readable.
	logx.Disable()
}

func TestGoZeroRedisLock(t *testing.T) {
	srv := server.RunT(t, server.WithManualClock())
	rds := gzredis.New(srv.Addr())
	rdb := newGoRedis(t, srv.Addr(), 0)
	ctx := testCtx(t, 20*time.Second)

	if !rds.PingCtx(ctx) {
		t.Fatalf("go-zero Ping failed")
	}

	a := gzredis.NewRedisLock(rds, "gz-lock")
	// Default expiry: 0 s + 500 ms tolerance = PX 500.
	if ok, err := a.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v; want true", ok, err)
	}
	if d, err := rdb.PTTL(ctx, "gz-lock").Result(); err != nil || d != 500*time.Millisecond {
		t.Fatalf("PTTL with default expiry = %v, %v; want 500ms", d, err)
	}
	// SetExpire(10): PX = 10*1000+500. Acquire by the holder re-enters
	// (GET matches, SET PX) and returns "OK".
	a.SetExpire(10)
	if ok, err := a.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("re-Acquire by holder = %v, %v; want true", ok, err)
	}
	if d, err := rdb.PTTL(ctx, "gz-lock").Result(); err != nil || d != 10500*time.Millisecond {
		t.Fatalf("PTTL after SetExpire(10) = %v, %v; want 10.5s", d, err)
	}
	if ttl, err := rds.TtlCtx(ctx, "gz-lock"); err != nil || ttl != 11 {
		t.Fatalf("go-zero Ttl = %d, %v; want 11 (10.5 s rounded)", ttl, err)
	}

	b := gzredis.NewRedisLock(rds, "gz-lock")
	b.SetExpire(10)
	// The lock script's SET NX PX fails: a null reply, false for go-zero.
	if ok, err := b.AcquireCtx(ctx); ok || err != nil {
		t.Fatalf("Acquire by another = %v, %v; want false, nil", ok, err)
	}
	if ok, err := b.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("Release by non-holder = %v, %v; want false, nil", ok, err)
	}
	if n, err := rdb.Exists(ctx, "gz-lock").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS after non-holder Release = %d, %v; want 1", n, err)
	}
	if ok, err := a.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("Release by holder = %v, %v; want true", ok, err)
	}
	if ok, err := rds.ExistsCtx(ctx, "gz-lock"); ok || err != nil {
		t.Fatalf("go-zero Exists after Release = %v, %v; want false", ok, err)
	}
	if ok, err := a.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("second Release = %v, %v; want false, nil", ok, err)
	}
	if ok, err := b.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("Acquire after Release = %v, %v; want true", ok, err)
	}

	// Expiry: b's 10.5 s lock lives through 10.5 s and is gone 1 ms later
	// (Redis: now > deadline); a takes it; b's release fails.
	srv.Advance(10500 * time.Millisecond)
	if ok, err := a.AcquireCtx(ctx); ok || err != nil {
		t.Fatalf("Acquire at the deadline = %v, %v; want false", ok, err)
	}
	srv.Advance(time.Millisecond)
	if ok, err := a.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("Acquire after expiry = %v, %v; want true", ok, err)
	}
	if ok, err := b.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("Release by the expired holder = %v, %v; want false, nil", ok, err)
	}
	if v, err := rds.GetCtx(ctx, "gz-lock"); err != nil || v == "" {
		t.Fatalf("go-zero Get after the expired holder's release = %q, %v; want a's id", v, err)
	}
	if ok, err := a.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("final Release = %v, %v; want true", ok, err)
	}

	// MustNewRedis (the non-deprecated constructor) pings at start.
	rds2, err := gzredis.NewRedis(gzredis.RedisConf{Host: srv.Addr(), Type: gzredis.NodeType})
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	c := gzredis.NewRedisLock(rds2, "gz-2")
	c.SetExpire(1)
	if ok, err := c.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("Acquire via NewRedis = %v, %v", ok, err)
	}
	if d, err := rdb.PTTL(ctx, "gz-2").Result(); err != nil || d != 1500*time.Millisecond {
		t.Fatalf("PTTL gz-2 = %v, %v; want 1.5s", d, err)
	}
}

func TestGoZeroMutualExclusion(t *testing.T) {
	srv := server.RunT(t)
	rds := gzredis.New(srv.Addr())
	// go-zero's circuit breaker counts the NOSCRIPT error of the first
	// EVALSHA as a failure: 20 workers starting at once on a cold script
	// cache open the breaker ("circuit breaker is open") on redis-server
	// 7.0.15 exactly as on tumbler. Warm the cache first, as a running
	// service would have.
	warm := gzredis.NewRedisLock(rds, "gz-mutex")
	if ok, err := warm.Acquire(); !ok || err != nil {
		t.Fatalf("warm-up Acquire = %v, %v", ok, err)
	}
	if ok, err := warm.Release(); !ok || err != nil {
		t.Fatalf("warm-up Release = %v, %v", ok, err)
	}
	checkMutex(t, 20, 50, 20*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
		l := gzredis.NewRedisLock(rds, "gz-mutex")
		l.SetExpire(10)
		for {
			ok, err := l.AcquireCtx(ctx)
			if err != nil {
				return nil, err
			}
			if ok {
				return func(ctx context.Context) error {
					ok, err := l.ReleaseCtx(ctx)
					if err == nil && !ok {
						err = errors.New("Release returned false")
					}
					return err
				}, nil
			}
			if err := sleepCtx(ctx, jitter()); err != nil {
				return nil, err
			}
		}
	})
}
