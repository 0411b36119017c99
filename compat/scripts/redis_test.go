package scripts

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
)

// startRedis runs a redis-server of its own on a free loopback port until
// the test ends and returns its address, so that a client suite can be run
// against the oracle too: a check that fails there is a test bug, not a
// tumbler one (proc.StartRedis).
func startRedis(t *testing.T) string {
	t.Helper()
	return proc.StartRedis(t)
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
