package server

import (
	"math/bits"
	"unsafe"
)

// Read buffers past readerMaxIdle, which a cmdReader drops once a large
// request has run, go to a pool the connections share: a few buffers of
// each power-of-two size from 128 KB to 4 MB, at most readBufsHeld bytes
// of each size. A client that sends one large value after another
// (redis-benchmark -d 100000, a cache of rendered pages) would otherwise
// make a fresh buffer, zeroed, for each request, and give the GC as much
// again to collect as the values themselves. An idle connection still
// holds no large buffer; the pool holds at most 10 MB in all, and only
// once large requests have come. (A sync.Pool does not serve here: the
// GC empties it, and such a load makes the GC run often: without the
// binary's heap floor, cmd/tumbler/gcfloor.go, hundreds of times a
// second.)
// Redis, likewise, keeps a busy client's query buffer between requests
// and frees an idle one's in its cron.
//
// A pooled buffer comes back with another request's bytes in it: the
// reader only ever looks at what it read into it (buf[start:end]).
const (
	readBufMinShift = 17      // 128 KB, the first size past readerMaxIdle
	readBufMaxShift = 22      // 4 MB
	readBufsHeld    = 1 << 20 // bytes of buffers of one size kept at most (one buffer past it)
)

// readBufPool holds idle read buffers, by size: each channel holds the
// first bytes of buffers of one size.
type readBufPool [readBufMaxShift - readBufMinShift + 1]chan *byte

func newReadBufPool() *readBufPool {
	var p readBufPool
	for i := range p {
		p[i] = make(chan *byte, max(readBufsHeld>>(readBufMinShift+i), 1))
	}
	return &p
}

// sharedReadBufs is the pool every connection's reader uses.
var sharedReadBufs = newReadBufPool()

// class returns the channel for buffers of size bytes; ok is false for a
// size the pool does not hold (only powers of two from 128 KB to 4 MB).
func (p *readBufPool) class(size int) (ch chan *byte, ok bool) {
	if size <= readerMaxIdle || size > 1<<readBufMaxShift || size&(size-1) != 0 {
		return nil, false
	}
	return p[bits.Len(uint(size))-1-readBufMinShift], true
}

// readBufSize returns n rounded up to the pool's next size, when a pool
// size is at least n; otherwise n.
func readBufSize(n int) int {
	if n <= readerMaxIdle || n > 1<<readBufMaxShift {
		return n
	}
	return 1 << max(bits.Len(uint(n-1)), readBufMinShift)
}

// get returns a read buffer of size bytes: one from the pool when size is
// one of its sizes (readBufSize), its bytes not zeroed.
func (p *readBufPool) get(size int) []byte {
	if ch, ok := p.class(size); ok {
		select {
		case b := <-ch:
			return unsafe.Slice(b, size)
		default:
		}
	}
	return make([]byte, size)
}

// put gives b to the pool, if it holds buffers of its size and has room:
// the caller must hold nothing that points into b.
func (p *readBufPool) put(b []byte) {
	ch, ok := p.class(len(b))
	if !ok || cap(b) != len(b) {
		return
	}
	select {
	case ch <- unsafe.SliceData(b):
	default:
	}
}
