package server

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientNames returns the names CLIENT LIST shows.
func clientNames(t *testing.T, c *rawClient) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(c.do("CLIENT", "LIST"), "\n") {
		if _, rest, ok := strings.Cut(line, " name="); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	return names
}

// hasClient reports whether CLIENT LIST shows a client named name.
func hasClient(t *testing.T, c *rawClient, name string) bool {
	t.Helper()
	for _, n := range clientNames(t, c) {
		if n == name {
			return true
		}
	}
	return false
}

// evictionServer starts a server with maxmemory-clients set to limit, and
// a control connection that is never evicted.
func evictionServer(t *testing.T, limit string) (*Server, *rawClient) {
	srv := RunT(t)
	ctl := dial(t, srv.Addr())
	ctl.expectDo("+OK\r\n", "CLIENT", "SETNAME", "control")
	ctl.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", limit)
	return srv, ctl
}

// named dials a connection named name.
func named(t *testing.T, srv *Server, name string) *rawClient {
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "CLIENT", "SETNAME", name)
	return c
}

// expectEvicted checks that the server closed c without a reply and that
// CLIENT LIST no longer shows it.
func expectEvicted(t *testing.T, ctl, c *rawClient, name string) {
	t.Helper()
	c.expectClosed()
	if hasClient(t, ctl, name) {
		t.Fatalf("%s evicted and still listed", name)
	}
}

// A command whose arguments take the clients past the limit is not run:
// its client is evicted first (processCommand's evictClients).
func TestClientEviction_LargeArgv(t *testing.T) {
	srv, ctl := evictionServer(t, "300000")
	v := named(t, srv, "v")
	// its arguments lie in its read buffer: counted once, the command fits
	v.expectDo("+OK\r\n", "SET", "small", strings.Repeat("x", 200_000))
	v.send(encode("SET", "big", strings.Repeat("x", 400_000)))
	expectEvicted(t, ctl, v, "v")
	ctl.expectDo(":0\r\n", "EXISTS", "big")
	ctl.expectDo(":1\r\n", "EXISTS", "small")
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s", got)
	}
	ctl.expectDo("+OK\r\n", "CONFIG", "RESETSTAT")
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "0" {
		t.Fatalf("after RESETSTAT evicted_clients:%s", got)
	}
}

// A request that is still arriving counts as it grows.
func TestClientEviction_LargeQueryBuffer(t *testing.T) {
	srv, ctl := evictionServer(t, "300000")
	v := named(t, srv, "v")
	v.send("*2\r\n$3\r\nGET\r\n$400000\r\n" + strings.Repeat("x", 350_000))
	expectEvicted(t, ctl, v, "v")
}

// A client that announces an argument larger than the limit is evicted
// once its first bytes are read, as in Redis, which sizes its query buffer
// for a large argument (32 KB or more) as soon as it reads its header;
// not once most of it has come.
func TestClientEviction_LargeArgumentAnnounced(t *testing.T) {
	srv, ctl := evictionServer(t, "300000")
	v := named(t, srv, "v")
	v.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000\r\n" + strings.Repeat("x", 20_000))
	expectEvicted(t, ctl, v, "v")
	w := named(t, srv, "w") // and under the limit, kept
	w.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200000\r\n" + strings.Repeat("x", 20_000))
	eventually(t, "w's partial request read", func() bool {
		for _, line := range strings.Split(ctl.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " name=w ") {
				return strings.Contains(line, " qbuf=20000 ")
			}
		}
		t.Fatal("w evicted under the limit")
		return false
	})
	w.send(strings.Repeat("x", 180_000) + "\r\n")
	w.expect("+OK\r\n")

	// Only once the commands before it have run, as Redis parses the
	// header only then: a SET pipelined ahead of it runs and is answered
	// before the client goes (at the argument's next bytes: an event loop
	// parses what is left of its input at its next read),
	const partial = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000\r\nxxxx"
	p := named(t, srv, "p")
	p.send(encode("SET", "a", "1") + partial)
	p.expect("+OK\r\n")
	p.send(strings.Repeat("x", 1000))
	expectEvicted(t, ctl, p, "p")
	ctl.expectDo("$1\r\n1\r\n", "GET", "a")
	// and a client blocked ahead of it is kept while it waits (Redis does
	// not parse past a blocked command), then goes once it is served.
	b := named(t, srv, "b")
	b.send(encode("BLPOP", "q", "0") + partial)
	eventually(t, "b blocked", func() bool { return srv.Engine().BlockedClients() == 1 })
	srv.evictionTick()
	if !hasClient(t, ctl, "b") {
		t.Fatal("a blocked client evicted for an argument after its BLPOP")
	}
	ctl.expectDo(":1\r\n", "RPUSH", "q", "e")
	b.expect("*2\r\n$1\r\nq\r\n$1\r\ne\r\n")
	b.send(strings.Repeat("x", 1000))
	expectEvicted(t, ctl, b, "b")
}

