package engine

import (
	"strconv"
	"testing"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

func benchEngine(b *testing.B, keys int) *Engine {
	e := New(Config{})
	w := &enginetest.TextWriter{}
	for i := 0; i < keys; i++ {
		e.Exec(&Ctx{Args: [][]byte{[]byte("SET"), []byte("lock:" + strconv.Itoa(i)), []byte("v")}, W: w})
		w.Reset()
	}
	return e
}

// nopWriter discards replies, so benchmarks measure dispatch alone.
type nopWriter struct{}

func (nopWriter) Proto() int                { return 2 }
func (nopWriter) WriteStatus(string)        {}
func (nopWriter) WriteError(string)         {}
func (nopWriter) WriteInt(int64)            {}
func (nopWriter) WriteBulk([]byte)          {}
func (nopWriter) WriteBulkString(string)    {}
func (nopWriter) WriteNull()                {}
func (nopWriter) WriteNullArray()           {}
func (nopWriter) WriteArray(int)            {}
func (nopWriter) WriteMap(int)              {}
func (nopWriter) WriteSet(int)              {}
func (nopWriter) WriteBool(bool)            {}
func (nopWriter) WriteDouble(float64)       {}
func (nopWriter) WriteVerbatim(_, _ string) {}

func BenchmarkScan100kKeysCount10(b *testing.B) {
	e := benchEngine(b, 100_000)
	c := &Ctx{Args: [][]byte{[]byte("SCAN"), []byte("0"), []byte("COUNT"), []byte("10")}, W: nopWriter{}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

func BenchmarkGet(b *testing.B) {
	e := benchEngine(b, 1000)
	c := &Ctx{Args: [][]byte{[]byte("GET"), []byte("lock:7")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}

func BenchmarkSetNXPX(b *testing.B) {
	e := benchEngine(b, 0)
	c := &Ctx{Args: [][]byte{[]byte("set"), []byte("lock:1"), []byte("token-0123456789abcdef"), []byte("px"), []byte("30000"), []byte("nx")}, W: nopWriter{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Exec(c)
	}
}
