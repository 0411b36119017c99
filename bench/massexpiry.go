package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// MassExpiry is what the massexpiry workload measured, beyond Result's
// common fields. Times "after the last deadline" are upper bounds: the
// reclaim is seen by a DBSIZE poll, so they include up to one poll
// interval and one round trip.
type MassExpiry struct {
	// Expiring is the number of keys loaded to expire together; StayKeys
	// the keys without a TTL the GET workers read.
	Expiring int `json:"expiring_keys"`
	StayKeys int `json:"stay_keys"`
	// WindowMs is the span the deadlines fall in, LeadMs the time from the
	// start of loading to the first deadline, PollMs the DBSIZE poll
	// interval, CapMs how long after the last deadline the run waits.
	WindowMs int64   `json:"window_ms"`
	LeadMs   int64   `json:"lead_ms"`
	PollMs   float64 `json:"poll_ms"`
	CapMs    int64   `json:"cap_ms"`
	// ClockOffsetMs is the server's TIME minus the local clock, measured
	// once; the deadlines are PXAT in the server's time. ClockErrMs bounds
	// its error: half the TIME request's round trip.
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	ClockErrMs    float64 `json:"clock_err_ms"`
	// LoadSec is how long loading the expiring keys took; LoadSlackMs how
	// long before the first deadline it ended (negative: it overran, and
	// the run counts an error).
	LoadSec     float64 `json:"load_s"`
	LoadSlackMs float64 `json:"load_slack_ms"`
	// Baseline is DBSIZE before the expiring keys were loaded (stay keys
	// and whatever else the server held); Loaded is DBSIZE minus Baseline
	// once they were.
	Baseline int64 `json:"baseline_keys"`
	Loaded   int64 `json:"loaded_keys"`
	// AllReclaimed says DBSIZE came back to Baseline within CapMs of the
	// last deadline; Remaining is how many expiring keys the last poll
	// still counted.
	AllReclaimed bool  `json:"all_reclaimed"`
	Remaining    int64 `json:"remaining_keys"`
	// Interrupted says the run was cut short (its context ended, as by
	// Ctrl-C) before every expiring key was seen gone.
	Interrupted bool `json:"interrupted,omitempty"`
	// ReclaimAfterLastDeadlineMs runs from the last deadline to the poll
	// that saw every expiring key gone (to the end of the wait when not
	// all were; negative when the run was interrupted before the last
	// deadline). ReclaimWindowMs runs from the first deadline to the same
	// point (0 when that came first): the window the GET latencies in
	// Result.Latency come from.
	ReclaimAfterLastDeadlineMs float64 `json:"reclaim_after_last_deadline_ms"`
	ReclaimWindowMs            float64 `json:"reclaim_window_ms"`
	// Points gives, for fractions of the expiring keys, when the first
	// poll saw at least that fraction gone, in ms after the last deadline
	// (negative: before it). Fractions not reached are left out.
	Points []ReclaimPoint `json:"reclaim_points"`
	// EarlyGone is the largest number of expiring keys a poll answered
	// before the first deadline found gone: a server that drops leases
	// early. Counted as errors.
	EarlyGone int64 `json:"early_gone"`
	// GetsBefore and GetsDuring count the GETs sent before the first
	// deadline (after loading) and within the reclaim window;
	// BeforeLatency is the latency of the first, the calm baseline.
	GetsBefore    int64   `json:"gets_before"`
	GetsDuring    int64   `json:"gets_during"`
	BeforeLatency Latency `json:"before_latency_us"`
	Polls         int64   `json:"polls"`
}

// ReclaimPoint is one point of the reclaim curve.
type ReclaimPoint struct {
	Fraction            float64 `json:"fraction"`
	AfterLastDeadlineMs float64 `json:"after_last_deadline_ms"`
}

var reclaimFractions = []float64{0.5, 0.9, 0.99, 1}

// mxWorker is one GET worker of the massexpiry workload; it first loads
// its share of the expiring keys.
type mxWorker struct {
	sc       *sharedConn
	lo, hi   int // expiring keys [lo, hi)
	stay     []string
	tok      string
	before   *hdrhistogram.Histogram
	during   *hdrhistogram.Histogram
	st       *counters
	loaded   *atomic.Int64
	nBefore  int64
	nDuring  int64
	firstErr string
	stopped  bool // an I/O error ended it (Result.WorkersStopped)
}

