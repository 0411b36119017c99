// Package goclients proves that unmodified Go Redis lock clients — go-redis
// v9 (RESP3 and RESP2), redsync, bsm/redislock, go-zero's RedisLock and
// rueidis — work against tumbler with their default settings.
//
// Everything is in the tests: each one starts its own tumbler on a free
// loopback port with server.RunT.
package goclients
