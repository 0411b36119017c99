package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// worker is one goroutine of a run. Each worker owns its key range (all
// keys for contended), its tokens, its histogram and its counters; only
// connections may be shared.
type worker struct {
	id     int
	r      *runner
	conns  []*sharedConn // one per address
	rng    *rand.Rand
	hist   *hdrhistogram.Histogram
	st     *counters
	lo, hi int // key range [lo, hi)
	next   int // next key in the range (round robin)

	tokID uint64     // counter part of the next token
	tok   [][]byte   // one 32-byte token per pipeline slot
	keys  [][]byte   // one key buffer per pipeline slot (and per address)
	held  []int      // slots acquired in the current pipelined batch
	ovs   []overlaps // their counted double grants (lostAt), by slot
	retry []int      // slots whose release met NOSCRIPT

	at        int           // the address whose reply is read (redlock's change; badReply)
	grantedOn []bool        // redlock: which addresses granted the current attempt
	redial    []bool        // redlock: which addresses the current attempt reconnects
	claims    []redialClaim // and its claims on them (runner.claimRedial)
}

const tokenLen = 32

func (w *worker) initToken() {
	p := max(w.r.o.Pipeline, 1)
	w.tok = make([][]byte, p)
	w.keys = make([][]byte, p)
	w.ovs = make([]overlaps, p)
	// 4 hex digits of worker id, 12 random, then a 16-digit counter: every
	// acquisition has a token no other acquisition shares, in this run or
	// another. The random part is not drawn from the seed, or two runs
	// with the same seed would use the same tokens.
	prefix := fmt.Sprintf("%04x%012x", w.id&0xffff, rand.Uint64()&0xffffffffffff)
	for i := range w.tok {
		w.tok[i] = make([]byte, tokenLen)
		copy(w.tok[i], prefix)
	}
}

const hexDigits = "0123456789abcdef"

// token gives slot i a fresh token and returns it.
func (w *worker) token(i int) []byte {
	t := w.tok[i]
	n := w.tokID
	w.tokID++
	for j := tokenLen - 1; j >= 16; j-- {
		t[j] = hexDigits[n&15]
		n >>= 4
	}
	return t
}

// key renders key number k into slot i's buffer: prefix + 9 digits.
func (w *worker) key(i, k int) []byte {
	b := append(w.keys[i][:0], w.r.keyPrefix...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(k), 10)
	for n := len(s); n < 9; n++ {
		b = append(b, '0')
	}
	b = append(b, s...)
	w.keys[i] = b
	return b
}

// nextKey returns the next key of the worker's range, round robin.
func (w *worker) nextKey() int {
	k := w.next
	w.next++
	if w.next >= w.hi {
		w.next = w.lo
	}
	return k
}

func (w *worker) sleepJitter() {
	d := w.r.o.Retry/2 + time.Duration(w.rng.Int64N(int64(w.r.o.Retry)))
	time.Sleep(d)
}

func (w *worker) hold() {
	if w.r.o.Hold > 0 {
		time.Sleep(w.r.o.Hold)
	}
}

// badReply counts an error or unexpected reply, from address w.at.
func (w *worker) badReply(what string, rep Reply) {
	w.st.errors.Add(1)
	w.r.noteErr(w.r.o.Addrs[w.at] + ": " + what + ": " + rep.String())
}

func (w *worker) run() error {
	switch w.r.o.Workload {
	case "cycle":
		return w.loop(w.cycle)
	case "contended":
		return w.loop(w.contended)
	case "extend":
		return w.extend()
	case "pipelined":
		return w.loop(w.pipelined)
	case "redlock":
		return w.loop(w.redlock)
	case "fill":
		return w.fill()
	}
	return fmt.Errorf("bench: unknown workload %q", w.r.o.Workload)
}

func (w *worker) loop(op func() error) error {
	for !w.r.stop.Load() {
		t0 := w.r.now()
		if err := op(); err != nil {
			w.failed(t0)
			return err
		}
	}
	return nil
}

