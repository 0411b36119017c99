package server

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/redcon"

	"github.com/tumblerdb/tumbler/engine"
)

// chunkReader hands out its input in reads of random sizes.
type chunkReader struct {
	b   []byte
	rng *rand.Rand
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.Intn(c.max)
	if n > len(p) {
		n = len(p)
	}
	if n > len(c.b) {
		n = len(c.b)
	}
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// readAllCmds returns every command's arguments (copied) and the error that
// ended the stream.
func readAllCmds(t *testing.T, next func() ([]redcon.Command, error)) ([]string, error) {
	t.Helper()
	var out []string
	for i := 0; i < 1_000_000; i++ {
		cmds, err := next()
		if err != nil {
			return out, err
		}
		for _, c := range cmds {
			out = append(out, fmt.Sprintf("%q", c.Args))
		}
	}
	t.Fatal("reader does not finish")
	return nil, nil
}

func randomRequests(rng *rand.Rand, n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		switch rng.Intn(10) {
		case 0:
			b = append(b, "SET k \"a b\\n\" 'x'\r\n"...)
		case 1:
			b = append(b, "PING\n"...)
		default:
			args := make([][]byte, 1+rng.Intn(6))
			for j := range args {
				size := rng.Intn(40)
				if rng.Intn(50) == 0 {
					size = 5_000 + rng.Intn(60_000) // a large bulk: the buffer grows
				}
				a := make([]byte, size)
				rng.Read(a)
				args[j] = a
			}
			b = redcon.AppendArray(b, len(args))
			for _, a := range args {
				b = redcon.AppendBulk(b, a)
			}
		}
	}
	return b
}

// The in-place reader returns exactly what redcon's reader returns, for
// any split of the input into reads.
func TestCmdReader_MatchesRedcon(t *testing.T) {
	for seed := int64(0); seed < 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		in := randomRequests(rng, 300)
		want, werr := readAllCmds(t, redcon.NewReader(bytes.NewReader(in)).ReadCommands)
		r := newCmdReader(&chunkReader{b: in, rng: rng, max: 1 + rng.Intn(9000)})
		got, gerr := readAllCmds(t, r.ReadCommands)
		if werr != io.EOF || gerr != io.EOF {
			t.Fatalf("seed %d: errors %v (redcon) and %v", seed, werr, gerr)
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d commands, redcon %d", seed, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("seed %d: command %d differs:\n got %.200s\nwant %.200s", seed, i, got[i], want[i])
			}
		}
	}
}

// Requests before a bad one are handed out first; the error comes with the
// next call, with redcon's text.
func TestCmdReader_ErrorsAfterTheGoodRequests(t *testing.T) {
	cases := []struct{ in, err string }{
		{"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPINGxx", "Protocol error: invalid bulk length"},
		{"*1\r\n$4\r\nPING\r\nSET \"a\r\n", "Protocol error: unbalanced quotes in request"},
		{"*1\r\n$4\r\nPING\r\n*1\r\n+x\r\n", "Protocol error: expected '$', got '+'"},
		{"*1\r\n$4\r\nPING\r\n*x\r\n", "Protocol error: invalid multibulk length"},
		{"*1\r\n$4\r\nPING\r\n*1\r\n$-2\r\n", "Protocol error: invalid bulk length"},
	}
	for _, tc := range cases {
		r := newCmdReader(bytes.NewReader([]byte(tc.in)))
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != 1 || string(cmds[0].Args[0]) != "PING" {
			t.Fatalf("%q: first call = %q, %v; want PING", tc.in, cmds, err)
		}
		if _, err = r.ReadCommands(); err == nil || err.Error() != tc.err {
			t.Fatalf("%q: second call error %v, want %q", tc.in, err, tc.err)
		}
		_, rerr := redcon.NewReader(bytes.NewReader([]byte(tc.in[len("*1\r\n$4\r\nPING\r\n"):]))).ReadCommands()
		if rerr == nil || rerr.Error() != tc.err {
			t.Fatalf("%q: redcon says %v, the test expects %q", tc.in, rerr, tc.err)
		}
	}
}

// A header line ends at its first CR and the byte after it, whatever it
// is, as in Redis: a LF before the CR is part of the line, so the line is
// not complete (and not an error) until a CR and one more byte come.
func TestCmdReader_HeaderLineEndsAtItsCR(t *testing.T) {
	cmds, err := newCmdReader(bytes.NewReader([]byte("*2\r\n$4\rXECHO\r\n$2\r\x00hi\r\n"))).ReadCommands()
	if err != nil || len(cmds) != 1 || string(bytes.Join(cmds[0].Args, []byte(" "))) != "ECHO hi" {
		t.Fatalf("got %q, %v; want ECHO hi", cmds, err)
	}
	_, err = newCmdReader(bytes.NewReader([]byte("*1\r\n$4\nPI"))).ReadCommands()
	if err != io.EOF {
		t.Fatalf("a line without its CR yet: %v, want io.EOF (more input needed)", err)
	}
	_, err = newCmdReader(bytes.NewReader([]byte("*1\r\n$4\nPING\r\n"))).ReadCommands()
	if err == nil || err.Error() != "Protocol error: invalid bulk length" {
		t.Fatalf("the line complete: %v, want invalid bulk length", err)
	}
}

