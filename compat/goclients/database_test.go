package goclients

// Lock clients configured with a database index: go-redis (Options.DB and
// the redis://host:port/N URL), redsync and bsm/redislock over it, a
// Redlock whose servers each use another database, rueidis and
// rueidislock (ClientOption.SelectDB), the WATCH/MULTI release of
// StackExchange.Redis and the BLPOP wait of python-redis-lock on a
// database other than 0. go-zero's RedisConf has no database (it builds
// its go-redis clients with DB 0); its test shows a go-zero lock in db 0
// beside a lock of the same name in db 3.
//
// Every test runs against tumbler and against redis-server (the oracle: a
// check that fails on both is a test bug), and checks where the keys went
// with plain clients on other databases (db 0 among them), not only the
// lock calls' results.
//
// The redis-servers are started per test (proc.StartRedis), or taken from
// TUMBLER_REDIS_ADDRS, a comma-separated list of running redis-servers:
// each test then empties them (FLUSHALL, SCRIPT FLUSH) before it starts.

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
	gzredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// dbServers are the servers one run of a database test uses.
type dbServers struct {
	addrs []string
	// lapse lets d and a little more pass on every server: a key whose TTL
	// was at most d when lapse was called has expired after it. tumbler's
	// manual clock moves at once; redis-server needs a real sleep.
	lapse func(d time.Duration)
}

// forDBServers runs f as the subtests "tumbler" (n tumblers, on a manual
// clock unless realClock) and "redis-server" (n redis-servers).
func forDBServers(t *testing.T, n int, realClock bool, f func(t *testing.T, s dbServers)) {
	t.Helper()
	t.Run("tumbler", func(t *testing.T) {
		var opts []server.Option
		if !realClock {
			opts = append(opts, server.WithManualClock())
		}
		srvs := server.RunN(t, n, opts...)
		s := dbServers{lapse: func(d time.Duration) {
			if realClock {
				time.Sleep(d + 20*time.Millisecond)
				return
			}
			for _, srv := range srvs {
				srv.Advance(d + time.Millisecond) // past the deadline, as Redis: now > deadline
			}
		}}
		for _, srv := range srvs {
			s.addrs = append(s.addrs, srv.Addr())
		}
		f(t, s)
	})
	t.Run("redis-server", func(t *testing.T) {
		f(t, dbServers{
			addrs: redisServers(t, n),
			lapse: func(d time.Duration) { time.Sleep(d + 20*time.Millisecond) },
		})
	})
}

// redisServers returns n redis-servers for the test: the first n of
// TUMBLER_REDIS_ADDRS, emptied, or new ones.
func redisServers(t *testing.T, n int) []string {
	t.Helper()
	env := os.Getenv("TUMBLER_REDIS_ADDRS")
	if env == "" {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = proc.StartRedis(t)
		}
		return addrs
	}
	addrs := strings.Split(env, ",")
	if len(addrs) < n {
		t.Fatalf("TUMBLER_REDIS_ADDRS holds %d addresses, the test needs %d", len(addrs), n)
	}
	addrs = addrs[:n]
	ctx := testCtx(t, 10*time.Second)
	for i, a := range addrs {
		addrs[i] = strings.TrimSpace(a)
		c := redis.NewClient(&redis.Options{Addr: addrs[i]})
		err := c.FlushAll(ctx).Err()
		if err == nil {
			err = c.ScriptFlush(ctx).Err()
		}
		_ = c.Close()
		if err != nil {
			t.Fatalf("emptying the redis-server at %s: %v", addrs[i], err)
		}
	}
	return addrs
}

// dbClient returns a go-redis client on database db, otherwise with its
// default options (protocol 0 is its default, RESP3), closed at cleanup.
func dbClient(t *testing.T, addr string, db, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: protocol})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantKeys checks that the database c is on holds exactly the keys want.
// DBSIZE counts keys that have expired and were not reclaimed yet (as in
// Redis): after a TTL lapses, touch the key (EXISTS) before calling it.
func wantKeys(ctx context.Context, t *testing.T, c *redis.Client, want ...string) {
	t.Helper()
	got, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("db %d: KEYS *: %v", c.Options().DB, err)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("db %d holds keys %q, want %q", c.Options().DB, got, want)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != int64(len(want)) {
		t.Fatalf("db %d: DBSIZE = %d, %v; want %d", c.Options().DB, n, err, len(want))
	}
}

// wantValue checks GET key on c's database.
func wantValue(ctx context.Context, t *testing.T, c *redis.Client, key, want string) {
	t.Helper()
	got, err := c.Get(ctx, key).Result()
	if err != nil || got != want {
		t.Fatalf("db %d: GET %s = %q, %v; want %q", c.Options().DB, key, got, err, want)
	}
}

// wantPTTL checks that key's PTTL on c's database is in (lo, hi].
func wantPTTL(ctx context.Context, t *testing.T, c *redis.Client, key string, lo, hi time.Duration) {
	t.Helper()
	d, err := c.PTTL(ctx, key).Result()
	if err != nil || d <= lo || d > hi {
		t.Fatalf("db %d: PTTL %s = %v, %v; want in (%v, %v]", c.Options().DB, key, d, err, lo, hi)
	}
}

