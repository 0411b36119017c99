package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitClosed reads from c until the server closes it (bounded), returning
// what was read.
func waitClosed(t *testing.T, c *rawClient) []byte {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c.rd)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open (read %d bytes)", len(b))
	}
	return b
}

func TestTimeout_ClosesIdleConnectionsOnly(t *testing.T) {
	// (1 s: busy's pings 50 ms apart keep it open even when a loaded
	// machine holds the test up for several hundred ms)
	srv := RunT(t, WithConfig(func(c *Config) { c.Timeout = time.Second }))
	idle := dial(t, srv.Addr())
	start := time.Now() // before idle's last command: its idle time is at most this
	if got := idle.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
	// A connection that keeps talking is not idle.
	busy := dial(t, srv.Addr())
	for i := 0; i < 25; i++ {
		if got := busy.do("PING"); got != "+PONG\r\n" {
			t.Fatalf("ping %d: %q", i, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b := waitClosed(t, idle); len(b) != 0 {
		t.Fatalf("idle connection got %q before closing", b)
	}
	if d := time.Since(start); d < 995*time.Millisecond { // (a little for rounding)
		t.Fatalf("closed after %v, before the timeout", d)
	}
	// CONFIG SET timeout 0 lifts it for reads that start afterwards.
	if got := busy.do("CONFIG", "SET", "timeout", "0"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c := dial(t, srv.Addr())
	c.do("PING")
	time.Sleep(1200 * time.Millisecond)
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
}

func TestMaxClients_SmallLimitAndConfigSet(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.MaxClients = 2 }))
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.do("PING")
	b.do("PING")
	third := dial(t, srv.Addr())
	if got := string(waitClosed(t, third)); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client: %q", got)
	}
	if got := a.do("CONFIG", "SET", "maxclients", "3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := dial(t, srv.Addr()).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("after maxclients 3: %q", got)
	}
	if got := a.do("INFO", "clients"); !strings.Contains(got, "maxclients:3\r\n") {
		t.Fatalf("INFO: %q", got)
	}
}

// CONFIG SET maxclients asks Config.FitOpenFiles (the tumbler binary's
// RLIMIT_NOFILE fitting) as Redis's updateMaxclients asks
// adjustOpenFilesLimit: a maxclients the open files limit cannot take
// fails with Redis's error, naming what would fit, and every parameter
// of the command keeps its value; one that fits is set. A value equal to
// the current one is not fitted (Redis applies nothing). Without the
// hook (embedded servers) every maxclients is taken, as before.
func TestMaxClients_ConfigSetFitsTheOpenFilesLimit(t *testing.T) {
	var buf syncBuffer
	var asked []int
	var mu sync.Mutex
	srv := RunT(t, WithConfig(func(c *Config) {
		c.MaxClients = 224
		c.Logger = newTestLogger(&buf)
		c.FitOpenFiles = func(n int) (int, []string, []string) {
			mu.Lock()
			asked = append(asked, n)
			mu.Unlock()
			if n <= 224 {
				return n, nil, nil
			}
			if n <= 1000 {
				return n, []string{"raised for " + strconv.Itoa(n)}, nil
			}
			return 1000, nil, []string{"cannot for " + strconv.Itoa(n)}
		}
	}))
	c := dial(t, srv.Addr())
	tooMany := "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with 1000\r\n"
	doSteps(t, c, []wireStep{
		{[]string{"CONFIG", "SET", "maxclients", "100000"}, tooMany},
		{[]string{"CONFIG", "GET", "maxclients"}, "*2\r\n$10\r\nmaxclients\r\n$3\r\n224\r\n"},
		{[]string{"CONFIG", "SET", "timeout", "40", "maxclients", "1001"}, tooMany},
		{[]string{"CONFIG", "GET", "timeout"}, "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"},
		{[]string{"CONFIG", "SET", "maxclients", "224"}, "+OK\r\n"}, // unchanged: not asked
		{[]string{"CONFIG", "SET", "maxclients", "100"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "maxclients"}, "*2\r\n$10\r\nmaxclients\r\n$3\r\n100\r\n"},
		{[]string{"CONFIG", "SET", "maxclients", "1000"}, "+OK\r\n"},
	})
	if got := c.do("INFO", "clients"); !strings.Contains(got, "maxclients:1000\r\n") {
		t.Fatalf("INFO: %q", got)
	}
	mu.Lock()
	if want := []int{100000, 1001, 100, 1000}; !slices.Equal(asked, want) {
		t.Errorf("FitOpenFiles asked for %v, want %v", asked, want)
	}
	mu.Unlock()
	log := buf.String()
	for _, want := range []string{"cannot for 100000", "cannot for 1001", "raised for 1000",
		"Failed applying new configuration. Possibly related to new maxclients setting. Restoring previous settings."} {
		if !strings.Contains(log, want) {
			t.Errorf("log: want %q:\n%s", want, log)
		}
	}

	embedded := RunT(t)
	doSteps(t, dial(t, embedded.Addr()), []wireStep{
		{[]string{"CONFIG", "SET", "maxclients", "4000000000"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "maxclients"}, "*2\r\n$10\r\nmaxclients\r\n$10\r\n4000000000\r\n"},
	})
}

