//go:build !unix

package server

import "testing"

// raiseNofile: without RLIMIT_NOFILE (nofile_unix_test.go) there is no
// descriptor limit to raise; the test may open all it needs.
func raiseNofile(t *testing.T, need uint64) (cur, hard uint64) {
	return need, need
}
