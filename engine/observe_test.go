package engine

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// infoField returns one field of INFO section sec, or "" when absent.
func (te *testEngine) infoField(sec, key string) string {
	te.t.Helper()
	out := strings.TrimPrefix(te.do("INFO", sec), "=")
	for _, line := range strings.Split(out, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return v
		}
	}
	return ""
}

func TestInfo_CommandStatsCountCallsFailuresAndRejections(t *testing.T) {
	te := newTestEngine(t)
	te.do("SET", "k", "v")
	te.do("GET", "k")
	te.do("GET", "k")
	te.do("GET")             // arity: rejected
	te.do("INCR", "k")       // not an integer: failed
	te.do("CLIENT", "bogus") // unknown subcommand: an error, no command
	get := te.infoField("commandstats", "cmdstat_get")
	if !strings.HasPrefix(get, "calls=2,usec=") || !strings.HasSuffix(get, ",rejected_calls=1,failed_calls=0") || !strings.Contains(get, ",usec_per_call=") {
		t.Errorf("cmdstat_get = %q", get)
	}
	if incr := te.infoField("commandstats", "cmdstat_incr"); !strings.HasSuffix(incr, ",rejected_calls=0,failed_calls=1") || !strings.HasPrefix(incr, "calls=1,") {
		t.Errorf("cmdstat_incr = %q", incr)
	}
	if got := te.infoField("commandstats", "cmdstat_del"); got != "" {
		t.Errorf("a command never called is listed: %q", got)
	}
	if got := te.infoField("errorstats", "errorstat_ERR"); got != "count=3" {
		t.Errorf("errorstat_ERR = %q, want count=3", got)
	}
	if got := te.infoField("stats", "total_error_replies"); got != "3" {
		t.Errorf("total_error_replies = %q", got)
	}
	for _, f := range []struct{ section, name string }{{"memory", "lazyfree_pending_objects"}, {"memory", "lazyfreed_objects"}, {"stats", "migrate_cached_sockets"}} { // (no MIGRATE has run)
		if got := te.infoField(f.section, f.name); got != "0" {
			t.Errorf("%s = %q, want 0", f.name, got)
		}
	}
	if got := te.infoField("stats", "unexpected_error_replies"); got != "0" {
		t.Errorf("unexpected_error_replies = %q, want 0 (no master, no AOF)", got)
	}
	te.do("CONFIG", "RESETSTAT")
	if got := te.infoField("commandstats", "cmdstat_get"); got != "" {
		t.Errorf("after RESETSTAT cmdstat_get = %q", got)
	}
	if got := te.infoField("errorstats", "errorstat_ERR"); got != "" {
		t.Errorf("after RESETSTAT errorstat_ERR = %q", got)
	}
}

func TestInfo_ErrorStatsByCode(t *testing.T) {
	te := newTestEngine(t)
	te.do("SET", "s", "v")
	te.Exec(&Ctx{Args: [][]byte{[]byte("GET"), []byte("s")}, W: nopWriter{}, Client: &Client{NeedsAuth: true}})
	if got := te.infoField("errorstats", "errorstat_NOAUTH"); got != "count=1" {
		t.Errorf("errorstat_NOAUTH = %q", got)
	}
	if got := te.infoField("commandstats", "cmdstat_get"); !strings.Contains(got, "rejected_calls=1") {
		t.Errorf("NOAUTH is not a rejected call: %q", got)
	}
}

func TestInfo_CommandStatsSubcommand(t *testing.T) {
	te := newTestEngine(t)
	te.do("CONFIG", "GET", "maxmemory")
	if got := te.infoField("commandstats", "cmdstat_config|get"); !strings.HasPrefix(got, "calls=1,") {
		t.Errorf("cmdstat_config|get = %q", got)
	}
}