// client-query-buffer-limit counts the incomplete request: complete
// requests of any total size pass, one incomplete request over the limit
// ends the connection without a reply, however the bytes arrive.
func TestFramer_QueryBufferLimit(t *testing.T) {
	lim := &protoLimits{}
	lim.maxBulk.Store(framerMaxBulk)
	lim.maxMultibulk.Store(framerMaxMultibulk)
	lim.maxQueryBuf.Store(100)
	// A request that never ends: 150 of its 200 payload bytes arrive.
	big := "*2\r\n$4\r\nECHO\r\n$200\r\n" + strings.Repeat("x", 150)
	fits := "*2\r\n$4\r\nECHO\r\n$70\r\n" + strings.Repeat("y", 70) + "\r\n" // 92 bytes
	cases := []struct {
		name    string
		in      string
		wantOut string
		limited bool
	}{
		{"many small requests", strings.Repeat(fits, 50), strings.Repeat(fits, 50), false},
		{"one request over", fits + big, fits, true},
		{"over, in its first read", big, "", true},
	}
	for _, tc := range cases {
		for _, split := range []string{"whole", "bytewise"} {
			chunks := [][]byte{[]byte(tc.in)}
			if split == "bytewise" {
				chunks = framerBytewise([]byte(tc.in))
			}
			sc := &framerScriptConn{chunks: chunks}
			fc := newFramedConn(sc, nil)
			fc.lim = lim
			var out []byte
			buf := make([]byte, 4096)
			var err error
			for i := 0; i < 10*len(tc.in)+10; i++ {
				var n int
				n, err = fc.Read(buf)
				out = append(out, buf[:n]...)
				if err != nil {
					break
				}
			}
			if tc.limited != errors.Is(err, errQueryBufLimit) || !errors.Is(err, errProtocolLimit) && tc.limited {
				t.Errorf("%s/%s: err = %v", tc.name, split, err)
			}
			// The bytes handed on must include every complete request
			// before the big one (bytewise reads may also hand on the
			// start of the big one: the connection ends before it runs).
			if !bytes.HasPrefix(out, []byte(tc.wantOut)) || (!tc.limited && string(out) != tc.wantOut) {
				t.Errorf("%s/%s: handed on %s", tc.name, split, framerShow(out))
			}
			if sc.wrote.Len() != 0 {
				t.Errorf("%s/%s: wrote %q; Redis closes without a reply", tc.name, split, sc.wrote.String())
			}
		}
	}
}

