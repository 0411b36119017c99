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
		if ok, _ := r.acquired(0, 0, c.aSent+1000, c.aSent+10); !ok {
			t.Fatalf("%s: first holder not recorded", c.name)
		}
		ok, expired := r.acquired(0, 1, c.bSent+1000, c.bNow)
		if ok != c.wantOK || expired != c.wantExpired {
			t.Errorf("%s: ok=%v expired=%v, want %v %v", c.name, ok, expired, c.wantOK, c.wantExpired)
		}
	}
	r := newRegistry(1)
	r.acquired(0, 0, 1000, 10)
	r.releasing(0, 0)
	if ok, _ := r.acquired(0, 1, 2000, 20); !ok {
		t.Fatal("a released key was still recorded as held")
	}
}
