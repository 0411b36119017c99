package engine

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// Persistence and replication commands are refused with the reason, not
// as unknown commands: redis-cli --rdb, backup jobs and failover scripts
// print what tumbler lacks.
func TestAdmin_PersistenceAndReplicationRefused(t *testing.T) {
	e := newTestEngine(t)
	for _, args := range [][]string{{"SAVE"}, {"BGSAVE"}, {"bgsave", "SCHEDULE"}, {"BGREWRITEAOF"}} {
		e.expect("-"+ErrNoPersistence(strings.ToUpper(args[0])), args...)
	}
	for _, args := range [][]string{{"SYNC"}, {"PSYNC", "?", "-1"}} {
		e.expect("-"+ErrNoPersistenceOrReplication(strings.ToUpper(args[0])), args...)
	}
	for _, args := range [][]string{{"REPLCONF", "capa", "eof"}, {"FAILOVER"}} {
		e.expect("-"+ErrNoReplication(strings.ToUpper(args[0])), args...)
	}
	e.expect("-ERR SAVE is not supported: tumbler has no persistence (a restart starts empty)", "save")
	e.expect("-ERR REPLICAOF is not supported: tumbler does not replicate", "REPLICAOF", "10.0.0.1", "6379")
	e.expect("-ERR SLAVEOF is not supported: tumbler does not replicate", "slaveof", "10.0.0.1", "6379")
	e.expect("+OK", "REPLICAOF", "no", "one")
	// arity is checked first, as in Redis
	e.expect("-"+ErrWrongArgs("save"), "SAVE", "x")
	e.expect("-"+ErrWrongArgs("psync"), "PSYNC", "?")
}

// LASTSAVE agrees with INFO persistence's rdb_last_save_time.
func TestAdmin_LastSaveIsInfoLastSaveTime(t *testing.T) {
	e := newTestEngine(t)
	info := e.infoString(map[string]bool{"persistence": true})
	_, after, ok := strings.Cut(info, "rdb_last_save_time:")
	if !ok {
		t.Fatalf("no rdb_last_save_time in %q", info)
	}
	e.expect(":"+strings.TrimSpace(strings.SplitN(after, "\r\n", 2)[0]), "LASTSAVE")
}

// MEMORY USAGE grows with the value, counts every element with SAMPLES 0,
// and is a null for a missing key.
func TestAdmin_MemoryUsage(t *testing.T) {
	e := newTestEngine(t)
	usage := func(args ...string) int {
		t.Helper()
		got := e.do(append([]string{"MEMORY", "USAGE"}, args...)...)
		n, err := strconv.Atoi(strings.TrimPrefix(got, ":"))
		if err != nil {
			t.Fatalf("MEMORY USAGE %q: %q", args, got)
		}
		return n
	}
	e.expect("(nil)", "MEMORY", "USAGE", "nosuch")
	e.do("SET", "small", "v")
	e.do("SET", "big", strings.Repeat("x", 1000))
	if s, b := usage("small"), usage("big"); s <= 0 || b < s+900 {
		t.Errorf("MEMORY USAGE: small %d, big %d", s, b)
	}
	e.do("SET", "ttl", "v", "PX", "10000")
	if usage("ttl") <= usage("small") {
		t.Errorf("a key with a deadline costs its index item too")
	}
	// a list whose first elements are short and the last long: sampling 5
	// underestimates, SAMPLES 0 walks all
	for i := 0; i < 10; i++ {
		e.do("RPUSH", "l", "a")
	}
	e.do("RPUSH", "l", strings.Repeat("y", 10000))
	if sampled, all := usage("l"), usage("l", "SAMPLES", "0"); all < sampled+10000/2 || all < 10000 {
		t.Errorf("MEMORY USAGE l: sampled %d, all %d", sampled, all)
	}
	for _, kind := range [][]string{{"HSET", "h", "f", "v"}, {"SADD", "s", "m"}, {"ZADD", "z", "1", "m"}} {
		e.do(kind...)
		if n := usage(kind[1]); n <= usage("small") {
			t.Errorf("MEMORY USAGE %s: %d", kind[1], n)
		}
	}
}

// INFO's sections come in Redis's order, latencystats among them.
func TestAdmin_InfoSectionOrder(t *testing.T) {
	e := newTestEngine(t)
	e.do("SET", "k", "v")
	got := e.do("INFO", "everything")
	var titles []string
	for _, line := range strings.Split(got, "\r\n") {
		if _, title, ok := strings.Cut(line, "# "); ok {
			titles = append(titles, title)
		}
	}
	want := "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace"
	if strings.Join(titles, " ") != want {
		t.Errorf("INFO everything sections:\n got %v\nwant %v", titles, want)
	}
}

