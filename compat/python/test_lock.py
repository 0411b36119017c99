#!/usr/bin/python3
"""redis-py's Lock (Debian python3-redis 4.3.4), unmodified, against tumbler.

Run with Debian's interpreter, which is the one that can import the module:

    TUMBLER_ADDR=127.0.0.1:6379 /usr/bin/python3 compat/python/test_lock.py -v

What the client sends (redis-py 4.3.4, default settings): no handshake at
all; acquire is ``SET name token PX ms NX``; release, extend and reacquire
are ``EVALSHA sha 1 name ...``, and on a ``NOSCRIPT`` error ``SCRIPT LOAD``
followed by ``EVALSHA`` again. The scripts call get, del, pttl and pexpire
and rely on Lua's string + number coercion (``ARGV[2] + expiration``).

stdlib unittest only. Every test uses its own key names, so the tests can
share one server and run in any order.
"""

import os
import sys
import threading
import time
import unittest
import uuid

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError as exc:  # pragma: no cover - reported by the Go driver
    sys.stderr.write(
        "cannot import redis (%s); run with /usr/bin/python3 and install the "
        "Debian package python3-redis\n" % exc
    )
    sys.exit(2)


def server_address():
    addr = os.environ.get("TUMBLER_ADDR", "")
    if not addr:
        sys.stderr.write("TUMBLER_ADDR (host:port) is not set\n")
        sys.exit(2)
    host, _, port = addr.rpartition(":")
    return host, int(port)


HOST, PORT = server_address()

# Every network call is bounded, so a server that never answers fails the
# test instead of hanging it.
SOCKET_TIMEOUT = 5.0


def new_client(**kw):
    return redis.Redis(
        host=HOST,
        port=PORT,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
        **kw
    )


class LockTestCase(unittest.TestCase):
    def setUp(self):
        self.r = new_client()
        self.prefix = "pylock:%s:%s:" % (self._testMethodName, uuid.uuid4().hex)

    def tearDown(self):
        keys = list(self.r.scan_iter(match=self.prefix + "*"))
        if keys:
            self.r.delete(*keys)
        self.r.close()

    def key(self, name="lock"):
        return self.prefix + name

    def assertPTTLBetween(self, name, lo, hi):
        pttl = self.r.pttl(name)
        self.assertGreaterEqual(pttl, lo, "pttl(%s)=%r" % (name, pttl))
        self.assertLessEqual(pttl, hi, "pttl(%s)=%r" % (name, pttl))
        return pttl


