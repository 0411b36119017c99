package server

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// Helpers shared by the fixture tests.

// eventually polls cond until it holds, failing the test after 10 s. It
// waits for an asynchronous state to be reached, never for time to pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// expectClosed checks that the server closed the connection.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := c.rd.ReadByte()
	if err == nil {
		c.t.Fatalf("connection still open: read %q", b)
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func TestRunN_IndependentServers(t *testing.T) {
	srvs := RunN(t, 3, WithManualClock())
	if len(srvs) != 3 {
		t.Fatalf("RunN returned %d servers", len(srvs))
	}
	seen := map[string]bool{}
	for _, s := range srvs {
		if seen[s.Addr()] {
			t.Fatalf("two servers on %s", s.Addr())
		}
		seen[s.Addr()] = true
	}
	dial(t, srvs[0].Addr()).do("SET", "k", "v", "PX", "1000")
	if _, ok := srvs[1].Get("k"); ok {
		t.Fatal("a key set on server 0 is visible on server 1")
	}
	srvs[1].Set("k", "w", time.Second)
	srvs[0].Advance(time.Second + time.Millisecond) // only server 0's clock moves
	if _, ok := srvs[0].Get("k"); ok {
		t.Fatal("server 0's key survived its clock passing the deadline")
	}
	if v, ok := srvs[1].Get("k"); !ok || v != "w" {
		t.Fatalf("server 1's key = %q, %v; its clock did not move", v, ok)
	}
}

func TestAdvance_ReclaimsBeforeReturning(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	for i := range 300 {
		c.do("SET", "k"+strconv.Itoa(i), "v", "PX", "1000")
	}
	c.do("SET", "keep", "v")
	srv.Advance(time.Second)
	if n, exp := srv.Engine().KeyCount(); n != 301 || exp != 300 {
		t.Fatalf("at the deadline (keys live through its millisecond, as in Redis): %d keys, %d with a TTL", n, exp)
	}
	srv.Advance(time.Millisecond)
	// No polling: the keys are reclaimed (not just invisible) when Advance returns.
	if n, exp := srv.Engine().KeyCount(); n != 1 || exp != 0 {
		t.Fatalf("after Advance: %d keys, %d with a TTL; want 1, 0", n, exp)
	}
	if got := c.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE = %q", got)
	}
	if msg := srv.Engine().CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
}

func TestJumpWallClock_TTLsStayAbsoluteTimesMove(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	srv := RunT(t, WithConfig(func(c *Config) { c.Clock = expiry.NewManualClock(start) }))
	c := dial(t, srv.Addr())
	c.do("SET", "lock", "tok", "PX", "60000")
	want := start.Add(time.Minute).UnixMilli()
	if got := c.do("PEXPIRETIME", "lock"); got != ":"+strconv.FormatInt(want, 10)+"\r\n" {
		t.Fatalf("PEXPIRETIME = %q, want %d", got, want)
	}

	srv.JumpWallClock(time.Hour) // an NTP step forward
	if got := c.do("PTTL", "lock"); got != ":60000\r\n" {
		t.Fatalf("PTTL after a wall-clock jump = %q; the deadline must not move", got)
	}
	if got := c.do("PEXPIRETIME", "lock"); got != ":"+strconv.FormatInt(want+3600_000, 10)+"\r\n" {
		t.Fatalf("PEXPIRETIME after the jump = %q; want the deadline in the new wall time", got)
	}
	if got := c.do("TIME"); !strings.Contains(got, bulk(strconv.FormatInt(start.Unix()+3600, 10))) {
		t.Fatalf("TIME = %q, want the jumped wall time", got)
	}
	// Absolute times given now convert against the new wall time.
	at := start.Add(time.Hour + 10*time.Second).UnixMilli()
	c.do("SET", "abs", "v", "PXAT", strconv.FormatInt(at, 10))
	if got := c.do("PTTL", "abs"); got != ":10000\r\n" {
		t.Fatalf("PTTL of PXAT now+10s = %q", got)
	}
	srv.JumpWallClock(-2 * time.Hour) // and backwards
	if got := c.do("PTTL", "lock"); got != ":60000\r\n" {
		t.Fatalf("PTTL after a backward jump = %q", got)
	}
	srv.Advance(time.Minute + time.Millisecond)
	if got := c.do("EXISTS", "lock"); got != ":0\r\n" {
		t.Fatalf("lock outlived its TTL: %q", got)
	}
}