// Queued commands, watched keys and subscriptions count too. (The tick
// is paused: each client measures itself once its replies are written,
// and goes then; a tick during a slow write of 6000 confirmations, as on
// a loaded machine, would evict with some unwritten, as Redis would.)
func TestClientEviction_MultiWatchSubscriptions(t *testing.T) {
	srv, ctl := pausedServer(t, nil)
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "300000")
	m := named(t, srv, "multi")
	m.expectDo("+OK\r\n", "MULTI")
	for i := 0; i < 2; i++ {
		m.expectDo("+QUEUED\r\n", "SET", "k", strings.Repeat("v", 50_000))
	}
	// the queue alone passes the limit at the sixth
	for i := 2; hasClient(t, ctl, "multi"); i++ {
		if i == 6 {
			t.Fatal("six 50 KB commands queued and not evicted")
		}
		m.send(encode("SET", "k", strings.Repeat("v", 50_000)))
		if _, err := m.rd.ReadString('\n'); err != nil {
			break
		}
	}
	expectEvicted(t, ctl, m, "multi")

	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "0") // 128 KB, the least
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "1")
	w := named(t, srv, "watch")
	keys := []string{"WATCH"}
	for i := 0; i < 3000; i++ { // 56 bytes each, as Redis counts them
		keys = append(keys, "key:"+strconv.Itoa(i))
	}
	// evicted once its reply is written, as Redis evicts after writing
	w.expectDo("+OK\r\n", keys...)
	expectEvicted(t, ctl, w, "watch")

	p := named(t, srv, "psub")
	pats := []string{"PSUBSCRIBE"}
	for i := 0; i < 6000; i++ { // 24 bytes each
		pats = append(pats, "p:"+strconv.Itoa(i))
	}
	p.send(encode(pats...))
	for i := range 6000 {
		p.expect(confirmation(2, "psubscribe", "p:"+strconv.Itoa(i), i+1))
	}
	expectEvicted(t, ctl, p, "psub")
}

// CLIENT NO-EVICT keeps a client, whose memory still counts; without it,
// the same client goes.
func TestClientEviction_NoEvict(t *testing.T) {
	srv, ctl := evictionServer(t, "300000")
	keep := named(t, srv, "keep")
	keep.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	keep.send("*2\r\n$3\r\nGET\r\n$400000\r\n" + strings.Repeat("x", 350_000))
	eventually(t, "the partial request read", func() bool {
		for _, line := range strings.Split(ctl.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " name=keep ") && strings.Contains(line, " qbuf=350000 ") {
				return true
			}
		}
		return false
	})
	// Over the limit with it once the tick has measured it (a NO-EVICT
	// client measures nothing itself, as in Redis): any other client is
	// then evicted at its next command, whatever its size.
	eventually(t, "a small client evicted", func() bool {
		nc, err := dialErr(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte(encode("PING"))); err != nil {
			return true
		}
		b := make([]byte, 7)
		n, _ := nc.Read(b)
		return n == 0
	})
	if !hasClient(t, ctl, "keep") {
		t.Fatal("the NO-EVICT client was evicted")
	}
	keep.send(strings.Repeat("x", 50_000) + "\r\n")
	keep.expect("$-1\r\n")
}

