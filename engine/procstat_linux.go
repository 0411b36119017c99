package engine

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// procRSS returns the resident set size from /proc/self/statm, or 0.
func procRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// systemMemory returns the machine's memory (sysinfo), or 0.
func systemMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// cpuTimes returns the process's system and user CPU seconds, and those
// of its waited-for children (none: tumbler never forks).
func cpuTimes() (sys, user, childSys, childUser float64) {
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		sys, user = tv(ru.Stime), tv(ru.Utime)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		childSys, childUser = tv(ru.Stime), tv(ru.Utime)
	}
	return
}