// AdvanceMonotonic moves TTLs and reclaims what expired, as Advance does,
// and leaves the wall clock where it was: a client's absolute deadline
// (PXAT from its own clock) keeps its meaning.
func TestAdvanceMonotonic_TTLsMoveWallStays(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	srv := RunT(t, WithConfig(func(c *Config) { c.Clock = expiry.NewManualClock(start) }))
	c := dial(t, srv.Addr())
	c.do("SET", "lock", "tok", "PX", "60000")
	srv.AdvanceMonotonic(59 * time.Second)
	if got := c.do("PTTL", "lock"); got != ":1000\r\n" {
		t.Fatalf("PTTL = %q after 59 s", got)
	}
	if got := c.do("TIME"); !strings.Contains(got, bulk(strconv.FormatInt(start.Unix(), 10))) {
		t.Fatalf("TIME = %q, want the wall clock unmoved", got)
	}
	// A deadline ten seconds from the client's clock (the start) is ten
	// seconds away still.
	at := start.Add(10 * time.Second).UnixMilli()
	c.do("SET", "abs", "v", "PXAT", strconv.FormatInt(at, 10))
	if got := c.do("PTTL", "abs"); got != ":10000\r\n" {
		t.Fatalf("PTTL of PXAT start+10s = %q", got)
	}
	srv.AdvanceMonotonic(time.Second + time.Millisecond)
	if n, exp := srv.Engine().KeyCount(); n != 1 || exp != 1 {
		t.Fatalf("after the lock's deadline: %d keys, %d with a TTL; want only abs (reclaimed before return)", n, exp)
	}
	func() {
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, "AdvanceMonotonic(-1s)") {
				t.Errorf("AdvanceMonotonic(-1s) recovered %q", msg)
			}
		}()
		srv.AdvanceMonotonic(-time.Second)
	}()
	// abs's EXPIRETIME comes as much earlier as the clock moved (the
	// comment says so): its deadline is nearer on an unmoved wall clock;
	// Advance moves both and leaves it.
	pet := func() int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(c.do("PEXPIRETIME", "abs"), ":")), 10, 64)
		return n
	}
	before := pet()
	srv.AdvanceMonotonic(time.Second)
	if got := pet(); got != before-1000 {
		t.Errorf("PEXPIRETIME after AdvanceMonotonic(1s) = %d, want %d", got, before-1000)
	}
	srv.Advance(time.Second)
	if got := pet(); got != before-1000 {
		t.Errorf("PEXPIRETIME after Advance(1s) = %d, want %d (unchanged)", got, before-1000)
	}
}

