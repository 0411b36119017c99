//go:build !linux

package server

import "net"

// unsentBytes is Linux-only (outq_linux.go): elsewhere SHUTDOWN's drain
// waits out its bound for a client that reads nothing.
func unsentBytes(net.Conn) (int, bool) { return 0, false }
