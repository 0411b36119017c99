package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// migrateSteps run on a source server, MIGRATing to a target; "@T" in an
// argument is the target's port, and a step whose first word is "target"
// runs on the target. The replies of tumbler as the source (and as the
// target) must be those of redis-server in the same place.
var migrateSteps = []string{
	"target FLUSHALL",
	"SET k v PX 100000", "RPUSH l a b c", "HSET h f v", "SET k2 v2", "ZADD z 1 a 2 b", "SADD s 1 2 3",
	"MIGRATE 127.0.0.1 @T k 0 1000",
	"EXISTS k", "target GET k", "target EVAL \"return redis.call('pttl', KEYS[1]) > 99000\" 1 k",
	"MIGRATE 127.0.0.1 @T nosuch 0 1000",
	"MIGRATE 127.0.0.1 @T \"\" 3 1000 KEYS l h nosuch z s",
	"EXISTS l h z s",
	"target SELECT 3", "target LRANGE l 0 -1", "target HGETALL h", "target ZRANGE z 0 -1 WITHSCORES", "target SMEMBERS s", "target OBJECT ENCODING s", "target SELECT 0",
	"RPUSH l x",
	"MIGRATE 127.0.0.1 @T \"\" 3 1000 KEYS l",
	"EXISTS l",
	"MIGRATE 127.0.0.1 @T \"\" 3 1000 REPLACE KEYS l",
	"target SELECT 3", "target LRANGE l 0 -1", "target SELECT 0",
	"MIGRATE 127.0.0.1 @T k2 0 1000 COPY", "GET k2", "target GET k2",
	"MIGRATE 127.0.0.1 @T k2 0 1000 COPY",
	"MIGRATE 127.0.0.1 @T k2 0 1000 COPY REPLACE",
	"MIGRATE 127.0.0.1 @T k 0 1000 KEYS a",
	"MIGRATE 127.0.0.1 @T k x 1000", "MIGRATE 127.0.0.1 @T k 0 x", "MIGRATE 127.0.0.1 @T k 0 1000 bogus",
	"MIGRATE 127.0.0.1 @T k 0 1000 AUTH", "MIGRATE 127.0.0.1 @T k 0 1000 AUTH2 u",
	"MIGRATE 127.0.0.1 1 k2 0 100",
	"MIGRATE 127.0.0.1 @T k2 99 1000",
	"MIGRATE 127.0.0.1 @T k2 0 1000",
	"EXISTS k2",
	"SET gone v PX 1", "@sleep 5ms", "MIGRATE 127.0.0.1 @T gone 0 1000",
	"SET big " + strings.Repeat("x", 100000), "MIGRATE 127.0.0.1 @T big 5 1000", "target SELECT 5", "target STRLEN big", "target SELECT 0",
	"COMMAND GETKEYS MIGRATE 127.0.0.1 1 k 0 1000", "COMMAND GETKEYS MIGRATE 127.0.0.1 1 \"\" 0 1000 AUTH2 u p KEYS a b",
	"MIGRATE",
}

func TestMigrateDiff(t *testing.T) {
	redisSrc, redisDst := startRedis(t), startRedis(t)
	tumblerSrc, tumblerDst := server.RunT(t).Addr(), server.RunT(t).Addr()
	want := migrateRun(t, redisSrc, redisDst)
	for _, run := range []struct{ name, src, dst string }{
		{"tumbler to redis-server", tumblerSrc, redisDst},
		{"redis-server to tumbler", redisSrc, tumblerDst},
		{"tumbler to tumbler", tumblerSrc, tumblerDst},
	} {
		got := migrateRun(t, run.src, run.dst)
		for i := range migrateSteps {
			if want[i] != got[i] {
				t.Errorf("%s: %q:\n redis:   %q\n tumbler: %q", run.name, migrateSteps[i], want[i], got[i])
			}
		}
	}
	if !strings.Contains(strings.Join(want, " "), "BUSYKEY") {
		t.Fatalf("redis-server never refused a key: the steps test nothing of what they should: %q", want)
	}
}

func migrateRun(t *testing.T, src, dst string) []string {
	t.Helper()
	s, err := dial(src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	d, err := dial(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if _, err := s.do("FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	port := dst[strings.LastIndexByte(dst, ':')+1:]
	out := make([]string, len(migrateSteps))
	for i, step := range migrateSteps {
		c := s
		if rest, ok := strings.CutPrefix(step, "target "); ok {
			c, step = d, rest
		}
		if d, ok := strings.CutPrefix(step, "@sleep "); ok {
			pause, err := time.ParseDuration(d)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(pause)
			continue
		}
		args, err := Split(step)
		if err != nil {
			t.Fatal(err)
		}
		for j := range args {
			args[j] = strings.ReplaceAll(args[j], "@T", port)
		}
		r, err := c.do(args...)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		out[i] = string(r)
	}
	return out
}
