//go:build !unix

package main

// stopSelf: upstart exists only on Unix.
func stopSelf() {}
