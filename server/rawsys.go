//go:build !race && unix

package server

import (
	"syscall"
	"unsafe"
)

// rawSyscallIO is read(2) or write(2) of b (not empty) on fd, made with
// RawSyscall (see rawReader.rawIO).
func rawSyscallIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	r1, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r1), e
}
