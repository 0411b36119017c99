package engine

import (
	"math"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the engine's observability: per-command statistics
// (INFO commandstats), error statistics (INFO errorstats), the sampled
// instantaneous_ops_per_sec, and the script latency histogram the metrics
// endpoint exports. Exec and Ctx.Call reach it through e.call; the
// dispatch cost is two clock reads and a few uncontended atomic adds.

// cmdStats are one command's counters, kept in its Command.
type cmdStats struct {
	calls    atomic.Int64
	nanos    atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
	script   bool // EVAL and friends: feeds the script latency histogram
}

// PendingStats holds counters a client's commands added since the last
// FlushStats, for a caller that runs one client's commands in batches
// (the server: a connection's pipelined batch). An atomic add is a locked
// instruction, a full barrier on amd64: a pipelined release made about a
// dozen (its calls and time for EVALSHA, GET and DEL, the histogram,
// total_commands_processed, total_eval_calls), a tenth of its CPU in
// luavm's BenchmarkEvalSHA_ReleaseMissing. With a PendingStats in its
// Ctx, a command adds to plain fields, and FlushStats adds them to the
// engine's counters, once a batch. The caller must flush before anything
// it did can be seen by anyone, that is before its replies go out; Exec
// flushes before a command that reads or resets them (flagStats: INFO,
// CONFIG) runs.
type PendingStats struct {
	cmds     [6]pendingCmd
	n        int
	commands int64 // total_commands_processed
	scripts  int64 // total_eval_calls
	hist0    int64 // script runs in the latency histogram's first bucket
	histNs   int64 // and their time
}

type pendingCmd struct {
	st           *cmdStats
	calls, nanos int64
}

// addCall counts a call of st that took d.
func (p *PendingStats) addCall(e *Engine, st *cmdStats, d time.Duration) {
	for i := 0; i < p.n; i++ {
		if pc := &p.cmds[i]; pc.st == st {
			pc.calls++
			pc.nanos += int64(d)
			return
		}
	}
	if p.n == len(p.cmds) {
		e.flushPending(p)
	}
	p.cmds[p.n] = pendingCmd{st, 1, int64(d)}
	p.n++
}

// FlushStats adds what c's PendingStats hold to the engine's counters.
func (e *Engine) FlushStats(c *Ctx) {
	if p := c.Pending; p != nil {
		e.flushPending(p)
	}
}

func (e *Engine) flushPending(p *PendingStats) {
	for i := 0; i < p.n; i++ {
		pc := &p.cmds[i]
		pc.st.calls.Add(pc.calls)
		pc.st.nanos.Add(pc.nanos)
		*pc = pendingCmd{}
	}
	p.n = 0
	if p.commands != 0 {
		e.Stats.Commands.Add(p.commands)
		p.commands = 0
	}
	if p.scripts != 0 {
		e.Stats.ScriptRuns.Add(p.scripts)
		p.scripts = 0
	}
	if p.hist0 != 0 {
		h := &e.obs.scriptHist
		h.counts[0].Add(uint64(p.hist0))
		h.sumNs.Add(p.histNs)
		p.hist0, p.histNs = 0, 0
	}
}

// countCommand counts one command in total_commands_processed.
func (e *Engine) countCommand(c *Ctx) {
	if p := c.Pending; p != nil {
		p.commands++
		return
	}
	e.Stats.Commands.Add(1)
}

// countScript counts one script run in total_eval_calls.
func (e *Engine) countScript(c *Ctx) {
	if p := c.Pending; p != nil {
		p.scripts++
		return
	}
	e.Stats.ScriptRuns.Add(1)
}

// CommandStat is a snapshot of one command's counters.
type CommandStat struct {
	Name                    string // "get", "client|id"
	Calls, Rejected, Failed int64
	Usec                    int64 // total time spent in the command, µs
}

// errTap sits between a command and its writer while the command runs, so
// that an error reply counts as a failed call and in errorstats. It lives
// in Ctx, so installing it does not allocate.
type errTap struct {
	Writer
	e      *Engine
	failed bool
}

func (t *errTap) WriteError(msg string) {
	t.failed = true
	t.e.countError(msg)
	t.Writer.WriteError(msg)
}

// WriteErrorNoStats writes an error reply that the error statistics have
// already counted (Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE): a script's
// error that a command it called replied, or a call refused. The command
// writing it still counts as failed.
func WriteErrorNoStats(w Writer, msg string) {
	if t, ok := w.(*errTap); ok {
		t.failed = true
		t.Writer.WriteError(msg)
		return
	}
	w.WriteError(msg)
}

// obsBase anchors monoNs. time.Since on a time with a monotonic reading
// reads only the runtime's monotonic clock, half the cost of time.Now.
var obsBase = time.Now()

// monoNs returns monotonic nanoseconds since the process started.
func monoNs() int64 { return int64(time.Since(obsBase)) }

// nowNs reads the engine's nanosecond clock for timing commands: the
// system clock's when it is one (so that callNow reads it once for both
// the command's time and its start), else the process's monotonic clock.
func (e *Engine) nowNs() int64 {
	if e.sys != nil {
		return int64(e.sys.Elapsed())
	}
	return monoNs()
}

// callNow sets the command's time (c.Now) and runs it with call. On the
// system clock one clock read serves both: a read costs ~25 ns here, 3% of
// a pipelined release. In a batch (StartBatch) the read that ended the
// previous command, or started the batch, starts this one, unless
// something waited since (Unchain).
func (e *Engine) callNow(c *Ctx, cmd *Command) {
	start := c.clk
	if !c.chain || start == 0 {
		start = e.nowNs()
	}
	if e.sys != nil {
		c.Now = e.sys.MonoAt(time.Duration(start))
	} else {
		c.Now = e.clock.Mono()
	}
	e.callAt(c, cmd, start)
}

// StartBatch begins a batch of commands c runs back to back, the
// server's pipelined batch: one clock read starts the batch, and each
// command's timing starts with the read that ended the command before it,
// as a native script's calls do. The time between two commands (the
// dispatch) then counts in the second; a wait between them must not:
// the caller calls Unchain after one, and Exec does when the keyspace
// lock was held by another client or a command served blocked ones. It
// returns the engine's time (Now) of the read.
func (e *Engine) StartBatch(c *Ctx) int64 {
	c.chain = true
	c.clk = e.nowNs()
	if e.sys != nil {
		return e.sys.MonoAt(time.Duration(c.clk))
	}
	return e.clock.Mono()
}

// EndBatch ends what StartBatch began.
func (e *Engine) EndBatch(c *Ctx) { c.chain = false }

// Unchain makes c's next command read the clock at its start: something
// waited since the last one ended.
func (c *Ctx) Unchain() { c.clk = 0 }

// call runs cmd's handler, timing it for commandstats and the slow log.
func (e *Engine) call(c *Ctx, cmd *Command) { e.callAt(c, cmd, e.nowNs()) }

// callAt is call for a command whose start (nowNs) is already read.
func (e *Engine) callAt(c *Ctx, cmd *Command, start int64) {
	w := c.W
	c.tap.Writer, c.tap.e, c.tap.failed = w, e, false
	c.W = &c.tap
	c.clk = start
	cmd.Fn(c)
	end := c.clk
	if !c.clkEnd {
		end = e.nowNs()
	}
	c.clk, c.clkEnd = end, false
	d := time.Duration(end - start)
	c.W = w // the tap keeps forwarding to w, should a handler have kept it
	st := &cmd.stats
	p := c.Pending
	if p != nil {
		p.addCall(e, st, d)
	} else {
		st.calls.Add(1)
		st.nanos.Add(int64(d))
	}
	if c.tap.failed {
		st.failed.Add(1)
	}
	if st.script {
		if p != nil && int64(d) <= scriptBoundsNs[0] {
			p.hist0++
			p.histNs += int64(d)
		} else {
			e.obs.scriptHist.observe(d)
		}
	}
	if us := int64(d / time.Microsecond); e.obs.slowlog.wants(us) {
		e.obs.slowlog.add(c, us)
	}
}

// reject replies msg for a command refused before it ran (NOAUTH, BUSY).
func (e *Engine) rejectStats(cmd *Command, msg string) {
	if cmd != nil {
		cmd.stats.rejected.Add(1)
	}
	e.countError(msg)
}

// ---- errorstats ----

// maxErrorCodes bounds the distinct error codes errorstats tracks, as
// Redis's ERROR_STATS_NUMBER does.
const maxErrorCodes = 128

type errorStats struct {
	total atomic.Int64
	mu    sync.Mutex
	codes map[string]int64
}

// countError records one error reply: its code is the first word when a
// space comes within the first 32 bytes, else "ERR" (Redis's
// afterErrorReply).
func (e *Engine) countError(msg string) {
	es := &e.obs.errStats
	es.total.Add(1)
	code := "ERR"
	head := msg
	if len(head) > 32 {
		head = head[:32]
	}
	if i := strings.IndexByte(head, ' '); i > 0 {
		code = msg[:i]
	}
	es.mu.Lock()
	if es.codes == nil {
		es.codes = map[string]int64{}
	}
	if _, ok := es.codes[code]; ok || len(es.codes) < maxErrorCodes {
		es.codes[code]++
	}
	es.mu.Unlock()
}

// ErrorReplies returns the number of error replies and the count per error
// code (ERR, WRONGTYPE, NOAUTH, ...).
func (e *Engine) ErrorReplies() (total int64, byCode map[string]int64) {
	es := &e.obs.errStats
	es.mu.Lock()
	defer es.mu.Unlock()
	byCode = make(map[string]int64, len(es.codes))
	for k, v := range es.codes {
		byCode[k] = v
	}
	return es.total.Load(), byCode
}

// CommandStats calls fn for every command and subcommand, in name order,
// with its counters.
func (e *Engine) CommandStats(fn func(CommandStat)) {
	for _, cmd := range e.cmdList {
		fn(cmd.stat())
		for _, sub := range sortedSubs(cmd) {
			fn(sub.stat())
		}
	}
}

func (cmd *Command) stat() CommandStat {
	return CommandStat{
		Name:     cmd.Name,
		Calls:    cmd.stats.calls.Load(),
		Rejected: cmd.stats.rejected.Load(),
		Failed:   cmd.stats.failed.Load(),
		Usec:     cmd.stats.nanos.Load() / 1000,
	}
}

// resetObserved clears commandstats and errorstats (CONFIG RESETSTAT).
func (e *Engine) resetObserved() {
	reset := func(cmd *Command) {
		cmd.stats.calls.Store(0)
		cmd.stats.nanos.Store(0)
		cmd.stats.rejected.Store(0)
		cmd.stats.failed.Store(0)
	}
	for _, cmd := range e.cmdList {
		reset(cmd)
		for _, sub := range cmd.Subs {
			reset(sub)
		}
	}
	e.obs.errStats.mu.Lock()
	e.obs.errStats.codes = nil
	e.obs.errStats.total.Store(0)
	e.obs.errStats.mu.Unlock()
	e.obs.ops.reset()
}

// markScriptCommands flags the commands whose duration is a script run's.
func (e *Engine) markScriptCommands() {
	for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		if cmd := e.cmds[name]; cmd != nil {
			cmd.stats.script = true
		}
	}
}

