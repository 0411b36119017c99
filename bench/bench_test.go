package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

const short = 200 * time.Millisecond

// dbsize asks addr for its key count.
func dbsize(t *testing.T, addr string) int64 {
	t.Helper()
	return askInt(t, addr, "DBSIZE")
}

// askInt sends one command to addr on a new connection and returns its
// integer reply.
func askInt(t *testing.T, addr string, args ...string) int64 {
	t.Helper()
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r, err := c.Do(args...)
	if err != nil || r.Kind != KindInt {
		t.Fatalf("%v: %v %v", args, r, err)
	}
	return r.Int
}

func checkClean(t *testing.T, res Result) {
	t.Helper()
	if res.Ops <= 0 {
		t.Errorf("ops = %d, want > 0", res.Ops)
	}
	if res.Errors != 0 || res.FirstError != "" {
		t.Errorf("errors = %d (%s), want 0", res.Errors, res.FirstError)
	}
	if res.Violations != 0 {
		t.Errorf("violations = %d, want 0", res.Violations)
	}
	if res.Lost != 0 || res.ExpiredTakeovers != 0 {
		t.Errorf("lost = %d, expired takeovers = %d, want 0", res.Lost, res.ExpiredTakeovers)
	}
	if res.Requests < res.Ops {
		t.Errorf("requests = %d < ops = %d", res.Requests, res.Ops)
	}
	if !(res.Latency.P50 > 0 && res.Latency.P50 <= res.Latency.P99 && res.Latency.P99 <= res.Latency.P999 && res.Latency.P999 <= res.Latency.Max) {
		t.Errorf("latency percentiles out of order: %+v", res.Latency)
	}
	if !res.OK() {
		t.Errorf("OK() = false")
	}
}

// TestRun_WorkloadsAgainstTumbler runs every workload briefly against an
// in-process tumbler: work gets done, nothing breaks mutual exclusion, and
// every lock taken is released at the end.
func TestRun_WorkloadsAgainstTumbler(t *testing.T) {
	cases := []Options{
		{Workload: "cycle", Workers: 4},
		{Workload: "cycle", Workers: 6, Conns: 2}, // workers share connections
		{Workload: "contended", Workers: 6, Keys: 2, Retry: 100 * time.Microsecond},
		{Workload: "contended", Workers: 4, Keys: 1, Hold: 200 * time.Microsecond, Retry: 100 * time.Microsecond},
		{Workload: "extend", Workers: 4},
		{Workload: "pipelined", Workers: 3, Pipeline: 8},
	}
	for _, o := range cases {
		t.Run(o.Workload, func(t *testing.T) {
			t.Parallel()
			srv := server.RunT(t)
			o.Addrs = []string{srv.Addr()}
			o.Duration = short
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkClean(t, res)
			if res.Latency.Samples != res.Ops {
				t.Errorf("latency from %d samples, want one an op (%d)", res.Latency.Samples, res.Ops)
			}
			if o.Workload == "contended" && o.Keys == 1 && res.Busy == 0 {
				t.Errorf("contended on one key with a hold saw no refused acquire")
			}
			if n := dbsize(t, srv.Addr()); n != 0 {
				t.Errorf("%d keys left after the run, want 0", n)
			}
		})
	}
}

// extend's workers share their connections as the other workloads' do,
// one request and reply at a time: with one connection, every worker
// extends its own key (one held the connection for the whole run, and
// the others did nothing).
func TestRun_ExtendWorkersShareAConnection(t *testing.T) {
	srv := server.RunT(t)
	res, err := Run(context.Background(), Options{Workload: "extend", Addrs: []string{srv.Addr()}, Workers: 4, Conns: 1, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	extended := map[string]bool{}
	for _, c := range srv.Commands() {
		if strings.EqualFold(c.Args[0], "evalsha") && len(c.Args) == 6 { // the extend script: key, token, TTL
			extended[c.Args[3]] = true
		}
	}
	if len(extended) != 4 {
		t.Errorf("%d keys extended (%v), want the 4 workers' own", len(extended), extended)
	}
}

// An error reply to extend's acquire or extension is counted, and the
// worker goes on, as in the other workloads: it used to stop for the
// rest of the run, its lock held until the TTL.
func TestRun_ExtendGoesOnAfterAnErrorReply(t *testing.T) {
	srv := server.RunT(t)
	srv.FailNextCmd("set", 2, "ERR boom")
	srv.FailNextCmd("evalsha", 2, "ERR boom")
	res, err := Run(context.Background(), Options{Workload: "extend", Addrs: []string{srv.Addr()}, Workers: 2, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 4 || res.Violations != 0 || res.Ops == 0 || srv.PendingFailures() != 0 {
		t.Errorf("errors %d (%s), violations %d, ops %d, failures not sent %d; want 4 errors, ops, no violation",
			res.Errors, res.FirstError, res.Violations, res.Ops, srv.PendingFailures())
	}
	// both workers went on to the end: each extended after its errors,
	// and released its lock
	extended := map[string]int{}
	for _, c := range srv.Commands() {
		if strings.EqualFold(c.Args[0], "evalsha") && len(c.Args) == 6 {
			extended[c.Args[3]]++
		}
	}
	if len(extended) != 2 {
		t.Errorf("keys extended: %v, want both workers'", extended)
	}
	if n := dbsize(t, srv.Addr()); n != 0 {
		t.Errorf("%d keys left after the run, want 0", n)
	}
	if want := srv.Addr() + ": SET NX: (error) ERR boom"; res.FirstError != want {
		t.Errorf("first error %q, want %q (the server named)", res.FirstError, want)
	}
}

// An operation that a stalled server cuts short (its connection dropped
// after the stall) is in the latency histogram, up to the failure, though
// not an op: the stall shows in the tail, not only in the error count.
func TestRun_StalledOperationInTheLatency(t *testing.T) {
	srv := server.RunT(t)
	t.Cleanup(srv.Unpause)
	progress := newProgressWatch()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), Options{Workload: "cycle", Addrs: []string{srv.Addr()}, Workers: 1,
			Duration: time.Second, Progress: progress, ProgressEvery: 5 * time.Millisecond})
		done <- outcome{res, err}
	}()
	if !progress.wait(func(ops, _ int64) bool { return ops > 0 }, 10*time.Second) {
		t.Fatal("no operation in 10s")
	}
	srv.Pause(time.Minute)
	if err := srv.WaitHeld(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	const stall = 200 * time.Millisecond
	time.Sleep(stall)
	srv.DropConnections()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if l := o.res.Latency; o.res.Errors != 1 || l.Samples != o.res.Ops+1 || l.Max < float64(stall.Microseconds()) {
		t.Errorf("errors %d (%s), ops %d, samples %d, max %.0fus; want 1 error, a sample more than ops, max over %v",
			o.res.Errors, o.res.FirstError, o.res.Ops, l.Samples, l.Max, stall)
	}
}

// A redlock worker that holds a lock (Hold) leaves the connections to the
// other workers meanwhile, as cycle does: with one connection an address
// and two workers, their locks overlap. (The worker kept every
// connection through its Hold, and the other's attempts waited for its
// releases.)
func TestRun_RedlockHoldLeavesTheConnections(t *testing.T) {
	srvs := server.RunN(t, 3)
	var addrs []string
	for _, s := range srvs {
		addrs = append(addrs, s.Addr())
	}
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 2, Conns: 1,
		Hold: 50 * time.Millisecond, Duration: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	held, most := map[string]bool{}, 0
	for _, c := range srvs[0].Commands() {
		switch {
		case strings.EqualFold(c.Args[0], "set"):
			held[c.Args[1]] = true
		case strings.EqualFold(c.Args[0], "evalsha") || strings.EqualFold(c.Args[0], "eval"):
			delete(held, c.Args[3])
		}
		most = max(most, len(held))
	}
	if most < 2 {
		t.Errorf("at most %d locks held at once on a node, want the two workers' overlapping", most)
	}
}

// An error reply names the address it came from, in redlock too.
func TestRun_RedlockErrorReplyNamesItsNode(t *testing.T) {
	srvs := server.RunN(t, 3)
	srvs[1].FailNextCmd("set", 1, "ERR boom")
	var addrs []string
	for _, s := range srvs {
		addrs = append(addrs, s.Addr())
	}
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 1, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	if want := addrs[1] + ": SET NX: (error) ERR boom"; res.Errors != 1 || res.FirstError != want {
		t.Errorf("errors %d, first %q; want 1, %q", res.Errors, res.FirstError, want)
	}
}

func TestRun_Redlock(t *testing.T) {
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, server.RunT(t).Addr())
	}
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 4, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	if len(res.Addrs) != 3 || res.Requests < 6*res.Ops {
		t.Errorf("redlock used %v with %d requests for %d ops; want 3 addresses, 6 requests an op", res.Addrs, res.Requests, res.Ops)
	}
	if res.NodeTimeoutUs != 1_500_000 { // the default TTL, 30s, over 20
		t.Errorf("node timeout %dus, want 1500000", res.NodeTimeoutUs)
	}
	var buf bytes.Buffer
	if err := res.WriteTable(&buf); err != nil || !regexp.MustCompile(`\nnode timeout +1\.5s\n`).MatchString(buf.String()) {
		t.Errorf("table without the node timeout: %v\n%s", err, buf.String())
	}
	redlockKeysLeft(t, addrs, res)
}

