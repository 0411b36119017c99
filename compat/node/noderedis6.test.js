'use strict';
// node-redis 6 (package "redis", npm alias "redis6"), unmodified and with
// default settings, against tumbler.
//
//   TUMBLER_ADDR=127.0.0.1:6379 node --test noderedis6.test.js
//
// What the client sends: node-redis 6 speaks RESP3 by default with no
// fallback: HELLO 3 must succeed. Then CLIENT SETINFO LIB-VER / LIB-NAME and,
// because RESP3 turns maintenance notifications to "auto",
// CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type <type>; errors on these
// three are ignored (Redis 7.x answers the last one "unknown subcommand").
// Scripts made with defineScript run as EVALSHA, and as EVAL after an error
// starting with "NOSCRIPT". multi().exec() after a WATCH whose key changed
// rejects with WatchError.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { createClient, defineScript, WatchError } = require('redis6');
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

// node-redis 5+ scripts build their arguments with a parser.
const scripts = {
  lockRelease: defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: RELEASE,
    parseCommand(parser, key, token) {
      parser.pushKey(key);
      parser.push(token);
    },
    transformReply(reply) { return reply; },
  }),
  lockExtend: defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: EXTEND,
    parseCommand(parser, key, token, ms) {
      parser.pushKey(key);
      parser.push(token, String(ms));
    },
    transformReply(reply) { return reply; },
  }),
};

// Default options, plus the address and the scripts.
async function connect(a = addr(), extra = {}) {
  const errors = [];
  const client = createClient({ socket: { host: a.host, port: a.port }, scripts, ...extra });
  client.on('error', (err) => errors.push(err));
  await withDeadline(client.connect(), 10_000, 'node-redis 6 connect');
  client.connectErrors = errors;
  return client;
}

function pairs(flat) {
  const o = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[flat[i]] = flat[i + 1];
  return o;
}

