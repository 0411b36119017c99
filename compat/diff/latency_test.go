package diff

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLatencyStatsDiff: after the same commands, INFO latencystats and
// LATENCY HISTOGRAM list the same commands on both servers, with the same
// call counts, percentiles in the same form, and histogram buckets at the
// boundaries Redis's have. (Latencies themselves differ, so values are
// compared in form only.)
func TestLatencyStatsDiff(t *testing.T) {
	rc, tc := dialPair(t)
	script := [][]string{
		{"CONFIG", "RESETSTAT"},
		{"SET", "k", "v"}, {"SET", "lock", "tok", "NX", "PX", "30000"}, {"GET", "k"}, {"GET", "k"}, {"GET", "nosuch"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
		{"CONFIG", "GET", "maxmemory"}, {"CLIENT", "ID"}, {"DEL", "k", "lock"}, {"PEXPIRE", "x", "10"},
		{"MULTI"}, {"INCR", "n"}, {"EXEC"},
		{"GET"}, // an arity error: rejected, not timed
	}
	for _, c := range []*conn{rc, tc} {
		for _, args := range script {
			if _, err := c.do(args...); err != nil {
				t.Fatal(err)
			}
		}
	}

	// INFO latencystats: the same commands, each with p50, p99 and p99.9
	value := regexp.MustCompile(`^p50=[0-9]+\.[0-9]{3},p99=[0-9]+\.[0-9]{3},p99\.9=[0-9]+\.[0-9]{3}$`)
	lines := func(c *conn, who string) []string {
		raw, err := c.do("INFO", "latencystats")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, line := range strings.Split(string(raw), "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || !strings.HasPrefix(k, "latency_percentiles_usec_") {
				continue
			}
			if !value.MatchString(v) {
				t.Errorf("%s: %s:%s", who, k, v)
			}
			names = append(names, k)
		}
		slices.Sort(names)
		return names
	}
	want, got := lines(rc, "redis"), lines(tc, "tumbler")
	if len(want) < 10 {
		t.Fatalf("Redis listed %d commands: %v", len(want), want)
	}
	if !slices.Equal(want, got) {
		t.Errorf("INFO latencystats lists\n redis:   %v\n tumbler: %v", want, got)
	}
	compareHistograms(t, rc, tc)

	// latency-tracking-info-percentiles chooses the percentiles shown;
	// latency-tracking no empties the section and records nothing more,
	// the histograms kept for LATENCY HISTOGRAM
	value = regexp.MustCompile(`^p0=[0-9]+\.[0-9]{3},p12\.5=[0-9]+\.[0-9]{3},p100=[0-9]+\.[0-9]{3}$`)
	for _, c := range []*conn{rc, tc} {
		if r, err := c.do("CONFIG", "SET", "latency-tracking-info-percentiles", "0 12.5 100"); err != nil || string(r) != "+OK\r\n" {
			t.Fatalf("CONFIG SET latency-tracking-info-percentiles: %q %v", r, err)
		}
	}
	if want, got = lines(rc, "redis"), lines(tc, "tumbler"); !slices.Equal(want, got) {
		t.Errorf("INFO latencystats lists\n redis:   %v\n tumbler: %v", want, got)
	}
	for _, c := range []*conn{rc, tc} {
		for _, args := range [][]string{{"CONFIG", "SET", "latency-tracking", "no"}, {"GET", "k"}, {"HSET", "h", "f", "v"}} {
			if _, err := c.do(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []*conn{rc, tc} {
		raw, err := c.do("INFO", "latencystats")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "latency_percentiles") {
			t.Errorf("latency-tracking no: %q", raw)
		}
	}
	compareHistograms(t, rc, tc)
}

// compareHistograms compares the shapes of LATENCY HISTOGRAM's replies.
func compareHistograms(t *testing.T, rc, tc *conn) {
	t.Helper()

	// LATENCY HISTOGRAM, all and by name (a container's subcommands too;
	// unknown names and commands never called skipped)
	for _, args := range [][]string{
		{"LATENCY", "HISTOGRAM"},
		{"LATENCY", "HISTOGRAM", "get", "SET", "config", "nosuch", "hset", "client|id"},
		{"LATENCY", "HISTOGRAM", "nosuch"},
	} {
		wantRaw, err := rc.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		gotRaw, err := tc.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := histogramShape(wantRaw)
		if err != nil {
			t.Fatalf("%s: redis: %v: %q", strings.Join(args, " "), err, wantRaw)
		}
		got, err := histogramShape(gotRaw)
		if err != nil {
			t.Errorf("%s: tumbler: %v: %q", strings.Join(args, " "), err, gotRaw)
			continue
		}
		// Redis lists commands, and a container's subcommands, in its
		// hash tables' order, which a random seed decides at each start
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s:\n redis:   %v\n tumbler: %v", strings.Join(args, " "), want, got)
		}
	}
}

// histogramShape checks a LATENCY HISTOGRAM reply (RESP2) and returns
// "name calls=N" per command: each histogram's buckets are at Redis's
// boundaries (the highest value counted at 1024 ns × 2^k, in µs), in
// increasing order with increasing counts, the last count the calls.
func histogramShape(raw []byte) ([]string, error) {
	bound := map[int64]bool{}
	for level := int64(1024); level <= 1<<31; level *= 2 {
		bound[(level+level/128-1)/1000] = true
	}
	_, elems, ok := Elements(raw)
	if !ok || len(elems)%2 != 0 {
		return nil, fmt.Errorf("not a map")
	}
	var out []string
	for i := 0; i < len(elems); i += 2 {
		name := strings.TrimSpace(string(elems[i][strings.IndexByte(string(elems[i]), '\n')+1:]))
		_, body, ok := Elements(elems[i+1])
		if !ok || len(body) != 4 || !strings.Contains(string(body[0]), "calls") || !strings.Contains(string(body[2]), "histogram_usec") {
			return nil, fmt.Errorf("%s: not calls and histogram_usec", name)
		}
		calls, ok := integerOf(body[1])
		if !ok {
			return nil, fmt.Errorf("%s: calls %q", name, body[1])
		}
		_, buckets, ok := Elements(body[3])
		if !ok || len(buckets)%2 != 0 || len(buckets) == 0 {
			return nil, fmt.Errorf("%s: histogram_usec %q", name, body[3])
		}
		prevUs, prevN := int64(-1), int64(0)
		for j := 0; j < len(buckets); j += 2 {
			us, ok1 := integerOf(buckets[j])
			n, ok2 := integerOf(buckets[j+1])
			if !ok1 || !ok2 || !bound[us] || us <= prevUs || n <= prevN {
				return nil, fmt.Errorf("%s: bucket %q %q after %d %d", name, buckets[j], buckets[j+1], prevUs, prevN)
			}
			prevUs, prevN = us, n
		}
		if prevN != calls {
			return nil, fmt.Errorf("%s: last bucket counts %d of %d calls", name, prevN, calls)
		}
		out = append(out, name+" calls="+strconv.FormatInt(calls, 10))
	}
	return out, nil
}

// TestLatencyMonitorDiff: the latency monitor (latency-monitor-threshold,
// LATENCY LATEST, HISTORY, GRAPH, DOCTOR, RESET) replies as Redis's does
// to the same slow command: the same events, and the same reports but for
// the figures, which are timings.
func TestLatencyMonitorDiff(t *testing.T) {
	rc, tc := dialPair(t)
	// a script that runs for ARGV[1] µs by the server's clock
	const busy = "local t = redis.call('time') while true do local n = redis.call('time') " +
		"if (n[1]-t[1])*1000000 + (n[2]-t[2]) >= tonumber(ARGV[1]) then return 1 end end"
	digits := regexp.MustCompile(`[0-9]+`)
	same := func(what string, exact bool, args ...string) (redis, tumbler string) {
		t.Helper()
		want, err := rc.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.do(args...)
		if err != nil {
			t.Fatal(err)
		}
		w, g := string(want), string(got)
		if !exact {
			w, g = digits.ReplaceAllString(w, "N"), digits.ReplaceAllString(g, "N")
		}
		if w != g {
			t.Errorf("%s: %s\n redis:   %q\n tumbler: %q", what, strings.Join(args, " "), want, got)
		}
		return string(want), string(got)
	}
	thp := func(s string) bool { return strings.Contains(s, "anonymous huge pages") }

	same("off", true, "LATENCY", "DOCTOR")
	// (a threshold well above what a busy machine, or the race detector,
	// makes of the other commands here)
	same("on", true, "CONFIG", "SET", "latency-monitor-threshold", "200")
	same("on", true, "CONFIG", "GET", "latency-monitor-threshold")
	same("on", true, "LATENCY", "RESET")
	if r, g := same("on, nothing seen", false, "LATENCY", "DOCTOR"); !thp(r) && !thp(g) && r != g {
		t.Errorf("LATENCY DOCTOR with nothing seen:\n redis:   %q\n tumbler: %q", r, g)
	}
	same("a slow script", true, "EVAL", busy, "0", "250000")

	// LATEST: command, its time now, 250 ms or a little more, the same max
	start := time.Now().Unix()
	for _, c := range []struct {
		who  string
		conn *conn
	}{{"redis", rc}, {"tumbler", tc}} {
		raw, err := c.conn.do("LATENCY", "LATEST")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(string(raw), "\r\n")
		if len(f) != 8 || f[0] != "*1" || f[1] != "*4" || f[3] != "command" {
			t.Fatalf("%s: LATENCY LATEST %q", c.who, raw)
		}
		at, _ := strconv.ParseInt(strings.TrimPrefix(f[4], ":"), 10, 64)
		ms, _ := strconv.Atoi(strings.TrimPrefix(f[5], ":"))
		if at < start-5 || at > start+1 || ms < 250 || ms > 2000 || f[6] != f[5] {
			t.Errorf("%s: LATENCY LATEST %q", c.who, raw)
		}
		hist, err := c.conn.do("LATENCY", "HISTORY", "command")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("*1\r\n*2\r\n%s\r\n%s\r\n", f[4], f[5]); string(hist) != want {
			t.Errorf("%s: LATENCY HISTORY command %q, want %q", c.who, hist, want)
		}
	}
	same("one sample", true, "LATENCY", "HISTORY", "COMMAND")
	same("one sample", false, "LATENCY", "GRAPH", "command")
	same("one sample", true, "LATENCY", "GRAPH", "Command")
	if r, g := same("one sample", false, "LATENCY", "DOCTOR"); !thp(r) && !thp(g) && digits.ReplaceAllString(r, "N") != digits.ReplaceAllString(g, "N") {
		t.Errorf("LATENCY DOCTOR:\n redis:   %q\n tumbler: %q", r, g)
	}
	same("reset", true, "LATENCY", "RESET", "nosuch")
	same("reset", true, "LATENCY", "RESET", "COMMAND", "command")
	same("reset", true, "LATENCY", "LATEST")
	same("off", true, "CONFIG", "SET", "latency-monitor-threshold", "0")
	same("off", true, "LATENCY", "DOCTOR")
}