// Redlock runs on with a minority of its nodes down, at the start or from
// the middle of the run, each down node counted as an error and named;
// without a majority it cannot start.
func TestRun_RedlockSurvivesAMinorityDown(t *testing.T) {
	var srvs []*server.Server
	var addrs []string
	for i := 0; i < 3; i++ {
		srv := server.RunT(t)
		srvs, addrs = append(srvs, srv), append(addrs, srv.Addr())
	}
	srvs[0].Close() // down from the start
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 4, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Errors != 1 || res.Violations != 0 || !strings.Contains(res.FirstError, addrs[0]) {
		t.Errorf("one node down at the start: ops %d, errors %d (%s), violations %d; want ops, 1 error naming %s, no violation",
			res.Ops, res.Errors, res.FirstError, res.Violations, addrs[0])
	}

	// down in the middle: the run goes on to its end with the other two
	const mid = 3 * short // (time to be closed in, after the run's first release)
	ran := closeOnceReleasing(t, srvs[1], addrs[2])
	res, err = Run(context.Background(), Options{Workload: "redlock", Addrs: addrs[1:], Workers: 4, Duration: mid})
	ran()
	if err != nil {
		t.Fatal(err)
	}
	// two of two are the majority: losing one stops every attempt until
	// a reconnect to it works
	if res.Errors == 0 || !strings.Contains(res.FirstError, addrs[1]) {
		t.Errorf("half down: errors %d (%s); want the failure reported", res.Errors, res.FirstError)
	}

	var five []string
	var fives []*server.Server
	for i := 0; i < 5; i++ {
		srv := server.RunT(t)
		fives, five = append(fives, srv), append(five, srv.Addr())
	}
	ran = closeOnceReleasing(t, fives[4], five[0])
	res, err = Run(context.Background(), Options{Workload: "redlock", Addrs: five, Workers: 4, Duration: mid})
	ran()
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors == 0 || res.Violations != 0 || !strings.Contains(res.FirstError, five[4]) {
		t.Errorf("one of five down mid-run: errors %d (%s), violations %d", res.Errors, res.FirstError, res.Violations)
	}
	if res.ElapsedSec < 0.9*mid.Seconds() {
		t.Errorf("one of five down mid-run: the run ended after %.2fs of %v", res.ElapsedSec, mid)
	}

	fives[3].Close()
	fives[2].Close() // three of five down: no majority
	if _, err := Run(context.Background(), Options{Workload: "redlock", Addrs: five, Workers: 2, Duration: short}); err == nil || !strings.Contains(err.Error(), "no majority") {
		t.Errorf("three of five down: err %v, want no majority", err)
	}
}

// A node that stops answering in the middle of a redlock run (a stalled
// process, a partition that drops packets) is timed out once an attempt
// has waited NodeTimeout for it, as Redlock clients time a node out: the
// run goes on with the other two to its planned end, rather than every
// worker waiting for the stalled node until the run's cutoff. While it
// stays stalled, a reconnect to it is tried at most once per
// redialEvery, not on every attempt.
func TestRun_RedlockGoesOnWithoutAStalledNode(t *testing.T) {
	var srvs []*server.Server
	var addrs []string
	for i := 0; i < 3; i++ {
		srv := server.RunT(t)
		srvs, addrs = append(srvs, srv), append(addrs, srv.Addr())
	}
	t.Cleanup(srvs[0].Unpause)
	// a timeout a loaded machine does not miss with a healthy node
	const run, nodeTimeout, workers = 3 * short, 150 * time.Millisecond, 4
	go func() { time.Sleep(run / 4); srvs[0].Pause(time.Minute) }()
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: workers, Duration: run, NodeTimeout: nodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.2fs: ops %d, errors %d, reconnects %d", res.ElapsedSec, res.Ops, res.Errors, res.Reconnects)
	if res.Ops == 0 || res.Errors < 1 || res.Violations != 0 ||
		!strings.Contains(res.FirstError, addrs[0]) || !strings.Contains(res.FirstError, "node timeout (150ms)") {
		t.Errorf("one node stalled mid-run: ops %d, errors %d (%s), violations %d; want ops, errors naming %s and the timeout, no violation",
			res.Ops, res.Errors, res.FirstError, res.Violations, addrs[0])
	}
	// an error for each of the four connections to it, and one for each
	// reconnect, which the stalled node accepts and then does not answer:
	// at most one every redialEvery (150ms) after the first error
	if most := workers + 1 + int64(res.ElapsedSec/nodeTimeout.Seconds()); res.Errors > most || res.Reconnects >= res.Errors {
		t.Errorf("one node stalled for less than %.2fs: %d errors, %d reconnects; want at most %d errors, and every reconnect to it failing",
			res.ElapsedSec, res.Errors, res.Reconnects, most)
	}
	if res.ElapsedSec > run.Seconds()+1 {
		t.Errorf("one node stalled mid-run: the run took %.2fs for %v", res.ElapsedSec, run)
	}
	redlockKeysLeft(t, addrs[1:], res)
}

// progressWatch is a Progress writer that lets a test wait for what the
// progress lines report (ops, errors).
type progressWatch struct {
	mu          sync.Mutex
	ops, errors int64
	changed     chan struct{}
}

func newProgressWatch() *progressWatch { return &progressWatch{changed: make(chan struct{})} }

var progressLine = regexp.MustCompile(` (\d+) ops +(\d+) errors `)

