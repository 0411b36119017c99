// Package expiry holds tumbler's notion of time and its deadline index.
//
// Deadlines are kept on a monotonic clock measured in milliseconds, so a jump
// of the wall clock never moves a deadline (Redis stores wall-clock deadlines
// and expires locks early when the clock jumps forward). The monotonic
// origin is the wall time at which the clock was created, which keeps values
// in the same range as Redis's (so overflow checks agree) while only the
// monotonic reading advances them.
//
// # Concurrency
//
// SystemClock and ManualClock are safe for concurrent use. Index is not: its
// owner (the engine) serialises access to it. Nothing in this package starts a
// goroutine, takes a lock around the index, or reads the time on its own.
package expiry

import (
	"sync"
	"time"
)

// Clock supplies monotonic time for deadlines and wall time for conversions
// to and from absolute Unix times (EXPIREAT, PXAT, PEXPIRETIME, TIME).
type Clock interface {
	// Mono returns monotonic milliseconds. It never goes backwards.
	Mono() int64
	// Wall returns the wall-clock time.
	Wall() time.Time
}

// Read returns c's monotonic and wall readings (Unix ms) taken at one
// instant, for converting between them (WallToMono, MonoToWall). Readings
// taken at different instants convert with an error of the time between
// them: a PXAT deadline converted with a monotonic reading from before a
// wait expires early by the wait. SystemClock and ManualClock give one
// instant; any other Clock is read twice, Mono first.
func Read(c Clock) (mono, wallMs int64) {
	if p, ok := c.(interface{ read() (int64, int64) }); ok {
		return p.read()
	}
	mono = c.Mono()
	return mono, c.Wall().UnixMilli()
}

// SystemClock is the real clock: Go's monotonic reading for Mono and
// time.Now for Wall.
type SystemClock struct {
	base     time.Time
	originNs int64 // base's wall time, Unix ns
}

// NewSystemClock returns a clock whose monotonic origin is the current wall
// time.
func NewSystemClock() *SystemClock {
	now := time.Now()
	return &SystemClock{base: now, originNs: now.UnixNano()}
}

// Mono implements Clock.
func (c *SystemClock) Mono() int64 { return c.MonoAt(c.Elapsed()) }

// Elapsed is the monotonic time since the clock was made. With MonoAt it
// lets a caller that also times work read the clock once.
func (c *SystemClock) Elapsed() time.Duration { return time.Since(c.base) }

// MonoAt is Mono at the moment Elapsed returned elapsed: the origin plus
// elapsed, in whole ms. The origin keeps its sub-millisecond part, so that
// until the wall clock is stepped Mono and Wall's Unix ms tick together (an
// origin rounded to a ms put them up to 1 ms apart, and a PXAT deadline
// that much early).
func (c *SystemClock) MonoAt(elapsed time.Duration) int64 {
	return floorDiv(c.originNs+int64(elapsed), int64(time.Millisecond))
}

// Wall implements Clock.
func (c *SystemClock) Wall() time.Time { return time.Now() }

// read is Read's: one time.Now gives both readings.
func (c *SystemClock) read() (int64, int64) {
	now := time.Now()
	return c.MonoAt(now.Sub(c.base)), now.UnixMilli()
}

// floorDiv is a/b rounded down (b > 0), as UnixMilli rounds times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// ManualClock is a clock that moves only when told to. Tests use it to make
// expiry deterministic.
type ManualClock struct {
	mu   sync.Mutex
	mono int64
	frac time.Duration // the monotonic time past mono, under a millisecond
	wall time.Time
}

// NewManualClock returns a manual clock starting at wall time start; its
// monotonic reading starts at start in Unix milliseconds.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{mono: start.UnixMilli(), wall: start}
	// The monotonic clock's millisecond turns when the wall clock's does.
	if c.frac = start.Sub(time.UnixMilli(c.mono)); c.frac < 0 {
		c.frac = 0
	}
	return c
}

// Mono implements Clock.
func (c *ManualClock) Mono() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Wall implements Clock.
func (c *ManualClock) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// read is Read's: both readings under one lock.
func (c *ManualClock) read() (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono, c.wall.UnixMilli()
}

// Advance moves both the monotonic and the wall clock forward by d.
// Steps under a millisecond add up: ten Advance(100*time.Microsecond)
// move Mono by one millisecond, as one Advance(time.Millisecond) does.
// A negative d is ignored: monotonic time never goes backwards.
func (c *ManualClock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.advanceMonoLocked(d)
	c.wall = c.wall.Add(d)
	c.mu.Unlock()
}

func (c *ManualClock) advanceMonoLocked(d time.Duration) {
	c.mono += int64(d / time.Millisecond)
	if c.frac += d % time.Millisecond; c.frac >= time.Millisecond {
		c.mono++
		c.frac -= time.Millisecond
	}
}

// AdvanceMono moves only the monotonic clock forward by d, as Advance
// followed by JumpWall(-d) would, in one step: no reader sees the wall
// clock moved between the two. A negative d is ignored.
func (c *ManualClock) AdvanceMono(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.advanceMonoLocked(d)
	c.mu.Unlock()
}

// JumpWall moves only the wall clock, forwards or backwards, as an NTP step
// or an operator would. Deadlines do not move; absolute-time conversions do.
func (c *ManualClock) JumpWall(d time.Duration) {
	c.mu.Lock()
	c.wall = c.wall.Add(d)
	c.mu.Unlock()
}

// WallToMono converts an absolute Unix time in milliseconds to a monotonic
// deadline using readings taken at the same instant: the result is
// monoNow + (unixMs - wallNowMs), saturating instead of overflowing.
func WallToMono(unixMs, monoNow, wallNowMs int64) int64 {
	return satAdd(monoNow, satSub(unixMs, wallNowMs))
}

// MonoToWall converts a monotonic deadline back to Unix milliseconds.
func MonoToWall(deadline, monoNow, wallNowMs int64) int64 {
	return satAdd(wallNowMs, satSub(deadline, monoNow))
}

const (
	maxInt64 = int64(^uint64(0) >> 1)
	minInt64 = -maxInt64 - 1
)

func satAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return maxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return minInt64
	}
	return s
}

func satSub(a, b int64) int64 {
	if b == minInt64 {
		if a >= 0 {
			return maxInt64
		}
		return a - b
	}
	return satAdd(a, -b)
}
