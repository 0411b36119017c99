#!/usr/bin/python3
"""redis-py's Lock (Debian python3-redis 4.3.4) on a database other than 0.

Run with Debian's interpreter, which is the one that can import the module:

    TUMBLER_ADDR=127.0.0.1:6379 /usr/bin/python3 compat/python/test_database.py -v

A client made with ``Redis(db=2)``, or from the URL
``redis://host:port/4`` (or ``?db=5``), sends ``SELECT n`` on every
connection it opens, before anything else; the lock's commands (``SET
name token PX ms NX``, the release/extend/reacquire scripts by EVALSHA,
``SCRIPT LOAD`` after ``NOSCRIPT``) then act on that database only.

Every check of where a lock went is made with plain clients on the other
databases (db 0 among them): a key written in one database must be absent
from the others, not only the lock calls' results right.

stdlib unittest only. Every test uses its own key names, so the tests can
share one server (and share it with test_lock.py) and run in any order.
"""

import os
import sys
import threading
import time
import unittest
import uuid

try:
    import redis
    from redis.exceptions import LockNotOwnedError, ResponseError
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

# The databases the tests use (besides db 0); a server has 16, 0 to 15.
DBS = (0, 2, 3, 4, 5, 15)


def new_client(db=0, **kw):
    return redis.Redis(
        host=HOST,
        port=PORT,
        db=db,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
        **kw
    )


def url_client(url):
    return redis.Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
    )


def client_db(client):
    """The database CLIENT INFO reports for client's connection."""
    info = client.client_info()  # redis-py parses the line into a dict
    if "db" not in info:
        raise AssertionError("CLIENT INFO has no db field: %r" % info)
    return int(info["db"])


class DatabaseTestCase(unittest.TestCase):
    def setUp(self):
        self.prefix = "pydb:%s:%s:" % (self._testMethodName, uuid.uuid4().hex)
        # Plain clients, one per database, to look where keys went.
        self.on = {db: new_client(db) for db in DBS}
        self.clients = list(self.on.values())

    def tearDown(self):
        for db, c in self.on.items():
            keys = list(c.scan_iter(match=self.prefix + "*"))
            if keys:
                c.delete(*keys)
        for c in self.clients:
            c.close()

    def client(self, db=0, **kw):
        c = new_client(db, **kw)
        self.clients.append(c)
        return c

    def key(self, name="lock"):
        return self.prefix + name

    def keys_in(self, db):
        """This test's keys in db (KEYS filters expired keys out)."""
        return sorted(k.decode() for k in self.on[db].keys(self.prefix + "*"))

    def assertOnlyIn(self, want):
        """want maps a database to the list of this test's keys it must
        hold; every other database must hold none."""
        for db in DBS:
            self.assertEqual(self.keys_in(db), sorted(want.get(db, [])),
                             "this test's keys in db %d" % db)

    def assertPTTLBetween(self, client, name, lo, hi):
        pttl = client.pttl(name)
        self.assertGreaterEqual(pttl, lo, "pttl(%s)=%r" % (name, pttl))
        self.assertLessEqual(pttl, hi, "pttl(%s)=%r" % (name, pttl))