// Blank inline lines are no command, as in Redis and redcon.
func TestCmdReader_BlankLines(t *testing.T) {
	r := newCmdReader(bytes.NewReader([]byte("\r\n   \r\n\nPING\r\n")))
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) != 1 || string(cmds[0].Args[0]) != "PING" {
		t.Fatalf("got %q, %v", cmds, err)
	}
}

// loopReader serves the same bytes forever.
type loopReader struct{ b []byte }

func (l *loopReader) Read(p []byte) (int, error) { return copy(p, l.b), nil }

// Reading a pipeline costs no allocation once the buffers have grown.
func TestCmdReader_NoAllocationPerBatch(t *testing.T) {
	var batch []byte
	for i := 0; i < 16; i++ {
		batch = append(batch, "*6\r\n$3\r\nset\r\n$12\r\nlk:000000001\r\n$32\r\n0123456789abcdef0123456789abcdef\r\n$2\r\nPX\r\n$5\r\n30000\r\n$2\r\nNX\r\n"...)
	}
	r := newCmdReader(&loopReader{b: batch})
	for i := 0; i < 10; i++ {
		if _, err := r.ReadCommands(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != 16 || len(cmds[15].Args) != 6 {
			t.Fatalf("got %d commands, %v", len(cmds), err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per batch, want 0", allocs)
	}
}

// Inline requests are split as Redis's processInlineBuffer splits them
// (one "\r" before the "\n" dropped, then sdssplitargs), and reading a
// batch of them allocates nothing once the buffers have grown: redcon's
// parser, used before, allocated 4 KiB a request, and redis-cli --pipe of
// a text file of 1M SETs took 25 s (Redis: 9 s).
func TestCmdReader_Inline(t *testing.T) {
	in := "SET k \"a b\\x41\" 'c\\'d'\r\n" + // quotes and escapes
		"ECHO\tx\v\r\r\n" + // tab separates; a second \r is a separator too
		"\r  \n" + // no words: no command
		"ECHO a\"b c\"\n" // a quote inside a word opens quotes
	r := newCmdReader(bytes.NewReader([]byte(in)))
	got, err := readAllCmds(t, r.ReadCommands)
	want := []string{`["SET" "k" "a bA" "c'd"]`, `["ECHO" "x\v"]`, `["ECHO" "ab c"]`}
	if err != io.EOF || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}

	batch := bytes.Repeat([]byte("SET lock:000000000001 0123456789abcdef0123456789abcdef NX PX 30000\r\n"), 16)
	r = newCmdReader(&loopReader{b: batch})
	for i := 0; i < 10; i++ {
		if _, err := r.ReadCommands(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) == 0 || len(cmds[0].Args) != 6 || string(cmds[0].Args[5]) != "30000" {
			t.Fatalf("got %q, %v", cmds, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per batch, want 0", allocs)
	}
}

// A large request grows the buffer once to its size; once the buffer is
// empty again it goes back to the small size.
func TestCmdReader_LargeBulkThenShrink(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	in := redcon.AppendBulk(redcon.AppendArray(nil, 1), big)
	in = append(in, "*1\r\n$4\r\nPING\r\n"...)
	r := newCmdReader(&chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 64 << 10})
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) < 1 || !bytes.Equal(cmds[0].Args[0], big) {
		t.Fatalf("big bulk not read back: %v", err)
	}
	if len(r.buf) > 2*len(in) {
		t.Fatalf("buffer grew to %d for a %d-byte request", len(r.buf), len(in))
	}
	if len(cmds) == 1 {
		if cmds, err = r.ReadCommands(); err != nil || string(cmds[0].Args[0]) != "PING" {
			t.Fatalf("PING after the big bulk: %q %v", cmds, err)
		}
	}
	if _, err := r.ReadCommands(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if len(r.buf) > readerMaxIdle {
		t.Fatalf("buffer kept at %d bytes once empty", len(r.buf))
	}
}

func BenchmarkCmdReader_SetNXPXBatch16(b *testing.B) {
	var batch []byte
	for i := 0; i < 16; i++ {
		batch = append(batch, "*6\r\n$3\r\nset\r\n$12\r\nlk:000000001\r\n$32\r\n0123456789abcdef0123456789abcdef\r\n$2\r\nPX\r\n$5\r\n30000\r\n$2\r\nNX\r\n"...)
	}
	r := newCmdReader(&loopReader{b: batch})
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for i := 0; i < b.N; i++ {
		if _, err := r.ReadCommands(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCmdReader_InlineSetNXPXBatch16(b *testing.B) {
	batch := bytes.Repeat([]byte("SET lock:000000000001 0123456789abcdef0123456789abcdef NX PX 30000\r\n"), 16)
	r := newCmdReader(&loopReader{b: batch})
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for i := 0; i < b.N; i++ {
		if _, err := r.ReadCommands(); err != nil {
			b.Fatal(err)
		}
	}
}

// A bulk's announced length reserves nothing: the buffer grows with what
// arrives (at most about twice it), so a client cannot hold memory it
// never sends.
func TestCmdReader_GrowsWithDataNotWithAnnouncedLength(t *testing.T) {
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n")
	in = append(in, bytes.Repeat([]byte("x"), 100_000)...)
	r := newCmdReader(&chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 4096})
	if _, err := r.ReadCommands(); err != io.EOF {
		t.Fatalf("incomplete request: %v, want EOF", err)
	}
	if len(r.buf) > 2*len(in)+readerMinBuf {
		t.Fatalf("buffer of %d bytes for %d received", len(r.buf), len(in))
	}
}

// bufferCounter counts the distinct buffers a reader reads into.
type bufferCounter struct {
	io.Reader
	ends map[*byte]bool
}

func (b *bufferCounter) Read(p []byte) (int, error) {
	b.ends[&p[:cap(p)][cap(p)-1]] = true
	return b.Reader.Read(p)
}

// An argument of up to readerJumpMax arriving in pieces gets its buffer
// at once, as Redis sizes its query buffer for a large argument: a 100 KB
// value made five buffers, each zeroed and copied into the next.
func TestCmdReader_ModerateArgumentSizedAtOnce(t *testing.T) {
	const n = 100_000
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", n) + "\r\n")
	bc := &bufferCounter{Reader: &chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 4096}, ends: map[*byte]bool{}}
	r := newCmdReader(bc)
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) != 1 || len(cmds[0].Args[2]) != n {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	if len(bc.ends) > 2 { // the first, small one, and one of the request's size
		t.Fatalf("a %d-byte request was read into %d buffers", len(in), len(bc.ends))
	}
	if cs := readBufSize(len(in) + readerMinReadSz); len(r.buf) > cs {
		t.Fatalf("a %d-byte request grew the buffer to %d (its pool's size: %d)", len(in), len(r.buf), cs)
	}
}

// A large request of many small arguments grows its buffer geometrically:
// grown by what the next argument needed, a 1 MB request was read into
// about 200 buffers, each a copy of the last.
func TestCmdReader_ManyArgumentsBufferDoubles(t *testing.T) {
	for _, members := range []int{20_000, 80_000} { // about 250 KB and 1 MB
		var b strings.Builder
		b.WriteString("*" + strconv.Itoa(members+2) + "\r\n$4\r\nSADD\r\n$1\r\ns\r\n")
		for i := range members {
			m := strconv.Itoa(1_000_000 + i)
			b.WriteString("$" + strconv.Itoa(len(m)) + "\r\n" + m + "\r\n")
		}
		in := []byte(b.String())
		bc := &bufferCounter{Reader: &chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 4096}, ends: map[*byte]bool{}}
		r := newCmdReader(bc)
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != 1 || len(cmds[0].Args) != members+2 {
			t.Fatalf("%d commands, %v", len(cmds), err)
		}
		// 4 KB grown by half again past the request's size, and the odd one more
		if max := int(math.Log(float64(len(in))/readerMinBuf)/math.Log(1.5)) + 3; len(bc.ends) > max {
			t.Fatalf("a %d-byte request of %d arguments was read into %d buffers (want at most %d)", len(in), members+2, len(bc.ends), max)
		}
	}
}

// A request of many large arguments (each past readerMaxIdle, the request
// past readerJumpMax) grows its buffer geometrically too: grown to what
// the request needed so far, 160 arguments of 100 KB were read into 161
// buffers, 1.27 GB copied.
func TestCmdReader_ManyLargeArgumentsBufferGrowsGeometrically(t *testing.T) {
	for _, args := range []int{40, 160} {
		const n = 100_000
		val := strings.Repeat("v", n)
		var b strings.Builder
		b.WriteString("*" + strconv.Itoa(args+2) + "\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n")
		for range args {
			b.WriteString("$" + strconv.Itoa(n) + "\r\n" + val + "\r\n")
		}
		in := []byte(b.String())
		bc := &bufferCounter{Reader: &chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 64 << 10}, ends: map[*byte]bool{}}
		r := newCmdReader(bc)
		r.pool = newReadBufPool(readBufsIdle)
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != 1 || len(cmds[0].Args) != args+2 || string(cmds[0].Args[args+1]) != val {
			t.Fatalf("%d commands, %v", len(cmds), err)
		}
		if max := int(math.Log(float64(len(in))/readerMinBuf)/math.Log(1.5)) + 3; len(bc.ends) > max {
			t.Fatalf("a %d-byte request of %d arguments of %d bytes was read into %d buffers (want at most %d)", len(in), args, n, len(bc.ends), max)
		}
		if len(r.buf) > 2*len(in) {
			t.Fatalf("a %d-byte request grew the buffer to %d", len(in), len(r.buf))
		}
	}
}

// A large request's read buffer goes to the pool once the request has
// run, and the next large request, on another connection, is read into
// it: its arguments are its own, whatever the buffer held before.
func TestCmdReader_LargeBufferReusedFromThePool(t *testing.T) {
	const n = 100_000
	req := func(v string) []byte {
		return []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat(v, n) + "\r\n")
	}
	pool := newReadBufPool(readBufsIdle)
	read := func(in []byte) (*cmdReader, *bufferCounter, []byte) {
		bc := &bufferCounter{Reader: &chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 4096}, ends: map[*byte]bool{}}
		r := newCmdReader(bc)
		r.pool = pool
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != 1 || len(cmds[0].Args) != 3 {
			t.Fatalf("%d commands, %v", len(cmds), err)
		}
		return r, bc, cmds[0].Args[2]
	}
	ra, bca, va := read(req("a"))
	if !bytes.Equal(va, bytes.Repeat([]byte("a"), n)) {
		t.Fatal("the first value was read wrong")
	}
	large := &ra.buf[len(ra.buf)-1]
	if !bca.ends[large] {
		t.Fatal("the first request was not read into its reader's buffer")
	}
	ra.trim() // the request has run
	if ra.buf != nil {
		t.Fatalf("an idle reader kept its %d-byte buffer", len(ra.buf))
	}
	rb, bcb, vb := read(req("b"))
	if !bcb.ends[large] || &rb.buf[len(rb.buf)-1] != large {
		t.Fatalf("the second large request was not read into the pooled buffer (%d buffers)", len(bcb.ends))
	}
	if !bytes.Equal(vb, bytes.Repeat([]byte("b"), n)) {
		t.Fatal("the second value, read into the pooled buffer, is wrong")
	}
}

