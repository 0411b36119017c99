package engine

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
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

// osName is INFO's os as Redis writes it from uname(2): "Linux
// 6.1.0-18-amd64 x86_64".
func osName() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "Linux"
	}
	// the fields are int8 on some architectures, uint8 on others
	str := func(p unsafe.Pointer, n int) string {
		b := unsafe.Slice((*byte)(p), n)
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(b)
	}
	return str(unsafe.Pointer(&u.Sysname), len(u.Sysname)) + " " +
		str(unsafe.Pointer(&u.Release), len(u.Release)) + " " +
		str(unsafe.Pointer(&u.Machine), len(u.Machine))
}
