//go:build unix && !linux

package server

// rawReadSupported: the raw read loop is proved only on Linux (epoll
// with EPOLLET); other systems keep net.Conn.Read.
const rawReadSupported = false
