//go:build unix

package main

import "syscall"

// stopSelf stops the process with SIGSTOP, upstart's readiness signal
// ("expect stop"); upstart continues it.
func stopSelf() { _ = syscall.Kill(syscall.Getpid(), syscall.SIGSTOP) }
