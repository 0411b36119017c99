//go:build !unix

package server

import (
	"errors"
	"net"
	"sync/atomic"
)

// Without unix sockets' read(2) there is no raw read loop (rawread.go).

var errWouldBlock = errors.New("read would block")

type rawReader struct{ drained bool }

var rawReads, rawReadsEmpty atomic.Int64

func newRawReader(net.Conn) *rawReader { return nil }

func (r *rawReader) read([]byte) (int, error) { return 0, errWouldBlock }

func (r *rawReader) write([]byte) (int, error) { return 0, nil }

func closeConn(nc net.Conn) { _ = nc.Close() }