// The pool keeps at most readBufsBudget bytes of buffers, takes only
// buffers of its own sizes, gives out buffers of the size asked for, and
// rounds a size up by at most a quarter.
func TestReadBufPool_Bounds(t *testing.T) {
	pool := newReadBufPool(readBufsIdle)
	for _, size := range readBufSizes {
		for range readBufsBudget/size + 2 {
			pool.put(make([]byte, size))
		}
		if held := pool.held.Load(); held > readBufsBudget {
			t.Fatalf("the pool holds %d bytes", held)
		}
		if b := pool.get(size); len(b) != size || cap(b) != size {
			t.Fatalf("asked for %d bytes, got %d (cap %d)", size, len(b), cap(b))
		}
	}
	held := 0
	for i, ch := range pool.bufs {
		held += len(ch) * readBufSizes[i]
	}
	if int64(held) != pool.held.Load() {
		t.Fatalf("the pool holds %d bytes and counts %d", held, pool.held.Load())
	}
	for _, size := range []int{readerMaxIdle, 100_000, 3<<17 + 1, 4<<20 + 1, 8 << 20} {
		if _, ok := pool.class(size); ok {
			t.Fatalf("the pool holds %d-byte buffers", size)
		}
		pool.put(make([]byte, size)) // not a pool size: dropped
		if b := pool.get(size); len(b) != size {
			t.Fatalf("asked for %d bytes, got %d", size, len(b))
		}
	}
	for n, want := range map[int]int{1: 1, readerMaxIdle: readerMaxIdle, readerMaxIdle + 1: 80 << 10, 100_000: 112 << 10,
		128 << 10: 128 << 10, 128<<10 + 1: 160 << 10, 140_000: 160 << 10, 3 << 20: 3 << 20, 3<<20 + 1: 7 << 19, 4 << 20: 4 << 20, 4<<20 + 1: 4<<20 + 1} {
		if got := readBufSize(n); got != want {
			t.Errorf("readBufSize(%d) = %d, want %d", n, got, want)
		}
	}
	for n := readerMaxIdle + 1; n <= 4<<20; n += 997 {
		if got := readBufSize(n); got < n || got > n+n/4 {
			t.Fatalf("readBufSize(%d) = %d: more than a quarter over", n, got)
		}
	}
}