describe('node-redis 6', () => {
  let r;
  before(async () => { r = await connect(); });
  after(async () => { await r.quit(); });

  it('connects: HELLO 3 (no fallback), CLIENT SETINFO, MAINT_NOTIFICATIONS', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = await connect(rec);
    try {
      assert.equal(c.isOpen, true);
      assert.equal(c.isReady, true);
      assert.deepEqual(c.connectErrors, []);
      assert.equal(await c.ping(), 'PONG');
      const t = rec.transcript();
      assert.deepEqual(t[0].cmd, ['HELLO', '3'], fmt(t));
      const hello = pairs(t[0].reply);
      assert.equal(hello.proto, 3, fmt(t));
      assert.equal(hello.server, 'redis');
      assert.match(hello.version, /^7\./);
      assert.equal(typeof hello.id, 'number');
      const names = t.map((e) => e.cmd.slice(0, 3).join(' ').toUpperCase());
      assert.deepEqual(names, [
        'HELLO 3',
        'CLIENT SETINFO LIB-VER',
        'CLIENT SETINFO LIB-NAME',
        'CLIENT MAINT_NOTIFICATIONS ON',
        'PING',
      ], fmt(t));
      // SETINFO is accepted (tumbler reports 7.2; redis-server 7.0 answers
      // "unknown subcommand", also ignored); MAINT_NOTIFICATIONS gets
      // Redis 7's answer for an unknown CLIENT subcommand, which the client
      // ignores in its default "auto" mode.
      assert.deepEqual(t[1].reply, { ok: 'OK' });
      assert.deepEqual(t[2].reply, { ok: 'OK' });
      assert.deepEqual(t[3].reply, { err: "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP." });
      assert.deepEqual(t[4].reply, { ok: 'PONG' });
      assert.equal(await c.echo('tumbler'), 'tumbler');
    } finally {
      await c.quit();
      await rec.close();
    }
  });

  it('RESP3 replies: SET with {NX, PX}, null, PTTL, EVAL conversions', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = await connect(rec);
    const k = uniq('nr6:set');
    try {
      assert.equal(await c.set(k, 'tok', { NX: true, PX: 600 }), 'OK');
      assert.equal(await c.set(k, 'other', { NX: true, PX: 600 }), null);
      assert.equal(await c.get(k), 'tok');
      const pttl = await c.pTTL(k);
      assert.ok(pttl > 300 && pttl <= 600, `pttl ${pttl}`);
      const sets = rec.transcript().filter((e) => e.cmd[0] === 'SET');
      assert.deepEqual(sets.map((e) => [e.cmd, e.reply]), [
        [['SET', k, 'tok', 'PX', '600', 'NX'], { ok: 'OK' }],
        // A failed SET NX is RESP3 null (_), not :0.
        [['SET', k, 'other', 'PX', '600', 'NX'], null],
      ]);
      assert.deepEqual(await c.eval('return {KEYS[1], ARGV[1], 2.5, 42}', { keys: [k], arguments: ['x'] }), [k, 'x', 2, 42]);
      assert.equal(await c.eval('return false'), null);
      assert.equal(await c.eval('return {ok="FINE"}'), 'FINE');
      await assert.rejects(c.eval('return {err="LOCKED by someone"}'), (err) => {
        assert.equal(err.message, 'LOCKED by someone');
        return true;
      });
      await sleep(750);
      assert.equal(await c.get(k), null);
      assert.equal(await c.exists(k), 0);
      assert.equal(await c.setNX(k, 'v3'), 1);
      assert.equal(await c.pTTL(k), -1);
      assert.equal(await c.del(k), 1);
    } finally {
      await c.quit();
      await rec.close();
    }
  });

  it('defineScript: EVALSHA, EVAL on NOSCRIPT, then EVALSHA', { timeout: TEST_TIMEOUT }, async () => {
    assert.equal(await r.scriptFlush(), 'OK');
    const rec = await startRecorder(addr());
    const c = await connect(rec);
    const k = uniq('nr6:define');
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
    const a = await connect();
    const b = await connect();
    const k = uniq('nr6:lock');
    try {
      assert.equal(await a.set(k, 'A', { NX: true, PX: 400 }), 'OK');
      assert.equal(await b.set(k, 'B', { NX: true, PX: 10_000 }), null);
      assert.equal(await b.get(k), 'A');
      assert.ok((await b.pTTL(k)) <= 400);
      assert.equal(await b.lockExtend(k, 'B', 10_000), 0);
      assert.equal(await a.lockExtend(k, 'A', 2000), 1);
      const pttl = await a.pTTL(k);
      assert.ok(pttl > 1500 && pttl <= 2000, `pttl ${pttl}`);
      assert.equal(await b.lockRelease(k, 'B'), 0);
      assert.equal(await a.lockRelease(k, 'A'), 1);
      assert.equal(await a.lockRelease(k, 'A'), 0);
      assert.equal(await b.set(k, 'B', { NX: true, PX: 300 }), 'OK');
      const t0 = Date.now();
      while ((await a.set(k, 'A2', { NX: true, PX: 5000 })) !== 'OK') {
        assert.ok(Date.now() - t0 < 3000, 'lock never expired');
        await sleep(20);
      }
      assert.ok(Date.now() - t0 >= 250, 'acquired before the 300 ms TTL ran out');
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

  it('MULTI/EXEC with WATCH: optimistic extend and release, WatchError on a conflicting write', { timeout: TEST_TIMEOUT }, async () => {
    const a = await connect();
    const b = await connect();
    const k = uniq('nr6:watch');
    try {
      assert.equal(await a.set(k, 'A', { NX: true, PX: 1000 }), 'OK');
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.get(k), 'A');
      assert.deepEqual(await a.multi().pExpire(k, 5000).exec(), [1]);
      assert.ok((await a.pTTL(k)) > 4000);
      // a conflicting write between WATCH and EXEC: EXEC replies null and
      // node-redis rejects with WatchError
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.get(k), 'A');
      assert.equal(await b.set(k, 'B'), 'OK');
      await assert.rejects(a.multi().del(k).exec(), WatchError);
      assert.equal(await a.get(k), 'B');
      // UNWATCH after a token mismatch; the next transaction runs
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.unwatch(), 'OK');
      assert.equal(await b.set(k, 'B2'), 'OK');
      assert.deepEqual(await a.multi().get(k).exec(), ['B2']);
      // release by the holder
      assert.equal(await b.watch(k), 'OK');
      assert.equal(await b.get(k), 'B2');
      assert.deepEqual(await b.multi().del(k).exec(), [1]);
      assert.equal(await a.exists(k), 0);
      // a runtime error inside EXEC is an element of the reply array
      // (node-redis rejects with a MultiErrorReply that carries them all)
      assert.equal(await a.set(k, 'notanumber'), 'OK');
      await assert.rejects(a.multi().incr(k).get(k).exec(), (err) => {
        assert.deepEqual(err.errorIndexes, [0]);
        assert.match(err.replies[0].message, /^ERR value is not an integer/);
        assert.equal(err.replies[1], 'notanumber');
        return true;
      });
      // a queueing error aborts the transaction (EXEC replies EXECABORT;
      // node-redis reports the queueing error itself), and the connection
      // is out of MULTI afterwards
      await assert.rejects(a.multi().addCommand(['NOSUCHCOMMAND']).get(k).exec(), /^Error: ERR unknown command 'NOSUCHCOMMAND'/);
      assert.equal(await a.get(k), 'notanumber');
      assert.equal(await a.del(k), 1);
    } finally {
      await a.quit();
      await b.quit();
    }
  });

  it('mutual exclusion stress: SET NX PX + scripted release', { timeout: 60_000 }, async () => {
    const WORKERS = 24;
    const CYCLES = 15;
    const clients = await Promise.all(Array.from({ length: 4 }, () => connect()));
    const lockKey = uniq('nr6:stress:lock');
    const counterKey = uniq('nr6:stress:counter');
    await setNXStress({
      name: 'node-redis 6', clients, r, lockKey, counterKey, workers: WORKERS, cycles: CYCLES,
      acquire: async (c, key, token) => (await c.set(key, token, { NX: true, PX: 10_000 })) === 'OK',
      release: (c, key, token) => c.lockRelease(key, token),
    });
  });
});