// failed records in the latency histogram, but not as an op, the
// operation begun at t0 that an I/O error cut short (a broken
// connection, or a server that stalled until the run's cutoff): a
// stalled server's waits show in the tail, not only in the errors.
func (w *worker) failed(t0 int64) {
	recordLatency(w.hist, w.r.now()-t0, 1)
}

// writeSetNX buffers SET key tok NX PX ttl.
func (w *worker) writeSetNX(c *Conn, key, tok []byte) {
	c.WriteArray(6)
	c.WriteBulkString("SET")
	c.WriteBulk(key)
	c.WriteBulk(tok)
	c.WriteBulkString("NX")
	c.WriteBulkString("PX")
	c.WriteBulkInt(w.r.o.TTL.Milliseconds())
	w.st.reqs.Add(1)
}

// writeScript buffers EVALSHA sha 1 key args..., or EVAL body 1 key
// args... when eval is set.
func (w *worker) writeScript(c *Conn, eval bool, sha, body string, key []byte, args ...[]byte) {
	c.WriteArray(4 + len(args))
	if eval {
		c.WriteBulkString("EVAL")
		c.WriteBulkString(body)
	} else {
		c.WriteBulkString("EVALSHA")
		c.WriteBulkString(sha)
	}
	c.WriteBulkString("1")
	c.WriteBulk(key)
	for _, a := range args {
		c.WriteBulk(a)
	}
	w.st.reqs.Add(1)
}

// readScript reads the reply to a script call written with writeScript and,
// when the server answers NOSCRIPT (its cache was flushed), runs it again
// with EVAL. It returns the script's integer result, or ok=false after
// counting an error reply.
func (w *worker) readScript(c *Conn, what, sha, body string, key []byte, args ...[]byte) (n int64, ok bool, err error) {
	rep, err := c.ReadReply()
	if err != nil {
		return 0, false, err
	}
	if rep.IsErr() && bytes.HasPrefix(rep.Str, []byte("NOSCRIPT")) {
		w.st.noscript.Add(1)
		w.writeScript(c, true, sha, body, key, args...)
		if err := c.Flush(); err != nil {
			return 0, false, err
		}
		if rep, err = c.ReadReply(); err != nil {
			return 0, false, err
		}
	}
	if rep.Kind != KindInt {
		w.badReply(what, rep)
		return 0, false, nil
	}
	return rep.Int, true, nil
}

// acquireReply classifies the reply to SET NX: granted, refused (nil), or
// an error reply (counted).
func (w *worker) acquireReply(rep Reply) (granted, refused bool) {
	switch {
	case rep.IsOK():
		return true, false
	case rep.Nil:
		return false, true
	}
	w.badReply("SET NX", rep)
	return false, false
}

// granted records in the registry that this worker holds key k, acquired
// with a request sent at sent; it counts a violation when another worker
// still held it, and returns that violation's overlap (registry), to be
// passed, with the one releasing returns, to the lease's lostAt.
func (w *worker) granted(k int, sent int64) *overlap {
	ok, expired, ov := w.r.reg.acquired(k, w.id, sent+int64(w.r.o.TTL), w.r.now)
	switch {
	case ok:
	case expired:
		w.st.expired.Add(1)
	default:
		w.st.violations.Add(1)
	}
	return ov
}

// released counts the reply of a release of a lock whose lease was known
// to last until leaseEnd, and that was part of the counted double grants
// ovs: 1 deleted our lock, 0 means it was no longer ours (lostAt).
func (w *worker) released(n, leaseEnd int64, ovs overlaps) {
	if n != 1 {
		w.lostAt(leaseEnd, ovs)
	}
}

// lostAt counts a release or extension that found the lock no longer held
// with our token, its reply just read, the lease known to last until
// leaseEnd. The server granted the lock after we sent the acquire (or
// extension) that began the lease, so it could expire only TTL after
// that: a reply read before leaseEnd means the server ran our request
// while the lock was still ours, and found it gone or another's token in
// it. Another client was granted it, or deleted or extended it, while we
// held it: a violation, whether or not the workload gives two workers the
// same key (the cycle, pipelined and extend workloads' workers own their
// keys, so this is their check). After leaseEnd the lease may have
// expired: a plain loss.
//
// A loss within the lease of a lease the registry saw granted twice (ovs:
// its grant over another holder's, or another's over it) is that double
// grant, already counted: it claims it, and counts nothing more. Each
// counted double grant is claimed once, so a loss the other lease of it
// claimed first is counted.
func (w *worker) lostAt(leaseEnd int64, ovs overlaps) {
	if w.r.now() < leaseEnd {
		if ovs.claim() {
			return
		}
		w.st.violations.Add(1)
		w.st.lostEarly.Add(1)
		return
	}
	w.st.lost.Add(1)
}

