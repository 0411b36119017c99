package goclients

// Mutual exclusion under contention for the lock clients that cannot be
// installed here (Java, .NET, newer Python) and are otherwise proven only
// by compat/replay: each test speaks one client's protocol with go-redis —
// the same commands in the same order, and the same script bytes, read at
// run time from the replay file that cites the client's source — with
// several workers on each of a few hot keys, and requires zero overlaps,
// no lost updates and every worker finishing all its cycles.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/compat/replay"
	"github.com/tumblerdb/tumbler/server"
)

// Shape of every stress run: workers per key × cycles each, on hotKeys keys
// at once, within stressBudget.
const (
	stressWorkers = 5
	stressCycles  = 20
	stressBudget  = 15 * time.Second
)

var hotKeys = []string{"hot-a", "hot-b", "hot-c"}

// replayScript returns the script whose SHA1 is sha as it appears (an EVAL
// or SCRIPT LOAD argument) in compat/replay/testdata/file, so these tests
// send exactly the bytes the replay took from the client's source.
func replayScript(t *testing.T, file, sha string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "replay", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	f, err := replay.Parse(file, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range f.Steps {
		a := st.Args
		var src string
		switch {
		case len(a) >= 2 && strings.EqualFold(a[0], "eval"):
			src = a[1]
		case len(a) >= 3 && strings.EqualFold(a[0], "script") && strings.EqualFold(a[1], "load"):
			src = a[2]
		default:
			continue
		}
		if sha1Hex(src) == sha {
			return src
		}
	}
	t.Fatalf("%s has no script with SHA1 %s", file, sha)
	return ""
}

// evalLoad runs a script as redis-py's Script.__call__ and Redisson's
// script cache do: EVALSHA, and on NOSCRIPT, SCRIPT LOAD and EVALSHA again.
func evalLoad(ctx context.Context, rdb redis.Scripter, src string, keys []string, args ...any) *redis.Cmd {
	sha := sha1Hex(src)
	cmd := rdb.EvalSha(ctx, sha, keys, args...)
	if err := cmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT ") {
		return cmd
	}
	if got, err := rdb.ScriptLoad(ctx, src).Result(); err != nil || got != sha {
		c := redis.NewCmd(ctx)
		c.SetErr(fmt.Errorf("SCRIPT LOAD = %q, %v; want %s", got, err, sha))
		return c
	}
	return rdb.EvalSha(ctx, sha, keys, args...)
}

