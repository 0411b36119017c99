package server

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file puts a guard in front of redcon's request parser. redcon's
// Reader has no limits and trusts the lengths it reads:
//
//   - "*1\r\n$9223372036854775800\r\n" overflows i+size+2 and panics inside
//     the connection goroutine, which takes the whole process down;
//   - "*4611686018427387904\r\n" makes every later read loop count times;
//   - an inline request without a newline, or a huge bulk, grows the read
//     buffer without bound;
//   - "*0\r\n" and "*-1\r\n" are protocol errors, where Redis ignores them.
//
// framedConn validates the byte stream as it is read, with the limits and
// error replies of Redis 7.0 (networking.c, processInlineBuffer and
// processMultibulkBuffer), before redcon sees any of it. It follows only the
// framing of RESP: O(1) work per header byte, and bulk payloads are skipped
// without being looked at.

// Limits, as in Redis unless noted.
const (
	// framerMaxLine is PROTO_INLINE_MAX_SIZE: the longest inline request,
	// multibulk count line or bulk length line (counting its first byte,
	// '*' or '$', and not the '\n').
	framerMaxLine = 64 * 1024
	// framerMaxMultibulk caps the argument count by default
	// (Config.MaxMultibulkLen). Redis allows up to INT_MAX; tumbler stops
	// at 1M, so that redcon never walks a huge count.
	framerMaxMultibulk = 1024 * 1024
	// framerMaxBulk is proto-max-bulk-len's default (Config.ProtoMaxBulkLen).
	framerMaxBulk = 512 * 1024 * 1024
	// framerQueryBufLimit is client-query-buffer-limit's default
	// (Config.ClientQueryBufferLimit).
	framerQueryBufLimit = 1024 * 1024 * 1024
	// framerUnauthMultibulk and framerUnauthBulk are the limits for a
	// connection that has not authenticated yet (CVE-2021-32675).
	framerUnauthMultibulk = 10
	framerUnauthBulk      = 16384
	// framerErrWriteTimeout bounds the write of the error reply.
	framerErrWriteTimeout = time.Second
	// framerMinRead is the smallest buffer Read scans in place; smaller
	// reads go through framedConn.small. It must exceed the longest count
	// line that can still be valid: "*-9223372036854775808\r", 22 bytes.
	framerMinRead = 64
)

// The error replies, word for word as Redis sends them.
const (
	framerErrInline          = "ERR Protocol error: too big inline request"
	framerErrMbulkTooBig     = "ERR Protocol error: too big mbulk count string"
	framerErrMbulkInvalid    = "ERR Protocol error: invalid multibulk length"
	framerErrMbulkUnauth     = "ERR Protocol error: unauthenticated multibulk length"
	framerErrBulkTooBig      = "ERR Protocol error: too big bulk count string"
	framerErrBulkInvalid     = "ERR Protocol error: invalid bulk length"
	framerErrBulkUnauth      = "ERR Protocol error: unauthenticated bulk length"
	framerErrExpectedDollarA = "ERR Protocol error: expected '$', got '"
)

// errProtocolLimit is what framedConn.Read returns once the client has
// broken the protocol (errors.Is matches it; the error's text is the reply
// that was sent). redcon then closes the connection.
var errProtocolLimit = errors.New("protocol error")

type framerError struct{ reply string }

func (e *framerError) Error() string { return e.reply[len("ERR "):] }
func (e *framerError) Unwrap() error { return errProtocolLimit }

// framer states: where in the request stream the next byte is.
const (
	fsBoundary uint8 = iota // first byte of a request
	fsInline                // inside an inline request, before its '\n'
	fsCount                 // inside a multibulk count line, after the '*'
	fsArg                   // first byte of an argument: must be '$'
	fsBulkLen               // inside a bulk length line, after the '$'
	fsPayload               // inside a bulk payload or its CRLF
)