// TestDatabase_GoRedis: SET NX PX locks and the compare-and-delete release
// script through go-redis clients on databases 0, 3 and 5, in RESP3 and
// RESP2, and the URL form redis://host:port/4.
func TestDatabase_GoRedis(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
				ctx := testCtx(t, 20*time.Second)
				addr := s.addrs[0]
				c0 := dbClient(t, addr, 0, p.proto)
				c3 := dbClient(t, addr, 3, p.proto)
				c5 := dbClient(t, addr, 5, p.proto)
				release := redis.NewScript(releaseSrc)

				// The connection reports the database it selected.
				for _, c := range []*redis.Client{c0, c3, c5} {
					info, err := c.ClientInfo(ctx).Result()
					if err != nil || info.DB != c.Options().DB {
						t.Fatalf("CLIENT INFO on a DB %d client: %+v, %v", c.Options().DB, info, err)
					}
				}

				// A lock taken in db 3 is not in db 0 or db 5.
				if ok, err := c3.SetNX(ctx, "job", "A", 10*time.Second).Result(); !ok || err != nil {
					t.Fatalf("db 3: SET job A PX NX = %v, %v", ok, err)
				}
				wantKeys(ctx, t, c3, "job")
				wantKeys(ctx, t, c0)
				wantKeys(ctx, t, c5)
				if n, err := c0.Exists(ctx, "job").Result(); err != nil || n != 0 {
					t.Fatalf("db 0: EXISTS job = %d, %v", n, err)
				}
				// The same name is locked in db 5 and db 0 independently,
				// while db 3's holder keeps its lock.
				if ok, err := c5.SetNX(ctx, "job", "B", 10*time.Second).Result(); !ok || err != nil {
					t.Fatalf("db 5: SET job B PX NX while db 3 holds job = %v, %v", ok, err)
				}
				if ok, err := c0.SetNX(ctx, "job", "Z", 0).Result(); !ok || err != nil {
					t.Fatalf("db 0: SET job Z NX = %v, %v", ok, err)
				}
				if ok, err := c3.SetNX(ctx, "job", "X", 10*time.Second).Result(); ok || err != nil {
					t.Fatalf("db 3: a second SET job NX = %v, %v; want not set", ok, err)
				}
				wantValue(ctx, t, c3, "job", "A")
				wantValue(ctx, t, c5, "job", "B")
				wantValue(ctx, t, c0, "job", "Z")
				wantPTTL(ctx, t, c3, "job", 9*time.Second, 10*time.Second)
				if d, err := c0.PTTL(ctx, "job").Result(); err != nil || d != -1 {
					t.Fatalf("db 0: PTTL job = %v, %v; want -1 (no TTL)", d, err)
				}

				// The release script runs in the caller's database.
				if n, err := release.Run(ctx, c3, []string{"job"}, "B").Int64(); err != nil || n != 0 {
					t.Fatalf("db 3: release with db 5's token = %d, %v; want 0", n, err)
				}
				if n, err := release.Run(ctx, c3, []string{"job"}, "A").Int64(); err != nil || n != 1 {
					t.Fatalf("db 3: release = %d, %v; want 1", n, err)
				}
				wantKeys(ctx, t, c3)
				wantValue(ctx, t, c5, "job", "B")
				wantValue(ctx, t, c0, "job", "Z")

				// The same name and the same token in db 0 and db 3: db 3's
				// release deletes db 3's key only.
				if err := c0.Set(ctx, "same", "T", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := c3.Set(ctx, "same", "T", 0).Err(); err != nil {
					t.Fatal(err)
				}
				if n, err := release.Run(ctx, c3, []string{"same"}, "T").Int64(); err != nil || n != 1 {
					t.Fatalf("db 3: release same = %d, %v; want 1", n, err)
				}
				wantKeys(ctx, t, c3)
				wantValue(ctx, t, c0, "same", "T")

				// The script cache is the server's, not a database's: a
				// script loaded from db 0 runs by SHA1 from db 5.
				sha, err := c0.ScriptLoad(ctx, releaseSrc).Result()
				if err != nil || sha != sha1Hex(releaseSrc) {
					t.Fatalf("SCRIPT LOAD = %q, %v", sha, err)
				}
				if n, err := c5.EvalSha(ctx, sha, []string{"job"}, "B").Int64(); err != nil || n != 1 {
					t.Fatalf("db 5: EVALSHA of a script loaded from db 0 = %d, %v; want 1", n, err)
				}
				wantKeys(ctx, t, c5)
				wantValue(ctx, t, c0, "job", "Z")

				// A lock's TTL lapses in its own database.
				if ok, err := c5.SetNX(ctx, "ttl", "B", time.Second).Result(); !ok || err != nil {
					t.Fatalf("db 5: SET ttl PX 1000 NX = %v, %v", ok, err)
				}
				if ok, err := c3.SetNX(ctx, "ttl", "A", time.Minute).Result(); !ok || err != nil {
					t.Fatalf("db 3: SET ttl PX 60000 NX = %v, %v", ok, err)
				}
				s.lapse(time.Second)
				if n, err := c5.Exists(ctx, "ttl").Result(); err != nil || n != 0 {
					t.Fatalf("db 5: EXISTS ttl after its TTL = %d, %v; want 0", n, err)
				}
				wantValue(ctx, t, c3, "ttl", "A")
				if ok, err := c5.SetNX(ctx, "ttl", "C", time.Second).Result(); !ok || err != nil {
					t.Fatalf("db 5: SET ttl NX after the TTL = %v, %v", ok, err)
				}
				wantValue(ctx, t, c5, "ttl", "C")

				// FLUSHDB empties one database.
				if err := c5.FlushDB(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				wantKeys(ctx, t, c5)
				wantKeys(ctx, t, c3, "ttl")
				wantKeys(ctx, t, c0, "job", "same")

				// The URL form: redis://host:port/4.
				opt, err := redis.ParseURL("redis://" + addr + "/4")
				if err != nil || opt.DB != 4 {
					t.Fatalf("ParseURL = %+v, %v", opt, err)
				}
				opt.Protocol = p.proto
				cu := redis.NewClient(opt)
				t.Cleanup(func() { _ = cu.Close() })
				if ok, err := cu.SetNX(ctx, "url", "U", 10*time.Second).Result(); !ok || err != nil {
					t.Fatalf("db 4 by URL: SET url NX = %v, %v", ok, err)
				}
				wantKeys(ctx, t, dbClient(t, addr, 4, p.proto), "url")
				wantKeys(ctx, t, c0, "job", "same")
				if n, err := release.Run(ctx, cu, []string{"url"}, "U").Int64(); err != nil || n != 1 {
					t.Fatalf("db 4 by URL: release = %d, %v", n, err)
				}
				wantKeys(ctx, t, cu)

				// 16 databases, 0 to 15, by default.
				c15 := dbClient(t, addr, 15, p.proto)
				if err := c15.Set(ctx, "last", "1", 0).Err(); err != nil {
					t.Fatalf("db 15: SET: %v", err)
				}
				wantKeys(ctx, t, c0, "job", "same")
				c16 := dbClient(t, addr, 16, p.proto)
				if err := c16.Ping(ctx).Err(); err == nil || err.Error() != "ERR DB index is out of range" {
					t.Fatalf("a DB 16 client: PING = %v; want ERR DB index is out of range", err)
				}
			})
		})
	}
}

