//go:build unix

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
)

// The raw read loop (serveRaw) serves a plain TCP or Unix connection from
// inside one syscall.RawConn.Read call, reading the socket with read(2)
// itself, so that a connection whose last read drained the socket waits
// for more input without first trying a read that fails with EAGAIN.
//
// Go's net.Conn.Read cannot do that: every call first clears the socket's
// readiness (internal/poll's prepareRead) and so must try a read before it
// may wait, or it could miss input that arrived since. A pipelined client
// pays little for it, but a client that sends one request and waits for
// its reply (redis-benchmark -P 1, every lock client) pays a failed read
// per request: one system call in three (bench/RESULTS.md). Redis reads
// once per readiness event.
//
// Inside RawConn.Read the readiness is cleared once, before the first
// read; then, each time the callback returns false, it waits for the next
// readiness event (edge-triggered: every arrival after that read makes
// one) and calls the callback again. So after a read shorter than its
// buffer (the socket was drained at that moment) the loop may return false
// at once: any input that arrived after the read has made or will make an
// event. After any other read it reads again first.
//
// While the callback runs, the connection's read lock is held, so that
// anything else that would read the socket (the read-ahead of a blocked
// client, blocking.go) must run outside it: serveRaw leaves the call to
// wait for a blocked command and comes back after. And a Close from
// another goroutine would wait for the callback to return; every other
// goroutine therefore closes a client's socket with closeConn, which does
// not wait.

// errWouldBlock is a raw read's EAGAIN: no input now, wait for some. It
// is never sticky (framedConn.read passes it on without recording it).
var errWouldBlock = errors.New("read would block")

// rawReader reads a connection's socket with read(2), for serveRaw.
type rawReader struct {
	nc      net.Conn
	rc      syscall.RawConn
	drained bool // the last read was short (or failed with EAGAIN)
}

// Raw reads made, and those that found no input, by every connection
// (tests: rawread_test.go).
var rawReads, rawReadsEmpty atomic.Int64

// newRawReader returns a raw reader for nc, or nil when nc is not a plain
// TCP or Unix connection (TLS, test pipes): those keep net.Conn.Read.
func newRawReader(nc net.Conn) *rawReader {
	if !rawReadSupported {
		return nil
	}
	var sc syscall.Conn
	switch c := nc.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawReader{nc: nc, rc: rc}
}

// read reads once into p. It goes through RawConn.Control, which fails
// once the connection is closed (closeConn): a killed client reads nothing
// more, not even input it had already sent, as with net.Conn.Read.
func (r *rawReader) read(p []byte) (int, error) {
	n, errno, cerr := r.rawIO(syscall.SYS_READ, p)
	rawReads.Add(1)
	switch {
	case cerr != nil:
		return 0, cerr
	case errno == syscall.EAGAIN:
		r.drained = true
		rawReadsEmpty.Add(1)
		return 0, errWouldBlock
	case errno != 0:
		return 0, r.opError("read", errno)
	case n <= 0:
		return 0, io.EOF
	}
	r.drained = n < len(p)
	return n, nil
}

// write writes as much of b as the socket takes now, without waiting: the
// caller writes any rest with net.Conn.Write, which waits for room.
func (r *rawReader) write(b []byte) (int, error) {
	n, errno, cerr := r.rawIO(syscall.SYS_WRITE, b)
	switch {
	case cerr != nil:
		return 0, cerr
	case errno == syscall.EAGAIN:
		return 0, nil
	case errno != 0:
		return 0, r.opError("write", errno)
	}
	return n, nil
}

// rawIO is read(2) or write(2) on the socket, which is non-blocking, made
// with RawSyscall: the scheduler is not told of a call that never waits.
// Telling it (syscall.Read, net.Conn) costs more than the bookkeeping: a
// goroutine entering a system call wakes the runtime's monitor thread
// whenever the process was idle, as a server between requests is, and the
// monitor may hand the processor to another thread while the call runs
// (bench/RESULTS.md: a quarter of the server's context switches at P1).
func (r *rawReader) rawIO(trap uintptr, b []byte) (n int, errno syscall.Errno, cerr error) {
	if len(b) == 0 {
		return 0, 0, nil
	}
	cerr = r.rc.Control(func(fd uintptr) {
		for {
			if n, errno = rawSyscallIO(trap, fd, b); errno != syscall.EINTR {
				return
			}
		}
	})
	return n, errno, cerr
}

func (r *rawReader) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: r.nc.LocalAddr().Network(), Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// closeConn closes a client's connection from any goroutine without
// waiting for the connection's own goroutine, which may be inside its raw
// read loop (a Close would wait for it to return). The Close runs in a
// goroutine of its own; closeConn returns once that goroutine has marked
// the connection closed, so that from then on, as after a plain Close,
// every read and write of the connection fails.
func closeConn(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		_ = nc.Close()
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		_ = nc.Close()
		return
	}
	go nc.Close()
	for rc.Control(func(uintptr) {}) == nil {
		runtime.Gosched() // Close marks the connection at once, then waits
	}
}