// ---- script latency histogram ----

// ScriptBuckets are the upper bounds (seconds) of the script latency
// histogram's buckets.
var ScriptBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type histogram struct {
	counts [18]atomic.Uint64 // one per bucket, then +Inf
	sumNs  atomic.Int64
}

// scriptBoundsNs are ScriptBuckets in nanoseconds: observe compares
// integers, nearly always only with the first bound (a lock script runs in
// well under 50 µs), instead of a float binary search on every script run.
var scriptBoundsNs = func() []int64 {
	b := make([]int64, len(ScriptBuckets))
	for i, s := range ScriptBuckets {
		b[i] = int64(math.Round(s * 1e9))
	}
	return b
}()

func (h *histogram) observe(d time.Duration) {
	i := 0 // first bound >= d; len(scriptBoundsNs) is +Inf
	for i < len(scriptBoundsNs) && int64(d) > scriptBoundsNs[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
}

// ScriptLatency returns the script latency histogram: the number of runs,
// their total duration in seconds, and the cumulative count per bucket of
// ScriptBuckets.
func (e *Engine) ScriptLatency() (count uint64, sum float64, buckets map[float64]uint64) {
	h := &e.obs.scriptHist
	buckets = make(map[float64]uint64, len(ScriptBuckets))
	var cum uint64
	for i, b := range ScriptBuckets {
		cum += h.counts[i].Load()
		buckets[b] = cum
	}
	return cum + h.counts[len(ScriptBuckets)].Load(), float64(h.sumNs.Load()) / 1e9, buckets
}

// ---- instantaneous_ops_per_sec ----

// opsSamples is how many samples instantaneous_ops_per_sec averages
// (Redis's STATS_METRIC_SAMPLES).
const opsSamples = 16

type opsSampler struct {
	mu      sync.Mutex
	lastT   time.Time
	lastN   int64
	samples [opsSamples]int64
	idx     int
}

func (o *opsSampler) reset() {
	o.mu.Lock()
	o.lastT = time.Time{}
	o.samples = [opsSamples]int64{}
	o.mu.Unlock()
}

// SampleOps records the command rate since the previous sample. The
// server calls it every 100 ms, as Redis's serverCron does.
func (e *Engine) SampleOps(now time.Time) {
	o := &e.obs.ops
	n := e.Stats.Commands.Load()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.lastT.IsZero() {
		if ms := now.Sub(o.lastT).Milliseconds(); ms > 0 {
			o.samples[o.idx] = (n - o.lastN) * 1000 / ms
			o.idx = (o.idx + 1) % opsSamples
		}
	}
	o.lastT, o.lastN = now, n
}

// OpsPerSec returns the mean of the last 16 samples of SampleOps.
func (e *Engine) OpsPerSec() int64 {
	o := &e.obs.ops
	o.mu.Lock()
	defer o.mu.Unlock()
	var sum int64
	for _, v := range o.samples {
		sum += v
	}
	return sum / opsSamples
}

// ---- INFO commandstats and errorstats ----

func (e *Engine) infoCommandStats(add func(k, v string)) {
	e.CommandStats(func(s CommandStat) {
		if s.Calls == 0 && s.Failed == 0 && s.Rejected == 0 {
			return
		}
		perCall := 0.0
		if s.Calls > 0 {
			perCall = float64(s.Usec) / float64(s.Calls)
		}
		add("cmdstat_"+s.Name, "calls="+strconv.FormatInt(s.Calls, 10)+
			",usec="+strconv.FormatInt(s.Usec, 10)+
			",usec_per_call="+strconv.FormatFloat(perCall, 'f', 2, 64)+
			",rejected_calls="+strconv.FormatInt(s.Rejected, 10)+
			",failed_calls="+strconv.FormatInt(s.Failed, 10))
	})
}

func (e *Engine) infoErrorStats(add func(k, v string)) {
	_, codes := e.ErrorReplies()
	names := make([]string, 0, len(codes))
	for k := range codes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		add("errorstat_"+k, "count="+strconv.FormatInt(codes[k], 10))
	}
}

