//go:build race && unix

package server

import "syscall"

// Under the race detector the raw read loop reads and writes with
// syscall.Read and syscall.Write, which tell the detector that a write to
// any socket happens before a later read: tests that change the server
// (a command registered) and then send a request rely on it, as they did
// with net.Conn. RawSyscall tells it nothing. Only the call differs.
func rawSyscallIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	var n int
	var err error
	if trap == syscall.SYS_READ {
		n, err = syscall.Read(int(fd), b)
	} else {
		n, err = syscall.Write(int(fd), b)
	}
	if err != nil {
		return n, err.(syscall.Errno)
	}
	return n, 0
}
