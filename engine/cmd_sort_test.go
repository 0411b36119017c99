package engine

import (
	"slices"
	"strings"
	"testing"
)

// TestSortScore checks SORT's reading of weights against what glibc's
// strtod and SORT's checks give in Redis 7.0 (each case diffed by hand
// against redis-server; compat/diff/testdata/sort.txt has them too).
func TestSortScore(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"3", 3, true}, {"-2.5", -2.5, true}, {"+4", 4, true}, {"0x10", 16, true},
		{" 7", 7, true}, {"\t7", 7, true}, {"7 ", 7, false}, {"", 0, true}, {"  ", 0, false},
		{"abc", 0, false}, {"inf", 0, true}, {"-Infinity", 0, true}, {"nan", 0, false},
		{"1e400", 0, false}, {"1e-400", 0, false}, {"1e-310", 0, false},
		{"0x1p-1030", 0, true}, {"0x1.000000000000000001p-1030", 0, false},
		{"2.2250738585072014e-308", 2.2250738585072014e-308, true},
		{"5\x00junk", 5, true}, // strtod stops at the C string's end
	} {
		got, ok := sortScore(c.in)
		if ok != c.ok || (ok && c.want != 0 && got != c.want) {
			t.Errorf("sortScore(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestSortKeys(t *testing.T) {
	for _, c := range []struct {
		args string
		want []int
	}{
		{"SORT k", []int{1}},
		{"SORT k STORE d", []int{1, 3}},
		{"SORT k STORE d STORE e", []int{1, 5}},
		{"SORT k LIMIT 0 1 STORE d", []int{1, 6}},
		{"SORT k GET store d", []int{1}}, // GET's argument is skipped
		{"SORT k LIMIT store d", []int{1}},
		{"SORT k STORE", []int{1}},
	} {
		var args [][]byte
		for _, a := range strings.Fields(c.args) {
			args = append(args, []byte(a))
		}
		if got := sortKeys(args); !slices.Equal(got, c.want) {
			t.Errorf("sortKeys(%s) = %v, want %v", c.args, got, c.want)
		}
	}
}
