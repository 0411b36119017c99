'use strict';
// Shared helpers for the Node compat tests: server addresses from the
// environment, a recording TCP proxy that shows what an unmodified client
// puts on the wire and what the server answered, and small async utilities.

const net = require('node:net');
const crypto = require('node:crypto');

function parseAddr(s) {
  const i = s.lastIndexOf(':');
  if (i <= 0) throw new Error(`bad address ${JSON.stringify(s)}, want host:port`);
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
}

// TUMBLER_ADDR: the server every test uses. TUMBLER_ADDRS: three
// comma-separated addresses for the multi-instance Redlock tests.
function addr() {
  const a = process.env.TUMBLER_ADDR;
  if (!a) throw new Error('TUMBLER_ADDR (host:port) is not set');
  return parseAddr(a);
}

function addrs() {
  const a = process.env.TUMBLER_ADDRS;
  if (!a) return null;
  return a.split(',').map((s) => parseAddr(s.trim()));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function uniq(prefix) {
  return `${prefix}:${crypto.randomBytes(6).toString('hex')}`;
}

// --- RESP parsing (both directions) ---------------------------------------

// parse returns [value, nextOffset] or null when buf holds an incomplete
// value. Replies are decoded to plain JS: status {ok}, error {err}, integer
// number, bulk string, null, array.
function parse(buf, pos) {
  if (pos >= buf.length) return null;
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+': return [{ ok: line }, next];
    case '-': return [{ err: line }, next];
    case ':': return [Number(line), next];
    case '_': return [null, next];
    case '#': return [line === 't', next];
    case ',': return [Number(line), next];
    case '(': return [BigInt(line), next];
    case '$': case '=': case '!': {
      const n = Number(line);
      if (n < 0) return [null, next];
      if (buf.length < next + n + 2) return null;
      const s = buf.toString('utf8', next, next + n);
      return [type === '!' ? { err: s } : s, next + n + 2];
    }
    case '*': case '~': case '>': case '%': case '|': {
      let n = Number(line);
      if (n < 0) return [null, next];
      if (type === '%' || type === '|') n *= 2;
      const out = [];
      let p = next;
      for (let i = 0; i < n; i++) {
        const r = parse(buf, p);
        if (!r) return null;
        out.push(r[0]);
        p = r[1];
      }
      return [out, p];
    }
    default:
      // An inline command (only redis-cli style clients send these).
      return [line.split(' '), next];
  }
}

class Stream {
  constructor() { this.buf = Buffer.alloc(0); }
  push(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    const out = [];
    let pos = 0;
    for (;;) {
      const r = parse(this.buf, pos);
      if (!r) break;
      out.push(r[0]);
      pos = r[1];
    }
    this.buf = this.buf.subarray(pos);
    return out;
  }
}

// startRecorder listens on a free loopback port and forwards every
// connection to target ({host, port}). conns[i].transcript is the list of
// {cmd, reply} pairs seen on connection i, in order (clients here never use
// pub/sub, so replies pair with commands one to one).
async function startRecorder(target) {
  const conns = [];
  const sockets = new Set();
  const server = net.createServer((down) => {
    const conn = { transcript: [], pending: [] };
    conns.push(conn);
    const up = net.connect(target.port, target.host);
    sockets.add(down);
    sockets.add(up);
    const fromClient = new Stream();
    const fromServer = new Stream();
    down.on('data', (d) => {
      for (const cmd of fromClient.push(d)) {
        const entry = { cmd, reply: undefined };
        conn.transcript.push(entry);
        conn.pending.push(entry);
      }
      up.write(d);
    });
    up.on('data', (d) => {
      for (const reply of fromServer.push(d)) {
        const entry = conn.pending.shift();
        if (entry) entry.reply = reply;
      }
      down.write(d);
    });
    const closeBoth = () => { down.destroy(); up.destroy(); };
    down.on('close', closeBoth);
    up.on('close', closeBoth);
    down.on('error', closeBoth);
    up.on('error', closeBoth);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    host: '127.0.0.1',
    port: server.address().port,
    conns,
    // commands returns every command sent, lower-cased names, all connections.
    commands() {
      return conns.flatMap((c) => c.transcript.map((e) => e.cmd));
    },
    transcript() {
      return conns.flatMap((c) => c.transcript);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

// fmt renders a transcript for assertion messages.
function fmt(transcript) {
  const cut = (s) => (s.length > 300 ? `${s.slice(0, 300)}...(${s.length} chars)` : s);
  return transcript.map((e) => `${cut(JSON.stringify(e.cmd))} -> ${cut(JSON.stringify(e.reply, (k, v) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'undefined')}`).join('\n');
}

// Overlap-detecting critical-section bookkeeping shared by the stress tests.
class Exclusion {
  constructor() {
    this.holders = 0;
    this.maxHolders = 0;
    this.overlaps = 0;
    this.counter = 0;
  }
  enter() {
    this.holders++;
    if (this.holders > 1) this.overlaps++;
    this.maxHolders = Math.max(this.maxHolders, this.holders);
  }
  leave() { this.holders--; }
}

// withDeadline rejects if p does not settle within ms.
function withDeadline(p, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// setNXStress runs `workers` async workers, `cycles` lock cycles each, over
// `clients`: acquire with SET NX PX (retrying with jitter), a non-atomic
// read-modify-write of a local and a server-side counter inside the lock,
// release with a compare-and-delete script. It asserts zero overlaps, the
// exact counts, that the lock is gone, and that workers really contended.
// acquire(c, key, token) resolves to true on success; release(c, key, token)
// resolves to the script's integer reply; get/set operate on c.
async function setNXStress({ name, clients, r, lockKey, counterKey, workers, cycles, acquire, release }) {
  const assert = require('node:assert/strict');
  await r.set(counterKey, '0');
  const ex = new Exclusion();
  const started = Date.now();
  const deadline = started + 40_000;
  let contended = 0;
  const worker = async (id) => {
    const c = clients[id % clients.length];
    for (let i = 0; i < cycles; i++) {
      const token = `${id}:${i}:${crypto.randomBytes(4).toString('hex')}`;
      while (!(await acquire(c, lockKey, token))) {
        contended++;
        if (Date.now() > deadline) throw new Error(`worker ${id}: acquire timed out`);
        await sleep(1 + Math.floor(Math.random() * 3));
      }
      ex.enter();
      const local = ex.counter;
      const remote = Number(await c.get(counterKey));
      await sleep(0);
      ex.counter = local + 1;
      assert.equal(await c.set(counterKey, String(remote + 1)), 'OK');
      ex.leave();
      assert.equal(await release(c, lockKey, token), 1, `worker ${id} lost its lock`);
    }
  };
  try {
    await withDeadline(Promise.all(Array.from({ length: workers }, (_, id) => worker(id))), 50_000, `${name} stress`);
  } finally {
    await Promise.all(clients.map((c) => c.quit()));
  }
  const elapsed = Date.now() - started;
  assert.equal(ex.overlaps, 0, 'critical sections overlapped');
  assert.equal(ex.maxHolders, 1);
  assert.equal(ex.counter, workers * cycles);
  assert.equal(Number(await r.get(counterKey)), workers * cycles);
  assert.equal(await r.exists(lockKey), 0);
  assert.ok(contended > 0, 'the stress never contended; it proves nothing');
  console.log(`${name} stress: ${workers} workers x ${cycles} cycles in ${elapsed} ms (${contended} failed SET NX)`);
  await r.del(counterKey);
}

module.exports = {
  parseAddr, addr, addrs, sleep, uniq, startRecorder, fmt, Exclusion, withDeadline, setNXStress,
};
