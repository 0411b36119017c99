package server

import (
	"math"
	"strconv"
	"sync"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// respWriter encodes replies for one connection as RESP2 or RESP3 into an
// output buffer, using redcon's encoders (redcon has none for RESP3, so
// those types are written here).
//
// A connection's own goroutine is the only writer until the connection can
// receive pushes from others (pub/sub messages, invalidations, MONITOR
// lines). From then on shared is set and every write takes mu, which other
// goroutines hold while they append a push (see client.push).
type respWriter struct {
	b      []byte
	proto  int
	shared bool
	mu     *sync.Mutex
	// limit, when not 0, is the most output the buffer takes (the hard
	// output buffer limit of the connection's class, set for each batch
	// by its goroutine, replyLimit): a write that finds it reached is
	// dropped and over set, as Redis's prepareClientToWrite refuses
	// output to a client it is to close, and the connection is closed
	// after the command (outputOverLimit). One command's reply so stays
	// within the limit, give or take its last element, however much it
	// asks for (MGET of a big value a million times, a script's reply).
	// relimit reads the limit again (replyLimitLocked) when the output
	// reaches the one set: a command of the batch may have raised it
	// (CONFIG SET) or changed the connection's class (SUBSCRIBE,
	// UNSUBSCRIBE, RESET). Once over, every write is dropped until the
	// close: no reply resumes after a hole.
	limit   int
	over    bool
	relimit func() int
	// segs is output written before b, in order, and segLen its length:
	// with seal set (a connection's own writer), a buffer of segMin/2 or
	// more that a write would grow is sealed into segs and a new one of
	// segMin (or the write's size) begun. A large reply (MGET of big values, a long HGETALL) so costs
	// its own size, written once, where one growing buffer copies it
	// about four times over and holds three to four times its size
	// (each growth's old buffer waits for the GC). size is the whole.
	segs   [][]byte
	segLen int
	seal   bool
}

// segMin is the size of a new buffer begun after a sealed one; one is
// sealed once it holds half that (respWriter.segs).
const segMin = 256 << 10

// size is the output buffered: the sealed segments and b.
func (w *respWriter) size() int { return w.segLen + len(w.b) }

// room makes room for n more bytes: a buffer of segMin/2 or more that
// would grow is sealed and a new one begun (segs). Requires the buffer
// held (lock).
func (w *respWriter) room(n int) {
	if cap(w.b)-len(w.b) >= n || len(w.b) < segMin/2 || !w.seal {
		return
	}
	w.segs = append(w.segs, w.b)
	w.segLen += len(w.b)
	w.b = make([]byte, 0, max(n, segMin))
}

// appendRaw appends p to the output. Requires the buffer held.
func (w *respWriter) appendRaw(p []byte) {
	w.room(len(p))
	w.b = append(w.b, p...)
}

// truncate drops the output past n bytes (n <= size).
func (w *respWriter) truncate(n int) {
	for n < w.segLen {
		last := w.segs[len(w.segs)-1]
		w.segs[len(w.segs)-1] = nil
		w.segs = w.segs[:len(w.segs)-1]
		w.segLen -= len(last)
		w.b = last
	}
	w.b = w.b[:n-w.segLen]
}

// reset empties the output once written or dropped; a big buffer is let
// go rather than kept with the connection.
func (w *respWriter) reset() {
	clear(w.segs)
	w.segs, w.segLen = w.segs[:0], 0
	if cap(w.b) > 1<<20 {
		w.b = nil // do not pin a big reply's buffer
	} else {
		w.b = w.b[:0]
	}
}

// drop lets the output go, unwritten.
func (w *respWriter) drop() {
	w.b, w.segs, w.segLen = nil, nil, 0
}

var _ engine.CopyingWriter = (*respWriter)(nil)

// lock takes the buffer for a write of about n bytes (room), and reports
// whether the write may go in: false, the buffer not held, when it is at
// its limit.
func (w *respWriter) lock(n int) bool {
	if w.shared {
		w.mu.Lock()
	}
	if w.over || w.limit != 0 && w.size() >= w.limit && !w.underNewLimit() {
		w.over = true
		w.unlock()
		return false
	}
	w.room(n)
	return true
}

// underNewLimit reads the limit again (relimit) and reports whether the
// output is under it.
func (w *respWriter) underNewLimit() bool {
	if w.relimit == nil {
		return false
	}
	w.limit = w.relimit()
	return w.limit == 0 || w.size() < w.limit
}

func (w *respWriter) unlock() {
	if w.shared {
		w.mu.Unlock()
	}
}

func (w *respWriter) Proto() int { return w.proto }

// CopiesReplies: every write is appended to the output buffer
// (engine.CopyingWriter).
func (w *respWriter) CopiesReplies() {}

func (w *respWriter) WriteStatus(s string) {
	if !w.lock(len(s) + 3) {
		return
	}
	w.b = redcon.AppendString(w.b, s)
	w.unlock()
}

func (w *respWriter) WriteError(msg string) {
	if !w.lock(len(msg) + 3) {
		return
	}
	w.b = redcon.AppendError(w.b, msg)
	w.unlock()
}

func (w *respWriter) WriteInt(n int64) {
	if !w.lock(24) {
		return
	}
	w.b = redcon.AppendInt(w.b, n)
	w.unlock()
}

func (w *respWriter) WriteBulk(b []byte) {
	if !w.lock(len(b) + 32) {
		return
	}
	w.b = redcon.AppendBulk(w.b, b)
	w.unlock()
}

func (w *respWriter) WriteBulkString(s string) {
	if !w.lock(len(s) + 32) {
		return
	}
	w.b = redcon.AppendBulkString(w.b, s)
	w.unlock()
}

func (w *respWriter) WriteArray(n int) {
	if !w.lock(24) {
		return
	}
	w.b = redcon.AppendArray(w.b, n)
	w.unlock()
}

func (w *respWriter) raw(p []byte) {
	if !w.lock(len(p)) {
		return
	}
	w.b = append(w.b, p...)
	w.unlock()
}

func (w *respWriter) header(prefix byte, n int) {
	if !w.lock(24) {
		return
	}
	w.b = append(w.b, prefix)
	w.b = strconv.AppendInt(w.b, int64(n), 10)
	w.b = append(w.b, '\r', '\n')
	w.unlock()
}

var (
	resp3Null  = []byte("_\r\n")
	resp2Null  = []byte("$-1\r\n")
	resp2NullA = []byte("*-1\r\n")
	resp3True  = []byte("#t\r\n")
	resp3False = []byte("#f\r\n")
	resp2One   = []byte(":1\r\n")
	resp2Zero  = []byte(":0\r\n")
)

func (w *respWriter) WriteNull() {
	if w.proto == 3 {
		w.raw(resp3Null)
		return
	}
	w.raw(resp2Null)
}

func (w *respWriter) WriteNullArray() {
	if w.proto == 3 {
		w.raw(resp3Null)
		return
	}
	w.raw(resp2NullA)
}

func (w *respWriter) WriteMap(n int) {
	if w.proto == 3 {
		w.header('%', n)
		return
	}
	w.header('*', 2*n)
}

func (w *respWriter) WriteSet(n int) {
	if w.proto == 3 {
		w.header('~', n)
		return
	}
	w.header('*', n)
}

// WritePush writes a push header (RESP2: an array).
func (w *respWriter) WritePush(n int) {
	if w.proto == 3 {
		w.header('>', n)
		return
	}
	w.header('*', n)
}

func (w *respWriter) WriteBool(v bool) {
	switch {
	case w.proto == 3 && v:
		w.raw(resp3True)
	case w.proto == 3:
		w.raw(resp3False)
	case v:
		w.raw(resp2One)
	default:
		w.raw(resp2Zero)
	}
}

// formatDouble formats f as Redis's addReplyDouble does.
func formatDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f): // as glibc's printf: 0/0 on x86-64 has its sign bit set
		if math.Signbit(f) {
			return append(b, "-nan"...)
		}
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