func TestQueryBufferLimit_ClosesClient(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	if got := admin.do("CONFIG", "SET", "client-query-buffer-limit", "1mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c := dial(t, srv.Addr())
	c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
	chunk := strings.Repeat("v", 64*1024)
	for i := 0; i < 40; i++ { // 2.5 MB of the 3 MB: well over 1 MB
		c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.conn.Write([]byte(chunk)); err != nil {
			break // closed already
		}
	}
	if got := waitClosed(t, c); len(got) != 0 {
		t.Fatalf("got %q; want a close without reply", got)
	}
	if got := admin.do("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("EXISTS k = %q", got)
	}
}

func TestProtoMaxBulkLen_ConfigSet(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	if got := admin.do("CONFIG", "SET", "proto-max-bulk-len", "1mb"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	c := dial(t, srv.Addr())
	c.send("*2\r\n$4\r\nECHO\r\n$1048577\r\n")
	if got := string(waitClosed(t, c)); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("over proto-max-bulk-len: %q", got)
	}
	c = dial(t, srv.Addr())
	if got := c.do("ECHO", strings.Repeat("a", 1<<20)); len(got) != 1<<20+len("$1048576\r\n\r\n") {
		t.Fatalf("at proto-max-bulk-len: %d bytes", len(got))
	}
}

func TestMaxMemory_DenyOOMCommandsRefused(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	c.do("SET", "a", "1")
	if got := c.do("CONFIG", "SET", "maxmemory", "1"); got != "+OK\r\n" { // any heap is over 1 byte
		t.Fatal(got)
	}
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "b", "1"}, oom},
		{[]string{"INCR", "a"}, oom},
		{[]string{"GET", "a"}, "$1\r\n1\r\n"},
		{[]string{"EXPIRE", "a", "100"}, ":1\r\n"},
		{[]string{"EVAL", "return redis.pcall('set', KEYS[1], 'v')", "1", "b"}, oom},
		{[]string{"EVAL", "redis.call('del', KEYS[1]) return redis.call('set', KEYS[1], 'v')", "1", "b"}, "+OK\r\n"},
		{[]string{"DEL", "a", "b"}, ":2\r\n"},
		{[]string{"CONFIG", "SET", "maxmemory", "0"}, "+OK\r\n"},
		{[]string{"SET", "b", "1"}, "+OK\r\n"},
	} {
		if got := c.do(st.args...); got != st.want {
			t.Errorf("%q = %q, want %q", st.args, got, st.want)
		}
	}
	got := c.do("CONFIG", "SET", "maxmemory", "1")
	got += c.do("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "b")
	if !strings.Contains(got, "-OOM command not allowed when used memory > 'maxmemory'. script:") {
		t.Fatalf("redis.call under OOM: %q", got)
	}
	c.do("CONFIG", "SET", "maxmemory", "1gb")
	if got := c.do("SET", "b", "2"); got != "+OK\r\n" {
		t.Fatalf("under a 1gb maxmemory: %q", got)
	}
}

func TestOutputBufferState_AsRedis(t *testing.T) {
	l := OutputBufferLimit{Hard: 1000, Soft: 100, SoftSeconds: 2}
	t0 := time.Unix(1000, 0)
	var st obufState
	steps := []struct {
		pending int
		at      time.Duration
		want    bool
	}{
		{50, 0, false},
		{100, 0, false},                      // soft reached: the count starts
		{500, 2 * time.Second, false},        // not more than 2 s yet
		{500, 2*time.Second + 1, true},       // over soft for more than 2 s
		{10, 3 * time.Second, false},         // below soft: the count resets
		{200, 4 * time.Second, false},        // starts again
		{200, 5 * time.Second, false},        //
		{1000, 5 * time.Second, true},        // hard limit: at once
		{999, 6*time.Second + 1, true},       // soft since 4 s
		{0, 7 * time.Second, false},          //
		{100, 100 * time.Second, false},      //
		{100, 102*time.Second + 1, true},     //
		{1 << 30, 102*time.Second + 1, true}, //
	}
	for i, s := range steps {
		if got := st.over(l, s.pending, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d (%d bytes at %v) = %v, want %v", i, s.pending, s.at, got, s.want)
		}
	}
	var zero obufState
	if zero.over(OutputBufferLimit{}, 1<<40, t0) {
		t.Error("zero limits must never trip")
	}
}

