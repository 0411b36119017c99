'use strict';
// Lock clients configured with a database index, unmodified: node-redis 4
// and 6 (createClient({url: 'redis://host:port/3'}), {database: 5}),
// ioredis 5 and 6 ({db: 2}, 'redis://host:port/2') and redlock 5 over
// ioredis, on one server and as a Redlock over three servers whose clients
// use databases 1, 2 and 3.
//
//   TUMBLER_ADDR=127.0.0.1:6379 TUMBLER_ADDRS=a:1,b:2,c:3 node --test database.test.js
//
// What the clients send: SELECT n on every connection they open, after their
// handshake (node-redis 4: CLIENT SETINFO; node-redis 6 and ioredis 6:
// HELLO 3 first) and, for ioredis, before the INFO ready check; again after
// a reconnect. Every check of where a lock went is made on raw connections
// (no client library: SELECT n, then KEYS) to the other databases, db 0
// among them: a key written in one database must be absent from the others.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const Redis = require('ioredis');
const Redis6 = require('ioredis6');
const { createClient, defineScript } = require('redis');
const { createClient: createClient6, defineScript: defineScript6 } = require('redis6');
const RedlockModule = require('redlock');
const { addr, addrs, sleep, uniq, startRecorder, fmt, withDeadline } = require('./lib/wire');

const Redlock = RedlockModule.default;
const { ExecutionError, ResourceLockedError } = RedlockModule;

const TEST_TIMEOUT = 30_000;

// The databases the checks look in; a server has 16, 0 to 15.
const DBS = [0, 1, 2, 3, 4, 5, 15];

const RELEASE = `
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end`;
const EXTEND = `
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
else
  return 0
end`;

// --- raw probes: no client library between the test and the server --------

// readReply parses one RESP2 reply from buf at pos: [value, next] or null
// when incomplete. Errors come back as {err}.
function readReply(buf, pos) {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+': return [line, next];
    case '-': return [{ err: line }, next];
    case ':': return [Number(line), next];
    case '$': {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (buf.length < next + n + 2) return null;
      return [buf.toString('utf8', next, next + n), next + n + 2];
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return [null, next];
      const out = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = readReply(buf, p);
        if (!r) return null;
        out.push(r[0]);
        p = r[1];
      }
      return [out, p];
    }
    default: throw new Error(`unexpected reply type ${JSON.stringify(type)}`);
  }
}

// probe runs cmds on a new raw connection to a after SELECT db and returns
// their replies.
function probe(a, db, ...cmds) {
  const all = [['SELECT', String(db)], ...cmds];
  const wire = all.map((c) => `*${c.length}\r\n${c.map((s) => `$${Buffer.byteLength(String(s))}\r\n${s}\r\n`).join('')}`).join('');
  return withDeadline(new Promise((resolve, reject) => {
    const sock = net.connect(a.port, a.host);
    let buf = Buffer.alloc(0);
    const replies = [];
    let pos = 0;
    sock.on('error', reject);
    sock.on('connect', () => sock.write(wire));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (let r; replies.length < all.length && (r = readReply(buf, pos));) {
        replies.push(r[0]);
        pos = r[1];
      }
      if (replies.length === all.length) {
        sock.destroy();
        if (replies[0] !== 'OK') reject(new Error(`SELECT ${db}: ${JSON.stringify(replies[0])}`));
        else resolve(replies.slice(1));
      }
    });
  }), 5000, `probe of db ${db}`);
}

// keysIn returns the keys matching pattern in database db of a, sorted.
async function keysIn(a, db, pattern) {
  const [keys] = await probe(a, db, ['KEYS', pattern]);
  assert.ok(Array.isArray(keys), `KEYS in db ${db}: ${JSON.stringify(keys)}`);
  return keys.sort();
}

// assertOnlyIn checks that want ({db: [keys]}) lists every key matching
// pattern in every database of a.
async function assertOnlyIn(a, pattern, want) {
  for (const db of DBS) {
    const got = await keysIn(a, db, pattern);
    assert.deepEqual(got, [...(want[db] || [])].sort(), `keys matching ${pattern} in db ${db}`);
  }
}

async function getIn(a, db, key) {
  const [v] = await probe(a, db, ['GET', key]);
  return v;
}

