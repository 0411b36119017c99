package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// StartRedis runs a redis-server of its own on a free loopback port until
// the test ends (and dies with the test binary: DieWithParent), with no
// persistence and its own directory, plus extra arguments, and returns its
// address. Without redis-server on PATH the test is skipped, unless
// TUMBLER_REQUIRE_REDIS=1 (CI), where it fails.
func StartRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin := RedisBinary(t)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken before redis-server binds it
		addr, err := tryRedis(t, bin, extra)
		if err == nil {
			return addr
		}
		lastErr = err
	}
	t.Fatalf("cannot start redis-server: %v", lastErr)
	return ""
}

// RedisBinary returns the path of redis-server. Without one on PATH the
// test is skipped, unless TUMBLER_REQUIRE_REDIS=1 (CI), where it fails.
func RedisBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TUMBLER_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not found and TUMBLER_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not on PATH; set TUMBLER_REQUIRE_REDIS=1 to make this a failure")
	}
	return bin
}

func tryRedis(t testing.TB, bin string, extra []string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	var out bytes.Buffer
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", dir, "--logfile", "",
	}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	DieWithParent(cmd) // even if this test binary crashes
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill() // fails harmlessly after a test's SHUTDOWN
		<-exited
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return "", fmt.Errorf("redis-server exited (%v): %s", err, out.String())
		default:
		}
		if isOurs(addr, dir) {
			t.Cleanup(stop)
			return addr, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server on %s did not answer in time: %s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isOurs reports whether the redis-server at addr answers and is the one
// started with dir (another test's server could have taken the port).
func isOurs(addr, dir string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$3\r\ndir\r\n"); err != nil {
		return false
	}
	// *2, $3, dir, $n, the directory
	r := bufio.NewReader(c)
	var last string
	for i := 0; i < 5; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		last = line
	}
	return last == dir+"\r\n"
}