// newRedsyncDB returns a redsync over one go-redis client per address, on
// database dbs[i] for addrs[i], and the clients.
func newRedsyncDB(t *testing.T, addrs []string, dbs []int) (*redsync.Redsync, []*redis.Client) {
	t.Helper()
	var pools []rsredis.Pool
	var clients []*redis.Client
	for i, a := range addrs {
		c := dbClient(t, a, dbs[i], 0)
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...), clients
}

// TestDatabase_Redsync: one redsync on db 3 and one on db 5 of the same
// server lock the same name independently; lock, contention, extend,
// unlock and TTL lapse stay in each one's database.
func TestDatabase_Redsync(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		rs3, cl3 := newRedsyncDB(t, s.addrs, []int{3})
		rs5, cl5 := newRedsyncDB(t, s.addrs, []int{5})
		c0, c3, c5 := dbClient(t, addr, 0, 0), cl3[0], cl5[0]

		m3 := rs3.NewMutex("res", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := m3.LockContext(ctx); err != nil {
			t.Fatalf("db 3: Lock: %v", err)
		}
		wantKeys(ctx, t, c3, "res")
		wantValue(ctx, t, c3, "res", m3.Value())
		wantKeys(ctx, t, c0)
		wantKeys(ctx, t, c5)

		// Held in db 3: another db 3 mutex is refused.
		other := rs3.NewMutex("res", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		var taken *redsync.ErrTaken
		if err := other.LockContext(ctx); !errors.As(err, &taken) {
			t.Fatalf("db 3: a second Lock = %v; want ErrTaken", err)
		}
		// Not held in db 5: the same name locks there, with a short expiry.
		m5 := rs5.NewMutex("res", redsync.WithExpiry(time.Second), redsync.WithTries(1))
		if err := m5.LockContext(ctx); err != nil {
			t.Fatalf("db 5: Lock while db 3 holds the name: %v", err)
		}
		wantValue(ctx, t, c5, "res", m5.Value())
		wantValue(ctx, t, c3, "res", m3.Value())
		wantKeys(ctx, t, c0)

		// Extend in db 3 sets db 3's TTL only.
		ok, err := m3.ExtendContext(ctx)
		if !ok || err != nil {
			t.Fatalf("db 3: Extend = %v, %v", ok, err)
		}
		wantPTTL(ctx, t, c3, "res", 9*time.Second, 10*time.Second)
		wantPTTL(ctx, t, c5, "res", 0, time.Second)

		// db 5's lock lapses; db 3's stays. A new db 5 mutex gets the
		// name and the lapsed holder can neither extend nor unlock it.
		s.lapse(time.Second)
		if n, err := c5.Exists(ctx, "res").Result(); err != nil || n != 0 {
			t.Fatalf("db 5: EXISTS res after its expiry = %d, %v; want 0", n, err)
		}
		wantValue(ctx, t, c3, "res", m3.Value())
		n5 := rs5.NewMutex("res", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := n5.LockContext(ctx); err != nil {
			t.Fatalf("db 5: Lock after the first holder's expiry: %v", err)
		}
		if ok, err := m5.ExtendContext(ctx); ok || !errors.As(err, &taken) {
			t.Fatalf("db 5: the lapsed holder's Extend = %v, %v; want false, ErrTaken", ok, err)
		}
		if ok, err := m5.UnlockContext(ctx); ok || !errors.As(err, &taken) {
			t.Fatalf("db 5: the lapsed holder's Unlock = %v, %v; want false, ErrTaken", ok, err)
		}
		wantValue(ctx, t, c5, "res", n5.Value())

		// Unlock in db 3 deletes db 3's key only.
		if ok, err := m3.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("db 3: Unlock = %v, %v", ok, err)
		}
		wantKeys(ctx, t, c3)
		wantValue(ctx, t, c5, "res", n5.Value())
		wantKeys(ctx, t, c0)
		if err := other.LockContext(ctx); err != nil {
			t.Fatalf("db 3: Lock after Unlock: %v", err)
		}
		if ok, err := n5.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("db 5: Unlock = %v, %v", ok, err)
		}
		wantKeys(ctx, t, c5)
		wantKeys(ctx, t, c3, "res")
	})
}

