package main

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func TestParseDelay(t *testing.T) {
	for in, want := range map[string]time.Duration{"30000": 30 * time.Second, "0": 0, "30s": 30 * time.Second, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond} {
		if got, err := parseDelay(in); err != nil || got != want {
			t.Errorf("parseDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "-5s", "soon", ""} {
		if _, err := parseDelay(in); err == nil {
			t.Errorf("parseDelay(%q) accepted", in)
		}
	}
}

func TestBinary_RestartDelayRefusesLockGrants(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", port, "--restart-delay", "1h")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var conn net.Conn
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			conn = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tumbler never listened: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("SET lock tok NX PX 30000\r\nGET lock\r\n"))
	want := "$-1\r\n$-1\r\n"
	buf := make([]byte, 0, 64)
	tmp := make([]byte, 64)
	for len(buf) < len(want) {
		n, err := conn.Read(tmp)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, buf)
		}
		buf = append(buf, tmp[:n]...)
	}
	if string(buf) != want {
		t.Fatalf("got %q, want %q: a freshly started node must not grant the lock", buf, want)
	}
}
