package bench

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The lock scripts every Redis lock client uses: compare-and-delete to
// release, compare-and-PEXPIRE to extend.
const (
	ReleaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	ExtendScript  = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`
)

// Workloads lists the workload names Run accepts.
var Workloads = []string{"cycle", "contended", "extend", "pipelined", "redlock", "fill", "massexpiry"}

// Options configure a run. Zero values take the defaults documented on
// each field.
type Options struct {
	// Addrs are the servers, "host:port". Every workload but redlock uses
	// the first; redlock uses all of them.
	Addrs []string
	// Workload is one of Workloads. Default cycle.
	Workload string
	// Conns is the number of connections per address; workers share them
	// when there are fewer connections than workers. Default one per worker.
	Conns int
	// Workers is the number of goroutines issuing requests. Default 50.
	Workers int
	// Keys is the number of distinct lock keys. Default: workers/4 (at
	// least 1) for contended, 1,000,000 for massexpiry, workers*pipeline*4
	// for the others. The uncontended workloads split the keys into one
	// range per worker; fill sets exactly Keys keys; massexpiry loads
	// Keys keys that expire together.
	Keys int
	// Duration is how long to run. Default 10s. fill runs until every key
	// is set instead; massexpiry waits at most Duration after the last
	// deadline for the keys to be reclaimed.
	Duration time.Duration
	// TTL is the lock lease (PX). Default 30s. massexpiry sets its own
	// deadlines (Lead, Window).
	TTL time.Duration
	// Pipeline is the pipeline depth of pipelined, fill and massexpiry's
	// loading. Default 16 for pipelined, 64 for fill and massexpiry, 1
	// otherwise.
	Pipeline int
	// Window is the span massexpiry's deadlines fall in. Default 100ms.
	Window time.Duration
	// Lead is the time from the start of massexpiry's loading to the first
	// deadline; loading must end before it. Default 3s plus 10µs a key.
	Lead time.Duration
	// Interval is the pause between two GETs of one massexpiry worker.
	// Default 1ms; negative for none.
	Interval time.Duration
	// PollEvery is the pause between massexpiry's DBSIZE polls, which see
	// when the keys are gone. Default 1ms.
	PollEvery time.Duration
	// Hold is how long a worker keeps a lock before releasing it (the
	// critical section) in cycle, contended and redlock. Default 0.
	Hold time.Duration
	// Retry is the mean wait before retrying a refused acquire in
	// contended and redlock; each wait is uniform in [Retry/2, 3*Retry/2).
	// Default 1ms.
	Retry time.Duration
	// NodeTimeout is how long redlock waits for an address's replies to
	// one attempt's acquires, and then to its releases: an address that
	// has not answered by then fails that attempt, as one whose
	// connection failed does. Its connection, which could still get the
	// late reply, is closed, and the address left out of the attempts
	// that follow until a reconnect works: one is tried NodeTimeout (at
	// least 100ms) after the failure, and again as often while it stays
	// down, as a pooled client (redsync on go-redis) dials a new
	// connection in place of one that timed out. Default TTL/20
	// (redsync's timeout factor, 0.05), but at least a second, so that
	// by default only a node that stopped answering is timed out, not
	// one a scheduling or GC pause made late once.
	NodeTimeout time.Duration
	// Seed seeds key choice, tokens and jitter. 0 picks one at random;
	// Result.Seed reports the one used.
	Seed uint64
	// KeyPrefix prefixes every key. Default "tb:XXXX:" with XXXX derived
	// from the seed, or "lk:" for fill (12-byte keys: "lk:" + 9 digits).
	KeyPrefix string
	// Password, when set, is sent with AUTH on every connection, with User
	// when that is set too (an ACL user: AUTH user password).
	Password string
	User     string
	// TLS, when set, makes every connection a TLS one with this config.
	TLS *tls.Config
	// Progress, when set, receives a line every ProgressEvery (default 1s)
	// while the run lasts.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Latency holds latency percentiles in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	// Samples is how many latencies the figures come from: a p99.9 of
	// fewer than 1000 is one of the few highest, not a percentile.
	Samples int64 `json:"samples"`
}

// Result is the outcome of a run. An operation is one whole lock cycle
// (acquire and release, the release answered; for redlock, acquired on
// a majority of the addresses and released on a majority; for extend, one
// extension; for fill, one key set); its latency runs from the first
// request to the last reply, retries included. Requests counts every
// command sent.
type Result struct {
	Workload string   `json:"workload"`
	Addrs    []string `json:"addrs"`
	Workers  int      `json:"workers"`
	Conns    int      `json:"conns"`
	Keys     int      `json:"keys"`
	Pipeline int      `json:"pipeline"`
	TTLMs    int64    `json:"ttl_ms"`
	HoldUs   int64    `json:"hold_us"`
	// NodeTimeoutUs is redlock's NodeTimeout (other workloads: 0, left out).
	NodeTimeoutUs  int64   `json:"node_timeout_us,omitempty"`
	Seed           uint64  `json:"seed"`
	ElapsedSec     float64 `json:"elapsed_s"`
	Ops            int64   `json:"ops"`
	OpsPerSec      float64 `json:"ops_per_sec"`
	Requests       int64   `json:"requests"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	Latency        Latency `json:"latency_us"`
	// Errors counts error replies, unexpected replies and I/O failures.
	Errors int64 `json:"errors"`
	// Violations counts grants of a lock that another worker still held
	// within its lease, and releases and extensions that found their lock
	// gone or another's before their lease could have ended
	// (LostBeforeLease): mutual exclusion broken. Each double grant counts
	// once: a release or extension that finds its lock lost because of a
	// grant already counted (one of its lease over another worker's,
	// or another's over it; the first such loss of the two leases) is not
	// counted again.
	Violations int64 `json:"violations"`
	// LostBeforeLease counts the releases and extensions among Violations:
	// the server ran them before the lock could have expired (their reply
	// came back less than the TTL after the request that began the lease
	// was sent) and found the lock no longer held with the worker's token,
	// and no grant counted among Violations accounts for it.
	LostBeforeLease int64 `json:"lost_before_lease"`
	// Busy counts acquire attempts refused because the key was held.
	Busy int64 `json:"busy"`
	// Lost counts releases and extensions that found the lock no longer
	// held with the worker's token once its lease could have expired.
	Lost int64 `json:"lost"`
	// ExpiredTakeovers counts grants of a key whose previous holder's lease
	// may have expired: allowed, but a sign the TTL is too short.
	ExpiredTakeovers int64 `json:"expired_takeovers"`
	// NoScriptFallbacks counts EVALSHA requests answered NOSCRIPT (the
	// server's script cache was flushed, or it keeps none) and sent again
	// as EVAL: each is an extra request in Requests.
	NoScriptFallbacks int64 `json:"noscript_fallbacks"`
	// Reconnects counts the connections redlock dialled during the run
	// in place of ones that failed or timed out (or that could not be
	// made at the start): each of those failures is among Errors, and so
	// is each reconnect that failed. Other workloads: 0, left out.
	Reconnects int64 `json:"reconnects,omitempty"`
	// WorkersStopped counts the workers an I/O error ended before the
	// run did: a broken connection, or a server that did not answer by
	// the cutoff (Ctrl-C's too, after its second of grace). Nothing
	// replaces them: the run goes on with the others, and ends early when
	// none is left. Each is among Errors.
	WorkersStopped int    `json:"workers_stopped,omitempty"`
	FirstError     string `json:"first_error,omitempty"`
	// MassExpiry is set by the massexpiry workload only. There an
	// operation is one GET of a key that stays, and Latency covers the
	// GETs sent in the reclaim window (MassExpiry.ReclaimWindowMs).
	MassExpiry *MassExpiry `json:"mass_expiry,omitempty"`
}

