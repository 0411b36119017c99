//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinary_Daemonize: daemonize yes returns once the server serves, as
// redis-server's does (init scripts and Type=forking units wait for it),
// with exit status 0; the daemon runs in a session of its own, writes its
// pid file, answers, and removes the pid file when stopped. A daemon that
// cannot listen makes the command exit 1 with its error (redis-server
// would have returned 0 before it failed).
func TestBinary_Daemonize(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	port := strconv.Itoa(freePort(t))
	pidfile, logfile := filepath.Join(dir, "t.pid"), filepath.Join(dir, "t.log")
	run := func(args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%q did not return: %s", args, stderr.String())
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stderr.String()
	}
	if code, errs := run("--daemonize", "yes", "--port", port, "--pidfile", pidfile, "--logfile", logfile); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("no pid file once the command returned: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %q", b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// /proc/PID/stat: pid (comm) state ppid pgrp session ...
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
		t.Errorf("the daemon: %v", err)
	} else if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) < 4 || f[3] != strconv.Itoa(pid) {
		t.Errorf("the daemon's session: %q, want its own (%d)", f, pid)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
	if err != nil {
		t.Fatalf("the daemon does not answer: %v", err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "PING\r\n", "+PONG\r\n")
	roundTrip(t, c, rd, "CONFIG GET daemonize\r\n", "*2\r\n$9\r\ndaemonize\r\n$3\r\nyes\r\n")

	// A second daemon on the same port: the command says why it failed.
	code, errs := run("--daemonize", "yes", "--port", port, "--pidfile", filepath.Join(dir, "u.pid"))
	if code != 1 || !strings.Contains(errs, "cannot listen on") || !strings.Contains(errs, "address already in use") {
		t.Errorf("a daemon that cannot listen: exit %d, %q; want 1 and the reason", code, errs)
	}

	syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pid file is still there 10 s after SIGTERM")
		}
	}
	if log, _ := os.ReadFile(logfile); !bytes.Contains(log, []byte("Ready to accept connections")) {
		t.Errorf("the daemon's log: %q", log)
	}
}