// framedConn is a net.Conn whose Read hands on only well-framed requests
// within the limits above. On a violation it writes the error reply to the
// connection, in the order a Redis client expects (after the replies to the
// requests before it), and Read fails with errProtocolLimit.
//
// Use it from one goroutine (redcon's connection goroutine); Write and the
// other methods are the embedded connection's. Do not copy a framedConn.
type framedConn struct {
	net.Conn

	// needsAuth reports whether the client has still to authenticate, which
	// brings the lower unauthenticated limits; nil means authenticated. It is
	// called from Read, only when a request exceeds those limits.
	needsAuth func() bool

	// lim holds the server's configurable limits (limits.go); nil means
	// the defaults above and no idle timeout. idleExempt, if set, reports
	// whether the idle timeout is suspended for this connection.
	lim        *protoLimits
	idleExempt func() bool
	// delayed, if set, queues an error reply behind the connection's
	// delayed output (SetLatency: delayline.go), and reports whether it
	// did; false, fail writes it.
	delayed   func(line []byte) bool
	idleArmed bool  // a read deadline is set for the idle timeout
	reqLen    int64 // bytes of the incomplete request read so far

	st   uint8  // fs*
	args int    // arguments of the current multibulk not yet begun
	skip int    // payload bytes (with the CRLF) still to pass
	num  hdrNum // the header line being read (fsInline uses num.n only)

	// Bytes already read from the connection that Read must scan again
	// before reading more: pendBuf[pendOff:pendEnd]. pendHold means they are
	// just the start of a multibulk count line, so more input is needed.
	pendBuf          []byte
	pendOff, pendEnd int
	pendHold         bool
	holdArr          [32]byte // pendBuf's first backing array

	// Reads into buffers shorter than framerMinRead go through small.
	small            [framerMinRead]byte
	smallOff, smallN int

	// Read-ahead while the client is blocked (blocking.go): bytes read
	// from the connection but not yet handed to Read, the error that ended
	// the reading, and the reading goroutine's stop flag and end signal.
	ahead     aheadBuf
	aheadErr  error
	aheadStop atomic.Bool
	aheadDone chan struct{}
	// aheadMem is what a read-ahead holds, packWaiting(len, cap-len), for
	// the other goroutines' measures of the connection (inputMem): its
	// own goroutine waits in a write or a blocked command meanwhile.
	aheadMem atomic.Uint64

	// raw, if set, reads the socket instead of Conn.Read (rawread.go).
	raw *rawReader

	// net counts the bytes read and written (INFO's total_net_*_bytes);
	// nil counts nothing.
	net *engine.NetStripe

	rerr error  // the connection's error, returned once pending data is out
	err  error  // the protocol error, returned by every Read from now on
	sent bool   // whether err's reply has been written
	line []byte // err's reply line
}

// newFramedConn wraps c. needsAuth may be nil (always authenticated) and
// may be set later, before the first Read.
func newFramedConn(c net.Conn, needsAuth func() bool) *framedConn {
	return &framedConn{Conn: c, needsAuth: needsAuth}
}

// hdrNum parses a header line incrementally, with the rules of Redis's
// string2ll: optional '-', no '+', no leading zeros, no "-0", and the value
// must fit an int64. The line ends at its first '\r', and one byte after.
type hdrNum struct {
	mag  uint64 // the digits' value (up to 19 digits)
	n    int    // bytes of the line so far, its first byte included
	ndig int
	neg  bool
	zero bool // first digit was '0'
	cr   bool // the line's '\r' was read: the next byte ends it
	bad  bool // cannot be a valid number any more
}

// value returns the line's number and whether it is one.
func (h *hdrNum) value() (neg bool, mag uint64, ok bool) {
	if h.bad || !h.cr || h.ndig == 0 {
		return false, 0, false
	}
	if h.neg {
		return true, h.mag, h.mag <= 1<<63
	}
	return false, h.mag, h.mag <= 1<<63-1
}

// unauth reports whether the unauthenticated limits apply.
func (c *framedConn) unauth() bool { return c.needsAuth != nil && c.needsAuth() }

// Read reads from the connection and returns only bytes that passed the
// checks. After a violation it first returns the bytes before it (so that
// redcon answers the requests they hold), then, on the next call, writes
// the error reply and returns the error.
func (c *framedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.smallOff < c.smallN {
		n := copy(p, c.small[c.smallOff:c.smallN])
		c.smallOff += n
		return n, nil
	}
	if len(p) < framerMinRead {
		n, err := c.read(c.small[:])
		if n == 0 {
			return 0, err
		}
		c.smallOff, c.smallN = copy(p, c.small[:n]), n
		return c.smallOff, nil
	}
	return c.read(p)
}

