package goclients

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/server"
)

// protocols are the two go-redis wire protocols: its default (RESP3, via
// HELLO 3) and RESP2.
var protocols = []struct {
	name  string
	proto int // go-redis Options.Protocol; 0 means the default
	want  int // the protocol the connection must end up on
}{
	{"resp3-default", 0, 3},
	{"resp2", 2, 2},
}

func TestGoRedisHandshake(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t)
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			ctx := testCtx(t, 10*time.Second)

			if got, err := rdb.Ping(ctx).Result(); err != nil || got != "PONG" {
				t.Fatalf("PING = %q, %v; want PONG", got, err)
			}
			info, err := rdb.ClientInfo(ctx).Result()
			if err != nil {
				t.Fatalf("CLIENT INFO: %v", err)
			}
			if info.Resp != p.want {
				t.Errorf("connection speaks RESP%d, want RESP%d", info.Resp, p.want)
			}
			// go-redis sends CLIENT SETINFO LIB-NAME/LIB-VER after its handshake.
			if !strings.HasPrefix(info.LibName, "go-redis") || info.LibVer == "" {
				t.Errorf("CLIENT SETINFO not applied: lib-name=%q lib-ver=%q", info.LibName, info.LibVer)
			}
			// HELLO with no version reports the current protocol: a map in
			// RESP3, a flat array in RESP2.
			hello, err := rdb.Do(ctx, "hello").Result()
			if err != nil {
				t.Fatalf("HELLO: %v", err)
			}
			var proto any
			switch h := hello.(type) {
			case map[any]any:
				proto = h["proto"]
			case []any:
				for i := 0; i+1 < len(h); i += 2 {
					if h[i] == "proto" {
						proto = h[i+1]
					}
				}
			default:
				t.Fatalf("HELLO reply is %T %v", hello, hello)
			}
			if proto != int64(p.want) {
				t.Errorf("HELLO proto = %#v, want %d (reply %v)", proto, p.want, hello)
			}
			if _, isMap := hello.(map[any]any); isMap != (p.want == 3) {
				t.Errorf("HELLO reply type %T on RESP%d", hello, p.want)
			}
		})
	}
}

