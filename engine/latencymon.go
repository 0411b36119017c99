package engine

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The latency monitor, as Redis 7.0's latency.c: with
// latency-monitor-threshold set (milliseconds; 0, the default, is off),
// every event that took at least that long is kept as a sample of its
// event class, one per second (the worst of the second), the last 160 per
// class, with the worst of all. LATENCY LATEST, HISTORY, GRAPH, DOCTOR and
// RESET read them.
//
// The classes tumbler has are Redis's:
//   - command and fast-command: a command's run (fast-command for a
//     command flagged fast), timed as the slow log times it;
//   - command-unblocking: serving a blocked command once its key is ready;
//   - expire-cycle: a run of the active expiry, from its start to its
//     pause or sleep (server.expireLoop).
//
// The others (fork, aof-*, eviction-*, expire-del...) time work tumbler
// does not do.

// latencyTSLen is how many samples a class keeps (LATENCY_TS_LEN).
const latencyTSLen = 160

type latencySample struct {
	time    int32 // unix seconds; 0 is an empty slot
	latency uint32
}

// latencySeries is one event class's samples (latencyTimeSeries).
type latencySeries struct {
	event   string
	idx     int    // the next slot to fill
	max     uint32 // the worst since the class was created or reset
	samples [latencyTSLen]latencySample
}

type latencyMonitor struct {
	threshold atomic.Int64 // ms; 0 is off
	mu        sync.Mutex
	series    []*latencySeries // in the order the classes appeared
	now       func() time.Time // the engine clock's Wall (New); tests replace it
}

// SetLatencyMonitorThreshold sets latency-monitor-threshold, in
// milliseconds (0 turns the monitor off; the samples are kept).
func (e *Engine) SetLatencyMonitorThreshold(ms int64) { e.obs.latMon.threshold.Store(max(ms, 0)) }

// LatencySample records that event took d, if the latency monitor is on
// and d, in whole milliseconds, reaches its threshold (Redis's
// latencyAddSampleIfNeeded). The server records its expire-cycle events
// with it.
func (e *Engine) LatencySample(event string, d time.Duration) {
	if t := e.obs.latMon.threshold.Load(); t > 0 {
		if ms := int64(d / time.Millisecond); ms >= t {
			e.obs.latMon.add(event, ms)
		}
	}
}

// commandLatency records a command's run of d, for a monitor whose
// threshold is t ms: Redis's call() times it as command, or fast-command
// for a command flagged fast.
func (e *Engine) commandLatency(cmd *Command, d time.Duration, t int64) {
	if ms := int64(d / time.Millisecond); ms >= t {
		ev := "command"
		if cmd.Flags&FlagFast != 0 {
			ev = "fast-command"
		}
		e.obs.latMon.add(ev, ms)
	}
}

