package engine

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The histograms compute what Redis's hdr_histogram.c computes from the
// same values: percentiles and LATENCY HISTOGRAM's buckets
// (testdata/lathist.txt holds its output).
func TestLatHist_MatchesRedisHdrHistogram(t *testing.T) {
	f, err := os.Open("testdata/lathist.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var h *latHist
	var vals []string
	cases := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "in "):
			h = new(latHist)
			vals = strings.Fields(line)[2:]
			for _, v := range vals {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				h.counts[latIndex(latClamp(time.Duration(n)))].Add(1)
			}
		case strings.HasPrefix(line, "out "):
			cases++
			pcts, cdf, _ := strings.Cut(strings.TrimPrefix(line, "out "), "|")
			s := h.snapshot()
			var got []string
			for _, p := range []float64{50, 99, 99.9, 0, 100, 0.001, 12.5} {
				got = append(got, strconv.FormatInt(s.valueAt(p), 10))
			}
			if g, w := strings.Join(got, " "), strings.TrimSpace(pcts); g != w {
				t.Errorf("values %v: percentiles %s, want %s", short(vals), g, w)
			}
			us, counts := s.cdf()
			got = got[:0]
			for i := range us {
				got = append(got, strconv.FormatInt(us[i], 10), strconv.FormatInt(counts[i], 10))
			}
			if g, w := strings.Join(got, " "), strings.TrimSpace(cdf); g != w {
				t.Errorf("values %v: histogram %s, want %s", short(vals), g, w)
			}
		}
	}
	if cases < 20 {
		t.Fatalf("read %d cases", cases)
	}
}

func short(v []string) []string {
	if len(v) > 8 {
		return append(v[:8:8], "...")
	}
	return v
}

func TestLatHist_ClampsToTrackedRange(t *testing.T) {
	if got := latClamp(0); got != 1 {
		t.Errorf("latClamp(0) = %d, want 1 (LATENCY_HISTOGRAM_MIN_VALUE)", got)
	}
	if got := latClamp(time.Hour); got != 1e9 {
		t.Errorf("latClamp(1h) = %d, want 1e9", got)
	}
	if i := latIndex(latClamp(time.Hour)); i >= latCounts {
		t.Errorf("1 s lands in counter %d of %d", i, latCounts)
	}
}

func TestFormatPercentile_AsRedis(t *testing.T) {
	for p, want := range map[float64]string{50: "50", 99: "99", 99.9: "99.9", 0: "0", 100: "100", 0.5: "0.5", 99.99: "99.99", 12.125: "12.125"} {
		if got := FormatPercentile(p); got != want {
			t.Errorf("FormatPercentile(%v) = %q, want %q", p, got, want)
		}
	}
}

// latencyLine returns INFO latencystats' line for cmd ("" if none).
func (te *testEngine) latencyLine(cmd string) string {
	te.t.Helper()
	return te.infoField("latencystats", "latency_percentiles_usec_"+cmd)
}

func TestInfo_LatencyStatsPerCommand(t *testing.T) {
	te := newTestEngine(t)
	if got := te.latencyLine("get"); got != "" {
		t.Fatalf("before any GET: %q", got)
	}
	for range 3 {
		te.do("SET", "k", "v")
		te.do("GET", "k")
	}
	te.do("CONFIG", "GET", "maxmemory")
	for _, cmd := range []string{"set", "get", "config|get"} {
		got := te.latencyLine(cmd)
		fields := strings.Split(got, ",")
		if len(fields) != 3 || !strings.HasPrefix(fields[0], "p50=") || !strings.HasPrefix(fields[1], "p99=") || !strings.HasPrefix(fields[2], "p99.9=") {
			t.Fatalf("%s: %q", cmd, got)
		}
		for _, f := range fields {
			_, v, _ := strings.Cut(f, "=")
			if us, err := strconv.ParseFloat(v, 64); err != nil || us <= 0 || len(v) < 5 || v[len(v)-4] != '.' {
				t.Errorf("%s: %q is not a positive µs value with three decimals", cmd, f)
			}
		}
	}
	if got := te.latencyLine("config"); got != "" {
		t.Errorf("a container command has its own line: %q", got)
	}

	te.SetLatencyPercentiles([]float64{0, 99.99})
	if got := te.latencyLine("get"); !strings.HasPrefix(got, "p0=") || !strings.Contains(got, ",p99.99=") || strings.Count(got, "=") != 2 {
		t.Errorf("with percentiles 0 99.99: %q", got)
	}

	te.SetLatencyTracking(false)
	te.do("DEL", "k")
	if out := te.do("INFO", "latencystats"); strings.Contains(out, "latency_percentiles") {
		t.Errorf("latency-tracking no: %q", out)
	}
	te.SetLatencyTracking(true)
	if got := te.latencyLine("del"); got != "" {
		t.Errorf("a command run with tracking off was recorded: %q", got)
	}
	if got := te.latencyLine("get"); got == "" {
		t.Error("the histograms are lost when tracking is turned off and on")
	}

	te.do("CONFIG", "RESETSTAT")
	if got := te.latencyLine("get"); got != "" {
		t.Errorf("after RESETSTAT: %q", got)
	}
}

