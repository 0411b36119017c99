package engine

import (
	"reflect"
	"testing"
	"time"
)

// Expiry publishes "expired", from a lookup that finds the key expired
// and from active expiry alike; with no class enabled nothing is
// published. compat/diff/notify_test.go compares every command's events
// with redis-server's.
func TestNotify_ExpiredLazyAndActive(t *testing.T) {
	e := newTestEngine(t)
	p := &recPublisher{}
	e.SetPublisher(p)
	e.expect("+OK", "SET", "quiet", "v")
	if len(p.calls) != 0 {
		t.Fatalf("published with notifications off: %q", p.calls)
	}
	flags, ok := ParseKeyspaceEvents("Ex")
	if !ok {
		t.Fatal("Ex refused")
	}
	e.SetNotifyKeyspaceEvents(flags)
	e.expect("+OK", "SET", "lazy", "v", "PX", "10")
	e.expect("+OK", "SET", "active", "v", "PX", "10")
	if len(p.calls) != 0 {
		t.Fatalf("SET published with only x enabled: %q", p.calls)
	}
	e.clock.Advance(20 * time.Millisecond)
	e.expect("(nil)", "GET", "lazy")
	if n, _, _ := e.ReclaimDue(100); n != 1 {
		t.Fatalf("ReclaimDue reclaimed %d", n)
	}
	want := []string{"publish __keyevent@0__:expired lazy", "publish __keyevent@0__:expired active"}
	if !reflect.DeepEqual(p.calls, want) {
		t.Fatalf("published %q, want %q", p.calls, want)
	}
	for _, pub := range p.pubs {
		if pub != nil {
			t.Fatal("an event was published on behalf of a client")
		}
	}
}

func TestNotify_FlagsRoundTrip(t *testing.T) {
	for in, want := range map[string]string{"": "", "KEA": "AKE", "gx$E": "g$xE", "Amn": "Am" /* n is lost after A, as in Redis */, "AAK": "AK", "lsh": "lsh"} {
		f, ok := ParseKeyspaceEvents(in)
		if !ok {
			t.Fatalf("%q refused", in)
		}
		if got := FormatKeyspaceEvents(f); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	if _, ok := ParseKeyspaceEvents("KEQ"); ok {
		t.Error("Q accepted")
	}
}