class TestLockBasics(LockTestCase):
    def test_version_is_debian_4_3_4(self):
        # The suite pins behaviour of the Debian package; say so if CI
        # picked up something else.
        self.assertEqual(redis.__version__, "4.3.4")

    def test_acquire_sets_token_with_ttl(self):
        name = self.key()
        lock = self.r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        # The key holds exactly this lock's token ...
        self.assertEqual(self.r.get(name), lock.local.token)
        self.assertEqual(len(lock.local.token), 32)
        # ... with PX 5000.
        self.assertPTTLBetween(name, 4000, 5000)
        self.assertTrue(lock.locked())
        self.assertTrue(lock.owned())
        lock.release()
        self.assertIsNone(self.r.get(name))
        self.assertEqual(self.r.exists(name), 0)

    def test_acquire_fractional_timeout(self):
        name = self.key()
        lock = self.r.lock(name, timeout=1.5)  # SET ... PX 1500 NX
        self.assertTrue(lock.acquire(blocking=False))
        self.assertPTTLBetween(name, 1000, 1500)
        lock.release()

    def test_acquire_without_timeout_has_no_ttl(self):
        name = self.key()
        lock = self.r.lock(name)  # SET name token NX
        self.assertTrue(lock.acquire(blocking=False))
        self.assertEqual(self.r.pttl(name), -1)
        with self.assertRaises(LockError):
            lock.extend(1)  # client side: no timeout
        lock.release()
        self.assertEqual(self.r.pttl(name), -2)

    def test_custom_token(self):
        name = self.key()
        lock = self.r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False, token="my-token"))
        self.assertEqual(self.r.get(name), b"my-token")
        self.assertTrue(lock.owned())
        lock.release()
        self.assertIsNone(self.r.get(name))

    def test_nonblocking_acquire_fails_while_held(self):
        name = self.key()
        holder = self.r.lock(name, timeout=10)
        other = self.r.lock(name, timeout=10)
        self.assertTrue(holder.acquire(blocking=False))
        token = self.r.get(name)
        self.assertFalse(other.acquire(blocking=False))
        # A failed SET NX must not touch the key or its TTL.
        self.assertEqual(self.r.get(name), token)
        self.assertPTTLBetween(name, 9000, 10000)
        self.assertTrue(other.locked())
        self.assertFalse(other.owned())
        self.assertTrue(holder.owned())
        # And a blocking acquire with a short blocking_timeout gives up.
        t0 = time.monotonic()
        self.assertFalse(other.acquire(blocking=True, blocking_timeout=0.3, sleep=0.05))
        elapsed = time.monotonic() - t0
        self.assertGreaterEqual(elapsed, 0.2)
        self.assertLess(elapsed, 3.0)
        holder.release()
        self.assertTrue(other.acquire(blocking=False))
        self.assertTrue(other.owned())
        self.assertFalse(holder.owned())
        other.release()

    def test_blocking_acquire_waits_for_release(self):
        name = self.key()
        holder = self.r.lock(name, timeout=10)
        self.assertTrue(holder.acquire(blocking=False))

        waiter_client = new_client()
        self.addCleanup(waiter_client.close)
        waiter = waiter_client.lock(name, timeout=10, thread_local=False)
        result = {}
        got = threading.Event()

        def wait():
            t0 = time.monotonic()
            try:
                result["ok"] = waiter.acquire(blocking=True, blocking_timeout=5, sleep=0.02)
            except Exception as exc:  # reported below
                result["error"] = exc
            result["waited"] = time.monotonic() - t0
            got.set()

        th = threading.Thread(target=wait, daemon=True)
        th.start()
        # While held, the waiter keeps waiting.
        self.assertFalse(got.wait(0.4), "waiter acquired a held lock: %r" % result)
        released_at = time.monotonic()
        holder.release()
        self.assertTrue(got.wait(5), "waiter did not get the lock after release")
        th.join(5)
        self.assertNotIn("error", result)
        self.assertTrue(result["ok"])
        self.assertGreaterEqual(result["waited"], 0.4)
        self.assertLess(time.monotonic() - released_at, 2.0)
        self.assertEqual(self.r.get(name), waiter.local.token)
        self.assertTrue(waiter.owned())
        self.assertFalse(holder.owned())
        waiter.release()
        self.assertFalse(waiter.locked())

    def test_blocking_acquire_after_expiry(self):
        name = self.key()
        holder = self.r.lock(name, timeout=0.3)
        self.assertTrue(holder.acquire(blocking=False))
        other = self.r.lock(name, timeout=5)
        t0 = time.monotonic()
        # Never released: the waiter gets it once the PX deadline passes.
        self.assertTrue(other.acquire(blocking=True, blocking_timeout=5, sleep=0.02))
        waited = time.monotonic() - t0
        self.assertGreaterEqual(waited, 0.2)
        self.assertLess(waited, 3.0)
        self.assertTrue(other.owned())
        other.release()

    def test_context_manager(self):
        name = self.key()
        with self.r.lock(name, timeout=5, blocking_timeout=1) as lock:
            self.assertTrue(lock.owned())
            self.assertTrue(self.r.lock(name).locked())
            with self.assertRaises(LockError):
                with self.r.lock(name, timeout=5, blocking_timeout=0.2, sleep=0.05):
                    pass
        self.assertEqual(self.r.exists(name), 0)

    def test_locked_and_owned(self):
        name = self.key()
        a = self.r.lock(name, timeout=5)
        b = self.r.lock(name, timeout=5)
        self.assertFalse(a.locked())
        self.assertFalse(a.owned())
        self.assertTrue(a.acquire(blocking=False))
        self.assertTrue(a.locked())
        self.assertTrue(b.locked())
        self.assertTrue(a.owned())
        self.assertFalse(b.owned())
        a.release()
        self.assertFalse(a.locked())
        self.assertFalse(a.owned())
        self.assertFalse(b.locked())

    def test_decode_responses_client(self):
        r = new_client(decode_responses=True)
        self.addCleanup(r.close)
        name = self.key()
        lock = r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertEqual(r.get(name), lock.local.token.decode())
        self.assertTrue(lock.owned())
        self.assertTrue(lock.extend(1))
        lock.release()
        self.assertFalse(lock.locked())