// infoField returns one field of INFO's text, "" when absent.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// Each engine is a server of its own: its own run_id (Redis's is random
// per process), and Reborn (a fixture's Restart) gives it a new one and
// starts its uptime and LASTSAVE again.
func TestRunIDAndUptime_PerEngineAndReborn(t *testing.T) {
	a, b := newTestEngine(t), newTestEngine(t)
	ida := infoField(a.do("INFO", "server"), "run_id")
	if len(ida) != 40 || strings.Trim(ida, "0123456789abcdef") != "" {
		t.Fatalf("run_id = %q, want 40 hex digits", ida)
	}
	if idb := infoField(b.do("INFO", "server"), "run_id"); idb == ida {
		t.Fatalf("two engines share run_id %q", ida)
	}
	// master_replid is an id of its own (Redis's changeReplicationId at
	// start), not the run_id
	if got := infoField(a.do("INFO", "replication"), "master_replid"); len(got) != 40 || got == ida {
		t.Errorf("master_replid = %q (run_id %q), want 40 hex digits of its own", got, ida)
	}

	// As if started 100 s ago.
	old := a.clock.Wall().Add(-100 * time.Second)
	a.birth.Store(&birth{start: old, mono: a.Now() - 100_000, runID: ida})
	if got := infoField(a.do("INFO", "server"), "uptime_in_seconds"); got != "100" && got != "101" {
		t.Fatalf("uptime_in_seconds = %q, want 100", got)
	}
	if got, want := a.do("LASTSAVE"), fmt.Sprintf(":%d", old.Unix()); got != want {
		t.Errorf("LASTSAVE = %q, want %q", got, want)
	}
	a.Reborn()
	info := a.do("INFO", "server")
	if got := infoField(info, "uptime_in_seconds"); got != "0" {
		t.Errorf("uptime_in_seconds after Reborn = %q, want 0", got)
	}
	if got := infoField(info, "run_id"); got == ida || len(got) != 40 {
		t.Errorf("run_id after Reborn = %q (was %q): want a new one", got, ida)
	}
	if got := a.do("LASTSAVE"); got == fmt.Sprintf(":%d", old.Unix()) {
		t.Errorf("LASTSAVE after Reborn = %q: still the old start", got)
	}
}

// INFO's tumbler_version is tumbler's own build version, not the Redis
// version it reports as redis_version.
func TestInfo_TumblerVersionIsTheBuild(t *testing.T) {
	e := newTestEngine(t)
	info := e.do("INFO", "server")
	if got := infoField(info, "tumbler_version"); got == "" || got != BuildVersion() || got == infoField(info, "redis_version") {
		t.Errorf("tumbler_version %q, build %q, redis_version %q", got, BuildVersion(), infoField(info, "redis_version"))
	}
}

