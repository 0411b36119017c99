package server

import (
	"math"
	"testing"
)

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
		// NaNs as glibc's printf writes them: the sign bit is kept
		{"nan", func(w *respWriter) { w.WriteDouble(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n"},
		{"-nan", func(w *respWriter) { w.WriteDouble(math.Copysign(math.NaN(), -1)) }, "$4\r\n-nan\r\n", ",-nan\r\n"},
		{"verbatim", func(w *respWriter) { w.WriteVerbatim("txt", "hi") }, "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
		{"error newline", func(w *respWriter) { w.WriteError("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
	}
	for _, c := range cases {
		for _, proto := range []int{2, 3} {
			w := &respWriter{proto: proto}
			c.do(w)
			want := c.resp2
			if proto == 3 {
				want = c.resp3
			}
			if string(w.b) != want {
				t.Errorf("%s on RESP%d: got %q, want %q", c.name, proto, w.b, want)
			}
		}
	}
}