class TestSelectedDatabase(DatabaseTestCase):
    def test_version_is_debian_4_3_4(self):
        self.assertEqual(redis.__version__, "4.3.4")

    def test_connection_reports_its_database(self):
        for db in DBS:
            self.assertEqual(client_db(self.on[db]), db)

    def test_lock_in_db2_is_invisible_in_other_dbs(self):
        name = self.key()
        r2 = self.client(2)
        lock = r2.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        token = lock.local.token
        self.assertEqual(r2.get(name), token)
        self.assertPTTLBetween(r2, name, 9000, 10000)
        self.assertOnlyIn({2: [name]})
        self.assertIsNone(self.on[0].get(name))
        self.assertEqual(self.on[0].exists(name), 0)
        self.assertEqual(self.on[0].pttl(name), -2)
        self.assertTrue(lock.locked())
        self.assertTrue(lock.owned())
        lock.release()
        self.assertOnlyIn({})

    def test_same_name_locked_independently_per_db(self):
        name = self.key()
        r0, r2, r4 = self.on[0], self.client(2), self.client(4)
        l2 = r2.lock(name, timeout=10)
        self.assertTrue(l2.acquire(blocking=False))
        # Held in db 2: not in db 0 or db 4.
        l0 = r0.lock(name, timeout=10)
        l4 = r4.lock(name, timeout=10)
        self.assertTrue(l0.acquire(blocking=False))
        self.assertTrue(l4.acquire(blocking=False))
        self.assertOnlyIn({0: [name], 2: [name], 4: [name]})
        self.assertEqual(r0.get(name), l0.local.token)
        self.assertEqual(r2.get(name), l2.local.token)
        self.assertEqual(r4.get(name), l4.local.token)
        # A second lock in db 2 is refused, blocking or not.
        other = self.client(2).lock(name, timeout=10)
        self.assertFalse(other.acquire(blocking=False))
        t0 = time.monotonic()
        self.assertFalse(other.acquire(blocking=True, blocking_timeout=0.3))
        self.assertGreaterEqual(time.monotonic() - t0, 0.15)  # it did wait
        self.assertEqual(r2.get(name), l2.local.token)
        # locked() looks in the lock's own database.
        l0.release()
        self.assertFalse(r0.lock(name).locked())
        self.assertTrue(other.locked())
        l2.release()
        self.assertFalse(other.locked())
        self.assertOnlyIn({4: [name]})
        self.assertTrue(other.acquire(blocking=False))
        self.assertOnlyIn({2: [name], 4: [name]})
        other.release()
        l4.release()
        self.assertOnlyIn({})

    def test_release_script_runs_in_the_lock_db(self):
        # The same name and the same token in db 0 and db 2: releasing the
        # db 2 lock deletes db 2's key only.
        name = self.key()
        r2 = self.client(2)
        lock = r2.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        token = lock.local.token
        self.on[0].set(name, token)
        lock.release()
        self.assertOnlyIn({0: [name]})
        self.assertEqual(self.on[0].get(name), token)
        # And the other way round: a db 0 lock's release leaves db 2's key.
        l0 = self.on[0].lock(self.key("zero"), timeout=10)
        self.assertTrue(l0.acquire(blocking=False))
        r2.set(self.key("zero"), l0.local.token)
        l0.release()
        self.assertOnlyIn({0: [name], 2: [self.key("zero")]})
        # A db 2 lock whose key is gone cannot release the db 0 key.
        ghost = r2.lock(name, timeout=10)
        ghost.local.token = token
        with self.assertRaises(LockNotOwnedError):
            ghost.release()
        self.assertEqual(self.on[0].get(name), token)

    def test_extend_and_reacquire_touch_the_lock_db_only(self):
        name = self.key()
        r3 = self.client(3)
        lock = r3.lock(name, timeout=2)
        self.assertTrue(lock.acquire(blocking=False))
        # A key of the same name in db 0, with its own TTL.
        self.on[0].set(name, "db0", px=5000)
        self.assertTrue(lock.extend(10))  # pexpire to pttl + 10000
        self.assertPTTLBetween(r3, name, 11000, 12000)
        self.assertPTTLBetween(self.on[0], name, 4000, 5000)
        self.assertTrue(lock.extend(3, replace_ttl=True))
        self.assertPTTLBetween(r3, name, 2000, 3000)
        self.assertTrue(lock.reacquire())  # pexpire to timeout (2 s)
        self.assertPTTLBetween(r3, name, 1000, 2000)
        self.assertPTTLBetween(self.on[0], name, 4000, 5000)
        self.assertEqual(self.on[0].get(name), b"db0")
        lock.release()
        self.assertOnlyIn({0: [name]})

    def test_ttl_lapses_in_the_lock_db(self):
        name = self.key()
        r5, other = self.client(5), self.client(5)
        self.on[0].set(name, "db0")  # no TTL
        lapsing = r5.lock(name, timeout=0.3)
        self.assertTrue(lapsing.acquire(blocking=False))
        self.assertPTTLBetween(r5, name, 1, 300)
        # A blocking acquire in db 5 gets the lock once the TTL lapses.
        t0 = time.monotonic()
        lock = other.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=True, blocking_timeout=3))
        waited = time.monotonic() - t0
        self.assertGreaterEqual(waited, 0.2, "acquired before the TTL ran out")
        self.assertEqual(r5.get(name), lock.local.token)
        # The lapsed holder can neither extend nor release the new lock.
        with self.assertRaises(LockNotOwnedError):
            lapsing.extend(1)
        with self.assertRaises(LockNotOwnedError):
            lapsing.release()
        self.assertEqual(r5.get(name), lock.local.token)
        # db 0's key of the same name never had a TTL and is still there.
        self.assertEqual(self.on[0].get(name), b"db0")
        self.assertEqual(self.on[0].pttl(name), -1)
        lock.release()
        self.assertOnlyIn({0: [name]})

    def test_noscript_fallback_in_db(self):
        # After SCRIPT FLUSH, the release's EVALSHA fails with NOSCRIPT;
        # redis-py loads the script (from the db 3 connection) and runs it
        # again, in db 3. The cache is the server's: a script loaded from
        # db 3 runs by SHA1 from db 0.
        name = self.key()
        r3 = self.client(3)
        lock = r3.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        token = lock.local.token
        self.on[0].set(name, token)
        self.assertTrue(r3.script_flush())
        sha = lock.lua_release.sha
        self.assertEqual(r3.script_exists(sha), [False])
        lock.release()
        self.assertOnlyIn({0: [name]})
        self.assertEqual(self.on[0].get(name), token)
        self.assertEqual(self.on[0].script_exists(sha), [True])
        # The same script by SHA1 from db 0 releases db 0's key.
        self.assertEqual(self.on[0].evalsha(sha, 1, name, "not-the-token"), 0)
        self.assertEqual(self.on[0].evalsha(sha, 1, name, token), 1)
        self.assertOnlyIn({})

    def test_highest_database(self):
        name = self.key()
        lock = self.client(15).lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertOnlyIn({15: [name]})
        lock.release()
        self.assertOnlyIn({})

    def test_database_out_of_range(self):
        r16 = self.client(16)
        with self.assertRaises(ResponseError) as cm:
            r16.lock(self.key(), timeout=1).acquire(blocking=False)
        self.assertEqual(str(cm.exception), "DB index is out of range")
        self.assertOnlyIn({})