// dbOf returns the db= field of a CLIENT INFO reply (RESP2 bulk, RESP3
// verbatim string or Buffer).
function dbOf(info) {
  const s = String(info);
  const m = /(?:^|\s)db=(\d+)(?:\s|$)/.exec(s);
  assert.ok(m, `no db= in CLIENT INFO: ${s}`);
  return Number(m[1]);
}

function idOf(info) {
  return Number(/(?:^|\s)id=(\d+)/.exec(String(info))[1]);
}

// --- node-redis ------------------------------------------------------------

const nrScripts = {
  lockRelease: defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: RELEASE,
    transformArguments(key, token) { return [key, token]; },
    transformReply(reply) { return reply; },
  }),
  lockExtend: defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: EXTEND,
    transformArguments(key, token, ms) { return [key, token, String(ms)]; },
    transformReply(reply) { return reply; },
  }),
};

const nr6Scripts = {
  lockRelease: defineScript6({
    NUMBER_OF_KEYS: 1,
    SCRIPT: RELEASE,
    parseCommand(parser, key, token) {
      parser.pushKey(key);
      parser.push(token);
    },
    transformReply(reply) { return reply; },
  }),
  lockExtend: defineScript6({
    NUMBER_OF_KEYS: 1,
    SCRIPT: EXTEND,
    parseCommand(parser, key, token, ms) {
      parser.pushKey(key);
      parser.push(token, String(ms));
    },
    transformReply(reply) { return reply; },
  }),
};

// nrConnect connects a node-redis client. A client that cannot connect
// (its SELECT refused) is closed, so that it stops reconnecting and the
// test file can end.
async function nrConnect(make, opts, what) {
  const errors = [];
  const c = make({ scripts: what === 'node-redis 6' ? nr6Scripts : nrScripts, ...opts });
  c.on('error', (err) => errors.push(err));
  try {
    await withDeadline(c.connect(), 5000, `${what} connect`); // node-redis retries a refused SELECT for ever
  } catch (err) {
    await nrClose(c);
    throw new Error(`${err.message}; client errors: ${errors.map(String).join('; ')}`);
  }
  c.connectErrors = errors;
  return c;
}

// nrClose quits a ready client and drops any other one (a client that
// lost its connection and cannot select its database again).
async function nrClose(c) {
  if (!c) return;
  if (c.isReady) await c.quit();
  else if (c.isOpen) await c.disconnect().catch(() => {});
}