// newStressClient is a go-redis client with room for every worker's
// blocked or subscribed connection, closed at cleanup.
func newStressClient(t *testing.T, addr string, protocol int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// perWorker hands each acquisition one of n states (a connection, a
// client id): runMutex's workers hold at most one lock each, so n states
// for n workers never run short. release gives the state back.
type perWorker[T any] chan T

func newPerWorker[T any](n int, mk func(i int) T) perWorker[T] {
	p := make(perWorker[T], n)
	for i := range n {
		p <- mk(i)
	}
	return p
}

func (p perWorker[T]) get(ctx context.Context) (T, error) {
	select {
	case s := <-p:
		return s, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (p perWorker[T]) put(s T) { p <- s }

// checkMutexKeys runs checkMutex on every hot key at once, stressWorkers
// workers each, with the acquire function mk builds for the key.
func checkMutexKeys(t *testing.T, mk func(key string) acquireFunc) {
	t.Helper()
	var wg sync.WaitGroup
	for _, key := range hotKeys {
		acquire := mk(key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			checkMutex(t, stressWorkers, stressCycles, stressBudget, acquire)
		}()
	}
	wg.Wait()
}

// waitStats counts how waits for an unlock message ended.
type waitStats struct{ woken, slow, late, lost atomic.Int64 }

// wait waits on ps for the unlock message (a message on channel, with
// payload want unless want is ""), at most first. since is the value of
// unlocks (the key's count of unlocks begun) read before the waiter's
// last try: an unlock begun after it publishes after the waiter
// subscribed, so its message must arrive. A wait that ends without a
// message while no unlock began is a slow holder (a loaded machine), and
// the waiter just tries again; one during which an unlock began gets 5 s
// more and is then counted as lost.
func (s *waitStats) wait(ctx context.Context, ps *redis.PubSub, channel, want string, first time.Duration, unlocks *atomic.Int64, since int64) error {
	woken, err := waitMessage(ctx, ps, channel, want, first)
	switch {
	case err != nil:
		return err
	case woken:
		s.woken.Add(1)
		return nil
	case unlocks.Load() == since:
		s.slow.Add(1)
		return nil
	}
	woken, err = waitMessage(ctx, ps, channel, want, 5*time.Second)
	switch {
	case err != nil:
		return err
	case woken:
		s.late.Add(1)
	default:
		s.lost.Add(1)
	}
	return nil
}

// check requires that waiters were woken by the message, and that no
// unlock's message failed to reach a subscribed waiter.
func (s *waitStats) check(t *testing.T) {
	t.Helper()
	w, slow, late, lost := s.woken.Load(), s.slow.Load(), s.late.Load(), s.lost.Load()
	t.Logf("waits: %d woken by the unlock message, %d timed out while the holder held on, %d woken late, %d messages lost", w, slow, late, lost)
	if lost != 0 {
		t.Errorf("%d waits saw an unlock begin but never got its PUBLISH: a message did not reach a subscribed waiter", lost)
	}
	if w == 0 {
		t.Error("no waiter was ever woken by an unlock message: the pub/sub path went untested")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// waitMessage reads ps until a message on channel (or, for a pattern
// subscription, one whose payload is want) arrives, or wait passes
// (woken false). Subscription confirmations and other channels' messages
// are skipped.
func waitMessage(ctx context.Context, ps *redis.PubSub, channel, want string, wait time.Duration) (woken bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		m, err := ps.ReceiveTimeout(ctx, left)
		if isTimeout(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if msg, ok := m.(*redis.Message); ok && msg.Channel == channel && (want == "" || msg.Payload == want) {
			return true, nil
		}
	}
}

// subscribeWait sends SUBSCRIBE and reads until its confirmation, so a
// publish after this returns cannot be missed.
func subscribeWait(ctx context.Context, ps *redis.PubSub, channel string) error {
	if err := ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	for {
		m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			return fmt.Errorf("waiting for the SUBSCRIBE %s confirmation: %w", channel, err)
		}
		if s, ok := m.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == channel {
			return nil
		}
	}
}

// ---- Redisson

const (
	redissonRLockReplay  = "redisson_rlock.replay"
	redissonFencedReplay = "redisson_fencedlock.replay"
	shaRedissonLock      = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94" // RedissonLock.tryLockInnerAsync
	shaRedissonUnlock    = "6866459238a13a701d42f4971f12d9f3a50e2442" // RedissonLock.unlockInnerAsync
	shaRedissonRenew     = "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635" // renewal.LockTask
	shaFencedList        = "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45" // RedissonFencedLock.lockAndGetToken
	shaFencedNil         = "46b5551ba403d6152a7a6eca122e08728d6c8c66" // RedissonFencedLock.tryLockInnerAsync
)

// redissonWorker is one Redisson thread: an instance's client, its lock
// name (instance id:thread id) and a pub/sub connection of its own.
type redissonWorker struct {
	rdb  *redis.Client
	name string
	ps   *redis.PubSub
}

// newRedissonWorkers makes the threads that lock one key, alternating between
// the instances; thread ids are unique across all keys (threads is the
// counter), so no thread holds two locks.
func newRedissonWorkers(t *testing.T, ctx context.Context, instances []*redis.Client, threads *atomic.Int64) perWorker[*redissonWorker] {
	ids := []string{"7b1c0f3e-9a54-4c1e-8d2f-5e6a7b8c9d01", "c2d3e4f5-1a2b-4c3d-9e8f-0a1b2c3d4e5f"}
	return newPerWorker(stressWorkers, func(i int) *redissonWorker {
		rdb := instances[i%len(instances)]
		ps := rdb.Subscribe(ctx)
		t.Cleanup(func() { _ = ps.Close() })
		return &redissonWorker{rdb: rdb, name: fmt.Sprintf("%s:%d", ids[i%len(ids)], threads.Add(1)), ps: ps}
	})
}

// redissonAcquire is RedissonLock.lock(): try the script; when it answers
// the holder's pttl, subscribe to redisson_lock__channel:{key} (and wait
// for the confirmation), then try again and wait for the unlock message,
// at most the pttl (here at most 3 s), until a try succeeds; then
// unsubscribe. try reports
// whether the lock was granted, and the pttl otherwise; unlocks counts the
// key's unlocks begun (see waitStats.wait).
func redissonAcquire(ctx context.Context, w *redissonWorker, key string, waits *waitStats, unlocks *atomic.Int64, try func() (bool, time.Duration, error)) error {
	ok, ttl, err := try()
	if ok || err != nil {
		return err
	}
	channel := "redisson_lock__channel:{" + key + "}"
	if err := subscribeWait(ctx, w.ps, channel); err != nil {
		return err
	}
	for {
		since := unlocks.Load()
		if ok, ttl, err = try(); ok || err != nil {
			break
		}
		if err := waits.wait(ctx, w.ps, channel, "0", min(ttl, 3*time.Second), unlocks, since); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return w.ps.Unsubscribe(ctx, channel)
}

// redissonUnlock runs the unlock script with a fresh unlock-latch request
// id, checks its answer, and deletes the latch, as
// RedissonBaseLock.unlockInnerAsync does.
func redissonUnlock(ctx context.Context, w *redissonWorker, src, key string, want int64, unlocks *atomic.Int64) error {
	if want == 1 {
		unlocks.Add(1) // this one deletes the hash and publishes
	}
	latch := "redisson_unlock_latch:{" + key + "}:" + uniqueToken()
	n, err := evalLoad(ctx, w.rdb, src, []string{key, "redisson_lock__channel:{" + key + "}", latch},
		0, 30000, w.name, "PUBLISH", 20000).Int64()
	if err != nil || n != want {
		return fmt.Errorf("unlock script = %d, %v; want %d", n, err, want)
	}
	return w.rdb.Del(ctx, latch).Err()
}

// pttlReply reads the nil-or-pttl answer of Redisson's lock scripts.
func pttlReply(cmd *redis.Cmd) (bool, time.Duration, error) {
	n, err := cmd.Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if n <= 0 {
		return false, 0, fmt.Errorf("lock script answered pttl %d for a held lock", n)
	}
	return false, time.Duration(n) * time.Millisecond, nil
}

// TestStress_RedissonRLock: two Redisson instances (RESP2, script cache),
// several threads each. A thread locks reentrantly (the hash count goes to
// 2), its watchdog renews all the instance's hot keys in one script ({1}
// for the one it holds, 0 for the others), and it unlocks twice: the first
// unlock answers 0 and keeps the lock, the second answers 1, deletes the
// hash and publishes 0 on redisson_lock__channel:{key}. Waiters sleep on
// that channel; every wait must end with the message, never by timeout.
func TestStress_RedissonRLock(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 30*time.Second)
	lockSrc := replayScript(t, redissonRLockReplay, shaRedissonLock)
	unlockSrc := replayScript(t, redissonRLockReplay, shaRedissonUnlock)
	renewSrc := replayScript(t, redissonRLockReplay, shaRedissonRenew)
	instances := []*redis.Client{newStressClient(t, srv.Addr(), 2), newStressClient(t, srv.Addr(), 2)}
	if err := instances[0].ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var waits waitStats
	var threads atomic.Int64
	checkMutexKeys(t, func(key string) acquireFunc {
		workers := newRedissonWorkers(t, ctx, instances, &threads)
		var unlocks atomic.Int64
		return func(ctx context.Context) (func(context.Context) error, error) {
			w, err := workers.get(ctx)
			if err != nil {
				return nil, err
			}
			try := func() (bool, time.Duration, error) {
				return pttlReply(evalLoad(ctx, w.rdb, lockSrc, []string{key}, 30000, w.name))
			}
			if err := redissonAcquire(ctx, w, key, &waits, &unlocks, try); err != nil {
				return nil, err
			}
			// reentrant: the same thread locks again
			if ok, _, err := try(); !ok || err != nil {
				return nil, fmt.Errorf("reentrant lock: granted %v, %v", ok, err)
			}
			if c, err := w.rdb.HGet(ctx, key, w.name).Result(); err != nil || c != "2" {
				return nil, fmt.Errorf("hold count = %q, %v; want 2", c, err)
			}
			return func(ctx context.Context) error {
				defer workers.put(w)
				args := []any{30000}
				for range hotKeys {
					args = append(args, w.name)
				}
				got, err := evalLoad(ctx, w.rdb, renewSrc, hotKeys, args...).Int64Slice()
				if err != nil {
					return fmt.Errorf("watchdog renewal: %v", err)
				}
				for i, k := range hotKeys {
					want := int64(0)
					if k == key {
						want = 1
					}
					if got[i] != want {
						return fmt.Errorf("watchdog renewal over %v = %v; key %s should answer %d", hotKeys, got, k, want)
					}
				}
				if err := redissonUnlock(ctx, w, unlockSrc, key, 0, &unlocks); err != nil {
					return fmt.Errorf("first (reentrant) unlock: %v", err)
				}
				return redissonUnlock(ctx, w, unlockSrc, key, 1, &unlocks)
			}, nil
		}
	})
	waits.check(t)
}

// TestStress_RedissonFencedLock: RFencedLock's two acquire scripts
// (lockAndGetToken's {-1, token} / {pttl, -1}, and lock()'s nil / pttl
// followed by GET of the token key) alternate; every grant's token must be
// above the previous grant's on the same lock. Unlock is RLock's.
func TestStress_RedissonFencedLock(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 30*time.Second)
	listSrc := replayScript(t, redissonFencedReplay, shaFencedList)
	nilSrc := replayScript(t, redissonFencedReplay, shaFencedNil)
	unlockSrc := replayScript(t, redissonFencedReplay, shaRedissonUnlock)
	instances := []*redis.Client{newStressClient(t, srv.Addr(), 2), newStressClient(t, srv.Addr(), 2)}
	var waits waitStats
	var threads atomic.Int64
	var mu sync.Mutex
	last := map[string]int64{}
	grants := map[string]int{}
	checkMutexKeys(t, func(key string) acquireFunc {
		workers := newRedissonWorkers(t, ctx, instances, &threads)
		var unlocks atomic.Int64
		tokenKey := "redisson_lock_token:{" + key + "}"
		var calls atomic.Int64
		return func(ctx context.Context) (func(context.Context) error, error) {
			w, err := workers.get(ctx)
			if err != nil {
				return nil, err
			}
			withList := calls.Add(1)%2 == 0
			var token int64
			try := func() (bool, time.Duration, error) {
				if !withList {
					return pttlReply(evalLoad(ctx, w.rdb, nilSrc, []string{key, tokenKey}, 30000, w.name))
				}
				r, err := evalLoad(ctx, w.rdb, listSrc, []string{key, tokenKey}, 30000, w.name).Int64Slice()
				switch {
				case err != nil:
					return false, 0, err
				case len(r) != 2:
					return false, 0, fmt.Errorf("lockAndGetToken script = %v", r)
				case r[0] == -1:
					token = r[1]
					return true, 0, nil
				case r[0] > 0 && r[1] == -1:
					return false, time.Duration(r[0]) * time.Millisecond, nil
				}
				return false, 0, fmt.Errorf("lockAndGetToken script = %v", r)
			}
			if err := redissonAcquire(ctx, w, key, &waits, &unlocks, try); err != nil {
				return nil, err
			}
			if !withList {
				if token, err = w.rdb.Get(ctx, tokenKey).Int64(); err != nil {
					return nil, fmt.Errorf("GET %s: %v", tokenKey, err)
				}
			}
			mu.Lock()
			prev := last[key]
			last[key] = token
			grants[key]++
			mu.Unlock()
			if token <= prev {
				return nil, fmt.Errorf("fencing token %d after %d: not increasing", token, prev)
			}
			return func(ctx context.Context) error {
				defer workers.put(w)
				return redissonUnlock(ctx, w, unlockSrc, key, 1, &unlocks)
			}, nil
		}
	})
	for _, key := range hotKeys {
		if last[key] != int64(grants[key]) {
			t.Errorf("%s: last token %d after %d grants; want one INCR per grant", key, last[key], grants[key])
		}
	}
	waits.check(t)
}

// ---- Spring Integration RedisLockRegistry

const (
	springLuaReplay      = "spring_lock_registry_lua.replay"
	shaSpringObtain      = "175897a4e379e99e79a54937be09226f76cdcfe5" // OBTAIN_LOCK_SCRIPT
	shaSpringRenew       = "879e0f7b8d83c3266d4e996627438c05dbda0b89" // RENEW_SCRIPT
	shaSpringUnlink      = "f0f9038aa2b6d6c3436c72d147573ea2a58f0ef2" // RedisSpinLock's UNLINK script
	shaSpringPubSubUnlck = "7a71e9443a2a41539fb115a5a27d5a748a871aed" // RedisPubSubLock's UNLINK_UNLOCK_SCRIPT
)

// TestStress_SpringLockRegistry: one registry per worker (its own
// clientId), on Lettuce's RESP3. Scripts go EVALSHA, then EVAL on NOSCRIPT
// (DefaultScriptExecutor). Each holder renews once before unlocking.
//   - lua: spin lock with compare-and-set switched off: obtain script, the
//     RENEW_SCRIPT, the UNLINK script.
//   - cas: a fresh registry on a server with compare-and-set: renew is
//     SET key id EX 60 IFEQ id, unlock is DELEX key IFEQ id.
//   - pubsub: PUB_SUB_LOCK; each registry's listener connection is
//     PSUBSCRIBEd to registry-channel:* and the unlock script PUBLISHes
//     the lock key; every wait must end with that message, not by timeout.
func TestStress_SpringLockRegistry(t *testing.T) {
	for _, mode := range []string{"lua", "cas", "pubsub"} {
		t.Run(mode, func(t *testing.T) {
			srv := server.RunT(t)
			ctx := testCtx(t, 30*time.Second)
			rdb := newStressClient(t, srv.Addr(), 0)
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			obtain := redis.NewScript(replayScript(t, springLuaReplay, shaSpringObtain))
			renew := redis.NewScript(replayScript(t, springLuaReplay, shaSpringRenew))
			unlink := redis.NewScript(replayScript(t, springLuaReplay, shaSpringUnlink))
			pubsubUnlink := redis.NewScript(replayScript(t, springLuaReplay, shaSpringPubSubUnlck))
			var waits waitStats
			type registry struct {
				id string
				ps *redis.PubSub
			}
			var ri atomic.Int64
			checkMutexKeys(t, func(path string) acquireFunc {
				key := "registry:" + path
				var unlocks atomic.Int64
				registries := newPerWorker(stressWorkers, func(int) *registry {
					r := &registry{id: fmt.Sprintf("5f0e3a9c-6b1d-4d2e-8f7a-%012d", ri.Add(1))}
					if mode == "pubsub" {
						r.ps = rdb.PSubscribe(ctx)
						t.Cleanup(func() { _ = r.ps.Close() })
						if err := r.ps.PSubscribe(ctx, "registry-channel:*"); err != nil {
							t.Fatal(err)
						}
						if m, err := r.ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
							t.Fatalf("PSUBSCRIBE confirmation: %v", err)
						} else if s, ok := m.(*redis.Subscription); !ok || s.Kind != "psubscribe" {
							t.Fatalf("PSUBSCRIBE confirmation: %#v", m)
						}
					}
					return r
				})
				tryObtain := func(ctx context.Context, r *registry) (bool, error) {
					n, err := obtain.Run(ctx, rdb, []string{key}, r.id, 60000).Int64()
					if errors.Is(err, redis.Nil) {
						return false, nil
					}
					if err != nil || n != 1 {
						return false, fmt.Errorf("obtain script = %d, %v", n, err)
					}
					return true, nil
				}
				return func(ctx context.Context) (func(context.Context) error, error) {
					r, err := registries.get(ctx)
					if err != nil {
						return nil, err
					}
					for {
						since := unlocks.Load()
						ok, err := tryObtain(ctx, r)
						if err != nil {
							return nil, err
						}
						if ok {
							break
						}
						if mode != "pubsub" {
							if err := sleepCtx(ctx, jitter()); err != nil {
								return nil, err
							}
							continue
						}
						if err := waits.wait(ctx, r.ps, "registry-channel:"+key, key, 3*time.Second, &unlocks, since); err != nil {
							return nil, err
						}
					}
					return func(ctx context.Context) error {
						defer registries.put(r)
						switch mode {
						case "cas":
							if s, err := rdb.Do(ctx, "SET", key, r.id, "EX", 60, "IFEQ", r.id).Text(); err != nil || s != "OK" {
								return fmt.Errorf("renew SET IFEQ = %q, %v; want OK", s, err)
							}
							if n, err := rdb.Do(ctx, "DELEX", key, "IFEQ", r.id).Int64(); err != nil || n != 1 {
								return fmt.Errorf("unlock DELEX IFEQ = %d, %v; want 1", n, err)
							}
							return nil
						default:
							if n, err := renew.Run(ctx, rdb, []string{key}, r.id, 60000).Int64(); err != nil || n != 1 {
								return fmt.Errorf("renew script = %d, %v; want 1", n, err)
							}
						}
						var n int64
						if mode == "pubsub" {
							unlocks.Add(1)
							n, err = pubsubUnlink.Run(ctx, rdb, []string{key}, r.id, "registry-channel:"+key).Int64()
						} else {
							n, err = unlink.Run(ctx, rdb, []string{key}, r.id).Int64()
						}
						if err != nil || n != 1 {
							return fmt.Errorf("unlock script = %d, %v; want 1", n, err)
						}
						return nil
					}, nil
				}
			})
			if mode == "pubsub" {
				waits.check(t)
			}
		})
	}
}

// ---- python-redis-lock

const (
	pythonRedisLockReplay = "python_redis_lock.replay"
	shaPRLUnlock          = "90da91872223f85eb1376a17e3c4df21ace8c54b" // UNLOCK_SCRIPT
	shaPRLExtend          = "fed16109024d968d9496e4140fe1355bac05ebff" // EXTEND_SCRIPT
)

// TestStress_PythonRedisLock: Lock(conn, name, expire=5) per worker, on
// redis-py 8 (RESP3). acquire(timeout=1): GET (the _held check), SET NX
// EX 5; while busy BLPOP lock-signal:<name> 1, and after a BLPOP that
// timed out one more SET before giving up (the caller then calls acquire
// again). The holder extends once, then releases with UNLOCK_SCRIPT, whose
// DEL + LPUSH of the signal wakes one blocked waiter. A BLPOP can time out
// by design (two waiters, one signal); the count is logged.
func TestStress_PythonRedisLock(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 30*time.Second)
	rdb := newStressClient(t, srv.Addr(), 0)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	unlockSrc := replayScript(t, pythonRedisLockReplay, shaPRLUnlock)
	extendSrc := replayScript(t, pythonRedisLockReplay, shaPRLExtend)
	var woken, timedOut atomic.Int64
	checkMutexKeys(t, func(name string) acquireFunc {
		lockKey, signal := "lock:"+name, "lock-signal:"+name
		ids := newPerWorker(stressWorkers, func(int) string {
			b := make([]byte, 18)
			_, _ = rand.Read(b)
			return base64.StdEncoding.EncodeToString(b)
		})
		// acquire(blocking=True, timeout=1)
		acquire := func(ctx context.Context, id string) (bool, error) {
			if owner, err := rdb.Get(ctx, lockKey).Result(); err == nil && owner == id {
				return false, errors.New("AlreadyAcquired")
			} else if err != nil && !errors.Is(err, redis.Nil) {
				return false, err
			}
			timedOutOnce := false
			for {
				err := rdb.Do(ctx, "SET", lockKey, id, "NX", "EX", 5).Err()
				if err == nil {
					return true, nil
				}
				if !errors.Is(err, redis.Nil) {
					return false, err
				}
				if timedOutOnce {
					return false, nil
				}
				_, err = rdb.Do(ctx, "BLPOP", signal, 1).Result()
				switch {
				case errors.Is(err, redis.Nil):
					timedOut.Add(1)
					timedOutOnce = true
				case err != nil:
					return false, err
				default:
					woken.Add(1)
				}
			}
		}
		return func(ctx context.Context) (func(context.Context) error, error) {
			id, err := ids.get(ctx)
			if err != nil {
				return nil, err
			}
			for {
				ok, err := acquire(ctx, id)
				if err != nil {
					return nil, err
				}
				if ok {
					break
				}
			}
			return func(ctx context.Context) error {
				defer ids.put(id)
				if n, err := evalLoad(ctx, rdb, extendSrc, []string{lockKey, signal}, id, 5).Int64(); err != nil || n != 0 {
					return fmt.Errorf("extend = %d, %v; want 0", n, err)
				}
				if n, err := evalLoad(ctx, rdb, unlockSrc, []string{lockKey, signal}, id, 1000).Int64(); err != nil || n != 0 {
					return fmt.Errorf("release = %d, %v; want 0", n, err)
				}
				return nil
			}, nil
		}
	})
	t.Logf("BLPOP: %d woken by a release's LPUSH, %d timed out", woken.Load(), timedOut.Load())
	if woken.Load() == 0 {
		t.Error("no BLPOP was ever woken by the release script's LPUSH")
	}
}

// ---- StackExchange.Redis

// TestStress_StackExchangeRedis: LockTake is SET key token PX 5000 NX
// (the caller retries); LockExtend and LockRelease are transactions with a
// StringEqual condition on the worker's own connection: WATCH, GET, then
// MULTI, PEXPIRE (or UNLINK), EXEC when the value is the token, UNWATCH
// otherwise. A failed SET NX by a contender must not touch the watched
// key: every EXEC must run. Half the workers speak RESP3 (the default),
// half RESP2.
func TestStress_StackExchangeRedis(t *testing.T) {
	srv := server.RunT(t)
	clients := []*redis.Client{newStressClient(t, srv.Addr(), 0), newStressClient(t, srv.Addr(), 2)}
	// transact runs one condition-guarded transaction: true when EXEC ran
	// cmd, false when the condition failed (UNWATCH).
	transact := func(ctx context.Context, cn *redis.Conn, key, token string, cmd ...any) (bool, []any, error) {
		if err := cn.Do(ctx, "WATCH", key).Err(); err != nil {
			return false, nil, err
		}
		v, err := cn.Do(ctx, "GET", key).Text()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false, nil, err
		}
		if v != token {
			return false, nil, cn.Do(ctx, "UNWATCH").Err()
		}
		if err := cn.Do(ctx, "MULTI").Err(); err != nil {
			return false, nil, err
		}
		if s, err := cn.Do(ctx, cmd...).Text(); err != nil || s != "QUEUED" {
			return false, nil, fmt.Errorf("%v in MULTI = %q, %v", cmd[0], s, err)
		}
		res, err := cn.Do(ctx, "EXEC").Slice()
		if errors.Is(err, redis.Nil) {
			return false, nil, fmt.Errorf("EXEC aborted: the watched key was touched while held")
		}
		return err == nil, res, err
	}
	checkMutexKeys(t, func(key string) acquireFunc {
		var wi atomic.Int64
		conns := newPerWorker(stressWorkers, func(i int) *redis.Conn {
			cn := clients[i%2].Conn()
			t.Cleanup(func() { _ = cn.Close() })
			// Dial and hand-shake every connection here, one at a time:
			// go-redis v9.23 races when several Conns first initialize
			// at once (they share the client's Options).
			if err := cn.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			return cn
		})
		return func(ctx context.Context) (func(context.Context) error, error) {
			cn, err := conns.get(ctx)
			if err != nil {
				return nil, err
			}
			token := fmt.Sprintf("token-%d-%s", wi.Add(1), uniqueToken())
			for {
				err := cn.Do(ctx, "SET", key, token, "PX", 5000, "NX").Err()
				if err == nil {
					break
				}
				if !errors.Is(err, redis.Nil) {
					return nil, err
				}
				if err := sleepCtx(ctx, jitter()); err != nil {
					return nil, err
				}
			}
			return func(ctx context.Context) error {
				defer conns.put(cn)
				ok, res, err := transact(ctx, cn, key, token, "PEXPIRE", key, 5000)
				if err != nil || !ok || len(res) != 1 || res[0] != int64(1) {
					return fmt.Errorf("LockExtend: ran %v, %v, %v", ok, res, err)
				}
				ok, res, err = transact(ctx, cn, key, token, "UNLINK", key)
				if err != nil || !ok || len(res) != 1 || res[0] != int64(1) {
					return fmt.Errorf("LockRelease: ran %v, %v, %v", ok, res, err)
				}
				return nil
			}, nil
		}
	})
}

