package engine

import (
	"fmt"
	"testing"
)

// XXH3-64 against vectors from libxxhash 0.8.1 (XXH3_64bits) over the
// byte pattern (i*7+3) mod 256, one length in each of the algorithm's
// size classes and on their edges, and from the redis.io DIGEST page.
func TestXXH3_Vectors(t *testing.T) {
	pattern := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
		return b
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "2d06800538d394c2"}, {1, "13e608bc156defed"}, {2, "1c9074b93943b86c"},
		{3, "a9088dda485b481c"}, {4, "6d9253b16c8b1ed3"}, {5, "998620e10e3a4b37"},
		{8, "60539db630471163"}, {9, "feff668361d723a8"}, {16, "b8c859b0f030b585"},
		{17, "714a04408e79b80f"}, {32, "19ff4ee1d6ba1a55"}, {33, "3e44983ad21679c8"},
		{64, "287eb1fa9e4be2c1"}, {65, "829218de4d798646"}, {96, "f084e7cfbc624743"},
		{97, "1daa83271a8e7b7c"}, {128, "67425a03650261bf"}, {129, "c664bf3311c6abc4"},
		{200, "746cd0025327bf5b"}, {240, "64556dc6b462a6cf"}, {241, "8beadd3a8874fe17"},
		{1024, "9b81661c641c72b1"}, {1025, "806c2072ed713576"}, {2048, "abe604813ba62ed1"},
		{3000, "c89178bb873c6b3d"},
	} {
		if got := fmt.Sprintf("%016x", xxh3(pattern(tc.n))); got != tc.want {
			t.Errorf("len %d: %s, want %s", tc.n, got, tc.want)
		}
	}
	for s, want := range map[string]string{
		"Hello world": "b6acb9d84a38ff74", "foo": "ab6e5f64077e7d8a", "test": "9ec9f7918d7dfc40",
		"hello": "9555e8555c62dcfd", "Hello, Dragonfly!": "063b4909128e92b7",
	} {
		if got := digest(s); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

func BenchmarkXXH3_1KB(b *testing.B) {
	buf := make([]byte, 1024)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		xxh3(buf)
	}
}
