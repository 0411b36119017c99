//go:build unix

package server

import (
	"syscall"
	"testing"
)

// raiseNofile raises RLIMIT_NOFILE's soft limit to need, or as far as the
// hard limit allows, until the test ends. It returns the soft and hard
// limits now in force, and skips the test if it can read or raise neither.
func raiseNofile(t *testing.T, need uint64) (cur, hard uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	// Rlimit's fields are uint64 on Linux and macOS, int64 on FreeBSD.
	if uint64(lim.Cur) < need {
		old := lim
		setRlim(&lim.Cur, min(need, uint64(lim.Max)))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Skipf("cannot raise RLIMIT_NOFILE from %d to %d: %v", old.Cur, lim.Cur, err)
		}
		t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	return uint64(lim.Cur), uint64(lim.Max)
}

func setRlim[T int64 | uint64](f *T, v uint64) { *f = T(v) }
