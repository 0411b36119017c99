//go:build !unix

package server

import (
	"errors"
	"net"
	"sync/atomic"
)

// Without read(2) on a socket there are no raw reads (rawread.go).

type rawReader struct{}

var rawReads atomic.Int64

func newRawReader(net.Conn) *rawReader { return nil }

func (r *rawReader) inLoop() bool { return false }

var (
	errWouldBlock = errors.New("no input yet")
	errLeaveLoop  = errors.New("leave the event loop")
)

func (r *rawReader) read([]byte) (int, error) { return 0, net.ErrClosed }

func (r *rawReader) write([]byte) (int, error) { return 0, net.ErrClosed }