// The pool lets its buffers go when the server must free memory (drain,
// which the engine calls before a forced collection: a maxmemory check
// found used memory over the limit), and by itself once no large request
// has come for its idle time. Before, 10 MB stayed pooled for good,
// counted in used_memory: a server with maxmemory 14mb refused every
// write after one burst of large requests.
func TestReadBufPool_LetsGo(t *testing.T) {
	pool := newReadBufPool(readBufsIdle)
	pool.put(make([]byte, 128<<10))
	pool.put(make([]byte, 4<<20))
	if pool.held.Load() != 128<<10+4<<20 {
		t.Fatalf("held %d", pool.held.Load())
	}
	pool.drain()
	if pool.held.Load() != 0 || len(pool.bufs[0]) != 0 {
		t.Fatalf("after drain: held %d", pool.held.Load())
	}

	pool = newReadBufPool(50 * time.Millisecond)
	pool.put(make([]byte, 256<<10))
	// in use: a get and a put every 10 ms keep it
	for range 10 {
		time.Sleep(10 * time.Millisecond)
		pool.put(pool.get(256 << 10))
	}
	if pool.held.Load() != 256<<10 {
		t.Fatalf("a pool in use let its buffer go: held %d", pool.held.Load())
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool.held.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an unused pool still holds %d bytes", pool.held.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A large argument arriving in pieces grows the read buffer to what it
// needs, not to the next power of two.
func TestCmdReader_LargeArgumentBufferFits(t *testing.T) {
	const n = 5_000_000
	in := []byte("*2\r\n$3\r\nSET\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", n) + "\r\n")
	r := newCmdReader(&chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 64 << 10})
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) != 1 || !bytes.Equal(cmds[0].Args[1], in[len(in)-n-2:len(in)-2]) {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	if len(r.buf) > len(in)+readerMinReadSz {
		t.Fatalf("a %d-byte request grew the buffer to %d", len(in), len(r.buf))
	}
}