func (w *worker) record(start int64, ops int64) {
	recordLatency(w.hist, w.r.now()-start, ops)
	w.st.ops.Add(ops)
}

// cycle is one uncontended lock cycle: SET NX PX, then the release script.
// Its latency counts from before it waits for a shared connection (as
// contended's does), and the connection is free for others while it holds
// the lock.
func (w *worker) cycle() error {
	sc := w.conns[0]
	k := w.nextKey()
	key, tok := w.key(0, k), w.token(0)
	t0 := w.r.now()
	sc.mu.Lock()
	c := sc.conn()
	sent := w.r.now()
	w.writeSetNX(c, key, tok)
	err := c.Flush()
	var rep Reply
	if err == nil {
		rep, err = c.ReadReply()
	}
	if err != nil {
		sc.mu.Unlock()
		return err
	}
	if ok, refused := w.acquireReply(rep); !ok {
		sc.mu.Unlock()
		if refused {
			w.st.busy.Add(1)
		}
		return nil
	}
	ov := w.granted(k, sent)
	if w.r.o.Hold > 0 {
		sc.mu.Unlock()
		w.hold()
		sc.mu.Lock()
	}
	err = w.release(sc.conn(), k, key, tok, t0, sent, ov)
	sc.mu.Unlock()
	return err
}

// release clears the registry entry, runs the release script on c and
// records the finished cycle that started at t0; the lock's acquire was
// sent at sent, and its grant counted as the violation ov (if not nil).
func (w *worker) release(c *Conn, k int, key, tok []byte, t0, sent int64, ov *overlap) error {
	ovs := overlaps{ov, w.r.reg.releasing(k, w.id)}
	w.writeScript(c, false, w.r.releaseSHA, ReleaseScript, key, tok)
	if err := c.Flush(); err != nil {
		return err
	}
	n, ok, err := w.readScript(c, "release", w.r.releaseSHA, ReleaseScript, key, tok)
	if err != nil || !ok {
		return err
	}
	w.released(n, sent+int64(w.r.o.TTL), ovs)
	w.record(t0, 1)
	return nil
}

// contended picks a random hot key and retries with jitter until it gets
// it, then releases it.
func (w *worker) contended() error {
	sc := w.conns[0]
	k := w.lo + w.rng.IntN(w.hi-w.lo)
	key, tok := w.key(0, k), w.token(0)
	t0 := w.r.now()
	for {
		sc.mu.Lock()
		c := sc.conn()
		sent := w.r.now()
		w.writeSetNX(c, key, tok)
		err := c.Flush()
		var rep Reply
		if err == nil {
			rep, err = c.ReadReply()
		}
		if err != nil {
			sc.mu.Unlock()
			return err
		}
		ok, refused := w.acquireReply(rep)
		if ok {
			ov := w.granted(k, sent)
			sc.mu.Unlock()
			w.hold()
			sc.mu.Lock()
			err := w.release(sc.conn(), k, key, tok, t0, sent, ov)
			sc.mu.Unlock()
			return err
		}
		sc.mu.Unlock()
		if !refused {
			return nil
		}
		w.st.busy.Add(1)
		if w.r.stop.Load() {
			return nil
		}
		w.sleepJitter()
	}
}

