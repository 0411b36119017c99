// Package bench measures lock throughput and latency against any
// Redis-protocol server — tumbler in-process (server.RunT), tumbler as a
// process, redis-server — and checks mutual exclusion while it runs.
// cmd/tumbler-bench is its command line; Run is the same body for Go code
// and tests.
//
// # Workloads
//
//   - cycle: uncontended acquire and release, SET key token NX PX ttl then
//     EVALSHA of the compare-and-delete script (ReleaseScript); each worker
//     has its own keys.
//   - contended: every worker picks one of Keys hot keys at random and
//     retries with jitter until it gets it, holds it for Hold, releases it.
//   - extend: the watchdog pattern; each worker acquires one key, then
//     extends it over and over with the compare-and-PEXPIRE script
//     (ExtendScript).
//   - pipelined: Pipeline acquires of distinct keys in one pipeline, then
//     the releases in a second.
//   - redlock: acquire on a majority of Addrs (requests to all in flight at
//     once), release on all; retry with jitter without a majority. An
//     attempt waits NodeTimeout (default TTL/20, redsync's factor, at
//     least 1s) for the addresses' replies to its acquires, and again for
//     those to its releases. An address that has not answered by then (a
//     stalled process, a partition that drops packets), or whose
//     connection fails, fails the attempt (an error each, named): its
//     connection is closed, never to be read again, and the attempts that
//     follow go on without it, still needing a majority of all Addrs, as
//     Redlock does. A new connection to it is tried NodeTimeout later (at
//     least 100ms), and as often again while it stays down, so its
//     reconnects hold up one attempt at a time, not every one; once one
//     answers, the address's other connections are replaced at their
//     next attempt (Result.Reconnects). An address that cannot be
//     reached at the start is tried the same way. Without a majority
//     connected or due a reconnect, workers wait for the next. An address
//     that answers slowly within NodeTimeout sets the pace of every
//     acquire, and a majority that took longer than the TTL to get is not
//     counted as a lock. A lock is an op once a majority of Addrs
//     answered its release (as redsync's Unlock needs a majority): with
//     fewer, it stays held on the others until its TTL, and the attempt
//     is not an op (nor in the latency), as a cycle whose release failed
//     is not; each release that failed counts as an error.
//   - fill: set exactly Keys locks (12-byte keys with the default prefix,
//     32-byte tokens, PX ttl) and leave them held, to measure memory. A
//     key already held (SET NX refused) is counted as busy, and the run
//     as an error: the server holds fewer new locks than Keys.
//   - massexpiry: load Keys locks (default 1,000,000) whose deadlines fall
//     within Window (100 ms) Lead after loading starts (SET key tok PXAT,
//     in the server's TIME, so it works against any server), then, while
//     the deadlines pass, GET keys that stay from every worker and poll
//     DBSIZE on another connection until it is back to what it was before
//     loading, or Duration after the last deadline. It reports the GET
//     latency in the reclaim window (first deadline to all gone) and
//     before it, and when the keys were gone (MassExpiry). Keys gone
//     before their deadline, or loading that ends after the first
//     deadline, count as errors; a slow reclaim is a finding, not one.
//     It assumes nobody else adds or removes keys on the server meanwhile.
//
// The scripts are loaded with SCRIPT LOAD at the start; a NOSCRIPT reply
// (the server's cache was flushed) is answered by sending EVAL instead.
//
// # Mutual exclusion check
//
// Each worker records itself as the holder of a key in an in-process
// registry after the server grants the key, and clears the record before
// it sends the release. A grant to a second worker while the first is
// recorded and its lease cannot have expired yet (the lease is known to
// last until the first worker sent its SET plus the TTL) is a violation;
// one after that point is counted as an expired takeover. The check takes
// a per-key mutex, uncontended but when a key changes hands, so it costs
// little next to a network round trip.
//
// That window, from the grant's reply to the release's sending, is only
// as long as Hold. So a release or extension that finds its lock gone, or
// another's token in it, is a violation too when its reply came back less
// than the TTL after the request that began the lease was sent
// (Result.LostBeforeLease): the server ran it before the lock could have
// expired, so another client was granted, deleted or extended the lock
// while it was held. In contended this catches a double grant with no
// hold at all (the first holder's release finds the second's token); in
// cycle, pipelined and extend, whose workers own their keys, and in
// redlock (on each address that granted the attempt, on the connection
// the grant came on), it is the check. A lock a redlock node took for a
// request whose connection was then given up (a late SET, a release
// never sent) is in no check: it expires with its TTL, and that node
// refuses its key meanwhile (Busy). A server that stores nothing and
// answers every request as a success passes it: only contended's
// overlap check can see that one, the surer the longer Hold.
//
// Each double grant counts once. Both checks can see the same one: a
// grant the registry saw over a recorded holder leaves the first
// holder's release to find the second's token (or the second's to find
// the lock gone) within its lease. Such a loss, of either lease of a
// grant the registry counted, is that violation seen again: the first
// is not counted (neither in Violations nor in LostBeforeLease), a
// second one, another double grant, is.
//
// # Latency
//
// An operation's latency runs from when the worker starts it, before it
// waits for a shared connection (Conns < Workers), to the reply of its
// last request; a worker holding a lock (Hold) leaves the connection to
// others meanwhile. It is recorded in an HDR histogram (1 ns to a minute,
// 3 significant digits); nothing is excluded as warm-up. An operation
// that an I/O error cuts short (a broken connection, or a server that
// stalled until the run's cutoff; it ends its worker) is recorded too, up
// to the failure, though it is not counted as an op: the histogram may
// then hold more samples than ops.
//
// # A server that stops answering
//
// Every connection has a deadline 10s (plus Hold) past the planned end of
// the run: a worker still waiting for a reply then gives up, its wait
// counted as an error and recorded in the latency (it ends that worker,
// WorkersStopped), so a stalled server makes a run last Duration + 10s +
// Hold at most. fill, which runs until every key is set, plans a day;
// massexpiry waits until 10s past its cap (Duration after the last
// deadline). Ctrl-C (ctx) cuts a wait to a second plus Hold. Redlock's
// attempts give up on an address after NodeTimeout instead.
//
// # Concurrency
//
// Run starts Workers goroutines and returns when they have stopped. Each
// worker owns its keys, tokens, histogram and counters; connections are
// shared, under a mutex held for a whole request/reply exchange, only when
// Conns < Workers. Redlock replaces a connection that failed with the
// mutex held; the run's cutoff reads it without (sharedConn). Conn is a single-goroutine RESP client with explicit
// pipelining. Run may be called concurrently with different Options.
package bench
