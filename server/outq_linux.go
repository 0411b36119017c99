package server

import (
	"crypto/tls"
	"net"
	"syscall"
	"unsafe"
)

// unsentBytes returns how many bytes of nc's output its socket holds that
// the peer has not acknowledged (SIOCOUTQ), or ok false when it cannot
// tell. A peer that reads nothing leaves it full and unchanged.
func unsentBytes(nc net.Conn) (n int, ok bool) {
	if tc, isTLS := nc.(*tls.Conn); isTLS {
		nc = tc.NetConn()
	}
	sc, isSC := nc.(syscall.Conn)
	if !isSC {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var v int32
	var errno syscall.Errno
	if rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&v)))
	}) != nil || errno != 0 {
		return 0, false
	}
	return int(v), true
}