// TestDatabase_RedlockAcrossDatabases: a redsync Redlock over three
// servers whose clients use databases 1, 2 and 3. The lock lands in those
// databases only; a key of the same name in another database of a server
// (db 0, or the database another server's client uses) is no vote against
// it, while one in the client's own database is.
func TestDatabase_RedlockAcrossDatabases(t *testing.T) {
	forDBServers(t, 3, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		dbs := []int{1, 2, 3}
		rs, cl := newRedsyncDB(t, s.addrs, dbs)
		// On[i][db]: a plain client on server i, database db.
		on := make([]map[int]*redis.Client, 3)
		for i, a := range s.addrs {
			on[i] = map[int]*redis.Client{}
			for _, db := range []int{0, 1, 2, 3} {
				if db == dbs[i] {
					on[i][db] = cl[i]
				} else {
					on[i][db] = dbClient(t, a, db, 0)
				}
			}
		}
		// holding returns the servers whose own database holds value.
		holding := func(value string) []int {
			var nodes []int
			for i := range on {
				if v, err := cl[i].Get(ctx, "res").Result(); err == nil && v == value {
					nodes = append(nodes, i)
				}
			}
			return nodes
		}
		// wantOnly checks that server i's only keys are want in db want's
		// database, nothing in the others.
		wantOnly := func(i, db int, want ...string) {
			t.Helper()
			for d, c := range on[i] {
				if d == db {
					wantKeys(ctx, t, c, want...)
				} else {
					wantKeys(ctx, t, c)
				}
			}
		}

		m := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if got := holding(m.Value()); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("the lock is on servers %v, want [0 1 2]", got)
		}
		for i := range on {
			wantOnly(i, dbs[i], "res")
		}
		if ok, err := m.ExtendContext(ctx); !ok || err != nil {
			t.Fatalf("Extend = %v, %v", ok, err)
		}
		// Unlock everywhere, then let the expiry pass too: nothing left.
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("Unlock = %v, %v", ok, err)
		}
		for i := range on {
			wantOnly(i, -1)
		}

		// Keys named res in server 1's db 0 and db 3 (not its client's
		// db 2) and in server 2's db 1: no vote against the lock.
		for _, k := range []struct{ server, db int }{{1, 0}, {1, 3}, {2, 1}} {
			if err := on[k.server][k.db].Set(ctx, "res", "squatter", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		m = rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock beside keys of the same name in other databases: %v", err)
		}
		if got := holding(m.Value()); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("the lock is on servers %v, want [0 1 2]", got)
		}
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("Unlock = %v, %v", ok, err)
		}
		for _, k := range []struct{ server, db int }{{1, 0}, {1, 3}, {2, 1}} {
			wantValue(ctx, t, on[k.server][k.db], "res", "squatter")
			if err := on[k.server][k.db].Del(ctx, "res").Err(); err != nil {
				t.Fatal(err)
			}
		}

		// A holder in server 1's db 2: one vote against, still a majority.
		if err := cl[1].Set(ctx, "res", "holder", 0).Err(); err != nil {
			t.Fatal(err)
		}
		m = rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock with server 1's db 2 taken: %v", err)
		}
		if got := holding(m.Value()); !slices.Equal(got, []int{0, 2}) {
			t.Fatalf("the lock is on servers %v, want [0 2]", got)
		}
		// And in server 2's db 3: two votes against, no lock, and the
		// attempt leaves nothing behind.
		if err := cl[2].Set(ctx, "res", "holder", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := m.UnlockContext(ctx); ok || err == nil {
			t.Fatalf("Unlock with a server's key replaced = %v, %v; want false and an error", ok, err)
		}
		late := rs.NewMutex("res", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
		var taken *redsync.ErrTaken
		if err := late.LockContext(ctx); !errors.As(err, &taken) || !slices.Equal(slices.Sorted(slices.Values(taken.Nodes)), []int{1, 2}) {
			t.Fatalf("Lock with servers 1 and 2 taken: %v; want ErrTaken on [1 2]", err)
		}
		if got := holding(late.Value()); len(got) != 0 {
			t.Fatalf("the failed Lock left its value on servers %v", got)
		}
		if err := cl[1].Del(ctx, "res").Err(); err != nil {
			t.Fatal(err)
		}
		if err := cl[2].Del(ctx, "res").Err(); err != nil {
			t.Fatal(err)
		}

		// Expiry: a lock that is never released lapses in all three.
		m = rs.NewMutex("res", redsync.WithExpiry(time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
		for i := range on {
			wantPTTL(ctx, t, cl[i], "res", 0, time.Second)
		}
		s.lapse(time.Second)
		for i := range on {
			if n, err := cl[i].Exists(ctx, "res").Result(); err != nil || n != 0 {
				t.Fatalf("server %d: EXISTS res after its expiry = %d, %v; want 0", i, n, err)
			}
			wantOnly(i, -1)
		}
		if err := late.LockContext(ctx); err != nil {
			t.Fatalf("Lock after the expiry: %v", err)
		}
		if got := holding(late.Value()); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("the lock is on servers %v, want [0 1 2]", got)
		}
	})
}

// TestDatabase_Redislock: bsm/redislock (scripts with MSETNX, PEXPIRE,
// PTTL and DEL) on db 3 and db 5 clients.
func TestDatabase_Redislock(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)
		l3, err := redislock.Obtain(ctx, c3, "job", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("db 3: Obtain: %v", err)
		}
		wantKeys(ctx, t, c3, "job")
		wantValue(ctx, t, c3, "job", l3.Token())
		wantKeys(ctx, t, c0)
		wantKeys(ctx, t, c5)
		if _, err := redislock.Obtain(ctx, c3, "job", 10*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("db 3: a second Obtain = %v; want ErrNotObtained", err)
		}
		l5, err := redislock.Obtain(ctx, c5, "job", time.Second, nil)
		if err != nil {
			t.Fatalf("db 5: Obtain while db 3 holds job: %v", err)
		}
		wantValue(ctx, t, c5, "job", l5.Token())
		wantValue(ctx, t, c3, "job", l3.Token())
		wantKeys(ctx, t, c0)

		// TTL and Refresh (PTTL and PEXPIRE in the script) see db 3's key.
		if d, err := l3.TTL(ctx); err != nil || d <= 9*time.Second || d > 10*time.Second {
			t.Fatalf("db 3: TTL = %v, %v", d, err)
		}
		if err := l3.Refresh(ctx, 30*time.Second, nil); err != nil {
			t.Fatalf("db 3: Refresh: %v", err)
		}
		wantPTTL(ctx, t, c3, "job", 29*time.Second, 30*time.Second)
		wantPTTL(ctx, t, c5, "job", 0, time.Second)

		// db 5's lock lapses; its holder cannot refresh or release the
		// next holder's.
		s.lapse(time.Second)
		if n, err := c5.Exists(ctx, "job").Result(); err != nil || n != 0 {
			t.Fatalf("db 5: EXISTS job after its TTL = %d, %v; want 0", n, err)
		}
		if d, err := l5.TTL(ctx); err != nil || d != 0 {
			t.Fatalf("db 5: the lapsed lock's TTL = %v, %v; want 0", d, err)
		}
		n5, err := redislock.Obtain(ctx, c5, "job", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("db 5: Obtain after the TTL: %v", err)
		}
		if err := l5.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("db 5: the lapsed holder's Refresh = %v; want ErrNotObtained", err)
		}
		if err := l5.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("db 5: the lapsed holder's Release = %v; want ErrLockNotHeld", err)
		}
		wantValue(ctx, t, c5, "job", n5.Token())
		wantValue(ctx, t, c3, "job", l3.Token())

		// Release in db 3 deletes db 3's key only.
		if err := l3.Release(ctx); err != nil {
			t.Fatalf("db 3: Release: %v", err)
		}
		wantKeys(ctx, t, c3)
		wantValue(ctx, t, c5, "job", n5.Token())
		if err := n5.Release(ctx); err != nil {
			t.Fatalf("db 5: Release: %v", err)
		}
		wantKeys(ctx, t, c5)
		wantKeys(ctx, t, c0)
	})
}