// OK reports whether the run saw neither violations nor errors.
func (r *Result) OK() bool { return r.Violations == 0 && r.Errors == 0 }

// counters are one worker's tallies; the progress reporter reads them while
// the worker runs. Padded so workers do not share cache lines.
type counters struct {
	ops, reqs, errors, violations, busy, lost, expired atomic.Int64
	lostEarly, noscript, reconnects                    atomic.Int64
	_                                                  [64]byte
}

// sharedConn is one connection, locked for a whole request/reply exchange
// when workers share it.
//
// Redlock replaces it: c is nil while its address has no connection (one
// that failed or timed out, given up by worker.nodeFailed, or one that
// could not be made at the start), until an attempt dials a new one
// (worker.reconnect). Only a worker holding mu reads or replaces c for
// requests; cutOff reads it without mu, since it must end a wait that
// holds mu, so c is an atomic pointer.
type sharedConn struct {
	mu sync.Mutex
	c  atomic.Pointer[Conn]
}

func newSharedConn(c *Conn) *sharedConn {
	sc := &sharedConn{}
	sc.c.Store(c)
	return sc
}

// conn returns the connection, nil when redlock has none to its address.
func (sc *sharedConn) conn() *Conn { return sc.c.Load() }

// histMax is the longest latency the histograms hold; a longer one is
// recorded as histMax (a server stalled for over an hour).
const histMax = int64(time.Hour)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, 3) }

