package server

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// flat is w's whole output: its sealed segments, then b.
func (w *respWriter) flat() []byte {
	var out []byte
	for _, s := range w.segs {
		out = append(out, s...)
	}
	return append(out, w.b...)
}

// A connection's writer seals a large buffer rather than growing it
// (respWriter.segs): its output, segments then buffer, is what one
// buffer would hold, write for write, and truncate takes it back to any
// earlier size, across segments too.
func TestRespWriter_SegmentsKeepTheOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 8 {
		sealed := &respWriter{proto: 2 + round%2, seal: true}
		plain := &respWriter{proto: sealed.proto}
		var marks []int
		for range 150 {
			var do func(w *respWriter)
			switch r.IntN(5) {
			case 0: // a big value
				v := bytes.Repeat([]byte{byte('a' + r.IntN(26))}, segMin/2+r.IntN(2*segMin))
				do = func(w *respWriter) { w.WriteBulk(v) }
			case 1:
				s := strings.Repeat("s", r.IntN(3000))
				do = func(w *respWriter) { w.WriteBulkString(s) }
			case 2:
				n := r.Int64()
				do = func(w *respWriter) { w.WriteArray(3); w.WriteInt(n); w.WriteDouble(1.5) }
			case 3:
				do = func(w *respWriter) { w.WriteMap(1); w.WriteNull(); w.WriteVerbatim("txt", "x") }
			default:
				do = func(w *respWriter) { w.WriteStatus("OK"); w.WriteError("ERR e") }
			}
			do(sealed)
			do(plain)
			marks = append(marks, plain.size())
		}
		if len(sealed.segs) < 2 {
			t.Fatalf("round %d: %d segments for %d bytes: the buffer was not sealed", round, len(sealed.segs), sealed.size())
		}
		for _, s := range sealed.segs {
			if len(s) < segMin/2 {
				t.Fatalf("round %d: a segment of %d bytes, under segMin/2", round, len(s))
			}
		}
		if sealed.size() != len(sealed.flat()) || !bytes.Equal(sealed.flat(), plain.b) {
			t.Fatalf("round %d: the sealed output (%d bytes) is not the plain one (%d)", round, sealed.size(), len(plain.b))
		}
		for range 5 {
			n := marks[r.IntN(len(marks))]
			sealed.truncate(n)
			if got := sealed.flat(); sealed.size() != n || !bytes.Equal(got, plain.b[:n]) {
				t.Fatalf("round %d: truncate(%d) left %d bytes (size %d), not the first %d", round, n, len(got), sealed.size(), n)
			}
			sealed.WriteBulkString("after")
			plain.b = redcon.AppendBulkString(plain.b[:n], "after")
			if !bytes.Equal(sealed.flat(), plain.b) {
				t.Fatalf("round %d: a write after truncate(%d) is not where one buffer has it", round, n)
			}
			marks = append(marks[:0], plain.size())
		}
		sealed.reset()
		if sealed.size() != 0 || len(sealed.segs) != 0 {
			t.Fatalf("round %d: reset left %d bytes", round, sealed.size())
		}
	}
}

// dialSetUp dials addr and, if setup has commands, says HELLO 3 and
// sends them, each reply read.
func dialSetUp(t *testing.T, addr string, setup []string) *rawClient {
	t.Helper()
	c := dial(t, addr)
	if setup != nil {
		c.hello3()
		for _, cmd := range setup {
			c.send(encode(strings.Fields(cmd)...))
			c.read()
		}
	}
	return c
}

// readAndCompare reads len(want) bytes from c and fails at the first that
// differs, allocating nothing per read.
func readAndCompare(t *testing.T, c *rawClient, want []byte) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for off := 0; off < len(want); {
		c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := c.rd.Read(buf[:min(len(buf), len(want)-off)])
		if !bytes.Equal(buf[:n], want[off:off+n]) {
			t.Fatalf("the reply differs from byte %d on: %.40q", off, buf[:n])
		}
		off += n
		if err != nil && off < len(want) {
			if err == io.EOF {
				t.Fatalf("closed after %d bytes of %d", off, len(want))
			}
			t.Fatalf("after %d bytes of %d: %v", off, len(want), err)
		}
	}
}

// A large reply costs about its own size in the server: an MGET of 32
// values of 1 MB, and a script's table of 32768 strings of 1 KB (small
// writes), each 32 MB of reply, are written whole and in order on every
// path a connection may take (its event loop hands it to its goroutine;
// the goroutine alone; a push-capable connection, whose flusher shares
// the buffer), with at most 1.5 times the reply allocated. One growing
// buffer allocated about four times the reply (each growth copies it),
// and held three to four times it at its peak.
func TestLargeReply_CostsAboutItsSize(t *testing.T) {
	const n, size = 32, 1 << 20
	value := strings.Repeat("v", size)
	mget := []string{"MGET"}
	var wantMGET []byte
	wantMGET = redcon.AppendArray(wantMGET, n)
	for range n {
		mget = append(mget, "big")
		wantMGET = redcon.AppendBulkString(wantMGET, value)
	}
	leaf := strings.Repeat("x", 1024)
	var wantEval []byte
	wantEval = redcon.AppendArray(wantEval, 32768)
	for range 32768 {
		wantEval = redcon.AppendBulkString(wantEval, leaf)
	}
	for _, tc := range []struct {
		name  string
		opts  []Option
		setup []string
	}{
		{"event loop", nil, nil},
		{"goroutine", []Option{WithConfig(func(c *Config) { c.NoEventLoop = true })}, nil},
		{"tracking", nil, []string{"CLIENT TRACKING on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := RunT(t, tc.opts...)
			srv.Set("big", value, 0)
			for _, q := range []struct {
				req  string
				want []byte
			}{
				{encode(mget...), wantMGET},
				{encode("EVAL", "local s = string.rep('x', 1024) local t = {} for i = 1, 32768 do t[i] = s end return t", "0"), wantEval},
			} {
				c := dialSetUp(t, srv.Addr(), tc.setup)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c.send(q.req)
				readAndCompare(t, c, q.want)
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(q.want))*3/2 {
					t.Errorf("%.30q: allocated %d MB for a reply of %d MB", q.req, grew>>20, len(q.want)>>20)
				}
				if got := c.do("PING"); got != "+PONG\r\n" {
					t.Fatalf("PING after: %q", got)
				}
			}
		})
	}
}

// A command that panics after a large reply in the same EXEC has that
// reply taken back across its segments (client.takeBack): EXEC's reply
// is the error alone, and the connection goes on in step.
func TestLargeReply_TakenBackAcrossSegments(t *testing.T) {
	srv := RunT(t)
	srv.eng.Register(&engine.Command{Name: "testpanic", Arity: 1, Flags: engine.FlagWrite, Fn: func(c *engine.Ctx) { panic("test") }})
	srv.Set("big", strings.Repeat("v", 1<<20), 0)
	c := dial(t, srv.Addr())
	c.do("MULTI")
	c.do("MGET", "big", "big", "big")
	c.do("TESTPANIC")
	if got := c.do("EXEC"); got != "-ERR internal error\r\n" {
		t.Fatalf("EXEC with a large reply, then a panic = %.60q (%d bytes)", got, len(got))
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after = %q", got)
	}
	if got := c.do("STRLEN", "big"); got != ":"+strconv.Itoa(1<<20)+"\r\n" {
		t.Fatalf("STRLEN after = %q", got)
	}
}
