package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestBinary_ShutdownExitsZeroAndServesMetrics(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	mport := strconv.Itoa(freePort(t))
	var output bytes.Buffer // the log (standard output) and standard error
	cmd := exec.Command(bin, "--port", port, "--metrics-addr", "127.0.0.1:"+mport, "--loglevel", "debug")
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	var conn net.Conn
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			conn = c
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tumbler did not start: %v\n%s", err, output.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	conn.Write([]byte("PING\r\n"))
	if line, _ := rd.ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("PING = %q", line)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://127.0.0.1:" + mport + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `tumbler_commands_total{command="ping"} 1`) {
		t.Errorf("metrics without the PING:\n%.2000s", body)
	}
	conn.Write([]byte("SHUTDOWN\r\n"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SHUTDOWN: %v\n%s", err, output.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tumbler did not exit after SHUTDOWN")
	}
	if !strings.Contains(output.String(), " - accepted addr=") {
		t.Errorf("--loglevel debug did not log connections:\n%s", output.String())
	}
}

// A bad --loglevel is a configuration error: exit status 1, as Redis.
func TestBinary_BadLogLevelExits1(t *testing.T) {
	bin := build(t)
	out, err := exec.Command(bin, "--loglevel", "loud").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "loglevel") {
		t.Fatalf("the error does not name the directive:\n%s", out)
	}
}
