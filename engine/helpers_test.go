package engine

import (
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
	"github.com/tumblerdb/tumbler/expiry"
)

type testEngine struct {
	*Engine
	t     *testing.T
	clock *expiry.ManualClock
}

// newTestEngine returns an engine on a manual clock and checks the expiry
// index invariants when the test ends.
func newTestEngine(t *testing.T) *testEngine {
	t.Helper()
	clock := expiry.NewManualClock(time.UnixMilli(1_700_000_000_000))
	e := New(Config{Clock: clock})
	t.Cleanup(func() {
		if msg := e.CheckInvariants(); msg != "" {
			t.Errorf("invariant violated after test: %s", msg)
		}
	})
	return &testEngine{Engine: e, t: t, clock: clock}
}

// do runs one command and returns its rendered reply without the trailing space.
func (te *testEngine) do(args ...string) string {
	w := &enginetest.TextWriter{}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	te.Exec(&Ctx{Args: bargs, W: w})
	return w.String()
}

func (te *testEngine) expect(want string, args ...string) {
	te.t.Helper()
	if got := te.do(args...); got != want {
		te.t.Errorf("%q: got %q, want %q", args, got, want)
	}
}
