package diff

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// dirtyCases are command sequences after each of which INFO persistence's
// rdb_changes_since_last_save (Redis's server.dirty) is read: how much
// each command added to it, and its reply, must be Redis 7.0's. Each case
// runs on a flushed server with active expiry off (DEBUG
// SET-ACTIVE-EXPIRE 0: a key past its deadline stays until a lookup, or
// a FLUSH counts it). Inside MULTI nothing is read: EXEC's step shows
// what the whole transaction added.
//
// Step forms besides a command:
//   - "~CMD ...": CMD's reply is not compared (it is random), its count is;
//   - "@b CMD ...": CMD is sent on a second connection and left blocked
//     (the step waits until the server counts it in blocked_clients);
//   - "@b<": the second connection's reply, once served or timed out;
//   - "@sleep 5ms": a pause;
//   - "@frestore POLICY": FUNCTION DUMP, then FUNCTION RESTORE of its
//     payload with POLICY (the step's reply is RESTORE's);
//   - "@T" in an argument is the port of a redis-server MIGRATE targets.
var dirtyCases = [][]string{
	// SET and its options: +1 whenever it sets, NX/XX/conditions that
	// stop it and errors add nothing
	{"SET k v", "SET k v", "SET k v NX", "SET n v XX", "SET k v2 XX GET", "SET k v3 NX GET", "SET k v EX 100", "SET k v KEEPTTL", "SET k v PX 0", "SET k v EX x",
		"SET k v EXAT 1", "EXISTS k", "SET k v PXAT 1", "SETNX k v", "SETNX k2 v", "SETEX k 100 v", "SETEX k 0 v", "PSETEX k 100000 v", "PSETEX k -1 v",
		"HSET h f v", "SET h v GET", "SET h v", "SET k v BOGUS"},
	{"SET k v", "GETSET k w", "GETSET nosuch w", "HSET h f v", "GETSET h x", "GETDEL k", "GETDEL k", "GETDEL h", "GET nosuch"},
	{"SET g v", "GETEX g", "GETEX g EX 100", "GETEX g EX 100", "GETEX g PX 100000", "GETEX g PERSIST", "GETEX g PERSIST", "GETEX g EXAT 99999999999", "GETEX g PXAT 1",
		"EXISTS g", "GETEX nosuch EX 10", "SET g v", "GETEX g EX 0", "GETEX g EX x", "HSET h f v", "GETEX h PERSIST"},
	{"MSET a 1 b 2 c 3", "MSET a 1 b", "MSETNX a 1 d 4", "MSETNX d 4 e 5", "MSET a 1 a 2"},
	{"APPEND s ab", "APPEND s cd", "APPEND s \"\"", "HSET h f v", "APPEND h x"},
	{"INCR i", "INCRBY i 5", "DECR i", "DECRBY i 2", "INCRBY i x", "DECRBY i -9223372036854775808", "SET i 9223372036854775807", "INCR i", "SET s abc", "INCR s",
		"INCRBYFLOAT f 1.5", "INCRBYFLOAT f x", "INCRBYFLOAT s 1", "SET f 1e308", "INCRBYFLOAT f 1e308", "HSET h f v", "INCR h", "SET e v PX 1", "@sleep 5ms", "INCR e"},
	// bits: SETBIT only when the bit or the length changes; BITFIELD per
	// changed value; BITOP +1 when it stores or deletes
	{"SETBIT b 7 1", "SETBIT b 7 1", "SETBIT b 7 0", "SETBIT b 20 0", "SETBIT b 20 0", "SETBIT b -1 1", "SETBIT b 0 2", "SET i 12", "SETBIT i 0 0", "GETBIT b 7",
		"SETRANGE r 2 ab", "SETRANGE r 0 ab", "SETRANGE r 0 \"\"", "SETRANGE nosuch 5 \"\"", "SETRANGE r -1 x", "HSET h f v", "SETRANGE h 0 x",
		"BITOP OR d b r", "BITOP AND d nosuch nosuch2", "BITOP AND d nosuch", "BITOP AND d2 nosuch", "BITOP NOT d b", "BITOP NOT d b r", "BITOP OR d b h", "BITOP BOGUS d b",
		"BITFIELD f SET u8 0 1", "BITFIELD f SET u8 0 1", "BITFIELD f INCRBY u8 0 0", "BITFIELD f INCRBY u8 0 1 SET u8 8 5 SET u8 8 5 GET u8 0", "BITFIELD f GET u8 0",
		"BITFIELD nosuch GET u8 0", "BITFIELD_RO f GET u8 0", "BITFIELD g INCRBY u8 0 0", "BITFIELD g2 SET u8 0 0 SET u8 0 0",
		"BITFIELD f OVERFLOW FAIL INCRBY u8 0 255", "BITFIELD f OVERFLOW SAT INCRBY u8 0 255", "BITFIELD f OVERFLOW SAT INCRBY u8 0 255", "BITFIELD f SET u8 100 0", "BITFIELD h GET u8 0", "BITFIELD f SET x 0 1"},
	// keys
	{"MSET a 1 b 2 c 3", "DEL a b nosuch", "DEL a", "UNLINK c nosuch", "UNLINK nosuch", "SET e v PX 1", "@sleep 5ms", "DEL e", "TOUCH nosuch"},
	{"SET k v", "EXPIRE k 100", "EXPIRE k 100", "PEXPIRE k 100000", "EXPIREAT k 99999999999", "PEXPIREAT k 99999999999000", "EXPIRE nosuch 100",
		"EXPIRE k 100 NX", "EXPIRE k 200 XX", "EXPIRE k 10 GT", "EXPIRE k 1000 GT", "EXPIRE k 2000 LT", "EXPIRE k 20 LT", "EXPIRE k 100 NX XX", "EXPIRE k x", "EXPIRE k 100 BOGUS",
		"PERSIST k", "PERSIST k", "PERSIST nosuch", "EXPIRE k 100 XX", "EXPIRE k 100 NX", "EXPIRE k -1", "EXISTS k", "SET k v", "PEXPIREAT k 1", "SET k v", "EXPIREAT k 0",
		"SET e v PX 1", "@sleep 5ms", "EXPIRE e 100", "PERSIST e"},
	{"SET a 1", "RENAME a b", "RENAME b b", "RENAME nosuch x", "RENAMENX b c", "SET d 2", "RENAMENX c d", "RENAMENX d d", "RENAME c d", "RENAME nosuch nosuch",
		"COPY d e", "COPY d e", "COPY d e REPLACE", "COPY nosuch e", "COPY d d", "COPY d e DB 3", "COPY d e DB 3", "COPY d e DB 99", "COPY d e BOGUS",
		"MOVE d 5", "MOVE d 5", "SET d x", "MOVE d 5", "MOVE d 0", "MOVE d x", "MOVE nosuch 1"},
	{"SET a 1", "SWAPDB 0 1", "SWAPDB 1 1", "SWAPDB 0 99", "SWAPDB x 1", "SELECT 1", "SET b 2", "SET c 3", "SET e v PX 1", "@sleep 5ms", "DBSIZE", "FLUSHDB", "FLUSHDB", "FLUSHDB ASYNC", "FLUSHDB BOGUS",
		"SET a 1", "SELECT 2", "MSET x 1 y 2", "SET e v PX 1", "@sleep 5ms", "SELECT 0", "SET z 1", "FLUSHALL", "FLUSHALL", "FLUSHALL SYNC", "FLUSHALL BOGUS"},
	// DUMP and RESTORE: +1 when it stores; +1 when REPLACE deleted a key
	// and the TTL was already past
	{"SET k v", "EVAL \"redis.call('restore', 'r', 0, redis.call('dump', 'k')) return redis.call('restore', 'r2', 0, redis.call('dump', 'k'), 'REPLACE')\" 0",
		"EVAL \"return redis.call('restore', 'r', 0, redis.call('dump', 'k'))\" 0",
		"EVAL \"return redis.call('restore', 'r', 100000, redis.call('dump', 'k'), 'REPLACE')\" 0",
		"EVAL \"return redis.call('restore', 'r', 1, redis.call('dump', 'k'), 'REPLACE', 'ABSTTL')\" 0",
		"EVAL \"return redis.call('restore', 'r', 1, redis.call('dump', 'k'), 'REPLACE', 'ABSTTL')\" 0",
		"EVAL \"return redis.call('restore-asking', 'ra', 0, redis.call('dump', 'k'))\" 0",
		"RESTORE x 0 bad", "RESTORE k -1 x", "DUMP k"},
	// MIGRATE: +1 for each key it deletes here; COPY deletes none
	{"SET k v", "RPUSH l a", "SET k2 v2", "MIGRATE 127.0.0.1 @T k 0 1000", "MIGRATE 127.0.0.1 @T nosuch 0 1000", "MIGRATE 127.0.0.1 @T \"\" 3 1000 KEYS l k2 nosuch",
		"SET c v", "MIGRATE 127.0.0.1 @T c 0 1000 COPY", "MIGRATE 127.0.0.1 @T c 0 1000 COPY", "MIGRATE 127.0.0.1 @T c 0 1000 REPLACE", "EXISTS c"},
	// SORT ... STORE: the elements stored, or +1 for deleting the
	// destination; plain SORT nothing
	{"RPUSH l 2 1 3", "SORT l", "SORT l STORE d", "SORT l STORE d", "MSET w_1 3 w_2 2", "SORT l BY w_* GET # GET w_* STORE d", "SORT l LIMIT 0 1 STORE d",
		"SORT nosuch STORE d", "SORT nosuch STORE d", "SORT l LIMIT 5 1 STORE d", "SET s x", "SORT s STORE d", "SORT_RO l", "SORT l STORE"},
	// hashes: HSET/HMSET every field given, new or not
	{"HSET h a 1 b 2", "HSET h a 1", "HSET h a 3 c 4", "HSET h a", "HMSET h d 4 e 5", "HSETNX h a 1", "HSETNX h z 1", "HINCRBY h n 5", "HINCRBY h a x", "HINCRBY h z 1",
		"HSET h s abc", "HINCRBY h s 1", "HINCRBYFLOAT h x 1.5", "HINCRBYFLOAT h s 1", "HINCRBYFLOAT h x inf", "HDEL h a nosuch b", "HDEL h nosuch", "HDEL nosuch a",
		"HDEL h c d e n x z s", "EXISTS h", "SET str v", "HSET str f v", "HDEL str f", "HINCRBY str f 1"},
	// lists: one per element pushed, popped, removed, trimmed
	{"LPUSH l a b c", "RPUSH l d", "LPUSHX l e f", "RPUSHX nosuch x", "LPUSHX nosuch x", "LINSERT l BEFORE c z", "LINSERT l BEFORE nosuch z", "LINSERT l AFTER a y", "LINSERT nosuch AFTER a y",
		"LSET l 0 y", "LSET l 100 y", "LSET nosuch 0 y", "LREM l 0 nosuch", "LREM l 1 y", "RPUSH l y y y", "LREM l 0 y", "LREM l -1 a", "LTRIM l 0 -1", "LTRIM l 1 2", "LTRIM nosuch 0 1",
		"LPOP l", "RPOP l 0", "RPUSH l 1 2 3", "LPOP l 2", "RPOP l 10", "RPOP l", "LPOP nosuch", "LPOP nosuch 2", "LPOP l -1",
		"RPUSH l2 a b", "LTRIM l2 5 10", "EXISTS l2", "SET s v", "LPUSH s x", "LPOP s", "LTRIM s 0 1"},
	{"RPUSH s a b c d", "LMOVE s d LEFT RIGHT", "RPOPLPUSH s d", "LMOVE s s LEFT RIGHT", "LMOVE nosuch d LEFT LEFT", "LMOVE s d UP LEFT", "SET str v", "LMOVE s str LEFT LEFT",
		"LMPOP 2 nosuch s LEFT COUNT 5", "LMPOP 1 s LEFT", "LMPOP 2 nosuch d RIGHT", "LMPOP 1 nosuch LEFT", "LMPOP 0 s LEFT", "LMPOP 1 str LEFT",
		"RPUSH x 1 2 3", "BLPOP x 0", "BRPOP nosuch x 0", "BLMPOP 0 1 x LEFT COUNT 5", "BLPOP nosuch 0.01", "RPUSH y 1 2", "BLMOVE y z LEFT RIGHT 0", "BRPOPLPUSH y z 0", "BLMOVE y z LEFT RIGHT 0.01",
		"BLPOP str 0"},
	// sets: members added and removed; SMOVE one per key changed
	{"SADD s 1 2 3", "SADD s 1", "SADD s 1 4 4 5", "SREM s 9", "SREM s 1 2 9", "SREM nosuch 1", "SMOVE s t 3", "SMOVE s t 9", "SADD t 4", "SMOVE s t 4", "SMOVE s s 5", "SMOVE nosuch t 1",
		"SMOVE s t 5", "EXISTS s", "SET str v", "SADD str 1", "SMOVE t str 3", "SREM str 1"},
	{"SADD p 7", "SPOP p", "SPOP p", "SADD q 1 2 3 4 5 6 7 8 9 10", "~SPOP q 2", "SPOP q 0", "SPOP nosuch 2", "~SPOP q 100", "SADD q 1 2", "SPOP q -1", "SPOP q 1 2",
		"SADD big 1 2 3 4 5 6 7 8 9 10 11 12", "~SPOP big 11", "~SPOP big"},
	{"SADD a 1 2", "SADD b 2 3", "SINTERSTORE d a b", "SUNIONSTORE d a b", "SDIFFSTORE d a b", "SDIFFSTORE d a a", "SDIFFSTORE d a a", "SINTERSTORE d nosuch b", "SINTERSTORE d a nosuch",
		"SUNIONSTORE d nosuch", "SET d v", "SUNIONSTORE d nosuch", "SET str v", "SINTERSTORE d a str", "SINTER a b"},
	// sorted sets: members added or whose score changed, removed, popped
	{"ZADD z 1 a 2 b", "ZADD z 1 a 2 b", "ZADD z 1 a 3 b", "ZADD z NX 5 a 5 c", "ZADD z XX 5 a 5 d", "ZADD z GT 1 a", "ZADD z GT 9 a", "ZADD z LT 9 a", "ZADD z LT 1 a",
		"ZADD z CH 2 a 7 e", "ZADD z INCR 1 a", "ZADD z XX INCR 1 nope", "ZINCRBY z 2 b", "ZINCRBY z 0 b", "ZADD z x a", "ZADD z NX XX 1 a", "ZADD z 1", "ZADD nosuch XX 1 a", "EXISTS nosuch",
		"ZADD inf +inf m", "ZINCRBY inf -inf m", "ZADD inf INCR -inf m", "ZADD inf 1 m 2 n -inf m", "ZREM z nope", "ZREM z a b nope", "ZREM nosuch a", "SET str v", "ZADD str 1 a", "ZINCRBY str 1 a"},
	{"ZADD z 1 a 2 b 3 c 4 d 5 e 6 f", "ZREMRANGEBYSCORE z 100 200", "ZREMRANGEBYSCORE z 0 2", "ZREMRANGEBYRANK z 0 0", "ZREMRANGEBYRANK z 5 9", "ZADD l 0 x 0 y 0 z",
		"ZREMRANGEBYLEX l [x [y", "ZREMRANGEBYLEX l - +", "EXISTS l", "ZREMRANGEBYSCORE nosuch 0 1", "ZREMRANGEBYSCORE z x 1",
		"ZPOPMIN z", "ZPOPMAX z 0", "ZPOPMAX z 5", "ZPOPMIN z", "ZADD y 1 a 2 b 3 c", "ZMPOP 1 y MIN", "ZMPOP 2 nosuch y MAX COUNT 10", "ZMPOP 1 nosuch MIN",
		"ZADD b 1 x 2 y 3 z", "BZPOPMIN b 0", "BZPOPMAX nosuch b 0", "BZMPOP 0 1 b MIN COUNT 5", "BZPOPMIN nosuch 0.01", "BZMPOP 0.01 1 nosuch MAX"},
	{"ZADD a 1 x 2 y", "ZADD b 3 y 4 w", "ZUNIONSTORE u 2 a b", "ZINTERSTORE i 2 a b", "ZDIFFSTORE d 2 a b", "ZINTERSTORE u 2 a nosuch", "ZINTERSTORE u 2 a nosuch",
		"ZDIFFSTORE d 2 a a", "ZUNIONSTORE bad 2 a nosuch foo", "ZRANGESTORE r a 0 -1", "ZRANGESTORE r a 5 10", "ZRANGESTORE r2 nosuch 0 -1", "ZRANGESTORE r a -inf +inf BYSCORE LIMIT 0 1",
		"ZUNION 2 a b", "ZRANGESTORE r a 0 x", "SADD s x", "ZUNIONSTORE s2 2 a s"},
	// scripts: the counts of the commands they run, the lock scripts on
	// their native paths included
	{"EVAL \"redis.call('set', 'a', '1') redis.call('incr', 'a') return redis.call('del', 'a', 'b')\" 0",
		"EVAL \"redis.call('set', 'a', 'x') return redis.call('lpush', 'a', 'y')\" 0",
		"EVAL \"redis.call('rpush', 'l', 1, 2, 3) return redis.pcall('incr', 'l')\" 0",
		"EVAL \"return redis.call('get', 'a')\" 0", "EVAL_RO \"return redis.call('get', 'a')\" 0", "EVAL_RO \"return redis.call('set', 'a', 1)\" 0",
		"EVAL \"redis.call('select', 3) redis.call('set', 'x', 1) redis.call('select', 0) return redis.call('mset', 'p', 1, 'q', 2)\" 0",
		"SCRIPT LOAD \"" + dirtySetScript + "\"", "EVALSHA " + sha1hex(dirtySetScript) + " 1 k v", "EVALSHA 0000000000000000000000000000000000000000 0", "SCRIPT FLUSH",
		"EVAL \"return redis.error_reply('x')\" 0"},
	{"SET lock tok NX PX 30000", "SET lock tok NX PX 30000",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end\" 1 lock tok 60000",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end\" 1 lock other 60000",
		"~EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pttl', KEYS[1]) else return 0 end\" 1 lock tok",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 lock other",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 lock tok",
		"EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 lock tok",
		"SET lock tok NX PX 30000",
		"SCRIPT LOAD \"" + dirtyReleaseScript + "\"",
		"EVALSHA " + sha1hex(dirtyReleaseScript) + " 1 lock other", "EVALSHA " + sha1hex(dirtyReleaseScript) + " 1 lock tok", "SET lock tok NX PX 30000",
		"EVAL \"local v = redis.call('get', KEYS[1]) if v == ARGV[1] then return redis.call('del', KEYS[1]) elseif v == false then return -1 else return 0 end\" 1 lock tok",
		"SET lock tok NX PX 30000",
		"EVAL \"local v = redis.call('get', KEYS[1]) if v == ARGV[1] then return redis.call('del', KEYS[1]) elseif v == false then return -1 else return 0 end\" 1 lock tok",
		"EVAL \"local v = redis.call('get', KEYS[1]) if v == ARGV[1] then return redis.call('del', KEYS[1]) elseif v == false then return -1 else return 0 end\" 1 lock tok",
		"SET lock tok NX PX 30000",
		"EVAL \"local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end redis.call('pexpire', KEYS[1], ARGV[2]) return 1\" 1 lock tok 5000",
		"EVAL \"local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1\" 1 lock other",
		"EVAL \"local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end redis.call('del', KEYS[1]) return 1\" 1 lock tok",
		"SET lock other PX 30000", "DEL lock"},
	// functions: LOAD, DELETE, FLUSH and RESTORE +1 each; FCALL its commands
	{"FUNCTION LOAD \"#!lua name=dl\\nredis.register_function('w', function(keys, args) redis.call('set', keys[1], args[1]) return redis.call('incr', 'n') end)\"",
		"FUNCTION LOAD \"#!lua name=dl\\nredis.register_function('w', function() return 1 end)\"",
		"FUNCTION LOAD REPLACE \"#!lua name=dl\\nredis.register_function('w', function(keys, args) redis.call('set', keys[1], args[1]) return redis.call('incr', 'n') end)\"",
		"FUNCTION LOAD \"#!lua name=bad\\nreturn 1\"", "FCALL w 1 k v", "FCALL_RO w 1 k v", "FCALL nosuch 0",
		"EVAL \"return redis.call('function', 'dump')\" 0", "FUNCTION DELETE nosuch",
		"@frestore APPEND", "@frestore REPLACE", "@frestore FLUSH", "FUNCTION RESTORE bad", "FUNCTION RESTORE bad BOGUS",
		"EVAL \"redis.call('function', 'delete', 'dl') return 1\" 0", "FUNCTION DELETE dl", "FUNCTION FLUSH", "FUNCTION FLUSH BOGUS", "@frestore APPEND",
		"FUNCTION LOAD \"#!lua name=dl\\nredis.register_function('w', function() return 1 end)\"", "FUNCTION DELETE dl"},
	// MULTI/EXEC: what its commands add; nothing when it aborts
	{"MULTI", "SET a 1", "INCR a", "DEL a nosuch", "RPUSH l 1 2", "EXEC", "MULTI", "SET a 1", "INCR", "EXEC", "MULTI", "SET a x", "INCR a", "LPUSH l 3", "EXEC",
		"MULTI", "SET a 1", "DISCARD", "WATCH a", "SET a 2", "MULTI", "SET a 3", "EXEC", "WATCH a", "MULTI", "MSET a 4 b 5", "EXEC", "MULTI", "EVAL \"return redis.call('set', 'c', 1)\" 0", "EXEC"},
	// keys past their deadline: reclaiming one adds nothing (lazily or on
	// write), replacing it adds the write
	{"SET e v PX 1", "@sleep 5ms", "GET e", "SET e v PX 1", "@sleep 5ms", "SET e v2 NX", "SET e v PX 1", "@sleep 5ms", "EXISTS e", "SET e v PX 1", "@sleep 5ms", "LPUSH e x",
		"RPUSH e2 a", "PEXPIRE e2 1", "@sleep 5ms", "LPOP e2", "SADD e3 a", "PEXPIRE e3 1", "@sleep 5ms", "SREM e3 a", "DBSIZE"},
	// blocked clients served: Redis 7.0 counts what BLMPOP and the sorted
	// set pops take, not BLPOP's, BRPOP's, BLMOVE's or BRPOPLPUSH's element
	{"@b BLPOP bl 0", "LPUSH bl a", "@b<", "@b BRPOP bl 0", "RPUSH bl a b", "@b<", "DEL bl",
		"@b BLMOVE src dst LEFT RIGHT 0", "RPUSH src x", "@b<", "@b BRPOPLPUSH src dst 0", "LPUSH src y z", "@b<",
		"@b BLMPOP 0 2 nosuch bm LEFT COUNT 3", "RPUSH bm a b", "@b<", "@b BLMPOP 0 1 bm RIGHT", "RPUSH bm c d", "@b<",
		"@b BZPOPMIN bz 0", "ZADD bz 1 a 2 b", "@b<", "@b BZPOPMAX bz2 nosuch 0", "ZADD bz2 3 c", "@b<", "@b BZMPOP 0 1 bz3 MAX COUNT 5", "ZADD bz3 1 a 2 b 3 c", "@b<",
		"SET str v", "@b BLMOVE bw str LEFT RIGHT 0", "RPUSH bw x", "@b<",
		"@b BLPOP tx 0", "MULTI", "LPUSH tx a", "LPUSH tx b", "EXEC", "@b<", "DEL tx",
		"@b BLPOP sc 0", "EVAL \"redis.call('lpush', 'sc', 'a', 'b') return redis.call('lpush', 'sc', 'c')\" 0", "@b<", "DEL sc",
		"@b BZMPOP 0 1 zs MIN COUNT 2", "EVAL \"return redis.call('zadd', 'zs', 1, 'a', 2, 'b', 3, 'c')\" 0", "@b<",
		"@b BLPOP sw 0", "SELECT 1", "RPUSH sw a", "SWAPDB 0 1", "@b<", "SELECT 0", "FLUSHALL",
		"@b BLPOP nosuch 0.5", "@b<", "@b BZPOPMIN nosuch 0.5", "@b<"},
}

