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
		if ok, _, _ := r.acquired(0, 0, c.aSent+1000, at(c.aSent+10)); !ok {
			t.Fatalf("%s: first holder not recorded", c.name)
		}
		ok, expired, _ := r.acquired(0, 1, c.bSent+1000, at(c.bNow))
		if ok != c.wantOK || expired != c.wantExpired {
			t.Errorf("%s: ok=%v expired=%v, want %v %v", c.name, ok, expired, c.wantOK, c.wantExpired)
		}
	}
	r := newRegistry(1)
	r.acquired(0, 0, 1000, at(10))
	r.releasing(0, 0)
	if ok, _, _ := r.acquired(0, 1, 2000, at(20)); !ok {
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
	if ok, _, _ := r.acquired(0, 0, 1200+1000, at(1300)); !ok {
		t.Fatal("a not recorded")
	}
	calls := 0
	ok, expired, _ := r.acquired(0, 1, 0+1000, func() int64 { calls++; return 1400 })
	if ok || !expired || calls != 1 {
		t.Errorf("ok=%v expired=%v (clock read %d times): want a takeover judged at 1400", ok, expired, calls)
	}
}

// A grant counted as a violation hands its overlap to both leases: to
// the new holder from acquired, to the one it replaced from releasing;
// only the first loss of either claims it. A takeover of an expired
// lease, and a holder no one replaced, have none.
func TestRegistry_OverlapSharedByBothLeases(t *testing.T) {
	r := newRegistry(2)
	r.acquired(0, 0, 1000, at(10))
	_, _, ov := r.acquired(0, 1, 1100, at(100))
	if ov == nil {
		t.Fatal("a violation without an overlap")
	}
	if got := r.releasing(0, 0); got != ov {
		t.Fatalf("the replaced holder's releasing returned %p, want the grant's overlap %p", got, ov)
	}
	if got := r.releasing(0, 1); got != nil {
		t.Errorf("the holder's own releasing returned an overlap")
	}
	if !(overlaps{ov, nil}).claim() || (overlaps{nil, ov}).claim() {
		t.Errorf("an overlap claimed other than once")
	}
	// its record is gone: a later lease of the same worker has none
	r.acquired(0, 0, 3000, at(2000))
	if r.releasing(0, 0) != nil {
		t.Errorf("a later lease got an old overlap")
	}
	// a takeover of an expired lease is no overlap
	r.acquired(1, 0, 1000, at(10))
	if ok, expired, ov := r.acquired(1, 1, 2500, at(1500)); ok || !expired || ov != nil {
		t.Errorf("takeover: ok=%v expired=%v overlap=%v", ok, expired, ov)
	}
	if r.releasing(1, 0) != nil {
		t.Errorf("the holder of an expired lease got an overlap")
	}
}
