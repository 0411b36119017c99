package scripts

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
)

// startRedis runs a redis-server of its own on a free loopback port until
// the test ends and returns its address, so that a client suite can be run
// against the oracle too: a check that fails there is a test bug, not a
// tumbler one. Without redis-server on PATH the test is skipped, unless
// TUMBLER_REQUIRE_REDIS=1.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("TUMBLER_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not found and TUMBLER_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not on PATH; set TUMBLER_REQUIRE_REDIS=1 to make this a failure")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken before redis-server binds it
		addr, err := tryRedis(t, bin)
		if err == nil {
			return addr
		}
		lastErr = err
	}
	t.Fatalf("cannot start redis-server: %v", lastErr)
	return ""
}

func tryRedis(t *testing.T, bin string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	var out bytes.Buffer
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", t.TempDir(), "--logfile", "")
	cmd.Stdout, cmd.Stderr = &out, &out
	proc.DieWithParent(cmd) // even if this test binary crashes
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill() // fails harmlessly if a test sent SHUTDOWN
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
		if ping(addr) == nil {
			t.Cleanup(stop)
			return addr, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server on %s did not answer PING in time: %s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping sends PING on a new connection and wants +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}
