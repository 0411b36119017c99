package server

import (
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

// WithManualClock runs the server on a manual clock that moves only when
// the test calls Advance (or JumpWallClock).
func WithManualClock() Option {
	return func(c *Config) { c.Clock = expiry.NewManualClock(time.Now()) }
}

// WithConfig applies fn to the Config.
func WithConfig(fn func(*Config)) Option { return func(c *Config) { fn(c) } }

// RunT starts a server on a free loopback port and closes it when the test
// ends. It fails the test if the server cannot start.
func RunT(t Tester, opts ...Option) *Server {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0"}
	for _, o := range opts {
		o(&cfg)
	}
	s := New(cfg)
	if err := s.Start(); err != nil {
		t.Fatalf("tumbler: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ManualClock returns the server's manual clock, or nil when it runs on
// the system clock.
func (s *Server) ManualClock() *expiry.ManualClock {
	mc, _ := s.cfg.Clock.(*expiry.ManualClock)
	return mc
}

// Advance moves a manual clock forward by d; keys whose deadline has passed
// are gone at once, for lazy and active expiry alike. It panics when the
// server runs on the system clock.
func (s *Server) Advance(d time.Duration) {
	mc := s.ManualClock()
	if mc == nil {
		panic("tumbler: Advance needs a server started WithManualClock")
	}
	mc.Advance(d)
	s.eng.Kick()
}