// read is Read for len(p) >= framerMinRead. It never returns data and an
// error together: bufio.Reader would pass both on, and redcon drops the
// data of a read that fails.
func (c *framedConn) read(p []byte) (int, error) {
	for {
		if c.err != nil {
			return 0, c.fail()
		}
		var n int
		fromPend := c.pendOff < c.pendEnd
		switch {
		case fromPend && !c.pendHold:
			// Input held back by an earlier call: scan it again, without
			// waiting for the client, who may be waiting for replies.
			n = copy(p, c.pendBuf[c.pendOff:c.pendEnd])
			c.pendOff += n
		default:
			if fromPend {
				// The start of a count line: put it back in front.
				n = copy(p, c.pendBuf[c.pendOff:c.pendEnd])
			}
			if c.rerr != nil {
				return 0, c.rerr
			}
			if c.lim != nil {
				c.armIdle() // the idle timeout (limits.go)
			}
			m, err := c.readConn(p[n:]) // blocking.go: read-ahead bytes first
			if err == errWouldBlock {
				return 0, err // the event loop's read found no input: not the end
			}
			if err != nil {
				c.rerr = err
			}
			if m <= 0 {
				if err != nil {
					return 0, err
				}
				continue
			}
			n += m
			c.pendOff, c.pendEnd, c.pendHold = 0, 0, false
			fromPend = false
		}

		out, tail, hold, msg := c.scan(p[:n])
		if tail >= 0 {
			c.keep(p[tail:n], fromPend, hold)
		}
		if msg != "" {
			c.err = &framerError{reply: msg}
			c.line = append(append(append(c.line[:0], '-'), msg...), '\r', '\n')
		}
		if out > 0 {
			return out, nil
		}
	}
}

// hasPending reports whether Read has something to return, or an error
// to report, without reading the connection: the event loop, woken only
// by input, must call it again without waiting (eventloop_linux.go).
func (c *framedConn) hasPending() bool {
	return c.err != nil || c.rerr != nil || c.smallOff < c.smallN ||
		(c.pendOff < c.pendEnd && !c.pendHold) || c.ahead.n > 0 || c.aheadErr != nil
}

// held is how many bytes read from the connection Read has still to
// return (CLIENT LIST's qbuf counts them).
func (c *framedConn) held() int {
	return c.pendEnd - c.pendOff + c.smallN - c.smallOff + c.ahead.n
}

// keep makes t, the last bytes of the buffer just scanned, the first input
// of the next scan. If that buffer came from the pending bytes, t is still
// in pendBuf, right before pendOff.
func (c *framedConn) keep(t []byte, fromPend, hold bool) {
	if fromPend {
		c.pendOff -= len(t)
	} else {
		if cap(c.pendBuf) < len(t) {
			if len(t) <= len(c.holdArr) {
				c.pendBuf = c.holdArr[:]
			} else {
				c.pendBuf = make([]byte, len(t))
			}
		}
		c.pendBuf = c.pendBuf[:cap(c.pendBuf)]
		c.pendOff, c.pendEnd = 0, copy(c.pendBuf, t)
	}
	c.pendHold = hold && c.pendEnd-c.pendOff == len(t)
}

// fail writes the error reply once and returns the error.
func (c *framedConn) fail() error {
	if !c.sent && len(c.line) > 0 && c.raw.inLoop() {
		// The event loop never waits for a socket: the connection's own
		// goroutine writes the reply (eventloop_linux.go).
		return errLeaveLoop
	}
	if !c.sent && len(c.line) > 0 && c.delayed != nil && c.delayed(c.line) {
		c.sent = true
	}
	if !c.sent && len(c.line) > 0 {
		c.sent = true
		_ = c.Conn.SetWriteDeadline(time.Now().Add(framerErrWriteTimeout))
		n, _ := c.Conn.Write(c.line)
		c.net.Wrote(n)
		_ = c.Conn.SetWriteDeadline(time.Time{})
	}
	return c.err
}

