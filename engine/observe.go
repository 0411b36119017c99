package engine

import (
	"github.com/tumblerdb/tumbler/expiry"
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
	script   bool                    // EVAL and friends: feeds the script latency histogram
	lat      atomic.Pointer[latHist] // INFO latencystats; nil until the first call (latency.go)
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
	// latency histogram counts not yet added: hn calls in counter hidx
	// (a batch's calls of one command mostly fall in one counter)
	hidx, hn int32
}

// addCall counts a call of st that took d; track says whether it goes in
// st's latency histogram.
func (p *PendingStats) addCall(e *Engine, st *cmdStats, d time.Duration, track bool) {
	for i := 0; i < p.n; i++ {
		if pc := &p.cmds[i]; pc.st == st {
			pc.calls++
			pc.nanos += int64(d)
			if track {
				if idx := int32(latIndex(latClamp(d))); idx == pc.hidx && pc.hn > 0 {
					pc.hn++
				} else {
					pc.flushLatency()
					pc.hidx, pc.hn = idx, 1
				}
			}
			return
		}
	}
	if p.n == len(p.cmds) {
		e.flushPending(p)
	}
	pc := pendingCmd{st: st, calls: 1, nanos: int64(d)}
	if track {
		pc.hidx, pc.hn = int32(latIndex(latClamp(d))), 1
	}
	p.cmds[p.n] = pc
	p.n++
}

