package goclients

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	// go-redis pools keep redialing servers a test has closed (the Redlock
	// node-down tests; go-zero's process-wide clients keep MinIdleConns
	// connections to every address they saw). Drop those expected
	// "connection refused" lines and keep every other go-redis log.
	redis.SetLogger(quietRefused{})
}

type quietRefused struct{}

func (quietRefused) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "connection refused") {
		return
	}
	log.Print("redis: ", msg)
}

// testCtx is a context bounded in time for one test.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newGoRedis returns a go-redis client with its default options except the
// protocol (0 = the client's default, which is RESP3), closed at cleanup.
func newGoRedis(t *testing.T, addr string, protocol int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// cmdLog is a go-redis hook that records every command name sent, with the
// error it got, so tests can check what the client really put on the wire.
type cmdLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		l.add(cmd.Name(), err)
		return err
	}
}

func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			l.add(c.Name(), c.Err())
		}
		return err
	}
}

// add records one command. The error is the one the hook chain returned:
// go-redis v9.23 sets cmd.Err() only after the hooks have run.
func (l *cmdLog) add(name string, err error) {
	switch name {
	case "hello", "client", "auth", "select":
		return // connection handshake: a new pool connection may appear at any time
	}
	s := name
	if err != nil && err != redis.Nil {
		e := err.Error()
		if i := strings.IndexByte(e, ' '); i > 0 {
			e = e[:i]
		}
		s += "->" + e
	}
	l.mu.Lock()
	l.cmds = append(l.cmds, s)
	l.mu.Unlock()
}

// take returns the commands recorded so far and forgets them.
func (l *cmdLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cmds
	l.cmds = nil
	return out
}

// acquireFunc takes the lock under test, retrying until it has it or ctx
// ends, and returns the function that releases it.
type acquireFunc func(ctx context.Context) (release func(ctx context.Context) error, err error)

// mutexResult is what one mutual-exclusion run observed.
type mutexResult struct {
	counter    int64 // the shared counter, incremented non-atomically
	overlaps   int64 // times a worker entered while another was inside
	maxHolders int64
	elapsed    time.Duration
}

// runMutex has workers goroutines each take the lock iters times; inside it
// they do a non-atomic read-modify-write of a shared counter (an atomic load,
// a pause, an atomic store: lost updates under overlap, yet race-clean, since
// the race detector cannot see happens-before edges through TCP) and count
// how many holders are inside at once.
func runMutex(t *testing.T, workers, iters int, budget time.Duration, acquire acquireFunc) mutexResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()

	var counter, holders, overlaps, maxHolders atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				release, err := acquire(ctx)
				if err != nil {
					errs <- fmt.Errorf("worker %d, iteration %d: acquire: %w", w, i, err)
					return
				}
				h := holders.Add(1)
				if h > 1 {
					overlaps.Add(1)
				}
				for {
					m := maxHolders.Load()
					if h <= m || maxHolders.CompareAndSwap(m, h) {
						break
					}
				}
				v := counter.Load()
				runtime.Gosched()
				if i%4 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				counter.Store(v + 1)
				holders.Add(-1)
				if err := release(ctx); err != nil {
					errs <- fmt.Errorf("worker %d, iteration %d: release: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	res := mutexResult{counter: counter.Load(), overlaps: overlaps.Load(), maxHolders: maxHolders.Load(), elapsed: time.Since(start)}
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	t.Logf("%d workers x %d iterations: counter=%d overlaps=%d maxHolders=%d in %v",
		workers, iters, res.counter, res.overlaps, res.maxHolders, res.elapsed.Round(time.Millisecond))
	return res
}

// checkMutex runs runMutex and requires perfect mutual exclusion.
func checkMutex(t *testing.T, workers, iters int, budget time.Duration, acquire acquireFunc) {
	t.Helper()
	res := runMutex(t, workers, iters, budget, acquire)
	if res.overlaps != 0 || res.maxHolders != 1 {
		t.Errorf("mutual exclusion broken: %d overlaps, up to %d holders at once", res.overlaps, res.maxHolders)
	}
	if want := int64(workers * iters); res.counter != want {
		t.Errorf("counter = %d, want %d (lost updates or failed workers)", res.counter, want)
	}
}

// jitter is a short random retry delay for spinning lock loops.
func jitter() time.Duration {
	return time.Duration(500+rand.IntN(1500)) * time.Microsecond
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// uniqueToken is a per-acquisition lock value.
func uniqueToken() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
