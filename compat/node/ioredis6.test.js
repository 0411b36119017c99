'use strict';
// ioredis 6 (npm alias "ioredis6"), unmodified and with default settings,
// against tumbler.
//
//   TUMBLER_ADDR=127.0.0.1:6379 node --test ioredis6.test.js
//
// What the client sends: ioredis 6 speaks RESP3 by default. Its handshake is
// HELLO 3 (it gives up on RESP3 only when HELLO fails with NOPROTO or an
// "unknown command ... HELLO" error; any other HELLO error is fatal), then
// CLIENT SETINFO LIB-VER / LIB-NAME (errors ignored), then the INFO ready
// check (in RESP3 INFO is a verbatim string; ioredis parses its k:v lines and
// waits while loading:1). Scripts defined with defineCommand go out as EVAL
// the first time on a socket, EVALSHA after, and EVAL again after NOSCRIPT.
// multi()...exec() sends MULTI, the commands, EXEC; an EXEC aborted by WATCH
// resolves to null.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const Redis = require('ioredis6');
const { addr, sleep, uniq, startRecorder, fmt, withDeadline, setNXStress } = require('./lib/wire');

const TEST_TIMEOUT = 30_000;
const sha1 = (s) => crypto.createHash('sha1').update(s).digest('hex');

// The compare-and-delete release every SET NX lock uses, and its extend.
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

// Default ioredis options, plus the address.
function connect(a = addr()) {
  const c = new Redis({ host: a.host, port: a.port });
  c.defineCommand('lockRelease', { numberOfKeys: 1, lua: RELEASE });
  c.defineCommand('lockExtend', { numberOfKeys: 1, lua: EXTEND });
  return c;
}

async function ready(client) {
  if (client.status === 'ready') return;
  await withDeadline(new Promise((resolve, reject) => {
    client.once('ready', resolve);
    client.once('error', reject);
  }), 10_000, 'ioredis 6 ready');
}

// pairs turns the flat [k1, v1, k2, v2] the recorder makes of a RESP3 map
// into an object.
function pairs(flat) {
  const o = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[flat[i]] = flat[i + 1];
  return o;
}