// TestDatabase_MutualExclusion: workers lock the same name in db 3 and in
// db 5 at once (redislock, through pools of up to 8 connections that each
// SELECT when dialled), and INCR a counter in the lock's database while
// they hold it. Each database's lock excludes its own workers; every
// counter update lands in its database, none in db 0.
func TestDatabase_MutualExclusion(t *testing.T) {
	const workers, iters = 8, 25
	forDBServers(t, 1, true, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 60*time.Second)
		addr := s.addrs[0]
		var inside [2]atomic.Int64
		var both atomic.Int64 // times a holder entered while the other database's lock was held
		t.Run("dbs", func(t *testing.T) {
			for i, db := range []int{3, 5} {
				t.Run("db"+strconv.Itoa(db), func(t *testing.T) {
					t.Parallel()
					c := redis.NewClient(&redis.Options{Addr: addr, DB: db, PoolSize: 8})
					t.Cleanup(func() { _ = c.Close() })
					retry := redislock.LinearBackoff(time.Millisecond)
					checkMutex(t, workers, iters, 30*time.Second, func(ctx context.Context) (func(context.Context) error, error) {
						l, err := redislock.Obtain(ctx, c, "hot", 10*time.Second, &redislock.Options{RetryStrategy: retry})
						if err != nil {
							return nil, err
						}
						inside[i].Add(1)
						if inside[1-i].Load() > 0 {
							both.Add(1)
						}
						if err := c.Incr(ctx, "count").Err(); err != nil {
							return nil, err
						}
						return func(ctx context.Context) error {
							inside[i].Add(-1)
							return l.Release(ctx)
						}, nil
					})
				})
			}
		})
		t.Logf("a holder entered %d times while the other database's lock was held", both.Load())
		for _, db := range []int{3, 5} {
			c := dbClient(t, addr, db, 0)
			wantKeys(ctx, t, c, "count")
			wantValue(ctx, t, c, "count", strconv.Itoa(workers*iters))
		}
		wantKeys(ctx, t, dbClient(t, addr, 0, 0))
	})
}

// TestDatabase_Rueidis: rueidis with SelectDB, with DisableCache and with
// its defaults (client-side caching: CLIENT TRACKING and DoCache).
func TestDatabase_Rueidis(t *testing.T) {
	newDB := func(t *testing.T, addr string, db int, disableCache bool) rueidis.Client {
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress:  []string{addr},
			SelectDB:     db,
			DisableCache: disableCache,
		})
		if err != nil {
			t.Fatalf("rueidis.NewClient(SelectDB %d): %v", db, err)
		}
		t.Cleanup(c.Close)
		return c
	}
	for _, mode := range []struct {
		name         string
		disableCache bool
	}{{"DisableCache", true}, {"default", false}} {
		t.Run(mode.name, func(t *testing.T) {
			forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
				ctx := testCtx(t, 20*time.Second)
				addr := s.addrs[0]
				r3 := newDB(t, addr, 3, mode.disableCache)
				r5 := newDB(t, addr, 5, mode.disableCache)
				c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)

				setNX := func(r rueidis.Client, key, val string) (bool, error) {
					err := r.Do(ctx, r.B().Set().Key(key).Value(val).Nx().PxMilliseconds(1000).Build()).Error()
					if rueidis.IsRedisNil(err) {
						return false, nil
					}
					return err == nil, err
				}
				if ok, err := setNX(r3, "job", "A"); !ok || err != nil {
					t.Fatalf("db 3: SET job NX PX = %v, %v", ok, err)
				}
				wantKeys(ctx, t, c3, "job")
				wantKeys(ctx, t, c0)
				wantKeys(ctx, t, c5)
				if ok, err := setNX(r3, "job", "X"); ok || err != nil {
					t.Fatalf("db 3: a second SET job NX = %v, %v; want not set", ok, err)
				}
				if ok, err := setNX(r5, "job", "B"); !ok || err != nil {
					t.Fatalf("db 5: SET job NX while db 3 holds job = %v, %v", ok, err)
				}
				wantValue(ctx, t, c3, "job", "A")
				wantValue(ctx, t, c5, "job", "B")
				del := rueidis.NewLuaScript(releaseSrc)
				if n, err := del.Exec(ctx, r3, []string{"job"}, []string{"A"}).AsInt64(); err != nil || n != 1 {
					t.Fatalf("db 3: release = %d, %v; want 1", n, err)
				}
				wantKeys(ctx, t, c3)
				wantValue(ctx, t, c5, "job", "B")
				s.lapse(time.Second)
				if n, err := c5.Exists(ctx, "job").Result(); err != nil || n != 0 {
					t.Fatalf("db 5: EXISTS job after its TTL = %d, %v; want 0", n, err)
				}
				wantKeys(ctx, t, c5)

				// DoCache in db 3: a write to the key in db 3 invalidates
				// the cached value; a write to the same name in db 0 never
				// shows up in db 3's reads.
				if err := c3.Set(ctx, "cached", "v1", 0).Err(); err != nil {
					t.Fatal(err)
				}
				get := func() string {
					v, err := r3.DoCache(ctx, r3.B().Get().Key("cached").Cache(), time.Minute).ToString()
					if err != nil {
						t.Fatalf("db 3: DoCache GET cached: %v", err)
					}
					return v
				}
				if v := get(); v != "v1" {
					t.Fatalf("db 3: GET cached = %q, want v1", v)
				}
				for _, w := range []struct {
					c   *redis.Client
					val string
				}{{c0, "zero"}, {c3, "v2"}} {
					if err := w.c.Set(ctx, "cached", w.val, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(5 * time.Second)
				for v := get(); v != "v2"; v = get() {
					if v != "v1" {
						t.Fatalf("db 3: GET cached = %q, want v1 or v2", v)
					}
					if time.Now().After(deadline) {
						t.Fatal("db 3: the cached value was never invalidated by the write in db 3")
					}
					time.Sleep(5 * time.Millisecond)
				}
				wantValue(ctx, t, c0, "cached", "zero")
			})
		})
	}
}