func (p *progressWatch) Write(b []byte) (int, error) {
	if m := progressLine.FindSubmatch(b); m != nil {
		ops, _ := strconv.ParseInt(string(m[1]), 10, 64)
		errs, _ := strconv.ParseInt(string(m[2]), 10, 64)
		p.mu.Lock()
		p.ops, p.errors = ops, errs
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
	return len(b), nil
}

// wait waits until cond holds for the last progress line, for up to
// timeout; it reports whether it did.
func (p *progressWatch) wait(cond func(ops, errors int64) bool, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		ok, ch := cond(p.ops, p.errors), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
}

// clientID is the CLIENT ID of a new connection to addr: every connection
// the server accepted before it has a smaller one.
func clientID(t *testing.T, addr string) int64 {
	t.Helper()
	return askInt(t, addr, "CLIENT", "ID")
}

// releasesFrom counts the releases (EVALSHA, EVAL) srv logged from
// connections whose CLIENT ID is above after. Redlock sends a release to
// an address only on a connection whose reply to the attempt's SET it
// read within the node timeout.
func releasesFrom(srv *server.Server, after int64) int {
	n := 0
	for _, rec := range srv.Commands() {
		if name := rec.Name(); rec.ClientID > after && (name == "evalsha" || name == "eval") {
			n++
		}
	}
	return n
}

// redlockInBackground starts a redlock run on addrs that lasts until the
// returned stop cancels it (or the test ends); stop returns its result.
func redlockInBackground(t *testing.T, addrs []string, progress io.Writer, opts ...func(*Options)) (stop func() (Result, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		o := Options{Workload: "redlock", Addrs: addrs, Workers: 4, Duration: time.Hour,
			NodeTimeout: 150 * time.Millisecond, Progress: progress, ProgressEvery: 5 * time.Millisecond}
		for _, f := range opts {
			f(&o)
		}
		res, err := Run(ctx, o)
		done <- outcome{res, err}
	}()
	stop = sync.OnceValues(func() (Result, error) {
		cancel()
		o := <-done
		return o.res, o.err
	})
	t.Cleanup(func() { stop() }) // before the servers close
	return stop
}

// redlockRunning starts redlockInBackground on srvs (opts change its
// Options) and waits for its
// first operation. fail stops the run and fails the test with the run's
// errors.
func redlockRunning(t *testing.T, srvs []*server.Server, opts ...func(*Options)) (addrs []string, progress *progressWatch, stop func() (Result, error), fail func(format string, args ...any)) {
	t.Helper()
	for _, s := range srvs {
		addrs = append(addrs, s.Addr())
	}
	progress = newProgressWatch()
	stop = redlockInBackground(t, addrs, progress, opts...)
	fail = func(format string, args ...any) {
		t.Helper()
		res, err := stop()
		t.Fatalf(format+"\nrun: %v, errors %d (%s)", append(args, err, res.Errors, res.FirstError)...)
	}
	if !progress.wait(func(ops, _ int64) bool { return ops > 0 }, 10*time.Second) {
		fail("no operation in 10s")
	}
	return addrs, progress, stop, fail
}

// redlockKeysLeft checks that a redlock run released its locks on addrs:
// no key is left, but for one a connection given up after the node
// timeout may have left (its late SET, which expires with its TTL). Each
// such connection was an error, and a loaded machine can make a healthy
// node miss a short node timeout too: with 150 ms, this test's nodes
// kept 2 keys a couple of runs in six under -race. So a node may keep as
// many keys as the run had errors, and none when it had none.
func redlockKeysLeft(t *testing.T, addrs []string, res Result) {
	t.Helper()
	for _, a := range addrs {
		if n := dbsize(t, a); n > res.Errors {
			t.Errorf("%s: %d keys left after a run of %d errors (%s)", a, n, res.Errors, res.FirstError)
		}
	}
}

// stopOnceReleased waits, 10 s at most, for srv to log a release from a
// client newer than client ID since (a connection the run opened after
// a failure: the node is used again), then stops the run and returns its
// result.
func stopOnceReleased(t *testing.T, srv *server.Server, since int64, stop func() (Result, error), fail func(string, ...any)) Result {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); releasesFrom(srv, since) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			fail("no release on a new connection to the node in 10s: it was not used again")
		}
	}
	res, err := stop()
	t.Logf("ops %d, errors %d, reconnects %d, NOSCRIPT fallbacks %d, busy %d; first error %s",
		res.Ops, res.Errors, res.Reconnects, res.NoScriptFallbacks, res.Busy, res.FirstError)
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	return res
}

// A node that stalls and then answers again is used again: the attempts
// after the stall reconnect to it (the connections that timed out may
// still get their late replies, so they are not read again) and it
// answers them within the node timeout, as a pooled Redlock client
// (redsync on go-redis) replaces a connection that timed out. Before, a
// node that missed the node timeout once was left out for the rest of
// the run.
func TestRun_RedlockUsesAStalledNodeAgainOnceItAnswers(t *testing.T) {
	srvs := server.RunN(t, 3)
	t.Cleanup(srvs[0].Unpause)
	addrs, progress, stop, fail := redlockRunning(t, srvs)
	started := clientID(t, addrs[0]) // the run's own connections are older
	srvs[0].Pause(time.Minute)
	// the stall seen: a connection to it timed out and was given up
	if !progress.wait(func(_, errs int64) bool { return errs > 0 }, 10*time.Second) {
		fail("the stalled node never timed out")
	}
	srvs[0].Unpause()
	srvs[0].ResetCommands() // from here on, what it read after the stall
	res := stopOnceReleased(t, srvs[0], started, stop, fail)
	if res.Ops == 0 || res.Errors < 1 || res.Reconnects < 1 || res.Violations != 0 ||
		!strings.Contains(res.FirstError, addrs[0]) || !strings.Contains(res.FirstError, "node timeout (150ms)") {
		t.Errorf("ops %d, errors %d (%s), reconnects %d, violations %d; want ops, errors naming %s and the timeout, reconnects, no violation",
			res.Ops, res.Errors, res.FirstError, res.Reconnects, res.Violations, addrs[0])
	}
	var buf bytes.Buffer
	if err := res.WriteTable(&buf); err != nil || !regexp.MustCompile(fmt.Sprintf(`\nreconnects +%d\n`, res.Reconnects)).MatchString(buf.String()) {
		t.Errorf("table without the reconnects: %v\n%s", err, buf.String())
	}
	buf.Reset()
	var m map[string]any
	if err := res.WriteJSON(&buf); err != nil || json.Unmarshal(buf.Bytes(), &m) != nil || m["reconnects"] != float64(res.Reconnects) {
		t.Errorf("JSON reconnects %v, want %d: %v\n%s", m["reconnects"], res.Reconnects, err, buf.String())
	}
	redlockKeysLeft(t, addrs[1:], res)
}