func TestOutputBufferLimit_NormalHardLimitClosesClient(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = DefaultOutputBufferLimits()
		c.OutputBufferLimits.Normal = OutputBufferLimit{Hard: 100 << 10}
	}))
	c := dial(t, srv.Addr())
	val := strings.Repeat("v", 40<<10)
	c.do("SET", "k", val)
	if got := c.do("GET", "k"); len(got) != len(val)+len("$40960\r\n\r\n") {
		t.Fatalf("GET under the limit: %d bytes", len(got))
	}
	c.send(encode("MGET", "k", "k", "k"))
	if got := waitClosed(t, c); len(got) != 0 {
		t.Fatalf("over the hard limit got %d bytes; want a close", len(got))
	}
	// Pipelined commands count together.
	c = dial(t, srv.Addr())
	c.send(encode("GET", "k") + encode("GET", "k") + encode("GET", "k"))
	if got := waitClosed(t, c); len(got) >= 3*len(val) {
		t.Fatalf("pipeline over the hard limit got all %d bytes", len(got))
	}
	if got := dial(t, srv.Addr()).do("CONFIG", "GET", "client-output-buffer-limit"); !strings.Contains(got, "normal 102400 0 0 slave") {
		t.Fatal(got)
	}
}

// A client that stops reading a reply bigger than the soft limit is
// closed after soft_seconds. The reply is written in segments of about
// a value each (respWriter.segs): a soft limit above one segment counts
// all that is left, not the segment being written.
func TestOutputBufferLimit_SlowReaderOverSoftLimit(t *testing.T) {
	for _, soft := range []string{"256kb", "4mb"} {
		t.Run(soft, func(t *testing.T) {
			srv := RunT(t)
			c := dial(t, srv.Addr())
			if got := c.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 "+soft+" 0"); got != "+OK\r\n" {
				t.Fatal(got)
			}
			val := strings.Repeat("v", 1<<20)
			c.do("SET", "k", val)
			args := []string{"MGET"}
			for i := 0; i < 48; i++ { // 48 MB: more than loopback socket buffers hold
				args = append(args, "k")
			}
			c.send(encode(args...))
			// Do not read for a while, then read everything there is.
			time.Sleep(300 * time.Millisecond)
			got := waitClosed(t, c)
			if len(got) >= 48<<20 {
				t.Fatalf("slow reader received the whole %d-byte reply", len(got))
			}
			// The connection was closed, not the server.
			if got := dial(t, srv.Addr()).do("PING"); got != "+PONG\r\n" {
				t.Fatal(got)
			}
		})
	}
}

// Connections that can receive pushes (pub/sub, client tracking, MONITOR)
// and clients blocked in BLPOP are exempt from the idle timeout, as in
// Redis; an idle plain connection beside them is closed.
func TestTimeout_PushAndBlockedConnectionsExempt(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.Timeout = 300 * time.Millisecond }))
	sub := dial(t, srv.Addr())
	if got := sub.do("SUBSCRIBE", "ch"); !strings.Contains(got, "subscribe") {
		t.Fatal(got)
	}
	psub := dial(t, srv.Addr())
	if got := psub.do("PSUBSCRIBE", "c*"); !strings.Contains(got, "psubscribe") {
		t.Fatal(got)
	}
	track := dial(t, srv.Addr())
	track.do("HELLO", "3")
	if got := track.do("CLIENT", "TRACKING", "ON"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	mon := dial(t, srv.Addr())
	if got := mon.do("MONITOR"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	blocked := dial(t, srv.Addr())
	blocked.send(encode("BLPOP", "nokey", "0"))
	idle := dial(t, srv.Addr())
	if got := idle.do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}

	time.Sleep(time.Second) // over three timeouts
	if b := waitClosed(t, idle); len(b) != 0 {
		t.Fatalf("idle connection got %q before closing", b)
	}
	other := dial(t, srv.Addr())
	if got := other.do("PUBLISH", "ch", "hi"); got != ":2\r\n" {
		t.Fatalf("PUBLISH reached %q subscribers, want both", got)
	}
	if got := sub.read(); !strings.Contains(got, "hi") {
		t.Fatalf("subscriber: %q", got)
	}
	if got := psub.read(); !strings.Contains(got, "hi") {
		t.Fatalf("pattern subscriber: %q", got)
	}
	if got := track.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("tracking connection: %q", got)
	}
	seen := ""
	for i := 0; i < 4 && !strings.Contains(seen, `"PUBLISH"`); i++ {
		seen += mon.read()
	}
	if !strings.Contains(seen, `"PUBLISH"`) {
		t.Fatalf("monitor: %q", seen)
	}
	if got := other.do("LPUSH", "nokey", "x"); got != ":1\r\n" {
		t.Fatal(got)
	}
	if got := blocked.read(); !strings.Contains(got, "nokey") {
		t.Fatalf("blocked client: %q", got)
	}
}