// histogramCalls returns the number of calls in cmd's latency histogram.
func (te *testEngine) histogramCalls(cmd string) int64 {
	te.t.Helper()
	h := te.lookupFull([]byte(cmd)).stats.lat.Load()
	if h == nil {
		return 0
	}
	return h.snapshot().total
}

func TestLatencyHistogram_Reply(t *testing.T) {
	te := newTestEngine(t)
	te.expect("%0", "LATENCY", "HISTOGRAM", "get")
	te.do("SET", "k", "v")
	te.do("GET", "k")
	te.do("GET", "k")
	te.do("CONFIG", "GET", "maxmemory")
	// one histogram per command named, a container's subcommands with it,
	// unknown names and commands never called left out
	got := te.do("LATENCY", "HISTOGRAM", "get", "nosuch", "del", "CONFIG")
	if !strings.HasPrefix(got, "%2 $get %2 $calls :2 $histogram_usec %") || !strings.Contains(got, " $config|get %2 $calls :1 $histogram_usec %") {
		t.Errorf("LATENCY HISTOGRAM get nosuch del CONFIG = %q", got)
	}
	got = te.do("LATENCY", "HISTOGRAM", "config|get")
	if !strings.HasPrefix(got, "%1 $config|get %2 $calls :1 ") {
		t.Errorf("LATENCY HISTOGRAM config|get = %q", got)
	}
	all := te.do("LATENCY", "HISTOGRAM")
	for _, name := range []string{"$set ", "$get ", "$config|get ", "$latency|histogram "} {
		if !strings.Contains(all, name) {
			t.Errorf("LATENCY HISTOGRAM lacks %s: %q", name, all)
		}
	}
	if strings.Contains(all, "$del ") {
		t.Errorf("LATENCY HISTOGRAM lists DEL, never called: %q", all)
	}
}

// A blocked command is counted once, when it is served, with the time it
// ran and not the time it waited (Redis's updateStatsOnUnblock); a timeout
// adds nothing, CLIENT UNBLOCK does.
func TestLatency_BlockedCommandCountsWhenServed(t *testing.T) {
	te := newTestEngine(t)
	a, b := te.blockingClient(1), te.blockingClient(2)
	a.run("BLPOP", "q", "0")
	if n := te.histogramCalls("blpop"); n != 0 {
		t.Fatalf("a blocked BLPOP was recorded before it was served (%d)", n)
	}
	time.Sleep(300 * time.Millisecond)
	b.run("RPUSH", "q", "x")
	a.finish(WaitWoken)
	if n := te.histogramCalls("blpop"); n != 1 {
		t.Fatalf("served BLPOP: %d calls in its histogram, want 1", n)
	}
	s := te.lookupFull([]byte("blpop")).stats.lat.Load().snapshot()
	if v := s.valueAt(100); v >= int64(200*time.Millisecond) {
		t.Errorf("the served BLPOP was recorded as %v: the wait counted", time.Duration(v))
	}

	a.run("BLPOP", "q", "0.1")
	a.finish(WaitTimeout)
	if n := te.histogramCalls("blpop"); n != 1 {
		t.Errorf("a timed-out BLPOP was recorded (%d calls; Redis 7.0 records none)", n)
	}
	a.run("BLPOP", "q", "0")
	if !te.UnblockClient(a.ctx.Client, false) {
		t.Fatal("CLIENT UNBLOCK found no blocked client")
	}
	a.finish(WaitWoken)
	if n := te.histogramCalls("blpop"); n != 2 {
		t.Errorf("an unblocked BLPOP: %d calls, want 2", n)
	}
	// a command that does not block is recorded as it ends
	b.run("LPUSH", "q", "y")
	if n := te.histogramCalls("lpush"); n != 1 {
		t.Errorf("LPUSH: %d calls", n)
	}
}

// Commands run in a pipelined batch (PendingStats) reach the histogram
// when the batch's counters are flushed, every call counted.
func TestLatency_PendingBatchFlushes(t *testing.T) {
	te := newTestEngine(t)
	p := &PendingStats{}
	w := nopWriter{}
	ctx := &Ctx{W: w, Pending: p}
	for i := range 100 {
		cmd := "GET"
		if i%3 == 0 {
			cmd = "EXISTS"
		}
		ctx.Args = [][]byte{[]byte(cmd), []byte("k")}
		te.Exec(ctx)
	}
	te.FlushStats(ctx)
	if n := te.histogramCalls("get"); n != 66 {
		t.Errorf("GET: %d calls in the histogram, want 66", n)
	}
	if n := te.histogramCalls("exists"); n != 34 {
		t.Errorf("EXISTS: %d calls in the histogram, want 34", n)
	}
}