class TestURL(DatabaseTestCase):
    def test_url_path_selects_db4(self):
        name = self.key()
        r = url_client("redis://%s:%d/4" % (HOST, PORT))
        self.clients.append(r)
        self.assertEqual(r.connection_pool.connection_kwargs["db"], 4)
        self.assertEqual(client_db(r), 4)
        with r.lock(name, timeout=10) as lock:
            self.assertEqual(self.on[4].get(name), lock.local.token)
            self.assertOnlyIn({4: [name]})
            self.assertIsNone(self.on[0].get(name))
        self.assertOnlyIn({})

    def test_url_query_selects_db5(self):
        name = self.key()
        r = url_client("redis://%s:%d?db=5" % (HOST, PORT))
        self.clients.append(r)
        self.assertEqual(r.connection_pool.connection_kwargs["db"], 5)
        lock = r.lock(name, timeout=10)
        self.assertTrue(lock.acquire(blocking=False))
        self.assertOnlyIn({5: [name]})
        lock.release()
        self.assertOnlyIn({})

    def test_url_pool_connections_all_select(self):
        # Several threads hold connections from the URL client's pool at
        # once: each new connection must SELECT 4.
        r = url_client("redis://%s:%d/4" % (HOST, PORT))
        self.clients.append(r)
        barrier = threading.Barrier(6)
        errors = []
        seen = []

        def worker(i):
            try:
                conn = r.connection_pool.get_connection("CLIENT")
                try:
                    barrier.wait(timeout=5)
                    conn.send_command("CLIENT", "INFO")
                    info = conn.read_response()
                    if isinstance(info, bytes):
                        info = info.decode()
                    seen.append(info)
                    conn.send_command("SET", self.key("pool:%d" % i), "x")
                    conn.read_response()
                finally:
                    r.connection_pool.release(conn)
            except Exception as exc:  # pylint: disable=broad-except
                errors.append(repr(exc))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(10)
        self.assertEqual(errors, [])
        self.assertEqual(len(seen), 6)
        ids = set()
        for info in seen:
            fields = dict(f.split("=", 1) for f in info.split() if "=" in f)
            self.assertEqual(fields.get("db"), "4", info)
            ids.add(fields.get("id"))
        self.assertEqual(len(ids), 6, "the six workers shared connections")
        self.assertOnlyIn({4: [self.key("pool:%d" % i) for i in range(6)]})