func TestGoRedisSetNXGet(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t, server.WithManualClock())
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			ctx := testCtx(t, 10*time.Second)

			// SetNX with a sub-second-precision expiry sends
			// "set k v px 1500 nx" (lowercase, px before nx).
			ok, err := rdb.SetNX(ctx, "lock", "tok-a", 1500*time.Millisecond).Result()
			if err != nil || !ok {
				t.Fatalf("first SetNX = %v, %v; want true", ok, err)
			}
			ok, err = rdb.SetNX(ctx, "lock", "tok-b", 1500*time.Millisecond).Result()
			if err != nil || ok {
				t.Fatalf("second SetNX = %v, %v; want false", ok, err)
			}
			if v, err := rdb.Get(ctx, "lock").Result(); err != nil || v != "tok-a" {
				t.Fatalf("GET = %q, %v; want tok-a", v, err)
			}
			// The manual clock does not move: the TTL is exact.
			if d, err := rdb.PTTL(ctx, "lock").Result(); err != nil || d != 1500*time.Millisecond {
				t.Fatalf("PTTL = %v, %v; want 1.5s", d, err)
			}
			// TTL rounds to the nearest second like Redis: (1500+500)/1000 = 2.
			if d, err := rdb.TTL(ctx, "lock").Result(); err != nil || d != 2*time.Second {
				t.Fatalf("TTL = %v, %v; want 2s", d, err)
			}

			// A failed SET NX must be a null reply ($-1 / RESP3 _), which go-redis
			// turns into redis.Nil, never :0.
			for _, args := range [][]any{
				{"set", "lock", "x", "px", 1000, "nx"},
				{"SET", "lock", "x", "NX", "PX", 1000},
				{"set", "lock", "x", "nx", "ex", 1},
			} {
				v, err := rdb.Do(ctx, args...).Result()
				if err != redis.Nil {
					t.Errorf("%v = %#v, %v; want redis.Nil (null reply)", args, v, err)
				}
			}
			// SET NX without expiry, EX whole seconds.
			if ok, err := rdb.SetNX(ctx, "plain", "v", 0).Result(); err != nil || !ok {
				t.Fatalf("SetNX no expiry = %v, %v", ok, err)
			}
			if d, err := rdb.TTL(ctx, "plain").Result(); err != nil || d != -1 {
				t.Fatalf("TTL of key without expiry = %v, %v; want -1", d, err)
			}
			if ok, err := rdb.SetNX(ctx, "secs", "v", 30*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SetNX ex 30 = %v, %v", ok, err)
			}
			if d, err := rdb.PTTL(ctx, "secs").Result(); err != nil || d != 30*time.Second {
				t.Fatalf("PTTL after set ex 30 = %v, %v; want 30s", d, err)
			}
			// SetArgs: the generic form.
			if s, err := rdb.SetArgs(ctx, "args", "v1", redis.SetArgs{Mode: "NX", TTL: 2500 * time.Millisecond}).Result(); err != nil || s != "OK" {
				t.Fatalf("SetArgs NX = %q, %v; want OK", s, err)
			}
			if _, err := rdb.SetArgs(ctx, "args", "v2", redis.SetArgs{Mode: "NX", TTL: 2500 * time.Millisecond}).Result(); err != redis.Nil {
				t.Fatalf("SetArgs NX on existing key: err = %v; want redis.Nil", err)
			}

			// Missing key.
			if v, err := rdb.Get(ctx, "nope").Result(); err != redis.Nil {
				t.Fatalf("GET missing = %q, %v; want redis.Nil", v, err)
			}
			if d, err := rdb.TTL(ctx, "nope").Result(); err != nil || d != -2 {
				t.Fatalf("TTL missing = %v, %v; want -2", d, err)
			}

			// Expiry: the key lives through its deadline's millisecond
			// (PTTL 0) and is gone after it, as in Redis (now > deadline).
			srv.Advance(1500 * time.Millisecond)
			if d, err := rdb.PTTL(ctx, "lock").Result(); err != nil || d != 0 {
				t.Fatalf("PTTL after 1500ms = %v, %v; want 0", d, err)
			}
			srv.Advance(time.Millisecond)
			if v, err := rdb.Get(ctx, "lock").Result(); err != redis.Nil {
				t.Fatalf("GET after expiry = %q, %v; want redis.Nil", v, err)
			}
			if ok, err := rdb.SetNX(ctx, "lock", "tok-b", time.Second).Result(); err != nil || !ok {
				t.Fatalf("SetNX after expiry = %v, %v; want true", ok, err)
			}

			// PEXPIRE / EXPIRE / PERSIST through go-redis.
			if ok, err := rdb.PExpire(ctx, "lock", 4200*time.Millisecond).Result(); err != nil || !ok {
				t.Fatalf("PEXPIRE = %v, %v", ok, err)
			}
			if d, err := rdb.PTTL(ctx, "lock").Result(); err != nil || d != 4200*time.Millisecond {
				t.Fatalf("PTTL after PEXPIRE = %v, %v; want 4.2s", d, err)
			}
			if ok, err := rdb.Expire(ctx, "nope", time.Second).Result(); err != nil || ok {
				t.Fatalf("EXPIRE missing key = %v, %v; want false", ok, err)
			}
			if ok, err := rdb.Persist(ctx, "lock").Result(); err != nil || !ok {
				t.Fatalf("PERSIST = %v, %v", ok, err)
			}
			if d, err := rdb.PTTL(ctx, "lock").Result(); err != nil || d != -1 {
				t.Fatalf("PTTL after PERSIST = %v, %v; want -1", d, err)
			}
			if n, err := rdb.Del(ctx, "lock", "plain", "nope").Result(); err != nil || n != 2 {
				t.Fatalf("DEL = %d, %v; want 2", n, err)
			}
		})
	}
}