// ---- redis-py 8 Lock

const (
	redisPyReplay     = "redispy_lock.replay"
	shaRedisPyExtend  = "a4e8783852e6b949f9ef3a97212805108459a890" // LUA_EXTEND_SCRIPT
	shaRedisPyReacq   = "1cac51482acf5858da00f6d685d68f886cd6b6b2" // LUA_REACQUIRE_SCRIPT
	shaRedisPyRelease = "c3f8721cbb97f72bc19e972846bd7aaf91901658" // LUA_RELEASE_SCRIPT
)

// TestStress_RedisPy8Lock: redis-py 8 connects with HELLO 3 (go-redis's
// default too) and Lock(name, timeout=10) acquires with SET NX PX 10000,
// sleeping between tries; the holder extends (adding to the ttl),
// reacquires and releases through Script.__call__ (EVALSHA, SCRIPT LOAD on
// NOSCRIPT), each answering 1.
func TestStress_RedisPy8Lock(t *testing.T) {
	srv := server.RunT(t)
	ctx := testCtx(t, 30*time.Second)
	rdb := newStressClient(t, srv.Addr(), 0)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if p, err := rdb.Do(ctx, "HELLO", 3).Result(); err != nil {
		t.Fatalf("HELLO 3: %v", err)
	} else if m, ok := p.(map[any]any); !ok || m["proto"] != int64(3) {
		t.Fatalf("HELLO 3 = %#v; redis-py 8 insists on a map with proto 3", p)
	}
	extendSrc := replayScript(t, redisPyReplay, shaRedisPyExtend)
	reacquireSrc := replayScript(t, redisPyReplay, shaRedisPyReacq)
	releaseSrc := replayScript(t, redisPyReplay, shaRedisPyRelease)
	checkMutexKeys(t, func(key string) acquireFunc {
		return func(ctx context.Context) (func(context.Context) error, error) {
			token := uniqueToken()
			for {
				err := rdb.Do(ctx, "SET", key, token, "NX", "PX", 10000).Err()
				if err == nil {
					break
				}
				if !errors.Is(err, redis.Nil) {
					return nil, err
				}
				if err := sleepCtx(ctx, jitter()); err != nil {
					return nil, err
				}
			}
			return func(ctx context.Context) error {
				for _, step := range []struct {
					name, src string
					args      []any
				}{
					{"extend", extendSrc, []any{token, 5000, "0"}},
					{"reacquire", reacquireSrc, []any{token, 10000}},
					{"release", releaseSrc, []any{token}},
				} {
					if n, err := evalLoad(ctx, rdb, step.src, []string{key}, step.args...).Int64(); err != nil || n != 1 {
						return fmt.Errorf("%s = %d, %v; want 1", step.name, n, err)
					}
				}
				return nil
			}, nil
		}
	})
}