// add is latencyAddSample: a sample in the same second as the class's
// latest keeps the worse of the two.
func (m *latencyMonitor) add(event string, ms int64) {
	lat := uint32(min(ms, 1<<32-1))
	m.mu.Lock()
	defer m.mu.Unlock()
	now := int32(m.clock().Unix())
	ts := m.find(event)
	if ts == nil {
		ts = &latencySeries{event: event}
		m.series = append(m.series, ts)
	}
	ts.max = max(ts.max, lat)
	prev := &ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
	if prev.time == now {
		prev.latency = max(prev.latency, lat)
		return
	}
	ts.samples[ts.idx] = latencySample{time: now, latency: lat}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

func (m *latencyMonitor) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// find returns the class named event exactly (Redis's dict of events
// compares with strcmp), or nil. m.mu is held.
func (m *latencyMonitor) find(event string) *latencySeries {
	for _, ts := range m.series {
		if ts.event == event {
			return ts
		}
	}
	return nil
}

// reset drops the classes named event, ignoring case, or every class for
// the empty name (latencyResetEvent), and reports how many it dropped.
func (m *latencyMonitor) reset(event []byte, all bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.series[:0]
	n := 0
	for _, ts := range m.series {
		if all || EqFold(event, ts.event) {
			n++
			continue
		}
		kept = append(kept, ts)
	}
	clear(m.series[len(kept):])
	m.series = kept
	return n
}

// samples calls f with the class's samples, oldest first.
func (ts *latencySeries) each(f func(s latencySample)) {
	for j := 0; j < latencyTSLen; j++ {
		if s := ts.samples[(ts.idx+j)%latencyTSLen]; s.time != 0 {
			f(s)
		}
	}
}

// LATENCY LATEST: each class's latest sample and worst.
func cmdLatencyLatest(c *Ctx) {
	m := &c.Eng.obs.latMon
	m.mu.Lock()
	defer m.mu.Unlock()
	c.W.WriteArray(len(m.series))
	for _, ts := range m.series {
		last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
		c.W.WriteArray(4)
		c.W.WriteBulkString(ts.event)
		c.W.WriteInt(int64(last.time))
		c.W.WriteInt(int64(last.latency))
		c.W.WriteInt(int64(ts.max))
	}
}

// LATENCY HISTORY event: the class's samples, oldest first.
func cmdLatencyHistory(c *Ctx) {
	m := &c.Eng.obs.latMon
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.find(string(c.Args[2]))
	if ts == nil {
		c.W.WriteArray(0)
		return
	}
	var out []latencySample
	ts.each(func(s latencySample) { out = append(out, s) })
	c.W.WriteArray(len(out))
	for _, s := range out {
		c.W.WriteArray(2)
		c.W.WriteInt(int64(s.time))
		c.W.WriteInt(int64(s.latency))
	}
}

// LATENCY RESET [event ...]: the number of classes dropped.
func cmdLatencyReset(c *Ctx) {
	m := &c.Eng.obs.latMon
	if len(c.Args) == 2 {
		c.W.WriteInt(int64(m.reset(nil, true)))
		return
	}
	n := 0
	for _, ev := range c.Args[2:] {
		n += m.reset(ev, false)
	}
	c.W.WriteInt(int64(n))
}

// LATENCY GRAPH event: Redis's ASCII sparkline of the class's samples.
func cmdLatencyGraph(c *Ctx) {
	m := &c.Eng.obs.latMon
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.find(string(c.Args[2]))
	if ts == nil {
		c.W.WriteError("ERR No samples available for event '" + string(c.Args[2]) + "'")
		return
	}
	c.W.WriteVerbatim("txt", latencyGraph(ts, m.clock().Unix()))
}

// latencyGraphCols is the graph's width (LATENCY_GRAPH_COLS).
const latencyGraphCols = 80

// latencyGraph is latencyCommandGenSparkeline: a header, a rule, and the
// samples as a filled sparkline of 4 rows, each labelled with how long
// ago it was taken.
func latencyGraph(ts *latencySeries, now int64) string {
	var seq sparkSeq
	var lo, hi uint32
	ts.each(func(s latencySample) {
		if len(seq.samples) == 0 {
			lo, hi = s.latency, s.latency
		} else {
			lo, hi = min(lo, s.latency), max(hi, s.latency)
		}
		elapsed := int(now - int64(s.time))
		var label string
		switch {
		case elapsed < 60:
			label = strconv.Itoa(elapsed) + "s"
		case elapsed < 3600:
			label = strconv.Itoa(elapsed/60) + "m"
		case elapsed < 3600*24:
			label = strconv.Itoa(elapsed/3600) + "h"
		default:
			label = strconv.Itoa(elapsed/(3600*24)) + "d"
		}
		seq.add(float64(s.latency), label)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", ts.event, hi, lo, ts.max)
	b.WriteString(strings.Repeat("-", latencyGraphCols))
	b.WriteByte('\n')
	seq.render(&b, latencyGraphCols, 4)
	return b.String()
}

// sparkSeq is sparkline.c's sequence: values with labels.
type sparkSeq struct {
	samples  []sparkSample
	min, max float64
	labels   int
}

type sparkSample struct {
	value float64
	label string
}

// add is sparklineSequenceAddSample.
func (q *sparkSeq) add(v float64, label string) {
	if len(q.samples) == 0 {
		q.min, q.max = v, v
	} else if v < q.min {
		q.min = v
	} else if v > q.max {
		q.max = v
	}
	q.samples = append(q.samples, sparkSample{v, label})
	if label != "" {
		q.labels++
	}
}

// render is sparklineRender with SPARKLINE_FILL: the sequence in parts of
// at most columns samples, separated by an empty line.
func (q *sparkSeq) render(b *strings.Builder, columns, rows int) {
	for j := 0; j < len(q.samples); j += columns {
		if j != 0 {
			b.WriteByte('\n')
		}
		q.renderRange(b, rows, j, min(len(q.samples)-j, columns))
	}
}

// renderRange is sparklineRenderRange with SPARKLINE_FILL: rows of "_o#"
// (a full cell '|') from the top, then the labels written downwards, one
// character a row, after a blank row.
func (q *sparkSeq) renderRange(b *strings.Builder, rows, offset, n int) {
	const charset = "_o#"
	const labelMarginTop = 1
	relmax := q.max - q.min
	if relmax == 0 {
		relmax = 1
	}
	steps := len(charset) * rows
	chars := make([]byte, n)
	for row, loop := 0, true; loop; {
		loop = false
		for j := range chars {
			chars[j] = ' '
		}
		for j := 0; j < n; j++ {
			s := &q.samples[j+offset]
			// C: step = (int)(relval*steps)/relmax, truncated to an int
			step := int(float64(int(((s.value - q.min) * float64(steps)))) / relmax)
			step = max(min(step, steps-1), 0)
			if row < rows {
				loop = true
				ci := step - (rows-row-1)*len(charset)
				if ci >= 0 && ci < len(charset) {
					chars[j] = charset[ci]
				} else if ci >= len(charset) {
					chars[j] = '|'
				}
				continue
			}
			if q.labels > 0 && row-rows < labelMarginTop {
				loop = true
				break
			}
			if lc := row - rows - labelMarginTop; lc < len(s.label) {
				loop = true
				chars[j] = s.label[lc]
			}
		}
		if loop {
			row++
			b.Write(chars)
			b.WriteByte('\n')
		}
	}
}

// latencyStats is analyzeLatencyForEvent's result for one class.
type latencyStats struct {
	avg, mad, samples uint32
	period            int64
}

func (ts *latencySeries) stats(now int64) latencyStats {
	var ls latencyStats
	var sum uint64
	var oldest int64
	ts.each(func(s latencySample) {
		ls.samples++
		sum += uint64(s.latency)
		if oldest == 0 || int64(s.time) < oldest {
			oldest = int64(s.time)
		}
	})
	if ls.samples == 0 {
		return ls
	}
	ls.avg = uint32(sum / uint64(ls.samples))
	ls.period = max(now-oldest, 1)
	sum = 0
	ts.each(func(s latencySample) {
		d := int64(ls.avg) - int64(s.latency)
		if d < 0 {
			d = -d
		}
		sum += uint64(d)
	})
	ls.mad = uint32(sum / uint64(ls.samples))
	return ls
}

// LATENCY DOCTOR: Redis's report (createLatencyReport), for the classes
// tumbler has.
func cmdLatencyDoctor(c *Ctx) {
	c.W.WriteVerbatim("txt", c.Eng.latencyReport())
}

func (e *Engine) latencyReport() string {
	m := &e.obs.latMon
	threshold := m.threshold.Load()
	hz := e.currentHz()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.series) == 0 && threshold == 0 {
		return latencyDoctorOff
	}
	var b strings.Builder
	now := m.clock().Unix()
	var slowlogEnable, slowlogTuning, slowlogInspect, scheduler, adviseHz, largeObjects bool
	advices := 0
	for i, ts := range m.series {
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		ls := ts.stats(now)
		period := 0.0
		if ls.samples > 0 {
			period = float64(ls.period) / float64(ls.samples)
		}
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, ts.event, ls.samples, ls.avg, ls.mad, period, ts.max)
		switch strings.ToLower(ts.event) {
		case "command":
			if sl := e.SlowlogSlowerThan(); sl < 0 {
				slowlogEnable = true
				advices++
			} else if sl/1000 > threshold {
				slowlogTuning = true
				advices++
			}
			slowlogInspect, largeObjects = true, true
			advices += 2
		case "fast-command":
			scheduler = true
			advices++
		case "expire-cycle":
			adviseHz, largeObjects = true, true
			advices += 2
		}
		b.WriteByte('\n')
	}
	thp := anonHugePages() > 0
	if thp {
		advices++
	}
	switch {
	case len(m.series) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
		return b.String()
	case len(m.series) > 0 && advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
		return b.String()
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if slowlogEnable {
		fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold*1000)
	}
	if slowlogTuning {
		fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", threshold*1000)
	}
	if slowlogInspect {
		b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
	}
	if scheduler {
		b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
			"  1) Lower the system load.\n" +
			"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
			"  3) Check if you have a \"noisy neighbour\" problem.\n" +
			"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
			"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
	}
	if adviseHz && hz < 100 {
		b.WriteString("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n")
	}
	if largeObjects {
		b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
	}
	if thp {
		b.WriteString("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n")
	}
	return b.String()
}

// currentHz is INFO's hz: the server's, or Redis's default 10.
func (e *Engine) currentHz() int {
	if e.info == nil {
		return 10
	}
	return cmp.Or(e.info.ServerInfo().Hz, 10)
}

// anonHugePages is the process's AnonHugePages in bytes, summed over its
// mappings as Redis's THPGetAnonHugePagesSize sums /proc/self/smaps; 0
// where there is none to read.
func anonHugePages() int64 {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var total int64
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("AnonHugePages:")); ok {
			f := strings.Fields(string(rest))
			if len(f) > 0 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					total += kb * 1024
				}
			}
		}
	}
	return total
}