class TestLockTTL(LockTestCase):
    def test_extend_adds_to_ttl(self):
        name = self.key()
        lock = self.r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(lock.extend(2))  # pexpire name (ARGV[2] + pttl)
        # 5000 + 2000, minus the little time that has passed.
        self.assertPTTLBetween(name, 6500, 7000)
        self.assertTrue(lock.extend(0.5))
        self.assertPTTLBetween(name, 7000, 7500)
        self.assertEqual(self.r.get(name), lock.local.token)
        lock.release()

    def test_extend_replace_ttl(self):
        name = self.key()
        lock = self.r.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(lock.extend(3, replace_ttl=True))
        self.assertPTTLBetween(name, 2500, 3000)
        self.assertTrue(lock.extend(20, replace_ttl=True))
        self.assertPTTLBetween(name, 19500, 20000)
        lock.release()

    def test_extend_keeps_lock_past_original_timeout(self):
        name = self.key()
        lock = self.r.lock(name, timeout=0.3)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(lock.extend(2))
        time.sleep(0.5)
        self.assertTrue(lock.owned())
        self.assertFalse(self.r.lock(name, timeout=1).acquire(blocking=False))
        lock.release()

    def test_extend_key_without_ttl_is_not_owned(self):
        # The script returns 0 when pttl is negative.
        name = self.key()
        lock = self.r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(self.r.persist(name))
        with self.assertRaises(LockNotOwnedError):
            lock.extend(1)
        self.assertEqual(self.r.pttl(name), -1)
        lock.release()

    def test_reacquire_resets_ttl(self):
        name = self.key()
        lock = self.r.lock(name, timeout=2)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(lock.extend(30, replace_ttl=True))
        self.assertPTTLBetween(name, 29000, 30000)
        self.assertTrue(lock.reacquire())  # pexpire name 2000
        self.assertPTTLBetween(name, 1500, 2000)
        self.assertEqual(self.r.get(name), lock.local.token)
        lock.release()

    def test_reacquire_after_expiry_fails(self):
        name = self.key()
        lock = self.r.lock(name, timeout=0.2)
        self.assertTrue(lock.acquire(blocking=False))
        time.sleep(0.4)
        self.assertFalse(lock.locked())
        with self.assertRaises(LockNotOwnedError):
            lock.reacquire()
        self.assertEqual(self.r.exists(name), 0)

    def test_expired_lock_can_be_taken(self):
        name = self.key()
        a = self.r.lock(name, timeout=0.3)
        b = self.r.lock(name, timeout=5)
        self.assertTrue(a.acquire(blocking=False))
        self.assertFalse(b.acquire(blocking=False))
        time.sleep(0.5)
        self.assertEqual(self.r.exists(name), 0)
        self.assertTrue(b.acquire(blocking=False))
        self.assertTrue(b.owned())
        b.release()


class TestLockNotOwned(LockTestCase):
    def test_release_after_expiry(self):
        name = self.key()
        lock = self.r.lock(name, timeout=0.2)
        self.assertTrue(lock.acquire(blocking=False))
        time.sleep(0.4)
        with self.assertRaises(LockNotOwnedError):
            lock.release()
        self.assertEqual(self.r.exists(name), 0)

    def test_release_after_someone_else_took_it(self):
        name = self.key()
        a = self.r.lock(name, timeout=0.2)
        b = self.r.lock(name, timeout=10)
        self.assertTrue(a.acquire(blocking=False))
        time.sleep(0.4)
        self.assertTrue(b.acquire(blocking=False))
        token_b = self.r.get(name)
        self.assertFalse(a.owned())
        with self.assertRaises(LockNotOwnedError):
            a.extend(5)
        with self.assertRaises(LockNotOwnedError):
            a.reacquire()
        with self.assertRaises(LockNotOwnedError):
            a.release()
        # a's extend/reacquire/release must not have touched b's lock.
        self.assertEqual(self.r.get(name), token_b)
        self.assertPTTLBetween(name, 9000, 10000)
        self.assertTrue(b.owned())
        b.release()
        self.assertEqual(self.r.exists(name), 0)

    def test_release_after_token_overwritten(self):
        name = self.key()
        lock = self.r.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        self.r.set(name, "intruder")
        self.assertFalse(lock.owned())
        with self.assertRaises(LockNotOwnedError):
            lock.extend(1)
        with self.assertRaises(LockNotOwnedError):
            lock.release()
        self.assertEqual(self.r.get(name), b"intruder")

    def test_release_unlocked_raises(self):
        lock = self.r.lock(self.key(), timeout=1)
        with self.assertRaises(LockError):
            lock.release()