func TestInfo_KeyspaceOmittedWhenEmpty(t *testing.T) {
	te := newTestEngine(t)
	if got := te.do("INFO", "keyspace"); got != "=# Keyspace\r\n" {
		t.Errorf("empty keyspace: %q", got)
	}
	te.do("SET", "a", "1")
	te.do("SET", "b", "1", "PX", "10000")
	if got := te.infoField("keyspace", "db0"); got != "keys=2,expires=1,avg_ttl=10000" {
		t.Errorf("db0 = %q", got)
	}
}

// TestInfo_AvgTTLIsTheMeanTimeLeft: avg_ttl is the mean of the keys'
// remaining TTLs in ms, following sets, deletes, persists and the clock.
func TestInfo_AvgTTLIsTheMeanTimeLeft(t *testing.T) {
	te := newTestEngine(t)
	te.do("SET", "a", "1", "PX", "10000")
	te.do("SET", "b", "1", "PX", "30000")
	te.do("SET", "c", "1", "PX", "5000")
	te.do("SET", "plain", "1")
	if got := te.infoField("keyspace", "db0"); got != "keys=4,expires=3,avg_ttl=15000" {
		t.Errorf("db0 = %q", got)
	}
	te.do("DEL", "c")
	te.do("PEXPIRE", "a", "20000") // a moves from 10 s to 20 s
	te.clock.Advance(4 * time.Second)
	if got := te.infoField("keyspace", "db0"); got != "keys=3,expires=2,avg_ttl=21000" {
		t.Errorf("db0 = %q, want the mean of 16 s and 26 s", got)
	}
	te.do("PERSIST", "b")
	if got := te.infoField("keyspace", "db0"); got != "keys=3,expires=1,avg_ttl=16000" {
		t.Errorf("db0 = %q", got)
	}
}

// TestInfo_ExpiredStalePercCountsDueKeysNotReclaimed: keys past their
// deadline that no one has reclaimed yet are the stale share.
func TestInfo_ExpiredStalePercCountsDueKeysNotReclaimed(t *testing.T) {
	te := newTestEngine(t)
	for i, px := range []string{"1000", "1000", "2000", "60000"} {
		te.do("SET", "k"+strconv.Itoa(i), "v", "PX", px)
	}
	if got := te.infoField("stats", "expired_stale_perc"); got != "0.00" {
		t.Errorf("expired_stale_perc = %q before any deadline", got)
	}
	te.clock.Advance(1500 * time.Millisecond) // two due, nobody reclaimed them
	if got := te.infoField("stats", "expired_stale_perc"); got != "50.00" {
		t.Errorf("expired_stale_perc = %q, want 2 of 4", got)
	}
	te.clock.Advance(time.Second)
	if got := te.infoField("stats", "expired_stale_perc"); got != "75.00" {
		t.Errorf("expired_stale_perc = %q, want 3 of 4", got)
	}
	if n, _, _ := te.ReclaimDue(100); n != 3 {
		t.Fatalf("reclaimed %d", n)
	}
	if got := te.infoField("stats", "expired_stale_perc"); got != "0.00" {
		t.Errorf("expired_stale_perc = %q after reclaiming", got)
	}
	if te.obs.expireNs.Load() <= 0 {
		t.Error("the time ReclaimDue took was not counted (expire_cycle_cpu_milliseconds)")
	}
}

