//go:build !unix

package main

import (
	"fmt"
	"os"
)

const defaultDaemonPidFile = ""

// daemonize: only on Unix; elsewhere tumbler stays in the foreground.
func daemonize([]byte) (ready func()) {
	fmt.Fprintln(os.Stderr, "tumbler: daemonize yes: tumbler runs in the foreground on this system (use a service manager)")
	return func() {}
}