// ---- Jedis and Lettuce

// TestStress_JedisLettuce: the usual lock on the Java drivers, both on
// RESP3 after HELLO 3, contending for the same keys: Jedis writes
// SET key value NX PX 30000 (SetParams order), Lettuce SET key value PX
// 30000 NX (SetArgs order); both release with EVAL of the
// compare-and-delete script.
func TestStress_JedisLettuce(t *testing.T) {
	srv := server.RunT(t)
	jedis := newStressClient(t, srv.Addr(), 0)
	lettuce := newStressClient(t, srv.Addr(), 0)
	checkMutexKeys(t, func(key string) acquireFunc {
		var calls atomic.Int64
		return func(ctx context.Context) (func(context.Context) error, error) {
			rdb, set := jedis, []any{"NX", "PX", 30000}
			if calls.Add(1)%2 == 0 {
				rdb, set = lettuce, []any{"PX", 30000, "NX"}
			}
			token := uniqueToken()
			for {
				err := rdb.Do(ctx, append([]any{"SET", key, token}, set...)...).Err()
				if err == nil {
					break
				}
				if !errors.Is(err, redis.Nil) {
					return nil, err
				}
				if err := sleepCtx(ctx, jitter()); err != nil {
					return nil, err
				}
			}
			return func(ctx context.Context) error {
				n, err := rdb.Eval(ctx, releaseSrc, []string{key}, token).Int64()
				if err != nil || n != 1 {
					return fmt.Errorf("EVAL release = %d, %v; want 1", n, err)
				}
				return nil
			}, nil
		}
	})
}