func TestGoRedisEval(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t, server.WithManualClock())
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			ctx := testCtx(t, 10*time.Second)

			cases := []struct {
				src  string
				keys []string
				args []any
				want any   // expected value when err is nil
				err  error // redis.Nil for a null reply
			}{
				{src: "return 42", want: int64(42)},
				{src: "return 3.99", want: int64(3)},
				{src: "return -3.99", want: int64(-3)},
				{src: "return true", want: int64(1)},
				{src: "return false", err: redis.Nil},
				{src: "return nil", err: redis.Nil},
				{src: "return 'hello'", want: "hello"},
				{src: "return {1, 'two', {3}, nil, 5}", want: []any{int64(1), "two", []any{int64(3)}}},
				{src: "return {ok='FINE'}", want: "FINE"},
				{src: "return redis.status_reply('DONE')", want: "DONE"},
				{src: "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2]}", keys: []string{"k1", "k2"}, args: []any{"a1", 7}, want: []any{"k1", "k2", "a1", "7"}},
				{src: "return #KEYS + #ARGV", keys: []string{"a"}, args: []any{"b", "c"}, want: int64(3)},
				// Whole Lua numbers passed to redis.call become integer strings.
				{src: "redis.call('set', KEYS[1], 'v', 'PX', 1500); return redis.call('pttl', KEYS[1])", keys: []string{"evk"}, want: int64(1500)},
				{src: "return redis.call('get', KEYS[1])", keys: []string{"evk"}, want: "v"},
				{src: "return redis.call('get', KEYS[1]) == false", keys: []string{"missing"}, want: int64(1)},
				{src: "return redis.call('set', KEYS[1], 'w', 'NX', 'PX', 100)", keys: []string{"evk"}, err: redis.Nil},
				{src: "return redis.call('set', KEYS[1], 'w', 'NX', 'PX', 100)", keys: []string{"fresh"}, want: "OK"},
				{src: "return redis.pcall('incr', KEYS[1])['err'] ~= nil", keys: []string{"evk"}, want: int64(1)},
			}
			for _, c := range cases {
				got, err := rdb.Eval(ctx, c.src, c.keys, c.args...).Result()
				if c.err != nil {
					if !errors.Is(err, c.err) {
						t.Errorf("EVAL %q = %#v, %v; want error %v", c.src, got, err, c.err)
					}
					continue
				}
				if err != nil || !reflect.DeepEqual(got, c.want) {
					t.Errorf("EVAL %q = %#v, %v; want %#v", c.src, got, err, c.want)
				}
			}

			// Script errors come back as errors with Redis's text.
			_, err := rdb.Eval(ctx, "return {err='ERR custom failure'}", nil).Result()
			if err == nil || err.Error() != "ERR custom failure" {
				t.Errorf("EVAL {err=...}: err = %v; want ERR custom failure", err)
			}
			_, err = rdb.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"evk"}).Result()
			if err == nil || !strings.Contains(err.Error(), "not an integer") {
				t.Errorf("EVAL raising INCR error: err = %v; want a 'not an integer' error", err)
			}
			_, err = rdb.Do(ctx, "eval", "return 1", 3, "a", "b").Result()
			if err == nil || err.Error() != "ERR Number of keys can't be greater than number of args" {
				t.Errorf("EVAL with numkeys 3 and 2 args: err = %v; want ERR Number of keys can't be greater than number of args", err)
			}
			// false inside a table is a null element, not a terminator.
			got, err := rdb.Eval(ctx, "return {1, false, 'x'}", nil).Result()
			if want := []any{int64(1), nil, "x"}; err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("EVAL {1, false, 'x'} = %#v, %v; want %#v", got, err, want)
			}
		})
	}
}

const releaseSrc = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