// TestInfo_NetworkCountersAndRates: what the server counts on its
// sockets shows in INFO stats, the rates averaged as ops/sec is, and
// CONFIG RESETSTAT clears them.
func TestInfo_NetworkCountersAndRates(t *testing.T) {
	te := newTestEngine(t)
	var nilStripe *NetStripe
	nilStripe.Read(10) // counts nothing, and does not panic
	te.Net.Stripe(1).Read(100)
	te.Net.Stripe(2).Read(50)
	te.Net.Stripe(9).Wrote(7) // the same stripe as 1
	te.Net.Stripe(3).Read(0)  // no input: not a read
	for k, want := range map[string]string{
		"total_net_input_bytes": "150", "total_net_output_bytes": "7",
		"total_reads_processed": "2", "total_writes_processed": "1",
		"instantaneous_input_kbps": "0.00",
	} {
		if got := te.infoField("stats", k); got != want {
			t.Errorf("%s = %q, want %s", k, got, want)
		}
	}
	t0 := time.Unix(1000, 0)
	te.SampleOps(t0)
	for i := 0; i < 16; i++ {
		te.Net.Stripe(int64(i)).Read(1024) // 10 KB/s in
		te.Net.Stripe(int64(i)).Wrote(512) // 5 KB/s out
		te.SampleOps(t0.Add(time.Duration(i+1) * 100 * time.Millisecond))
	}
	if got := te.infoField("stats", "instantaneous_input_kbps"); got != "10.00" {
		t.Errorf("instantaneous_input_kbps = %q, want 10.00", got)
	}
	if got := te.infoField("stats", "instantaneous_output_kbps"); got != "5.00" {
		t.Errorf("instantaneous_output_kbps = %q, want 5.00", got)
	}
	te.do("CONFIG", "RESETSTAT")
	for _, k := range []string{"total_net_input_bytes", "total_net_output_bytes", "total_reads_processed", "total_writes_processed"} {
		if got := te.infoField("stats", k); got != "0" {
			t.Errorf("%s = %q after CONFIG RESETSTAT", k, got)
		}
	}
	if got := te.infoField("stats", "instantaneous_input_kbps"); got != "0.00" {
		t.Errorf("instantaneous_input_kbps = %q after CONFIG RESETSTAT", got)
	}
}

// TestInfo_MemoryFieldsAgree: the derived memory fields are computed from
// the same sample and agree with each other as in Redis.
func TestInfo_MemoryFieldsAgree(t *testing.T) {
	te := newTestEngine(t)
	testMemoryFieldsAgree(t, te)
	// A collection can leave the heap below its start-up size (seen
	// under load): the fields still add up.
	te.obs.startMem = 1 << 50
	testMemoryFieldsAgree(t, te)
}

func testMemoryFieldsAgree(t *testing.T, te *testEngine) {
	t.Helper()
	f := map[string]string{}
	out := strings.TrimPrefix(te.do("INFO", "memory"), "=")
	for _, line := range strings.Split(out, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	n := func(k string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[k], "%"), 64)
		if err != nil {
			t.Fatalf("%s = %q", k, f[k])
		}
		return v
	}
	used, rss, active, resident := n("used_memory"), n("used_memory_rss"), n("allocator_active"), n("allocator_resident")
	if n("allocator_allocated") != used || active < used || resident < active {
		t.Errorf("allocated %v, active %v, resident %v, used %v", n("allocator_allocated"), active, resident, used)
	}
	near := func(k string, want float64) {
		if got := n(k); math.Abs(got-want) > 0.006 {
			t.Errorf("%s = %v, want %.2f", k, got, want)
		}
	}
	near("mem_fragmentation_ratio", rss/used)
	near("allocator_frag_ratio", active/used)
	near("allocator_rss_ratio", resident/active)
	near("used_memory_peak_perc", used*100/n("used_memory_peak"))
	if n("mem_fragmentation_bytes") != rss-used || n("allocator_frag_bytes") != active-used {
		t.Errorf("mem_fragmentation_bytes %v, allocator_frag_bytes %v", n("mem_fragmentation_bytes"), n("allocator_frag_bytes"))
	}
	if n("used_memory_startup") <= 0 || n("used_memory_overhead") < n("used_memory_startup") ||
		n("used_memory_dataset") != used-n("used_memory_overhead") {
		t.Errorf("startup %v, overhead %v, dataset %v, used %v", n("used_memory_startup"), n("used_memory_overhead"), n("used_memory_dataset"), used)
	}
	if v, _ := strconv.ParseInt(te.infoField("server", "lru_clock"), 10, 64); v <= 0 || v >= 1<<24 {
		t.Errorf("lru_clock = %d", v)
	}
}