// The lock cycle both node-redis versions run on database db through c,
// with r0 a client on db 0 (no database configured) for the same name.
async function nodeRedisLockCycle(c, r0, db, prefix) {
  const a = addr();
  const k = `${prefix}:lock`;
  assert.equal(dbOf(await c.sendCommand(['CLIENT', 'INFO'])), db);
  assert.equal(dbOf(await r0.sendCommand(['CLIENT', 'INFO'])), 0);

  assert.equal(await c.set(k, 'A', { NX: true, PX: 10_000 }), 'OK');
  await assertOnlyIn(a, `${prefix}:*`, { [db]: [k] });
  assert.equal(await r0.get(k), null);
  assert.equal(await r0.exists(k), 0);
  // The same name locks in db 0 independently; db's lock stays held.
  assert.equal(await r0.set(k, 'Z', { NX: true, PX: 10_000 }), 'OK');
  assert.equal(await c.set(k, 'X', { NX: true, PX: 10_000 }), null);
  assert.equal(await getIn(a, db, k), 'A');
  assert.equal(await getIn(a, 0, k), 'Z');
  await assertOnlyIn(a, `${prefix}:*`, { 0: [k], [db]: [k] });

  // Extend and release run in db: db 0's key of the same name is never
  // touched, with its token or db's.
  assert.equal(await c.lockExtend(k, 'Z', 60_000), 0);
  assert.equal(await c.lockExtend(k, 'A', 30_000), 1);
  const pttl = await c.pTTL(k);
  assert.ok(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`);
  const pttl0 = await r0.pTTL(k);
  assert.ok(pttl0 > 0 && pttl0 <= 10_000, `db 0 pttl ${pttl0}`);
  assert.equal(await c.lockRelease(k, 'Z'), 0);
  assert.equal(await c.lockRelease(k, 'A'), 1);
  await assertOnlyIn(a, `${prefix}:*`, { 0: [k] });
  assert.equal(await getIn(a, 0, k), 'Z');

  // The same token in both: db's release deletes db's key only.
  assert.equal(await c.set(k, 'Z', { NX: true, PX: 10_000 }), 'OK');
  assert.equal(await c.lockRelease(k, 'Z'), 1);
  assert.equal(await getIn(a, 0, k), 'Z');
  assert.equal(await r0.lockRelease(k, 'Z'), 1);
  await assertOnlyIn(a, `${prefix}:*`, {});

  // TTL lapse in db: a new holder gets the name; the old one cannot
  // release it. db 0's key of the same name has no TTL and stays.
  assert.equal(await r0.set(k, 'Z'), 'OK');
  assert.equal(await c.set(k, 'B', { NX: true, PX: 300 }), 'OK');
  const t0 = Date.now();
  while ((await c.set(k, 'C', { NX: true, PX: 10_000 })) !== 'OK') {
    assert.ok(Date.now() - t0 < 3000, 'the lock never expired');
    await sleep(20);
  }
  assert.ok(Date.now() - t0 >= 250, `taken after ${Date.now() - t0} ms, before the 300 ms TTL ran out`);
  assert.equal(await c.lockRelease(k, 'B'), 0);
  assert.equal(await getIn(a, db, k), 'C');
  assert.equal(await getIn(a, 0, k), 'Z');
  assert.equal(await r0.pTTL(k), -1);
  assert.equal(await c.lockRelease(k, 'C'), 1);
  assert.equal(await r0.del(k), 1);
  await assertOnlyIn(a, `${prefix}:*`, {});
}

// reconnectKeepsDb kills c's connection from r0 and checks that c comes
// back on a new connection that selected db again.
async function reconnectKeepsDb(c, r0, db, prefix) {
  const a = addr();
  const before = await c.sendCommand(['CLIENT', 'INFO']);
  const ready = new Promise((resolve) => c.once('ready', resolve));
  assert.equal(await r0.sendCommand(['CLIENT', 'KILL', 'ID', String(idOf(before))]), 1);
  await withDeadline(ready, 10_000, 'reconnect');
  const info = await c.sendCommand(['CLIENT', 'INFO']);
  assert.notEqual(idOf(info), idOf(before), 'still the killed connection');
  assert.equal(dbOf(info), db);
  const k = `${prefix}:after-reconnect`;
  assert.equal(await c.set(k, 'A', { NX: true, PX: 10_000 }), 'OK');
  await assertOnlyIn(a, `${prefix}:*`, { [db]: [k] });
  assert.equal(await c.lockRelease(k, 'A'), 1);
}

describe('node-redis 4 with a database', () => {
  let r0;
  before(async () => {
    const a = addr();
    r0 = await nrConnect(createClient, { socket: { host: a.host, port: a.port } }, 'node-redis 4');
  });
  after(async () => { await nrClose(r0); });

  it('url redis://host:port/3: SELECT 3 on connect', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    let c;
    try {
      c = await nrConnect(createClient, { url: `redis://${rec.host}:${rec.port}/3` }, 'node-redis 4');
      assert.deepEqual(c.connectErrors, []);
      assert.equal(await c.ping(), 'PONG');
      const t = rec.transcript();
      const sel = t.filter((e) => e.cmd[0].toUpperCase() === 'SELECT');
      assert.deepEqual(sel.map((e) => [e.cmd, e.reply]), [[['SELECT', '3'], { ok: 'OK' }]], fmt(t));
      assert.ok(t.indexOf(sel[0]) < t.findIndex((e) => e.cmd[0] === 'PING'), fmt(t));
    } finally {
      await nrClose(c);
      await rec.close();
    }
  });

  it('url redis://host:port/3: lock, contend, extend, release, expire', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const c = await nrConnect(createClient, { url: `redis://${a.host}:${a.port}/3` }, 'node-redis 4');
    try {
      await nodeRedisLockCycle(c, r0, 3, uniq('nrdb'));
    } finally {
      await nrClose(c);
    }
  });

  it('{database: 5} locks the same name as db 3 independently', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const prefix = uniq('nrdb5');
    const k = `${prefix}:lock`;
    const c3 = await nrConnect(createClient, { url: `redis://${a.host}:${a.port}/3` }, 'node-redis 4');
    const c5 = await nrConnect(createClient, { socket: { host: a.host, port: a.port }, database: 5 }, 'node-redis 4');
    try {
      assert.equal(dbOf(await c5.sendCommand(['CLIENT', 'INFO'])), 5);
      assert.equal(await c3.set(k, 'three', { NX: true, PX: 10_000 }), 'OK');
      assert.equal(await c5.set(k, 'five', { NX: true, PX: 10_000 }), 'OK');
      assert.equal(await c5.set(k, 'again', { NX: true, PX: 10_000 }), null);
      await assertOnlyIn(a, `${prefix}:*`, { 3: [k], 5: [k] });
      assert.equal(await getIn(a, 3, k), 'three');
      assert.equal(await getIn(a, 5, k), 'five');
      assert.equal(await c5.lockRelease(k, 'three'), 0);
      assert.equal(await c5.lockRelease(k, 'five'), 1);
      await assertOnlyIn(a, `${prefix}:*`, { 3: [k] });
      assert.equal(await c3.lockRelease(k, 'three'), 1);
      await assertOnlyIn(a, `${prefix}:*`, {});
    } finally {
      await nrClose(c3);
      await nrClose(c5);
    }
  });

  it('reconnects to the same database', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const c = await nrConnect(createClient, { url: `redis://${a.host}:${a.port}/3` }, 'node-redis 4');
    try {
      await reconnectKeepsDb(c, r0, 3, uniq('nrdb:re'));
    } finally {
      await nrClose(c);
    }
  });

  it('database 16 is out of range', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const c = createClient({ url: `redis://${a.host}:${a.port}/16`, socket: { reconnectStrategy: false } });
    const errors = [];
    c.on('error', (err) => errors.push(err));
    await assert.rejects(withDeadline(c.connect(), 10_000, 'connect'), /DB index is out of range/);
    await c.disconnect().catch(() => {});
  });
});

