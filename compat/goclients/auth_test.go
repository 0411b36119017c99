package goclients

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/tumblerdb/tumbler/server"
)

// TestHandshakeWithPassword: with requirepass, go-redis authenticates inside
// HELLO 3 (HELLO 3 AUTH default pw SETNAME name) or, on RESP2, with AUTH
// and CLIENT SETNAME; rueidis does the same through its HELLO.
func TestHandshakeWithPassword(t *testing.T) {
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) { c.RequirePass = "s3cret" }))
	ctx := testCtx(t, 10*time.Second)

	for _, p := range protocols {
		t.Run("go-redis-"+p.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: p.proto, Password: "s3cret", ClientName: "locker-1"})
			defer rdb.Close()
			info, err := rdb.ClientInfo(ctx).Result()
			if err != nil {
				t.Fatalf("CLIENT INFO with the right password: %v", err)
			}
			if info.Resp != p.want || info.Name != "locker-1" {
				t.Fatalf("resp=%d name=%q; want resp=%d name=locker-1", info.Resp, info.Name, p.want)
			}
			if ok, err := rdb.SetNX(ctx, "auth-lock", "v", time.Second).Result(); err != nil || !ok {
				t.Fatalf("SetNX = %v, %v", ok, err)
			}
			if err := rdb.Del(ctx, "auth-lock").Err(); err != nil {
				t.Fatal(err)
			}

			bad := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: p.proto, Password: "wrong", MaxRetries: -1})
			defer bad.Close()
			err = bad.Ping(ctx).Err()
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("PING with a wrong password: err = %v; want WRONGPASS", err)
			}
			none := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: p.proto, MaxRetries: -1})
			defer none.Close()
			err = none.Get(ctx, "x").Err()
			if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
				t.Fatalf("GET without a password: err = %v; want NOAUTH", err)
			}
		})
	}
	t.Run("rueidis", func(t *testing.T) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, Password: "s3cret", ClientName: "locker-2"})
		if err != nil {
			t.Fatalf("rueidis.NewClient with password: %v", err)
		}
		defer c.Close()
		info, err := c.Do(ctx, c.B().ClientInfo().Build()).ToString()
		if err != nil || !strings.Contains(info, " name=locker-2 ") || !strings.Contains(info, " resp=3 ") {
			t.Fatalf("CLIENT INFO = %q, %v; want name=locker-2 resp=3", info, err)
		}
		if _, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, Password: "wrong"}); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("rueidis.NewClient with a wrong password: err = %v; want WRONGPASS", err)
		}
	})
}