func TestInfo_MemoryAndCPUAreMeasured(t *testing.T) {
	te := newTestEngine(t)
	for _, f := range []string{"used_memory", "used_memory_rss", "used_memory_peak"} {
		if v := te.infoField("memory", f); v == "" || v == "0" {
			t.Errorf("%s = %q", f, v)
		}
	}
	if v := te.infoField("memory", "maxmemory_policy"); v != "noeviction" {
		t.Errorf("maxmemory_policy = %q", v)
	}
	te.RegisterParam("maxmemory", func() string { return "1048576" })
	if v := te.infoField("memory", "maxmemory_human"); v != "1.00M" {
		t.Errorf("maxmemory_human = %q after a maxmemory parameter", v)
	}
	if v := te.infoField("cpu", "used_cpu_user"); v == "" || v == "0.000000" {
		t.Errorf("used_cpu_user = %q", v)
	}
}

func TestOpsPerSec_AveragesSamples(t *testing.T) {
	te := newTestEngine(t)
	t0 := time.Unix(1000, 0)
	te.SampleOps(t0)
	for i := 0; i < 16; i++ {
		te.Stats.Commands.Add(50) // 50 commands per 100 ms
		te.SampleOps(t0.Add(time.Duration(i+1) * 100 * time.Millisecond))
	}
	if got := te.OpsPerSec(); got != 500 {
		t.Errorf("OpsPerSec = %d, want 500", got)
	}
	if got := te.infoField("stats", "instantaneous_ops_per_sec"); got != "500" {
		t.Errorf("instantaneous_ops_per_sec = %q", got)
	}
}

func TestSlowlog_RecordsWhenThresholdIsZero(t *testing.T) {
	te := newTestEngine(t)
	te.expect("+OK", "SLOWLOG", "RESET")
	te.expect(":0", "SLOWLOG", "LEN")
	te.expect("*0", "SLOWLOG", "GET")
	te.SetSlowlogSlowerThan(0)
	te.do("SET", "k", "v")
	te.Exec(&Ctx{Args: [][]byte{[]byte("GET"), []byte("k")}, W: nopWriter{}, Client: &Client{Name: "worker", Conn: peer("10.0.0.1:5000")}})
	ents := te.SlowlogGet(-1)
	if len(ents) != 2 {
		t.Fatalf("entries = %+v", ents)
	}
	if e := ents[0]; e.ID != 1 || strings.Join(e.Args, " ") != "GET k" || e.Addr != "10.0.0.1:5000" || e.Name != "worker" || e.Duration < 0 || e.Time < 1_600_000_000 {
		t.Errorf("newest entry = %+v", e)
	}
	if e := ents[1]; e.ID != 0 || strings.Join(e.Args, " ") != "SET k v" {
		t.Errorf("oldest entry = %+v", e)
	}
	// SLOWLOG GET itself is logged after it runs, as in Redis.
	got := te.do("SLOWLOG", "GET", "1")
	if !strings.HasPrefix(got, "*1 *6 :1 :") || !strings.HasSuffix(got, "*2 $GET $k $10.0.0.1:5000 $worker") {
		t.Errorf("SLOWLOG GET 1 = %q", got)
	}
	te.expect(":3", "SLOWLOG", "LEN")
	te.SetSlowlogSlowerThan(-1)
	te.do("GET", "k")
	te.expect(":4", "SLOWLOG", "LEN") // the LEN above was logged, this GET not
}

type peer string

func (p peer) PeerAddr() string { return string(p) }