describe('node-redis 6 with a database', () => {
  let r0;
  before(async () => {
    const a = addr();
    r0 = await nrConnect(createClient6, { socket: { host: a.host, port: a.port } }, 'node-redis 6');
  });
  after(async () => { await nrClose(r0); });

  it('url redis://host:port/3: HELLO 3, then SELECT 3', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    let c;
    try {
      c = await nrConnect(createClient6, { url: `redis://${rec.host}:${rec.port}/3` }, 'node-redis 6');
      assert.equal(await c.ping(), 'PONG');
      const t = rec.transcript();
      const names = t.map((e) => e.cmd[0].toUpperCase());
      assert.equal(names[0], 'HELLO', fmt(t));
      const sel = t.filter((e) => e.cmd[0].toUpperCase() === 'SELECT');
      assert.deepEqual(sel.map((e) => [e.cmd, e.reply]), [[['SELECT', '3'], { ok: 'OK' }]], fmt(t));
    } finally {
      await nrClose(c);
      await rec.close();
    }
  });

  it('url redis://host:port/3: lock, contend, extend, release, expire', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const c = await nrConnect(createClient6, { url: `redis://${a.host}:${a.port}/3` }, 'node-redis 6');
    try {
      await nodeRedisLockCycle(c, r0, 3, uniq('nr6db'));
    } finally {
      await nrClose(c);
    }
  });

  it('reconnects to the same database', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const c = await nrConnect(createClient6, { socket: { host: a.host, port: a.port }, database: 4 }, 'node-redis 6');
    try {
      await reconnectKeepsDb(c, r0, 4, uniq('nr6db:re'));
    } finally {
      await nrClose(c);
    }
  });
});

// --- ioredis ---------------------------------------------------------------

async function ready(client) {
  if (client.status === 'ready') return;
  await withDeadline(new Promise((resolve, reject) => {
    client.once('ready', resolve);
    client.once('error', reject);
  }), 10_000, 'ioredis ready');
}

// ioClose quits a ready client and drops any other one: an ioredis client
// whose SELECT is refused never becomes ready and reconnects for ever.
async function ioClose(c) {
  if (!c) return;
  if (c.status === 'ready') await c.quit();
  else c.disconnect();
}

function ioConnect(Ctor, opts) {
  const c = new Ctor(opts); // options or a redis:// URL
  c.defineCommand('lockRelease', { numberOfKeys: 1, lua: RELEASE });
  c.defineCommand('lockExtend', { numberOfKeys: 1, lua: EXTEND });
  return c;
}