// extend is the watchdog pattern: acquire one key, then keep extending its
// lease with the compare-and-PEXPIRE script; each extension is one op.
// The lock is released when the run ends. As in the other workloads, the
// connection is held for one request and its reply at a time (workers
// may share it: Conns < Workers), and an error reply is counted and the
// work goes on: a refused or failed acquire is tried again after a
// jitter, a failed extension at once (the lease stands until the next
// one finds it gone).
func (w *worker) extend() error {
	sc := w.conns[0]
	k := w.lo
	key := w.key(0, k)
	ttl := []byte(strconv.FormatInt(w.r.o.TTL.Milliseconds(), 10))
	var tok []byte
	held := false
	var leaseFrom int64 // when the request that began the current lease was sent
	var ov *overlap     // its grant, when counted as a violation
	for !w.r.stop.Load() {
		t0 := w.r.now()
		if !held {
			tok = w.token(0)
			sc.mu.Lock()
			c := sc.conn()
			w.writeSetNX(c, key, tok)
			err := c.Flush()
			ok, refused := false, false
			if err == nil {
				var rep Reply
				if rep, err = c.ReadReply(); err == nil {
					ok, refused = w.acquireReply(rep) // (before the unlock: rep is in c's buffer)
				}
			}
			sc.mu.Unlock()
			if err != nil {
				w.failed(t0)
				return err
			}
			if !ok {
				if refused {
					w.st.busy.Add(1)
				}
				w.sleepJitter()
				continue
			}
			ov = w.granted(k, t0)
			held, leaseFrom = true, t0
			continue
		}
		sc.mu.Lock()
		c := sc.conn()
		w.writeScript(c, false, w.r.extendSHA, ExtendScript, key, tok, ttl)
		err := c.Flush()
		var n int64
		ok := false
		if err == nil {
			n, ok, err = w.readScript(c, "extend", w.r.extendSHA, ExtendScript, key, tok, ttl)
		}
		sc.mu.Unlock()
		if err != nil {
			w.failed(t0)
			return err
		}
		if !ok {
			continue // an error reply, counted
		}
		if n != 1 {
			// The lease ran out under us (or, before it could have, was
			// taken: lostAt): count it and take the lock again.
			w.lostAt(leaseFrom+int64(w.r.o.TTL), overlaps{ov, w.r.reg.releasing(k, w.id)})
			held = false
			continue
		}
		leaseFrom = t0
		w.r.reg.extended(k, w.id, t0+int64(w.r.o.TTL))
		w.record(t0, 1)
	}
	if !held {
		return nil
	}
	ovs := overlaps{ov, w.r.reg.releasing(k, w.id)}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.conn()
	w.writeScript(c, false, w.r.releaseSHA, ReleaseScript, key, tok)
	if err := c.Flush(); err != nil {
		return err
	}
	n, ok, err := w.readScript(c, "release", w.r.releaseSHA, ReleaseScript, key, tok)
	if err == nil && ok {
		w.released(n, leaseFrom+int64(w.r.o.TTL), ovs)
	}
	return err
}

// pipelined acquires Pipeline distinct keys in one pipeline, then releases
// the ones it got in a second.
func (w *worker) pipelined() error {
	sc := w.conns[0]
	p := w.r.o.Pipeline
	t0 := w.r.now() // before the wait for a shared connection, as cycle's
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.conn()
	sent := w.r.now()
	leaseEnd := sent + int64(w.r.o.TTL)
	first := w.next
	for i := 0; i < p; i++ {
		w.writeSetNX(c, w.key(i, w.nextKey()), w.token(i))
	}
	if err := c.Flush(); err != nil {
		return err
	}
	w.held = w.held[:0]
	for i := 0; i < p; i++ {
		rep, err := c.ReadReply()
		if err != nil {
			return err
		}
		ok, refused := w.acquireReply(rep)
		if ok {
			w.held = append(w.held, i)
		} else if refused {
			w.st.busy.Add(1)
		}
	}
	span := w.hi - w.lo
	keyOf := func(i int) int { return w.lo + (first-w.lo+i)%span }
	for _, i := range w.held {
		w.ovs[i][0] = w.granted(keyOf(i), sent)
	}
	for _, i := range w.held {
		w.ovs[i][1] = w.r.reg.releasing(keyOf(i), w.id)
		w.writeScript(c, false, w.r.releaseSHA, ReleaseScript, w.keys[i], w.tok[i])
	}
	if err := c.Flush(); err != nil {
		return err
	}
	// A NOSCRIPT answer makes readScript send EVAL and read its reply in
	// the middle of the pipeline's replies, which would misalign them; so
	// read them all first and run the NOSCRIPT ones again after.
	var done int64
	w.retry = w.retry[:0]
	for _, i := range w.held {
		rep, err := c.ReadReply()
		if err != nil {
			return err
		}
		switch {
		case rep.Kind == KindInt:
			w.released(rep.Int, leaseEnd, w.ovs[i])
			done++
		case rep.IsErr() && bytes.HasPrefix(rep.Str, []byte("NOSCRIPT")):
			w.st.noscript.Add(1)
			w.retry = append(w.retry, i)
		default:
			w.badReply("release", rep)
		}
	}
	for _, i := range w.retry {
		w.writeScript(c, true, "", ReleaseScript, w.keys[i], w.tok[i])
		if err := c.Flush(); err != nil {
			return err
		}
		n, ok, err := w.readScript(c, "release", w.r.releaseSHA, ReleaseScript, w.keys[i], w.tok[i])
		if err != nil {
			return err
		}
		if ok {
			w.released(n, leaseEnd, w.ovs[i])
			done++
		}
	}
	if done > 0 {
		w.record(t0, done)
	}
	return nil
}