func (w *respWriter) WriteDouble(f float64) {
	var tmp [40]byte
	num := formatDouble(tmp[:0], f)
	if !w.lock(len(num) + 24) {
		return
	}
	if w.proto == 3 {
		w.b = append(w.b, ',')
		w.b = append(w.b, num...)
		w.b = append(w.b, '\r', '\n')
	} else {
		w.b = redcon.AppendBulk(w.b, num)
	}
	w.unlock()
}

func (w *respWriter) WriteBigNumber(s string) {
	if !w.lock(len(s) + 32) {
		return
	}
	if w.proto == 3 {
		w.b = append(w.b, '(')
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
	} else {
		w.b = redcon.AppendBulkString(w.b, s)
	}
	w.unlock()
}

func (w *respWriter) WriteVerbatim(format, s string) {
	if !w.lock(len(s) + 32) {
		return
	}
	if w.proto == 3 {
		w.b = append(w.b, '=')
		w.b = strconv.AppendInt(w.b, int64(len(s)+4), 10)
		w.b = append(w.b, '\r', '\n')
		// three bytes, as Redis's addReplyVerbatim copies them: a
		// shorter format (a script's) is padded with spaces, up to a NUL
		for i, end := 0, false; i < 3; i++ {
			end = end || i >= len(format) || format[i] == 0
			if end {
				w.b = append(w.b, ' ')
			} else {
				w.b = append(w.b, format[i])
			}
		}
		w.b = append(w.b, ':')
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
	} else {
		w.b = redcon.AppendBulkString(w.b, s)
	}
	w.unlock()
}