// newLockerDB returns a rueidislock locker (default options: client-side
// caching, 3 keys, majority 2) whose client selects database db.
func newLockerDB(t *testing.T, addr string, db int, validity time.Duration) rueidislock.Locker {
	t.Helper()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}, SelectDB: db},
		KeyValidity:  validity,
		TryNextAfter: 5 * time.Second, // as newLocker: no spurious per-key timeout under -race
	})
	if err != nil {
		t.Fatalf("rueidislock.NewLocker(SelectDB %d): %v", db, err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestDatabase_Rueidislock: lockers on db 3 contend with each other and not
// with a locker on db 5; a db 3 waiter is woken when the db 3 holder
// releases (by the invalidation of its keys, long before their validity).
// The servers' clocks are real: rueidislock extends on timers and sets
// absolute deadlines (PXAT).
func TestDatabase_Rueidislock(t *testing.T) {
	const validity = time.Minute // far beyond the test's deadline
	lockKeys := []string{"rueidislock:0:job", "rueidislock:1:job", "rueidislock:2:job"}
	forDBServers(t, 1, true, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)
		holder := newLockerDB(t, addr, 3, validity)
		waiter := newLockerDB(t, addr, 3, validity)
		other := newLockerDB(t, addr, 5, validity)

		_, release, err := holder.WithContext(ctx, "job")
		if err != nil {
			t.Fatalf("db 3: WithContext: %v", err)
		}
		// A lock is granted on a majority of its keys; the third follows
		// in the background.
		allKeys := func(c *redis.Client) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, err := c.Exists(ctx, lockKeys...).Result()
				if err != nil {
					t.Fatal(err)
				}
				if n == 3 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("db %d holds %d of the 3 lock keys", c.Options().DB, n)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		allKeys(c3)
		wantKeys(ctx, t, c3, lockKeys...)
		wantKeys(ctx, t, c0)
		wantKeys(ctx, t, c5)
		if _, _, err := waiter.TryWithContext(ctx, "job"); !errors.Is(err, rueidislock.ErrNotLocked) {
			t.Fatalf("db 3: TryWithContext while held = %v; want ErrNotLocked", err)
		}
		octx, orelease, err := other.TryWithContext(ctx, "job")
		if err != nil {
			t.Fatalf("db 5: TryWithContext while db 3 holds job: %v", err)
		}
		allKeys(c5)
		for _, k := range lockKeys {
			v3, _ := c3.Get(ctx, k).Result()
			v5, err := c5.Get(ctx, k).Result()
			if err != nil || v5 == v3 {
				t.Fatalf("%s: db 5 holds %q (%v), db 3 %q; want two holders' values", k, v5, err, v3)
			}
		}

		type result struct {
			release context.CancelFunc
			err     error
		}
		acquired := make(chan result, 1)
		go func() {
			_, rel, err := waiter.WithContext(ctx, "job")
			acquired <- result{rel, err}
		}()
		time.Sleep(100 * time.Millisecond)
		select {
		case r := <-acquired:
			t.Fatalf("db 3: the waiter acquired a held lock: %v", r.err)
		default:
		}
		release()
		select {
		case r := <-acquired:
			if r.err != nil {
				t.Fatalf("db 3: waiter: WithContext: %v", r.err)
			}
			defer r.release()
		case <-ctx.Done():
			t.Fatalf("db 3: the waiter was not woken after the release (validity %v)", validity)
		}
		// db 5's holder was not disturbed.
		if octx.Err() != nil {
			t.Fatal("db 5: the lock's context ended when db 3's lock changed hands")
		}
		orelease()
		wantKeys(ctx, t, c5)
		wantKeys(ctx, t, c0)
	})
}

// TestDatabase_GoZeroBesideADatabase: go-zero's RedisConf has no database
// (its clients use DB 0), so a go-zero service shares db 0; a lock of the
// same name taken by redislock in db 3 is another lock.
func TestDatabase_GoZeroBesideADatabase(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0)
		gz := gzredis.NewRedisLock(gzredis.New(addr), "shared")
		gz.SetExpire(10)
		if ok, err := gz.AcquireCtx(ctx); !ok || err != nil {
			t.Fatalf("go-zero Acquire = %v, %v", ok, err)
		}
		wantKeys(ctx, t, c0, "shared")
		wantKeys(ctx, t, c3)
		l3, err := redislock.Obtain(ctx, c3, "shared", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("db 3: Obtain while go-zero holds the name in db 0: %v", err)
		}
		if v, err := c0.Get(ctx, "shared").Result(); err != nil || v == l3.Token() {
			t.Fatalf("db 0: GET shared = %q, %v; want go-zero's token", v, err)
		}
		if _, err := redislock.Obtain(ctx, c0, "shared", 10*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("db 0: Obtain while go-zero holds it = %v; want ErrNotObtained", err)
		}
		if ok, err := gz.ReleaseCtx(ctx); !ok || err != nil {
			t.Fatalf("go-zero Release = %v, %v", ok, err)
		}
		wantKeys(ctx, t, c0)
		wantValue(ctx, t, c3, "shared", l3.Token())
		if err := l3.Release(ctx); err != nil {
			t.Fatalf("db 3: Release: %v", err)
		}
		wantKeys(ctx, t, c3)
	})
}