// A lower limit evicts at once, the largest clients first (by Redis's
// power-of-two buckets), and only until the rest fit.
func TestClientEviction_LargestFirstUntilBelow(t *testing.T) {
	srv, ctl := evictionServer(t, "0")
	sizes := map[string]int{"a1": 40_000, "a2": 40_000, "b1": 150_000, "b2": 150_000, "c": 600_000}
	conns := map[string]*rawClient{}
	for name, n := range sizes {
		c := named(t, srv, name)
		c.send("*2\r\n$3\r\nGET\r\n$" + strconv.Itoa(n+10) + "\r\n" + strings.Repeat("x", n))
		conns[name] = c
	}
	totMem := func() map[string]int {
		m := map[string]int{}
		for _, line := range strings.Split(ctl.do("CLIENT", "LIST"), "\n") {
			_, rest, _ := strings.Cut(line, " name=")
			name, _, _ := strings.Cut(rest, " ")
			_, rest, _ = strings.Cut(line, " tot-mem=")
			v, _, _ := strings.Cut(rest, " ")
			m[name], _ = strconv.Atoi(v)
		}
		return m
	}
	var mem map[string]int
	eventually(t, "every partial request read, and the measures settled", func() bool {
		prev := mem
		mem = totMem()
		for name, n := range sizes {
			if mem[name] < n || mem[name] != prev[name] {
				return false
			}
		}
		return true
	})
	// room for everyone but c: c goes, alone (each client's own measure:
	// two of a size need not take the same, their buffers grown apart)
	limit := mem["control"] + mem["a1"] + mem["a2"] + mem["b1"] + mem["b2"] + 1000
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", strconv.Itoa(limit))
	expectEvicted(t, ctl, conns["c"], "c")
	if got := len(clientNames(t, ctl)); got != 5 {
		t.Fatalf("%d clients left, want 5: %v", got, clientNames(t, ctl))
	}
	// room for one of the b's: the one that entered its bucket first goes
	limit -= min(mem["b1"], mem["b2"])
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", strconv.Itoa(limit))
	names := strings.Join(clientNames(t, ctl), " ")
	if strings.Count(names, "b") != 1 || !strings.Contains(names, "a1") || !strings.Contains(names, "a2") {
		t.Fatalf("left: %s", names)
	}
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "2" {
		t.Fatalf("evicted_clients:%s", got)
	}
}

// A subscriber that does not read its messages is evicted when its
// pending output takes the clients past the limit; the publisher stays.
func TestClientEviction_PendingPushes(t *testing.T) {
	srv, ctl := evictionServer(t, "1mb")
	if !publishToSlowSubscriber(t, srv, ctl, 64<<10) {
		t.Fatal("the publisher was evicted")
	}
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s", got)
	}
}

// Without a limit nothing is evicted, and tot-mem still counts what Redis
// counts.
func TestClientEviction_Off(t *testing.T) {
	srv := RunT(t)
	ctl := named(t, srv, "control")
	v := named(t, srv, "v")
	v.expectDo("+OK\r\n", "SET", "big", strings.Repeat("x", 2<<20))
	w := named(t, srv, "w")
	w.expectDo("+OK\r\n", "WATCH", "a", "b", "c")
	w.expectDo(confirmation(2, "psubscribe", "p*", 1), "PSUBSCRIBE", "p*")
	// (the confirmation counts as output until its flusher, which may
	// still be returning from the write that sent it, says it is written)
	want := " tot-mem=" + strconv.Itoa(4096+3*memWatchedKey+memPattern) + " "
	eventually(t, "tot-mem of 3 watched keys and a pattern", func() bool {
		for _, line := range strings.Split(ctl.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " name=w ") {
				return strings.Contains(line, want)
			}
		}
		return false
	})
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "0" {
		t.Fatalf("evicted_clients:%s", got)
	}
}

func TestEvictionLimit(t *testing.T) {
	for _, tc := range []struct {
		v         string
		maxmemory uint64
		want      int64
	}{
		{"0", 0, 0},
		{"1", 0, 128 << 10},
		{"300000", 0, 300000},
		{"10%", 0, 0},
		{"10%", 10 << 20, 1 << 20},
		{"1%", 1 << 20, 128 << 10},
	} {
		c := &Config{MaxMemory: tc.maxmemory}
		c.setParam("maxmemory-clients", tc.v)
		if got := evictionLimit(c); got != tc.want {
			t.Errorf("maxmemory-clients %s, maxmemory %d: %d, want %d", tc.v, tc.maxmemory, got, tc.want)
		}
	}
	for mem, want := range map[int64]int32{0: 0, 32767: 0, 32768: 1, 65535: 1, 65536: 2, 1 << 40: 18} {
		if got := memBucket(mem); got != want {
			t.Errorf("memBucket(%d) = %d, want %d", mem, got, want)
		}
	}
	for n, want := range map[int]int64{0: 0, 1: 24 + 32, 3: 3*24 + 32, 5: 5*24 + 64} {
		if got := channelsMem(n); got != want {
			t.Errorf("channelsMem(%d) = %d, want %d", n, got, want)
		}
	}
}