class TestLockScripts(LockTestCase):
    def test_noscript_fallback_after_script_flush(self):
        # redis-py runs EVALSHA, and on NOSCRIPT sends SCRIPT LOAD and
        # retries, so the server's script cache key must be the real SHA1.
        name = self.key()
        lock = self.r.lock(name, timeout=5)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertTrue(self.r.script_flush())
        shas = [type(lock).lua_release.sha, type(lock).lua_extend.sha,
                type(lock).lua_reacquire.sha]
        self.assertEqual(self.r.script_exists(*shas), [False, False, False])
        self.assertTrue(lock.extend(1))
        self.assertTrue(lock.reacquire())
        lock.release()
        self.assertEqual(self.r.script_exists(*shas), [True, True, True])
        self.assertEqual(self.r.exists(name), 0)
        # SCRIPT LOAD answers with the same lowercase hex SHA1 redis-py
        # computed locally.
        self.assertEqual(self.r.script_load(type(lock).LUA_RELEASE_SCRIPT), shas[0])


class TestLockStress(LockTestCase):
    THREADS = 10
    ITERATIONS = 40
    DEADLINE = 60.0  # seconds for the whole stress run

    def test_mutual_exclusion(self):
        name = self.key("stress")
        counter_key = self.key("counter")
        self.r.set(counter_key, 0)

        state = {"counter": 0, "holders": 0, "max_holders": 0, "overlaps": 0}
        guard = threading.Lock()  # protects holders/overlaps bookkeeping only
        errors = []
        start = time.monotonic()

        def worker(idx):
            client = new_client()
            try:
                for i in range(self.ITERATIONS):
                    if time.monotonic() - start > self.DEADLINE:
                        errors.append("worker %d: deadline passed at iteration %d" % (idx, i))
                        return
                    lock = client.lock(name, timeout=10, sleep=0.002, blocking_timeout=30)
                    if not lock.acquire():
                        errors.append("worker %d: acquire timed out at iteration %d" % (idx, i))
                        return
                    try:
                        with guard:
                            state["holders"] += 1
                            if state["holders"] > 1:
                                state["overlaps"] += 1
                            state["max_holders"] = max(state["max_holders"], state["holders"])
                        # Non-atomic read-modify-write, in process and in the
                        # server, with a yield in between to invite races.
                        local = state["counter"]
                        remote = int(client.get(counter_key))
                        time.sleep(0.0005)
                        state["counter"] = local + 1
                        client.set(counter_key, remote + 1)
                        with guard:
                            state["holders"] -= 1
                    finally:
                        lock.release()
            except Exception as exc:
                errors.append("worker %d: %r" % (idx, exc))
            finally:
                client.close()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(self.THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(max(0.1, self.DEADLINE + 5 - (time.monotonic() - start)))
        elapsed = time.monotonic() - start
        self.assertFalse([th for th in threads if th.is_alive()],
                         "stress workers still running after %.1fs" % elapsed)
        self.assertEqual(errors, [])
        want = self.THREADS * self.ITERATIONS
        self.assertEqual(state["overlaps"], 0, "critical sections overlapped")
        self.assertEqual(state["max_holders"], 1)
        self.assertEqual(state["counter"], want)
        self.assertEqual(int(self.r.get(counter_key)), want)
        self.assertEqual(self.r.exists(name), 0)
        self.assertLess(elapsed, self.DEADLINE)
        sys.stderr.write("\n  stress: %d threads x %d cycles in %.2fs\n"
                         % (self.THREADS, self.ITERATIONS, elapsed))


if __name__ == "__main__":
    unittest.main(verbosity=2)
