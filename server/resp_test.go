package server

import (
	"math"
	"testing"

	"github.com/tidwall/redcon"
)

// bufConn records what respWriter writes, through redcon's own encoders.
type bufConn struct {
	redcon.Conn
	b []byte
}

func (c *bufConn) WriteString(s string)     { c.b = redcon.AppendString(c.b, s) }
func (c *bufConn) WriteError(s string)      { c.b = redcon.AppendError(c.b, s) }
func (c *bufConn) WriteInt(n int)           { c.b = redcon.AppendInt(c.b, int64(n)) }
func (c *bufConn) WriteInt64(n int64)       { c.b = redcon.AppendInt(c.b, n) }
func (c *bufConn) WriteBulk(b []byte)       { c.b = redcon.AppendBulk(c.b, b) }
func (c *bufConn) WriteBulkString(s string) { c.b = redcon.AppendBulkString(c.b, s) }
func (c *bufConn) WriteArray(n int)         { c.b = redcon.AppendArray(c.b, n) }
func (c *bufConn) WriteNull()               { c.b = redcon.AppendNull(c.b) }
func (c *bufConn) WriteRaw(b []byte)        { c.b = append(c.b, b...) }

func TestRespWriter_EncodingsPerProtocol(t *testing.T) {
	type write func(w *respWriter)
	cases := []struct {
		name  string
		do    write
		resp2 string
		resp3 string
	}{
		{"null", func(w *respWriter) { w.WriteNull() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *respWriter) { w.WriteNullArray() }, "*-1\r\n", "_\r\n"},
		{"map", func(w *respWriter) { w.WriteMap(1); w.WriteBulkString("k"); w.WriteInt(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{"set", func(w *respWriter) { w.WriteSet(2); w.WriteStatus("a"); w.WriteStatus("b") }, "*2\r\n+a\r\n+b\r\n", "~2\r\n+a\r\n+b\r\n"},
		{"push", func(w *respWriter) { w.WritePush(1); w.WriteBulkString("m") }, "*1\r\n$1\r\nm\r\n", ">1\r\n$1\r\nm\r\n"},
		{"true", func(w *respWriter) { w.WriteBool(true) }, ":1\r\n", "#t\r\n"},
		{"false", func(w *respWriter) { w.WriteBool(false) }, ":0\r\n", "#f\r\n"},
		{"double", func(w *respWriter) { w.WriteDouble(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"inf", func(w *respWriter) { w.WriteDouble(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"-inf", func(w *respWriter) { w.WriteDouble(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"verbatim", func(w *respWriter) { w.WriteVerbatim("txt", "hi") }, "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
		{"error newline", func(w *respWriter) { w.WriteError("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
	}
	for _, c := range cases {
		for _, proto := range []int{2, 3} {
			conn := &bufConn{}
			w := &respWriter{conn: conn, proto: proto}
			c.do(w)
			want := c.resp2
			if proto == 3 {
				want = c.resp3
			}
			if string(conn.b) != want {
				t.Errorf("%s on RESP%d: got %q, want %q", c.name, proto, conn.b, want)
			}
		}
	}
}