// redlock acquires one key on a majority of the addresses (requests to all
// of them in flight at once), then releases it on all of them; on failing
// to reach a majority it releases what it got and retries with jitter.
//
// An address whose connection fails or times out has it given up
// (nodeFailed), and the attempts after go on without it, as Redlock
// tolerates a minority of nodes down; a majority of all the addresses is
// still needed. Once its reconnect is due (runner.redialDue) an attempt
// dials it a new connection (reconnect), as a pooled client replaces a
// connection that failed; while fewer than a majority have a connection
// or are due one, the worker waits for the next reconnect to be due. The
// worker holds the connections for the attempt but for its Hold, when
// the other workers may use them: its releases go on the connections its
// acquires went on, or on the ones that replaced them meanwhile.
//
// An attempt that got the lock is an op only when a majority of the
// addresses answered its release (each that did not is an error): with
// fewer, the lock is left held until its TTL, as redsync's Unlock fails
// then. Such an attempt is not in the latency histogram either.
//
// The mutual exclusion check counts only the nodes that granted this
// attempt, each on the connection its release then goes to: a given up
// connection is never read again, and a lock its late SET took on its
// node (or a grant never released there) stays out of the check and
// expires with its TTL, the node refusing that key meanwhile (Busy).
func (w *worker) redlock() error {
	n := len(w.conns)
	quorum := n/2 + 1
	k := w.nextKey()
	key, tok := w.key(0, k), w.token(0)
	t0 := w.r.now() // before the wait for shared connections, as cycle's
	for _, sc := range w.conns {
		sc.mu.Lock()
	}
	defer func() {
		for _, sc := range w.conns {
			sc.mu.Unlock()
		}
	}()
	if len(w.grantedOn) != n {
		w.grantedOn = make([]bool, n)
		w.redial = make([]bool, n)
		w.claims = make([]redialClaim, n)
	}
	for {
		if !w.redlockNodes(quorum) {
			if w.r.stop.Load() {
				return nil
			}
			continue
		}
		sent := w.r.now()
		end := time.Now().Add(w.r.o.NodeTimeout)
		// the connections in place first: a reconnect's dial must not
		// hold up their requests
		for i, sc := range w.conns {
			c := sc.conn()
			if c == nil {
				continue
			}
			w.r.deadlineAt(c, end)
			w.writeSetNX(c, key, tok)
			if err := c.Flush(); err != nil {
				w.nodeFailed(i, err)
			}
		}
		for i := range w.conns {
			if !w.redial[i] {
				continue
			}
			c := w.reconnect(i, end)
			if c == nil {
				continue
			}
			w.r.deadlineAt(c, end)
			w.writeSetNX(c, key, tok)
			if err := c.Flush(); err != nil {
				w.nodeFailed(i, err)
			}
		}
		got := 0
		for i, sc := range w.conns {
			w.grantedOn[i] = false
			c := sc.conn()
			if c == nil {
				continue
			}
			w.awaitBy(c, end)
			rep, err := c.ReadReply()
			if err != nil {
				w.nodeFailed(i, err)
				continue
			}
			if w.redial[i] {
				w.r.nodeAnswered(i)
			}
			w.at = i
			ok, refused := w.acquireReply(rep)
			w.at = 0
			w.grantedOn[i] = ok
			if ok {
				got++
			} else if refused {
				w.st.busy.Add(1)
			}
		}
		// Redlock's validity rule: the lock counts only if it was
		// obtained within its TTL.
		valid := w.r.now()-sent < int64(w.r.o.TTL)
		var ovs overlaps // the lock's counted double grants (lostAt)
		if got >= quorum && valid {
			ovs[0] = w.granted(k, sent)
			if w.r.o.Hold > 0 {
				// the connections are the others' meanwhile, as in cycle
				// (taken back in the same order: no worker waits for one
				// another holds while holding one it waits for)
				for _, sc := range w.conns {
					sc.mu.Unlock()
				}
				w.hold()
				for _, sc := range w.conns {
					sc.mu.Lock()
				}
			}
			ovs[1] = w.r.reg.releasing(k, w.id)
		}
		end = time.Now().Add(w.r.o.NodeTimeout)
		for i, sc := range w.conns {
			c := sc.conn()
			if c == nil {
				continue
			}
			w.r.deadlineAt(c, end)
			w.writeScript(c, false, w.r.releaseSHA, ReleaseScript, key, tok)
			if err := c.Flush(); err != nil {
				w.nodeFailed(i, err)
			}
		}
		freed := 0 // granting nodes whose release was answered
		for i, sc := range w.conns {
			c := sc.conn()
			if c == nil {
				continue
			}
			w.awaitBy(c, end)
			w.at = i
			n, ok, err := w.readScript(c, "release", w.r.releaseSHA, ReleaseScript, key, tok)
			w.at = 0
			if err != nil {
				w.nodeFailed(i, err)
				continue
			}
			if ok && w.grantedOn[i] {
				// a node that granted the lock must still have it
				w.released(n, sent+int64(w.r.o.TTL), ovs)
				freed++
			}
		}
		if got >= quorum && valid {
			// An op is a lock taken and given back: released on a
			// majority, as redsync's Unlock needs (a node's answer, 0
			// included, as cycle's). Fewer, and the lock stays held
			// until its TTL: not an op, as a cycle whose release failed
			// is not; each release that failed is an error already.
			if freed >= quorum {
				w.record(t0, 1)
			}
			return nil
		}
		if w.r.stop.Load() {
			return nil
		}
		// The same token for the next try, as redsync keeps one value
		// for all the tries of a Lock: a SET of this one that a given up
		// connection still delivers to its node (one that stalled) is
		// taken off by the next try's release, rather than refusing the
		// key to every try until its TTL ends.
		w.sleepJitter()
	}
}