// DEBUG PAUSE-CRON stops the 100 ms tick: INFO's rates stay as they were.
func TestDebug_PauseCron(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "yes" }))
	c := dial(t, srv.Addr())
	c.expectDo("+OK\r\n", "DEBUG", "PAUSE-CRON", "1")
	ops := func() string { return infoField(t, c, "stats", "instantaneous_ops_per_sec") }
	time.Sleep(250 * time.Millisecond) // a tick begun before the pause has ended
	before := ops()
	for i := 0; i < 20; i++ {
		for j := 0; j < 100; j++ {
			c.do("PING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := ops(); got != before {
		t.Fatalf("instantaneous_ops_per_sec moved from %s to %s with the cron paused", before, got)
	}
	c.expectDo("+OK\r\n", "DEBUG", "PAUSE-CRON", "0")
	eventually(t, "the rate sampled again", func() bool {
		c.do("PING")
		return ops() != before
	})
}

// Under concurrent traffic and evictions the sum stays the sum of what
// the connections were measured at: once every client but the control
// is gone, it is the control's alone.
func TestClientEviction_SumConsistent(t *testing.T) {
	srv, ctl := evictionServer(t, "400000")
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			for j := 0; j < 20; j++ {
				var req string
				switch rng.Intn(4) {
				case 0:
					req = encode("SET", "k"+strconv.Itoa(i), strings.Repeat("x", rng.Intn(300_000)))
				case 1:
					req = "*2\r\n$3\r\nGET\r\n$500000\r\n" + strings.Repeat("x", rng.Intn(450_000))
				case 2:
					req = encode("MULTI") + encode("SET", "m", strings.Repeat("y", rng.Intn(200_000))) + encode("WATCH", "a")
				default:
					req = encode("PSUBSCRIBE", "p1", "p2") + encode("PING")
				}
				if !sendAndClose(srv.Addr(), req, 20*time.Millisecond) {
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if infoField(t, ctl, "stats", "evicted_clients") == "0" {
		t.Fatal("no client was evicted")
	}
	eventually(t, "only the control left", func() bool { return len(clientNames(t, ctl)) == 1 })
	eventually(t, "the sum down to the control's", func() bool {
		srv.evictionTick()
		var ctlMem int64
		srv.clients.Range(func(k, _ any) bool {
			ctlMem += k.(*client).mem.acc.Load() + k.(*client).mem.kept.Load()
			return true
		})
		return srv.evict.sum.Load() == ctlMem
	})
}

// INFO's mem_clients_normal is what the connections use (their tot-mem),
// counted in used_memory_overhead, as Redis counts it; with a limit set,
// the sum eviction keeps.
func TestClientsMemory_Info(t *testing.T) {
	srv := RunT(t)
	c := named(t, srv, "c")
	mem := func() int64 {
		n, err := strconv.ParseInt(infoField(t, c, "memory", "mem_clients_normal"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := mem()
	if before < 4096 {
		t.Fatalf("mem_clients_normal:%d with one connection", before)
	}
	big := named(t, srv, "big")
	big.send("*2\r\n$3\r\nGET\r\n$2000000\r\n" + strings.Repeat("x", 1_000_000))
	eventually(t, "the partial request counted", func() bool { return mem() >= before+1_000_000 })
	if o, _ := strconv.ParseInt(infoField(t, c, "memory", "used_memory_overhead"), 10, 64); o < mem() {
		t.Errorf("used_memory_overhead %d below mem_clients_normal %d", o, mem())
	}
	c.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "100mb")
	// (the asking connection's own measure moves with each command)
	if got, want := mem(), srv.evict.sum.Load(); got < 1_000_000 || got < want-64<<10 || got > want+64<<10 {
		t.Errorf("with a limit: mem_clients_normal:%d, the sum %d", got, want)
	}
}

// DEBUG CLIENT-EVICTION reports Redis's buckets: the evictable clients in
// each and their measured memory, in Redis's format.
func TestDebug_ClientEviction(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "yes" }))
	ctl := named(t, srv, "control")
	ctl.expectDo("-ERR maxmemory-clients is disabled.\r\n", "DEBUG", "CLIENT-EVICTION")
	ctl.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "100mb")
	big := named(t, srv, "big")
	big.send("*2\r\n$3\r\nGET\r\n$2000000\r\n" + strings.Repeat("x", 1_500_000))
	var lines []string
	eventually(t, "the large client in its bucket", func() bool {
		r := ctl.do("DEBUG", "CLIENT-EVICTION")
		_, body, _ := strings.Cut(r, "\r\n") // a bulk string in RESP2
		lines = strings.Split(strings.TrimSuffix(strings.TrimSuffix(body, "\r\n"), "\n"), "\n")
		return len(lines) == 19 && strings.HasSuffix(lines[6], "clients: 1")
	})
	if want := "bucket          0 -      32767: tot-mem:          0, clients: 0"; lines[0] != want {
		t.Errorf("first line %q, want %q (the control is NO-EVICT)", lines[0], want)
	}
	var mem, n int
	if _, err := fmt.Sscanf(lines[6], "bucket    1048576 -    2097151: tot-mem: %d, clients: %d", &mem, &n); err != nil || mem < 1_500_000 {
		t.Errorf("the large client's bucket: %q (%v)", lines[6], err)
	}
	if want := "bucket 4294967296+            : tot-mem:          0, clients: 0"; lines[18] != want {
		t.Errorf("last line %q, want %q", lines[18], want)
	}
}

// INFO's client_recent_max_input_buffer and _output_buffer show the
// largest buffers a client had in the last seconds, as Redis's
// clientsCron samples them once a second.
func TestInfo_ClientRecentMaxBuffers(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = OutputBufferLimits{PubSub: OutputBufferLimit{}} // no limit
	}))
	c := named(t, srv, "c")
	field := func(name string) int {
		n, err := strconv.Atoi(infoField(t, c, "clients", name))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	big := named(t, srv, "big")
	big.send("*2\r\n$3\r\nGET\r\n$2000000\r\n" + strings.Repeat("x", 1_000_000))
	eventually(t, "the large input sampled", func() bool { return field("client_recent_max_input_buffer") >= 1_000_000 })
	slow := dialSlow(t, srv.Addr())
	slow.expectDo("+OK\r\n", "CLIENT", "SETNAME", "slow")
	slow.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	publishUntilBacklog(t, c, 1<<20)
	eventually(t, "the large output sampled", func() bool { return field("client_recent_max_output_buffer") >= 1<<20 })
}