class TestDatabaseStress(DatabaseTestCase):
    THREADS = 6
    ITERATIONS = 30
    DEADLINE = 60.0

    def test_mutual_exclusion_in_two_dbs_at_once(self):
        # Threads lock the same name in db 2 and in db 3 at once, and each
        # holder does a non-atomic read-modify-write of a counter in its
        # lock's database. Each database's lock excludes its own threads;
        # every update lands in its own database.
        name = self.key()
        counter = self.key("counter")
        state = {db: {"holders": 0, "overlaps": 0, "max": 0} for db in (2, 3)}
        mu = threading.Lock()
        errors = []

        def worker(db, idx):
            client = new_client(db)
            try:
                for _ in range(self.ITERATIONS):
                    lock = client.lock(name, timeout=10, sleep=0.001)
                    if not lock.acquire(blocking=True, blocking_timeout=self.DEADLINE):
                        errors.append("db %d worker %d: acquire timed out" % (db, idx))
                        return
                    try:
                        with mu:
                            s = state[db]
                            s["holders"] += 1
                            if s["holders"] > 1:
                                s["overlaps"] += 1
                            s["max"] = max(s["max"], s["holders"])
                        v = int(client.get(counter) or 0)
                        time.sleep(0.0005)
                        client.set(counter, v + 1)
                        with mu:
                            state[db]["holders"] -= 1
                    finally:
                        lock.release()
            except Exception as exc:  # pylint: disable=broad-except
                errors.append("db %d worker %d: %r" % (db, idx, exc))
            finally:
                client.close()

        threads = [threading.Thread(target=worker, args=(db, i), daemon=True)
                   for db in (2, 3) for i in range(self.THREADS)]
        start = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join(max(0.1, self.DEADLINE + 5 - (time.monotonic() - start)))
        self.assertFalse([th for th in threads if th.is_alive()], "workers still running")
        self.assertEqual(errors, [])
        want = self.THREADS * self.ITERATIONS
        for db in (2, 3):
            self.assertEqual(state[db]["overlaps"], 0, "db %d: critical sections overlapped" % db)
            self.assertEqual(state[db]["max"], 1)
            self.assertEqual(int(self.on[db].get(counter)), want, "db %d counter" % db)
        self.assertOnlyIn({2: [counter], 3: [counter]})
        sys.stderr.write("\n  stress: 2 dbs x %d threads x %d cycles in %.2fs\n"
                         % (self.THREADS, self.ITERATIONS, time.monotonic() - start))


if __name__ == "__main__":
    unittest.main(verbosity=2)