// A MONITOR client, and a RESP3 client with CLIENT TRACKING on, are of
// Redis's normal class: one that stops reading is closed at the normal
// hard limit, as Redis closes it. Before, connections that receive
// pushes were held only to the pubsub class's limit when subscribed, so
// a stalled MONITOR grew without bound.
func TestOutputBufferLimit_NormalClassForMonitorAndTracking(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = DefaultOutputBufferLimits()
		c.OutputBufferLimits.Normal = OutputBufferLimit{Hard: 1 << 20}
	}))
	other := dial(t, srv.Addr())
	val := strings.Repeat("v", 100<<10)
	clients := func() string { return other.do("CLIENT", "LIST") }

	mon := dial(t, srv.Addr())
	_ = mon.conn.(*net.TCPConn).SetReadBuffer(4096)
	mon.expectDo("+OK\r\n", "MONITOR")
	// 160 SETs of 100 KB: 16 MB of MONITOR lines it never reads, more
	// than loopback socket buffers hold (up to 4 MB a side).
	const n = 160
	for i := 0; i < n; i++ {
		other.expectDo("+OK\r\n", "SET", "k", val)
	}
	eventually(t, "the stalled MONITOR to be closed", func() bool { return !strings.Contains(clients(), "cmd=monitor") })

	trk := dial(t, srv.Addr())
	_ = trk.conn.(*net.TCPConn).SetReadBuffer(4096)
	trk.hello3()
	id := "id=" + strings.TrimSuffix(strings.TrimPrefix(trk.do("CLIENT", "ID"), ":"), "\r\n") + " "
	trk.expectDo("+OK\r\n", "CLIENT", "TRACKING", "on")
	// Its own replies count too: pipelined GETs of 100 KB, unread.
	trk.send(strings.Repeat(encode("GET", "k"), n))
	eventually(t, "the stalled tracking client to be closed", func() bool { return !strings.Contains(clients(), id) })

	// Under the limit nothing is closed.
	mon = dial(t, srv.Addr())
	mon.expectDo("+OK\r\n", "MONITOR")
	other.expectDo("+OK\r\n", "SET", "k", "small")
	if line := mon.read(); !strings.Contains(line, `"SET" "k" "small"`) {
		t.Fatalf("MONITOR line %q", line)
	}
}

