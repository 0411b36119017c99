package engine

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// latencyAt makes te's latency monitor read the wall clock from *now.
func latencyAt(te *testEngine, now *int64) {
	te.obs.latMon.now = func() time.Time { return time.Unix(*now, 0) }
}

// TestLatencyMonitor_Samples: samples under the threshold, or with the
// monitor off, are not kept; one a second is kept, the worst of the
// second; LATEST and HISTORY show them as Redis's latency.c does; the
// series keeps the last 160; RESET drops classes by name, ignoring case.
func TestLatencyMonitor_Samples(t *testing.T) {
	te := newTestEngine(t)
	now := int64(1_800_000_000)
	latencyAt(te, &now)

	te.LatencySample("command", time.Second) // off: threshold 0
	te.expect("*0", "LATENCY", "LATEST")
	te.expect("="+latencyDoctorOff, "LATENCY", "DOCTOR")

	te.SetLatencyMonitorThreshold(100)
	te.expect("%1 $latency-monitor-threshold $100", "CONFIG", "GET", "latency-monitor-threshold")
	te.LatencySample("command", 99*time.Millisecond+999*time.Microsecond) // 99 ms: under
	te.expect("*0", "LATENCY", "LATEST")
	te.LatencySample("command", 150*time.Millisecond)
	te.LatencySample("command", 120*time.Millisecond) // the same second: 150 stays
	te.expect("*1 *4 $command :1800000000 :150 :150", "LATENCY", "LATEST")
	te.LatencySample("command", 200*time.Millisecond) // worse: replaces it
	now++
	te.LatencySample("command", 110*time.Millisecond)
	now += 5
	te.LatencySample("expire-cycle", 300*time.Millisecond)
	te.expect("*2 *4 $command :1800000001 :110 :200 *4 $expire-cycle :1800000006 :300 :300", "LATENCY", "LATEST")
	te.expect("*2 *2 :1800000000 :200 *2 :1800000001 :110", "LATENCY", "HISTORY", "command")
	te.expect("*0", "LATENCY", "HISTORY", "COMMAND") // the class's name is exact, as Redis's dict
	te.expect("*0", "LATENCY", "HISTORY", "nosuch")

	// 170 more seconds: the last 160 are kept, oldest first
	for i := 0; i < 170; i++ {
		now++
		te.LatencySample("command", time.Duration(100+i)*time.Millisecond)
	}
	hist := te.do("LATENCY", "HISTORY", "command")
	if want := fmt.Sprintf("*160 *2 :%d :110 ", now-159); !strings.HasPrefix(hist, want) {
		t.Errorf("HISTORY starts %.40s, want %s", hist, want)
	}
	if want := fmt.Sprintf(" *2 :%d :269", now); !strings.HasSuffix(hist, want) {
		t.Errorf("HISTORY ends %s, want %s", hist[len(hist)-40:], want)
	}
	te.expect(fmt.Sprintf("*2 *4 $command :%d :269 :269 *4 $expire-cycle :1800000006 :300 :300", now), "LATENCY", "LATEST")

	te.expect(":0", "LATENCY", "RESET", "nosuch")
	te.expect(":1", "LATENCY", "RESET", "COMMAND", "nosuch")
	te.expect("*1 *4 $expire-cycle :1800000006 :300 :300", "LATENCY", "LATEST")
	te.expect(":1", "LATENCY", "RESET")
	te.expect("*0", "LATENCY", "LATEST")
	te.expect(":0", "LATENCY", "RESET")
	// on, with nothing kept: not the disabled report (unless the process
	// has transparent huge pages, which earlier tests' allocations can
	// give it: then that advice, as Redis's)
	if anonHugePages() == 0 {
		te.expect("=Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n", "LATENCY", "DOCTOR")
	} else if got := te.do("LATENCY", "DOCTOR"); !strings.HasPrefix(got, "=\nI have a few advices for you:\n\n- I detected a non zero amount of anonymous huge pages") {
		t.Errorf("LATENCY DOCTOR with huge pages and no samples: %q", got)
	}
	te.expect("-ERR No samples available for event 'command'", "LATENCY", "GRAPH", "command")

	// off again: what was kept stays readable, nothing more is kept
	te.LatencySample("command", time.Second)
	te.SetLatencyMonitorThreshold(0)
	te.LatencySample("fast-command", time.Second)
	te.expect(fmt.Sprintf("*1 *4 $command :%d :1000 :1000", now), "LATENCY", "LATEST")
}