for (const [name, Ctor] of [['ioredis 5', Redis], ['ioredis 6', Redis6]]) {
  describe(`${name} with db: 2`, () => {
    let r0;
    before(async () => {
      const a = addr();
      r0 = ioConnect(Ctor, { host: a.host, port: a.port });
      await ready(r0);
    });
    after(async () => { await ioClose(r0); });

    it('SELECT 2 before the INFO ready check', { timeout: TEST_TIMEOUT }, async () => {
      const rec = await startRecorder(addr());
      const c = ioConnect(Ctor, { host: rec.host, port: rec.port, db: 2 });
      try {
        await ready(c);
        const t = rec.transcript();
        const sel = t.findIndex((e) => e.cmd[0].toLowerCase() === 'select');
        const info = t.findIndex((e) => e.cmd[0].toLowerCase() === 'info');
        assert.ok(sel >= 0 && info > sel, fmt(t));
        assert.deepEqual([t[sel].cmd, t[sel].reply], [['select', '2'], { ok: 'OK' }], fmt(t));
      } finally {
        c.disconnect();
        await rec.close();
      }
    });

    for (const form of ['options', 'url']) {
      it(`lock cycle on db 2 (${form})`, { timeout: TEST_TIMEOUT }, async () => {
        const a = addr();
        const c = form === 'url'
          ? ioConnect(Ctor, `redis://${a.host}:${a.port}/2`)
          : ioConnect(Ctor, { host: a.host, port: a.port, db: 2 });
        const prefix = uniq(`iodb:${form}`);
        const k = `${prefix}:lock`;
        try {
          await ready(c);
          assert.equal(dbOf(await c.client('INFO')), 2);
          assert.equal(await c.set(k, 'A', 'PX', 10_000, 'NX'), 'OK');
          await assertOnlyIn(a, `${prefix}:*`, { 2: [k] });
          assert.equal(await r0.get(k), null);
          assert.equal(await r0.set(k, 'Z', 'PX', 10_000, 'NX'), 'OK');
          assert.equal(await c.set(k, 'X', 'PX', 10_000, 'NX'), null);
          await assertOnlyIn(a, `${prefix}:*`, { 0: [k], 2: [k] });
          assert.equal(await c.lockExtend(k, 'Z', 60_000), 0);
          assert.equal(await c.lockExtend(k, 'A', 30_000), 1);
          const pttl = await c.pttl(k);
          assert.ok(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`);
          const pttl0 = await r0.pttl(k);
          assert.ok(pttl0 > 0 && pttl0 <= 10_000, `db 0 pttl ${pttl0}`);
          // After SCRIPT FLUSH: EVALSHA, NOSCRIPT, EVAL, still in db 2.
          assert.equal(await r0.script('FLUSH'), 'OK');
          assert.equal(await c.lockRelease(k, 'Z'), 0);
          assert.equal(await c.lockRelease(k, 'A'), 1);
          await assertOnlyIn(a, `${prefix}:*`, { 0: [k] });
          assert.equal(await getIn(a, 0, k), 'Z');
          // TTL lapse in db 2.
          assert.equal(await c.set(k, 'B', 'PX', 300, 'NX'), 'OK');
          const t0 = Date.now();
          while ((await c.set(k, 'C', 'PX', 10_000, 'NX')) !== 'OK') {
            assert.ok(Date.now() - t0 < 3000, 'the lock never expired');
            await sleep(20);
          }
          assert.ok(Date.now() - t0 >= 250, `taken after ${Date.now() - t0} ms`);
          assert.equal(await c.lockRelease(k, 'B'), 0);
          assert.equal(await getIn(a, 2, k), 'C');
          assert.equal(await getIn(a, 0, k), 'Z');
          assert.equal(await c.lockRelease(k, 'C'), 1);
          assert.equal(await r0.lockRelease(k, 'Z'), 1);
          await assertOnlyIn(a, `${prefix}:*`, {});
        } finally {
          await ioClose(c);
        }
      });
    }

    it('reconnects to the same database', { timeout: TEST_TIMEOUT }, async () => {
      const a = addr();
      const c = ioConnect(Ctor, { host: a.host, port: a.port, db: 2 });
      const prefix = uniq('iodb:re');
      try {
        await ready(c);
        const before = await c.client('INFO');
        assert.equal(dbOf(before), 2);
        const back = new Promise((resolve) => c.once('ready', resolve));
        assert.equal(await r0.client('KILL', 'ID', String(idOf(before))), 1);
        await withDeadline(back, 10_000, 'reconnect');
        const info = await c.client('INFO');
        assert.notEqual(idOf(info), idOf(before), 'still the killed connection');
        assert.equal(dbOf(info), 2);
        const k = `${prefix}:lock`;
        assert.equal(await c.set(k, 'A', 'PX', 10_000, 'NX'), 'OK');
        await assertOnlyIn(a, `${prefix}:*`, { 2: [k] });
        assert.equal(await c.lockRelease(k, 'A'), 1);
      } finally {
        await ioClose(c);
      }
    });
  });
}

// --- redlock -----------------------------------------------------------------

async function votes(attempt) {
  const s = await attempt;
  return { for: s.votesFor.size, against: s.votesAgainst.size, errors: [...s.votesAgainst.values()] };
}

describe('redlock on ioredis db: 2', () => {
  let c2;
  let r0;
  let redlock;
  let redlock0;
  before(async () => {
    const a = addr();
    c2 = new Redis({ host: a.host, port: a.port, db: 2 });
    r0 = new Redis({ host: a.host, port: a.port });
    await Promise.all([ready(c2), ready(r0)]);
    redlock = new Redlock([c2]);
    redlock0 = new Redlock([r0]);
  });
  after(async () => { await Promise.all([ioClose(c2), ioClose(r0)]); });

  it('acquire, extend, release in db 2 only', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const prefix = uniq('rldb');
    const res = `${prefix}:res`;
    const lock = await redlock.acquire([res], 2000);
    assert.equal(await getIn(a, 2, res), lock.value);
    await assertOnlyIn(a, `${prefix}:*`, { 2: [res] });
    // The same resource in db 0 is another lock.
    const lock0 = await redlock0.acquire([res], 10_000, { retryCount: 0 });
    assert.notEqual(lock0.value, lock.value);
    await assertOnlyIn(a, `${prefix}:*`, { 0: [res], 2: [res] });
    // In db 2 it is held.
    const err = await redlock.acquire([res], 2000, { retryCount: 0 }).catch((e) => e);
    assert.ok(err instanceof ExecutionError, String(err));
    const v = await votes(err.attempts[0]);
    assert.equal(v.against, 1);
    assert.ok(v.errors[0] instanceof ResourceLockedError, String(v.errors[0]));

    const ext = await lock.extend(8000);
    const pttl = await c2.pttl(res);
    assert.ok(pttl > 7000 && pttl <= 8000, `pttl ${pttl}`);
    const pttl0 = await r0.pttl(res);
    assert.ok(pttl0 > 0 && pttl0 <= 10_000, `db 0 pttl ${pttl0}`);
    await ext.release();
    await assertOnlyIn(a, `${prefix}:*`, { 0: [res] });
    assert.equal(await getIn(a, 0, res), lock0.value);
    await lock0.release();
    await assertOnlyIn(a, `${prefix}:*`, {});
  });

  it('a lapsed lock in db 2 is retaken; db 0 is untouched', { timeout: TEST_TIMEOUT }, async () => {
    const a = addr();
    const prefix = uniq('rldb:lapse');
    const res = `${prefix}:res`;
    await r0.set(res, 'db0');
    const holder = await redlock.acquire([res], 300);
    const lock = await redlock.acquire([res], 5000, { retryCount: 40, retryDelay: 50, retryJitter: 10 });
    assert.ok(lock.attempts.length > 1, `attempts ${lock.attempts.length}`);
    assert.equal(await getIn(a, 2, res), lock.value);
    await assert.rejects(holder.extend(1000), ExecutionError);
    await assert.rejects(redlock.release(holder, { retryCount: 0 }), ExecutionError);
    assert.equal(await getIn(a, 2, res), lock.value);
    assert.equal(await getIn(a, 0, res), 'db0');
    assert.equal(await r0.pttl(res), -1);
    await lock.release();
    await r0.del(res);
    await assertOnlyIn(a, `${prefix}:*`, {});
  });
});

describe('redlock on three instances, dbs 1, 2 and 3', () => {
  const list = addrs();
  const skip = list ? false : 'TUMBLER_ADDRS (three comma-separated addresses) is not set';
  const DB = [1, 2, 3];
  let clients = [];
  let redlock;
  before(async () => {
    if (skip) return;
    assert.equal(list.length, 3, 'TUMBLER_ADDRS must hold three addresses');
    clients = list.map((a, i) => new Redis({ host: a.host, port: a.port, db: DB[i] }));
    await Promise.all(clients.map(ready));
    redlock = new Redlock(clients);
  });
  after(async () => { await Promise.all(clients.map(ioClose)); });

  // Each instance must hold want[i] ({db: [keys]}) and nothing else.
  const onlyIn = async (pattern, want) => {
    for (let i = 0; i < list.length; i++) await assertOnlyIn(list[i], pattern, want[i]);
  };
  const values = (res) => Promise.all(list.map((a, i) => getIn(a, DB[i], res)));

  it('the lock lands in each instance\'s own database', { skip, timeout: TEST_TIMEOUT }, async () => {
    const prefix = uniq('rl3db');
    const res = `${prefix}:res`;
    const lock = await redlock.acquire([res], 3000);
    assert.deepEqual(await votes(lock.attempts[0]), { for: 3, against: 0, errors: [] });
    assert.deepEqual(await values(res), [lock.value, lock.value, lock.value]);
    await onlyIn(`${prefix}:*`, [{ 1: [res] }, { 2: [res] }, { 3: [res] }]);
    const ext = await lock.extend(9000);
    await votes(ext.attempts[0]);
    for (const c of clients) {
      const pttl = await c.pttl(res);
      assert.ok(pttl > 8000 && pttl <= 9000, `pttl ${pttl}`);
    }
    await ext.release();
    await onlyIn(`${prefix}:*`, [{}, {}, {}]);
  });

  it('keys of the same name in other databases are no votes', { skip, timeout: TEST_TIMEOUT }, async () => {
    const prefix = uniq('rl3db:squat');
    const res = `${prefix}:res`;
    // Squatters in instance 0's db 0 and db 2, instance 1's db 1 and db 3,
    // instance 2's db 0: none is the database that instance's client uses.
    const squat = [[0, 0], [0, 2], [1, 1], [1, 3], [2, 0]];
    for (const [i, db] of squat) assert.deepEqual(await probe(list[i], db, ['SET', res, 'squatter']), ['OK']);
    const lock = await redlock.acquire([res], 3000, { retryCount: 0 });
    assert.deepEqual(await votes(lock.attempts[0]), { for: 3, against: 0, errors: [] });
    assert.deepEqual(await values(res), [lock.value, lock.value, lock.value]);
    await lock.release();
    for (const [i, db] of squat) {
      assert.equal(await getIn(list[i], db, res), 'squatter');
      assert.deepEqual(await probe(list[i], db, ['DEL', res]), [1]);
    }
    await onlyIn(`${prefix}:*`, [{}, {}, {}]);
  });

  it('holders in the instances\' own databases are votes against', { skip, timeout: TEST_TIMEOUT }, async () => {
    const prefix = uniq('rl3db:held');
    const res = `${prefix}:res`;
    // One holder (instance 2, db 3): 2 of 3, still a lock.
    await clients[2].set(res, 'other', 'PX', 10_000);
    const lock = await redlock.acquire([res], 3000, { retryCount: 0 });
    const v = await votes(lock.attempts[0]);
    assert.deepEqual([v.for, v.against], [2, 1]);
    assert.ok(v.errors[0] instanceof ResourceLockedError);
    assert.deepEqual(await values(res), [lock.value, lock.value, 'other']);
    await lock.release().catch(() => {});
    // Two holders (instance 0, db 1, too): no lock, and the minority it
    // took on instance 1 is released.
    await clients[0].set(res, 'other', 'PX', 10_000);
    const err = await redlock.acquire([res], 3000, { retryCount: 0 }).catch((e) => e);
    assert.ok(err instanceof ExecutionError, String(err));
    const v2 = await votes(err.attempts[0]);
    assert.deepEqual([v2.for, v2.against], [1, 2]);
    assert.deepEqual(await values(res), ['other', null, 'other']);
    await onlyIn(`${prefix}:*`, [{ 1: [res] }, {}, { 3: [res] }]);
    await clients[0].del(res);
    await clients[2].del(res);
  });
});