// Every push-capable connection leaves the count the output limit cron
// walks for, however it goes: it closes, CLIENT KILL, DropConnections.
// Before, a killed one stayed counted, and the cron walked every client
// every 100 ms for good.
func TestPushConns_CountedUntilGone(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	var ids []string
	for i := 0; i < 3; i++ {
		m := dial(t, srv.Addr())
		ids = append(ids, strings.TrimSuffix(strings.TrimPrefix(m.do("CLIENT", "ID"), ":"), "\r\n"))
		m.expectDo("+OK\r\n", "MONITOR")
	}
	closing := dial(t, srv.Addr())
	closing.expectDo("*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "SUBSCRIBE", "ch")
	if n := srv.pushConns.Load(); n != 4 {
		t.Fatalf("pushConns = %d with four push-capable connections", n)
	}
	closing.conn.Close()
	for _, id := range ids[:2] {
		admin.expectDo(":1\r\n", "CLIENT", "KILL", "ID", id)
	}
	srv.DropConnections()
	eventually(t, "no push-capable connection counted", func() bool { return srv.pushConns.Load() == 0 })
}

// One command whose reply asks for far more than the hard output limit
// (MGET of a 1 MB value a hundred times: 100 MB; a script's reply) stops
// adding to it at the limit and is closed, as Redis stops adding output
// for a client it is to close: the server builds no more of the reply
// than the limit. It used to build all of it, and then close: a small
// request could ask for more memory than the machine had (an MGET of a
// million keys), whatever the limit. For a push-capable connection
// (RESP3 tracking, its writer shared with pushes) the same, and for a
// subscribed one its class is pubsub's.
func TestOutputBufferLimit_OneReplyStopsAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
		class string
	}{
		{"plain", nil, "normal"},
		{"tracking", []string{"CLIENT TRACKING on"}, "normal"},
		{"subscribed", []string{"SUBSCRIBE ch"}, "pubsub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := RunT(t, WithConfig(func(c *Config) {
				c.OutputBufferLimits = DefaultOutputBufferLimits()
				c.OutputBufferLimits.PubSub = OutputBufferLimit{}
				if tc.class == "pubsub" {
					c.OutputBufferLimits.PubSub = OutputBufferLimit{Hard: 1 << 20}
				} else {
					c.OutputBufferLimits.Normal = OutputBufferLimit{Hard: 1 << 20}
				}
			}))
			srv.Set("big", strings.Repeat("v", 1<<20), 0)
			mget := []string{"MGET"}
			for range 100 {
				mget = append(mget, "big")
			}
			for _, req := range []string{
				encode(mget...),
				// 2^17 leaves of 1 KB: 128 MB of reply from 17 small tables
				encode("EVAL", "local t = string.rep('x', 1024) for i = 1, 17 do t = {t, t} end return t", "0"),
			} {
				c := dialSetUp(t, srv.Addr(), tc.setup)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c.send(req)
				if got := waitClosed(t, c); len(got) > 2<<20 {
					t.Fatalf("got %d bytes before the close", len(got))
				}
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 40<<20 {
					t.Errorf("%.40q: allocated %d MB for a reply over a 1 MB limit", req, grew>>20)
				}
				if got := dial(t, srv.Addr()).do("PING"); got != "+PONG\r\n" {
					t.Fatalf("PING after: %q", got)
				}
			}
		})
	}
}

// limitsSrv runs a server with the default output buffer limits, then
// set's changes.
func limitsSrv(t *testing.T, set func(*OutputBufferLimits)) *Server {
	t.Helper()
	return RunT(t, WithConfig(func(c *Config) {
		c.OutputBufferLimits = DefaultOutputBufferLimits()
		set(&c.OutputBufferLimits)
	}))
}

// readN reads n replies, failing with what it got if the server closes
// the connection.
func readN(t *testing.T, c *rawClient, n int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b strings.Builder
		if err := readReply(c.rd, &b); err != nil {
			t.Fatalf("reply %d: %v (replies so far: %d, partial %d bytes)", i, err, len(out), b.Len())
		}
		out = append(out, b.String())
	}
	return out
}

// The limit a reply is cut at is the one in force when it gets there
// (respWriter.relimit), not the batch's first: CONFIG SET lifting the
// normal limit, then a big reply, in one batch: the reply is sent, as
// Redis, which reads the limit at each reply it adds.
func TestOutputBufferLimit_RaisedMidBatch(t *testing.T) {
	for _, newLimit := range []string{"normal 0 0 0", "normal 64mb 0 0"} {
		t.Run(newLimit, func(t *testing.T) {
			srv := limitsSrv(t, func(l *OutputBufferLimits) { l.Normal = OutputBufferLimit{Hard: 1 << 20} })
			srv.Set("big", strings.Repeat("v", 2<<20), 0)
			c := dial(t, srv.Addr())
			c.send(encode("CONFIG", "SET", "client-output-buffer-limit", newLimit) + encode("MGET", "big", "big"))
			r := readN(t, c, 2)
			if r[0] != "+OK\r\n" || len(r[1]) < 4<<20 {
				t.Fatalf("%q %d", r[0], len(r[1]))
			}
		})
	}
}