// recordLatency records ops operations of d nanoseconds each in h, d
// clamped to the histogram's range: a value out of range would be
// dropped, and a stalled server's longest waits with it.
func recordLatency(h *hdrhistogram.Histogram, d, ops int64) {
	_ = h.RecordValues(min(max(d, 1), histMax), ops)
}

type runner struct {
	o     Options
	start time.Time
	stop  atomic.Bool
	// halted is closed when stop is set (halt): it wakes a redlock worker
	// that waits for a reconnect.
	halted chan struct{}
	reg    *registry
	// cutoff is when the run stops waiting for any server (Unix ns):
	// past its planned end, or when ctx ends (see deadlineAt).
	cutoff atomic.Int64
	// cut is cancelled with the cutoff moved to now (cutOff): a redlock
	// reconnect dials within it.
	cut       context.Context
	cancelCut context.CancelFunc
	// redialAt is, for each redlock address, when its next reconnect may
	// be tried (Unix ns): 0 while it answers, so that every connection to
	// it that failed is replaced at the next attempt; a time while it is
	// down (see redialDue).
	redialAt   []atomic.Int64
	releaseSHA string
	extendSHA  string
	keyPrefix  string

	errMu    sync.Mutex
	firstErr string
}

func (r *runner) now() int64 { return int64(time.Since(r.start)) }

// deadlineAt gives c the deadline t, but no later than the run's cutoff.
// A cutoff moved earlier meanwhile (the run cut short) wins: the one who
// moves it sets it on every connection after it stores it, and this
// checks it after its own SetDeadline.
func (r *runner) deadlineAt(c *Conn, t time.Time) {
	dl := min(t.UnixNano(), r.cutoff.Load())
	_ = c.SetDeadline(time.Unix(0, dl))
	if cut := r.cutoff.Load(); cut < dl {
		_ = c.SetDeadline(time.Unix(0, cut))
	}
}

// cutOff ends every wait for a server now. A redlock worker that puts a
// new connection in place after this walk has passed it sets its deadline
// with deadlineAt, which then reads the new cutoff; one it put in place
// before, the walk finds.
func (r *runner) cutOff(conns [][]*sharedConn) {
	r.cutoff.Store(time.Now().UnixNano())
	if r.cancelCut != nil {
		r.cancelCut() // reconnects being dialled
	}
	for _, cs := range conns {
		for _, sc := range cs {
			if c := sc.conn(); c != nil { // (one nodeFailed closed takes it harmlessly)
				_ = c.SetDeadline(time.Now())
			}
		}
	}
}

// halt stops the workers once their operations in flight are done.
func (r *runner) halt() {
	if !r.stop.Swap(true) {
		close(r.halted)
	}
}