// flushLatency adds the pending histogram counts to the histogram.
func (pc *pendingCmd) flushLatency() {
	if pc.hn > 0 {
		pc.st.hist().counts[pc.hidx].Add(int64(pc.hn))
		pc.hn = 0
	}
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
		pc.flushLatency()
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

// Unwrap returns the writer under the one that counts a command's error
// replies, for a reply Writer has no method for (DEBUG PROTOCOL's
// attribute and push, DEBUG ERROR's uncounted error).
func Unwrap(w Writer) Writer {
	if t, ok := w.(*errTap); ok {
		return t.Writer
	}
	return w
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
	if cmd.Flags&FlagNoKeys == 0 && !c.watchInMulti(cmd) { // (under the keyspace lock, which a refused WATCH does not take)
		touch := !cmd.noTouch && (c.Client == nil || !c.Client.NoTouch || cmd.Name == "touch")
		e.lru = lruClock{now: lruNow(c.Now), touch: touch}
	}
	w := c.W
	c.tap.Writer, c.tap.e, c.tap.failed = w, e, false
	c.W = &c.tap
	c.clk = start
	if e.longKeys(c) && tooLongKey(cmd, c.Args) {
		c.W.WriteError(ErrStringTooLong)
	} else {
		cmd.Fn(c)
	}
	end := c.clk
	if !c.clkEnd {
		end = e.nowNs()
	}
	c.clk, c.clkEnd = end, false
	d := time.Duration(end-start) + c.prep // (a prepare's time, before the keyspace lock: Command.prepare)
	c.prep = 0
	c.W = w // the tap keeps forwarding to w, should a handler have kept it
	st := &cmd.stats
	// A command that blocked goes in its histogram when it is served
	// (Waiter.firstNs), as Redis's updateStatsOnUnblock.
	track := e.obs.latTracking.Load()
	if c.Blocked != nil {
		c.Blocked.firstNs.Store(int64(d))
		track = false
	}
	p := c.Pending
	if p != nil {
		p.addCall(e, st, d, track)
	} else {
		st.calls.Add(1)
		st.nanos.Add(int64(d))
		if track {
			st.hist().counts[latIndex(latClamp(d))].Add(1)
		}
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
	if us := int64(d / time.Microsecond); e.obs.slowlog.wants(us) && cmd.Flags&FlagSkipSlowlog == 0 {
		e.obs.slowlog.add(c, us)
	}
	if t := e.obs.latMon.threshold.Load(); t > 0 {
		e.commandLatency(cmd, d, t) // the latency monitor (latencymon.go)
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
		cmd.stats.lat.Store(nil) // as Redis frees them: gone from latencystats until called again
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
	e.Net.reset()
	e.obs.expireNs.Store(0)
	e.Stats.ExpireTimeCap.Store(0)
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

// ---- instantaneous_ops_per_sec and _kbps ----

// opsSamples is how many samples the instantaneous_* fields average
// (Redis's STATS_METRIC_SAMPLES).
const opsSamples = 16

// The instantaneous metrics, as Redis's STATS_METRIC_*.
const (
	metricCommands = iota
	metricNetInput
	metricNetOutput
	nMetrics
)

type opsSampler struct {
	mu      sync.Mutex
	lastT   time.Time
	lastN   [nMetrics]int64
	samples [nMetrics][opsSamples]int64
	idx     int
}

func (o *opsSampler) reset() {
	o.mu.Lock()
	o.lastT = time.Time{}
	o.samples = [nMetrics][opsSamples]int64{}
	o.mu.Unlock()
}

// SampleOps records the command rate and the network rates since the
// previous sample, and the peak of used memory. The server calls it every
// 100 ms, as Redis's serverCron does.
func (e *Engine) SampleOps(now time.Time) {
	o := &e.obs.ops
	in, out, _, _ := e.Net.Totals()
	n := [nMetrics]int64{e.Stats.Commands.Load(), in, out}
	notePeak(heapObjects())
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.lastT.IsZero() {
		if ms := now.Sub(o.lastT).Milliseconds(); ms > 0 {
			for m := range n {
				o.samples[m][o.idx] = (n[m] - o.lastN[m]) * 1000 / ms
			}
			o.idx = (o.idx + 1) % opsSamples
		}
	}
	o.lastT, o.lastN = now, n
}

// rate returns the mean of the last 16 samples of metric m, per second.
func (o *opsSampler) rate(m int) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sum int64
	for _, v := range o.samples[m] {
		sum += v
	}
	return sum / opsSamples
}

// OpsPerSec returns the mean of the last 16 samples of SampleOps.
func (e *Engine) OpsPerSec() int64 { return e.obs.ops.rate(metricCommands) }

// NetKbps returns instantaneous_input_kbps and instantaneous_output_kbps:
// the bytes read from and written to client sockets, per second, in KB.
func (e *Engine) NetKbps() (in, out float64) {
	return float64(e.obs.ops.rate(metricNetInput)) / 1024, float64(e.obs.ops.rate(metricNetOutput)) / 1024
}

// ---- network counters ----

// NetCounters count what the server reads from and writes to client
// sockets (INFO stats: total_net_input_bytes, total_net_output_bytes,
// total_reads_processed, total_writes_processed). They are added to on
// every read and write, so they are split in stripes of a cache line
// each: a connection adds to the stripe of its id (Stripe), and
// connections on different cores seldom share one. An add is an
// uncontended atomic add; a read sums the stripes.
type NetCounters struct {
	stripes [netStripes]NetStripe
}

const netStripes = 8

// NetStripe is one stripe of NetCounters. A nil *NetStripe counts nothing.
type NetStripe struct {
	inBytes, outBytes, reads, writes atomic.Int64
	_                                [64 - 4*8]byte // a cache line each
}

// Stripe returns the stripe a connection with this id adds to.
func (c *NetCounters) Stripe(id int64) *NetStripe { return &c.stripes[uint64(id)%netStripes] }

// Read counts a read of n bytes from a client socket (none when n <= 0).
func (s *NetStripe) Read(n int) {
	if s != nil && n > 0 {
		s.reads.Add(1)
		s.inBytes.Add(int64(n))
	}
}

// Wrote counts a write of n bytes to a client socket (none when n <= 0).
func (s *NetStripe) Wrote(n int) {
	if s != nil && n > 0 {
		s.writes.Add(1)
		s.outBytes.Add(int64(n))
	}
}

// Totals returns the bytes read and written, and the reads and writes
// that moved them.
func (c *NetCounters) Totals() (in, out, reads, writes int64) {
	for i := range c.stripes {
		s := &c.stripes[i]
		in += s.inBytes.Load()
		out += s.outBytes.Load()
		reads += s.reads.Load()
		writes += s.writes.Load()
	}
	return
}

func (c *NetCounters) reset() {
	for i := range c.stripes {
		s := &c.stripes[i]
		s.inBytes.Store(0)
		s.outBytes.Store(0)
		s.reads.Store(0)
		s.writes.Store(0)
	}
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
	latMon     latencyMonitor // latency-monitor-threshold (latencymon.go)
	scriptHist histogram
	// latency-tracking and latency-tracking-info-percentiles (latency.go)
	latTracking    atomic.Bool
	latPercentiles atomic.Pointer[[]float64]
	expireNs       atomic.Int64 // time spent in ReclaimDue (expire_cycle_cpu_milliseconds)
	startMem       uint64       // heap objects when the engine was made (used_memory_startup)
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
	// the Go allocator's figures, named as Redis's jemalloc ones:
	// active is the heap's spans in use (objects and the room left in
	// their spans), resident what the runtime has mapped and not
	// returned to the OS
	active, resident uint64
}

var memPeak atomic.Uint64

var memSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

// readMemory samples the Go heap with runtime/metrics, which does not stop
// the world as runtime.ReadMemStats does; RSS comes from /proc/self/statm
// on Linux (the runtime's total mapped memory elsewhere).
func readMemory() memInfo {
	s := make([]metrics.Sample, len(memSamples))
	copy(s, memSamples)
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	m := memInfo{used: u(0), active: u(0) + u(2)}
	if total, released := u(1), u(3); total > released {
		m.resident = total - released
	}
	m.rss = procRSS()
	if m.rss == 0 {
		m.rss = u(1)
	}
	m.system = systemMemory()
	m.peak = notePeak(m.used)
	return m
}

// heapObjects returns the bytes of heap objects (used_memory).
func heapObjects() uint64 {
	s := []metrics.Sample{memSamples[0]}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// notePeak raises used_memory_peak to used and returns the peak.
func notePeak(used uint64) uint64 {
	for {
		p := memPeak.Load()
		if used <= p {
			return p
		}
		if memPeak.CompareAndSwap(p, used) {
			return used
		}
	}
}

// KeyCountNoWait is KeyCount for scrapers: while a script is busy it does
// not wait for the keyspace and reports ok=false.
func (e *Engine) KeyCountNoWait() (keys, expires int, ok bool) {
	if !e.lockOrBusy(false) {
		return 0, 0, false
	}
	defer e.mu.Unlock()
	keys, expires = e.keyCount()
	return keys, expires, true
}

// memFigures is the breakdown of the memory in use that INFO memory and
// MEMORY STATS report.
type memFigures struct {
	m                    memInfo
	startup, overhead    uint64 // at start-up; start-up and what is not data
	dataset, net         uint64 // used less overhead; used less start-up
	scripts              int    // cached EVAL scripts
	scriptBytes          uint64 // their bodies (used_memory_scripts_eval)
	hasScripts           bool   // a ScriptCounter is installed
	functions, libraries int
	fnBytes              int
	clients              int64 // the connections' buffers (mem_clients_normal)
	dbs                  []dbOverhead
	dbsOverhead          uint64 // the sum of dbs' figures
	keys, expires        int
}

// dbOverhead is a database's hash tables' overhead, as Redis counts it in
// MEMORY STATS (getMemoryOverheadData): an entry and an object header a
// key, a pointer a slot, and an entry a key with a deadline and a slot of
// the expires table; tumbler's tables are not Redis's dicts, so the
// figures are Redis's for as many keys, with slots as its dicts grow them.
type dbOverhead struct {
	idx           int
	main, expires uint64
}

// dictSlots is the number of slots of a Redis dict holding n entries that
// only grew: 4 at first, doubled when an insert finds it full.
func dictSlots(n int) uint64 {
	if n == 0 {
		return 0
	}
	slots := uint64(4)
	for slots < uint64(n) {
		slots *= 2
	}
	return slots
}

// memFigures reads the memory in use and breaks it down. It reads the
// databases: the caller holds the keyspace lock.
func (e *Engine) memFigures() memFigures {
	f := memFigures{m: readMemory()}
	m := f.m
	sc, hasScripts := e.scripter.(ScriptCounter)
	if hasScripts {
		f.scripts, f.scriptBytes, f.hasScripts = sc.CachedScripts(), uint64(sc.CachedScriptBytes()), true
	}
	f.functions, f.libraries, f.fnBytes = e.FunctionCounts()
	if r, ok := e.info.(ClientMemoryReporter); ok {
		f.clients = r.ClientsMemory()
	}
	const dictEntry, robj, ptr = 24, 16, 8 // Redis's struct sizes on 64 bits
	for i := range e.dbs {
		d := &e.dbs[i]
		n, x := d.size(), d.expires()
		f.keys += n
		f.expires += x
		if n == 0 {
			continue
		}
		o := dbOverhead{idx: i, main: uint64(n)*(dictEntry+robj) + dictSlots(n)*ptr, expires: uint64(x)*dictEntry + dictSlots(x)*ptr}
		f.dbs = append(f.dbs, o)
		f.dbsOverhead += o.main + o.expires
	}
	// As Redis: the overhead is the memory at start-up plus the script
	// cache, the functions, the clients and the databases' tables; the
	// dataset is the rest of used_memory.
	// used_memory is the Go heap, which a collection can shrink below
	// what it was at start-up: neither figure then exceeds it, so that
	// used_memory = overhead + dataset and overhead >= startup hold, as
	// in Redis.
	f.startup = min(e.obs.startMem, m.used)
	f.overhead = min(f.startup+f.scriptBytes+uint64(f.fnBytes)+uint64(max(f.clients, 0))+f.dbsOverhead, m.used)
	f.dataset = m.used - f.overhead
	if m.used > f.startup {
		f.net = m.used - f.startup
	}
	return f
}

// infoMemory writes INFO's memory section: Redis 7.0's fields, from the
// Go runtime's figures, and the connections' memory from the server
// (ClientMemoryReporter). The Lua VM's own memory (used_memory_lua and
// the like) is not told apart from the Go heap: those fields are left
// out.
func (e *Engine) infoMemory(add func(k, v string)) {
	f := e.memFigures()
	m := f.m
	u64 := func(k string, v uint64) { add(k, strconv.FormatUint(v, 10)) }
	i64 := func(k string, v int64) { add(k, strconv.FormatInt(v, 10)) }
	ratio := func(k string, a, b uint64) {
		r := 0.0
		if b > 0 {
			r = float64(a) / float64(b)
		}
		add(k, strconv.FormatFloat(r, 'f', 2, 64))
	}
	perc := func(k string, a, b uint64) {
		p := 0.0
		if b > 0 {
			p = float64(a) * 100 / float64(b)
		}
		add(k, strconv.FormatFloat(p, 'f', 2, 64)+"%")
	}
	startup, overhead, dataset, net := f.startup, f.overhead, f.dataset, f.net
	scripts, scriptBytes, hasScripts := f.scripts, f.scriptBytes, f.hasScripts
	functions, libraries, fnBytes, clients := f.functions, f.libraries, f.fnBytes, f.clients
	u64("used_memory", m.used)
	add("used_memory_human", humanBytes(m.used))
	u64("used_memory_rss", m.rss)
	add("used_memory_rss_human", humanBytes(m.rss))
	u64("used_memory_peak", m.peak)
	add("used_memory_peak_human", humanBytes(m.peak))
	perc("used_memory_peak_perc", m.used, m.peak)
	u64("used_memory_overhead", overhead)
	u64("used_memory_startup", startup)
	u64("used_memory_dataset", dataset)
	perc("used_memory_dataset_perc", dataset, net)
	u64("allocator_allocated", m.used)
	u64("allocator_active", m.active)
	u64("allocator_resident", m.resident)
	u64("total_system_memory", m.system)
	add("total_system_memory_human", humanBytes(m.system))
	u64("used_memory_scripts_eval", scriptBytes)
	if hasScripts {
		add("number_of_cached_scripts", strconv.Itoa(scripts))
	}
	add("number_of_functions", strconv.Itoa(functions))
	add("number_of_libraries", strconv.Itoa(libraries))
	add("used_memory_functions", strconv.Itoa(fnBytes))
	u64("used_memory_scripts", scriptBytes+uint64(fnBytes))
	add("used_memory_scripts_human", humanBytes(scriptBytes+uint64(fnBytes)))
	maxmem, _ := strconv.ParseUint(e.paramValue("maxmemory"), 10, 64)
	u64("maxmemory", maxmem)
	add("maxmemory_human", humanBytes(maxmem))
	add("maxmemory_policy", e.paramValue("maxmemory-policy"))
	ratio("allocator_frag_ratio", m.active, m.used)
	i64("allocator_frag_bytes", int64(m.active-m.used))
	ratio("allocator_rss_ratio", m.resident, m.active)
	i64("allocator_rss_bytes", int64(m.resident-m.active))
	ratio("rss_overhead_ratio", m.rss, m.resident)
	i64("rss_overhead_bytes", int64(m.rss-m.resident))
	ratio("mem_fragmentation_ratio", m.rss, m.used)
	i64("mem_fragmentation_bytes", int64(m.rss-m.used))
	// no replication, AOF or cluster: nothing held for them
	for _, k := range []string{"mem_not_counted_for_evict", "mem_replication_backlog", "mem_total_replication_buffers", "mem_clients_slaves"} {
		add(k, "0")
	}
	i64("mem_clients_normal", clients)
	add("mem_cluster_links", "0")
	add("mem_aof_buffer", "0")
	add("mem_allocator", "go")
	add("active_defrag_running", "0")
	// nothing is freed in the background, so nothing is pending
	add("lazyfree_pending_objects", "0")
	add("lazyfreed_objects", "0")
}

// staleGroups bounds the deadlines expiredStalePerc visits: past it (a
// mass expiry of keys with that many distinct deadlines, still being
// reclaimed) the figure is a lower bound.
const staleGroups = 10000

// expiredStalePerc is INFO's expired_stale_perc: the share of the keys
// with a deadline that are past it and not yet reclaimed (Redis
// estimates it from its expiry cycle's samples; tumbler's index counts
// them). Call it under the keyspace lock.
func (e *Engine) expiredStalePerc() float64 {
	n, due, now := 0, 0, e.clock.Mono()
	for i := range e.dbs {
		idx := e.dbs[i].idx
		if e.dbs[i].expires() == 0 {
			continue
		}
		n += idx.Len()
		d, _ := idx.CountDue(now, staleGroups)
		due += d
	}
	if n == 0 {
		return 0
	}
	return float64(due) * 100 / float64(n)
}

// avgTTL is INFO keyspace's avg_ttl: the mean time left, in ms, of the
// keys with a deadline (Redis estimates it from samples; tumbler's index
// keeps the sum of its deadlines). Call it under the keyspace lock.
func (e *Engine) avgTTL(idx *expiry.Index[entry]) int64 {
	mean, ok := idx.MeanDeadline()
	if !ok {
		return 0
	}
	return max(mean-e.clock.Mono(), 0)
}
