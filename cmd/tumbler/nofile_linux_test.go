//go:build linux

package main

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinary_MaxClientsFitsTheOpenFilesLimit: started under `ulimit -n
// 256`, tumbler does as redis-server's adjustOpenFilesLimit: it raises
// the limit to maxclients + 32 where it may, and otherwise lowers
// maxclients to 224 with Redis's warning, so that clients past it get
// "max number of clients reached" rather than hang in an accept that
// fails for want of descriptors. Under `ulimit -n 20` it does not start.
func TestBinary_MaxClientsFitsTheOpenFilesLimit(t *testing.T) {
	bin := build(t)
	const limited = `ulimit -n 256 && exec "$0" "$@"`
	port := strconv.Itoa(freePort(t))
	cmd, out, done := runBin(t, "/bin/sh", "-c", limited, bin, "--port", port, "--bind", "127.0.0.1")
	dial := func() (net.Conn, error) { return net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second) }
	c := dialRetry(t, dial)
	rd := bufio.NewReader(c)
	c.Write([]byte("CONFIG GET maxclients\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var reply strings.Builder
	for range 5 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		reply.WriteString(line)
	}
	raised := reply.String() == "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"
	if !raised {
		if reply.String() != "*2\r\n$10\r\nmaxclients\r\n$3\r\n224\r\n" {
			t.Fatalf("CONFIG GET maxclients under ulimit -n 256 = %q, want 224 (or 10000 with the limit raised)", reply.String())
		}
		// 240 clients in all: 224 served, 16 refused, none left waiting
		conns := []net.Conn{c}
		for len(conns) < 240 {
			cc, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			conns = append(conns, cc)
		}
		served, refused := 1, 0
		for _, cc := range conns[1:] {
			cc.Write([]byte("PING\r\n"))
			cc.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(cc).ReadString('\n')
			switch {
			case line == "+PONG\r\n":
				served++
			case line == "-ERR max number of clients reached\r\n":
				refused++
			default:
				t.Fatalf("client %d: %q, %v", served+refused, line, err)
			}
		}
		if served != 224 || refused != 16 {
			t.Errorf("240 clients: %d served, %d refused; want 224 and 16", served, refused)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := "maxclients has been reduced to 224 to compensate for low ulimit"
	if raised {
		want = "Increased maximum number of open files to 10032 (it was originally set to 256)."
	}
	if !strings.Contains(out.log(), want) {
		t.Errorf("log: want %q:\n%s", want, out.log())
	}
	if !raised && !strings.Contains(out.log(), "Server can't set maximum open files to 10032 because of OS error: Operation not permitted.") {
		t.Errorf("log: want Redis's words for the failed raise (strerror's):\n%s", out.log())
	}

	if raised {
		return // (the limit could be raised: so could 20's)
	}
	_, out, done = runBin(t, "/bin/sh", "-c", `ulimit -n 20 && exec "$0" "$@"`, bin, "--port", port)
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), "Your current 'ulimit -n' of 20 is not enough for the server to start.") {
		t.Errorf("under ulimit -n 20: exit %d: %s", code, out)
	}
}
