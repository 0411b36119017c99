package server

import (
	"bytes"
	"errors"
	"io"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// cmdReader reads the requests of one connection, after framedConn has
// checked their framing and limits. It is the hot path of every command,
// so it parses multibulk requests in place: a command's Args point into the
// reader's buffer and the slices holding them are reused, so reading a
// pipeline costs no allocation per command. redcon.Reader, which it
// replaces there, copies every request and allocates its argument slice.
//
// The Args of the commands returned by ReadCommands are valid until the next
// call: whatever keeps an argument after its command (MULTI's queue, blocked
// commands, the slow log, the command log, the keyspace) copies it, as it
// had to for redcon too since redcon reuses nothing but does not promise
// otherwise. Inline requests are split as Redis splits them
// (sdssplitargs), their words copied. Use a cmdReader from one goroutine.
type cmdReader struct {
	rd         io.Reader
	buf        []byte
	start, end int          // unparsed input: buf[start:end]
	pool       *readBufPool // where buf comes from and goes back to past readerMaxIdle (readbuf.go)
	cmds       []redcon.Command
	args       [][]byte // backing array of every Args of the last batch
	inl        []byte   // the words of the last batch's inline requests
	inlines    int      // inline requests parsed (tests compare the others with redcon's)
	wholes     int      // multibulk requests parsed from their start (tests: resumeAt)
	used       int      // bytes of the last batch's requests (CLIENT LIST qbuf)
	// argsDirty and cmdsDirty are how far args and cmds have been
	// written since release last cleared them (mark): past their length,
	// they may still point into the buffer.
	argsDirty, cmdsDirty int

	// waiting, if set, is where the reader publishes what it holds each
	// time it waits for input: the bytes of a partial request, and the
	// free room of its buffer (packWaiting). CLIENT LIST reads it from
	// other connections' goroutines.
	waiting   *atomic.Uint64
	published uint64 // the last value stored in waiting
	// waitArgv, if set, is where it publishes the bytes of the partial
	// request's complete arguments (CLIENT LIST's argv-mem).
	waitArgv      *atomic.Int64
	publishedArgv int64
	onWait        func() // called when either changed (maxmemory-clients: evict.go)

	// Where the parse of a partial multibulk request stopped, as Redis's
	// processMultibulkBuffer would: pskip bytes of it parsed (its header,
	// its complete arguments, the header line of the argument it is in),
	// whose arguments' bytes are pargv; pneed is the bytes the argument it
	// is in needs to be complete (0 when not known). Redis keeps only the
	// rest in its query buffer.
	pskip, pargv, pneed int
	// Where the next parse of that request goes on from, rather than
	// start over (parseMultibulk): its complete arguments (resumeArgs,
	// their bytes resumeArgv) end at resumeAt, the next one's header;
	// resumeAt is 0 when there is nothing to go on from.
	resumeArgs, resumeAt, resumeArgv int

	// errNext: the last batch stopped before a bad request, whose error
	// the next call returns without reading (the event loop must make
	// that call without waiting for input: eventloop_linux.go).
	errNext bool
	// loopBuf is the size of the first buffer of the event loop's reads
	// (firstBuf); 0 until the first. loopSmall counts the reads in a row
	// that took a quarter of it or less (loopRead).
	loopBuf, loopSmall int
	// lent: the loop took this reader's arrays after its last batch
	// (lendArrays), so its next may borrow the loop's (borrowArrays)
	lent bool
	// once makes a call read at most once, and report errWouldBlock
	// when that read does not complete a request (the event loop: a
	// large request must not hold it for the whole of its transfer).
	once bool
}

// partial is how many bytes of an incomplete request the reader holds.
func (r *cmdReader) partial() int { return r.end - r.start }

// The protocol errors the reader itself reports, worded as redcon's: the
// framer has already refused nearly everything else.
var (
	errReaderBulk  = errors.New("Protocol error: invalid bulk length")
	errReaderMbulk = errors.New("Protocol error: invalid multibulk length")
	// Redis's processInlineBuffer's reply (and redcon's)
	errReaderQuotes = errors.New("Protocol error: unbalanced quotes in request")
)

const (
	readerMinBuf    = 4 * 1024  // the buffer's size while requests are small
	readerLoopBuf   = 16 * 1024 // the same for a read the event loop makes (firstBuf)
	readerMaxIdle   = 64 * 1024 // a larger buffer is dropped once empty (to its pool: readbuf.go)
	readerMinReadSz = 1024      // the least room left free for a read
	readerJumpMax   = 256 << 10 // a partial argument's buffer up to this is sized at once
	readerMaxArgs   = 4096      // a larger argument array is dropped after its batch
)

// trim drops what a large batch grew once the batch has run and the
// connection waits for more: an argument array past readerMaxArgs
// entries (24 bytes each), the command array and inline arena likewise,
// and the read buffer past readerMaxIdle when no partial request is in
// it. Redis frees a large query buffer and argv after the command; kept,
// a connection that once sent SADD with 100000 members held about 4 MB
// for as long as it stayed open.
func (r *cmdReader) trim() {
	if cap(r.args) > readerMaxArgs {
		r.args, r.argsDirty = nil, 0
	}
	if cap(r.cmds) > readerMaxArgs {
		r.cmds, r.cmdsDirty = nil, 0
	}
	if cap(r.inl) > readerMaxIdle {
		r.inl = nil
	}
	if r.start == r.end && len(r.buf) > readerMaxIdle {
		r.release()
		r.buf, r.start, r.end = nil, 0, 0
	}
}

// release gives up r.buf (to its pool, if it has one): the argument and
// command arrays, reused from batch to batch, still point into it past
// their length, and would keep a dropped buffer of any size alive for as
// long as the connection stays open (twenty idle clients that had each
// sent a 3 MB value held 60 MB).
func (r *cmdReader) release() {
	r.mark()
	clear(r.args[:r.argsDirty])
	clear(r.cmds[:r.cmdsDirty])
	r.argsDirty, r.cmdsDirty = 0, 0
	r.pool.put(r.buf)
}

// mark records how far args and cmds have been written, before they are
// cut shorter.
func (r *cmdReader) mark() {
	r.argsDirty = max(r.argsDirty, len(r.args))
	r.cmdsDirty = max(r.cmdsDirty, len(r.cmds))
}

// dropIdle gives up the read buffer when it holds nothing (no partial
// request): the event loop calls it after each batch, since it reads a
// socket only once input has come, so that a connection waiting for its
// next request holds no buffer, as Redis frees an idle client's query
// buffer (in its cron, after two seconds). An idle connection held 4 KB
// more than Redis's (13.1 KB against 9.5 KB at 5000 connections). The
// next fill takes a buffer from the pool, mostly the one just given up,
// which the loop's next connection then reads into.
func (r *cmdReader) dropIdle() {
	if r.start != r.end || r.buf == nil {
		return
	}
	r.release()
	r.buf, r.start, r.end = nil, 0, 0
	r.publishWaiting()
}

// A batch of the loop's reads, up to 64 KB, may have thousands of
// commands (a pipeline of PINGs: 4600); their arrays, 72 bytes a
// command, would stay with a connection that then went quiet, and
// nothing counts them (1000 clients that had each sent 2400 PINGs at once
// held 160 MB). Let go after each batch, they were made again for the
// next (-P 1000 PINGs: 50% more CPU a request). So the loop lends arrays
// past loopIdleArgs from one connection's batch to the next one's
// (ioLoop.spare), as it does its read buffers; a connection on its
// goroutine keeps its own (trim: up to readerMaxArgs).

// lendArrays gives up the argument and command arrays, cleared, when
// either is larger than loopIdleArgs: the loop calls it once a batch has
// run (nothing refers to them any more; a partial request keeps no
// arguments). It returns nil, nil otherwise.
func (r *cmdReader) lendArrays() (args [][]byte, cmds []redcon.Command) {
	r.trim() // past readerMaxArgs, not lent (a goroutine's batch, back on the loop)
	if r.lent = cap(r.args) > loopIdleArgs || cap(r.cmds) > loopIdleArgs; !r.lent {
		return nil, nil
	}
	r.mark()
	clear(r.args[:r.argsDirty])
	clear(r.cmds[:r.cmdsDirty])
	args, cmds = r.args[:0], r.cmds[:0]
	r.args, r.cmds, r.argsDirty, r.cmdsDirty = nil, nil, 0, 0
	return args, cmds
}

// borrowArrays takes arrays lendArrays gave up, for a reader that lent
// its own after its last batch (whose batches are large) and holds none;
// it reports whether it did. Another (a new connection, one that sends
// a BLPOP) would take them off the loop with it.
func (r *cmdReader) borrowArrays(args [][]byte, cmds []redcon.Command) bool {
	if !r.lent || r.args != nil || r.cmds != nil {
		return false
	}
	r.args, r.cmds = args, cmds
	return true
}

// shrink moves what the reader holds into a buffer of readerMinBuf bytes,
// when it fits and the buffer is larger: the event loop calls it as it
// hands a batch to the connection's goroutine (a command that blocks,
// BLPOP, or runs long), which may then wait with it for a long time
// (1000 clients blocked after a 16 KB read would hold 16 MB; they held 4
// MB with 4 KB reads). The arguments of the batch's commands are rebased
// onto the new buffer. The old one is left to the GC, not given
// to the pool: it is never written again, so anything that still holds
// a slice of it reads what it always read.
func (r *cmdReader) shrink() {
	if len(r.buf) <= readerMinBuf || r.end > readerMinBuf {
		return
	}
	old, nb := r.buf, r.pool.get(readerMinBuf)
	copy(nb, old[:r.end])
	base := uintptr(unsafe.Pointer(unsafe.SliceData(old)))
	rebase := func(b []byte) []byte {
		if cap(b) == 0 {
			if b != nil { // an empty argument: it may point into old too
				return nb[:0:0]
			}
			return b
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p < base || p-base+uintptr(len(b)) > uintptr(r.end) {
			return b // not in the buffer (an inline request's words)
		}
		off := int(p - base)
		return nb[off : off+len(b) : off+len(b)]
	}
	// what is past the batch's arguments and commands (an earlier
	// batch's) may point anywhere into old: cleared
	r.mark()
	clear(r.args[len(r.args):r.argsDirty])
	clear(r.cmds[len(r.cmds):r.cmdsDirty])
	r.argsDirty, r.cmdsDirty = len(r.args), len(r.cmds)
	for i, a := range r.args {
		r.args[i] = rebase(a)
	}
	for _, c := range r.cmds { // (its Raw is never set: addCmd)
		for j, a := range c.Args { // (in an array args outgrew, or args itself: once is enough)
			c.Args[j] = rebase(a)
		}
	}
	r.buf = nb
	r.publishWaiting()
}

func newCmdReader(rd io.Reader) *cmdReader { return &cmdReader{rd: rd, pool: sharedReadBufs} }

// ReadCommands returns the complete requests read so far, reading from the
// connection until there is at least one.
func (r *cmdReader) ReadCommands() ([]redcon.Command, error) {
	r.mark()
	r.cmds = r.cmds[:0]
	r.args = r.args[:0]
	r.inl = r.inl[:0]
	r.used = 0
	r.errNext = false
	reads := 0
	for {
		if r.start < r.end {
			if err := r.parse(); err != nil {
				if len(r.cmds) > 0 {
					// Run the requests before the bad one first; the next
					// call stops at it again and returns the error.
					r.errNext = true
					return r.cmds, nil
				}
				return nil, err
			}
			if len(r.cmds) > 0 {
				r.publishWaiting() // what the batch leaves for after it
				return r.cmds, nil
			}
		}
		r.publishWaiting()
		if r.once && reads > 0 {
			return nil, errWouldBlock
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
		reads++
	}
}

// firstBuf is the size of the buffer a read into an empty reader starts
// with. The event loop reads a ready socket once (r.once) and gives the
// buffer back after the batch (dropIdle), so its reads take loopBuf: 16
// KB, as Redis reads PROTO_IOBUF_LEN, doubled up to readerMaxIdle for a
// connection whose reads fill it (loopRead), as Redis reads all the room
// of a query buffer that has grown past 16 KB. With 4 KB, a SET of a 4 KB
// value took two reads and a second trip through the loop's poll, and 16
// pipelined SETs of 1 KB values five of each; Redis makes one. A
// connection served by a goroutine keeps its buffer while it waits for
// input, so it starts with 4 KB.
func (r *cmdReader) firstBuf() int {
	if !r.once {
		return readerMinBuf
	}
	if r.loopBuf == 0 {
		r.loopBuf = readerLoopBuf
	}
	return r.loopBuf
}

// loopRead sizes the loop's next first buffer after a read of n bytes
// into room bytes of a first buffer: twice as large when the read filled
// it (within loopFullSlack: the framer holds back the start of a header
// line a read ends in), half after loopShrinkAfter reads in a row that
// took a quarter of it or less. (Halved at the first such read, a client
// that sent a 20 KB value and a GET by turns had its buffer go from 32 KB
// to 16 KB and back, and every value took two reads.)
func (r *cmdReader) loopRead(n, room int) {
	switch {
	case n >= room-loopFullSlack:
		r.loopSmall = 0
		if r.loopBuf < readerMaxIdle {
			r.loopBuf *= 2
		}
	case n > r.loopBuf/4 || r.loopBuf == readerLoopBuf:
		r.loopSmall = 0
	default:
		if r.loopSmall++; r.loopSmall == loopShrinkAfter {
			r.loopSmall = 0
			r.loopBuf /= 2
		}
	}
}

const (
	loopFullSlack   = 64 // bytes short of its room a read still counts as filling it
	loopShrinkAfter = 16 // small reads in a row that halve the loop's first buffer
	loopIdleArgs    = 512
)

// isLoopBuf reports whether a buffer of n bytes has a size firstBuf gives
// the loop's reads.
func isLoopBuf(n int) bool {
	return n >= readerLoopBuf && n <= readerMaxIdle && n&(n-1) == 0
}

// fill reads more input, making room for it first: the unparsed bytes move
// to the front, and the buffer grows when they fill it.
func (r *cmdReader) fill() error {
	if r.start == r.end {
		r.start, r.end = 0, 0
		// An empty buffer larger than readerMaxIdle goes; so does one
		// the loop reads into that is not its first buffer's size (a
		// goroutine's, back in the loop), and one of the loop's sizes
		// in a goroutine.
		if n := len(r.buf); n > readerMaxIdle || n > 0 && (n != r.firstBuf() && (r.once || isLoopBuf(n))) {
			r.release()
			r.buf = nil
		}
	}
	first := r.buf == nil
	if first {
		r.buf = r.pool.get(r.firstBuf())
	}
	if len(r.buf)-r.end < readerMinReadSz {
		n := r.end - r.start
		if n+readerMinReadSz > len(r.buf) || r.start == 0 {
			// The buffer grows geometrically, so that a request of any
			// size is copied a bounded number of times over (growing
			// by what the next argument needed, a 1 MB request of small
			// arguments was read into about 200 buffers, each a copy of
			// the last). By half again while the arguments are small,
			// which keeps the room left over (counted as the client's
			// memory, as Redis counts its query buffer's) under half.
			// An argument past readerMaxIdle is given the size its
			// header announces at once, up to readerJumpMax, as Redis
			// sizes its query buffer for a large argument (a 100 KB
			// value made five buffers of 4 to 64 KB, each zeroed and
			// copied into the next), rounded up to the size of a pool
			// the connections share (readbuf.go); past that, it doubles
			// as the data comes, to no more than the request needs when
			// the argument is most of it: a client cannot reserve more
			// than twice what it sent. Behind other large arguments it
			// grows by half again at least (to what the request needs
			// so far, 40 arguments of 100 KB were read into 41 buffers).
			size := max(len(r.buf)+len(r.buf)/2, n+readerMinReadSz)
			if r.pneed > 0 {
				need := max(r.pneed, n) + readerMinReadSz
				switch {
				case r.pneed-r.pskip <= readerMaxIdle: // a small argument
					size = max(size, need)
				case need <= readerJumpMax:
					size = readBufSize(need)
				case r.pskip <= len(r.buf)/2: // a large argument, most of the request
					size = min(max(2*len(r.buf), n+readerMinReadSz), need)
				default: // a large argument behind others
					size = max(size, min(2*len(r.buf), need))
				}
			}
			nb := r.pool.get(size)
			copy(nb, r.buf[r.start:r.end])
			r.release() // (no command points into it: fill runs before any)
			r.buf = nb
		} else {
			copy(r.buf, r.buf[r.start:r.end])
		}
		r.start, r.end = 0, n
	}
	room := len(r.buf) - r.end
	n, err := r.rd.Read(r.buf[r.end:])
	if first && r.once && n > 0 {
		r.loopRead(n, room)
	}
	if n > 0 {
		r.end += n
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse appends to r.cmds every complete request in buf[start:end] and
// advances start past them.
func (r *cmdReader) parse() error {
	r.pskip, r.pargv, r.pneed = 0, 0, 0
	for r.start < r.end {
		b := r.buf[r.start:r.end]
		var n int
		var err error
		if b[0] == '*' {
			n, err = r.parseMultibulk(b)
		} else {
			n, err = r.parseInline(b)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // incomplete
		}
		r.start += n
		r.used += n
	}
	return nil
}

// publishWaiting publishes what the reader holds as it waits for input,
// when that changed: a partial request, and the room its buffer has (all
// of it when it holds nothing, as fill then starts over).
func (r *cmdReader) publishWaiting() {
	if r.waiting == nil {
		return
	}
	partial, free := r.end-r.start-r.pskip, r.redisFree(len(r.buf)-r.end)
	if r.end == r.start {
		free = len(r.buf)
	}
	v, argv := packWaiting(partial, free), int64(r.pargv)
	if v == r.published && argv == r.publishedArgv {
		return
	}
	r.published = v
	r.waiting.Store(v)
	if r.waitArgv != nil && argv != r.publishedArgv {
		r.waitArgv.Store(argv)
	}
	r.publishedArgv = argv
	if r.onWait != nil {
		r.onWait()
	}
}

// queryBuf returns CLIENT LIST's qbuf and qbuf-free for the connection
// whose goroutine calls it, in the middle of a batch: as in Redis, whose
// query buffer keeps a batch's requests until all of them have run, qbuf
// counts the batch's requests and whatever was read after them, and
// qbuf-free the rest of the buffer.
func (r *cmdReader) queryBuf() (qbuf, free int) {
	return r.used + r.partial(), r.redisFree(len(r.buf) - r.end)
}

// protoMbulkBigArg is Redis's PROTO_MBULK_BIG_ARG: an argument this large
// is read into a query buffer sized for it whole.
const protoMbulkBigArg = 32 * 1024

// redisFree is the free room of the buffer, free, or the room Redis's
// query buffer has when more: once processMultibulkBuffer has read the
// header of an argument of protoMbulkBigArg bytes or more, it sizes the
// buffer for the rest of the argument (sdsMakeRoomForNonGreedy), and that
// room is the client's memory (qbuf-free, tot-mem). tumbler's buffer
// grows as the data comes, past readerJumpMax; counted as Redis's would
// be, a client that announces an argument larger than maxmemory-clients
// is evicted once its first bytes are read, as in Redis, not once it has
// sent most of it. Only once no request is left to run before it (no
// command parsed ahead of it in this batch): Redis parses the header after
// the commands before it have run, and not while one of them is blocked.
func (r *cmdReader) redisFree(free int) int {
	if len(r.cmds) == 0 && r.pneed-r.pskip >= protoMbulkBigArg+2 {
		free = max(free, r.pneed-(r.end-r.start))
	}
	return free
}

// packWaiting packs a waiting reader's partial request and free room, each
// clipped to 32 bits, for cmdReader.waiting.
func packWaiting(partial, free int) uint64 {
	return uint64(min(partial, math.MaxUint32))<<32 | uint64(min(free, math.MaxUint32))
}

// unpackWaiting is packWaiting's inverse.
func unpackWaiting(v uint64) (partial, free int) {
	return int(v >> 32), int(v & math.MaxUint32)
}

// parseMultibulk parses one "*N\r\n$L\r\n...\r\n" request at the start of
// b. It returns the bytes it took, 0 when b holds only part of it.
func (r *cmdReader) parseMultibulk(b []byte) (int, error) {
	count, i := lineNum(b, 1)
	switch {
	case i == 0:
		return 0, nil
	case i < 0 || count <= 0:
		return 0, errReaderMbulk
	}
	if at := r.resumeAt; at > 0 {
		// A request that was partial when last parsed: scan on from where
		// that stopped, keeping no arguments, and parse it whole only
		// once it is complete. Parsed from its start each time, a large
		// request of small arguments arriving a little at a time cost
		// time in the square of its size (500,000 arguments trickled in
		// 1 KB writes: 1.4 s of CPU, Redis 0.12 s).
		r.resumeAt = 0
		if complete, err := r.scanMultibulk(b, count, r.resumeArgs, at, r.resumeArgv); !complete {
			return 0, err
		}
	}
	r.wholes++
	first := len(r.args)
	argv := 0 // the bytes of its complete arguments
	for k := 0; k < count; k++ {
		hdr := i
		if i >= len(b) {
			return r.stop(first, k, hdr, i, argv, 0)
		}
		if b[i] != '$' {
			ch := b[i]
			r.mark()
			r.args = r.args[:first]
			return 0, errors.New("Protocol error: expected '$', got '" + string([]byte{ch}) + "'")
		}
		size, next := lineNum(b, i+1)
		if next <= 0 || size < 0 {
			if next == 0 {
				return r.stop(first, k, hdr, i, argv, 0)
			}
			r.mark()
			r.args = r.args[:first]
			return 0, errReaderBulk
		}
		i = next
		if len(b)-i < size+2 {
			return r.stop(first, k, hdr, i, argv, i+size+2)
		}
		if b[i+size] != '\r' || b[i+size+1] != '\n' {
			r.mark()
			r.args = r.args[:first]
			return 0, errReaderBulk
		}
		r.args = append(r.args, b[i:i+size:i+size])
		argv += size
		i += size + 2
	}
	r.addCmd(first)
	return i, nil
}

// scanMultibulk checks the arguments of a multibulk request of count
// arguments in b from its k-th, whose header is at b[i] (argv the bytes
// of those before), as parseMultibulk would parse them, keeping none. It
// reports whether the request is complete; when it is not, it records
// where it stopped (stop), and err is a protocol error if one was found.
func (r *cmdReader) scanMultibulk(b []byte, count, k, i, argv int) (complete bool, err error) {
	for ; k < count; k++ {
		hdr := i
		if i >= len(b) {
			_, err = r.stop(len(r.args), k, hdr, i, argv, 0)
			return false, err
		}
		if b[i] != '$' {
			return false, errors.New("Protocol error: expected '$', got '" + string([]byte{b[i]}) + "'")
		}
		size, next := lineNum(b, i+1)
		if next <= 0 || size < 0 {
			if next == 0 {
				_, err = r.stop(len(r.args), k, hdr, i, argv, 0)
				return false, err
			}
			return false, errReaderBulk
		}
		i = next
		if len(b)-i < size+2 {
			_, err = r.stop(len(r.args), k, hdr, i, argv, i+size+2)
			return false, err
		}
		if b[i+size] != '\r' || b[i+size+1] != '\n' {
			return false, errReaderBulk
		}
		argv += size
		i += size + 2
	}
	return true, nil
}

// stop ends the parse of a partial request whose arguments start at
// r.args[first], recording where it stopped (pskip, pargv, pneed) and
// where the next parse goes on from: its k complete arguments end at
// hdr, the next one's header.
func (r *cmdReader) stop(first, k, hdr, skip, argv, need int) (int, error) {
	r.mark()
	r.args = r.args[:first]
	r.pskip, r.pargv, r.pneed = skip, argv, need
	r.resumeArgs, r.resumeAt, r.resumeArgv = k, hdr, argv
	return 0, nil
}

// addCmd adds the command whose arguments are r.args[first:]. When args
// has grown into a new backing array, the Args of earlier commands still
// point into the old one, which stays valid.
func (r *cmdReader) addCmd(first int) {
	r.cmds = append(r.cmds, redcon.Command{Args: r.args[first:len(r.args):len(r.args)]})
}

// parseInline parses one inline request ("SET k v\r\n") as Redis's
// processInlineBuffer: the line, without its "\n" and one "\r" before it,
// split by sdssplitargs. A line of no words (blank) is consumed with no
// command. The words are copied into r.inl (quotes and escapes change
// them), which lives as long as r.args.
func (r *cmdReader) parseInline(b []byte) (int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return 0, nil
	}
	r.inlines++
	line := b[:i]
	if i > 0 && line[i-1] == '\r' {
		line = line[:i-1]
	}
	first := len(r.args)
	var ok bool
	r.args, r.inl, ok = engine.AppendSplitArgs(r.args, r.inl, line)
	if !ok {
		return 0, errReaderQuotes
	}
	if len(r.args) > first {
		r.addCmd(first)
	}
	return i + 1, nil
}

// lineNum parses the number of the header line whose digits start at
// b[i], and returns it with the index just past the line's end. The index
// is 0 when the line is not complete yet, -1 when it is not a number. As
// in Redis, a line ends at its first '\r' and the byte after it (which
// the framer makes a '\n'): a '\n' before the '\r' is part of the line.
func lineNum(b []byte, i int) (int, int) {
	// Fast path: plain digits, then "\r\n".
	n, j := 0, i
	for ; j < len(b) && j-i < 18; j++ {
		c := b[j]
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if j > i && j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n' {
		return n, j + 2
	}
	k := bytes.IndexByte(b[i:], '\r')
	if k < 0 || i+k+1 >= len(b) {
		return 0, 0
	}
	n, ok := atoiLine(b[i : i+k+1])
	if !ok {
		return 0, -1
	}
	return n, i + k + 2
}

// atoiLine parses a header line's number, "123\r" (the '\n' is not
// included), as redcon does: a decimal int, optionally signed.
func atoiLine(b []byte) (int, bool) {
	if len(b) < 2 || b[len(b)-1] != '\r' {
		return 0, false
	}
	b = b[:len(b)-1]
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if len(b) > 18 {
		return 0, false // beyond any limit the framer lets through
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