func TestGoRedisScriptRunNoscriptFallback(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t)
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			ctx := testCtx(t, 10*time.Second)
			log := &cmdLog{}
			rdb.AddHook(log)

			script := redis.NewScript(releaseSrc)
			sum := sha1.Sum([]byte(releaseSrc))
			if want := hex.EncodeToString(sum[:]); script.Hash() != want {
				t.Fatalf("script hash %s, want %s", script.Hash(), want)
			}
			if got, err := script.Exists(ctx, rdb).Result(); err != nil || !reflect.DeepEqual(got, []bool{false}) {
				t.Fatalf("SCRIPT EXISTS before use = %v, %v; want [false]", got, err)
			}
			// Unknown SHA: the error must start with "NOSCRIPT ".
			_, err := rdb.EvalSha(ctx, script.Hash(), []string{"k"}, "v").Result()
			if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT ") {
				t.Fatalf("EVALSHA unknown sha: err = %v; want NOSCRIPT ...", err)
			}
			log.take()

			if err := rdb.Set(ctx, "k", "mine", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// First Run: EVALSHA fails with NOSCRIPT, go-redis falls back to EVAL.
			if n, err := script.Run(ctx, rdb, []string{"k"}, "other").Int64(); err != nil || n != 0 {
				t.Fatalf("Run with wrong token = %d, %v; want 0", n, err)
			}
			if got, want := log.take(), []string{"set", "evalsha->NOSCRIPT", "eval"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("commands sent = %v, want %v", got, want)
			}
			// EVAL cached it: now EVALSHA alone does the job.
			if n, err := script.Run(ctx, rdb, []string{"k"}, "mine").Int64(); err != nil || n != 1 {
				t.Fatalf("Run with right token = %d, %v; want 1", n, err)
			}
			if got, want := log.take(), []string{"evalsha"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("commands sent = %v, want %v", got, want)
			}
			if v, err := rdb.Exists(ctx, "k").Result(); err != nil || v != 0 {
				t.Fatalf("EXISTS after release = %d, %v; want 0", v, err)
			}
			if got, err := script.Exists(ctx, rdb).Result(); err != nil || !reflect.DeepEqual(got, []bool{true}) {
				t.Fatalf("SCRIPT EXISTS after use = %v, %v; want [true]", got, err)
			}
			// SCRIPT LOAD returns the same lowercase SHA1; FLUSH forgets it.
			if sha, err := script.Load(ctx, rdb).Result(); err != nil || sha != script.Hash() {
				t.Fatalf("SCRIPT LOAD = %q, %v; want %s", sha, err, script.Hash())
			}
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
			if got, err := script.Exists(ctx, rdb).Result(); err != nil || !reflect.DeepEqual(got, []bool{false}) {
				t.Fatalf("SCRIPT EXISTS after flush = %v, %v; want [false]", got, err)
			}
			log.take()
			if n, err := script.Run(ctx, rdb, []string{"k"}, "mine").Int64(); err != nil || n != 0 {
				t.Fatalf("Run after flush = %d, %v; want 0", n, err)
			}
			if got, want := log.take(), []string{"evalsha->NOSCRIPT", "eval"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("commands sent after flush = %v, want %v", got, want)
			}
		})
	}
}

func TestGoRedisPipeline(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t, server.WithManualClock())
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			ctx := testCtx(t, 10*time.Second)

			var (
				nx1, nx2  *redis.BoolCmd
				get       *redis.StringCmd
				pttl      *redis.DurationCmd
				relWrong  *redis.Cmd
				relRight  *redis.Cmd
				exists    *redis.IntCmd
				getAfter  *redis.StringCmd
				setResult *redis.StatusCmd
			)
			_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				nx1 = pipe.SetNX(ctx, "plock", "a", 2500*time.Millisecond)
				nx2 = pipe.SetNX(ctx, "plock", "b", 2500*time.Millisecond)
				get = pipe.Get(ctx, "plock")
				pttl = pipe.PTTL(ctx, "plock")
				relWrong = pipe.Eval(ctx, releaseSrc, []string{"plock"}, "b")
				relRight = pipe.Eval(ctx, releaseSrc, []string{"plock"}, "a")
				exists = pipe.Exists(ctx, "plock")
				getAfter = pipe.Get(ctx, "plock")
				setResult = pipe.Set(ctx, "other", "x", 0)
				return nil
			})
			// The pipeline's error is the first failed command's: redis.Nil from the
			// last GET.
			if err != redis.Nil {
				t.Fatalf("pipeline error = %v; want redis.Nil (from the GET of a deleted key)", err)
			}
			check := func(name string, got, want any, err error) {
				t.Helper()
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, %v; want %#v", name, got, err, want)
				}
			}
			check("SetNX 1", nx1.Val(), true, nx1.Err())
			check("SetNX 2", nx2.Val(), false, nx2.Err())
			check("GET", get.Val(), "a", get.Err())
			check("PTTL", pttl.Val(), 2500*time.Millisecond, pttl.Err())
			check("release wrong token", relWrong.Val(), int64(0), relWrong.Err())
			check("release right token", relRight.Val(), int64(1), relRight.Err())
			check("EXISTS", exists.Val(), int64(0), exists.Err())
			if getAfter.Err() != redis.Nil {
				t.Errorf("GET after release err = %v; want redis.Nil", getAfter.Err())
			}
			check("SET", setResult.Val(), "OK", setResult.Err())

			// A large pipeline: many commands arrive in one read and must be
			// answered in order.
			const n = 500
			cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i := range n {
					pipe.SetNX(ctx, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), time.Duration(i+1)*time.Second)
				}
				for i := range n {
					pipe.Get(ctx, fmt.Sprintf("k%d", i))
					pipe.TTL(ctx, fmt.Sprintf("k%d", i))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("large pipeline: %v", err)
			}
			if len(cmds) != 3*n {
				t.Fatalf("large pipeline returned %d commands, want %d", len(cmds), 3*n)
			}
			for i := range n {
				if ok := cmds[i].(*redis.BoolCmd).Val(); !ok {
					t.Fatalf("SetNX k%d = false", i)
				}
				if v := cmds[n+2*i].(*redis.StringCmd).Val(); v != fmt.Sprintf("v%d", i) {
					t.Fatalf("GET k%d = %q", i, v)
				}
				if d := cmds[n+2*i+1].(*redis.DurationCmd).Val(); d != time.Duration(i+1)*time.Second {
					t.Fatalf("TTL k%d = %v, want %v", i, d, time.Duration(i+1)*time.Second)
				}
			}
		})
	}
}