// Once a large request has run, the reader keeps nothing that points into
// its buffer: the argument and command arrays it reuses held the dropped
// buffer alive (twenty idle clients that had each sent a 3 MB value held
// 60 MB while CLIENT LIST said 4 KB each).
func TestCmdReader_IdleReaderKeepsNoLargeBuffer(t *testing.T) {
	const n = 3 << 20
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("v", n) + "\r\n")
	r := newCmdReader(&chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 64 << 10})
	r.pool = newReadBufPool(readBufsIdle)
	if cmds, err := r.ReadCommands(); err != nil || len(cmds) != 1 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	r.trim() // the request has run
	if r.buf != nil {
		t.Fatalf("the reader kept its %d-byte buffer", len(r.buf))
	}
	for i, a := range r.args[:cap(r.args)] {
		if a != nil {
			t.Fatalf("argument slot %d still points at %d bytes", i, len(a))
		}
	}
	for i, c := range r.cmds[:cap(r.cmds)] {
		if c.Raw != nil || c.Args != nil {
			t.Fatalf("command slot %d still points into the buffer", i)
		}
	}
}

// The shared pool's buffers go before the engine forces a collection
// (engine.OnReleaseMemory): on MEMORY PURGE, and when a maxmemory check
// finds used memory over the limit, so that pooled buffers never refuse a
// write.
func TestReadBufs_DrainedBeforeAForcedCollection(t *testing.T) {
	srv := RunT(t)
	c := dial(t, srv.Addr())
	sharedReadBufs.put(make([]byte, 4<<20))
	if sharedReadBufs.held.Load() == 0 {
		t.Fatal("the pool took no buffer")
	}
	c.expectDo("+OK\r\n", "MEMORY", "PURGE")
	if held := sharedReadBufs.held.Load(); held != 0 {
		t.Fatalf("after MEMORY PURGE the pool holds %d bytes", held)
	}
	sharedReadBufs.put(make([]byte, 4<<20))
	c.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory", "1")
	c.expectDo("-"+engine.ErrOOM+"\r\n", "SET", "k", "v")
	c.expectDo("+OK\r\n", "CONFIG", "SET", "maxmemory", "0")
	if held := sharedReadBufs.held.Load(); held != 0 {
		t.Fatalf("after a maxmemory check the pool holds %d bytes", held)
	}
}

// A request of many small arguments arriving a little at a time is parsed
// whole once, when it is complete: before, each read parsed it again from
// its start (500,000 arguments trickled in 1 KB writes took 1.4 s of CPU,
// Redis 0.12 s). Its arguments, and what CLIENT LIST counts while it is
// partial (pskip, pargv, pneed), are as a parse from the start gives.
func TestCmdReader_PartialRequestNotParsedAgain(t *testing.T) {
	const members = 20_000
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(members+2) + "\r\n$4\r\nSADD\r\n$1\r\ns\r\n")
	for i := range members {
		m := strconv.Itoa(i)
		b.WriteString("$" + strconv.Itoa(len(m)) + "\r\n" + m + "\r\n")
	}
	in := []byte(b.String())
	r := newCmdReader(&chunkReader{b: in, rng: rand.New(rand.NewSource(1)), max: 256})
	// read it piece by piece, checking the partial figures against a
	// fresh reader's parse of the same bytes
	r.once = true
	reads := 0
	for {
		cmds, err := r.ReadCommands()
		if err == errWouldBlock {
			if reads++; reads%37 != 0 {
				continue
			}
			fresh := newCmdReader(bytes.NewReader(nil))
			fresh.buf = append([]byte(nil), r.buf[r.start:r.end]...)
			fresh.end = len(fresh.buf)
			if err := fresh.parse(); err != nil {
				t.Fatal(err)
			}
			if fresh.pskip != r.pskip || fresh.pargv != r.pargv || fresh.pneed != r.pneed {
				t.Fatalf("after %d reads: pskip/pargv/pneed %d/%d/%d, a parse from the start %d/%d/%d",
					reads, r.pskip, r.pargv, r.pneed, fresh.pskip, fresh.pargv, fresh.pneed)
			}
			continue
		}
		if err != nil || len(cmds) != 1 || len(cmds[0].Args) != members+2 {
			t.Fatalf("%d commands, %v", len(cmds), err)
		}
		for i, a := range cmds[0].Args[2:] {
			if string(a) != strconv.Itoa(i) {
				t.Fatalf("member %d is %q", i, a)
			}
		}
		break
	}
	if reads < 100 {
		t.Fatalf("the request came in %d reads: the test needs many", reads)
	}
	if r.wholes > 2 { // the first read's, and the complete request's
		t.Fatalf("a request that came in %d reads was parsed from its start %d times", reads, r.wholes)
	}
}

