package server

import (
	"crypto/tls"
	"net"
	"sync"
	"syscall"
)

// inputProbe answers "is any client's input waiting?" without the Go
// scheduler, for the active expiry (expireLoop): an epoll set of every
// client socket, level-triggered, that nothing ever blocks on.
//
// The expiry loop needs it because with GOMAXPROCS=1 it cannot ask the
// scheduler to poll the network and come straight back: a yield never
// polls, and any sleep waits in the poll for at least a millisecond when no
// socket is ready. So it pauses only when the probe says a client waits.
// Go's own poller is untouched: a socket may be in several epoll sets, and
// the kernel drops it from all of them when it is closed.
type inputProbe struct {
	mu     sync.RWMutex // add against close: never touch a closed fd number
	closed bool
	epfd   int
}

// newInputProbe returns a probe, or nil if epoll is unavailable (the
// expiry loop then pauses after every slice).
func newInputProbe() *inputProbe {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	return &inputProbe{epfd: fd}
}

// add watches nc's socket (a TLS connection's underlying one) for input.
func (p *inputProbe) add(nc net.Conn) {
	if p == nil {
		return
	}
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
}

// ready reports whether some watched socket has input (or has hung up).
// It never blocks. Only the expiry loop calls it, and never after close.
func (p *inputProbe) ready() bool {
	if p == nil {
		return true
	}
	var ev [1]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(p.epfd, ev[:], 0)
		if err == syscall.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

func (p *inputProbe) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		_ = syscall.Close(p.epfd)
	}
}