// When a majority of the nodes stalls, the SETs their given up
// connections still deliver once they resume take the key there, under
// the token of the attempt that sent them. Its worker's next try, with
// the same token (as redsync keeps one value for all the tries of a
// Lock), meets those locks (busy), releases them, and the run goes on.
// Before, each try had a token of its own, and those locks refused the
// key to every try until their TTL (30 s) ended.
//
// The held SETs are let go in order: first the stale one on each node
// (the first held there, on the connection the worker gave up), and,
// once its lock is on the node, the ones the worker's reconnected tries
// sent meanwhile. Let go together, a try's SET could run first, be
// granted, and leave the stale SET refused and no lock to meet (a CI
// run, shuffle seed 1795973662629825739).
func TestRun_RedlockGoesOnAfterAMajorityStalled(t *testing.T) {
	srvs := server.RunN(t, 3)
	// Two nodes stall at a SET (a stall at a release would leave no lock):
	// held[i] are the SETs node i holds, in the order they came.
	var mu sync.Mutex
	armed := false
	var held [2][]chan struct{}
	var freed [2]int // how many of held[i] were let go, the first ones
	letGo := func(upTo int) {
		mu.Lock()
		defer mu.Unlock()
		for i := range held {
			for ; freed[i] < min(upTo, len(held[i])); freed[i]++ {
				close(held[i][freed[i]])
			}
		}
	}
	heldOnBoth := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held[0]) > 0 && len(held[1]) > 0
	}
	t.Cleanup(func() {
		mu.Lock()
		armed = false
		mu.Unlock()
		letGo(math.MaxInt)
	})
	for i, s := range srvs[:2] {
		t.Cleanup(s.FailWhen(func(cmd server.CommandRecord) (string, bool) {
			if cmd.Name() != "set" {
				return "", false
			}
			mu.Lock()
			if !armed {
				mu.Unlock()
				return "", false
			}
			ch := make(chan struct{})
			held[i] = append(held[i], ch)
			mu.Unlock()
			<-ch
			return "", false
		}))
	}
	// one worker on one key: nothing else to lock while that key is refused
	const prefix = "tb:stall:"
	key := prefix + "000000000"
	_, progress, stop, fail := redlockRunning(t, srvs, func(o *Options) { o.Workers, o.Keys, o.KeyPrefix = 1, 1, prefix })
	mu.Lock()
	armed = true
	mu.Unlock()
	if !progress.wait(func(_, errs int64) bool { return errs >= 2 }, 10*time.Second) {
		fail("the stalled nodes never timed out")
	}
	for deadline := time.Now().Add(10 * time.Second); !heldOnBoth(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fail("no SET held on both stalled nodes")
		}
	}
	// the stale SETs run, and take the key, before anything the worker
	// sent since (still held)
	letGo(1)
	for i, s := range srvs[:2] {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, ok := s.Get(key); ok {
				break
			}
			if time.Now().After(deadline) {
				fail("node %d: the stale SET let go took no lock in 10s", i)
			}
		}
	}
	mu.Lock()
	armed = false
	mu.Unlock()
	letGo(math.MaxInt)
	var resumed int64
	progress.wait(func(ops, _ int64) bool { resumed = ops; return true }, 0)
	if !progress.wait(func(ops, _ int64) bool { return ops > resumed+10 }, 10*time.Second) {
		fail("fewer than 10 operations in the 10s after the stall ended (%d before): the key was still refused", resumed)
	}
	res, _ := stop()
	t.Logf("ops %d, busy %d, errors %d, reconnects %d", res.Ops, res.Busy, res.Errors, res.Reconnects)
	// The run could go on only once the worker released a stale lock on
	// one of the stalled nodes, on a connection that had its try's SET
	// answered there: refused, by that lock.
	if res.Violations != 0 || res.Busy == 0 {
		t.Errorf("%d violations, %d busy; want none, and the stalled SETs' locks met", res.Violations, res.Busy)
	}
}

// A node that crashes and restarts on the same address, without its data
// or its script cache, is reconnected to and used again; its locks lost
// in the crash are no violation (each release goes on the connection
// that its grant came on, which the crash closed).
func TestRun_RedlockReconnectsARestartedNode(t *testing.T) {
	srvs := server.RunN(t, 3)
	addrs, _, stop, fail := redlockRunning(t, srvs)
	// a crash, and connections refused for 50ms until it is back
	if err := srvs[0].RestartAfter(50*time.Millisecond, false); err != nil {
		fail("restart: %v", err)
	}
	srvs[0].ResetCommands() // the connections from before the crash are gone
	res := stopOnceReleased(t, srvs[0], 0, stop, fail)
	// the restart emptied its script cache: EVALSHA, NOSCRIPT, EVAL
	if res.Ops == 0 || res.Errors < 1 || res.Reconnects < 1 || res.NoScriptFallbacks < 1 || res.Violations != 0 || !strings.Contains(res.FirstError, addrs[0]) {
		t.Errorf("ops %d, errors %d (%s), reconnects %d, NOSCRIPT fallbacks %d, violations %d; want ops, errors naming %s, reconnects, a fallback, no violation",
			res.Ops, res.Errors, res.FirstError, res.Reconnects, res.NoScriptFallbacks, res.Violations, addrs[0])
	}
	redlockKeysLeft(t, addrs, res)
}

// With a short TTL the default node timeout stays at a second: one late
// reply from a healthy node (a scheduling or GC pause) would otherwise
// leave that node out for the rest of the run (a 20ms TTL's twentieth,
// 1ms, dropped two of three healthy nodes within half a second).
func TestRun_RedlockShortTTLKeepsHealthyNodes(t *testing.T) {
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, server.RunT(t).Addr())
	}
	res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 50, TTL: 20 * time.Millisecond, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.NodeTimeoutUs != 1_000_000 || res.Ops == 0 || res.Errors != 0 || res.Violations != 0 {
		t.Errorf("TTL 20ms: node timeout %dus, ops %d, errors %d (%s), violations %d; want 1s, ops, no error, no violation",
			res.NodeTimeoutUs, res.Ops, res.Errors, res.FirstError, res.Violations)
	}
}

// deadlineAt never sets a deadline past the run's cutoff: a long
// NodeTimeout does not outlast a run that was cut short.
func TestRunner_DeadlineAtStopsAtTheCutoff(t *testing.T) {
	srv := server.RunT(t)
	c, err := Dial(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Pause(time.Minute) // the server no longer answers
	defer srv.Unpause()
	r := &runner{}
	for _, cut := range []time.Duration{-time.Second, 50 * time.Millisecond} {
		r.cutoff.Store(time.Now().Add(cut).UnixNano())
		t0 := time.Now()
		r.deadlineAt(c, time.Now().Add(time.Hour))
		if _, err := c.Do("PING"); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cutoff in %v: PING: %v, want a deadline exceeded", cut, err)
		}
		if d := time.Since(t0); d > cut+5*time.Second {
			t.Errorf("cutoff in %v: the PING waited %v", cut, d)
		}
	}
	// before the cutoff, d from now
	r.cutoff.Store(time.Now().Add(time.Hour).UnixNano())
	t0 := time.Now()
	r.deadlineAt(c, time.Now().Add(30*time.Millisecond))
	if _, err := c.Do("PING"); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Errorf("deadline in 30ms: PING %v after %v", err, time.Since(t0))
	}
}

// A redlock reconnect's dial (and its AUTH) ends by the run's cutoff,
// however long the node timeout, and at once when the cutoff moves to
// now (cutOff, a cancelled run): a node that accepts connections and
// never answers does not hold up a run's end.
func TestWorker_ReconnectStopsAtTheCutoff(t *testing.T) {
	for _, cutNow := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1) // never answered
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted <- c
			}
		}()
		defer func() {
			select {
			case c := <-accepted:
				c.Close()
			default:
			}
		}()
		addr := ln.Addr().String()
		r := &runner{o: Options{Addrs: []string{addr}, Password: "secret", NodeTimeout: time.Hour}, halted: make(chan struct{}), redialAt: make([]atomic.Int64, 1)}
		r.cut, r.cancelCut = context.WithCancel(context.Background())
		if cutNow {
			r.cutoff.Store(time.Now().Add(time.Hour).UnixNano())
		} else {
			r.cutoff.Store(time.Now().Add(50 * time.Millisecond).UnixNano())
		}
		w := &worker{r: r, conns: []*sharedConn{{}}, st: new(counters)}
		done := make(chan *Conn, 1)
		go func() { done <- w.reconnect(0, time.Now().Add(time.Hour)) }()
		if cutNow {
			select { // connected: waiting for AUTH's reply
			case c := <-accepted:
				defer c.Close()
			case <-time.After(10 * time.Second):
				t.Fatal("no connection in 10s")
			}
			r.cutOff(nil)
		}
		select {
		case c := <-done:
			if c != nil || w.conns[0].conn() != nil {
				t.Errorf("cut now %v: reconnected to a node that never answered", cutNow)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("cut now %v: the reconnect still dials 10s after the cutoff", cutNow)
		}
		if w.st.errors.Load() != 1 || !strings.Contains(r.firstErr, addr) || !strings.Contains(r.firstErr, "reconnect") || r.redialAt[0].Load() == 0 {
			t.Errorf("cut now %v: errors %d (%s), next reconnect at %d; want the failure counted, named, and the next try put off",
				cutNow, w.st.errors.Load(), r.firstErr, r.redialAt[0].Load())
		}
	}
}