// scan checks b, the next bytes of the stream, and compacts in place the
// bytes to hand on into b[:out]: everything but ignored count lines ("*0",
// "*-1"), count lines not complete yet, and anything from a violation on.
// If tail >= 0, b[tail:] (left unmodified) must be scanned again before
// new input, as the state has been rewound to its start: hold says it is
// only the start of a count line. msg is a violation's reply.
func (c *framedConn) scan(b []byte) (out, tail int, hold bool, msg string) {
	n := len(b)
	maxMultibulk, maxBulk := c.lim.multibulk(), c.lim.bulk()
	w, seg := 0, 0 // b[:w] is output; b[seg:i] is input kept so far
	lineStart := 0 // start of the current header line (0: earlier read)
	cmdStart := -1 // start of the current request (-1: earlier read)
	i := 0
	st := c.st
	for i < n {
		switch st {
		case fsPayload:
			k := n - i
			if k > c.skip {
				k = c.skip
			}
			// The two bytes after a payload are passed over unread, as
			// Redis passes them (processMultibulkBuffer skips bulklen+2):
			// make them the CRLF the parsers after this one expect.
			if c.skip-1 < k {
				b[i+c.skip-1] = '\n'
			}
			if c.skip >= 2 && c.skip-2 < k {
				b[i+c.skip-2] = '\r'
			}
			c.skip -= k
			i += k
			if c.skip == 0 {
				c.args--
				if c.args == 0 {
					st = fsBoundary
				} else {
					st = fsArg
				}
			}

		case fsBoundary:
			cmdStart, lineStart = i, i
			if b[i] != '*' {
				c.num = hdrNum{}
				st = fsInline
				break
			}
			// Fast path: a whole, small count line.
			if v, next := framerSmallNum(b, i+1); v > 0 && v <= framerUnauthMultibulk {
				c.args = v
				st = fsArg
				i = next
				break
			}
			c.num = hdrNum{n: 1}
			st = fsCount
			i++

		case fsInline:
			j := bytes.IndexByte(b[i:], '\n')
			end := n - i
			if j >= 0 {
				end = j
			}
			if c.num.n+end > framerMaxLine {
				// Hand on the line up to its limit, as a byte-by-byte reader
				// would have; redcon waits for the '\n' that never comes.
				i += framerMaxLine - c.num.n
				c.st = st
				return c.compact(b, w, seg, i), -1, false, framerErrInline
			}
			c.num.n += end
			i += end
			if j >= 0 {
				i++
				st = fsBoundary
			}

		case fsArg:
			if ch := b[i]; ch != '$' {
				if ch == '\r' || ch == '\n' {
					ch = ' ' // Redis maps CR and LF in error text to spaces
				}
				c.st = st
				return c.compact(b, w, seg, i), -1, false,
					framerErrExpectedDollarA + string([]byte{ch}) + "'"
			}
			// Fast path: a whole, small bulk length line.
			if v, next := framerSmallNum(b, i+1); v >= 0 && v <= framerUnauthBulk {
				c.skip = v + 2
				st = fsPayload
				i = next
				break
			}
			lineStart = i
			c.num = hdrNum{n: 1}
			st = fsBulkLen
			i++

		case fsCount, fsBulkLen:
			i = c.num.feed(b, i)
			if c.num.n > framerMaxLine {
				c.st = st
				if st == fsCount {
					return c.compact(b, w, seg, lineStart), -1, false, framerErrMbulkTooBig
				}
				return c.compact(b, w, seg, i), -1, false, framerErrBulkTooBig
			}
			if i == n {
				break // the line goes on in the next read
			}
			// b[i] is the line's last byte (made a '\n').
			neg, v, ok := c.num.value()
			if st == fsCount {
				if !ok || (!neg && v > maxMultibulk) {
					c.st = st
					return c.compact(b, w, seg, lineStart), -1, false, framerErrMbulkInvalid
				}
				if neg || v == 0 {
					// Redis ignores an empty or negative count: drop the line.
					w = c.compact(b, w, seg, lineStart)
					i++
					seg = i
					st = fsBoundary
					continue
				}
				if v > framerUnauthMultibulk && c.unauth() {
					c.st = st
					return c.authFail(b, w, seg, cmdStart, lineStart, framerErrMbulkUnauth)
				}
				c.args = int(v)
				st = fsArg
				i++
				continue
			}
			if !ok || neg || v > maxBulk {
				c.st = st
				return c.compact(b, w, seg, i), -1, false, framerErrBulkInvalid
			}
			if v > framerUnauthBulk && c.unauth() {
				c.st = st
				return c.authFail(b, w, seg, cmdStart, i, framerErrBulkUnauth)
			}
			c.skip = int(v) + 2
			st = fsPayload
			i++
		}
	}
	c.st = st
	if st != fsBoundary && st != fsCount {
		// client-query-buffer-limit: the incomplete request, which redcon
		// holds whole until it ends, may not outgrow the limit. Redis
		// closes such a client without a reply.
		if cmdStart >= 0 {
			c.reqLen = int64(n - cmdStart)
		} else {
			c.reqLen += int64(n)
		}
		if c.reqLen > c.lim.queryBuf() {
			c.err = errQueryBufLimit
			c.line = c.line[:0]
			c.lim.queryBufHit(c.Conn, c.reqLen)
			if cmdStart > 0 {
				return c.compact(b, w, seg, cmdStart), -1, false, ""
			}
			return w, -1, false, ""
		}
	}
	tail = -1
	if st == fsCount {
		// Hand on no part of a count line before its end: it may yet be one
		// to drop. While it can still be valid (22 bytes at most) keep it to
		// scan again with the next read; once it cannot, it will end in an
		// error, and its bytes need not be kept.
		if !c.num.bad {
			tail, hold = lineStart, true
			c.st = fsBoundary
		}
		return c.compact(b, w, seg, lineStart), tail, hold, ""
	}
	return c.compact(b, w, seg, n), -1, false, ""
}