// The scripts EVALSHA runs in dirtyCases: one of them on the native path
// of the lock scripts (luavm/native.go).
const (
	dirtySetScript     = "return redis.call('set', KEYS[1], ARGV[1])"
	dirtyReleaseScript = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
)

// TestDirtyDiff runs dirtyCases on redis-server 7.0 and tumbler and
// compares, command by command, the reply and what the command added to
// rdb_changes_since_last_save. Redis runs with save "" (StartRedis), as
// tumbler behaves: nothing ever resets the counter.
func TestDirtyDiff(t *testing.T) {
	redisAddr := proc.StartRedis(t, "--enable-debug-command", "yes")
	tumblerAddr := server.RunT(t).Addr()
	targetAddr := startRedis(t)
	if v := readInfoValue(t, redisAddr, "server", "redis_version"); !strings.HasPrefix(v, "7.0.") {
		t.Skipf("redis-server is %s: the counts are Redis 7.0's (7.2 counts a served BLPOP)", v)
	}
	_, targetPort, _ := strings.Cut(targetAddr, ":")
	verbose := os.Getenv("TUMBLER_DIFF_VERBOSE") == "1"
	nonzero := 0
	for i, steps := range dirtyCases {
		cmds := make([]string, len(steps))
		for j, s := range steps {
			cmds[j] = strings.ReplaceAll(s, "@T", targetPort)
		}
		want := dirtyRun(t, redisAddr, targetAddr, cmds)
		got := dirtyRun(t, tumblerAddr, targetAddr, cmds)
		for j := range cmds {
			if k := strings.LastIndex(want[j], " +"); k >= 0 && want[j][k:] != " +0" {
				nonzero++
			}
			if verbose {
				t.Logf("case %d, %q: %s", i, cmds[j], want[j])
			}
			if want[j] != got[j] {
				t.Errorf("case %d, %q:\n redis:   %s\n tumbler: %s", i, cmds[j], want[j], got[j])
			}
		}
	}
	t.Logf("%d steps changed Redis's counter", nonzero)
	if nonzero < 100 {
		t.Errorf("only %d commands changed Redis's counter: the test compares little", nonzero)
	}
}

