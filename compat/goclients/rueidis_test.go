package goclients

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/tumblerdb/tumbler/server"
)

// newRueidis returns a rueidis client with DisableCache and otherwise
// default options, closed at cleanup. (newRueidisDefault, in
// rueidis_cache_test.go, keeps client-side caching on, as rueidis does by
// default.)
func newRueidis(t *testing.T, addr string, resp2 bool) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{addr},
		DisableCache: true,
		AlwaysRESP2:  resp2,
	})
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

var rueidisModes = []struct {
	name  string
	resp2 bool
	want  string
}{
	{"resp3-default", false, "resp=3"},
	{"resp2", true, "resp=2"},
}

func TestRueidis(t *testing.T) {
	for _, mode := range rueidisModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := server.RunT(t, server.WithManualClock())
			c := newRueidis(t, srv.Addr(), mode.resp2)
			ctx := testCtx(t, 10*time.Second)

			info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
			if err != nil || !strings.Contains(info, " "+mode.want+" ") {
				t.Fatalf("CLIENT INFO = %q, %v; want %s", info, err, mode.want)
			}

			set := func(val string, px int64) rueidis.Completed {
				return c.B().Set().Key("rd-lock").Value(val).Nx().PxMilliseconds(px).Build()
			}
			if s, err := c.Do(ctx, set("tok-a", 1500)).ToString(); err != nil || s != "OK" {
				t.Fatalf("SET NX PX = %q, %v; want OK", s, err)
			}
			// Failed SET NX: a null reply, which rueidis reports as IsRedisNil.
			res := c.Do(ctx, set("tok-b", 1500))
			if err := res.Error(); !rueidis.IsRedisNil(err) {
				msg, _ := res.ToMessage()
				t.Fatalf("second SET NX PX: err = %v (reply %v); want a Redis nil", err, msg)
			}
			if v, err := c.Do(ctx, c.B().Get().Key("rd-lock").Build()).ToString(); err != nil || v != "tok-a" {
				t.Fatalf("GET = %q, %v; want tok-a", v, err)
			}
			if _, err := c.Do(ctx, c.B().Get().Key("missing").Build()).ToString(); !rueidis.IsRedisNil(err) {
				t.Fatalf("GET missing: err = %v; want a Redis nil", err)
			}
			if n, err := c.Do(ctx, c.B().Pttl().Key("rd-lock").Build()).AsInt64(); err != nil || n != 1500 {
				t.Fatalf("PTTL = %d, %v; want 1500", n, err)
			}
			if n, err := c.Do(ctx, c.B().Ttl().Key("rd-lock").Build()).AsInt64(); err != nil || n != 2 {
				t.Fatalf("TTL = %d, %v; want 2", n, err)
			}

			// Scripts: Exec sends EVALSHA and falls back to EVAL on NOSCRIPT.
			if err := c.Do(ctx, c.B().ScriptFlush().Build()).Error(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
			release := rueidis.NewLuaScript(releaseSrc)
			if n, err := release.Exec(ctx, c, []string{"rd-lock"}, []string{"tok-b"}).AsInt64(); err != nil || n != 0 {
				t.Fatalf("release with the wrong token = %d, %v; want 0", n, err)
			}
			exists, err := c.Do(ctx, c.B().ScriptExists().Sha1(sha1Hex(releaseSrc)).Build()).AsIntSlice()
			if err != nil || !reflect.DeepEqual(exists, []int64{1}) {
				t.Fatalf("SCRIPT EXISTS after the EVAL fallback = %v, %v; want [1]", exists, err)
			}
			if n, err := release.Exec(ctx, c, []string{"rd-lock"}, []string{"tok-a"}).AsInt64(); err != nil || n != 1 {
				t.Fatalf("release with the right token = %d, %v; want 1", n, err)
			}
			if n, err := c.Do(ctx, c.B().Exists().Key("rd-lock").Build()).AsInt64(); err != nil || n != 0 {
				t.Fatalf("EXISTS after release = %d, %v; want 0", n, err)
			}

			// Reply conversions through rueidis.
			multi := rueidis.NewLuaScript("return {KEYS[1], ARGV[1], 3.99, true, {ok='FINE'}, false, 'after-nil'}")
			got, err := multi.Exec(ctx, c, []string{"k"}, []string{"a"}).ToAny()
			// false inside a table is a null element (not a terminator, unlike nil).
			want := []any{"k", "a", int64(3), int64(1), "FINE", nil, "after-nil"}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("script array = %#v, %v; want %#v", got, err, want)
			}
			nilScript := rueidis.NewLuaScript("return redis.call('get', KEYS[1])")
			if err := nilScript.Exec(ctx, c, []string{"missing"}, nil).Error(); !rueidis.IsRedisNil(err) {
				t.Fatalf("script returning false: err = %v; want a Redis nil", err)
			}
			errScript := rueidis.NewLuaScript("return {err='ERR custom failure'}")
			// The wire reply is "-ERR custom failure" (as from redis-server);
			// rueidis drops the "ERR " code from the message.
			err = errScript.Exec(ctx, c, nil, nil).Error()
			if rerr, ok := rueidis.IsRedisErr(err); !ok || rerr.Error() != "custom failure" {
				t.Fatalf("script error = %v; want a Redis error 'custom failure'", err)
			}
			// SET NX PX from inside the script, with a Lua number for PX.
			acquire := rueidis.NewLuaScript("return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2]))")
			if s, err := acquire.Exec(ctx, c, []string{"rd-lock"}, []string{"tok-c", "2500"}).ToString(); err != nil || s != "OK" {
				t.Fatalf("script SET NX PX = %q, %v; want OK", s, err)
			}
			if err := acquire.Exec(ctx, c, []string{"rd-lock"}, []string{"tok-d", "2500"}).Error(); !rueidis.IsRedisNil(err) {
				t.Fatalf("script SET NX PX on a held key: err = %v; want a Redis nil", err)
			}
			if n, err := c.Do(ctx, c.B().Pttl().Key("rd-lock").Build()).AsInt64(); err != nil || n != 2500 {
				t.Fatalf("PTTL = %d, %v; want 2500", n, err)
			}

			// Pipelined DoMulti.
			resps := c.DoMulti(ctx,
				c.B().Set().Key("m1").Value("v1").Nx().PxMilliseconds(3000).Build(),
				c.B().Set().Key("m1").Value("v2").Nx().PxMilliseconds(3000).Build(),
				c.B().Get().Key("m1").Build(),
				c.B().Pttl().Key("m1").Build(),
			)
			if s, err := resps[0].ToString(); err != nil || s != "OK" {
				t.Errorf("DoMulti SET NX 1 = %q, %v", s, err)
			}
			if err := resps[1].Error(); !rueidis.IsRedisNil(err) {
				t.Errorf("DoMulti SET NX 2: err = %v; want a Redis nil", err)
			}
			if s, err := resps[2].ToString(); err != nil || s != "v1" {
				t.Errorf("DoMulti GET = %q, %v", s, err)
			}
			if n, err := resps[3].AsInt64(); err != nil || n != 3000 {
				t.Errorf("DoMulti PTTL = %d, %v", n, err)
			}

			// Expiry on the manual clock: alive through its deadline's
			// millisecond, gone after it (Redis: now > deadline).
			srv.Advance(2500 * time.Millisecond)
			if s, err := c.Do(ctx, c.B().Get().Key("rd-lock").Build()).ToString(); err != nil || s != "tok-c" {
				t.Fatalf("GET at the deadline = %q, %v; want tok-c", s, err)
			}
			srv.Advance(time.Millisecond)
			if _, err := c.Do(ctx, c.B().Get().Key("rd-lock").Build()).ToString(); !rueidis.IsRedisNil(err) {
				t.Fatalf("GET after expiry: err = %v; want a Redis nil", err)
			}
		})
	}
}

func TestRueidisMutualExclusion(t *testing.T) {
	srv := server.RunT(t)
	c := newRueidis(t, srv.Addr(), false)
	release := rueidis.NewLuaScript(releaseSrc)
	checkMutex(t, 20, 50, 20*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
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
