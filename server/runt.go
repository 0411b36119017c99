package server

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tumblerdb/tumbler/expiry"
)

// Tester is the part of *testing.T (or *testing.B) that RunT uses, so this
// package does not import testing.
type Tester interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Option changes the Config RunT starts a server with.
type Option func(*Config)

// DefaultCommandLog is how many commands RunT's servers keep for Commands.
const DefaultCommandLog = 1024

// WithManualClock runs the server on a manual clock that moves only when
// the test calls Advance (or JumpWallClock). With RunN, each server gets
// its own manual clock. Deadlines, pauses, blocking timeouts, expiry and
// the times the server reports follow it; what the network layer times
// (Config.Timeout, the idle-client timeout; TCP keepalive; SetLatency;
// RestartAfter's downtime) stays in real time.
func WithManualClock() Option {
	return func(c *Config) { c.Clock = expiry.NewManualClock(time.Now()) }
}

// WithRestartDelay makes the server refuse writes to keys for d after it
// starts and after every Restart (Config.RestartDelay): a lock grant (SET
// NX, SETNX, MSETNX, in scripts too) gets the reply of a lock held by
// someone else, any other write (a release's DEL, a PEXPIRE extending a
// lock) "-ERR restart delay: ...". The fixture's Set is not refused.
// EndRestartDelay ends it early.
func WithRestartDelay(d time.Duration) Option {
	return func(c *Config) { c.RestartDelay = d }
}

// EndRestartDelay ends the restart delay now, if one runs (on the system
// clock, where Advance cannot pass it; the next Restart starts it again).
func (s *Server) EndRestartDelay() { s.fx.refuseUntil.Store(0) }

// WithCommandLog sets how many commands the server keeps for Commands;
// 0 turns the log off.
func WithCommandLog(n int) Option {
	return func(c *Config) { c.CommandLog = n }
}

// WithConfig applies fn to the Config.
func WithConfig(fn func(*Config)) Option { return func(c *Config) { fn(c) } }

