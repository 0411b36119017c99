// Package enginetest has helpers for testing code that writes engine
// replies. It does not import engine, so engine's own tests can use it.
package enginetest

import (
	"strconv"
	"strings"
)

// TextWriter implements engine.Writer by rendering replies compactly, one
// token per element separated by spaces: +OK :1 $value (nil) (nilarray)
// *2 %1 ~3 #true ,1.5 =text -ERR message.
type TextWriter struct {
	P int // protocol reported by Proto; 0 means 2
	b strings.Builder
}

func (w *TextWriter) add(s string) {
	if w.b.Len() > 0 {
		w.b.WriteByte(' ')
	}
	w.b.WriteString(s)
}

// String returns everything written so far.
func (w *TextWriter) String() string { return w.b.String() }

// Reset forgets everything written.
func (w *TextWriter) Reset() { w.b.Reset() }

// CopiesReplies: it renders each reply into its own buffer and keeps no
// string it is given (engine.CopyingWriter), as a connection's writer.
func (w *TextWriter) CopiesReplies() {}

func (w *TextWriter) Proto() int {
	if w.P == 0 {
		return 2
	}
	return w.P
}
func (w *TextWriter) WriteStatus(s string)      { w.add("+" + s) }
func (w *TextWriter) WriteError(m string)       { w.add("-" + m) }
func (w *TextWriter) WriteInt(n int64)          { w.add(":" + strconv.FormatInt(n, 10)) }
func (w *TextWriter) WriteBulk(b []byte)        { w.add("$" + string(b)) }
func (w *TextWriter) WriteBulkString(s string)  { w.add("$" + s) }
func (w *TextWriter) WriteNull()                { w.add("(nil)") }
func (w *TextWriter) WriteNullArray()           { w.add("(nilarray)") }
func (w *TextWriter) WriteArray(n int)          { w.add("*" + strconv.Itoa(n)) }
func (w *TextWriter) WriteMap(n int)            { w.add("%" + strconv.Itoa(n)) }
func (w *TextWriter) WriteSet(n int)            { w.add("~" + strconv.Itoa(n)) }
func (w *TextWriter) WriteBool(v bool)          { w.add("#" + strconv.FormatBool(v)) }
func (w *TextWriter) WriteDouble(f float64)     { w.add("," + strconv.FormatFloat(f, 'g', -1, 64)) }
func (w *TextWriter) WriteVerbatim(_, s string) { w.add("=" + s) }
func (w *TextWriter) WriteBigNumber(s string)   { w.add("(" + s) }