// sleep waits d, or until the run stops.
func (r *runner) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.halted:
	}
}

// minRedialEvery is the shortest interval between two reconnects to a
// redlock address that is down, whatever NodeTimeout.
const minRedialEvery = 100 * time.Millisecond

// redialEvery is how long a redlock address that failed is left alone
// before a reconnect is tried, and then between reconnects while it stays
// down. It is NodeTimeout, the longest an attempt waits for a reconnect
// (its dial and its replies): while a node stays down, its reconnects
// hold up one attempt at a time, not one a worker, and a node that
// answers again is used again within about NodeTimeout. It is at least
// minRedialEvery, so that a short NodeTimeout does not make an address
// that refuses connections take a dial every attempt. (go-redis, under
// redsync, likewise dials once a second a node whose dials fail.)
func (r *runner) redialEvery() time.Duration { return max(r.o.NodeTimeout, minRedialEvery) }

// nodeDown puts redlock address a's next reconnect off by redialEvery.
func (r *runner) nodeDown(a int) {
	r.redialAt[a].Store(time.Now().Add(r.redialEvery()).UnixNano())
}

// nodeAnswered records that address a answered a reconnected connection:
// its other connections that failed are replaced at once. (A time another
// worker's failure set meanwhile stays.)
func (r *runner) nodeAnswered(a int) {
	if at := r.redialAt[a].Load(); at != 0 {
		r.redialAt[a].CompareAndSwap(at, 0)
	}
}

// redialDue reports whether a reconnect to address a may be tried now,
// and if not, when.
func (r *runner) redialDue(a int) (due bool, at int64) {
	at = r.redialAt[a].Load()
	return at == 0 || time.Now().UnixNano() >= at, at
}

// redialClaim is a claim on an address's reconnect (claimRedial): the
// time it replaced and the one it set, 0 and 0 where none was set (the
// address answered since its last failure: every caller may reconnect).
type redialClaim struct{ prev, set int64 }

// claimRedial reports whether the caller may reconnect to address a now.
// While a is down, one caller an interval gets it: the claim moves the
// next try on by redialEvery.
func (r *runner) claimRedial(a int) (redialClaim, bool) {
	at := r.redialAt[a].Load()
	if at == 0 {
		return redialClaim{}, true
	}
	now := time.Now()
	set := now.Add(r.redialEvery()).UnixNano()
	if now.UnixNano() >= at && r.redialAt[a].CompareAndSwap(at, set) {
		return redialClaim{prev: at, set: set}, true
	}
	return redialClaim{}, false
}

// unclaimRedial gives back a claim the caller did not dial on: the
// address is due as it was, unless its time changed meanwhile.
func (r *runner) unclaimRedial(a int, cl redialClaim) {
	if cl.set != 0 {
		r.redialAt[a].CompareAndSwap(cl.set, cl.prev)
	}
}