// TestLatencyMonitor_Commands: a command that runs at least the threshold
// is a command sample, or a fast-command one when it is flagged fast, as
// Redis's call() records them.
func TestLatencyMonitor_Commands(t *testing.T) {
	te := newTestEngine(t)
	te.Register(&Command{Name: "testsleep", Arity: 2, Flags: FlagNoKeys, Fn: func(c *Ctx) {
		d, _ := time.ParseDuration(string(c.Args[1]))
		time.Sleep(d)
		c.W.WriteStatus("OK")
	}})
	te.Register(&Command{Name: "testfastsleep", Arity: 2, Flags: FlagNoKeys | FlagFast, Fn: func(c *Ctx) {
		d, _ := time.ParseDuration(string(c.Args[1]))
		time.Sleep(d)
		c.W.WriteStatus("OK")
	}})
	te.expect("+OK", "TESTSLEEP", "30ms") // the monitor is off
	te.expect("*0", "LATENCY", "LATEST")
	// A threshold far above what a command takes, even stalled on a
	// loaded machine under -race (20 ms was seen passed).
	te.SetLatencyMonitorThreshold(200)
	te.expect("+OK", "TESTSLEEP", "0s")
	te.expect("*0", "LATENCY", "LATEST")
	te.expect("+OK", "TESTSLEEP", "250ms")
	te.expect("+OK", "TESTFASTSLEEP", "250ms")
	// *2 *4 $command :time :ms :max *4 $fast-command :time :ms :max
	latest := strings.Fields(te.do("LATENCY", "LATEST"))
	if len(latest) != 11 || latest[0] != "*2" || latest[2] != "$command" || latest[7] != "$fast-command" {
		t.Fatalf("LATENCY LATEST: %q", latest)
	}
	for _, f := range []string{latest[4], latest[9]} {
		if ms, err := strconv.Atoi(strings.TrimPrefix(f, ":")); err != nil || ms < 250 {
			t.Errorf("LATENCY LATEST: latency %s, want at least 250: %q", f, latest)
		}
	}
}

// TestLatencyMonitor_RedisReports: GRAPH and DOCTOR for the samples
// redis-server 7.0.15 kept for six DEBUG SLEEPs a second apart
// (50, 12, 30, 80, 20 and 50 ms, threshold 10) write what it wrote, byte
// for byte.
func TestLatencyMonitor_RedisReports(t *testing.T) {
	te := newTestEngine(t)
	var now int64
	latencyAt(te, &now)
	te.SetLatencyMonitorThreshold(10)
	for _, s := range []struct{ at, ms int64 }{
		{1795736663, 50}, {1795736664, 12}, {1795736666, 30}, {1795736667, 80}, {1795736668, 20}, {1795736669, 50},
	} {
		now = s.at
		te.LatencySample("command", time.Duration(s.ms)*time.Millisecond)
	}
	now = 1795736673
	graph := "command - high 80 ms, low 12 ms (all time high 80 ms)\n" +
		"--------------------------------------------------------------------------------\n" +
		"   #  \n_  | _\n| _| |\n|_||o|\n      \n197654\n0sssss\ns     \n"
	te.expect("="+graph, "LATENCY", "GRAPH", "command")
	now = 1795736674
	if anonHugePages() > 0 {
		t.Skip("this process has transparent huge pages: DOCTOR adds its advice")
	}
	doctor := "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n" +
		"1. command: 6 latency spikes (average 40ms, mean deviation 19ms, period 1.83 sec). Worst all time event 80ms.\n\n" +
		"I have a few advices for you:\n\n" +
		"- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n" +
		"- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n"
	te.expect("="+doctor, "LATENCY", "DOCTOR")
}