describe('ioredis 6', () => {
  let r;
  before(async () => { r = connect(); await ready(r); });
  after(async () => { await r.quit(); });

  it('connects: HELLO 3, CLIENT SETINFO, then the INFO ready check', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = new Redis({ host: rec.host, port: rec.port });
    const errors = [];
    c.on('error', (err) => errors.push(err));
    try {
      await ready(c);
      assert.equal(c.status, 'ready');
      const t = rec.transcript();
      assert.deepEqual(t[0].cmd, ['hello', '3'], fmt(t));
      const hello = pairs(t[0].reply);
      assert.equal(hello.proto, 3, fmt(t));
      assert.equal(hello.server, 'redis');
      assert.match(hello.version, /^7\./);
      assert.equal(typeof hello.id, 'number');
      assert.equal(hello.mode, 'standalone');
      assert.equal(hello.role, 'master');
      assert.deepEqual(hello.modules, []);
      const setinfo = t.filter((e) => e.cmd[0].toLowerCase() === 'client' && e.cmd[1].toLowerCase() === 'setinfo');
      assert.deepEqual(setinfo.map((e) => e.cmd[2].toUpperCase()).sort(), ['LIB-NAME', 'LIB-VER'], fmt(t));
      const info = t.find((e) => e.cmd[0].toLowerCase() === 'info');
      assert.ok(info, `no INFO ready check on the wire:\n${fmt(t)}`);
      // RESP3 INFO is a verbatim string; the recorder keeps its "txt:" prefix.
      assert.match(info.reply, /^txt:/);
      assert.match(info.reply, /^redis_version:7\.\d+\.\d+\r$/m);
      assert.match(info.reply, /^loading:0\r$/m);
      // Nothing in the handshake was refused (tumbler reports 7.2 and takes
      // CLIENT SETINFO; redis-server 7.0 refuses it, which ioredis ignores).
      assert.deepEqual(t.filter((e) => e.reply && e.reply.err), [], fmt(t));
      assert.equal(await c.ping(), 'PONG');
      assert.equal(await c.echo('tumbler'), 'tumbler');
      // ioredis turns the INFO verbatim string back into text.
      assert.match(await c.info('server'), /^# Server\r\nredis_version:7\./);
      assert.deepEqual(errors, []);
    } finally {
      c.disconnect();
      await rec.close();
    }
  });

  it('RESP3 replies: SET NX PX, null, PTTL, EVAL conversions', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = new Redis({ host: rec.host, port: rec.port });
    const k = uniq('io6:set');
    try {
      await ready(c);
      assert.equal(await c.set(k, 'v1', 'PX', 600, 'NX'), 'OK');
      assert.equal(await c.set(k, 'v2', 'PX', 600, 'NX'), null);
      assert.equal(await c.get(k), 'v1');
      const pttl = await c.pttl(k);
      assert.ok(pttl > 300 && pttl <= 600, `pttl ${pttl}`);
      assert.equal(await c.get(uniq('io6:missing')), null);
      assert.deepEqual(await c.eval('return {KEYS[1], ARGV[1], 3.99, 7}', 1, k, 'a'), [k, 'a', 3, 7]);
      assert.equal(await c.eval('return false', 0), null);
      assert.equal(await c.eval('return true', 0), 1);
      assert.equal(await c.eval('return {ok="FINE"}', 0), 'FINE');
      await assert.rejects(c.eval('return {err="LOCKED by someone"}', 0), /LOCKED by someone/);
      await sleep(750);
      assert.equal(await c.exists(k), 0);
      // The failed SET NX went over the wire as RESP3 null (_), not :0.
      const sets = rec.transcript().filter((e) => e.cmd[0] === 'set');
      assert.deepEqual(sets.map((e) => e.reply), [{ ok: 'OK' }, null], fmt(sets));
    } finally {
      c.disconnect();
      await rec.close();
    }
  });

  it('defineCommand: EVAL, then EVALSHA, then EVAL again after NOSCRIPT', { timeout: TEST_TIMEOUT }, async () => {
    const rec = await startRecorder(addr());
    const c = connect(rec);
    try {
      await ready(c);
      const k = uniq('io6:define');
      assert.equal(await c.set(k, 'tok', 'PX', 1000, 'NX'), 'OK');
      assert.equal(await c.lockExtend(k, 'tok', 5000), 1);
      const pttl = await c.pttl(k);
      assert.ok(pttl > 4000 && pttl <= 5000, `pttl ${pttl}`);
      assert.equal(await c.lockExtend(k, 'wrong', 100), 0);
      assert.equal(await c.lockRelease(k, 'wrong'), 0);
      assert.equal(await c.script('FLUSH'), 'OK');
      assert.equal(await c.lockRelease(k, 'tok'), 1);
      assert.equal(await c.exists(k), 0);
      const t = rec.transcript().filter((e) => /^eval/i.test(e.cmd[0]));
      const name = (s) => (s === RELEASE ? 'RELEASE' : s === EXTEND ? 'EXTEND' : s === sha1(RELEASE) ? 'sha(RELEASE)' : s === sha1(EXTEND) ? 'sha(EXTEND)' : s);
      const show = (e) => `${e.cmd[0].toUpperCase()} ${name(e.cmd[1])} -> ${JSON.stringify(e.reply)}`;
      const shown = t.map(show);
      // First use of each script on this socket: EVALSHA or EVAL (ioredis
      // decides per socket); after SCRIPT FLUSH the EVALSHA fails with
      // NOSCRIPT and ioredis falls back to EVAL.
      assert.equal(shown.at(-2), 'EVALSHA sha(RELEASE) -> {"err":"NOSCRIPT No matching script. Please use EVAL."}', shown.join('\n'));
      assert.equal(shown.at(-1), 'EVAL RELEASE -> 1', shown.join('\n'));
      assert.ok(shown.includes('EVALSHA sha(EXTEND) -> 0'), shown.join('\n'));
    } finally {
      c.disconnect();
      await rec.close();
    }
  });

  it('lock cycle: acquire, contend, extend, release, expire, steal', { timeout: TEST_TIMEOUT }, async () => {
    const a = connect();
    const b = connect();
    const k = uniq('io6:lock');
    try {
      await Promise.all([ready(a), ready(b)]);
      assert.equal(await a.set(k, 'A', 'PX', 400, 'NX'), 'OK');
      // contention: b cannot take it, and its failed SET leaves the key alone
      assert.equal(await b.set(k, 'B', 'PX', 10_000, 'NX'), null);
      assert.equal(await b.get(k), 'A');
      assert.ok((await b.pttl(k)) <= 400);
      // extend (only the owner can)
      assert.equal(await b.lockExtend(k, 'B', 10_000), 0);
      assert.equal(await a.lockExtend(k, 'A', 2000), 1);
      const pttl = await a.pttl(k);
      assert.ok(pttl > 1500 && pttl <= 2000, `pttl ${pttl}`);
      // release (only the owner can), then b gets it
      assert.equal(await b.lockRelease(k, 'B'), 0);
      assert.equal(await a.lockRelease(k, 'A'), 1);
      assert.equal(await a.lockRelease(k, 'A'), 0);
      assert.equal(await b.set(k, 'B', 'PX', 300, 'NX'), 'OK');
      // expiry: b never releases, a gets it after the TTL
      const t0 = Date.now();
      while ((await a.set(k, 'A2', 'PX', 5000, 'NX')) !== 'OK') {
        assert.ok(Date.now() - t0 < 3000, 'lock never expired');
        await sleep(20);
      }
      assert.ok(Date.now() - t0 >= 250, 'acquired before the 300 ms TTL ran out');
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

  it('MULTI/EXEC with WATCH: optimistic extend and release, aborted by a conflicting write', { timeout: TEST_TIMEOUT }, async () => {
    const a = connect();
    const b = connect();
    const k = uniq('io6:watch');
    try {
      await Promise.all([ready(a), ready(b)]);
      assert.equal(await a.set(k, 'A', 'PX', 1000, 'NX'), 'OK');
      // extend: WATCH, GET, MULTI, PEXPIRE, EXEC
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.get(k), 'A');
      assert.deepEqual(await a.multi().pexpire(k, 5000).exec(), [[null, 1]]);
      assert.ok((await a.pttl(k)) > 4000);
      // a conflicting write between WATCH and EXEC aborts: exec() gives null
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.get(k), 'A');
      assert.equal(await b.set(k, 'B'), 'OK');
      assert.equal(await a.multi().del(k).exec(), null);
      assert.equal(await a.get(k), 'B');
      // a token mismatch: UNWATCH, and the next transaction is unaffected
      assert.equal(await a.watch(k), 'OK');
      assert.equal(await a.get(k), 'B');
      assert.equal(await a.unwatch(), 'OK');
      assert.equal(await b.set(k, 'B2'), 'OK');
      assert.deepEqual(await a.multi().get(k).exec(), [[null, 'B2']]);
      // release by the holder
      assert.equal(await b.watch(k), 'OK');
      assert.equal(await b.get(k), 'B2');
      assert.deepEqual(await b.multi().del(k).exec(), [[null, 1]]);
      assert.equal(await a.exists(k), 0);
      // errors: a runtime error is an element of the result, a queueing
      // error makes EXEC fail with EXECABORT
      assert.equal(await a.set(k, 'notanumber'), 'OK');
      const res = await a.multi().incr(k).get(k).exec();
      assert.match(res[0][0].message, /^ERR value is not an integer/);
      assert.deepEqual(res[1], [null, 'notanumber']);
      await assert.rejects(a.multi().call('nosuchcommand').get(k).exec(), /EXECABORT Transaction discarded because of previous errors/);
      assert.equal(await a.del(k), 1);
    } finally {
      await a.quit();
      await b.quit();
    }
  });

  it('mutual exclusion stress: SET NX PX + scripted release', { timeout: 60_000 }, async () => {
    const WORKERS = 24;
    const CYCLES = 15;
    const clients = Array.from({ length: 4 }, () => connect());
    await Promise.all(clients.map(ready));
    const lockKey = uniq('io6:stress:lock');
    const counterKey = uniq('io6:stress:counter');
    await setNXStress({
      name: 'ioredis 6', clients, r, lockKey, counterKey, workers: WORKERS, cycles: CYCLES,
      acquire: async (c, key, token) => (await c.set(key, token, 'PX', 10_000, 'NX')) === 'OK',
      release: (c, key, token) => c.lockRelease(key, token),
    });
  });
});