// TestRun_RedlockMinority: with one of three servers holding every key
// already, a majority is still reachable; with two, none is and no lock is
// ever granted.
func TestRun_RedlockNeedsMajority(t *testing.T) {
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, server.RunT(t).Addr())
	}
	o := Options{Workload: "redlock", Addrs: addrs, Workers: 2, Keys: 2, Duration: short, Seed: 7, Retry: 100 * time.Microsecond}
	// Preload the same keys Run will use on two of the three servers.
	pre := o
	pre.Workload, pre.Keys, pre.KeyPrefix, pre.Workers = "fill", 2, "tb:"+keyTag(7)+":", 1
	for _, a := range addrs[:2] {
		pre.Addrs = []string{a}
		if res, err := Run(context.Background(), pre); err != nil || res.Ops != 2 {
			t.Fatalf("preload %s: %+v %v", a, res, err)
		}
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 0 || res.Busy == 0 || res.Errors != 0 || res.Violations != 0 {
		t.Errorf("without a majority: ops=%d busy=%d errors=%d violations=%d; want 0, >0, 0, 0", res.Ops, res.Busy, res.Errors, res.Violations)
	}
	if n := dbsize(t, addrs[2]); n != 0 {
		t.Errorf("the free server keeps %d keys after failed attempts, want 0", n)
	}
}

func TestRun_FillSetsExactlyKeys(t *testing.T) {
	srv := server.RunT(t)
	res, err := Run(context.Background(), Options{Workload: "fill", Addrs: []string{srv.Addr()}, Workers: 3, Keys: 1000, Pipeline: 64})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, res)
	if res.Ops != 1000 || res.Requests != 1000 {
		t.Errorf("fill: ops=%d requests=%d, want 1000", res.Ops, res.Requests)
	}
	if n := dbsize(t, srv.Addr()); n != 1000 {
		t.Errorf("DBSIZE = %d, want 1000", n)
	}
	c, err := Dial(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, _ := c.Do("GET", "lk:000000999")
	if len(r.Str) != tokenLen {
		t.Errorf("GET lk:000000999 = %s, want a %d-byte token", r, tokenLen)
	}
	r, _ = c.Do("PTTL", "lk:000000000")
	if r.Kind != KindInt || r.Int <= 0 {
		t.Errorf("PTTL = %s, want a TTL", r)
	}

	// A second fill over the same keys sets none of them: an error, not
	// a clean run that left the server with 1000 fewer locks than asked.
	res, err = Run(context.Background(), Options{Workload: "fill", Addrs: []string{srv.Addr()}, Workers: 2, Keys: 1500, Pipeline: 64})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Ops != 500 || res.Busy != 1000 || !strings.Contains(res.FirstError, "1000 of the 1500 keys were already held") {
		t.Errorf("fill over 1000 held keys: ok=%v ops=%d busy=%d first error %q", res.OK(), res.Ops, res.Busy, res.FirstError)
	}
}

