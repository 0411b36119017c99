package goclients

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tumblerdb/tumbler/server"
)

// go-redis pub/sub (a dedicated connection, RESP3 by default and RESP2),
// waiting for a lock's release the way Redisson does: subscribe to the
// lock's channel, and have the unlock script publish.
func TestGoRedis_PubSubUnlockNotification(t *testing.T) {
	for _, proto := range []int{0, 2} {
		name := map[int]string{0: "resp3-default", 2: "resp2"}[proto]
		t.Run(name, func(t *testing.T) {
			srv := server.RunT(t)
			rdb := newGoRedis(t, srv.Addr(), proto)
			ctx := testCtx(t, 20*time.Second)

			sub := rdb.Subscribe(ctx, "lock__channel:{job}")
			t.Cleanup(func() { _ = sub.Close() })
			// Receive returns the subscription confirmation first.
			if m, err := sub.Receive(ctx); err != nil {
				t.Fatalf("Receive: %v", err)
			} else if s, ok := m.(*redis.Subscription); !ok || s.Kind != "subscribe" || s.Count != 1 {
				t.Fatalf("first frame %#v; want the subscribe confirmation", m)
			}
			if err := sub.Ping(ctx, "alive"); err != nil {
				t.Fatalf("PING on the subscribed connection: %v", err)
			}
			if m, err := sub.Receive(ctx); err != nil {
				t.Fatalf("Receive pong: %v", err)
			} else if p, ok := m.(*redis.Pong); !ok || p.Payload != "alive" {
				t.Fatalf("PING reply %#v; want pong alive", m)
			}

			if ok, err := rdb.SetNX(ctx, "job", "owner", time.Minute).Result(); err != nil || !ok {
				t.Fatalf("SET NX: %v %v", ok, err)
			}
			unlock := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then
				redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[2]); return 1 end
			return 0`)
			if n, err := unlock.Run(ctx, rdb, []string{"job", "lock__channel:{job}"}, "owner", "0").Int(); err != nil || n != 1 {
				t.Fatalf("unlock = %d, %v", n, err)
			}
			m, err := sub.ReceiveMessage(ctx)
			if err != nil || m.Channel != "lock__channel:{job}" || m.Payload != "0" {
				t.Fatalf("ReceiveMessage = %#v, %v", m, err)
			}
			if n, err := rdb.PubSubNumSub(ctx, "lock__channel:{job}").Result(); err != nil || n["lock__channel:{job}"] != 1 {
				t.Fatalf("PUBSUB NUMSUB = %v, %v", n, err)
			}
			if err := sub.Unsubscribe(ctx, "lock__channel:{job}"); err != nil {
				t.Fatalf("Unsubscribe: %v", err)
			}
			if m, err := sub.Receive(ctx); err != nil {
				t.Fatalf("Receive: %v", err)
			} else if s, ok := m.(*redis.Subscription); !ok || s.Kind != "unsubscribe" || s.Count != 0 {
				t.Fatalf("frame %#v; want the unsubscribe confirmation", m)
			}
		})
	}
}