// TestLatencyGraph_Render: Redis's sparkline for three samples (its
// LATENCY GRAPH after DEBUG SLEEPs of 200, 350 and 150 ms), a flat
// series, labels in minutes, hours and days, and a series wider than 80
// columns, which is drawn in two parts.
func TestLatencyGraph_Render(t *testing.T) {
	ts := &latencySeries{event: "command", max: 400}
	add := func(at int32, ms uint32) {
		ts.samples[ts.idx] = latencySample{at, ms}
		ts.idx = (ts.idx + 1) % latencyTSLen
	}
	add(100, 200)
	add(101, 350)
	add(102, 150)
	want := "command - high 350 ms, low 150 ms (all time high 400 ms)\n" + strings.Repeat("-", 80) + "\n" +
		" # \n | \n_| \n||_\n   \n210\nsss\n"
	if got := latencyGraph(ts, 102); got != want {
		t.Errorf("graph:\n%q\nwant\n%q", got, want)
	}

	ts = &latencySeries{event: "e", max: 5}
	const now = 1_800_000_000
	add(now-3*86400, 5)
	add(now-7200, 5)
	add(now-120, 5)
	add(now-30, 5)
	want = "e - high 5 ms, low 5 ms (all time high 5 ms)\n" + strings.Repeat("-", 80) + "\n" +
		"    \n    \n    \n____\n    \n3223\ndhm0\n   s\n"
	if got := latencyGraph(ts, now); got != want {
		t.Errorf("graph:\n%q\nwant\n%q", got, want)
	}

	ts = &latencySeries{event: "e"}
	for i := int32(0); i < 85; i++ {
		add(i+1, uint32(10+i%12))
	}
	got := latencyGraph(ts, 85)
	// the header and rule, the first 80 samples' rows and labels, then
	// after an empty line the last 5 samples'
	first, second, ok := strings.Cut(got, "\n\n")
	if !ok || strings.Contains(second, "\n\n") {
		t.Fatalf("graph of 85 samples not in two parts:\n%s", got)
	}
	for _, line := range strings.Split(first, "\n")[2:] {
		if len(line) != 80 {
			t.Errorf("a row of the first part is %d wide: %q", len(line), line)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(second, "\n"), "\n") {
		if len(line) != 5 {
			t.Errorf("a row of the second part is %d wide: %q", len(line), line)
		}
	}
	if !strings.HasPrefix(second, " _o# \n#||| \n") {
		t.Errorf("second part starts %q", second[:12])
	}
}

// TestLatencyMonitor_Unblocking: serving a blocked command is timed as a
// command-unblocking sample, as Redis's updateStatsOnUnblock records it.
func TestLatencyMonitor_Unblocking(t *testing.T) {
	te := newTestEngine(t)
	// SLOWPOP key: pops key's first element, 250 ms after it finds one;
	// blocks while there is none
	te.Register(&Command{Name: "slowpop", Arity: 2, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Fn: func(c *Ctx) {
		if c.Eng.keys.get(c.Args[1]) == nil {
			c.block(c.Args[1:2], 0, KindList)
			return
		}
		time.Sleep(250 * time.Millisecond)
		popGeneric(c, true)
	}})
	te.SetLatencyMonitorThreshold(200) // (RPUSH, stalled, must stay under it)
	a, b := te.blockingClient(1), te.blockingClient(2)
	if got := a.run("SLOWPOP", "q"); got != "" {
		t.Fatalf("SLOWPOP replied %q at once", got)
	}
	if got := b.run("RPUSH", "q", "x"); got != ":1" {
		t.Fatalf("RPUSH = %q", got)
	}
	if got := a.finish(WaitWoken); got != "$x" {
		t.Fatalf("served SLOWPOP replied %q", got)
	}
	latest := strings.Fields(te.do("LATENCY", "LATEST"))
	if len(latest) != 6 || latest[2] != "$command-unblocking" {
		t.Fatalf("LATENCY LATEST %q, want one command-unblocking event", latest)
	}
	if ms, err := strconv.Atoi(strings.TrimPrefix(latest[4], ":")); err != nil || ms < 250 {
		t.Errorf("command-unblocking latency %s, want at least 250", latest[4])
	}
}
