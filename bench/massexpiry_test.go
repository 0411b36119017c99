package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// mxOptions is a small massexpiry run: 2,000 keys whose deadlines fall in
// 50 ms two seconds out, a 3 s cap after them. Loading 2,000 keys through
// the race detector on a loaded machine took 1.26 s once: a load that
// overruns the lead is an error, which these tests do not look for.
func mxOptions(addr string) Options {
	return Options{
		Addrs: []string{addr}, Workload: "massexpiry", Keys: 2000, Workers: 4,
		Window: 50 * time.Millisecond, Lead: 2 * time.Second,
		Duration: 3 * time.Second,
	}
}

// TestMassExpiry_AgainstTumbler: against an in-process tumbler every key
// is loaded, reclaimed after the last deadline and within the cap, and
// actually gone afterwards (the stay keys too, deleted by the run).
func TestMassExpiry_AgainstTumbler(t *testing.T) {
	srv := server.RunT(t)
	start := time.Now()
	o := mxOptions(srv.Addr())
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := res.MassExpiry
	if m == nil {
		t.Fatalf("no mass_expiry in %+v", res)
	}
	if res.Errors != 0 || res.FirstError != "" {
		t.Errorf("errors = %d (%s)", res.Errors, res.FirstError)
	}
	if m.Expiring != 2000 || m.Loaded != 2000 || m.StayKeys != 16 || m.WindowMs != 50 {
		t.Errorf("expiring %d, loaded %d, stay %d, window %d; want 2000, 2000, 16, 50", m.Expiring, m.Loaded, m.StayKeys, m.WindowMs)
	}
	if !m.AllReclaimed || m.Remaining != 0 {
		t.Errorf("all reclaimed %v, remaining %d", m.AllReclaimed, m.Remaining)
	}
	// Keys expire once the clock is past their deadline, so the last one
	// cannot be gone before the last deadline, as far as the run can tell
	// the server's clock: within the offset's uncertainty (ClockErrMs,
	// half the TIME request's round trip) and the rounding to
	// milliseconds, the tolerance the run itself allows (tol).
	if early := -(m.ClockErrMs + 1); m.ReclaimAfterLastDeadlineMs < early || m.ReclaimAfterLastDeadlineMs > 3000 {
		t.Errorf("reclaimed %.1fms after the last deadline (clock error %.2fms), want within [%.2f, 3000]", m.ReclaimAfterLastDeadlineMs, m.ClockErrMs, early)
	}
	if d := m.ReclaimWindowMs - m.ReclaimAfterLastDeadlineMs; d < 48 || d > 50 {
		t.Errorf("reclaim window - after last deadline = %.2fms, want the 49ms between the first and last deadline", d)
	}
	if len(m.Points) != len(reclaimFractions) || m.Points[len(m.Points)-1].AfterLastDeadlineMs != m.ReclaimAfterLastDeadlineMs {
		t.Errorf("reclaim points %+v", m.Points)
	}
	if m.EarlyGone != 0 || m.LoadSlackMs <= 0 {
		t.Errorf("early gone %d, load slack %.1fms", m.EarlyGone, m.LoadSlackMs)
	}
	if m.GetsBefore == 0 || m.GetsDuring == 0 || res.Ops != m.GetsBefore+m.GetsDuring {
		t.Errorf("GETs before %d, during %d, ops %d", m.GetsBefore, m.GetsDuring, res.Ops)
	}
	if l := res.Latency; !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("latency in the window %+v", l)
	}
	if m.BeforeLatency.P50 <= 0 {
		t.Errorf("latency before %+v", m.BeforeLatency)
	}
	// The run took the lead, the window and the reclaim at least.
	if least := o.Lead + o.Window + time.Duration(m.ReclaimAfterLastDeadlineMs*1e6); time.Since(start) < least-5*time.Millisecond {
		t.Errorf("run took %v, less than lead + window + reclaim %v", time.Since(start), least)
	}
	if n := dbsize(t, srv.Addr()); n != 0 {
		t.Errorf("%d keys left after the run, want 0", n)
	}
}

// clockFake is a Redis-protocol server for massexpiry with a clock skew
// (its TIME runs ahead of the local clock) and a reclaim delay: a key
// counts in DBSIZE until delay after its PXAT deadline, or early before
// it. It answers GET of any key with the value it was SET to.
type clockFake struct {
	skew, delay, early time.Duration
	never              bool

	mu   sync.Mutex
	vals map[string]string
	ends map[string]time.Time // server time
}

func (f *clockFake) now() time.Time { return time.Now().Add(f.skew) }