// A subscribed connection (pubsub class) that unsubscribes (or RESETs) and
// asks for a big reply in the same batch: its class is normal (no limit)
// by then, as Redis's getClientType says: the reply is sent.
func TestOutputBufferLimit_UnsubscribedMidBatch(t *testing.T) {
	for _, leave := range []string{"UNSUBSCRIBE", "RESET"} {
		t.Run(leave, func(t *testing.T) {
			srv := limitsSrv(t, func(l *OutputBufferLimits) {
				l.Normal = OutputBufferLimit{}
				l.PubSub = OutputBufferLimit{Hard: 1 << 20}
			})
			srv.Set("big", strings.Repeat("v", 2<<20), 0)
			c := dial(t, srv.Addr())
			c.do("SUBSCRIBE", "ch")
			c.send(encode(leave) + encode("MGET", "big", "big"))
			r := readN(t, c, 2)
			if len(r[1]) < 4<<20 {
				t.Fatalf("%q %d", r[0], len(r[1]))
			}
		})
	}
}

// RESP3: SUBSCRIBE (pubsub class, no limit) then a big reply in one batch:
// not cut at the normal class's limit.
func TestOutputBufferLimit_SubscribedMidBatch(t *testing.T) {
	srv := limitsSrv(t, func(l *OutputBufferLimits) {
		l.Normal = OutputBufferLimit{Hard: 1 << 20}
		l.PubSub = OutputBufferLimit{}
	})
	srv.Set("big", strings.Repeat("v", 2<<20), 0)
	c := dial(t, srv.Addr())
	c.hello3()
	c.send(encode("SUBSCRIBE", "ch") + encode("MGET", "big", "big"))
	r := readN(t, c, 2)
	if len(r[1]) < 4<<20 {
		t.Fatalf("%q %d", r[0], len(r[1]))
	}
}

// A command that closes its own connection (CLIENT KILL of itself, in
// EXEC) after a reply cut at the limit: nothing of the cut reply is sent
// (runBatch ended the batch on closeNow before it checked the limit, and
// sent the truncated reply). Redis sends nothing to a client it closes
// for its output.
func TestOutputBufferLimit_CutReplyOfAClosingClientNotSent(t *testing.T) {
	srv := limitsSrv(t, func(l *OutputBufferLimits) { l.Normal = OutputBufferLimit{Hard: 1 << 20} })
	srv.Set("big", strings.Repeat("v", 1<<20), 0)
	c := dial(t, srv.Addr())
	id := c.id()
	c.send(encode("MULTI") + encode("MGET", "big", "big", "big") + encode("CLIENT", "KILL", "ID", id, "SKIPME", "no") + encode("EXEC"))
	got := waitClosed(t, c)
	if i := strings.Index(string(got), "*2\r\n"); i >= 0 {
		t.Fatalf("got a truncated EXEC reply: %d bytes after the QUEUED replies (%q...)", len(got)-i, got[i:i+40])
	}
}

// Under -race: a push-capable connection (RESP3 tracking, subscribed)
// blocked in BLPOP, served by another client while pushes arrive, then a
// reply cut at the limit, which closes it.
func TestOutputBufferLimit_BlockedPushConnection(t *testing.T) {
	srv := limitsSrv(t, func(l *OutputBufferLimits) {
		l.Normal = OutputBufferLimit{Hard: 1 << 20}
		l.PubSub = OutputBufferLimit{Hard: 1 << 20}
	})
	srv.Set("big", strings.Repeat("v", 1<<20), 0)
	c := dial(t, srv.Addr())
	c.hello3()
	c.do("CLIENT", "TRACKING", "on")
	c.do("SUBSCRIBE", "ch")
	p := dial(t, srv.Addr())
	for i := 0; i < 50; i++ {
		c.send(encode("BLPOP", "l", "0"))
		time.Sleep(2 * time.Millisecond)
		p.do("PUBLISH", "ch", "m")
		p.do("RPUSH", "l", "x")
		for {
			r := c.read()
			if !strings.HasPrefix(r, ">") {
				break
			}
		}
	}
	c.send(encode("MGET", "big", "big", "big"))
	waitClosed(t, c)
}