// redlockNodes prepares an attempt: it marks in w.redial the addresses
// without a connection whose reconnect is due, and claims them
// (runner.claimRedial). It reports false, sending nothing being
// pointless, when the addresses with a connection and those marked are
// fewer than a majority; it has then waited until the next reconnect is
// due or the run stopped.
func (w *worker) redlockNodes(quorum int) bool {
	live, due := 0, 0
	next := int64(0) // when the next reconnect is due, if none is now
	for i, sc := range w.conns {
		w.redial[i] = false
		if sc.conn() != nil {
			live++
			continue
		}
		if ok, at := w.r.redialDue(i); ok {
			w.redial[i] = true
			due++
		} else if next == 0 || at < next {
			next = at
		}
	}
	if live+due >= quorum {
		for i, r := range w.redial {
			if !r {
				continue
			}
			cl, ok := w.r.claimRedial(i)
			if !ok {
				w.redial[i] = false // another worker's reconnect tries it
				due--
			}
			w.claims[i] = cl
		}
		if live+due >= quorum {
			return true
		}
		for i, r := range w.redial {
			if r { // not to be dialled after all: due for the others as before
				w.r.unclaimRedial(i, w.claims[i])
				w.redial[i] = false
			}
		}
	}
	if next != 0 {
		w.r.sleep(max(time.Until(time.Unix(0, next)), time.Millisecond))
	}
	return false
}