// authFail handles a request over the unauthenticated limits. If requests
// end earlier in this read, redcon has not run them yet, and one may be an
// AUTH (Redis runs a pipeline in order): hand those on, and scan this one
// again on the next Read, by which time redcon has run them. Otherwise the
// verdict is final: hand on the bytes before end and fail.
func (c *framedConn) authFail(b []byte, w, seg, cmdStart, end int, reply string) (int, int, bool, string) {
	if cmdStart > 0 {
		c.st = fsBoundary
		return c.compact(b, w, seg, cmdStart), cmdStart, false, ""
	}
	return c.compact(b, w, seg, end), -1, false, reply
}

// compact appends b[seg:to] to the output b[:w] and returns the new w.
func (c *framedConn) compact(b []byte, w, seg, to int) int {
	if to <= seg {
		return w
	}
	if w != seg {
		copy(b[w:], b[seg:to])
	}
	return w + to - seg
}

// framerSmallNum parses a header line's number from b[i:] if it is all
// there, non-negative, canonical and of at most 5 digits: then it returns
// the number and the index after the line's "\r\n". Otherwise it returns
// -1, and the line takes the general path (hdrNum), which accepts every
// line accepted here, with the same value.
func framerSmallNum(b []byte, i int) (v, next int) {
	if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
		if ch := b[i]; ch >= '0' && ch <= '9' {
			return int(ch - '0'), i + 3 // one digit, the commonest
		}
		return -1, 0
	}
	j := i
	for ; j < len(b) && j-i < 5; j++ {
		ch := b[j]
		if ch < '0' || ch > '9' {
			break
		}
		v = v*10 + int(ch-'0')
	}
	if j == i || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' || (b[i] == '0' && j-i > 1) {
		return -1, 0
	}
	return v, j + 2
}

// feed consumes the bytes of a header line from b[i:] and returns the
// index of its last byte, or len(b) if the line goes on. It stops early,
// with h.n > framerMaxLine, at the byte that makes the line too long.
//
// As in Redis (processMultibulkBuffer), the line ends at its first '\r',
// and the byte after that is passed over unread, whatever it is: feed
// makes it the '\n' the parsers after this one expect. A '\n' before the
// '\r' is only a byte the number cannot have: the line goes on.
func (h *hdrNum) feed(b []byte, i int) int {
	for ; i < len(b); i++ {
		if h.cr {
			b[i] = '\n'
			return i
		}
		ch := b[i]
		if ch == '\r' {
			h.cr = true // (not counted: Redis checks the limit only on a line without its '\r')
			continue
		}
		h.n++
		if h.n > framerMaxLine {
			return i
		}
		switch {
		case ch >= '0' && ch <= '9':
			if h.ndig == 0 {
				h.zero = ch == '0'
				if h.zero && h.neg {
					h.bad = true // "-0"
				}
			} else if h.zero {
				h.bad = true // leading zero
			}
			h.ndig++
			if h.ndig > 19 {
				h.bad = true // beyond int64
			} else {
				h.mag = h.mag*10 + uint64(ch-'0')
			}
		case ch == '-' && h.n == 2:
			h.neg = true
		default:
			h.bad = true
		}
	}
	return i
}