// MEMORY STATS has Redis 7.0's fields in its order (compat/diff compares
// them with redis-server's), each database with keys its tables'
// overhead as Redis estimates it, and figures that add up as Redis's:
// overhead.total counts those tables, and total = overhead + dataset.
func TestAdmin_MemoryStatsHasRedisFields(t *testing.T) {
	e := newTestEngine(t)
	for i := range 5 {
		e.do("SET", "k"+strconv.Itoa(i), "v")
	}
	e.do("SET", "lock", "tok", "PX", "100000")
	cl := &Client{}
	e.Exec(&Ctx{Args: [][]byte{[]byte("SELECT"), []byte("3")}, W: &enginetest.TextWriter{}, Client: cl})
	e.Exec(&Ctx{Args: [][]byte{[]byte("SET"), []byte("x"), []byte("1")}, W: &enginetest.TextWriter{}, Client: cl})
	tokens := strings.Fields(e.do("MEMORY", "STATS"))
	if tokens[0] != "%29" { // 27 fields and 2 databases
		t.Fatalf("MEMORY STATS is %s, want a map of 29: %q", tokens[0], tokens)
	}
	var names []string
	vals := map[string]string{}
	prefix := ""
	for i := 1; i+1 < len(tokens); i += 2 {
		name, v := strings.TrimPrefix(tokens[i], "$"), tokens[i+1]
		if v == "%3" { // a database's map
			prefix = name + "/"
			names = append(names, name)
			continue // its fields follow
		}
		if !strings.HasPrefix(name, "overhead.hashtable.") {
			prefix = ""
		}
		names = append(names, prefix+name)
		vals[prefix+name] = v
	}
	want := []string{"peak.allocated", "total.allocated", "startup.allocated", "replication.backlog", "clients.slaves",
		"clients.normal", "cluster.links", "aof.buffer", "lua.caches", "functions.caches",
		"db.0", "db.0/overhead.hashtable.main", "db.0/overhead.hashtable.expires", "db.0/overhead.hashtable.slot-to-keys",
		"db.3", "db.3/overhead.hashtable.main", "db.3/overhead.hashtable.expires", "db.3/overhead.hashtable.slot-to-keys",
		"overhead.total", "keys.count", "keys.bytes-per-key", "dataset.bytes", "dataset.percentage", "peak.percentage",
		"allocator.allocated", "allocator.active", "allocator.resident", "allocator-fragmentation.ratio",
		"allocator-fragmentation.bytes", "allocator-rss.ratio", "allocator-rss.bytes", "rss-overhead.ratio",
		"rss-overhead.bytes", "fragmentation", "fragmentation.bytes"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("fields\n%q\nwant\n%q", names, want)
	}
	n := func(k string) int64 {
		v, err := strconv.ParseInt(strings.TrimPrefix(vals[k], ":"), 10, 64)
		if err != nil || !strings.HasPrefix(vals[k], ":") {
			t.Fatalf("%s = %q, not an integer", k, vals[k])
		}
		return v
	}
	// Redis's dict sizes: 6 keys in 8 slots (an entry and an object header
	// a key, a pointer a slot), 1 deadline in 4; 1 key in 4.
	for k, v := range map[string]int64{"db.0/overhead.hashtable.main": 6*40 + 8*8, "db.0/overhead.hashtable.expires": 24 + 4*8,
		"db.3/overhead.hashtable.main": 40 + 4*8, "db.3/overhead.hashtable.expires": 0, "keys.count": 7} {
		if got := n(k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
	if total, over, data := n("total.allocated"), n("overhead.total"), n("dataset.bytes"); total != over+data || over < n("startup.allocated") {
		t.Errorf("total %d, overhead %d, dataset %d, startup %d", total, over, data, n("startup.allocated"))
	}
	for _, k := range []string{"dataset.percentage", "peak.percentage", "fragmentation", "rss-overhead.ratio"} {
		if !strings.HasPrefix(vals[k], ",") {
			t.Errorf("%s = %q, not a double", k, vals[k])
		}
	}
}

// MEMORY DOCTOR calls an instance empty, as Redis, while it has grown by
// under 5 MB, counted from its start-up heap (a Go process starts with
// more than Redis's whole threshold).
func TestAdmin_MemoryDoctorCountsFromStartup(t *testing.T) {
	e := newTestEngine(t)
	startup := make([]byte, 6<<20) // a start-up heap past Redis's 5 MB, as a Go process has
	for i := range startup {
		startup[i] = byte(i)
	}
	defer runtime.KeepAlive(startup)
	runtime.GC() // no garbage of earlier tests in the start-up heap, for a collection to take away
	e.obs.startMem = heapObjects()
	if got := e.do("MEMORY", "DOCTOR"); !strings.Contains(got, "this instance is empty") {
		t.Fatalf("a fresh engine: %q", got)
	}
	e.do("SET", "big", strings.Repeat("x", 8<<20))
	if got := e.do("MEMORY", "DOCTOR"); !strings.Contains(got, "I can't find any memory issue") {
		t.Fatalf("with 8 MB of data: %q", got)
	}
}

// MEMORY STATS counts keys under the keyspace lock (it read the table and
// the expiry index unlocked while other clients wrote: a data race, seen
// by -race), every database's, as Redis's keys.count.
func TestAdmin_MemoryStatsCountsUnderTheLock(t *testing.T) {
	e := newTestEngine(t)
	e.do("SET", "a", "1")
	e.do("SET", "b", "1", "PX", "100000")
	c := &Ctx{Args: [][]byte{[]byte("SET"), []byte("c"), []byte("1")}, W: &enginetest.TextWriter{}, Client: &Client{}}
	e.Exec(&Ctx{Args: [][]byte{[]byte("SELECT"), []byte("1")}, W: &enginetest.TextWriter{}, Client: c.Client})
	e.Exec(c) // in database 1
	stats := e.do("MEMORY", "STATS")
	for _, want := range []string{"keys.count :3", "db.0 %3 $overhead.hashtable.main :112 $overhead.hashtable.expires :56", "db.1 %3"} {
		if !strings.Contains(stats, want) {
			t.Fatalf("MEMORY STATS %q: no %q", stats, want)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			e.do("SET", "k"+strconv.Itoa(i%50), "v", "PX", strconv.Itoa(1000+i))
			e.do("DEL", "k"+strconv.Itoa((i+25)%50))
		}
	}()
	for range 200 {
		e.do("MEMORY", "STATS")
	}
	<-done
}