// piecesReader hands out one piece of its input a read.
type piecesReader struct{ pieces []string }

func (p *piecesReader) Read(b []byte) (int, error) {
	if len(p.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.pieces[0])
	if p.pieces[0] = p.pieces[0][n:]; p.pieces[0] == "" {
		p.pieces = p.pieces[1:]
	}
	return n, nil
}

// dropIdle, which the event loop calls after each batch, gives the buffer
// up when the batch left nothing unparsed, with nothing left pointing
// into it (from this batch or an earlier, longer one), and publishes that
// the client holds no buffer (CLIENT LIST, maxmemory-clients); it keeps a
// buffer a partial request is in.
func TestCmdReader_DropIdle(t *testing.T) {
	r := newCmdReader(&piecesReader{pieces: []string{
		// three whole requests (8 arguments)
		"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n",
		"*1\r\n$4\r\nPING\r\n",
		// a request, then part of another
		"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab",
		"cde\r\n",
	}})
	r.pool = newReadBufPool(readBufsIdle)
	var waiting atomic.Uint64
	r.waiting = &waiting
	r.once = true // one read a call, as the loop reads
	batch := func(want int) {
		t.Helper()
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != want {
			t.Fatalf("%d commands, %v; want %d", len(cmds), err, want)
		}
		r.trim() // the batch has run
		r.dropIdle()
	}
	idle := func() {
		t.Helper()
		if r.buf != nil {
			t.Fatalf("an idle reader kept its %d-byte buffer", len(r.buf))
		}
		for i, a := range r.args[:cap(r.args)] {
			if a != nil {
				t.Fatalf("argument slot %d still points into the buffer given up", i)
			}
		}
		for i, c := range r.cmds[:cap(r.cmds)] {
			if c.Args != nil {
				t.Fatalf("command slot %d still points into the buffer given up", i)
			}
		}
		if partial, free := unpackWaiting(waiting.Load()); partial != 0 || free != 0 {
			t.Fatalf("published partial %d, free %d once idle; want 0, 0", partial, free)
		}
	}

	// The first batch runs on the connection's goroutine, which keeps
	// its buffer; the next, on the loop, has one argument where that had
	// eight.
	if cmds, err := r.ReadCommands(); err != nil || len(cmds) != 3 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	r.trim()
	batch(1)
	idle()

	batch(1)
	if r.buf == nil || r.partial() == 0 {
		t.Fatal("dropIdle gave up the buffer of a partial request")
	}
	if _, free := unpackWaiting(waiting.Load()); free == 0 {
		t.Fatal("published no free room while holding a partial request")
	}
	batch(1)
	idle()
}

