//go:build !linux

package server

import (
	"errors"
	"net"
)

// Off Linux there is no event loop (eventloop_linux.go): every connection
// is served by its own goroutine.

type ioLoop struct{}

type loopConn struct{}

type loopExit struct{}

func (s *Server) startLoops(int) error                  { return errors.New("no event loop on this system") }
func (s *Server) stopLoops()                            {}
func (s *Server) loopsLeave()                           {}
func (s *Server) loopMayServe(*client, *cmdReader) bool { return false }
func (s *Server) loopServe(*client, *cmdReader) bool    { return true }
func (s *Server) loopPushWake(*client)                  {}

func loopCount(*Config) int { return 0 }

type loopStats struct{}

func shutdownConn(net.Conn) {}

func (c *client) closeNC() { _ = c.nc.Close() }

func (c *client) loopLeaveFirst() bool { return false }