func (f *clockFake) handle(args []string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	switch strings.ToUpper(args[0]) {
	case "TIME":
		s, us := strconv.FormatInt(now.Unix(), 10), strconv.Itoa(now.Nanosecond()/1000)
		return "*2\r\n$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n$" + strconv.Itoa(len(us)) + "\r\n" + us + "\r\n"
	case "SET": // SET key val [PXAT ms]
		f.vals[args[1]] = args[2]
		if len(args) == 5 {
			ms, _ := strconv.ParseInt(args[4], 10, 64)
			f.ends[args[1]] = time.UnixMilli(ms)
		}
		return "+OK\r\n"
	case "GET":
		v, ok := f.vals[args[1]]
		if !ok {
			return "$-1\r\n"
		}
		return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
	case "DEL":
		for _, k := range args[1:] {
			delete(f.vals, k)
			delete(f.ends, k)
		}
		return ":1\r\n"
	case "DBSIZE":
		for k, end := range f.ends {
			if !f.never && now.After(end.Add(f.delay-f.early)) {
				delete(f.vals, k)
				delete(f.ends, k)
			}
		}
		return ":" + strconv.Itoa(len(f.vals)) + "\r\n"
	}
	return "-ERR unknown command\r\n"
}

func newClockFake(t *testing.T, skew, delay, early time.Duration, never bool) (*clockFake, string) {
	f := &clockFake{skew: skew, delay: delay, early: early, never: never, vals: map[string]string{}, ends: map[string]time.Time{}}
	fs := startFake(t, f.handle)
	return f, fs.ln.Addr().String()
}