// TestDatabase_WatchRelease: StackExchange.Redis's LockRelease on a
// database (GetDatabase(3)): WATCH, GET, then MULTI, UNLINK, EXEC when the
// value is the token. A write to the same name in db 0 does not touch the
// watched key and the EXEC runs; a write in db 3 aborts it.
func TestDatabase_WatchRelease(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0)
		// release runs LockRelease, with write() between the GET and the
		// MULTI, and reports whether the key was deleted.
		release := func(key, token string, write func() error) (bool, error) {
			err := c3.Watch(ctx, func(tx *redis.Tx) error {
				v, err := tx.Get(ctx, key).Result()
				if err != nil {
					return err
				}
				if v != token {
					return errors.New("not the owner")
				}
				if err := write(); err != nil {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Unlink(ctx, key)
					return nil
				})
				return err
			}, key)
			if errors.Is(err, redis.TxFailedErr) {
				return false, nil
			}
			return err == nil, err
		}

		if ok, err := c3.SetNX(ctx, "se", "tok", 5*time.Second).Result(); !ok || err != nil {
			t.Fatalf("db 3: SET se tok PX NX = %v, %v", ok, err)
		}
		ok, err := release("se", "tok", func() error { return c0.Set(ctx, "se", "db0", 0).Err() })
		if !ok || err != nil {
			t.Fatalf("db 3: release with db 0's se written after WATCH = %v, %v; want the EXEC to run", ok, err)
		}
		wantKeys(ctx, t, c3)
		wantValue(ctx, t, c0, "se", "db0")

		if ok, err := c3.SetNX(ctx, "se", "tok", 5*time.Second).Result(); !ok || err != nil {
			t.Fatalf("db 3: SET se tok PX NX = %v, %v", ok, err)
		}
		other := dbClient(t, addr, 3, 0)
		ok, err = release("se", "tok", func() error { return other.PExpire(ctx, "se", 10*time.Second).Err() })
		if ok || err != nil {
			t.Fatalf("db 3: release with db 3's se touched after WATCH = %v, %v; want the EXEC aborted", ok, err)
		}
		wantValue(ctx, t, c3, "se", "tok")
		wantPTTL(ctx, t, c3, "se", 9*time.Second, 10*time.Second)
	})
}

// TestDatabase_PythonRedisLockSignal: python-redis-lock on a client with
// db=3: a waiter BLPOPs lock-signal:<name>; the holder's UNLOCK_SCRIPT
// deletes the lock and LPUSHes the signal in db 3. LPUSHes to the same
// name in db 0 and db 5 do not wake the waiter and stay where they were
// pushed.
func TestDatabase_PythonRedisLockSignal(t *testing.T) {
	unlockSrc := replayScript(t, pythonRedisLockReplay, shaPRLUnlock)
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)
		waiter := dbClient(t, addr, 3, 0)
		const lockKey, signal = "lock:job", "lock-signal:job"

		if err := c3.Do(ctx, "SET", lockKey, "holder-id", "NX", "EX", 5).Err(); err != nil {
			t.Fatalf("db 3: SET NX EX: %v", err)
		}
		popped := make(chan []string, 1)
		go func() {
			v, err := waiter.BLPop(ctx, 10*time.Second, signal).Result()
			if err != nil {
				v = []string{"error", err.Error()}
			}
			popped <- v
		}()
		// Wait until the BLPOP is blocked.
		deadline := time.Now().Add(5 * time.Second)
		for {
			info, err := c0.Info(ctx, "clients").Result()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(info, "blocked_clients:1\r\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no client blocked in BLPOP:\n%s", info)
			}
			time.Sleep(5 * time.Millisecond)
		}
		for _, c := range []*redis.Client{c0, c5} {
			if err := c.LPush(ctx, signal, "other-db").Err(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case v := <-popped:
			t.Fatalf("db 3: BLPOP returned %q after LPUSHes in db 0 and db 5", v)
		default:
		}
		for _, c := range []*redis.Client{c0, c5} {
			if v, err := c.LRange(ctx, signal, 0, -1).Result(); err != nil || !slices.Equal(v, []string{"other-db"}) {
				t.Fatalf("db %d: LRANGE %s = %q, %v; want [other-db]", c.Options().DB, signal, v, err)
			}
		}

		// release(): UNLOCK_SCRIPT(KEYS lock, signal; ARGV id, signal_expire).
		if n, err := evalLoad(ctx, c3, unlockSrc, []string{lockKey, signal}, "holder-id", 1000).Int64(); err != nil || n != 0 {
			t.Fatalf("db 3: UNLOCK_SCRIPT = %d, %v; want 0", n, err)
		}
		select {
		case v := <-popped:
			if !slices.Equal(v, []string{signal, "1"}) {
				t.Fatalf("db 3: BLPOP = %q; want [%s 1]", v, signal)
			}
		case <-ctx.Done():
			t.Fatal("db 3: the waiter was not woken by the unlock script's LPUSH")
		}
		wantKeys(ctx, t, c3)
		wantKeys(ctx, t, c0, signal)
		wantKeys(ctx, t, c5, signal)
	})
}