func (w *mxWorker) fail(msg string) {
	w.st.errors.Add(1)
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

// appendKey appends prefix + k as 9 digits (more when k needs them).
func appendKey(b []byte, prefix string, k int) []byte {
	b = append(b, prefix...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(k), 10)
	for n := len(s); n < 9; n++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// load sets the worker's expiring keys, SET key tok PXAT deadline,
// Pipeline at a time. Key k gets deadline first + k mod span (ms).
func (w *mxWorker) load(stop *atomic.Bool, prefix string, pipeline int, first, span int64) error {
	sc := w.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.conn()
	var key []byte
	for k := w.lo; k < w.hi; {
		if stop.Load() {
			return nil
		}
		n := min(pipeline, w.hi-k)
		for i := 0; i < n; i++ {
			key = appendKey(key[:0], prefix, k+i)
			c.WriteArray(5)
			c.WriteBulkString("SET")
			c.WriteBulk(key)
			c.WriteBulkString(w.tok)
			c.WriteBulkString("PXAT")
			c.WriteBulkInt(first + int64(k+i)%span)
		}
		w.st.reqs.Add(int64(n))
		if err := c.Flush(); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			rep, err := c.ReadReply()
			if err != nil {
				return err
			}
			if !rep.IsOK() {
				w.fail("SET PXAT: " + rep.String())
			}
		}
		w.loaded.Add(int64(n))
		k += n
	}
	return nil
}

// gets reads the worker's stay keys round robin, one GET at a time with
// a pause of interval between them, until stop. A GET sent before first
// is recorded in before, one sent later in during.
func (w *mxWorker) gets(stop *atomic.Bool, first time.Time, interval time.Duration) error {
	for i := 0; !stop.Load(); i++ {
		key := w.stay[i%len(w.stay)]
		w.sc.mu.Lock()
		c := w.sc.conn()
		t0 := time.Now()
		c.WriteCommand("GET", key)
		err := c.Flush()
		var rep Reply
		if err == nil {
			rep, err = c.ReadReply()
		}
		d := time.Since(t0)
		if err == nil && (rep.Kind != KindBulk || string(rep.Str) != w.tok) {
			w.fail("GET " + key + ": " + rep.String())
		}
		w.sc.mu.Unlock()
		if err != nil {
			return err
		}
		w.st.reqs.Add(1)
		w.st.ops.Add(1)
		if t0.Before(first) {
			_ = w.before.RecordValue(max(int64(d), 1))
			w.nBefore++
		} else {
			_ = w.during.RecordValue(max(int64(d), 1))
			w.nDuring++
		}
		if interval > 0 {
			time.Sleep(interval)
		}
	}
	return nil
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50: us(h.ValueAtQuantile(50)), P99: us(h.ValueAtQuantile(99)),
		P999: us(h.ValueAtQuantile(99.9)), Max: us(h.Max()), Mean: h.Mean() / 1e3,
		Samples: h.TotalCount(),
	}
}

// intReply runs a command that answers an integer.
func intReply(c *Conn, args ...string) (int64, error) {
	r, err := c.Do(args...)
	if err != nil {
		return 0, err
	}
	if r.Kind != KindInt {
		return 0, fmt.Errorf("%s: %s", args[0], r)
	}
	return r.Int, nil
}

// serverClock returns the server's TIME minus the local wall clock, and
// the round trip of the TIME request (the offset's uncertainty is half
// of it).
func serverClock(c *Conn) (offset, rtt time.Duration, err error) {
	t0 := time.Now()
	r, err := c.Do("TIME")
	t1 := time.Now()
	if err != nil {
		return 0, 0, err
	}
	if r.Kind != KindArray || len(r.Elems) != 2 {
		return 0, 0, fmt.Errorf("TIME: %s", r)
	}
	sec, err1 := strconv.ParseInt(string(r.Elems[0].Str), 10, 64)
	usec, err2 := strconv.ParseInt(string(r.Elems[1].Str), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("TIME: %s", r)
	}
	mid := t0.Add(t1.Sub(t0) / 2)
	return time.Duration(sec*1e9+usec*1e3-mid.UnixNano()) * time.Nanosecond, t1.Sub(t0), nil
}