func TestRun_Options(t *testing.T) {
	for _, o := range []Options{
		{},
		{Addrs: []string{"x"}, Workload: "nope"},
		{Addrs: []string{"x"}, Workload: "fill"},
		{Addrs: []string{"x"}, Workload: "pipelined", Workers: 4, Pipeline: 8, Keys: 10},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	// An address nobody listens on fails at start, not during the run.
	// (Port 1, privileged: a port just closed could go to another test's
	// listener meanwhile.)
	if _, err := Run(context.Background(), Options{Addrs: []string{"127.0.0.1:1"}, Duration: short}); err == nil {
		t.Errorf("unreachable server: no error")
	}
}

// fakeServer is a tiny RESP server whose answers come from handle; it
// counts the commands it saw by name.
type fakeServer struct {
	ln     net.Listener
	handle func(args []string) string
	mu     sync.Mutex
	seen   map[string]int
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startFake(t *testing.T, handle func(args []string) string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, handle: handle, seen: map[string]int{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, nc)
			f.mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.serve(NewConn(nc))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) serve(c *Conn) {
	for {
		r, err := c.read(true)
		if err != nil {
			return
		}
		args := make([]string, len(r.Elems))
		for i, e := range r.Elems {
			args[i] = string(e.Str)
		}
		name := strings.ToUpper(args[0])
		f.mu.Lock()
		f.seen[name]++
		f.mu.Unlock()
		c.w.WriteString(f.handle(args))
		if c.r.Buffered() == 0 {
			if c.Flush() != nil {
				return
			}
		}
	}
}

func (f *fakeServer) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[name]
}

// answer is a server that grants every SET, knows the lock scripts and says
// every release succeeded.
func answer(args []string) string {
	switch strings.ToUpper(args[0]) {
	case "SCRIPT":
		s := sha1hex(args[2])
		return "$40\r\n" + s + "\r\n"
	case "EVALSHA", "EVAL":
		return ":1\r\n"
	}
	return "+OK\r\n"
}

// TestRun_BrokenServerViolations: a server that grants SET NX to everyone
// breaks mutual exclusion, and the run says so.
func TestRun_BrokenServerViolations(t *testing.T) {
	f := startFake(t, answer)
	res, err := Run(context.Background(), Options{
		Addrs: []string{f.ln.Addr().String()}, Workload: "contended",
		Workers: 4, Keys: 1, Hold: 2 * time.Millisecond, Duration: short,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations == 0 || res.OK() {
		t.Errorf("violations = %d, OK() = %v; want violations reported", res.Violations, res.OK())
	}
	if res.Errors != 0 {
		t.Errorf("errors = %d (%s)", res.Errors, res.FirstError)
	}
}

// leases is a correct in-test lock server with nanosecond leases: SET NX
// PX grants a key that is free or whose lease has run out, and the
// release script deletes it only for its holder.
func leases() func(args []string) string {
	type lease struct {
		tok string
		end time.Time
	}
	var mu sync.Mutex
	held := map[string]lease{}
	return func(args []string) string {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		switch strings.ToUpper(args[0]) {
		case "SET": // SET key tok NX PX ms
			if l, ok := held[args[1]]; ok && now.Before(l.end) {
				return "$-1\r\n"
			}
			ms, _ := time.ParseDuration(args[5] + "ms")
			held[args[1]] = lease{args[2], now.Add(ms)}
			return "+OK\r\n"
		case "EVALSHA": // release: EVALSHA sha 1 key tok
			if l, ok := held[args[3]]; ok && now.Before(l.end) && l.tok == args[4] {
				delete(held, args[3])
				return ":1\r\n"
			}
			return ":0\r\n"
		}
		return answer(args)
	}
}

// wrongLeases is leases() made wrong the ways a lock server can be:
// every grantHeld-th SET NX of a held key grants it anyway (its token
// replacing the holder's), and every dropEvery-th command drops every
// lock (an early expiry, or another client's wrong release); 0 turns
// either off. The release and extend scripts check the token, as the
// real ones do.
func wrongLeases(grantHeld, dropEvery int) func(args []string) string {
	type lease struct {
		tok string
		end time.Time
	}
	var mu sync.Mutex
	held := map[string]lease{}
	heldSets, cmds := 0, 0
	return func(args []string) string {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if cmds++; dropEvery > 0 && cmds%dropEvery == 0 {
			clear(held)
		}
		switch strings.ToUpper(args[0]) {
		case "SET": // SET key tok NX PX ms
			if l, ok := held[args[1]]; ok && now.Before(l.end) {
				if heldSets++; grantHeld == 0 || heldSets%grantHeld != 0 {
					return "$-1\r\n"
				}
			}
			ms, _ := time.ParseDuration(args[5] + "ms")
			held[args[1]] = lease{args[2], now.Add(ms)}
			return "+OK\r\n"
		case "EVALSHA", "EVAL": // EVALSHA sha 1 key tok [ttl]
			l, ok := held[args[3]]
			if !ok || !now.Before(l.end) || l.tok != args[4] {
				return ":0\r\n"
			}
			if len(args) == 6 { // extend: PEXPIRE
				ms, _ := time.ParseDuration(args[5] + "ms")
				held[args[3]] = lease{l.tok, now.Add(ms)}
			} else {
				delete(held, args[3])
			}
			return ":1\r\n"
		}
		return answer(args)
	}
}

// A server that now and then grants a held lock is caught with no hold
// time: the holder's release, run while its lease still had most of its
// 30 s to go, finds another's token. (Recording the holder only between
// grant and release caught almost none of these: that window is a few
// microseconds without --hold.)
func TestRun_DoubleGrantsCaughtWithoutHold(t *testing.T) {
	f := startFake(t, wrongLeases(10, 0))
	res, err := Run(context.Background(), Options{
		Addrs: []string{f.ln.Addr().String()}, Workload: "contended",
		Workers: 8, Keys: 2, Retry: 50 * time.Microsecond, Duration: short,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.LostBeforeLease == 0 || res.Violations < res.LostBeforeLease || res.OK() {
		t.Errorf("violations = %d, lost within the lease = %d, OK() = %v; want them reported", res.Violations, res.LostBeforeLease, res.OK())
	}
	if res.Lost != 0 || res.Errors != 0 {
		t.Errorf("lost = %d, errors = %d (%s); want 0: no lease could have ended", res.Lost, res.Errors, res.FirstError)
	}
}

// In the workloads whose workers own their keys no two workers are ever
// granted one key, so there the check is the release's (or extension's)
// answer: a lock dropped before its lease could end is a violation, in
// each of them.
func TestRun_LockDroppedWithinItsLeaseIsAViolation(t *testing.T) {
	for _, wl := range []string{"cycle", "pipelined", "extend", "redlock"} {
		t.Run(wl, func(t *testing.T) {
			handle := wrongLeases(0, 7)
			addrs := []string{startFake(t, handle).ln.Addr().String()}
			if wl == "redlock" {
				addrs = append(addrs, startFake(t, wrongLeases(0, 0)).ln.Addr().String(), startFake(t, wrongLeases(0, 0)).ln.Addr().String())
			}
			res, err := Run(context.Background(), Options{Addrs: addrs, Workload: wl, Workers: 4, Duration: short})
			if err != nil {
				t.Fatal(err)
			}
			if res.LostBeforeLease == 0 || res.Violations != res.LostBeforeLease || res.OK() {
				t.Errorf("violations = %d, lost within the lease = %d, OK() = %v; want them reported", res.Violations, res.LostBeforeLease, res.OK())
			}
			if res.Errors != 0 {
				t.Errorf("errors = %d (%s)", res.Errors, res.FirstError)
			}
		})
	}
	// and the same server, right, is clean
	for _, wl := range []string{"cycle", "pipelined", "extend", "contended"} {
		f := startFake(t, wrongLeases(0, 0))
		res, err := Run(context.Background(), Options{Addrs: []string{f.ln.Addr().String()}, Workload: wl, Workers: 4, Duration: short})
		if err != nil || !res.OK() || res.Lost != 0 {
			t.Errorf("%s on a correct server: err %v, violations %d, lost %d, errors %d (%s)", wl, err, res.Violations, res.Lost, res.Errors, res.FirstError)
		}
	}
}

// TestRun_ExpiredLeaseIsNotAViolation: a grant after the previous holder's
// lease has run out is a takeover, not a violation; the late release is
// counted as lost.
func TestRun_ExpiredLeaseIsNotAViolation(t *testing.T) {
	f := startFake(t, leases())
	res, err := Run(context.Background(), Options{
		Addrs: []string{f.ln.Addr().String()}, Workload: "contended",
		Workers: 4, Keys: 1, Hold: 3 * time.Millisecond, TTL: time.Millisecond,
		Retry: 100 * time.Microsecond, Duration: short,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations != 0 || res.ExpiredTakeovers == 0 || res.Lost == 0 || res.Errors != 0 {
		t.Errorf("violations = %d, expired takeovers = %d, lost = %d, errors = %d; want 0, >0, >0, 0",
			res.Violations, res.ExpiredTakeovers, res.Lost, res.Errors)
	}
}

// TestRun_TumblerKeepsShortLeases: a lock taken with PX 1 must stay held
// for at least 1 ms after the request was sent, as in Redis (a key expires
// when now > deadline). With now >= deadline on a millisecond clock a lease
// could end up to 1 ms early, and this check reported violations.
func TestRun_TumblerKeepsShortLeases(t *testing.T) {
	srv := server.RunT(t)
	res, err := Run(context.Background(), Options{
		Addrs: []string{srv.Addr()}, Workload: "contended",
		Workers: 8, Keys: 2, Hold: 3 * time.Millisecond, TTL: time.Millisecond,
		Retry: 50 * time.Microsecond, Duration: short,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations != 0 || res.Errors != 0 {
		t.Errorf("violations = %d, errors = %d; want 0", res.Violations, res.Errors)
	}
}

// TestRun_NoScriptFallsBackToEval: a server that forgot its scripts gets
// EVAL instead, in every workload that runs scripts.
func TestRun_NoScriptFallsBackToEval(t *testing.T) {
	for _, wl := range []string{"cycle", "extend", "pipelined"} {
		t.Run(wl, func(t *testing.T) {
			t.Parallel()
			f := startFake(t, func(args []string) string {
				if strings.EqualFold(args[0], "EVALSHA") {
					return "-NOSCRIPT No matching script. Please use EVAL.\r\n"
				}
				return answer(args)
			})
			o := Options{Addrs: []string{f.ln.Addr().String()}, Workload: wl, Workers: 2, Duration: short}
			if wl == "pipelined" {
				o.Pipeline = 4
			}
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			checkClean(t, res)
			if f.count("EVAL") == 0 || f.count("EVAL") != f.count("EVALSHA") {
				t.Errorf("EVALSHA %d, EVAL %d: want every NOSCRIPT retried with EVAL", f.count("EVALSHA"), f.count("EVAL"))
			}
			if res.NoScriptFallbacks != int64(f.count("EVAL")) {
				t.Errorf("%d fallbacks reported, %d EVALs sent", res.NoScriptFallbacks, f.count("EVAL"))
			}
		})
	}
}

// TestRun_ErrorRepliesAreCounted: error replies and unexpected replies
// count as errors.
func TestRun_ErrorRepliesAreCounted(t *testing.T) {
	f := startFake(t, func(args []string) string {
		if strings.EqualFold(args[0], "EVALSHA") {
			return "$3\r\nodd\r\n"
		}
		if strings.EqualFold(args[0], "SET") {
			return "-ERR out of locks\r\n"
		}
		return answer(args)
	})
	res, err := Run(context.Background(), Options{Addrs: []string{f.ln.Addr().String()}, Workload: "cycle", Workers: 2, Duration: short})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors == 0 || res.OK() || !strings.Contains(res.FirstError, "out of locks") {
		t.Errorf("errors = %d, first error %q; want errors counted", res.Errors, res.FirstError)
	}
}

// TestRun_ServerGoneMidRun: a server that closes the connection ends the
// run with errors instead of hanging.
func TestRun_ServerGoneMidRun(t *testing.T) {
	var sets atomic.Int64
	var f *fakeServer
	f = startFake(t, func(args []string) string {
		if strings.EqualFold(args[0], "SET") && sets.Add(1) == 100 {
			f.mu.Lock()
			for _, c := range f.conns {
				c.Close()
			}
			f.mu.Unlock()
		}
		return answer(args)
	})
	res, err := Run(context.Background(), Options{Addrs: []string{f.ln.Addr().String()}, Workload: "cycle", Workers: 2, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors == 0 || res.FirstError == "" {
		t.Errorf("errors = %d, want the closed connections counted", res.Errors)
	}
	// Both workers lost their connection and stopped: the run says so.
	if res.WorkersStopped != 2 || res.ElapsedSec >= 5 {
		t.Errorf("workers stopped %d, elapsed %.1fs; want 2, and the run ended early", res.WorkersStopped, res.ElapsedSec)
	}
	var buf bytes.Buffer
	if err := res.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "workers an error stopped") || !strings.Contains(buf.String(), " 2 of 2 (not replaced)") {
		t.Errorf("table: %v %s", err, buf.String())
	}
}

// evalshaCalls is addr's count of EVALSHA calls (INFO commandstats).
// closeOnceReleasing closes srv once the node at other has run an
// EVALSHA (a redlock run's first release), so that srv goes down in the
// middle of the run however long the run takes to start (a fixed sleep
// could land before its first attempt on a loaded machine). Call the
// returned func once the run has returned.
func closeOnceReleasing(t *testing.T, srv *server.Server, other string) (ran func()) {
	t.Helper()
	before := evalshaCalls(t, other) // (runs before may have used it)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for evalshaCalls(t, other) == before {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
		srv.Close()
	}()
	return func() { close(done); <-exited }
}

func evalshaCalls(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r, err := c.Do("INFO", "commandstats")
	if err != nil {
		t.Error(err)
		return 0
	}
	_, rest, ok := strings.Cut(string(r.Str), "cmdstat_evalsha:calls=")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(rest, ",")
	v, _ := strconv.ParseInt(n, 10, 64)
	return v
}

// Cancelling ends the run as its duration would: the operations in
// flight finish (no error counted, no lock left held on the server).
// Each run is cancelled once the server has run one of its scripts (a
// release or an extension, each the end of an operation), not after a
// fixed time, which a loaded machine could spend before the first.
func TestRun_ContextCancel(t *testing.T) {
	srv := server.RunT(t)
	for _, wl := range []string{"cycle", "contended", "extend", "pipelined"} {
		ctx, cancel := context.WithCancel(context.Background())
		before := evalshaCalls(t, srv.Addr())
		go func() {
			defer cancel()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if evalshaCalls(t, srv.Addr()) > before {
					return
				}
			}
		}()
		res, err := Run(ctx, Options{Addrs: []string{srv.Addr()}, Workload: wl, Workers: 8, Hold: 2 * time.Millisecond, Duration: time.Hour})
		if err != context.Canceled {
			t.Errorf("%s: err = %v, want context.Canceled", wl, err)
		}
		if res.Errors != 0 || res.Violations != 0 || res.Ops == 0 {
			t.Errorf("%s: errors %d (%s), violations %d, ops %d", wl, res.Errors, res.FirstError, res.Violations, res.Ops)
		}
		if n := dbsize(t, srv.Addr()); n != 0 {
			t.Errorf("%s: %d locks left held after the interrupt", wl, n)
		}
	}
}

// A server that accepts and never answers holds up the start only until
// the context ends.
func TestRun_CancelDuringSetup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, pw := range []string{"", "secret"} { // SCRIPT LOAD, and AUTH first
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start := time.Now()
		_, err := Run(ctx, Options{Addrs: []string{ln.Addr().String()}, Password: pw, Duration: time.Hour})
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("password %q: err %v after %v; want an error soon after the cancel", pw, err, time.Since(start))
		}
	}
}

func TestRun_Progress(t *testing.T) {
	srv := server.RunT(t)
	var buf syncBuffer
	_, err := Run(context.Background(), Options{Addrs: []string{srv.Addr()}, Workers: 2, Duration: 150 * time.Millisecond, Progress: &buf, ProgressEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "ops/s") || !strings.Contains(s, "violations") {
		t.Errorf("progress output %q", s)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestResult_JSONShape pins the JSON field names scripts read.
func TestResult_JSONShape(t *testing.T) {
	srv := server.RunT(t)
	res, err := Run(context.Background(), Options{Addrs: []string{srv.Addr()}, Workers: 2, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "addrs busy conns elapsed_s errors expired_takeovers hold_us keys latency_us lost lost_before_lease noscript_fallbacks ops ops_per_sec pipeline requests requests_per_sec seed ttl_ms violations workers workload"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("JSON keys:\n got %s\nwant %s", got, want)
	}
	lat, _ := m["latency_us"].(map[string]any)
	for _, k := range []string{"p50", "p99", "p999", "max", "mean"} {
		if v, ok := lat[k].(float64); !ok || v <= 0 {
			t.Errorf("latency_us.%s = %v, want a positive number", k, lat[k])
		}
	}
	if m["workload"] != "cycle" || m["ops"].(float64) != float64(res.Ops) || m["ops_per_sec"].(float64) <= 0 {
		t.Errorf("JSON values: %s", buf.String())
	}
	buf.Reset()
	if err := res.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "violations") {
		t.Errorf("table: %v %s", err, buf.String())
	}
}

// A latency past the histogram's range is recorded as its longest, not
// dropped (hdrhistogram refuses it): before, a run whose server stalled
// for more than a minute left those operations out of every percentile.
func TestRecordLatency_ClampsToTheRange(t *testing.T) {
	h := newHist()
	recordLatency(h, int64(2*time.Hour), 3)
	recordLatency(h, 0, 1)
	recordLatency(h, int64(time.Millisecond), 1)
	if h.TotalCount() != 5 {
		t.Fatalf("%d values recorded, want 5", h.TotalCount())
	}
	if m := h.Max(); m < histMax*99/100 {
		t.Fatalf("max %v, want about %v", time.Duration(m), time.Duration(histMax))
	}
	if m := h.Min(); m != 1 {
		t.Fatalf("min %d, want 1", m)
	}
}

// A p99 or p99.9 of too few samples says so: from 500, p99.9 is the
// highest but one.
func TestWriteTable_FewSamples(t *testing.T) {
	for _, tc := range []struct {
		samples   int64
		p99, p999 bool // marked
	}{{50, true, true}, {500, false, true}, {1000, false, false}} {
		r := Result{Workload: "cycle", Latency: Latency{P50: 1, P99: 2, P999: 3, Max: 4, Samples: tc.samples}}
		var b strings.Builder
		_ = r.WriteTable(&b)
		mark := fmt.Sprintf("(only %d samples)", tc.samples)
		for _, l := range strings.Split(b.String(), "\n") {
			switch {
			case strings.HasPrefix(l, "latency p99.9"):
				if strings.Contains(l, mark) != tc.p999 {
					t.Errorf("%d samples: %q", tc.samples, l)
				}
			case strings.HasPrefix(l, "latency p99 "):
				if strings.Contains(l, mark) != tc.p99 {
					t.Errorf("%d samples: %q", tc.samples, l)
				}
			case strings.HasPrefix(l, "latency"):
				if strings.Contains(l, "samples") {
					t.Errorf("%d samples: %q", tc.samples, l)
				}
			}
		}
	}
}

// redialRunner is a runner for the reconnect tests: n redlock addresses
// that refuse connections, its stop already set (so that redlockNodes
// does not sleep), and its cutoff an hour away.
func redialRunner(t *testing.T, n int) *runner {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:1"
	}
	r := &runner{o: Options{Addrs: addrs, NodeTimeout: 200 * time.Millisecond}, halted: make(chan struct{}), redialAt: make([]atomic.Int64, n)}
	close(r.halted)
	r.cut, r.cancelCut = context.WithCancel(context.Background())
	t.Cleanup(r.cancelCut)
	r.cutoff.Store(time.Now().Add(time.Hour).UnixNano())
	return r
}

func redialWorker(r *runner) *worker {
	n := len(r.o.Addrs)
	w := &worker{r: r, st: new(counters), redial: make([]bool, n), claims: make([]redialClaim, n)}
	for range n {
		w.conns = append(w.conns, &sharedConn{})
	}
	return w
}

// A reconnect whose attempt's time a reconnect before it (to another
// address) used up is not tried: not dialled, not counted as an error,
// and its address is due again as it was. Before, its dial failed at once
// ("i/o timeout") without reaching its node, counted as that node's
// error, and put the node's next try off by an interval.
func TestWorker_ReconnectAfterTheAttemptsTimeIsNotTried(t *testing.T) {
	r := redialRunner(t, 1)
	w := redialWorker(r)
	r.redialAt[0].Store(time.Now().Add(-time.Second).UnixNano()) // down a while ago: due
	cl, ok := r.claimRedial(0)
	if !ok {
		t.Fatal("a reconnect due was not claimed")
	}
	w.claims[0] = cl
	if c := w.reconnect(0, time.Now().Add(-time.Millisecond)); c != nil {
		t.Fatal("a reconnect past its attempt's time connected")
	}
	if n := w.st.errors.Load(); n != 0 {
		t.Errorf("%d errors (%s) for a reconnect not tried", n, r.firstErr)
	}
	if due, _ := r.redialDue(0); !due {
		t.Error("the address is no longer due after a reconnect not tried")
	}
}

// Workers that each claim some of the reconnects due, too few for a
// majority, dial none of them, and give them back: every address that no
// worker is to dial stays due. Before, each kept its claims, which put
// the addresses off by an interval though nobody dialled them. (Workers
// race for the claims, so the test repeats; under -race, as make unit
// runs it, a worker that keeps its claims shows within 1500 rounds.)
func TestWorker_ReconnectClaimsGivenBackWithoutAMajority(t *testing.T) {
	const addrs, workers = 3, 8
	r := redialRunner(t, addrs)
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = redialWorker(r)
	}
	for round := 0; round < 5000; round++ {
		past := time.Now().Add(-time.Second).UnixNano()
		for i := range r.redialAt {
			r.redialAt[i].Store(past) // all down a while ago: due
		}
		var start, done sync.WaitGroup
		start.Add(1)
		dials := make([]bool, addrs)
		var mu sync.Mutex
		for _, w := range ws {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				if w.redlockNodes(addrs/2 + 1) {
					mu.Lock()
					for i, d := range w.redial {
						dials[i] = dials[i] || d
					}
					mu.Unlock()
				}
			}()
		}
		start.Done()
		done.Wait()
		for i, d := range dials {
			if due, _ := r.redialDue(i); !d && !due {
				t.Fatalf("round %d: address %d claimed, not due, and no worker to dial it", round, i)
			}
		}
	}
}

// gateFirstSets wraps handle so that the first n SETs wait for one
// another (5 s at most) before any is answered: the locks they ask for
// are granted, or refused, together, whatever the scheduling.
func gateFirstSets(n int, handle func(args []string) string) func(args []string) string {
	var mu sync.Mutex
	sets := 0
	all := make(chan struct{})
	return func(args []string) string {
		if strings.EqualFold(args[0], "SET") {
			mu.Lock()
			sets++
			s := sets
			mu.Unlock()
			if s == n {
				close(all)
			}
			if s <= n {
				select {
				case <-all:
				case <-time.After(5 * time.Second):
				}
			}
		}
		return handle(args)
	}
}

// One double grant is one violation. Two contended workers ask a server
// that grants a held key anyway for the same key at once, both are
// granted (the second's token replacing the first's), and both hold it
// for longer than the run: the registry sees the second grant while the
// first holder is recorded, and the first holder's release then finds
// the other's token within its lease. Both see the same double grant,
// which was counted twice.
func TestRun_DoubleGrantCountedOnce(t *testing.T) {
	f := startFake(t, gateFirstSets(2, wrongLeases(1, 0)))
	res, err := Run(context.Background(), Options{
		Addrs: []string{f.ln.Addr().String()}, Workload: "contended",
		Workers: 2, Keys: 1, Hold: 500 * time.Millisecond, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 2 || f.count("SET") != 2 {
		t.Fatalf("ops = %d, SETs = %d: want one lock cycle a worker, so one double grant", res.Ops, f.count("SET"))
	}
	if res.Violations != 1 || res.LostBeforeLease > res.Violations || res.Errors != 0 {
		t.Errorf("one double grant: violations = %d (lost within the lease %d), errors = %d (%s); want 1 violation",
			res.Violations, res.LostBeforeLease, res.Errors, res.FirstError)
	}
}

// A redlock lock is released when a majority of the addresses released
// it (as redsync's Unlock needs): an attempt whose releases failed on
// more than a minority (each failure an error) took a lock it did not
// give back, and is not an op, as a cycle whose release failed is not.
// Before, every attempt that got a majority was an op, even with all its
// releases failed.
func TestRun_RedlockFailedReleasesAreNoOp(t *testing.T) {
	for failing := 0; failing <= 3; failing++ {
		t.Run(fmt.Sprintf("%d of 3 releases failed", failing), func(t *testing.T) {
			var fs []*fakeServer
			var addrs []string
			for i := 0; i < 3; i++ {
				handle := answer
				if i < failing {
					handle = func(args []string) string {
						if n := strings.ToUpper(args[0]); n == "EVALSHA" || n == "EVAL" {
							return "-ERR release refused\r\n"
						}
						return answer(args)
					}
				}
				f := startFake(t, handle)
				fs, addrs = append(fs, f), append(addrs, f.ln.Addr().String())
			}
			res, err := Run(context.Background(), Options{Workload: "redlock", Addrs: addrs, Workers: 4, Duration: short})
			if err != nil {
				t.Fatal(err)
			}
			attempts := int64(fs[2].count("SET")) // every one granted everywhere
			if attempts == 0 || int64(fs[2].count("EVALSHA")) != attempts {
				t.Fatalf("%d attempts, %d releases", attempts, fs[2].count("EVALSHA"))
			}
			wantOps := attempts
			if failing >= 2 {
				wantOps = 0
			}
			if res.Ops != wantOps || res.Errors != int64(failing)*attempts || res.Latency.Samples != res.Ops || res.Violations != 0 {
				t.Errorf("%d attempts: ops %d, errors %d (%s), latency samples %d, violations %d; want %d ops, %d errors, a sample an op, no violation",
					attempts, res.Ops, res.Errors, res.FirstError, res.Latency.Samples, res.Violations, wantOps, int64(failing)*attempts)
			}
			if failing > 0 && !strings.Contains(res.FirstError, "release refused") {
				t.Errorf("first error %q, want the release's", res.FirstError)
			}
		})
	}
}
