package bench

import "testing"

// The checker's verdicts, with times in ns on the run's clock and a
// lease of 1000 (sent + TTL).
func TestRegistry_Verdicts(t *testing.T) {
	cases := []struct {
		name                string
		aSent, bSent, bNow  int64
		wantOK, wantExpired bool
	}{
		// b is granted while a's lease must still run, and its own too.
		{"overlap is a violation", 0, 100, 500, false, false},
		// a's lease may have ended before b's grant: a takeover.
		{"after a's lease", 0, 900, 1200, false, true},
		// b's reply was handled so late that its own lease may have ended:
		// it may have been granted before a, legitimately; not a violation.
		{"late registration", 500, 0, 1200, false, true},
	}
	for _, c := range cases {
		r := newRegistry(1)
		if ok, _ := r.acquired(0, 0, c.aSent+1000, at(c.aSent+10)); !ok {
			t.Fatalf("%s: first holder not recorded", c.name)
		}
		ok, expired := r.acquired(0, 1, c.bSent+1000, at(c.bNow))
		if ok != c.wantOK || expired != c.wantExpired {
			t.Errorf("%s: ok=%v expired=%v, want %v %v", c.name, ok, expired, c.wantOK, c.wantExpired)
		}
	}
	r := newRegistry(1)
	r.acquired(0, 0, 1000, at(10))
	r.releasing(0, 0)
	if ok, _ := r.acquired(0, 1, 2000, at(20)); !ok {
		t.Fatal("a released key was still recorded as held")
	}
}

func at(t int64) func() int64 { return func() int64 { return t } }

// TestRegistry_ClockReadAfterTheOtherRecord: b was granted with its reply
// read at 300 (its lease ends at 1000), then descheduled; meanwhile b's
// lock expired and a, sending at 1200, was granted and recorded. b, running
// again at 1400, must judge by a time read after a's record, which shows
// b's own lease ended: a takeover, not a violation. (A time read before
// acquired, 300, blamed the server: TestRun_TumblerKeepsShortLeases saw
// such false violations on a loaded machine.)
func TestRegistry_ClockReadAfterTheOtherRecord(t *testing.T) {
	r := newRegistry(1)
	if ok, _ := r.acquired(0, 0, 1200+1000, at(1300)); !ok {
		t.Fatal("a not recorded")
	}
	calls := 0
	ok, expired := r.acquired(0, 1, 0+1000, func() int64 { calls++; return 1400 })
	if ok || !expired || calls != 1 {
		t.Errorf("ok=%v expired=%v (clock read %d times): want a takeover judged at 1400", ok, expired, calls)
	}
}
