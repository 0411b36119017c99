//go:build unix

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
	cfg.MaxClients, notices, warnings, err = adjustOpenFiles(maxClients)
	return notices, warnings, err
}

// adjustOpenFiles is Redis's adjustOpenFilesLimit for maxClients, at
// start (fitOpenFiles) and at CONFIG SET maxclients (server.Config's
// FitOpenFiles, as Redis's updateMaxclients): it returns the maxclients
// the open files limit allows (maxClients itself when the limit is, or
// could be raised, high enough) and the lines to log.
//
// As in Redis, maxclients + 32 is computed in 32 bits (C's unsigned
// int): a maxclients within 32 of 2^32 needs no descriptors, and the
// warning prints maxclients as C's %d does. As Redis, each try sets the
// hard limit too, so a raise lowers a hard limit above it.
func adjustOpenFiles(maxClients int) (fit int, notices, warnings []string, err error) {
	want := uint64(uint32(maxClients) + reservedFDs)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024 - reservedFDs, nil, []string{fmt.Sprintf("Unable to obtain the current NOFILE limit (%v), assuming 1024 and setting the max clients configuration accordingly.", err)}, nil
	}
	old := uint64(lim.Cur)
	if old >= want {
		return maxClients, nil, nil, nil
	}
	// Redis tries want, then 16 fewer each time: a limit past
	// fs.nr_open always fails (EPERM), so the tries past it are skipped
	// (for a maxclients near 2^32 they are hundreds of millions of
	// system calls), which ends where Redis's tries end.
	ceiling := nrOpen()
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
		if ceiling > 0 && best > ceiling {
			best -= (best - ceiling + 15) / 16 * 16
		}
	}
	best = max(best, old)
	if best >= want {
		return maxClients, []string{fmt.Sprintf("Increased maximum number of open files to %d (it was originally set to %d).", want, old)}, nil, nil
	}
	if best <= reservedFDs {
		return maxClients, nil, nil, fmt.Errorf("Your current 'ulimit -n' of %d is not enough for the server to start. Please increase your open file limit to at least %d. Exiting.", old, want)
	}
	fit = int(best - reservedFDs)
	return fit, nil, []string{
		fmt.Sprintf("You requested maxclients of %d requiring at least %d max file descriptors.", int32(uint32(maxClients)), want),
		fmt.Sprintf("Server can't set maximum open files to %d because of OS error: %s.", want, server.ErrText(setErr)),
		fmt.Sprintf("Current maximum open files is %d. maxclients has been reduced to %d to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.", best, fit),
	}, nil
}

// nrOpen is Linux's fs.nr_open, the most RLIMIT_NOFILE can be set to;
// 0 where it cannot be read.
func nrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// setRlimit sets an Rlimit field (uint64 on Linux and macOS, int64 on
// FreeBSD).
func setRlimit[T int64 | uint64](f *T, v uint64) { *f = T(v) }