// A peak is forgotten after 8 seconds, as Redis's slots are.
func TestClientPeaks_ForgetAfterEightSeconds(t *testing.T) {
	var s Server
	var p clientPeaks
	p.track(&s, time.Unix(100, 0))
	p.in[100%8], p.out[100%8] = 5000, 7000
	for sec := int64(101); sec < 107; sec++ {
		p.track(&s, time.Unix(sec, 0))
		if in, out := p.max(); in != 5000 || out != 7000 {
			t.Fatalf("at +%ds: %d, %d", sec-100, in, out)
		}
	}
	p.track(&s, time.Unix(107, 0))
	if in, out := p.max(); in != 0 || out != 0 {
		t.Fatalf("8 seconds on: %d, %d", in, out)
	}
}

// A reply counts while it is unwritten only: once written, the client is
// measured again (Redis's writeToClient), so an idle client that was
// sent a large reply is not evicted for it.
func TestClientEviction_WrittenReplyLeavesTheSum(t *testing.T) {
	srv, ctl := pausedServer(t, nil) // no tick to measure again
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "1000000")
	ctl.expectDo("+OK\r\n", "SET", "big", strings.Repeat("x", 700_000))
	a := named(t, srv, "a")
	if r := a.do("GET", "big"); len(r) < 700_000 {
		t.Fatalf("GET: %d bytes", len(r))
	}
	b := named(t, srv, "b")
	b.expectDo("+OK\r\n", "SET", "k", strings.Repeat("y", 400_000))
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "0" {
		t.Fatalf("evicted_clients:%s: a holds no reply any more", got)
	}
	a.expectDo("+PONG\r\n", "PING")
}

// When the NO-EVICT clients no longer hold the limit, a pass evicts the
// largest client again, not the one measuring itself: here the
// subscriber with the backlog, not its publisher.
func TestClientEviction_LargestAfterNoEvictLeaves(t *testing.T) {
	srv, ctl, hog := hogServer(t, func(c *Config) {
		c.OutputBufferLimits = OutputBufferLimits{PubSub: OutputBufferLimit{}} // no pub/sub limit
	})
	// over 300 KB with nothing to evict
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "300000")
	hog.conn.Close()
	eventually(t, "hog gone", func() bool { return !hasClient(t, ctl, "hog") })

	if !publishToSlowSubscriber(t, srv, ctl, 16<<10) {
		t.Fatalf("the publisher was evicted (the subscriber listed: %v)", hasClient(t, ctl, "slow"))
	}
}

// publishToSlowSubscriber subscribes a client named slow that never
// reads to a channel, and publishes messages of size bytes to it from a
// client named pub until slow is no longer listed or pub is closed. It
// reports whether pub is still listed.
func publishToSlowSubscriber(t *testing.T, srv *Server, ctl *rawClient, size int) bool {
	t.Helper()
	slow := dialSlow(t, srv.Addr())
	slow.expectDo("+OK\r\n", "CLIENT", "SETNAME", "slow")
	slow.expectDo(confirmation(2, "subscribe", "ch", 1), "SUBSCRIBE", "ch")
	pub := named(t, srv, "pub")
	payload := strings.Repeat("x", size)
	for i := 0; hasClient(t, ctl, "slow"); i++ {
		if i > 2000 {
			t.Fatalf("%d MB published and the subscriber is still there", 2000*size>>20)
		}
		pub.send(encode("PUBLISH", "ch", payload))
		pub.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := pub.rd.ReadString('\n'); err != nil {
			break // the publisher was closed
		}
	}
	return hasClient(t, ctl, "pub")
}