// TestDatabase_Reconnect: a client whose connection the server closes
// (CLIENT KILL) dials again and selects its database again: go-redis's
// pool, and rueidis's pipe.
func TestDatabase_Reconnect(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)
		kill := func(id int64) {
			t.Helper()
			if n, err := c0.ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Result(); err != nil || n != 1 {
				t.Fatalf("CLIENT KILL ID %d = %d, %v", id, n, err)
			}
		}

		t.Run("go-redis", func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: addr, DB: 3, PoolSize: 1})
			t.Cleanup(func() { _ = c.Close() })
			before, err := c.ClientInfo(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			kill(before.ID)
			// The pool finds its connection closed and dials a new one.
			var after *redis.ClientInfo
			for try := 0; ; try++ {
				after, err = c.ClientInfo(ctx).Result()
				if err == nil {
					break
				}
				if try == 2 {
					t.Fatalf("CLIENT INFO after the kill: %v", err)
				}
			}
			if after.ID == before.ID || after.DB != 3 {
				t.Fatalf("after the kill: id %d db %d; want a new connection on db 3 (was id %d)", after.ID, after.DB, before.ID)
			}
			l, err := redislock.Obtain(ctx, c, "re", 10*time.Second, nil)
			if err != nil {
				t.Fatalf("Obtain after the reconnect: %v", err)
			}
			wantKeys(ctx, t, c3, "re")
			wantKeys(ctx, t, c0)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("rueidis", func(t *testing.T) {
			r, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, SelectDB: 5, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Close)
			id, err := r.Do(ctx, r.B().ClientId().Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			kill(id)
			// rueidis reports the broken pipe once, then dials again.
			var now int64
			for try := 0; ; try++ {
				now, err = r.Do(ctx, r.B().ClientId().Build()).AsInt64()
				if err == nil {
					break
				}
				if try == 2 {
					t.Fatalf("CLIENT ID after the kill: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if now == id {
				t.Fatalf("CLIENT ID %d: still the killed connection", now)
			}
			err = r.Do(ctx, r.B().Set().Key("re").Value("B").Nx().PxMilliseconds(10000).Build()).Error()
			if err != nil {
				t.Fatalf("SET NX after the reconnect: %v", err)
			}
			wantKeys(ctx, t, c5, "re")
			wantKeys(ctx, t, c0)
		})
	})
}

// TestDatabase_OneConnectionManyDatabases: StackExchange.Redis multiplexes
// every database (GetDatabase(n)) over one connection, sending SELECT n
// whenever the next command is for another database, pipelined with the
// commands around it; its LockRelease is WATCH, GET, MULTI, UNLINK, EXEC.
// Here one go-redis connection does the same: locks in db 3 and db 5
// taken and released in one pipeline, and a db 3 release whose WATCH
// spans a write to the same name in db 5.
func TestDatabase_OneConnectionManyDatabases(t *testing.T) {
	forDBServers(t, 1, false, func(t *testing.T, s dbServers) {
		ctx := testCtx(t, 20*time.Second)
		addr := s.addrs[0]
		c0, c3, c5 := dbClient(t, addr, 0, 0), dbClient(t, addr, 3, 0), dbClient(t, addr, 5, 0)
		rdb := dbClient(t, addr, 0, 0)
		conn := rdb.Conn()
		t.Cleanup(func() { _ = conn.Close() })

		cmds, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Select(ctx, 3)
			p.SetNX(ctx, "lock", "three", 10*time.Second)
			p.Select(ctx, 5)
			p.SetNX(ctx, "lock", "five", 10*time.Second)
			p.SetNX(ctx, "lock", "again", 10*time.Second)
			p.Get(ctx, "lock")
			p.Select(ctx, 3)
			p.Get(ctx, "lock")
			p.Select(ctx, 0)
			p.Exists(ctx, "lock")
			return nil
		})
		if err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		var got []string
		for _, c := range cmds {
			got = append(got, strings.TrimPrefix(c.String(), c.Name()+" "))
		}
		want := []string{
			"3: OK", "lock three ex 10 nx: true",
			"5: OK", "lock five ex 10 nx: true", "lock again ex 10 nx: false", "lock: five",
			"3: OK", "lock: three",
			"0: OK", "lock: 0",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pipelined replies:\n%q\nwant\n%q", got, want)
		}
		wantKeys(ctx, t, c3, "lock")
		wantKeys(ctx, t, c5, "lock")
		wantKeys(ctx, t, c0)

		// Release db 3's lock the StackExchange.Redis way, with a write
		// to db 5's key of the same name, on the same connection, between
		// the WATCH and the EXEC: not the watched key, the EXEC runs.
		cmds, err = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Select(ctx, 3)
			p.Do(ctx, "WATCH", "lock")
			p.Get(ctx, "lock")
			p.Select(ctx, 5)
			p.PExpire(ctx, "lock", 20*time.Second)
			p.Select(ctx, 3)
			p.Do(ctx, "MULTI")
			p.Do(ctx, "UNLINK", "lock")
			p.Do(ctx, "EXEC")
			return nil
		})
		if err != nil {
			t.Fatalf("release pipeline: %v", err)
		}
		got = got[:0]
		for _, c := range cmds {
			got = append(got, strings.TrimPrefix(c.String(), c.Name()+" "))
		}
		want = []string{
			"3: OK", "WATCH lock: OK", "lock: three",
			"5: OK", "lock 20000: true",
			"3: OK", "MULTI: OK", "UNLINK lock: QUEUED", "EXEC: [1]",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("release replies:\n%q\nwant\n%q", got, want)
		}
		wantKeys(ctx, t, c3)
		wantValue(ctx, t, c5, "lock", "five")
		wantPTTL(ctx, t, c5, "lock", 19*time.Second, 20*time.Second)

		// The same with db 3's key touched by another client: aborted.
		if err := c3.Set(ctx, "lock", "three", 0).Err(); err != nil {
			t.Fatal(err)
		}
		cmds, _ = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Select(ctx, 3)
			p.Do(ctx, "WATCH", "lock")
			return nil
		})
		if err := cmds[1].Err(); err != nil {
			t.Fatal(err)
		}
		if err := c3.Set(ctx, "lock", "stolen", 0).Err(); err != nil {
			t.Fatal(err)
		}
		cmds, _ = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "MULTI")
			p.Do(ctx, "UNLINK", "lock")
			p.Do(ctx, "EXEC")
			return nil
		})
		if err := cmds[2].Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("EXEC after the watched key changed: %v; want a nil reply", err)
		}
		wantValue(ctx, t, c3, "lock", "stolen")
	})
}
