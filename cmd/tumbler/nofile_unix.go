//go:build unix

package main

import (
	"fmt"
	"syscall"

	"github.com/tumblerdb/tumbler/server"
)

// reservedFDs are the descriptors kept for other than clients, as Redis's
// CONFIG_MIN_RESERVED_FDS (listeners, log, pid file, the poller's).
const reservedFDs = 32

// fitOpenFiles fits the open files limit and maxclients to each other,
// as redis-server's adjustOpenFilesLimit at start: it raises
// RLIMIT_NOFILE to maxclients + 32 where it can, or as far as it can,
// and otherwise lowers maxclients to what the limit leaves, with Redis's
// warnings. Without that, clients past the limit were neither served nor
// refused: their accept failed with "too many open files" and they
// waited. A limit that leaves no client is an error (Redis exits).
func fitOpenFiles(cfg *server.Config) (notices, warnings []string, err error) {
	maxClients := cfg.MaxClients
	if maxClients <= 0 {
		maxClients = 10000
	}
	want := uint64(maxClients) + reservedFDs
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		cfg.MaxClients = 1024 - reservedFDs
		return nil, []string{fmt.Sprintf("Unable to obtain the current NOFILE limit (%v), assuming 1024 and setting the max clients configuration accordingly.", err)}, nil
	}
	old := uint64(lim.Cur)
	if old >= want {
		return nil, nil, nil
	}
	best := want
	var setErr error
	for best > old {
		try := lim
		setRlimit(&try.Cur, best)
		setRlimit(&try.Max, best)
		if setErr = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &try); setErr == nil {
			break
		}
		if best < 16 {
			best = old
			break
		}
		best -= 16
	}
	best = max(best, old)
	if best >= want {
		return []string{fmt.Sprintf("Increased maximum number of open files to %d (it was originally set to %d).", want, old)}, nil, nil
	}
	if best <= reservedFDs {
		return nil, nil, fmt.Errorf("Your current 'ulimit -n' of %d is not enough for the server to start. Please increase your open file limit to at least %d. Exiting.", old, want)
	}
	cfg.MaxClients = int(best - reservedFDs)
	return nil, []string{
		fmt.Sprintf("You requested maxclients of %d requiring at least %d max file descriptors.", maxClients, want),
		fmt.Sprintf("Server can't set maximum open files to %d because of OS error: %s.", want, server.ErrText(setErr)),
		fmt.Sprintf("Current maximum open files is %d. maxclients has been reduced to %d to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.", best, cfg.MaxClients),
	}, nil
}

// setRlimit sets an Rlimit field (uint64 on Linux and macOS, int64 on
// FreeBSD).
func setRlimit[T int64 | uint64](f *T, v uint64) { *f = T(v) }