// The event loop's reads (once) start with a buffer of 16 KB, Redis's
// PROTO_IOBUF_LEN, doubled up to readerMaxIdle while reads into it fill
// it and halved when one takes a quarter of it or less; a goroutine's
// reads start with 4 KB; and each drops an empty buffer of the other's
// size at its next read.
func TestCmdReader_LoopFirstBuffer(t *testing.T) {
	src := &piecesReader{}
	r := newCmdReader(src)
	r.pool = newReadBufPool(readBufsIdle)
	set := encode("SET", "k", strings.Repeat("v", 1024)) // 1047 bytes
	// call reads once, as the loop does for each readiness, and returns
	// the commands and the buffer's size; the input must come whole
	call := func(want int) int {
		t.Helper()
		cmds, err := r.ReadCommands()
		if err != nil || len(cmds) != want {
			t.Fatalf("%d commands, %v; want %d", len(cmds), err, want)
		}
		size := len(r.buf)
		r.trim()
		if r.once {
			r.dropIdle()
		}
		return size
	}
	r.once = true
	src.pieces = []string{strings.Repeat(set, 16)} // 16.75 KB
	if size := call(15); size != readerLoopBuf {
		t.Fatalf("the loop's first read went into %d bytes; want %d", size, readerLoopBuf)
	}
	call(1)
	// that read filled its buffer: the next has 32 KB, and the whole batch
	src.pieces = []string{strings.Repeat(set, 16)}
	if size := call(16); size != 2*readerLoopBuf {
		t.Fatalf("after a read that filled its buffer, the next went into %d bytes; want %d", size, 2*readerLoopBuf)
	}
	// 64 KB at most, however much comes at once
	most := 0
	for i := 0; i < 3; i++ {
		src.pieces = []string{strings.Repeat(set, 100)}
		for len(src.pieces) > 0 || r.partial() > 0 {
			if _, err := r.ReadCommands(); err != nil {
				t.Fatal(err)
			}
			most = max(most, len(r.buf))
			r.trim()
			r.dropIdle()
		}
	}
	if most != readerMaxIdle || r.loopBuf != readerMaxIdle {
		t.Fatalf("the loop's buffer grew to %d, the next to be %d; want %d", most, r.loopBuf, readerMaxIdle)
	}
	// Small requests bring it back down to 16 KB, halving it after
	// loopShrinkAfter of them in a row; one that fills more than a
	// quarter starts the count over.
	ping := func(want int) {
		t.Helper()
		src.pieces = []string{encode("PING")}
		if size := call(1); size != want {
			t.Fatalf("a PING went into %d bytes; want %d", size, want)
		}
	}
	for i := 0; i < loopShrinkAfter-1; i++ {
		ping(readerMaxIdle)
	}
	src.pieces = []string{strings.Repeat(set, 20)} // 20 KB: more than a quarter
	call(20)
	for i := 0; i < loopShrinkAfter; i++ {
		ping(readerMaxIdle)
	}
	for i := 0; i < loopShrinkAfter; i++ {
		ping(2 * readerLoopBuf)
	}
	ping(readerLoopBuf)
	// A 20 KB value and a GET by turns: the 32 KB buffer stays, and
	// each value is one read.
	src.pieces = []string{strings.Repeat(set, 16)}
	call(15)
	call(1)
	big := encode("SET", "k", strings.Repeat("v", 20<<10))
	for i := 0; i < 2*loopShrinkAfter; i++ {
		src.pieces = []string{big}
		if size := call(1); size != 2*readerLoopBuf {
			t.Fatalf("round %d: a 20 KB SET went into %d bytes; want %d", i, size, 2*readerLoopBuf)
		}
		src.pieces = []string{encode("GET", "k")}
		call(1)
	}
	for i := 0; i < loopShrinkAfter-1; i++ { // (the last GET was one)
		ping(2 * readerLoopBuf)
	}
	ping(readerLoopBuf)

	// A goroutine's read (the loop's buffer kept, empty) starts over
	// with 4 KB, and back on the loop with its size again.
	src.pieces = []string{encode("PING")}
	r.ReadCommands()
	r.trim()
	r.once = false
	src.pieces = []string{encode("PING")}
	if size := call(1); size != readerMinBuf {
		t.Fatalf("a goroutine's read went into %d bytes; want %d", size, readerMinBuf)
	}
	r.once = true
	src.pieces = []string{encode("PING")}
	if size := call(1); size != readerLoopBuf {
		t.Fatalf("back on the loop, a read went into %d bytes; want %d", size, readerLoopBuf)
	}

	// A read the framer cut short of the start of a header line (a
	// socket read that filled the buffer) counts as filling it.
	r.loopRead(readerLoopBuf-loopFullSlack, readerLoopBuf)
	if r.loopBuf != 2*readerLoopBuf {
		t.Fatalf("after a read %d bytes short of its room: next buffer %d; want %d", loopFullSlack, r.loopBuf, 2*readerLoopBuf)
	}
}