// pausedServer starts a server with DEBUG on (and configure's settings,
// if any), the tick paused (nothing measures the clients but
// themselves), and a control connection with CLIENT NO-EVICT.
func pausedServer(t *testing.T, configure func(*Config)) (*Server, *rawClient) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.EnableDebugCommand = "yes"
		if configure != nil {
			configure(c)
		}
	}))
	ctl := named(t, srv, "control")
	ctl.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	ctl.expectDo("+OK\r\n", "DEBUG", "PAUSE-CRON", "1")
	return srv, ctl
}

// hogServer starts a server with DEBUG on (and configure's settings),
// the tick paused, a control connection and a client named hog, both
// with CLIENT NO-EVICT, hog holding a partial request of 350 KB.
func hogServer(t *testing.T, configure func(*Config)) (srv *Server, ctl, hog *rawClient) {
	srv, ctl = pausedServer(t, configure)
	hog = named(t, srv, "hog")
	hog.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	hog.send("*2\r\n$3\r\nGET\r\n$400000\r\n" + strings.Repeat("x", 350_000))
	eventually(t, "hog's partial request read", func() bool {
		return strings.Contains(ctl.do("CLIENT", "LIST"), " qbuf=350000 ")
	})
	return srv, ctl, hog
}

// hookHandler is a slog.Handler that runs hook on each record.
type hookHandler struct{ hook func(r slog.Record) }

func (h hookHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h hookHandler) Handle(_ context.Context, r slog.Record) error { h.hook(r); return nil }
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h hookHandler) WithGroup(string) slog.Handler                 { return h }

// A client that disconnects by itself while a pass runs is not counted
// as evicted (nor logged).
func TestClientEviction_GoneDuringPassNotCounted(t *testing.T) {
	var (
		srv  *Server
		y    *rawClient
		once sync.Once
	)
	listed := func(name string) *client {
		var found *client
		srv.clients.Range(func(k, _ any) bool {
			c := k.(*client)
			c.mu.Lock()
			if c.Name == name {
				found = c
			}
			c.mu.Unlock()
			return found == nil
		})
		return found
	}
	hook := func(r slog.Record) {
		if strings.HasPrefix(r.Message, "Evicting client") && strings.Contains(r.Message, " name=x ") {
			once.Do(func() {
				// y goes while x is evicted: it quits, and is out of the
				// list at once (as its own goroutine would take it out
				// once it reads the end; the hook cannot wait for that,
				// for y may share the event loop running this pass).
				y.conn.Close()
				if yc := listed("y"); yc != nil {
					srv.kill(yc)
				}
			})
		}
	}
	var ctl *rawClient
	srv, ctl, _ = hogServer(t, func(c *Config) { c.Logger = slog.New(hookHandler{hook}) })
	x := named(t, srv, "x")
	x.send("*2\r\n$3\r\nGET\r\n$100000\r\n" + strings.Repeat("x", 40_000)) // bucket 1: first
	y = named(t, srv, "y")
	eventually(t, "the partial request read", func() bool {
		return strings.Contains(ctl.do("CLIENT", "LIST"), " qbuf=40000 ")
	})
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "300000")
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s, want 1: y disconnected by itself", got)
	}
}

// The limit switched on and off, NO-EVICT switched, pushes, CLIENT KILL
// and evictions all at once: no race (CLIENT KILL TYPE reads the
// NO-EVICT flag CLIENT NO-EVICT sets), and the sums end as the totals of
// what each client recorded.
func TestClientEviction_TogglesConsistent(t *testing.T) {
	srv := RunT(t)
	ctl := named(t, srv, "control")
	ctl.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := dial(t, srv.Addr())
		defer c.conn.Close()
		c.do("CLIENT", "NO-EVICT", "on")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.do("CONFIG", "SET", "maxmemory-clients", []string{"0", "200000", "1mb"}[i%3])
			c.do("CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes")
			time.Sleep(3 * time.Millisecond)
		}
	}()
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var req string
				switch rng.Intn(5) {
				case 0:
					req = encode("HELLO", "3") + encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a") + encode("SET", "a1", strings.Repeat("x", rng.Intn(100_000)))
				case 1:
					req = encode("SUBSCRIBE", "ch") + encode("PING")
				case 2:
					req = encode("PUBLISH", "ch", strings.Repeat("p", rng.Intn(100_000)))
				case 3:
					req = encode("CLIENT", "NO-EVICT", "on") + encode("GET", "a1") + encode("CLIENT", "NO-EVICT", "off") +
						"*2\r\n$3\r\nGET\r\n$300000\r\n" + strings.Repeat("x", rng.Intn(250_000))
				default:
					req = encode("MULTI") + encode("SET", "m", strings.Repeat("y", rng.Intn(100_000))) + encode("WATCH", "a")
				}
				if !sendAndClose(srv.Addr(), req, time.Duration(rng.Intn(30))*time.Millisecond) {
					return
				}
			}
		}(i)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "100mb")
	eventually(t, "only the control left", func() bool { return len(clientNames(t, ctl)) == 1 })
	eventually(t, "the sums down to the control's", func() bool {
		srv.evictionTick()
		var acc, kept int64
		srv.clients.Range(func(k, _ any) bool {
			acc += k.(*client).mem.acc.Load()
			kept += k.(*client).mem.kept.Load()
			return true
		})
		return srv.evict.sum.Load() == acc+kept && srv.evict.kept.Load() == kept && acc == 0
	})
}

