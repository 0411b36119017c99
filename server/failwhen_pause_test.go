package server

import (
	"testing"
	"time"
)

// TestFailWhen_InstalledWhileAPauseHoldsTheCommand: a FailWhen predicate
// installed while a Pause holds a command sees that command when it runs,
// as a FailNextCmd queued meanwhile fails it. (It was skipped: whether
// predicates were on was read as the command arrived.)
func TestFailWhen_InstalledWhileAPauseHoldsTheCommand(t *testing.T) {
	for _, manual := range []bool{false, true} {
		var opts []Option
		if manual {
			opts = append(opts, WithManualClock())
		}
		srv := RunT(t, opts...)
		c := dial(t, srv.Addr())
		c.do("PING")
		srv.Pause(time.Hour)
		c.send(encode("SET", "a", "b"))
		if err := srv.WaitHeld(1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		stop := srv.FailWhen(func(r CommandRecord) (string, bool) { return "ERR pred", r.Name() == "set" })
		srv.Unpause()
		if got := c.read(); got != "-ERR pred\r\n" {
			t.Errorf("manual clock %v: SET held while FailWhen was installed = %q, want -ERR pred", manual, got)
		}
		stop()
		if _, ok := srv.Get("a"); ok {
			t.Errorf("manual clock %v: the failed SET ran", manual)
		}
		// CLIENT PAUSE likewise
		admin := dial(t, srv.Addr())
		admin.do("CLIENT", "PAUSE", "3600000", "WRITE")
		c.send(encode("SET", "a", "b"))
		if err := srv.WaitHeld(1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		stop = srv.FailWhen(func(r CommandRecord) (string, bool) { return "ERR pred2", r.Name() == "set" })
		admin.do("CLIENT", "UNPAUSE")
		if got := c.read(); got != "-ERR pred2\r\n" {
			t.Errorf("manual clock %v: SET held by CLIENT PAUSE while FailWhen was installed = %q, want -ERR pred2", manual, got)
		}
		stop()
	}
}
