package server

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Read buffers past readerMaxIdle, which a cmdReader drops once a large
// request has run, go to a pool the connections share. A client that
// sends one large value after another (redis-benchmark -d 100000, a cache
// of rendered pages) would otherwise make a fresh buffer, zeroed, for each
// request, and give the GC as much again to collect as the values
// themselves. (A sync.Pool does not serve here: the GC empties it, and
// such a load makes the GC run often: without the binary's heap floor,
// cmd/tumbler/gcfloor.go, hundreds of times a second.)
//
// The pool's sizes are four to each power of two, from 80 KB to 4 MB,
// as jemalloc's size classes are: a large argument's buffer is rounded up
// to one, by at most a quarter, so the memory CLIENT LIST and
// maxmemory-clients count for a client reading one stays near Redis's
// (whose query buffer is its size rounded to jemalloc's class). It holds
// readBufsBudget bytes at most, counted in used_memory as any heap
// object, and lets them go once no large request has come for
// readBufsIdle, or when the server must free memory (before a forced
// collection: a maxmemory check, a FLUSHALL, MEMORY PURGE). An idle
// connection holds no large buffer; Redis, likewise, keeps a busy
// client's query buffer between requests and frees an idle one's in its
// cron.
//
// The pool also keeps readers' first buffers (cmdReader.firstBuf: 16 to
// 64 KB for the event loop's reads, 4 KB for a goroutine's), which a reader
// the event loop serves gives up after each batch that leaves
// nothing unparsed (cmdReader.dropIdle): in a sync.Pool, since they are
// taken again at once, mostly on the same P (the loop's next connection
// reads into the buffer the last one gave up), and the GC may have those
// left idle.
//
// A pooled buffer comes back with another request's bytes in it: the
// reader only ever looks at what it read into it (buf[start:end]).
const readBufsBudget = 8 << 20 // bytes of buffers the pool keeps at most

// readBufsIdle is how long the shared pool keeps its buffers without a
// large request.
const readBufsIdle = 2 * time.Second

// readBufSizes are the pool's sizes: 80, 96, 112, 128, 160, 192 KB ...
// 3.5 MB, 4 MB.
var readBufSizes = func() []int {
	var s []int
	for shift := 16; shift < 22; shift++ {
		for m := 4; m < 8; m++ {
			if size := m << (shift - 2); size > readerMaxIdle {
				s = append(s, size)
			}
		}
	}
	return append(s, 4<<20)
}()

// readBufPool holds idle read buffers: bufs[i] the first bytes of buffers
// of readBufSizes[i] bytes.
type readBufPool struct {
	small   sync.Pool    // *byte: the first bytes of a readerMinBuf buffer
	loop    [3]sync.Pool // *byte: the same of the loop's first buffers, 16, 32 and 64 KB (isLoopBuf)
	bufs    []chan *byte
	held    atomic.Int64  // bytes in bufs
	lastUse atomic.Int64  // unix ns of the last get or put of a pool size
	armed   atomic.Bool   // a sweep is due (sweep)
	idle    time.Duration // how long it keeps its buffers unused
}

// newReadBufPool returns a pool that lets its buffers go once unused for
// idle. (A field, not a variable tests change: a sweep armed by one test
// may run during the next.)
func newReadBufPool(idle time.Duration) *readBufPool {
	p := &readBufPool{bufs: make([]chan *byte, len(readBufSizes)), idle: idle}
	for i, size := range readBufSizes {
		p.bufs[i] = make(chan *byte, readBufsBudget/size)
	}
	return p
}

// sharedReadBufs is the pool every connection's reader uses.
var sharedReadBufs = newReadBufPool(readBufsIdle)

// readBufSize returns n rounded up to the pool's next size, when it has
// one at least n; otherwise n.
func readBufSize(n int) int {
	if n <= readerMaxIdle {
		return n
	}
	if i, _ := slices.BinarySearch(readBufSizes, n); i < len(readBufSizes) {
		return readBufSizes[i]
	}
	return n
}

// firstBufs returns the sync.Pool of readers' first buffers of size
// bytes (cmdReader.firstBuf), nil for another size.
func (p *readBufPool) firstBufs(size int) *sync.Pool {
	switch size {
	case readerMinBuf:
		return &p.small
	case readerLoopBuf:
		return &p.loop[0]
	case 2 * readerLoopBuf:
		return &p.loop[1]
	case 4 * readerLoopBuf:
		return &p.loop[2]
	}
	return nil
}

// class returns the channel for buffers of size bytes; ok is false for a
// size the pool does not hold.
func (p *readBufPool) class(size int) (ch chan *byte, ok bool) {
	if size <= readerMaxIdle {
		return nil, false
	}
	i, found := slices.BinarySearch(readBufSizes, size)
	if !found {
		return nil, false
	}
	return p.bufs[i], true
}

// get returns a read buffer of size bytes: one from the pool when size is
// one of its sizes (readBufSize), its bytes not zeroed.
func (p *readBufPool) get(size int) []byte {
	if sp := p.firstBufs(size); sp != nil {
		if b, _ := sp.Get().(*byte); b != nil {
			return unsafe.Slice(b, size)
		}
		return make([]byte, size)
	}
	if ch, ok := p.class(size); ok {
		p.lastUse.Store(time.Now().UnixNano())
		select {
		case b := <-ch:
			p.held.Add(-int64(size))
			return unsafe.Slice(b, size)
		default:
		}
	}
	return make([]byte, size)
}

// put gives b to the pool, if it holds buffers of its size and has room:
// the caller must hold nothing that points into b.
func (p *readBufPool) put(b []byte) {
	if sp := p.firstBufs(len(b)); sp != nil {
		if cap(b) == len(b) {
			sp.Put(unsafe.SliceData(b))
		}
		return
	}
	ch, ok := p.class(len(b))
	if !ok || cap(b) != len(b) {
		return
	}
	size := int64(len(b))
	p.lastUse.Store(time.Now().UnixNano())
	if p.held.Add(size) > readBufsBudget {
		p.held.Add(-size)
		return
	}
	select {
	case ch <- unsafe.SliceData(b):
		if p.armed.CompareAndSwap(false, true) {
			time.AfterFunc(p.idle, p.sweep)
		}
	default:
		p.held.Add(-size)
	}
}

// sweep empties the pool once it has gone p.idle unused, and
// otherwise looks again when it will have.
func (p *readBufPool) sweep() {
	if idle := time.Since(time.Unix(0, p.lastUse.Load())); idle < p.idle {
		time.AfterFunc(p.idle-idle, p.sweep)
		return
	}
	p.armed.Store(false) // a put from now on arms another sweep
	p.drain()
}

// drain lets every pooled buffer go to the GC.
func (p *readBufPool) drain() {
	for i, ch := range p.bufs {
		for {
			select {
			case <-ch:
				p.held.Add(-int64(readBufSizes[i]))
				continue
			default:
			}
			break
		}
	}
}