// replyGrace is how long a redlock read may still take once its
// attempt's NodeTimeout has passed while the worker waited for another
// address: a reply already in is read, not discarded for a deadline the
// wait for someone else used up.
const replyGrace = time.Millisecond

// awaitBy sets c's deadline for reading a reply of an attempt that waits
// until end, or for replyGrace when end has passed.
func (w *worker) awaitBy(c *Conn, end time.Time) {
	w.r.deadlineAt(c, later(end, time.Now().Add(replyGrace)))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// nodeFailed gives up redlock's connection to address i (shared by other
// workers, held by this one) after it failed or a reply took longer than
// NodeTimeout: it is closed, for the late reply must never be read as
// another request's, and a later attempt dials a new one once the
// address is due a reconnect. The failure counts as an error, with the
// address named.
func (w *worker) nodeFailed(i int, err error) {
	sc := w.conns[i]
	c := sc.conn()
	if c == nil {
		return
	}
	// the backoff first: no worker finds the connection gone and the
	// address due at once
	w.r.nodeDown(i)
	sc.c.Store(nil)
	c.Close()
	w.st.errors.Add(1)
	if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().UnixNano() < w.r.cutoff.Load() {
		err = fmt.Errorf("no reply within the node timeout (%v): %w", w.r.o.NodeTimeout, err)
	}
	w.r.noteErr(w.r.o.Addrs[i] + ": " + err.Error())
}

// reconnect dials redlock address i a new connection, where the worker's
// shared connection to it has none (nodeFailed gave it up, or it could
// not be made at the start), for an attempt that waits for the address
// until end: the dial ends by then, and by the run's cutoff (runner.cut
// is cancelled when that moves to now). A dial that fails counts as an
// error, with the address named, and puts the next try off (nodeDown);
// reconnect returns nil then.
func (w *worker) reconnect(i int, end time.Time) *Conn {
	addr := w.r.o.Addrs[i]
	deadline := time.Unix(0, min(end.UnixNano(), w.r.cutoff.Load()))
	if !time.Now().Before(deadline) {
		// A reconnect before it (to another address) took the attempt's
		// time: this one is not tried, nor counted, and is due again.
		w.r.unclaimRedial(i, w.claims[i])
		return nil
	}
	ctx, cancel := context.WithDeadline(w.r.cut, deadline)
	c, err := dial(ctx, addr, &w.r.o)
	cancel()
	if err != nil {
		w.r.nodeDown(i)
		w.st.errors.Add(1)
		msg := "reconnect: " + err.Error()
		if !strings.Contains(msg, addr) {
			msg = addr + ": " + msg
		}
		w.r.noteErr(msg)
		return nil
	}
	w.conns[i].c.Store(c)
	w.st.reconnects.Add(1)
	return c
}

// fill sets every key of the worker's range once (SET key tok PX ttl NX),
// Pipeline at a time, and leaves them held: it loads a server with a known
// number of locks.
func (w *worker) fill() error {
	sc := w.conns[0]
	p := w.r.o.Pipeline
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.conn()
	for k := w.lo; k < w.hi; {
		if w.r.stop.Load() {
			return nil
		}
		t0 := w.r.now()
		n := min(p, w.hi-k)
		for i := 0; i < n; i++ {
			w.writeSetNX(c, w.key(i, k+i), w.token(i))
		}
		if err := c.Flush(); err != nil {
			return err
		}
		var done int64
		for i := 0; i < n; i++ {
			rep, err := c.ReadReply()
			if err != nil {
				return err
			}
			if ok, refused := w.acquireReply(rep); ok {
				done++
			} else if refused {
				w.st.busy.Add(1)
			}
		}
		if done > 0 {
			w.record(t0, done)
		}
		k += n
	}
	return nil
}