func TestAdvanceAndJump_PanicOnSystemClock(t *testing.T) {
	srv := RunT(t)
	for name, fn := range map[string]func(){
		"Advance":          func() { srv.Advance(time.Second) },
		"JumpWallClock":    func() { srv.JumpWallClock(time.Second) },
		"AdvanceMonotonic": func() { srv.AdvanceMonotonic(time.Second) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on the system clock did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// A negative Advance is a mistake in the test (a deadline computed the
// wrong way round): it panics with a message rather than doing nothing.
func TestAdvance_NegativePanics(t *testing.T) {
	srv := RunT(t, WithManualClock())
	srv.Set("lock", "tok", time.Second)
	func() {
		defer func() {
			msg, _ := recover().(string)
			if !strings.Contains(msg, "Advance(-2s)") {
				t.Errorf("Advance(-2s) recovered %q; want a panic naming it", msg)
			}
		}()
		srv.Advance(-2 * time.Second)
	}()
	srv.Advance(0) // no time: allowed
	if d := srv.TTL("lock"); d != time.Second {
		t.Fatalf("TTL = %v after a refused negative Advance", d)
	}
}

func TestInspection_GetTTLKeysSet(t *testing.T) {
	srv := RunT(t, WithManualClock())
	c := dial(t, srv.Addr())
	if _, ok := srv.Get("missing"); ok {
		t.Fatal("Get of a missing key reported ok")
	}
	if d := srv.TTL("missing"); d != -2 {
		t.Fatalf("TTL of a missing key = %v, want -2", d)
	}
	srv.Set("b", "2", 0)
	srv.Set("a", "1", 1500*time.Millisecond)
	c.do("SET", "c", "3", "EX", "100")
	if got := c.do("GET", "a"); got != bulk("1") {
		t.Fatalf("a client sees %q for a key the fixture set", got)
	}
	if v, ok := srv.Get("c"); !ok || v != "3" {
		t.Fatalf("Get(c) = %q, %v", v, ok)
	}
	if d := srv.TTL("b"); d != -1 {
		t.Fatalf("TTL of a key without deadline = %v, want -1", d)
	}
	if d := srv.TTL("a"); d != 1500*time.Millisecond {
		t.Fatalf("TTL(a) = %v, want 1.5s", d)
	}
	if d := srv.TTL("c"); d != 100*time.Second {
		t.Fatalf("TTL(c) = %v, want 100s", d)
	}
	if keys := srv.Keys(); !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Fatalf("Keys = %v", keys)
	}
	srv.Advance(1501 * time.Millisecond)
	if keys := srv.Keys(); !slices.Equal(keys, []string{"b", "c"}) {
		t.Fatalf("Keys after a's deadline = %v", keys)
	}
	if _, ok := srv.Get("a"); ok {
		t.Fatal("Get returned an expired key")
	}
	// The fixture's own calls are not client commands.
	var logged []string
	for _, r := range srv.Commands() {
		logged = append(logged, r.String())
	}
	if !slices.Equal(logged, []string{"SET c 3 EX 100", "GET a"}) {
		t.Fatalf("command log = %q; the fixture's own calls must not appear", logged)
	}
}

func TestCommands_LogsWhatClientsSent(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	srv := RunT(t, WithConfig(func(c *Config) { c.Clock = expiry.NewManualClock(start) }))
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	aid := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	a.do("SET", "lock", "tok", "NX", "PX", "30000")
	srv.Advance(time.Second)
	b.do("nosuch", "x")
	srv.FailNextCmd("get", 1, "ERR boom")
	b.do("GET", "lock")
	a.do("EVAL", "return redis.call('get', KEYS[1])", "1", "lock")

	recs := srv.Commands()
	var got []string
	for _, r := range recs {
		got = append(got, r.String())
	}
	want := []string{"CLIENT ID", "SET lock tok NX PX 30000", "nosuch x", "GET lock",
		"EVAL return redis.call('get', KEYS[1]) 1 lock"}
	if !slices.Equal(got, want) {
		t.Fatalf("Commands =\n%q\nwant\n%q", got, want)
	}
	if r := recs[1]; strconv.FormatInt(r.ClientID, 10) != aid || r.Name() != "set" || !r.Time.Equal(start) || r.Addr != a.conn.LocalAddr().String() {
		t.Fatalf("record = %+v; want client %s at %v from %s", r, aid, start, a.conn.LocalAddr())
	}
	if r := recs[2]; !r.Time.Equal(start.Add(time.Second)) || r.ClientID == recs[1].ClientID {
		t.Fatalf("record = %+v", r)
	}
	srv.ResetCommands()
	if recs := srv.Commands(); len(recs) != 0 {
		t.Fatalf("after ResetCommands: %v", recs)
	}
	a.do("PING")
	if recs := srv.Commands(); len(recs) != 1 || recs[0].Name() != "ping" {
		t.Fatalf("after one PING: %v", recs)
	}
}

func TestCommands_RingKeepsTheLastN(t *testing.T) {
	srv := RunT(t, WithCommandLog(3))
	c := dial(t, srv.Addr())
	for i := range 7 {
		c.do("ECHO", strconv.Itoa(i))
	}
	var got []string
	for _, r := range srv.Commands() {
		got = append(got, r.Args[1])
	}
	if !slices.Equal(got, []string{"4", "5", "6"}) {
		t.Fatalf("ring holds %v, want the last three", got)
	}
}

func TestCommands_OffByDefaultOutsideRunT(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0"})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dial(t, srv.Addr()).do("PING")
	if recs := srv.Commands(); recs != nil {
		t.Fatalf("Commands with the log off = %v", recs)
	}
	off := RunT(t, WithCommandLog(0))
	dial(t, off.Addr()).do("PING")
	if recs := off.Commands(); recs != nil {
		t.Fatalf("Commands WithCommandLog(0) = %v", recs)
	}
}

// DB(n) inspects and sets keys in database n, as seen by a client that
// SELECTed it; the fixture's writes there pass the restart delay as its
// writes in database 0 do.
func TestInspection_DB(t *testing.T) {
	srv := RunT(t, WithManualClock(), WithRestartDelay(30*time.Second))
	c := dial(t, srv.Addr())
	db3 := srv.DB(3)
	db3.Set("lock", "tok3", 2*time.Second)
	srv.Set("lock", "tok0", 0)
	if got := c.do("SELECT", "3"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := c.do("GET", "lock"); got != bulk("tok3") {
		t.Fatalf("a client on db 3 sees %q", got)
	}
	if v, ok := srv.Get("lock"); !ok || v != "tok0" {
		t.Fatalf("Get (db 0) = %q, %v", v, ok)
	}
	if v, ok := db3.Get("lock"); !ok || v != "tok3" {
		t.Fatalf("DB(3).Get = %q, %v", v, ok)
	}
	if d := db3.TTL("lock"); d != 2*time.Second {
		t.Fatalf("DB(3).TTL = %v", d)
	}
	if keys := srv.DB(5).Keys(); len(keys) != 0 {
		t.Fatalf("DB(5).Keys = %v", keys)
	}
	if got := c.do("SET", "other", "x"); !strings.HasPrefix(got, "-ERR restart delay") {
		t.Fatalf("a client's write during the restart delay: %q", got)
	}
	srv.Advance(2001 * time.Millisecond)
	if keys := db3.Keys(); len(keys) != 0 {
		t.Fatalf("DB(3).Keys after the deadline = %v", keys)
	}
	if keys := srv.Keys(); !slices.Equal(keys, []string{"lock"}) {
		t.Fatalf("Keys (db 0) = %v", keys)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("DB(16) did not panic")
		}
	}()
	srv.DB(16)
}

// AdvanceAll moves several servers' clocks and reclaims on every one
// before it returns; a clock two servers share moves once.
func TestAdvanceAll_MovesEveryClockOnce(t *testing.T) {
	nodes := RunN(t, 3, WithManualClock())
	shared := expiry.NewManualClock(time.Now())
	pair := RunN(t, 2, WithConfig(func(c *Config) { c.Clock = shared }))
	all := append(append([]*Server(nil), nodes...), pair...)
	for _, s := range all {
		c := dial(t, s.Addr())
		c.do("SET", "lock", "tok", "PX", "1000")
	}
	before := shared.Mono()
	AdvanceAll(time.Second, all...)
	if got := shared.Mono() - before; got != 1000 {
		t.Fatalf("the shared clock moved %d ms, want 1000", got)
	}
	for i, s := range all {
		if n, _ := s.Engine().KeyCount(); n != 1 {
			t.Fatalf("server %d at the deadline: %d keys, want 1", i, n)
		}
	}
	AdvanceAll(time.Millisecond, all...)
	for i, s := range all {
		// reclaimed (not just invisible) when AdvanceAll returns
		if n, exp := s.Engine().KeyCount(); n != 0 || exp != 0 {
			t.Fatalf("server %d after AdvanceAll: %d keys, %d with a TTL", i, n, exp)
		}
	}

	// A server on the system clock: a panic, and no clock moved.
	sys := RunT(t)
	at := nodes[0].ManualClock().Mono()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("AdvanceAll with a system-clock server did not panic")
			}
		}()
		AdvanceAll(time.Second, nodes[0], sys)
	}()
	if got := nodes[0].ManualClock().Mono(); got != at {
		t.Fatalf("a clock moved %d ms before the panic", got-at)
	}
}
