package server

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// respWriter encodes replies for one connection as RESP2 or RESP3.
// redcon has no RESP3 encoder, so RESP3 types are written raw.
type respWriter struct {
	conn  redcon.Conn
	proto int
	buf   []byte
}

var _ engine.Writer = (*respWriter)(nil)

func (w *respWriter) Proto() int               { return w.proto }
func (w *respWriter) WriteStatus(s string)     { w.conn.WriteString(s) }
func (w *respWriter) WriteError(msg string)    { w.conn.WriteError(msg) }
func (w *respWriter) WriteInt(n int64)         { w.conn.WriteInt64(n) }
func (w *respWriter) WriteBulk(b []byte)       { w.conn.WriteBulk(b) }
func (w *respWriter) WriteBulkString(s string) { w.conn.WriteBulkString(s) }
func (w *respWriter) WriteArray(n int)         { w.conn.WriteArray(n) }

func (w *respWriter) header(prefix byte, n int) {
	w.buf = append(w.buf[:0], prefix)
	w.buf = strconv.AppendInt(w.buf, int64(n), 10)
	w.buf = append(w.buf, '\r', '\n')
	w.conn.WriteRaw(w.buf)
}

var (
	resp3Null  = []byte("_\r\n")
	resp2NullA = []byte("*-1\r\n")
	resp3True  = []byte("#t\r\n")
	resp3False = []byte("#f\r\n")
)

func (w *respWriter) WriteNull() {
	if w.proto == 3 {
		w.conn.WriteRaw(resp3Null)
		return
	}
	w.conn.WriteNull()
}

func (w *respWriter) WriteNullArray() {
	if w.proto == 3 {
		w.conn.WriteRaw(resp3Null)
		return
	}
	w.conn.WriteRaw(resp2NullA)
}

func (w *respWriter) WriteMap(n int) {
	if w.proto == 3 {
		w.header('%', n)
		return
	}
	w.conn.WriteArray(2 * n)
}

func (w *respWriter) WriteSet(n int) {
	if w.proto == 3 {
		w.header('~', n)
		return
	}
	w.conn.WriteArray(n)
}

// WritePush writes a push header (RESP2: an array).
func (w *respWriter) WritePush(n int) {
	if w.proto == 3 {
		w.header('>', n)
		return
	}
	w.conn.WriteArray(n)
}

func (w *respWriter) WriteBool(v bool) {
	if w.proto == 3 {
		if v {
			w.conn.WriteRaw(resp3True)
		} else {
			w.conn.WriteRaw(resp3False)
		}
		return
	}
	if v {
		w.conn.WriteInt(1)
	} else {
		w.conn.WriteInt(0)
	}
}

// formatDouble formats f as Redis's addReplyDouble does.
func formatDouble(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

func (w *respWriter) WriteDouble(f float64) {
	if w.proto == 3 {
		w.buf = append(w.buf[:0], ',')
		w.buf = formatDouble(w.buf, f)
		w.buf = append(w.buf, '\r', '\n')
		w.conn.WriteRaw(w.buf)
		return
	}
	w.conn.WriteBulk(formatDouble(w.buf[:0], f))
}

func (w *respWriter) WriteVerbatim(format, s string) {
	if w.proto == 3 {
		w.header('=', len(s)+4)
		w.buf = append(w.buf[:0], format...)
		w.buf = append(w.buf, ':')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\r', '\n')
		w.conn.WriteRaw(w.buf)
		return
	}
	w.conn.WriteBulkString(s)
}
