package diff

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// notifyCases are command sequences whose keyspace notifications are
// compared, event by event, with redis-server's. Each case runs on a
// flushed server; its commands' replies are compared too.
var notifyCases = [][]string{
	// strings
	{"SET k v", "SET k v2 EX 100", "SET k v3 KEEPTTL", "SET k v XX PX 5000", "SET k v NX", "SETNX n 1", "SETEX e 100 v", "PSETEX p 100000 v"},
	{"SET k v GET", "GETSET k w", "GETDEL k", "GETDEL k", "MSET a 1 b 2", "MSETNX a 1 c 3", "MSETNX c 3 d 4"},
	{"INCR i", "INCRBY i 5", "DECR i", "DECRBY i 2", "INCRBYFLOAT f 1.5", "APPEND s ab", "APPEND s cd", "INCR s"},
	{"SET g v", "GETEX g EX 100", "GETEX g PERSIST", "GETEX g PERSIST", "GETEX g PX 0", "GETEX g", "GET nosuch"},
	{"TTL nosuch", "PTTL nosuch", "TYPE nosuch", "EXPIRETIME nosuch", "SET k v", "TTL k", "TYPE k", "EVAL \"return redis.call('type', 'n')\" 0"},
	// bits (cmd_bits.go): events only when something changed; reads count hits and misses
	{"SETBIT b 7 1", "SETBIT b 7 1", "SETBIT b 7 0", "SETBIT b 20 0", "SETBIT nosuch -1 1", "SET i 12", "SETBIT i 0 0", "GETBIT b 0", "GETBIT nosuch 0", "GETBIT nosuch -1",
		"SETRANGE r 2 ab", "SETRANGE r 0 ab", "SETRANGE r 0 \"\"", "SETRANGE nosuch 5 \"\"", "BITCOUNT r", "BITCOUNT nosuch 0", "BITPOS r 1", "BITPOS nosuch 0", "BITPOS r 2",
		"BITOP OR d b r", "BITOP AND d nosuch nosuch2", "BITOP AND d nosuch", "BITOP NOT d b", "SET t v EX 100", "BITOP NOT t b", "LPUSH l x", "BITOP OR d b l",
		"BITFIELD f SET u8 0 1", "BITFIELD f SET u8 0 1", "BITFIELD f INCRBY u8 0 0", "BITFIELD f GET u8 0", "BITFIELD nosuch GET u8 0", "BITFIELD_RO f GET u8 0",
		"BITFIELD g OVERFLOW FAIL INCRBY u2 100 10", "BITFIELD f OVERFLOW FAIL INCRBY u8 0 255", "BITFIELD f SET u8 100 0", "BITFIELD l GET u8 0",
		"LCS b r", "LCS nosuch nosuch2 LEN", "LCS l b", "MULTI", "SETBIT m 0 1", "BITOP NOT d2 m", "EXEC"},
	// reads of every type, present, missing and of the wrong type (hits and misses)
	{"SET s v", "GET s", "MGET s nosuch s", "STRLEN s", "STRLEN nosuch", "GETRANGE s 0 -1", "SUBSTR nosuch 0 1", "EXISTS s nosuch s", "GET nosuch", "HGET s f", "LLEN s",
		"HSET h f v", "HGET h f", "HGET h g", "HMGET h f g", "HGETALL h", "HKEYS nosuch", "HVALS h", "HLEN h", "HSTRLEN h f", "HEXISTS h f", "HRANDFIELD h", "HSCAN h 0", "HSCAN nosuch 0",
		"RPUSH l a b", "LRANGE l 0 -1", "LINDEX l 0", "LINDEX nosuch 0", "LPOS l b", "LLEN l", "LLEN nosuch",
		"SADD t a", "SMEMBERS t", "SCARD t", "SISMEMBER t a", "SMISMEMBER nosuch a", "SRANDMEMBER t", "SINTER t nosuch", "SUNION t t", "SDIFF nosuch t", "SINTERCARD 2 t t", "SSCAN t 0",
		"ZADD z 1 a", "ZSCORE z a", "ZMSCORE z a b", "ZCARD z", "ZCOUNT z 0 1", "ZLEXCOUNT z - +", "ZRANK z a", "ZRANGE z 0 -1", "ZRANGEBYSCORE nosuch 0 1", "ZREVRANGE z 0 -1", "ZSCAN z 0",
		"TYPE z", "TTL z", "KEYS s*", "DBSIZE", "SCAN 0 MATCH s", "TOUCH z nosuch"},
	// SCAN: a key past its deadline is expired once it matched the
	// pattern; TYPE looks it up as a read (a hit or a miss, and keymiss)
	{"DEBUG SET-ACTIVE-EXPIRE 0", "SET a 1", "HSET h f v", "SET e v PXAT 1", "SCAN 0 MATCH zz* COUNT 100", "SCAN 0 TYPE string COUNT 100",
		"SCAN 0 TYPE hash COUNT 100", "SET e v PXAT 1", "SCAN 0 TYPE none COUNT 100", "SET e v PXAT 1", "SCAN 0 MATCH e COUNT 100", "DEBUG SET-ACTIVE-EXPIRE 1"},
	// keys
	{"OBJECT ENCODING nosuch", "SET k v", "OBJECT ENCODING k", "OBJECT REFCOUNT k", "OBJECT REFCOUNT nosuch", "OBJECT FREQ k", "OBJECT FREQ nosuch"},
	{"SET k v", "EXPIRE k 100", "PEXPIRE k 100000", "EXPIREAT k 1", "SET k v", "PERSIST k", "EXPIRE k 100", "PERSIST k", "PERSIST k", "DEL k", "DEL k", "UNLINK nosuch"},
	{"SET a 1", "RENAME a b", "RENAMENX b c", "SET d 2", "RENAMENX c d", "RENAME c d", "COPY d e", "COPY d e", "COPY d e REPLACE", "TOUCH d e nosuch", "EXISTS nosuch"},
	// DUMP and RESTORE: "new" and "restore"; REPLACE removes the old key
	// silently; a deadline already past adds nothing ("del" when REPLACE
	// removed a key)
	{"SET k v", "DUMP k", "DUMP nosuch", "EVAL \"return redis.call('restore', 'r', 0, redis.call('dump', 'k'))\" 0",
		"EVAL \"return redis.call('restore', 'r', 0, redis.call('dump', 'k'))\" 0",
		"EVAL \"return redis.call('restore', 'r', 100000, redis.call('dump', 'k'), 'REPLACE')\" 0",
		"EVAL \"return redis.call('restore', 'r', 1, redis.call('dump', 'k'), 'REPLACE', 'ABSTTL')\" 0",
		"EVAL \"return redis.call('restore', 'r', 1, redis.call('dump', 'k'), 'REPLACE', 'ABSTTL')\" 0",
		"EVAL \"return redis.call('restore', 'r', 1, redis.call('dump', 'k'), 'ABSTTL')\" 0",
		"RPUSH l a", "EVAL \"return redis.call('restore-asking', 'l2', 0, redis.call('dump', 'l'))\" 0",
		"RESTORE r 0 \"\\x00\\x01v\\n\\x00\\x00\"", "RESTORE k 0 x", "EXISTS r"},
	// hashes
	{"HSET h a 1 b 2", "HSET h a 3", "HSETNX h a 1", "HSETNX h c 1", "HMSET h d 4", "HINCRBY h n 5", "HINCRBYFLOAT h x 1.5", "HDEL h a nosuch", "HDEL h nosuch", "HDEL h b c d n x", "HGET nosuch f"},
	// lists
	{"LPUSH l a b", "RPUSH l c", "LPUSHX l d", "RPUSHX nosuch x", "LINSERT l BEFORE c z", "LINSERT l BEFORE nosuch z", "LSET l 0 y", "LREM l 0 nosuch", "LREM l 1 z", "LTRIM l 0 1", "LPOP l", "RPOP l", "RPOP l"},
	{"RPUSH s a b c", "LMOVE s d LEFT RIGHT", "RPOPLPUSH s d", "LMOVE s d RIGHT LEFT", "LMOVE s d LEFT LEFT", "LMPOP 2 s d LEFT COUNT 2", "RPUSH x 1", "BLPOP x 0", "BRPOP nosuch 0.01", "RPUSH y 1 2", "BLMOVE y y LEFT RIGHT 0", "LTRIM y 1 0"},
	// sorted sets
	{"ZADD z 1 a 2 b", "ZADD z 1 a", "ZADD z XX 3 a", "ZADD z NX 3 c", "ZINCRBY z 1 a", "ZADD z INCR XX 1 nope", "ZREM z nope", "ZREM z c",
		"ZREMRANGEBYSCORE z 100 200", "ZREMRANGEBYSCORE z 0 2", "ZADD z 0 x 0 y 0 z", "ZREMRANGEBYLEX z [x [y", "ZREMRANGEBYRANK z 0 0", "ZPOPMIN z", "ZPOPMAX z 5", "ZPOPMIN z", "ZSCORE z a", "ZRANGE nosuch 0 -1"},
	// sorted set operations, stores and pops over several keys
	{"ZADD a 1 x 2 y", "ZADD b 3 y 4 w", "SADD s x", "ZUNIONSTORE u 2 a b", "ZUNIONSTORE u 2 a b WEIGHTS 1 2", "ZINTERSTORE i 2 a b", "ZDIFFSTORE d 2 a b",
		"ZINTERSTORE u 2 a nosuch", "ZDIFFSTORE d 2 a a", "ZUNIONSTORE none 1 nosuch", "ZUNIONSTORE s 2 a s", "ZUNIONSTORE bad 2 a nosuch foo",
		"ZRANGESTORE r a 0 -1", "ZRANGESTORE r a 5 10", "ZRANGESTORE r2 nosuch 0 -1", "ZRANGESTORE r a -inf +inf BYSCORE LIMIT 0 1",
		"ZUNION 2 a nosuch", "ZINTER 2 a nosuch", "ZDIFF 1 nosuch", "ZINTERCARD 2 a nosuch", "ZRANDMEMBER nosuch", "ZRANDMEMBER nosuch 2", "ZRANDMEMBER r 5",
		"SET t v", "EXPIRE t 100", "ZUNIONSTORE t 1 b", "TTL t"},
	{"ZADD a 1 x 2 y 3 z", "ZMPOP 1 a MIN", "ZMPOP 2 nosuch a MAX COUNT 10", "ZMPOP 1 nosuch MIN", "ZADD b 1 x 2 y 3 z", "BZPOPMIN b 0", "BZPOPMAX nosuch b 0",
		"BZPOPMIN b 0", "BZPOPMIN nosuch 0.01", "ZADD q 1 a 2 b", "BZMPOP 0 1 q MIN COUNT 5", "BZMPOP 0.01 1 q MAX", "ZADD m 1 a", "MULTI", "BZPOPMIN m 0", "BZPOPMAX m 0", "EXEC"},
	// sets
	{"SADD s 1 2 3", "SADD s 1", "SREM s 9", "SREM s 1", "SMOVE s t 2", "SMOVE s t 9", "SMOVE s t 3", "SADD a 1 2", "SADD b 2 3",
		"SINTERSTORE d a b", "SUNIONSTORE d a b", "SDIFFSTORE d a a", "SDIFFSTORE d a b", "SPOP a 0", "SADD p 7", "SPOP p", "SADD q 1 2", "SPOP q 5", "SISMEMBER nosuch 1", "SINTERSTORE d2 nosuch b", "SUNIONSTORE d3 nosuch b", "SDIFFSTORE d3 b b"},
	// SORT: lookups of the sorted key and of BY/GET keys; STORE
	{"RPUSH l 2 1 3", "MSET w_1 3 w_2 2", "HSET h_3 f x", "SORT l", "SORT_RO l BY w_* GET # GET h_*->f", "SORT nosuch",
		"SORT l STORE d", "SORT l BY nosort STORE d", "SET t v", "EXPIRE t 100", "SORT l STORE t", "TTL t",
		"SORT nosuch STORE d", "SORT nosuch STORE d", "SORT l LIMIT 5 1 STORE t", "SET s x", "SORT s STORE d"},
	// databases: events name the key's database; MOVE, COPY ... DB, SWAPDB,
	// FLUSHDB, a script's SELECT, expiry in another database (the key lives
	// 100 ms, so that its expiry comes while BLPOP waits, not while SET's
	// events are read: with 1 ms a loaded machine once saw it there)
	{"SELECT 3", "SET lock tok NX PX 30000", "DEL lock", "RPUSH l a", "MOVE l 5", "SELECT 5", "RPUSH l b", "MOVE l 3", "SET k v EX 100", "COPY k k DB 9", "COPY k k2",
		"COPY k k DB 9 REPLACE", "SWAPDB 5 9", "DEL k", "SELECT 9", "DEL k", "FLUSHDB", "SELECT 0", "SET z 1",
		"EVAL \"redis.call('select', 7); redis.call('set', 'a', 1); redis.call('select', 2); return redis.call('del', 'a')\" 0", "DEL z", "SELECT 4", "SET e v PX 100", "BLPOP nosuch 0.4", "GET e",
		"MULTI", "SET m 1", "SELECT 6", "SET m 6", "EXEC", "SET m again", "SELECT 1", "SET x 1", "FLUSHALL"},
	// scripts, MULTI, the lock workloads
	{"SET lock tok NX PX 30000", "EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end\" 1 lock tok 60000",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 lock tok", "MULTI", "SET a 1", "INCR a", "EXEC"},
}

// TestNotifyDiff enables every class of keyspace notification on both
// servers, runs notifyCases on one connection, and after each command
// reads, on a second connection subscribed to every notification channel,
// everything published up to a PING's reply: the events, in order, must
// be Redis's, and so must the keyspace hits and misses INFO counts after
// each command (outside MULTI).
func TestNotifyDiff(t *testing.T) {
	redisAddr := startRedis73(t, "", "enable-debug-command", "yes") // DEBUG SET-ACTIVE-EXPIRE
	tumblerAddr := server.RunT(t).Addr()
	for _, flags := range []string{"KEA", "Kgx", "Eh$", "KElmn", "Kz", "Ks"} {
		for i, cmds := range notifyCases {
			want := notifyRun(t, redisAddr, flags, cmds)
			got := notifyRun(t, tumblerAddr, flags, cmds)
			if flags == "KEA" && i == 0 && !strings.Contains(want[0], "__keyspace@0__:k=set") {
				t.Fatalf("Redis published no events: %s", want[0]) // the test would compare nothing
			}
			for j := range cmds {
				if want[j] != got[j] {
					t.Errorf("flags %s, case %d, %q:\n redis:   %s\n tumbler: %s", flags, i, cmds[j], want[j], got[j])
				}
			}
		}
	}
}

// notifyRun returns, for each command, its reply and the notifications it
// published, as text.
func notifyRun(t *testing.T, addr, flags string, cmds []string) []string {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	sub, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	for _, cmd := range [][]string{{"FLUSHALL"}, {"CONFIG", "RESETSTAT"}, {"CONFIG", "SET", "notify-keyspace-events", flags}} {
		if r, err := c.do(cmd...); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("%v: %q %v", cmd, r, err)
		}
	}
	defer c.do("CONFIG", "SET", "notify-keyspace-events", "")
	if _, err := sub.do("PSUBSCRIBE", "__key*__:*"); err != nil {
		t.Fatal(err)
	}
	var out []string
	inMulti := false
	for _, line := range cmds {
		args, err := Split(line)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := c.do(args...)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var events []string
		sub.c.SetDeadline(time.Now().Add(ioTimeout))
		if _, err := sub.c.Write(Encode([]string{"PING", "end"})); err != nil {
			t.Fatal(err)
		}
		for {
			r, err := ReadReply(sub.r)
			if err != nil {
				t.Fatalf("%s: reading notifications: %v", line, err)
			}
			if bytes.Contains(r, []byte("$4\r\npong\r\n")) {
				break
			}
			_, el, ok := Elements(r)
			if !ok || len(el) != 4 {
				t.Fatalf("%s: unexpected frame %q", line, r)
			}
			events = append(events, fmt.Sprintf("%s=%s", bulk(el[2]), bulk(el[3])))
		}
		stats := ""
		switch strings.ToUpper(args[0]) {
		case "MULTI":
			inMulti = true
		case "EXEC", "DISCARD":
			inMulti = false
		}
		if !inMulti {
			stats = keyspaceStats(t, c)
		}
		out = append(out, fmt.Sprintf("%q [%s] %s", reply, strings.Join(events, " "), stats))
	}
	return out
}

// keyspaceStats returns INFO's keyspace_hits and keyspace_misses.
func keyspaceStats(t *testing.T, c *conn) string {
	t.Helper()
	r, err := c.do("INFO", "stats")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := bulkText(r)
	var fields []string
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "keyspace_hits:") || strings.HasPrefix(l, "keyspace_misses:") {
			fields = append(fields, l)
		}
	}
	if len(fields) != 2 {
		t.Fatalf("INFO stats without keyspace_hits/misses: %q", info)
	}
	return strings.Join(fields, " ")
}

func bulk(b []byte) string {
	if s, ok := bulkText(b); ok {
		return s
	}
	return string(b)
}