func (r *runner) noteErr(msg string) {
	r.errMu.Lock()
	if r.firstErr == "" {
		r.firstErr = msg
	}
	r.errMu.Unlock()
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	if len(o.Addrs) == 0 {
		return o, errors.New("bench: no address")
	}
	if o.Workload == "" {
		o.Workload = "cycle"
	}
	known := false
	for _, w := range Workloads {
		known = known || w == o.Workload
	}
	if !known {
		return o, fmt.Errorf("bench: unknown workload %q (want one of %s)", o.Workload, strings.Join(Workloads, ", "))
	}
	if o.Workers < 0 || o.Conns < 0 || o.Keys < 0 || o.Pipeline < 0 || o.Duration < 0 || o.TTL < 0 || o.Hold < 0 || o.NodeTimeout < 0 {
		return o, errors.New("bench: workers, conns, keys, pipeline, duration, TTL, hold and node timeout must not be negative (0: the default)")
	}
	switch o.Workload {
	case "pipelined", "fill", "massexpiry":
	default:
		if o.Pipeline > 1 {
			return o, fmt.Errorf("bench: %s does not pipeline (pipeline applies to pipelined, fill and massexpiry)", o.Workload)
		}
	}
	if o.Workers <= 0 {
		o.Workers = 50
	}
	if o.Conns <= 0 || o.Conns > o.Workers {
		o.Conns = o.Workers
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.TTL%time.Millisecond != 0 {
		// sent as PX: 500us would be PX 0, refused, and 1.5ms PX 1
		return o, fmt.Errorf("bench: TTL %v is not a whole number of milliseconds (it is sent as PX)", o.TTL)
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = max(o.TTL/20, time.Second)
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Millisecond
	}
	if o.Pipeline <= 0 {
		switch o.Workload {
		case "pipelined":
			o.Pipeline = 16
		case "fill", "massexpiry":
			o.Pipeline = 64
		default:
			o.Pipeline = 1
		}
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	if o.Keys <= 0 {
		if o.Workload == "fill" {
			return o, errors.New("bench: fill needs a key count")
		}
		switch o.Workload {
		case "contended":
			o.Keys = max(1, o.Workers/4)
		case "massexpiry":
			o.Keys = 1_000_000
		default:
			o.Keys = o.Workers * o.Pipeline * 4
		}
	}
	if o.Workload == "fill" && o.Workers > o.Keys {
		o.Workers = o.Keys
		o.Conns = min(o.Conns, o.Workers)
	}
	if o.Window <= 0 {
		o.Window = 100 * time.Millisecond
	}
	if o.Lead <= 0 {
		o.Lead = 3*time.Second + time.Duration(o.Keys)*10*time.Microsecond
	}
	if o.Interval == 0 {
		o.Interval = time.Millisecond
	}
	if o.PollEvery <= 0 {
		o.PollEvery = time.Millisecond
	}
	switch o.Workload {
	case "contended", "fill", "massexpiry":
	default:
		if o.Keys < o.Workers*o.Pipeline {
			return o, fmt.Errorf("bench: %s needs at least workers*pipeline = %d keys, have %d", o.Workload, o.Workers*o.Pipeline, o.Keys)
		}
	}
	if o.Workload == "redlock" && len(o.Addrs) < 1 {
		return o, errors.New("bench: redlock needs addresses")
	}
	if o.KeyPrefix == "" {
		if o.Workload == "fill" {
			o.KeyPrefix = "lk:"
		} else {
			o.KeyPrefix = "tb:" + keyTag(o.Seed) + ":"
		}
	}
	return o, nil
}

// keyTag is the seed-derived part of the default key prefix.
func keyTag(seed uint64) string { return strconv.FormatUint(seed%(36*36*36*36), 36) }

// dial opens a connection (TLS with o.TLS) and authenticates it, within
// ctx: a server that accepts and never answers holds it only until ctx
// ends.
func dial(ctx context.Context, addr string, o *Options) (*Conn, error) {
	c, err := dialNet(ctx, addr, o.TLS)
	if err != nil {
		return nil, err // (the dialer's error names addr)
	}
	if o.Password != "" {
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		}
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
		var r Reply
		if o.User != "" {
			r, err = c.Do("AUTH", o.User, o.Password)
		} else {
			r, err = c.Do("AUTH", o.Password)
		}
		if !stop() {
			err = ctx.Err()
		}
		if err == nil && !r.IsOK() {
			err = fmt.Errorf("AUTH: %s", r)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		_ = c.SetDeadline(time.Time{})
	}
	return c, nil
}

// loadScripts SCRIPT LOADs the lock scripts on addr and checks the SHAs.
func loadScripts(ctx context.Context, addr string, o *Options) error {
	c, err := dial(ctx, addr, o)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	defer context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })()
	for _, s := range []string{ReleaseScript, ExtendScript} {
		r, err := c.Do("SCRIPT", "LOAD", s)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("%s: SCRIPT LOAD: %w", addr, err)
		}
		if r.Kind != KindBulk || string(r.Str) != sha1hex(s) {
			return fmt.Errorf("%s: SCRIPT LOAD answered %s, want %q", addr, r, sha1hex(s))
		}
	}
	return nil
}

