package main

import (
	"bufio"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
	conn := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
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

// A short --restart-delay: while it lasts lock grants get the null reply
// of a held lock and other writes the documented error; once it passes,
// the same node grants the lock.
func TestBinary_RestartDelayEnds(t *testing.T) {
	const delay = 3 * time.Second // (the binary starts, and is dialled, within it even under load)
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", port, "--restart-delay", delay.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	conn := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
	rd := bufio.NewReader(conn)
	do := func(cmds ...string) []string {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		for _, c := range cmds {
			conn.Write([]byte(c + "\r\n"))
		}
		out := make([]string, len(cmds))
		for i := range out {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			out[i] = strings.TrimSuffix(line, "\r\n")
			if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
				val, _ := rd.ReadString('\n')
				out[i] += " " + strings.TrimSuffix(val, "\r\n")
			}
		}
		return out
	}

	got := do("SET lock tok NX PX 30000", "SETNX lock tok", "SET other v", "GET lock")
	if got[0] != "$-1" || got[1] != ":0" || got[3] != "$-1" ||
		!strings.HasPrefix(got[2], "-ERR restart delay: this node restarted and refuses writes for another ") ||
		!strings.HasSuffix(got[2], " ms, so that a lock it forgot is not granted twice") {
		t.Fatalf("during the delay: %q", got)
	}
	refused := time.Now()
	for {
		if got := do("SET lock tok NX PX 30000"); got[0] == "+OK" {
			break
		} else if got[0] != "$-1" {
			t.Fatalf("SET NX during the delay = %q", got[0])
		}
		if time.Since(refused) > delay+10*time.Second {
			t.Fatal("the restart delay never ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := do("SET other v", "GET lock"); got[0] != "+OK" || got[1] != "$3 tok" {
		t.Fatalf("after the delay: %q", got)
	}
}