// observer is the engine's observability state (one field of Engine).
type observer struct {
	errStats   errorStats
	ops        opsSampler
	slowlog    slowlog
	scriptHist histogram
}

// paramValue returns a CONFIG GET parameter's value: a registered one, or
// the default table's.
func (e *Engine) paramValue(name string) string {
	for _, p := range e.params.params {
		if p.Name == name {
			return p.Get()
		}
	}
	return defaultParams[name]
}

// ---- memory and CPU for INFO ----

type memInfo struct {
	used, rss, peak, system uint64
}

var memPeak atomic.Uint64

var memSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
}

// readMemory samples the Go heap with runtime/metrics, which does not stop
// the world as runtime.ReadMemStats does; RSS comes from /proc/self/statm
// on Linux (the runtime's total mapped memory elsewhere).
func readMemory() memInfo {
	s := make([]metrics.Sample, len(memSamples))
	copy(s, memSamples)
	metrics.Read(s)
	var m memInfo
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.used = s[0].Value.Uint64()
	}
	m.rss = procRSS()
	if m.rss == 0 && s[1].Value.Kind() == metrics.KindUint64 {
		m.rss = s[1].Value.Uint64()
	}
	m.system = systemMemory()
	for {
		p := memPeak.Load()
		if m.used <= p {
			m.peak = p
			break
		}
		if memPeak.CompareAndSwap(p, m.used) {
			m.peak = m.used
			break
		}
	}
	return m
}

// KeyCountNoWait is KeyCount for scrapers: while a script is busy it does
// not wait for the keyspace and reports ok=false.
func (e *Engine) KeyCountNoWait() (keys, expires int, ok bool) {
	if !e.lockOrBusy(false) {
		return 0, 0, false
	}
	defer e.mu.Unlock()
	return e.keys.len(), e.idx.Len(), true
}