// Run runs one workload against o.Addrs and returns what it measured. It
// returns an error only when the run could not start (bad options, a
// server that cannot be reached or cannot load the scripts) or ctx ended;
// failures during the run are counted in the Result.
func Run(ctx context.Context, o Options) (Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if o.Workload == "massexpiry" {
		return runMassExpiry(ctx, o)
	}
	r := &runner{o: o, releaseSHA: sha1hex(ReleaseScript), extendSHA: sha1hex(ExtendScript), keyPrefix: o.KeyPrefix, halted: make(chan struct{})}
	r.cut, r.cancelCut = context.WithCancel(context.Background())
	defer r.cancelCut()
	addrs := o.Addrs
	if o.Workload != "redlock" {
		addrs = addrs[:1]
	}
	r.redialAt = make([]atomic.Int64, len(addrs))
	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Redlock starts with a minority of its addresses down, as it runs
	// on with them (each counts as an error, and gets a connection once
	// a reconnect to it works); anything else needs its one address.
	down := make([]bool, len(addrs))
	var setupErrs int64
	failed := func(a int, err error) error {
		if o.Workload != "redlock" || ctx.Err() != nil {
			return err
		}
		down[a] = true
		setupErrs++
		r.noteErr(err.Error())
		if up := len(addrs) - int(setupErrs); up < len(addrs)/2+1 {
			return fmt.Errorf("%w (%d of %d addresses reachable, no majority)", err, up, len(addrs))
		}
		return nil
	}
	if o.Workload != "fill" {
		for a, addr := range addrs {
			if err := loadScripts(setupCtx, addr, &o); err != nil {
				if err := failed(a, err); err != nil {
					return Result{}, err
				}
			}
		}
	}
	// conns[a][i] is connection i to address a.
	conns := make([][]*sharedConn, len(addrs))
	defer func() {
		for _, cs := range conns {
			for _, sc := range cs {
				if c := sc.conn(); c != nil {
					c.Close()
				}
			}
		}
	}()
	for a, addr := range addrs {
		for i := 0; i < o.Conns; i++ {
			if down[a] {
				conns[a] = append(conns[a], &sharedConn{})
				continue
			}
			c, err := dial(setupCtx, addr, &o)
			if err != nil {
				if err := failed(a, err); err != nil {
					return Result{}, err
				}
				for _, sc := range conns[a] {
					if c := sc.c.Swap(nil); c != nil {
						c.Close()
					}
				}
				conns[a] = append(conns[a], &sharedConn{})
				continue
			}
			conns[a] = append(conns[a], newSharedConn(c))
		}
	}
	for a := range addrs {
		if down[a] {
			r.nodeDown(a) // tried just now
		}
	}
	r.reg = newRegistry(o.Keys)
	ws := make([]*worker, o.Workers)
	per := o.Keys / o.Workers
	for i := range ws {
		w := &worker{
			id:   i,
			r:    r,
			rng:  rand.New(rand.NewPCG(o.Seed, uint64(i))),
			hist: newHist(),
			st:   new(counters),
		}
		for a := range addrs {
			w.conns = append(w.conns, conns[a][i%o.Conns])
		}
		if o.Workload == "contended" {
			w.lo, w.hi = 0, o.Keys
		} else {
			w.lo, w.hi = i*per, (i+1)*per
			if i == o.Workers-1 {
				w.hi = o.Keys
			}
		}
		w.next = w.lo
		w.initToken()
		ws[i] = w
	}

	// A server that stops answering must not hang the run: every
	// connection gets a deadline past the planned end, and ctx ending
	// cuts it short.
	r.start = time.Now()
	planned := r.start.Add(o.Duration)
	if o.Workload == "fill" {
		planned = r.start.Add(24 * time.Hour)
	}
	cutoff := planned.Add(10*time.Second + o.Hold)
	r.cutoff.Store(cutoff.UnixNano())
	for _, cs := range conns {
		for _, sc := range cs {
			if c := sc.conn(); c != nil {
				_ = c.SetDeadline(cutoff)
			}
		}
	}
	done := make(chan struct{})
	var timerWG sync.WaitGroup
	timerWG.Add(1)
	go func() {
		defer timerWG.Done()
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		tick := time.NewTicker(o.ProgressEvery)
		defer tick.Stop()
		if o.Workload == "fill" {
			t.Stop()
		}
		var lastOps int64
		last := r.start
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				// Stop as at the end of the duration: the operations in
				// flight finish, their locks released, unless the server
				// does not answer them within a second (plus the hold).
				r.halt()
				grace := time.NewTimer(time.Second + o.Hold)
				defer grace.Stop()
				select {
				case <-done:
					return
				case <-grace.C:
				}
				r.cutOff(conns)
				return
			case <-t.C:
				r.halt()
			case now := <-tick.C:
				if o.Progress == nil {
					continue
				}
				var s Result
				sumCounters(ws, &s)
				fmt.Fprintf(o.Progress, "%s %5.0fs %10.0f ops/s %12d ops %6d errors %6d violations %8d busy\n",
					o.Workload, now.Sub(r.start).Seconds(), float64(s.Ops-lastOps)/now.Sub(last).Seconds(),
					s.Ops, s.Errors, s.Violations, s.Busy)
				lastOps, last = s.Ops, now
			}
		}
	}()

	var wg sync.WaitGroup
	var stopped atomic.Int64
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(); err != nil {
				stopped.Add(1)
				w.st.errors.Add(1)
				msg := err.Error()
				if o.Workload != "redlock" && !strings.HasPrefix(msg, addrs[0]) {
					msg = addrs[0] + ": " + msg // which server (redlock's name theirs)
				}
				r.noteErr(msg)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(r.start)
	close(done)
	timerWG.Wait()

	res := Result{
		Workload: o.Workload, Addrs: addrs, Workers: o.Workers, Conns: o.Conns,
		Keys: o.Keys, Pipeline: o.Pipeline, TTLMs: o.TTL.Milliseconds(),
		HoldUs: o.Hold.Microseconds(), Seed: o.Seed, ElapsedSec: elapsed.Seconds(),
		WorkersStopped: int(stopped.Load()), FirstError: r.firstErr,
	}
	if o.Workload == "redlock" {
		res.NodeTimeoutUs = o.NodeTimeout.Microseconds()
	}
	sumCounters(ws, &res)
	res.Errors += setupErrs
	if o.Workload == "fill" && res.Busy > 0 {
		// Keys already held are not this run's locks: the server holds
		// fewer new locks than asked for, and a memory figure per lock
		// taken from it would be wrong.
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = fmt.Sprintf("%s: %d of the %d keys were already held (SET NX refused): clear them or use another --prefix", addrs[0], res.Busy, o.Keys)
		}
	}
	h := newHist()
	for _, w := range ws {
		h.Merge(w.hist)
	}
	if res.ElapsedSec > 0 {
		res.OpsPerSec = float64(res.Ops) / res.ElapsedSec
		res.RequestsPerSec = float64(res.Requests) / res.ElapsedSec
	}
	res.Latency = latencyOf(h)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

func sumCounters(ws []*worker, r *Result) {
	for _, w := range ws {
		r.Ops += w.st.ops.Load()
		r.Requests += w.st.reqs.Load()
		r.Errors += w.st.errors.Load()
		r.Violations += w.st.violations.Load()
		r.Busy += w.st.busy.Load()
		r.Lost += w.st.lost.Load()
		r.LostBeforeLease += w.st.lostEarly.Load()
		r.NoScriptFallbacks += w.st.noscript.Load()
		r.Reconnects += w.st.reconnects.Load()
		r.ExpiredTakeovers += w.st.expired.Load()
	}
}