// RunT starts a server on a free loopback port and closes it when the test
// ends. It fails the test if the server cannot start. Unlike New's
// defaults, RunT's servers keep a command log (DefaultCommandLog entries)
// and allow DEBUG (EnableDebugCommand "yes"); options change that. When t
// has a Logf method (*testing.T and *testing.B do) and no option sets
// Config.Logger, the server logs through it, so that its warnings show
// with the test they belong to (go test -v, or a failing test), not on
// stderr; what it logs after the test's cleanups have run goes to stderr.
func RunT(t Tester, opts ...Option) *Server {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", CommandLog: DefaultCommandLog, EnableDebugCommand: "yes"}
	for _, o := range opts {
		o(&cfg)
	}
	if lt, ok := t.(interface{ Logf(string, ...any) }); ok && cfg.Logger == nil {
		w := &testLogWriter{logf: lt.Logf}
		// registered first: it runs after Close (cleanups run last first)
		t.Cleanup(w.end)
		// every level: loglevel filters (levelHandler)
		cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s := New(cfg)
	if err := s.Start(); err != nil {
		if msg := err.Error(); strings.HasPrefix(msg, "tumbler: ") {
			t.Fatalf("%s", msg)
		}
		t.Fatalf("tumbler: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testLogWriter takes a log handler's records (one per Write) to a test's
// Logf until end, then to stderr: Logf panics once the test is over, and a
// connection's goroutine may still log while the test ends.
type testLogWriter struct {
	mu    sync.Mutex
	ended bool
	logf  func(string, ...any)
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return os.Stderr.Write(p)
	}
	w.logf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// end sends what is logged from now on to stderr.
func (w *testLogWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

// RunN starts n independent servers as RunT does (for Redlock tests),
// each on its own port, with its own keyspace and, with WithManualClock,
// its own clock.
func RunN(t Tester, n int, opts ...Option) []*Server {
	t.Helper()
	if n < 0 {
		t.Fatalf("tumbler: RunN(%d): a negative number of servers", n)
		return nil
	}
	out := make([]*Server, n)
	for i := range out {
		out[i] = RunT(t, opts...)
	}
	return out
}

// ManualClock returns the server's manual clock, or nil when it runs on
// the system clock. Read it freely, but move it with the server's Advance
// and JumpWallClock: the clock's own Advance moves time without telling
// the server, so no Pause or CLIENT PAUSE ends, no blocking command times
// out and active expiry does not run until something else wakes them
// (the same holds for a clock shared by several servers through
// Config.Clock: each server's Advance wakes only that server; AdvanceAll
// moves it once and wakes them all).
func (s *Server) ManualClock() *expiry.ManualClock {
	mc, _ := s.cfg.Clock.(*expiry.ManualClock)
	return mc
}

// Advance moves a manual clock forward by d (both its monotonic and wall
// readings). Keys whose deadline has passed are gone when it returns, for
// lazy and active expiry alike (active expiry reclaims them before Advance
// returns, unless DEBUG SET-ACTIVE-EXPIRE 0 or a CLIENT PAUSE holds it);
// a Pause or CLIENT PAUSE that ends within d ends, the restart delay
// moves on, and blocking commands (BLPOP...) whose timeout d passes reply
// as timed out. As in Redis, a key lives through its deadline's millisecond:
// after SET k v PX 30000, Advance(30*time.Second) leaves it with PTTL 0,
// and one more millisecond removes it; so does a blocking command through
// its timeout's (BLPOP q 1 times out at Advance(time.Second +
// time.Millisecond); WaitBlocked tells when it has arrived), and a CLIENT
// PAUSE through its end's (CLIENT PAUSE 1000 ends at Advance(time.Second +
// time.Millisecond)). A Pause(d) ends at Advance(d). Advance
// does not wait for what it releases: a command a Pause held or a
// blocking command it timed out replies a moment later, so wait for the
// client's reply before looking at the keyspace. It panics when the server runs on
// the system clock, and when d is negative: a monotonic clock never goes
// back (JumpWallClock moves the wall clock either way).
//
// Clients that send absolute times from their own clock (rueidislock's
// SET NX PXAT, EXAT, PEXPIREAT) find the server's wall clock ahead of
// theirs by every Advance: their deadlines fall in its past, and SET NX
// PXAT then stores a key already gone, so every locker gets the lock.
// For them, use AdvanceMonotonic(d): TTLs move, the wall clock stays
// beside theirs (it does not follow real time, so it falls behind theirs
// by the real time the test takes).
func (s *Server) Advance(d time.Duration) {
	s.manualFor("Advance", d).Advance(d)
	s.woken()
}

// AdvanceMonotonic is Advance without the wall clock: TTLs, pauses and
// blocking timeouts move by d, and expired keys are gone when it
// returns, while TIME, EXPIRETIME and absolute deadlines (PXAT, EXAT,
// PEXPIREAT) keep reading the wall clock where it was. So a key's
// EXPIRETIME comes d earlier: its deadline is d nearer, on a wall clock
// that did not move (a lock set with PXAT T now expires at T-d by the
// server's wall clock; Advance leaves EXPIRETIME as it was). It is
// Advance(d) then JumpWallClock(-d) in one step, for clients that compute
// absolute deadlines from their own clock (rueidislock). It panics as
// Advance does.
func (s *Server) AdvanceMonotonic(d time.Duration) {
	s.manualFor("AdvanceMonotonic", d).AdvanceMono(d)
	s.woken()
}

// manualFor returns the manual clock that op (Advance, AdvanceMonotonic)
// moves by d, and panics when there is none or d is negative.
func (s *Server) manualFor(op string, d time.Duration) *expiry.ManualClock {
	mc := s.ManualClock()
	if mc == nil {
		panic("tumbler: " + op + " needs a server started WithManualClock")
	}
	if d < 0 {
		panic("tumbler: " + op + "(" + d.String() + "): the clock only moves forward (JumpWallClock moves the wall clock back)")
	}
	return mc
}

// AdvanceAll moves the manual clocks of several servers forward by d at
// once, as Advance does for one (a Redlock test's nodes, which RunN
// started WithManualClock, say): every clock first, then every server's
// expiry, pauses and timeouts, so no node sees time move before another's
// clock has. Servers that share a clock (Config.Clock) move it once and
// all wake, where calling Advance on each would move it once per server
// and wake only that one each time. It panics as Advance does, before
// moving anything.
func AdvanceAll(d time.Duration, servers ...*Server) {
	clocks := make([]*expiry.ManualClock, 0, len(servers))
	for _, s := range servers {
		mc := s.ManualClock()
		if mc == nil {
			panic("tumbler: AdvanceAll needs servers started WithManualClock")
		}
		if !slices.Contains(clocks, mc) {
			clocks = append(clocks, mc)
		}
	}
	if d < 0 {
		panic("tumbler: AdvanceAll(" + d.String() + "): the clock only moves forward (JumpWallClock moves the wall clock back)")
	}
	for _, mc := range clocks {
		mc.Advance(d)
	}
	for _, s := range servers {
		s.woken()
	}
}

// woken tells the server its manual clock has moved: pauses and blocking
// timeouts look again, and what expired is reclaimed.
func (s *Server) woken() {
	s.fx.notify()
	s.reclaimDue()
	s.eng.Kick()
}

// JumpWallClock moves only a manual clock's wall time, forwards or
// backwards, as an NTP step would. Deadlines are monotonic, so no TTL
// changes; absolute times change meaning: EXAT/PXAT/EXPIREAT convert
// against the new wall time and EXPIRETIME/PEXPIRETIME report deadlines
// in it, as do TIME and MONITOR. It panics when the server runs on the
// system clock. (Redis itself keeps deadlines in wall time, so a forward
// step expires its locks early: to model that, call Advance(d).)
func (s *Server) JumpWallClock(d time.Duration) {
	mc := s.ManualClock()
	if mc == nil {
		panic("tumbler: JumpWallClock needs a server started WithManualClock")
	}
	mc.JumpWall(d)
}