// sendAndClose dials addr, sends req, reads for up to wait (a partial
// request gets no reply) and closes. It reports false when it could not
// dial.
func sendAndClose(addr, req string, wait time.Duration) bool {
	nc, err := dialErr(addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte(req))
	nc.SetReadDeadline(time.Now().Add(wait))
	nc.Read(make([]byte, 64))
	return true
}

// CONFIG SET's pass runs once its reply is written (Redis evicts in
// beforeSleep, after writing replies): a caller that is itself the
// largest client gets its +OK, then is evicted.
// (The tick is paused: a tick that comes in between is
// TestClientEviction_TickLeavesConfigSetsPassToItsCaller.)
func TestClientEviction_ConfigSetCallerGetsItsReply(t *testing.T) {
	srv, ctl := pausedServer(t, nil)
	big := named(t, srv, "big")
	watchKeys(t, big, 5000) // Redis's estimate: 280 KB
	big.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "200000")
	expectEvicted(t, ctl, big, "big")
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s", got)
	}
}

// The tick that comes between a CONFIG SET that sets a limit and its
// reply leaves the pass to the caller: the caller, over the limit, gets
// its +OK before it is evicted, as in Redis, whose cron only measures (a
// CI run lost the reply to the tick this way).
func TestClientEviction_TickLeavesConfigSetsPassToItsCaller(t *testing.T) {
	srv, ctl := pausedServer(t, nil) // the test runs the tick
	big := named(t, srv, "big")
	watchKeys(t, big, 5000)
	srv.SetLatency(time.Second) // the reply held back
	big.send(encode("CONFIG", "SET", "maxmemory-clients", "200000"))
	eventually(t, "the new limit", func() bool { return srv.evict.limit.Load() == 200000 })
	srv.evictionTick()
	if n := srv.eng.Stats.EvictedClients.Load(); n != 0 { // (ctl's reply would run the pass)
		t.Fatalf("%d evicted by the tick before big's reply", n)
	}
	srv.SetLatency(0)
	big.expect("+OK\r\n")
	expectEvicted(t, ctl, big, "big")
	if srv.evict.due.Load() != dueNone {
		t.Fatalf("due %d after the caller's pass", srv.evict.due.Load())
	}
}

// Removing the limit takes every connection out of the sum: no share
// measured while it was set outlives it (a pass run when a limit is set
// again, before a connection is measured anew, would evict by it).
func TestClientEviction_OffClearsTheSum(t *testing.T) {
	srv, ctl := evictionServer(t, "100mb")
	shares := func() (acc, kept int64) {
		srv.clients.Range(func(k, _ any) bool {
			acc += k.(*client).mem.acc.Load()
			kept += k.(*client).mem.kept.Load()
			return true
		})
		return acc, kept
	}
	a := named(t, srv, "a")
	a.send("*2\r\n$3\r\nGET\r\n$400000\r\n" + strings.Repeat("x", 300_000))
	eventually(t, "a's partial request in the sum", func() bool {
		acc, kept := shares()
		return acc >= 300_000 && kept > 0 // and the NO-EVICT control's
	})
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "0")
	if acc, kept := shares(); acc != 0 || kept != 0 || srv.evict.sum.Load() != 0 || srv.evict.kept.Load() != 0 {
		t.Fatalf("shares %d + %d, sum %d (kept %d) once the limit is gone", acc, kept, srv.evict.sum.Load(), srv.evict.kept.Load())
	}
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "100mb")
	if acc, _ := shares(); acc < 300_000 {
		t.Fatalf("a's share %d after the limit is set again, want its partial request", acc)
	}
}