// After a loop batch of thousands of commands the loop takes their
// arrays (lendArrays), cleared, for the next connection's batch (trim
// keeps up to readerMaxArgs); and shrink moves a batch
// the loop hands to the goroutine into a 4 KB buffer, its arguments
// rebased there, the partial request after them intact.
func TestCmdReader_LoopBatchLeavesLittle(t *testing.T) {
	src := &piecesReader{pieces: []string{strings.Repeat(encode("PING"), 3000)}} // 42 KB
	r := newCmdReader(src)
	r.pool = newReadBufPool(readBufsIdle)
	r.once = true
	other := newCmdReader(&piecesReader{pieces: []string{encode("PING")}})
	other.once = true
	other.lent = true // (its last batch was large too)
	if fresh := newCmdReader(nil); fresh.borrowArrays(make([][]byte, 0, 1024), nil) {
		t.Fatal("a reader that lent nothing (a new connection) borrowed arrays")
	}
	lent := 0
	for len(src.pieces) > 0 || r.partial() > 0 {
		if _, err := r.ReadCommands(); err != nil {
			t.Fatal(err)
		}
		r.trim()
		r.dropIdle()
		args, cmds := r.lendArrays() // as the loop does after each batch
		if cap(r.args) > loopIdleArgs || cap(r.cmds) > loopIdleArgs {
			t.Fatalf("after a loop batch: arrays of %d arguments and %d commands kept", cap(r.args), cap(r.cmds))
		}
		if args == nil {
			continue
		}
		lent++
		for i, a := range args[:cap(args)] {
			if a != nil {
				t.Fatalf("lent arguments: slot %d still points into the buffer", i)
			}
		}
		for i, c := range cmds[:cap(cmds)] {
			if c.Args != nil {
				t.Fatalf("lent commands: slot %d still points into the buffer", i)
			}
		}
		// the next connection's batch takes them, and does not allocate its own
		if !other.borrowArrays(args, cmds) {
			t.Fatal("a reader without arrays did not borrow them")
		}
		if _, err := other.ReadCommands(); err != nil {
			t.Fatal(err)
		}
		if &other.args[:1][0] != &args[:1][0] || &other.cmds[:1][0] != &cmds[:1][0] {
			t.Fatal("the borrower's batch did not use the lent arrays")
		}
		other.trim()
		other.dropIdle()
		if a, _ := other.lendArrays(); a == nil {
			t.Fatal("the borrower did not lend the large arrays on")
		}
		other.rd = &piecesReader{pieces: []string{encode("PING")}}
	}
	if lent == 0 {
		t.Fatal("no batch had arrays to lend: the test tested nothing")
	}
	if own := (&cmdReader{args: make([][]byte, 0, 8)}); own.borrowArrays(make([][]byte, 0, 1024), nil) {
		t.Fatal("a reader with arrays of its own borrowed others")
	}

	src.pieces = []string{encode("BLPOP", "q", "0") + "PING inline\r\n" + encode("SET", "k", "v") + "*2\r\n$3\r\nGET\r\n$1\r\n"}
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) != 3 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	old := r.buf
	r.shrink()
	if len(r.buf) != readerMinBuf {
		t.Fatalf("shrink left a buffer of %d bytes; want %d", len(r.buf), readerMinBuf)
	}
	clear(old) // as if another connection read into it
	in := func(b []byte) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(r.buf)))
		return p >= lo && p < lo+uintptr(len(r.buf))
	}
	for i, want := range [][]string{{"BLPOP", "q", "0"}, {"PING", "inline"}, {"SET", "k", "v"}} {
		for j, a := range cmds[i].Args {
			if string(a) != want[j] || (i != 1 && !in(a)) { // (an inline request's words are copied)
				t.Errorf("command %d argument %d: %q (in the new buffer: %v); want %q", i, j, a, in(a), want[j])
			}
		}
	}
	r.trim()
	src.pieces = []string{"k\r\n"}
	cmds, err = r.ReadCommands()
	if err != nil || len(cmds) != 1 || string(cmds[0].Args[0]) != "GET" || string(cmds[0].Args[1]) != "k" {
		t.Fatalf("the partial request after shrink: %q, %v", cmds, err)
	}
}

// shrink leaves nothing pointing into the buffer it replaced: not the
// empty arguments (a slice of no bytes keeps its place in the buffer), nor
// what an earlier batch left in the arrays past this one's; and the
// loop does not lend arrays past readerMaxArgs (a goroutine's batch, back
// on the loop), which would then go from connection to connection.
func TestCmdReader_ShrinkLeavesNoPointerIntoTheOldBuffer(t *testing.T) {
	first := strings.Repeat(encode("SET", "k", strings.Repeat("v", 200)), 70) // 15.7 KB
	rest := encode("SET", "k", strings.Repeat("v", 1000))
	src := &piecesReader{pieces: []string{first + rest[:300]}} // (one read)
	r := newCmdReader(src)
	r.pool = newReadBufPool(readBufsIdle)
	r.once = true
	if cmds, err := r.ReadCommands(); err != nil || len(cmds) != 70 || r.partial() == 0 {
		t.Fatalf("%d commands, %v, partial %d: the first read must end in a request", len(cmds), err, r.partial())
	}
	r.trim()
	r.dropIdle() // keeps the buffer: a partial request
	src.pieces = []string{rest[300:] + encode("SET", "e", "") + encode("BLPOP", "q", "0")}
	cmds, err := r.ReadCommands()
	if err != nil || len(cmds) != 3 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	old := r.buf
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(old)))
	inOld := func(b []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return b != nil && p >= lo && p <= lo+uintptr(len(old))
	}
	r.shrink()
	if len(r.buf) != readerMinBuf {
		t.Fatalf("shrink left a buffer of %d bytes", len(r.buf))
	}
	for i, a := range r.args[:cap(r.args)] {
		if inOld(a) {
			t.Errorf("argument slot %d (%q) still points into the old buffer", i, a)
		}
	}
	for i, c := range cmds {
		for j, a := range c.Args {
			if inOld(a) {
				t.Errorf("command %d argument %d (%q) still points into the old buffer", i, j, a)
			}
		}
	}
	if string(cmds[1].Args[2]) != "" || cmds[1].Args[2] == nil || string(cmds[2].Args[0]) != "BLPOP" {
		t.Fatalf("after shrink: %q", cmds)
	}

	big := newCmdReader(&piecesReader{pieces: []string{encode(append([]string{"SADD", "s"}, strings.Split(strings.Repeat("m ", 5000), " ")[:5000]...)...)}})
	if cmds, err := big.ReadCommands(); err != nil || len(cmds) != 1 { // a goroutine's batch
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	if args, cmds := big.lendArrays(); args != nil || cmds != nil || cap(big.args) > readerMaxArgs {
		t.Fatalf("arrays past readerMaxArgs lent (%d arguments) or kept (%d)", cap(args), cap(big.args))
	}
}
