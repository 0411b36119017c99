//go:build linux

package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket listens where a service manager would and returns its path
// and the messages it receives.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return path, msgs
}

func nextMsg(t *testing.T, msgs <-chan string, want string) {
	t.Helper()
	select {
	case m := <-msgs:
		if m != want {
			t.Fatalf("notify message %q, want %q", m, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no notify message (want %q)", want)
	}
}

// TestBinary_SupervisedSystemd: under systemd (explicit or detected by
// auto), the binary says READY=1 once it accepts connections and
// STOPPING=1 when it stops, as redis-server does for Type=notify units;
// with supervised no it says nothing.
func TestBinary_SupervisedSystemd(t *testing.T) {
	bin := build(t)
	for _, mode := range []string{"systemd", "auto"} {
		t.Run(mode, func(t *testing.T) {
			sock, msgs := notifySocket(t)
			port := strconv.Itoa(freePort(t))
			cmd, out, done := runBinEnv(t, bin, []string{"NOTIFY_SOCKET=" + sock}, "--port", port, "--supervised", mode)
			nextMsg(t, msgs, "STATUS=tumbler is starting...\n")
			nextMsg(t, msgs, "STATUS=Ready to accept connections\n")
			nextMsg(t, msgs, "READY=1\n")
			c, err := net.Dial("tcp", "127.0.0.1:"+port) // no retry: ready means listening
			if err != nil {
				t.Fatalf("READY=1 before listening: %v", err)
			}
			c.Close()
			cmd.Process.Signal(syscall.SIGTERM)
			nextMsg(t, msgs, "STOPPING=1\n")
			if code := waitExit(t, done); code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
	t.Run("no", func(t *testing.T) {
		sock, msgs := notifySocket(t)
		port := strconv.Itoa(freePort(t))
		cmd, _, done := runBinEnv(t, bin, []string{"NOTIFY_SOCKET=" + sock}, "--port", port)
		c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
		c.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, done)
		select {
		case m := <-msgs:
			t.Fatalf("supervised no sent %q", m)
		default:
		}
	})
	t.Run("no socket", func(t *testing.T) {
		port := strconv.Itoa(freePort(t))
		cmd, out, done := runBinEnv(t, bin, []string{"NOTIFY_SOCKET="}, "--port", port, "--supervised", "systemd")
		c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
		c.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		if code := waitExit(t, done); code != 0 || !strings.Contains(out.log(), "NOTIFY_SOCKET not found") {
			t.Fatalf("exit %d, want 0 and a warning: %s", code, out)
		}
	})
	// Supervised, daemonize yes does not fork (redis-server's background
	// is daemonize && !supervised): READY=1 comes from the process the
	// service manager started, which stays.
	t.Run("daemonize yes", func(t *testing.T) {
		sock, msgs := notifySocket(t)
		port := strconv.Itoa(freePort(t))
		cmd, out, done := runBinEnv(t, bin, []string{"NOTIFY_SOCKET=" + sock}, "--port", port, "--supervised", "systemd", "--daemonize", "yes")
		nextMsg(t, msgs, "STATUS=tumbler is starting...\n")
		nextMsg(t, msgs, "STATUS=Ready to accept connections\n")
		nextMsg(t, msgs, "READY=1\n")
		select {
		case err := <-done:
			t.Fatalf("the process the supervisor started ended (%v): it forked: %s", err, out)
		case <-time.After(300 * time.Millisecond):
		}
		cmd.Process.Signal(syscall.SIGTERM)
		nextMsg(t, msgs, "STOPPING=1\n")
		if code := waitExit(t, done); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
}

// TestBinary_SupervisedUpstart: under upstart the binary stops itself
// (SIGSTOP) once it listens, and runs on when continued.
func TestBinary_SupervisedUpstart(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd, out, done := runBinEnv(t, bin, []string{"UPSTART_JOB=tumbler"}, "--port", port, "--supervised", "auto")
	stat := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		// the state follows the command name in parentheses
		if i := bytes.LastIndexByte(data, ')'); i > 0 && len(data) > i+2 && data[i+2] == 'T' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never stopped: %s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+port) // stopped only once listening
	if err != nil {
		t.Fatalf("stopped before listening: %v", err)
	}
	cmd.Process.Signal(syscall.SIGCONT)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := c.Read(buf); err != nil || string(buf) != "+PONG\r\n" {
		t.Fatalf("after SIGCONT: %q %v", buf, err)
	}
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 || !strings.Contains(out.log(), "supervised by upstart") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
