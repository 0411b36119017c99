package engine

import (
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Per-command latency histograms: INFO latencystats and LATENCY HISTOGRAM,
// as Redis 7.0 keeps them with latency-tracking yes (its default).
//
// A command's histogram has HdrHistogram's layout with Redis's settings
// (LATENCY_HISTOGRAM_MIN_VALUE 1 ns, _MAX_VALUE 1 s, _PRECISION 2
// significant figures): 24 half-buckets of 128 counters, each bucket
// twice as wide as the one before; values are nanoseconds, clamped to
// [1 ns, 1 s]. The arithmetic below is hdr_histogram.c's for those
// settings (unit magnitude 0, sub-bucket count 256), so percentiles and
// the LATENCY HISTOGRAM buckets come out as Redis computes them from the
// same counts (TestLatHist_MatchesRedisHdrHistogram checks both against
// the output of Redis's own hdr_histogram.c). Counters are atomic: a recording
// is one atomic add (batched per connection batch in PendingStats), and a
// histogram is allocated on a command's first call, as Redis does.
const (
	latSubHalfMag = 7                                    // sub_bucket_half_count_magnitude
	latSubHalf    = 1 << latSubHalfMag                   // sub_bucket_half_count: 128
	latSubCount   = 2 * latSubHalf                       // sub_bucket_count: 256
	latBuckets    = 23                                   // bucket_count for 1 s
	latCounts     = (latBuckets + 1) * latSubHalf        // counts_len: 3072
	latMinNs      = 1                                    // LATENCY_HISTOGRAM_MIN_VALUE
	latMaxNs      = int64(time.Second / time.Nanosecond) // LATENCY_HISTOGRAM_MAX_VALUE
)

type latHist struct {
	counts [latCounts]atomic.Int64
}

// latIndex is hdr_histogram's counts_index_for(v), v in [1 ns, 1 s].
func latIndex(v int64) int {
	b, sub := latBucket(v)
	return (b+1)<<latSubHalfMag + sub - latSubHalf
}

// latBucket is get_bucket_index and get_sub_bucket_index.
func latBucket(v int64) (bucket, sub int) {
	bucket = bits.Len64(uint64(v)|(latSubCount-1)) - (latSubHalfMag + 1)
	return bucket, int(v >> bucket)
}

// latClamp bounds a duration to what the histogram tracks
// (updateCommandLatencyHistogram).
func latClamp(d time.Duration) int64 {
	return min(max(int64(d), latMinNs), latMaxNs)
}

// latValueAt is hdr_value_at_index.
func latValueAt(i int) int64 {
	bucket := i>>latSubHalfMag - 1
	sub := i&(latSubHalf-1) + latSubHalf
	if bucket < 0 {
		sub -= latSubHalf
		bucket = 0
	}
	return int64(sub) << bucket
}

// latLowest is lowest_equivalent_value.
func latLowest(v int64) int64 {
	b, sub := latBucket(v)
	return int64(sub) << b
}

// latHighest is highest_equivalent_value: the largest value counted in
// v's counter. (hdr's size_of_equivalent_value_range moves to the next
// bucket for a sub-bucket index of sub_bucket_count or more, which
// latBucket never returns with a unit magnitude of 0.)
func latHighest(v int64) int64 {
	b, _ := latBucket(v)
	return latLowest(v) + int64(1)<<b - 1
}

// latSnapshot is a histogram's counts read once, and their total.
type latSnapshot struct {
	counts [latCounts]int64
	total  int64
}

func (h *latHist) snapshot() *latSnapshot {
	s := new(latSnapshot)
	for i := range h.counts {
		n := h.counts[i].Load()
		s.counts[i] = n
		s.total += n
	}
	return s
}

// valueAt is hdr_value_at_percentile: nanoseconds.
func (s *latSnapshot) valueAt(percentile float64) int64 {
	p := min(percentile, 100)
	want := max(int64(p/100*float64(s.total)+0.5), 1)
	var v int64
	var sum int64
	for i, n := range s.counts {
		sum += n
		if sum >= want {
			v = latValueAt(i)
			break
		}
	}
	if percentile == 0 {
		return latLowest(v)
	}
	return latHighest(v)
}

// cdf is what fillCommandCDF replies for the histogram: the cumulative
// count at each power-of-two boundary from 1024 ns (hdr_iter_log with
// 1024 and base 2), as µs (the bucket's highest value, truncated) and
// count pairs, a pair only where the count grew.
func (s *latSnapshot) cdf() (us, counts []int64) {
	idx, cum := -1, int64(0)
	var value, highest int64
	level := int64(1024)
	levelLow := latLowest(level)
	move := func() bool {
		idx++
		if idx >= latCounts {
			return false
		}
		cum += s.counts[idx]
		value = latValueAt(idx)
		highest = latHighest(value)
		return true
	}
	next := func() bool {
		// has_next || next_value_greater_than_reporting_level_upper_bound
		if !(cum < s.total || idx < latCounts && latValueAt(idx+1) > levelLow) {
			return false
		}
		for {
			if value >= levelLow {
				level *= 2
				levelLow = latLowest(level)
				return true
			}
			if !move() {
				return true
			}
		}
	}
	prev := int64(0)
	for next() {
		if cum > prev {
			us = append(us, highest/1000)
			counts = append(counts, cum)
		}
		prev = cum
	}
	return us, counts
}

// hist returns st's histogram, allocating it on first use.
func (st *cmdStats) hist() *latHist {
	if h := st.lat.Load(); h != nil {
		return h
	}
	st.lat.CompareAndSwap(nil, new(latHist))
	return st.lat.Load()
}

// recordLatency adds one call of d to st's histogram when latency
// tracking is on.
func (e *Engine) recordLatency(st *cmdStats, d time.Duration) {
	if e.obs.latTracking.Load() {
		st.hist().counts[latIndex(latClamp(d))].Add(1)
	}
}

// SetLatencyTracking turns the per-command latency histograms on or off
// (latency-tracking); off, nothing is recorded and INFO latencystats is
// empty, the histograms kept.
func (e *Engine) SetLatencyTracking(on bool) { e.obs.latTracking.Store(on) }

// SetLatencyPercentiles sets the percentiles INFO latencystats reports
// (latency-tracking-info-percentiles).
func (e *Engine) SetLatencyPercentiles(p []float64) {
	p = append([]float64(nil), p...)
	e.obs.latPercentiles.Store(&p)
}

// defaultLatencyPercentiles is Redis's latency-tracking-info-percentiles.
var defaultLatencyPercentiles = []float64{50, 99, 99.9}

// FormatPercentile writes a percentile as Redis does ("%f", then
// trimDoubleString: 50, 99.9).
func FormatPercentile(p float64) string {
	s := strconv.FormatFloat(p, 'f', 6, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// infoLatencyStats is INFO latencystats: each command with a histogram,
// its percentiles in µs.
func (e *Engine) infoLatencyStats(add func(k, v string)) {
	if !e.obs.latTracking.Load() {
		return
	}
	ps := *e.obs.latPercentiles.Load()
	e.eachWithLatency(func(cmd *Command, s *latSnapshot) {
		var b strings.Builder
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("p" + FormatPercentile(p) + "=")
			b.WriteString(strconv.FormatFloat(float64(s.valueAt(p))/1000, 'f', 3, 64))
		}
		add("latency_percentiles_usec_"+cmd.Name, b.String())
	})
}

// eachWithLatency calls fn for every command and subcommand that has a
// histogram, in the order of commandstats.
func (e *Engine) eachWithLatency(fn func(*Command, *latSnapshot)) {
	for _, cmd := range e.cmdList {
		if h := cmd.stats.lat.Load(); h != nil {
			fn(cmd, h.snapshot())
		}
		for _, sub := range sortedSubs(cmd) {
			if h := sub.stats.lat.Load(); h != nil {
				fn(sub, h.snapshot())
			}
		}
	}
}

// LATENCY HISTOGRAM [command ...]
func cmdLatencyHistogram(c *Ctx) {
	type entry struct {
		name string
		s    *latSnapshot
	}
	var out []entry
	if len(c.Args) == 2 {
		c.Eng.eachWithLatency(func(cmd *Command, s *latSnapshot) { out = append(out, entry{cmd.Name, s}) })
	} else {
		for _, name := range c.Args[2:] {
			cmd := c.Eng.lookupFull(name)
			if cmd == nil {
				continue
			}
			if h := cmd.stats.lat.Load(); h != nil {
				out = append(out, entry{cmd.Name, h.snapshot()})
			}
			for _, sub := range sortedSubs(cmd) {
				if h := sub.stats.lat.Load(); h != nil {
					out = append(out, entry{sub.Name, h.snapshot()})
				}
			}
		}
	}
	w := c.W
	w.WriteMap(len(out))
	for _, o := range out {
		w.WriteBulkString(o.name)
		w.WriteMap(2)
		w.WriteBulkString("calls")
		w.WriteInt(o.s.total)
		w.WriteBulkString("histogram_usec")
		us, counts := o.s.cdf()
		w.WriteMap(len(us))
		for i := range us {
			w.WriteInt(us[i])
			w.WriteInt(counts[i])
		}
	}
}