func TestSlowlog_MaxLenTrimsOldest(t *testing.T) {
	te := newTestEngine(t)
	te.SetSlowlogSlowerThan(0)
	te.SetSlowlogMaxLen(3)
	for i := 0; i < 10; i++ {
		te.do("PING")
	}
	ents := te.SlowlogGet(-1)
	if len(ents) != 3 || ents[0].ID != 9 || ents[2].ID != 7 {
		t.Errorf("entries = %+v", ents)
	}
	te.SetSlowlogMaxLen(0)
	te.do("PING")
	if n := te.SlowlogLen(); n != 3 {
		t.Errorf("max-len 0 still logs or clears: len %d", n)
	}
}

func TestSlowlog_TrimsArgsAndRedacts(t *testing.T) {
	long := strings.Repeat("x", 200)
	args := [][]byte{[]byte("SET"), []byte("k"), []byte(long)}
	got := slowlogArgs(args, args[0])
	if want := strings.Repeat("x", 128) + "... (72 more bytes)"; got[2] != want {
		t.Errorf("long arg = %q", got[2])
	}
	many := [][]byte{[]byte("DEL")}
	for i := 0; i < 40; i++ {
		many = append(many, []byte("k"))
	}
	got = slowlogArgs(many, many[0])
	if len(got) != 32 || got[31] != "... (10 more arguments)" || got[30] != "k" {
		t.Errorf("41 args → %d: last %q", len(got), got[len(got)-1])
	}
	got = slowlogArgs([][]byte{[]byte("AUTH"), []byte("u"), []byte("p")}, []byte("AUTH"))
	if strings.Join(got, " ") != "AUTH (redacted) (redacted)" {
		t.Errorf("AUTH = %q", got)
	}
	got = slowlogArgs([][]byte{[]byte("HELLO"), []byte("3"), []byte("SETNAME"), []byte("auth"), []byte("AUTH"), []byte("default"), []byte("pw")}, []byte("HELLO"))
	if strings.Join(got, " ") != "HELLO 3 SETNAME auth AUTH (redacted) (redacted)" {
		t.Errorf("HELLO = %q", got)
	}
	// CONFIG SET of Redis's SENSITIVE_CONFIG parameters, in any case;
	// not when the pairs are incomplete (Redis refuses those first)
	for in, want := range map[string]string{
		"config set requirepass pw maxmemory 0":  "config set requirepass (redacted) maxmemory 0",
		"CONFIG SET MasterAuth pw masteruser u":  "CONFIG SET MasterAuth (redacted) masteruser (redacted)",
		"config set maxmemory 0 requirepass pw":  "config set maxmemory 0 requirepass (redacted)",
		"config set requirepass pw maxmemory":    "config set requirepass pw maxmemory",
		"config get requirepass pw":              "config get requirepass pw",
		"config set nosuch 1 requirepass pw x":   "config set nosuch 1 requirepass pw x",
		"config set nosuch 1 requirepass pw a b": "config set nosuch 1 requirepass (redacted) a b",
		// helloCommand stops at a name it refuses, before a later AUTH
		"HELLO 3 SETNAME a\x01b AUTH u p": "HELLO 3 SETNAME a\x01b AUTH u p",
		"HELLO 3 SETNAME ab AUTH u p":     "HELLO 3 SETNAME ab AUTH (redacted) (redacted)",
		// MIGRATE's credentials, as migrateCommand redacts them while it
		// parses: not past an option it refuses, nor after KEYS
		"MIGRATE h 1 k 0 10 AUTH pw BOGUS":             "MIGRATE h 1 k 0 10 AUTH (redacted) BOGUS",
		"migrate h 1 k 0 10 copy auth2 u pw keys x":    "migrate h 1 k 0 10 copy auth2 (redacted) (redacted) keys x",
		"MIGRATE h 1 k 0 10 REPLACE AUTH pw AUTH2 u p": "MIGRATE h 1 k 0 10 REPLACE AUTH (redacted) AUTH2 (redacted) (redacted)",
		"MIGRATE h 1 k 0 10 BOGUS AUTH pw":             "MIGRATE h 1 k 0 10 BOGUS AUTH pw",
		"MIGRATE h 1 k 0 10 AUTH2 u":                   "MIGRATE h 1 k 0 10 AUTH2 u",
		// ACL SETUSER's user and rules; AUTH and HELLO only once Redis
		// has accepted the form (an error before redacting shows all)
		"ACL SETUSER u on >pw ~*":         "ACL SETUSER (redacted) (redacted) (redacted) (redacted)",
		"acl setuser u":                   "acl setuser (redacted)",
		"ACL GETUSER u":                   "ACL GETUSER u",
		"AUTH u p x":                      "AUTH u p x",
		"HELLO 4 AUTH u p":                "HELLO 4 AUTH u p",
		"HELLO x AUTH u p":                "HELLO x AUTH u p",
		"HELLO 3 BOGUS AUTH u p":          "HELLO 3 BOGUS AUTH u p",
		"HELLO 2 SETNAME n AUTH u p":      "HELLO 2 SETNAME n AUTH (redacted) (redacted)",
		"MIGRATE h 1 k 0 10 KEYS AUTH pw": "MIGRATE h 1 k 0 10 KEYS AUTH pw",
	} {
		var args [][]byte
		for _, w := range strings.Fields(in) {
			args = append(args, []byte(w))
		}
		if got := strings.Join(slowlogArgs(args, args[0]), " "); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestSlowlog_ErrorsAndHelp(t *testing.T) {
	te := newTestEngine(t)
	te.expect("-ERR count should be greater than or equal to -1", "SLOWLOG", "GET", "-2")
	te.expect("-ERR count should be greater than or equal to -1", "SLOWLOG", "GET", "x")
	te.expect("-ERR wrong number of arguments for 'slowlog|len' command", "SLOWLOG", "LEN", "1")
	te.expect("-ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.", "SLOWLOG", "get", "1", "2")
	te.expect("-ERR unknown subcommand 'foo'. Try SLOWLOG HELP.", "SLOWLOG", "foo")
	if got := te.do("SLOWLOG", "HELP"); !strings.HasPrefix(got, "*12 +SLOWLOG <subcommand>") {
		t.Errorf("HELP = %q", got)
	}
	te.expect("%2 $slowlog-log-slower-than $10000 $slowlog-max-len $128", "CONFIG", "GET", "slowlog*")
}

func TestScriptLatency_HistogramCountsEvalRuns(t *testing.T) {
	te := newTestEngine(t)
	st := te.Lookup([]byte("eval"))
	st.stats.script = true
	te.obs.scriptHist.observe(3 * time.Millisecond)
	n, sum, b := te.ScriptLatency()
	if n != 1 || sum < 0.003 || b[0.0025] != 0 || b[0.005] != 1 || b[10] != 1 {
		t.Errorf("n=%d sum=%v buckets=%v", n, sum, b)
	}
}

// The integer bucket search files every duration where the float search of
// ScriptBuckets does: on each bound, and a nanosecond either side.
func TestScriptLatency_BucketsMatchTheFloatBounds(t *testing.T) {
	for _, b := range ScriptBuckets {
		ns := int64(math.Round(b * 1e9))
		for _, d := range []time.Duration{time.Duration(ns - 1), time.Duration(ns), time.Duration(ns + 1)} {
			var h histogram
			h.observe(d)
			want := sort.SearchFloat64s(ScriptBuckets, d.Seconds())
			for i := range h.counts {
				if got := h.counts[i].Load(); (i == want) != (got == 1) {
					t.Fatalf("observe(%d ns): bucket %d counted %d, want the run in bucket %d", int64(d), i, got, want)
				}
			}
		}
	}
	var h histogram
	h.observe(time.Minute)
	if h.counts[len(ScriptBuckets)].Load() != 1 {
		t.Error("a minute is not in the +Inf bucket")
	}
}