// watchKeys has c WATCH n keys, which Redis estimates at 56 bytes each.
func watchKeys(t *testing.T, c *rawClient, n int) {
	t.Helper()
	watch := []string{"WATCH"}
	for i := range n {
		watch = append(watch, "k"+strconv.Itoa(i))
	}
	c.expectDo("+OK\r\n", watch...)
}

// A client that runs a command is evicted by another's pass when it is
// the largest, as measured before the command (the largest bucket first,
// as Redis's pass), not passed over for a smaller one.
func TestClientEviction_LargestWhileItRunsACommand(t *testing.T) {
	srv, ctl := pausedServer(t, nil)
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "200000")
	x := named(t, srv, "x")
	watchKeys(t, x, 2400) // 134 KB, and its read buffer: bucket 2^17
	y := named(t, srv, "y")
	spin := spinScript(90 * time.Millisecond)
	x.send(encode("EVAL", spin, "0")) // x runs a script for 90 ms
	time.Sleep(20 * time.Millisecond)
	y.send(encode("SET", "y", strings.Repeat("y", 60_000))) // y's measure: the sum over
	eventually(t, "x evicted", func() bool { return !hasClient(t, ctl, "x") })
	if !hasClient(t, ctl, "y") {
		t.Fatalf("y evicted too: %v", clientNames(t, ctl))
	}
}

// The pass CONFIG SET makes due runs where its batch ends even when the
// batch writes nothing (CLIENT REPLY OFF) on an event loop, with no other
// client writing and no tick.
func TestClientEviction_ConfigSetWithRepliesOff(t *testing.T) {
	srv, ctl := pausedServer(t, nil)
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "1mb")
	big := named(t, srv, "big")
	watchKeys(t, big, 3000)
	z := named(t, srv, "z")
	for range 20 { // on its event loop
		z.expectDo("+PONG\r\n", "PING")
	}
	z.send(encode("CLIENT", "REPLY", "OFF") + encode("CONFIG", "SET", "maxmemory-clients", "150000"))
	eventually(t, "the new limit", func() bool { return srv.evict.limit.Load() == 150000 })
	eventually(t, "the pass CONFIG SET made due", func() bool { return srv.evict.due.Load() == dueNone })
	big.expectClosed()
}

// Input read ahead while a write waits for room (a pipeline sent before
// any reply is read: client.write) counts as the client's: past the
// limit it is evicted, where Redis would count the replies it kept.
func TestClientEviction_InputReadWhileAWriteWaits(t *testing.T) {
	srv, ctl := evictionServer(t, "32mb")
	ctl.expectDo("+OK\r\n", "SET", "k", strings.Repeat("v", 10_000))
	v := named(t, srv, "v")
	if err := v.conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	// 10 MB of replies, unread, then 128 MB more of requests
	req := strings.Repeat(encode("GET", "k"), 1000) + strings.Repeat("PING\r\n", 128<<20/6)
	v.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err := v.conn.Write([]byte(req))
	if err == nil {
		t.Fatal("128 MB read ahead of a waiting write were all taken under a 32 MB maxmemory-clients")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending: %v, want the client evicted", err)
	}
	waitFor(t, "v evicted", func() bool { return !hasClient(t, ctl, "v") })
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s", got)
	}
}

// The input a blocked client sends is measured as it is read, as Redis
// measures a client after each read: one that floods past
// maxmemory-clients is evicted then, not at the next 100 ms tick (stopped
// here by DEBUG PAUSE-CRON, so that only the measure after each read can
// evict it). Before, it held what 100 ms of input came to.
func TestClientEviction_BlockedClientInputMeasuredAsRead(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.EnableDebugCommand = "yes" }))
	ctl := dial(t, srv.Addr())
	ctl.expectDo("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	ctl.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory-clients", "4mb")
	ctl.expectDo("+OK\r\n", "DEBUG", "PAUSE-CRON", "1")
	time.Sleep(250 * time.Millisecond) // a tick begun before the pause has ended
	v := named(t, srv, "v")
	v.send(encode("BLPOP", "q", "0"))
	waitBlockedClients(t, srv, 1)
	v.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	flood := strings.Repeat(encode("SET", "k", strings.Repeat("v", 4096)), 16000) // 64 MB
	if _, err := v.conn.Write([]byte(flood)); err == nil {
		t.Fatal("64 MB sent while blocked were all taken under maxmemory-clients 4mb")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("sending while blocked: %v, want the client evicted", err)
	}
	expectEvicted(t, ctl, v, "v")
	if got := infoField(t, ctl, "stats", "evicted_clients"); got != "1" {
		t.Fatalf("evicted_clients:%s", got)
	}
	ctl.expectDo(":0\r\n", "EXISTS", "k")
}
