// Package goclients proves that unmodified Go Redis lock clients — go-redis
// v9 (RESP3 and RESP2), redsync, bsm/redislock, go-zero's RedisLock and
// rueidis (with DisableCache and with its defaults, client-side caching
// on) — work against tumbler with their default settings.
//
// It also puts under contention the lock protocols of clients that cannot
// run here and are otherwise proven by compat/replay (Redisson RLock and
// RFencedLock, Spring RedisLockRegistry, python-redis-lock,
// StackExchange.Redis, redis-py 8, Jedis and Lettuce): lockfamilies_test.go
// speaks each one's commands with go-redis, with the script bytes read from
// its replay file, and requires zero overlaps.
//
// Everything is in the tests: each one starts its own tumbler on a free
// loopback port with server.RunT.
package goclients
