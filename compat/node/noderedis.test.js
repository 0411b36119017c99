'use strict';
// node-redis 4 (package "redis"), unmodified and with default settings,
// against tumbler.
//
//   TUMBLER_ADDR=127.0.0.1:6379 node --test noderedis.test.js
//
// What the client sends: on connect CLIENT SETINFO LIB-VER/LIB-NAME (an error
// reply is ignored), nothing else unless a database, name or password is
// configured. SET with {NX, PX} goes out as SET k v PX n NX. Scripts made
// with defineScript run as EVALSHA, and as EVAL after an error starting with
// "NOSCRIPT".

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { createClient, defineScript } = require('redis');
const { addr, sleep, uniq, startRecorder, fmt, withDeadline, setNXStress } = require('./lib/wire');

const TEST_TIMEOUT = 30_000;
const sha1 = (s) => crypto.createHash('sha1').update(s).digest('hex');

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

const scripts = {
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

// Default options, plus the address (and the scripts where asked for).
async function connect(a = addr(), extra = {}) {
  const errors = [];
  const client = createClient({ socket: { host: a.host, port: a.port }, ...extra });
  client.on('error', (err) => errors.push(err));
  await withDeadline(client.connect(), 10_000, 'node-redis connect');
  client.connectErrors = errors;
  return client;
}

describe('node-redis 4', () => {
  let r;
  before(async () => { r = await connect(); });
  after(async () => { await r.quit(); });

  it('connects: createClient + connect', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = await connect(rec);
    try {
      assert.equal(c.isOpen, true);
      assert.equal(c.isReady, true);
      assert.deepEqual(c.connectErrors, []);
      assert.equal(await c.ping(), 'PONG');
      const t = rec.transcript();
      // The handshake is the two SETINFO calls (their replies are ignored:
      // Redis 7.0 answers an error, 7.2 +OK), then our PING.
      assert.deepEqual(t.slice(0, 2).map((e) => e.cmd.slice(0, 3).join(' ').toUpperCase()).sort(), [
        'CLIENT SETINFO LIB-NAME', 'CLIENT SETINFO LIB-VER',
      ], fmt(t));
      assert.deepEqual(t.slice(2).map((e) => e.cmd), [['PING']], fmt(t));
      assert.deepEqual(t[2].reply, { ok: 'PONG' });
    } finally {
      await c.quit();
      await rec.close();
    }
    // The URL form works too.
    const a = addr();
    const u = createClient({ url: `redis://${a.host}:${a.port}` });
    u.on('error', () => {});
    await withDeadline(u.connect(), 10_000, 'node-redis connect by url');
    assert.equal(await u.echo('tumbler'), 'tumbler');
    await u.quit();
  });

  it('SET with {NX, PX}, GET, PTTL, expiry', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = await connect(rec);
    const k = uniq('nr:set');
    try {
      assert.equal(await c.set(k, 'tok', { NX: true, PX: 600 }), 'OK');
      assert.equal(await c.set(k, 'other', { NX: true, PX: 600 }), null);
      assert.equal(await c.get(k), 'tok');
      const pttl = await c.pTTL(k);
      assert.ok(pttl > 300 && pttl <= 600, `pttl ${pttl}`);
      const t = rec.transcript().filter((e) => e.cmd[0] === 'SET');
      assert.deepEqual(t.map((e) => [e.cmd, e.reply]), [
        [['SET', k, 'tok', 'PX', '600', 'NX'], { ok: 'OK' }],
        // A failed SET NX is a null bulk, not :0.
        [['SET', k, 'other', 'PX', '600', 'NX'], null],
      ]);
    } finally {
      await c.quit();
      await rec.close();
    }
    await sleep(750);
    assert.equal(await r.get(k), null);
    assert.equal(await r.exists(k), 0);
    assert.equal(await r.set(k, 'v2', { NX: true, EX: 5 }), 'OK');
    const ttl = await r.ttl(k);
    assert.ok(ttl > 3 && ttl <= 5, `ttl ${ttl}`);
    assert.equal(await r.setNX(k, 'v3'), false);
    assert.equal(await r.del(k), 1);
    assert.equal(await r.setNX(k, 'v3'), true);
    assert.equal(await r.pTTL(k), -1);
    assert.equal(await r.get(k), 'v3');
    assert.equal(await r.del(k), 1);
  });

  it('EVAL, EVALSHA, SCRIPT LOAD/EXISTS', { timeout: TEST_TIMEOUT }, async () => {
    const k = uniq('nr:eval');
    assert.equal(await r.eval('return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2], "NX")', { keys: [k], arguments: ['tok', '1000'] }), 'OK');
    assert.equal(await r.eval('return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2], "NX")', { keys: [k], arguments: ['tok', '1000'] }), null);
    assert.deepEqual(await r.eval('return {KEYS[1], ARGV[1], 2.5, 42}', { keys: [k], arguments: ['x'] }), [k, 'x', 2, 42]);
    assert.equal(await r.eval('return redis.call("pttl", KEYS[1]) > 0', { keys: [k] }), 1);
    assert.equal(await r.eval('return redis.call("get", "nr:missing:" .. ARGV[1])', { arguments: [k] }), null);

    const sha = await r.scriptLoad(RELEASE);
    assert.equal(sha, sha1(RELEASE));
    assert.deepEqual(await r.scriptExists([sha, sha1('return "never loaded"')]), [true, false]);
    assert.equal(await r.evalSha(sha, { keys: [k], arguments: ['wrong'] }), 0);
    assert.equal(await r.get(k), 'tok');
    assert.equal(await r.evalSha(sha, { keys: [k], arguments: ['tok'] }), 1);
    assert.equal(await r.exists(k), 0);
    await assert.rejects(r.evalSha(sha1('return "never loaded"')), (err) => {
      assert.match(err.message, /^NOSCRIPT /);
      return true;
    });
    await assert.rejects(r.eval('return redis.call("nosuchcommand")'), /ERR/);
    await assert.rejects(r.eval('return {err="LOCKED by someone"}'), (err) => {
      assert.equal(err.message, 'LOCKED by someone');
      return true;
    });
    assert.equal(await r.eval('return {ok="FINE"}'), 'FINE');
  });

  it('defineScript: EVALSHA, EVAL on NOSCRIPT, then EVALSHA', { timeout: TEST_TIMEOUT }, async () => {
    assert.equal(await r.scriptFlush(), 'OK');
    const rec = await startRecorder(addr());
    const c = await connect(rec, { scripts });
    const k = uniq('nr:define');
    try {
      assert.equal(await c.set(k, 'tok', { NX: true, PX: 1000 }), 'OK');
      assert.equal(await c.lockExtend(k, 'tok', 5000), 1);
      const pttl = await c.pTTL(k);
      assert.ok(pttl > 4000 && pttl <= 5000, `pttl ${pttl}`);
      assert.equal(await c.lockExtend(k, 'wrong', 10), 0);
      assert.equal(await c.lockRelease(k, 'wrong'), 0);
      assert.equal(await c.get(k), 'tok');
      assert.equal(await c.lockRelease(k, 'tok'), 1);
      assert.equal(await c.exists(k), 0);
      const t = rec.transcript().filter((e) => /^EVAL/.test(e.cmd[0]));
      const name = (s) => (s === RELEASE ? 'RELEASE' : s === EXTEND ? 'EXTEND' : s === sha1(RELEASE) ? 'sha(RELEASE)' : s === sha1(EXTEND) ? 'sha(EXTEND)' : s);
      assert.deepEqual(t.map((e) => `${e.cmd[0]} ${name(e.cmd[1])} ${e.cmd.slice(2).join(' ')} -> ${JSON.stringify(e.reply)}`), [
        `EVALSHA sha(EXTEND) 1 ${k} tok 5000 -> {"err":"NOSCRIPT No matching script. Please use EVAL."}`,
        `EVAL EXTEND 1 ${k} tok 5000 -> 1`,
        `EVALSHA sha(EXTEND) 1 ${k} wrong 10 -> 0`,
        `EVALSHA sha(RELEASE) 1 ${k} wrong -> {"err":"NOSCRIPT No matching script. Please use EVAL."}`,
        `EVAL RELEASE 1 ${k} wrong -> 0`,
        `EVALSHA sha(RELEASE) 1 ${k} tok -> 1`,
      ], fmt(t));
    } finally {
      await c.quit();
      await rec.close();
    }
  });

  it('lock cycle: acquire, contend, extend, release, expire, steal', { timeout: TEST_TIMEOUT }, async () => {
    const a = await connect(addr(), { scripts });
    const b = await connect(addr(), { scripts });
    const k = uniq('nr:lock');
    try {
      // acquire
      assert.equal(await a.set(k, 'A', { NX: true, PX: 400 }), 'OK');
      // contention: b cannot take it, and its failed SET leaves the key alone
      assert.equal(await b.set(k, 'B', { NX: true, PX: 10_000 }), null);
      assert.equal(await b.get(k), 'A');
      assert.ok((await b.pTTL(k)) <= 400);
      // extend (only the owner can)
      assert.equal(await b.lockExtend(k, 'B', 10_000), 0);
      assert.equal(await a.lockExtend(k, 'A', 2000), 1);
      const pttl = await a.pTTL(k);
      assert.ok(pttl > 1500 && pttl <= 2000, `pttl ${pttl}`);
      // release (only the owner can), then b gets it
      assert.equal(await b.lockRelease(k, 'B'), 0);
      assert.equal(await a.lockRelease(k, 'A'), 1);
      assert.equal(await a.lockRelease(k, 'A'), 0);
      assert.equal(await b.set(k, 'B', { NX: true, PX: 300 }), 'OK');
      const t0 = Date.now();
      // expiry: b never releases, a gets it after the TTL
      while ((await a.set(k, 'A2', { NX: true, PX: 5000 })) !== 'OK') {
        assert.ok(Date.now() - t0 < 3000, 'lock never expired');
        await sleep(20);
      }
      const waited = Date.now() - t0;
      assert.ok(waited >= 250, `acquired after ${waited} ms, before the 300 ms TTL ran out`);
      // the stale owner cannot release or extend the new lock
      assert.equal(await b.lockRelease(k, 'B'), 0);
      assert.equal(await b.lockExtend(k, 'B', 1), 0);
      assert.equal(await b.get(k), 'A2');
      assert.equal(await a.lockRelease(k, 'A2'), 1);
      assert.equal(await a.exists(k), 0);
    } finally {
      await a.quit();
      await b.quit();
    }
  });

  it('mutual exclusion stress: SET NX PX + scripted release', { timeout: 60_000 }, async () => {
    const WORKERS = 24;
    const CYCLES = 15;
    const clients = await Promise.all(Array.from({ length: 4 }, () => connect(addr(), { scripts })));
    const lockKey = uniq('nr:stress:lock');
    const counterKey = uniq('nr:stress:counter');
    await setNXStress({
      name: 'node-redis', clients, r, lockKey, counterKey, workers: WORKERS, cycles: CYCLES,
      acquire: async (c, key, token) => (await c.set(key, token, { NX: true, PX: 10_000 })) === 'OK',
      release: (c, key, token) => c.lockRelease(key, token),
    });
  });
});
