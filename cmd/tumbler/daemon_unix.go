//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// daemonEnv marks the daemon's environment: the process daemonize
// started, which serves.
const daemonEnv = "TUMBLER_DAEMON"

// defaultDaemonPidFile is where a daemon with no pidfile writes its id,
// as redis-server's CONFIG_DEFAULT_PID_FILE.
const defaultDaemonPidFile = "/var/run/redis.pid"

// daemonize runs tumbler in the background, as redis-server's daemonize
// yes: the command returns once the server serves, and the server goes
// on in a session of its own, its standard input, output and error on
// /dev/null (with logfile "" its log goes nowhere, as Redis's). Unlike
// redis-server, which forks before it listens and so returns 0 even when
// its daemon then fails (port taken), the command waits: it exits 0 once
// the daemon is ready, and 1, with the daemon's errors on its standard
// error, when the daemon ends before. The daemon is this program run
// again with the same arguments (Go cannot fork); configuration read
// from standard input ("-") is given to it again.
//
// In the daemon, daemonize returns the function to call once it serves;
// in the command it does not return.
func daemonize(stdin []byte) (ready func()) {
	if os.Getenv(daemonEnv) == "1" {
		// What this program reports on os.Stderr goes to the command
		// until the daemon is ready (a Go runtime crash, on descriptor
		// 2, to /dev/null, as a daemon's).
		null := os.Stderr
		os.Stderr = os.NewFile(4, "errors")
		return func() {
			os.Stderr.Close()
			os.Stderr = null
			f := os.NewFile(3, "ready")
			_, _ = f.Write([]byte{1})
			f.Close()
		}
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "tumbler: cannot daemonize:", err)
		os.Exit(1)
	}
	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.ExtraFiles = []*os.File{readyW, errW} // descriptors 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	readyW.Close()
	errW.Close()
	// The daemon's errors, until it is ready (it closes them) or ends.
	_, _ = io.Copy(os.Stderr, errR)
	var b [1]byte
	if n, _ := readyR.Read(b[:]); n == 1 {
		os.Exit(0)
	}
	_ = cmd.Wait()
	os.Exit(1)
	return nil
}