// runMassExpiry is Run for the massexpiry workload; o has its defaults.
func runMassExpiry(ctx context.Context, o Options) (Result, error) {
	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addr := o.Addrs[0]
	poll, err := dial(setupCtx, addr, &o)
	if err != nil {
		return Result{}, err
	}
	conns := []*Conn{poll}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	shared := make([]*sharedConn, o.Conns)
	for i := range shared {
		c, err := dial(setupCtx, addr, &o)
		if err != nil {
			return Result{}, err
		}
		conns = append(conns, c)
		shared[i] = newSharedConn(c)
	}
	setConnDeadlines := func(t time.Time) {
		for _, c := range conns {
			_ = c.SetDeadline(t)
		}
	}
	start := time.Now()
	setConnDeadlines(start.Add(10 * time.Second))

	// The stay keys, one token for all keys: GET checks it.
	var tb [16]byte
	for i := range tb {
		tb[i] = hexDigits[rand.IntN(16)]
	}
	tok := string(tb[:]) + string(tb[:])
	const stayPer = 4
	stayPrefix, expPrefix := o.KeyPrefix+"s:", o.KeyPrefix+"x:"
	var stay []string
	for i := 0; i < o.Workers*stayPer; i++ {
		k := string(appendKey(nil, stayPrefix, i))
		stay = append(stay, k)
		poll.WriteCommand("SET", k, tok)
	}
	if err := poll.Flush(); err != nil {
		return Result{}, err
	}
	for range stay {
		r, err := poll.ReadReply()
		if err != nil {
			return Result{}, err
		}
		if !r.IsOK() {
			return Result{}, fmt.Errorf("%s: SET: %s", addr, r)
		}
	}
	defer func() {
		// Leave the server as it was: the expiring keys go by themselves.
		_ = poll.SetDeadline(time.Now().Add(5 * time.Second))
		args := append([]string{"DEL"}, stay...)
		_, _ = poll.Do(args...)
	}()
	baseline, err := intReply(poll, "DBSIZE")
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", addr, err)
	}
	offset, rtt, err := serverClock(poll)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", addr, err)
	}
	// A key with deadline d expires once the server's clock is past d
	// (ms); tol covers the offset's uncertainty and that rounding.
	tol := rtt/2 + time.Millisecond

	// The deadlines: first..first+span-1 ms of server time, key k at
	// first + k mod span. local converts a server ms to a local instant.
	span := max(1, min(o.Window.Milliseconds(), int64(o.Keys)))
	loadStart := time.Now()
	firstMs := (loadStart.Add(o.Lead).UnixNano() + int64(offset) + 1e6 - 1) / 1e6
	lastMs := firstMs + span - 1
	local := func(ms int64) time.Time {
		return loadStart.Add(time.Duration(ms*1e6 - int64(offset) - loadStart.UnixNano()))
	}
	firstAt, lastAt := local(firstMs), local(lastMs)
	endBy := lastAt.Add(o.Duration)
	setConnDeadlines(endBy.Add(10 * time.Second))

	var stop atomic.Bool
	var loaded atomic.Int64
	ws := make([]*mxWorker, o.Workers)
	for i := range ws {
		ws[i] = &mxWorker{
			sc: shared[i%o.Conns],
			lo: i * o.Keys / o.Workers, hi: (i + 1) * o.Keys / o.Workers,
			stay:   stay[i*stayPer : (i+1)*stayPer],
			tok:    tok,
			before: newHist(),
			during: newHist(),
			st:     new(counters),
			loaded: &loaded,
		}
	}
	// Workers load their share, wait for every other to finish loading,
	// then GET until stop.
	var loadWG, wg sync.WaitGroup
	loadedCh := make(chan struct{})
	loadWG.Add(len(ws))
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.load(&stop, expPrefix, o.Pipeline, firstMs, span)
			loadWG.Done()
			if err == nil {
				<-loadedCh
				err = w.gets(&stop, firstAt, o.Interval)
			}
			if err != nil {
				w.stopped = true
				w.fail(err.Error())
			}
		}()
	}
	go func() { loadWG.Wait(); close(loadedCh) }()
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()

	mx := &MassExpiry{
		Expiring: o.Keys, StayKeys: len(stay), WindowMs: span, LeadMs: o.Lead.Milliseconds(),
		PollMs: float64(o.PollEvery) / 1e6, CapMs: o.Duration.Milliseconds(),
		ClockOffsetMs: float64(offset) / 1e6, ClockErrMs: float64(rtt/2) / 1e6, Baseline: baseline,
	}
	var errs []string
	// abort stops the run as the end of its wait would: the requests in
	// flight finish, unless the server does not answer them within a
	// second (an interrupt then cuts them short, as errors).
	var abortOnce sync.Once
	abort := func() {
		abortOnce.Do(func() {
			stop.Store(true)
			go func() {
				grace := time.NewTimer(time.Second)
				defer grace.Stop()
				select {
				case <-workersDone:
				case <-grace.C:
					setConnDeadlines(time.Now())
				}
			}()
		})
	}
	progress := func(now time.Time, what string) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "massexpiry %5.1fs %s\n", now.Sub(start).Seconds(), what)
		}
	}

	// Loading, with progress lines.
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
wait:
	for {
		select {
		case <-loadedCh:
			break wait
		case <-ctx.Done():
			abort()
			<-loadedCh
			break wait
		case now := <-tick.C:
			progress(now, fmt.Sprintf("loading %d/%d keys, first deadline in %.1fs", loaded.Load(), o.Keys, firstAt.Sub(now).Seconds()))
		}
	}
	loadEnd := time.Now()
	mx.LoadSec = loadEnd.Sub(loadStart).Seconds()
	mx.LoadSlackMs = float64(firstAt.Sub(loadEnd)) / 1e6
	if loadEnd.After(firstAt.Add(-tol)) && ctx.Err() == nil {
		errs = append(errs, fmt.Sprintf("loading took %.2fs, past the first deadline: raise the lead (%v)", mx.LoadSec, o.Lead))
	}

	// Polling: DBSIZE every PollEvery until every expiring key is gone or
	// the cap.
	var reclaimedAt time.Time
	reached := 0
	remaining := int64(o.Keys)
	checkedLoad := false
	for ctx.Err() == nil && !stop.Load() {
		n, err := intReply(poll, "DBSIZE")
		now := time.Now()
		if err != nil {
			errs = append(errs, "DBSIZE: "+err.Error())
			break
		}
		mx.Polls++
		remaining = n - baseline
		if !checkedLoad {
			checkedLoad = true
			mx.Loaded = remaining
			if remaining != int64(o.Keys) && now.Before(firstAt.Add(-tol)) {
				errs = append(errs, fmt.Sprintf("DBSIZE after loading is baseline %d + %d, want + %d", baseline, remaining, o.Keys))
			}
		}
		if now.Before(firstAt.Add(-tol)) && int64(o.Keys)-remaining > mx.EarlyGone {
			mx.EarlyGone = int64(o.Keys) - remaining
		}
		for reached < len(reclaimFractions) && float64(int64(o.Keys)-remaining) >= reclaimFractions[reached]*float64(o.Keys) {
			mx.Points = append(mx.Points, ReclaimPoint{reclaimFractions[reached], float64(now.Sub(lastAt)) / 1e6})
			reached++
		}
		if remaining <= 0 {
			reclaimedAt = now
			break
		}
		if now.After(endBy) {
			break
		}
		select {
		case now := <-tick.C:
			phase := "waiting for the first deadline"
			if now.After(firstAt) {
				phase = "reclaiming"
			}
			progress(now, fmt.Sprintf("%s: %d of %d expiring keys left", phase, remaining, o.Keys))
		default:
		}
		time.Sleep(o.PollEvery)
	}
	if ctx.Err() != nil {
		abort()
	}
	end := time.Now()
	if !reclaimedAt.IsZero() {
		end = reclaimedAt
		mx.AllReclaimed = true
	} else if ctx.Err() != nil {
		mx.Interrupted = true
	}
	stop.Store(true)
	wg.Wait()
	mx.Remaining = max(remaining, 0)
	mx.ReclaimAfterLastDeadlineMs = float64(end.Sub(lastAt)) / 1e6
	mx.ReclaimWindowMs = max(float64(end.Sub(firstAt))/1e6, 0)
	if mx.EarlyGone > 0 {
		errs = append(errs, fmt.Sprintf("%d keys gone before their deadline", mx.EarlyGone))
	}

	res := Result{
		Workload: o.Workload, Addrs: o.Addrs[:1], Workers: o.Workers, Conns: o.Conns,
		Keys: o.Keys, Pipeline: o.Pipeline, Seed: o.Seed,
		ElapsedSec: time.Since(start).Seconds(), MassExpiry: mx,
	}
	before := newHist()
	during := newHist()
	for _, w := range ws {
		before.Merge(w.before)
		during.Merge(w.during)
		mx.GetsBefore += w.nBefore
		mx.GetsDuring += w.nDuring
		res.Ops += w.st.ops.Load()
		res.Requests += w.st.reqs.Load()
		res.Errors += w.st.errors.Load()
		if w.stopped {
			res.WorkersStopped++
		}
		if w.firstErr != "" && res.FirstError == "" {
			res.FirstError = w.firstErr
		}
	}
	res.Errors += int64(len(errs))
	if len(errs) > 0 {
		res.FirstError = errs[0]
	}
	res.Latency = latencyOf(during)
	mx.BeforeLatency = latencyOf(before)
	if res.ElapsedSec > 0 {
		res.OpsPerSec = float64(res.Ops) / res.ElapsedSec
		res.RequestsPerSec = float64(res.Requests) / res.ElapsedSec
	}
	return res, ctx.Err()
}