// TestMassExpiry_MeasuresTheReclaimDelay: a server whose clock is an hour
// ahead and that reclaims keys 300 ms after their deadline is reported as
// reclaiming about 300 ms after the last deadline: deadlines follow the
// server's TIME, and the reclaim is not seen before it happens.
func TestMassExpiry_MeasuresTheReclaimDelay(t *testing.T) {
	t.Parallel()
	_, addr := newClockFake(t, time.Hour, 300*time.Millisecond, 0, false)
	res, err := Run(context.Background(), mxOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	m := res.MassExpiry
	if res.Errors != 0 || !m.AllReclaimed || m.Loaded != 2000 {
		t.Fatalf("errors %d (%s), all reclaimed %v, loaded %d", res.Errors, res.FirstError, m.AllReclaimed, m.Loaded)
	}
	// Every bound below allows for the offset's own error (half the TIME
	// round trip, which a loaded machine running -race can stretch).
	e := m.ClockErrMs + 2
	if off := m.ClockOffsetMs; off < 3600e3-e || off > 3600e3+e {
		t.Errorf("clock offset %.1fms ± %.1f, want about 3600000", off, m.ClockErrMs)
	}
	// The fake drops a key once its clock is past deadline + 300ms; the
	// last deadline is a whole ms, and the poll that sees it gone answers
	// after that.
	if r := m.ReclaimAfterLastDeadlineMs; r < 300-e || r > 1000+e {
		t.Errorf("reclaimed %.1fms after the last deadline, want about 300 (at least 300)", r)
	}
	// Half the keys have deadlines in the first half of the window.
	if p := m.Points[0]; p.Fraction != 0.5 || p.AfterLastDeadlineMs < 300-26-e || p.AfterLastDeadlineMs > m.ReclaimAfterLastDeadlineMs {
		t.Errorf("50%% point %+v (clock error %.1fms)", p, m.ClockErrMs)
	}
}

// TestMassExpiry_NotReclaimedWithinTheCap: a server that never reclaims
// is reported as such, with every key left, after waiting the cap.
func TestMassExpiry_NotReclaimedWithinTheCap(t *testing.T) {
	t.Parallel()
	_, addr := newClockFake(t, 0, 0, 0, true)
	o := mxOptions(addr)
	o.Duration = 300 * time.Millisecond
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m := res.MassExpiry
	if m.AllReclaimed || m.Remaining != 2000 || len(m.Points) != 0 {
		t.Errorf("all reclaimed %v, remaining %d, points %+v; want false, 2000, none", m.AllReclaimed, m.Remaining, m.Points)
	}
	if r := m.ReclaimAfterLastDeadlineMs; r < 300 || r > 1000 {
		t.Errorf("waited %.1fms after the last deadline, want the 300ms cap", r)
	}
	if res.Errors != 0 || !res.OK() {
		t.Errorf("a slow reclaim is a finding, not an error: errors %d (%s)", res.Errors, res.FirstError)
	}
	var b strings.Builder
	_ = res.WriteTable(&b)
	if !strings.Contains(b.String(), "NO: 2000 keys left") {
		t.Errorf("table does not say the keys were not reclaimed:\n%s", b.String())
	}
}

// TestMassExpiry_EarlyExpiryIsAnError: keys that vanish 200 ms before
// their deadline are counted and make the run fail.
func TestMassExpiry_EarlyExpiryIsAnError(t *testing.T) {
	t.Parallel()
	_, addr := newClockFake(t, 0, 0, 200*time.Millisecond, false)
	res, err := Run(context.Background(), mxOptions(addr))
	if err != nil {
		t.Fatal(err)
	}
	m := res.MassExpiry
	if m.EarlyGone == 0 || res.OK() || !strings.Contains(res.FirstError, "before their deadline") {
		t.Errorf("early gone %d, errors %d (%s); want the early expiry reported", m.EarlyGone, res.Errors, res.FirstError)
	}
}

// TestMassExpiry_LoadOverrunIsAnError: a lead too short for loading is
// reported, not silently measured.
func TestMassExpiry_LoadOverrunIsAnError(t *testing.T) {
	t.Parallel()
	_, addr := newClockFake(t, 0, 0, 0, false)
	o := mxOptions(addr)
	o.Lead = time.Millisecond
	o.Pipeline = 1
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || !strings.Contains(res.FirstError, "raise the lead") || res.MassExpiry.LoadSlackMs >= 0 {
		t.Errorf("errors %d (%s), load slack %.1fms; want the overrun reported", res.Errors, res.FirstError, res.MassExpiry.LoadSlackMs)
	}
}

// TestMassExpiry_Interrupted: a run cut short before the deadlines
// reports that nothing was measured, not a reclaim that ended before it
// began (it printed "NO: 2000 keys left -1700ms after the last deadline"),
// and the GETs in flight finish instead of failing as i/o timeouts.
func TestMassExpiry_Interrupted(t *testing.T) {
	t.Parallel()
	_, addr := newClockFake(t, 0, 0, 0, false)
	ctx, cancel := context.WithCancel(context.Background())
	o := mxOptions(addr)
	o.Duration = 300 * time.Millisecond
	polled := make(chan struct{})
	o.Progress = progressFunc(func(line string) {
		if strings.Contains(line, "waiting for the first deadline") {
			select {
			case <-polled:
			default:
				close(polled)
			}
		}
	})
	o.ProgressEvery = 10 * time.Millisecond
	go func() { <-polled; cancel() }()
	res, err := Run(ctx, o)
	if err == nil {
		t.Fatal("an interrupted run returned no error")
	}
	if res.Errors != 0 {
		t.Errorf("the interruption made %d errors (%s)", res.Errors, res.FirstError)
	}
	m := res.MassExpiry
	if !m.Interrupted || m.AllReclaimed || m.ReclaimWindowMs != 0 || m.ReclaimAfterLastDeadlineMs >= 0 {
		t.Errorf("interrupted %v, all reclaimed %v, window %.1fms, after the last deadline %.1fms; want true, false, 0, negative",
			m.Interrupted, m.AllReclaimed, m.ReclaimWindowMs, m.ReclaimAfterLastDeadlineMs)
	}
	var b strings.Builder
	_ = res.WriteTable(&b)
	if !strings.Contains(b.String(), "not measured: interrupted before the first deadline, 2000 keys left") || strings.Contains(b.String(), "NO:") {
		t.Errorf("table:\n%s", b.String())
	}
}

// progressFunc is an io.Writer calling f with each write.
type progressFunc func(string)

func (f progressFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }

// TestMassExpiry_WorkersStoppedByAnError: GET workers whose connections
// are killed after loading stop, and the result counts them. Only theirs
// are killed (CLIENT LIST's cmd=get): the DBSIZE poll goes on, so the run
// lasts until the keys are reclaimed and every worker meets its dead
// connection.
func TestMassExpiry_WorkersStoppedByAnError(t *testing.T) {
	srv := server.RunT(t)
	o := mxOptions(srv.Addr())
	killed := make(chan int, 1)
	go func() {
		n := 0
		defer func() { killed <- n }()
		c, err := Dial(context.Background(), srv.Addr())
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		for {
			r, err := c.Do("CLIENT", "LIST")
			if err != nil {
				t.Error(err)
				return
			}
			var ids []string
			for _, l := range strings.Split(string(r.Str), "\n") {
				if id, rest, ok := strings.Cut(strings.TrimPrefix(l, "id="), " "); ok && strings.Contains(rest, " cmd=get ") {
					ids = append(ids, id)
				}
			}
			if len(ids) == o.Workers { // every worker has begun its GETs
				for _, id := range ids {
					if _, err := c.Do("CLIENT", "KILL", "ID", id); err != nil {
						t.Error(err)
						return
					}
					n++
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	res, err := Run(context.Background(), o)
	if n := <-killed; n != o.Workers {
		t.Fatalf("killed %d connections, want the %d workers'", n, o.Workers)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.WorkersStopped != o.Workers || res.OK() {
		t.Errorf("workers stopped %d of %d, errors %d (%s); want all stopped, counted as errors", res.WorkersStopped, o.Workers, res.Errors, res.FirstError)
	}
	var b strings.Builder
	_ = res.WriteTable(&b)
	if !strings.Contains(b.String(), "workers an error stopped") || !strings.Contains(b.String(), " 4 of 4 (not replaced)") {
		t.Errorf("table:\n%s", b.String())
	}
}
