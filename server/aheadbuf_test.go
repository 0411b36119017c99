package server

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// aheadBuf returns what was written, in order, through any mix of writes
// and reads of any sizes (a read-ahead restarted with bytes still held
// included), never holds a chunk past aheadChunkMax, and lets go of each
// chunk once read.
func TestAheadBuf_KeepsOrderInBoundedChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pattern := make([]byte, 2*aheadChunkMax)
	for i := range pattern {
		pattern[i] = byte(i % 251)
	}
	buf := make([]byte, 3<<20)
	for round := 0; round < 25; round++ {
		var a aheadBuf
		var want, got bytes.Buffer
		next := 0 // where in pattern the next write starts
		for step := 0; step < 200; step++ {
			if rng.IntN(3) > 0 {
				room := a.room()
				if len(room) == 0 {
					t.Fatal("room() gave no space")
				}
				n := len(room) // a read that fills the room, or one that does not
				if rng.IntN(2) == 0 {
					n = rng.IntN(len(room) + 1)
				}
				copy(room[:n], pattern[next:])
				next = (next + n) % 251
				want.Write(room[:n])
				a.wrote(n)
			} else {
				p := buf[:rng.IntN(len(buf))]
				n := a.read(p)
				got.Write(p[:n])
			}
			held := 0
			for i, ch := range a.chunks {
				if cap(ch) > aheadChunkMax {
					t.Fatalf("a chunk of %d bytes", cap(ch))
				}
				if len(ch) == 0 && i < len(a.chunks)-1 {
					t.Fatalf("chunk %d of %d is empty: read has not let it go", i, len(a.chunks))
				}
				held += len(ch)
			}
			if held != a.n || a.n != want.Len()-got.Len() {
				t.Fatalf("n = %d, chunks hold %d, %d written and %d read", a.n, held, want.Len(), got.Len())
			}
		}
		for a.n > 0 {
			p := buf[:1+rng.IntN(1<<16)]
			n := a.read(p)
			got.Write(p[:n])
		}
		if a.chunks != nil {
			t.Fatalf("%d chunks kept with nothing held", len(a.chunks))
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: read %d bytes, not the %d written in order", round, got.Len(), want.Len())
		}
	}
}