// dirtyRun returns, for each step of cmds, its reply and what it added
// to rdb_changes_since_last_save, as text.
func dirtyRun(t *testing.T, addr, target string, cmds []string) []string {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var b *conn // the blocking client, dialed on first use
	defer func() {
		if b != nil {
			b.close()
		}
	}()
	for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "0"}} {
		if r, err := c.do(cmd...); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("%s: %v: %q %v", addr, cmd, r, err)
		}
	}
	defer c.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	if tc, err := dial(target); err != nil {
		t.Fatal(err)
	} else {
		tc.do("FLUSHALL")
		tc.close()
	}
	before := dirtyCount(t, c)
	var out []string
	inMulti := false
	blocked := 0
	for _, line := range cmds {
		var reply []byte
		switch {
		case strings.HasPrefix(line, "@sleep "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "@sleep "))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(d)
			out = append(out, "")
			continue
		case strings.HasPrefix(line, "@b "):
			args, err := Split(strings.TrimPrefix(line, "@b "))
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				if b, err = dial(addr); err != nil {
					t.Fatal(err)
				}
			}
			b.c.SetDeadline(time.Now().Add(ioTimeout))
			if _, err := b.c.Write(Encode(args)); err != nil {
				t.Fatal(err)
			}
			blocked++
			waitBlocked(t, c, blocked)
			reply = []byte("(blocked)")
		case strings.HasPrefix(line, "@frestore "):
			dump, err := c.do("FUNCTION", "DUMP")
			if err != nil {
				t.Fatal(err)
			}
			payload, ok := bulkText(dump)
			if !ok {
				t.Fatalf("%s: FUNCTION DUMP: %q", addr, dump)
			}
			if reply, err = c.do("FUNCTION", "RESTORE", payload, strings.TrimPrefix(line, "@frestore ")); err != nil {
				t.Fatal(err)
			}
		case line == "@b<":
			b.c.SetDeadline(time.Now().Add(ioTimeout))
			reply, err = ReadReply(b.r)
			if err != nil {
				t.Fatalf("%s: reading the blocked client's reply: %v", addr, err)
			}
			blocked--
		default:
			args, err := Split(strings.TrimPrefix(line, "~"))
			if err != nil {
				t.Fatal(err)
			}
			if reply, err = c.do(args...); err != nil {
				t.Fatalf("%s: %s: %v", addr, line, err)
			}
			if strings.HasPrefix(line, "~") {
				reply = []byte("(not compared)")
			}
			switch strings.ToUpper(args[0]) {
			case "MULTI":
				inMulti = string(reply) == "+OK\r\n"
			case "EXEC", "DISCARD":
				inMulti = false
			}
		}
		if inMulti {
			out = append(out, fmt.Sprintf("%q", reply))
			continue
		}
		after := dirtyCount(t, c)
		out = append(out, fmt.Sprintf("%q +%d", reply, after-before))
		before = after
	}
	return out
}

// dirtyCount reads INFO persistence's rdb_changes_since_last_save.
func dirtyCount(t *testing.T, c *conn) int64 {
	t.Helper()
	v := infoValue(t, c, "persistence", "rdb_changes_since_last_save")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("rdb_changes_since_last_save: %q", v)
	}
	return n
}

// waitBlocked waits until INFO clients counts n blocked clients.
func waitBlocked(t *testing.T, c *conn, n int) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for infoValue(t, c, "clients", "blocked_clients") != strconv.Itoa(n) {
		if time.Now().After(deadline) {
			t.Fatalf("no %d blocked clients after %v", n, ioTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// infoValue reads one field of an INFO section.
func infoValue(t *testing.T, c *conn, section, field string) string {
	t.Helper()
	r, err := c.do("INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	body := string(r)
	if i := strings.Index(body, "\r\n"); i >= 0 {
		body = strings.TrimPrefix(body[i+2:], "txt:") // the bulk or verbatim header
	}
	for _, l := range strings.Split(body, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s: %q", section, field, body)
	return ""
}

// readInfoValue is infoValue on a connection of its own.
func readInfoValue(t *testing.T, addr, section, field string) string {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	return infoValue(t, c, section, field)
}
