//go:build unix

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// rawReader reads and writes a plain TCP or Unix socket connection's
// socket with read(2) and write(2) made by RawSyscall (rawsys.go), not
// through net.Conn.
//
// The calls are the same, but net.Conn makes them with syscall.Syscall,
// which tells the Go scheduler that the goroutine enters a system call.
// That bookkeeping costs more than itself: whenever the process had been
// idle, as a server is between requests, entering a system call wakes the
// runtime's monitor thread (sysmon), which then polls every 20 µs for a
// while, and may hand the processor to another thread when a write runs
// long (bench/RESULTS.md: at P1 a quarter of the server's context switches,
// and the work spread over four threads). A read or write of a
// non-blocking socket never waits, so the scheduler need not know of it.
//
// Waiting for input is still Go's netpoller's: read goes through
// RawConn.Read, which reads, and on EAGAIN waits for the socket to be
// readable (honouring read deadlines: the idle timeout) and reads again.
// It holds the connection's read lock only for that one call, as
// net.Conn.Read does, so Close and the read-ahead of a blocked client
// (blocking.go) work as before.
type rawReader struct {
	nc net.Conn
	rc syscall.RawConn

	// the read in progress: readFn is r.readOnce, bound once (a method
	// value made per call would allocate)
	buf    []byte
	n      int
	errno  syscall.Errno
	readFn func(fd uintptr) bool

	// lfd is the event loop's own descriptor of the socket while the
	// connection is served there (eventloop_linux.go), else -1: reads
	// and writes then use it, and never wait.
	lfd int
}

// The errors of reads that must not wait: the event loop's read found no
// input (errWouldBlock), or the next step needs the connection's own
// goroutine (errLeaveLoop). Neither ends the connection.
var (
	errWouldBlock = errors.New("no input yet")
	errLeaveLoop  = errors.New("leave the event loop")
)

// inLoop reports whether the event loop serves the connection.
func (r *rawReader) inLoop() bool { return r != nil && r.lfd >= 0 }

// Raw reads made, by every connection (tests: rawread_test.go).
var rawReads atomic.Int64

// newRawReader returns a raw reader for nc, or nil when nc is not a plain
// TCP or Unix socket connection (TLS, test pipes): those keep net.Conn's
// calls.
func newRawReader(nc net.Conn) *rawReader {
	if !rawReadSupported {
		return nil
	}
	sc := plainSocket(nc)
	if sc == nil {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawReader{nc: nc, rc: rc, lfd: -1}
	r.readFn = r.readOnce
	return r
}

// plainSocket returns nc as a syscall.Conn when it is a plain TCP or Unix
// socket connection, else nil.
func plainSocket(nc net.Conn) syscall.Conn {
	switch c := nc.(type) {
	case *net.TCPConn:
		return c
	case *net.UnixConn:
		return c
	}
	return nil
}

// readOnce is RawConn.Read's callback: false asks it to wait for input.
func (r *rawReader) readOnce(fd uintptr) bool {
	for {
		r.n, r.errno = rawSyscallIO(syscall.SYS_READ, fd, r.buf)
		if r.errno != syscall.EINTR {
			return r.errno != syscall.EAGAIN
		}
	}
}

// read reads into p (not empty), waiting for input as net.Conn.Read does.
func (r *rawReader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.lfd >= 0 {
		return r.loopRead(p)
	}
	r.buf = p
	err := r.rc.Read(r.readFn)
	r.buf = nil
	rawReads.Add(1)
	switch {
	case err != nil: // closed, or a deadline passed
		return 0, err
	case r.errno != 0:
		return 0, r.opError("read", r.errno)
	case r.n <= 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// loopRead is read for the event loop: one read(2) of its descriptor,
// errWouldBlock when there is no input.
func (r *rawReader) loopRead(p []byte) (int, error) {
	for {
		n, errno := rawSyscallIO(syscall.SYS_READ, uintptr(r.lfd), p)
		rawReads.Add(1)
		switch errno {
		case 0:
			if n <= 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errWouldBlock
		}
		return 0, r.opError("read", errno)
	}
}

// loopWrite is write for the event loop: as much of b as the socket takes
// now, through the loop's descriptor.
func (r *rawReader) loopWrite(b []byte) (int, error) {
	for {
		n, errno := rawSyscallIO(syscall.SYS_WRITE, uintptr(r.lfd), b)
		switch errno {
		case 0:
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, r.opError("write", errno)
	}
}

// write writes as much of b as the socket takes now, without waiting: the
// caller writes any rest with net.Conn.Write, which waits for room.
func (r *rawReader) write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	cerr := r.rc.Control(func(fd uintptr) { // fails once the connection is closed
		for {
			if n, errno = rawSyscallIO(syscall.SYS_WRITE, fd, b); errno != syscall.EINTR {
				return
			}
		}
	})
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

func (r *rawReader) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: r.nc.LocalAddr().Network(), Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