// goRedisAcquire is the classic single-instance lock: SET NX PX to take,
// a GET+DEL script (via EVALSHA with NOSCRIPT fallback) to release.
func goRedisAcquire(rdb *redis.Client, key string, ttl time.Duration) acquireFunc {
	release := redis.NewScript(releaseSrc)
	return func(ctx context.Context) (func(context.Context) error, error) {
		tok := uniqueToken()
		for {
			ok, err := rdb.SetNX(ctx, key, tok, ttl).Result()
			if err != nil {
				return nil, err
			}
			if ok {
				return func(ctx context.Context) error {
					n, err := release.Run(ctx, rdb, []string{key}, tok).Int64()
					if err != nil {
						return err
					}
					if n != 1 {
						return fmt.Errorf("release script returned %d, want 1", n)
					}
					return nil
				}, nil
			}
			if err := sleepCtx(ctx, jitter()); err != nil {
				return nil, err
			}
		}
	}
}

func TestGoRedisMutualExclusion(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := server.RunT(t)
			rdb := newGoRedis(t, srv.Addr(), p.proto)
			checkMutex(t, 20, 50, 20*time.Second, goRedisAcquire(rdb, "mutex", 10*time.Second))
		})
	}
}

// TestHarnessDetectsBrokenLock is the negative control for every
// mutual-exclusion test here: the same harness over a "lock" that is a plain
// SET (no NX) must see overlaps or lost updates, so a tumbler that accepted
// SET NX on an existing key would fail the real tests.
func TestHarnessDetectsBrokenLock(t *testing.T) {
	srv := server.RunT(t)
	rdb := newGoRedis(t, srv.Addr(), 0)
	broken := func(ctx context.Context) (func(context.Context) error, error) {
		if err := rdb.Set(ctx, "broken", uniqueToken(), time.Second).Err(); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return rdb.Del(ctx, "broken").Err() }, nil
	}
	res := runMutex(t, 20, 25, 20*time.Second, broken)
	if res.overlaps == 0 && res.counter == 20*25 {
		t.Fatalf("harness saw no overlap and no lost update with a lock that excludes nothing")
	}
}

// TestGoRedisRealClockExpiry: on the system clock, a 300 ms lock is still
// held early on and gone soon after its deadline (lazy and active expiry),
// after which another client takes it.
func TestGoRedisRealClockExpiry(t *testing.T) {
	srv := server.RunT(t)
	a := newGoRedis(t, srv.Addr(), 0)
	b := newGoRedis(t, srv.Addr(), 2)
	ctx := testCtx(t, 10*time.Second)

	start := time.Now()
	if ok, err := a.SetNX(ctx, "rt-lock", "a", 300*time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	ok, err := b.SetNX(ctx, "rt-lock", "b", 300*time.Millisecond).Result()
	if err != nil {
		t.Fatalf("SetNX by b: %v", err)
	}
	if ok && time.Since(start) < 250*time.Millisecond {
		t.Fatalf("SetNX by b %v after a took a 300ms lock succeeded", time.Since(start))
	}
	// Active expiry: wait without touching the key, then count keys.
	time.Sleep(600 * time.Millisecond)
	if n, err := a.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE 600ms after a 300ms lock = %d, %v; want 0", n, err)
	}
	if ok, err := b.SetNX(ctx, "rt-lock", "b", 300*time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("SetNX by b after expiry = %v, %v; want true", ok, err)
	}
	// Lazy expiry: poll until the key is gone; it must not vanish early.
	taken := time.Now()
	for {
		_, err := a.Get(ctx, "rt-lock").Result()
		if err == redis.Nil {
			break
		}
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			t.Fatalf("lock never expired: %v", err)
		}
	}
	if el := time.Since(taken); el < 290*time.Millisecond || el > 2*time.Second {
		t.Fatalf("300ms lock vanished after %v", el)
	}
}
