//go:build linux

package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
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

// TestBinary_ConfigSetMaxClientsFitsTheOpenFilesLimit: CONFIG SET
// maxclients fits the open files limit again, as redis-server's
// updateMaxclients. Under `ulimit -n 256` (a hard limit only a process
// with CAP_SYS_RESOURCE may raise), a maxclients past what the limit
// leaves fails with Redis's error, naming 224, and maxclients stays 224,
// so that clients past it are still refused with "max number of clients
// reached" rather than left waiting in an accept that fails; a
// maxclients that fits is set. With the hard limit raisable, the same
// CONFIG SET fails only past fs.nr_open. Under a soft limit below the
// hard one, a maxclients that needs more is taken by raising the limit,
// with Redis's notice, and the hard limit comes down to it (Redis sets
// both), so that a maxclients past it then fails.
func TestBinary_ConfigSetMaxClientsFitsTheOpenFilesLimit(t *testing.T) {
	bin := build(t)
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		t.Skip(err)
	}
	nrOpen, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// start runs the binary under the limits that run sets: run is a
	// command that ends by executing its arguments
	start := func(run []string, args ...string) (*exec.Cmd, *binOutput, chan error, func() (net.Conn, error)) {
		port := strconv.Itoa(freePort(t))
		args = append(append(run[1:], bin, "--port", port, "--bind", "127.0.0.1"), args...)
		cmd, out, done := runBin(t, run[0], args...)
		return cmd, out, done, func() (net.Conn, error) { return net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second) }
	}
	do := func(c net.Conn, rd *bufio.Reader, args ...string) string {
		t.Helper()
		req := "*" + strconv.Itoa(len(args)) + "\r\n"
		for _, a := range args {
			req += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line[0] == '*' { // CONFIG GET: the name and the value
			for range 4 {
				more, err := rd.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				line += more
			}
		}
		return line
	}
	getMax := func(v string) string {
		return "*2\r\n$10\r\nmaxclients\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
	}
	tryWith := func(n int) string {
		return "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with " + strconv.Itoa(n) + "\r\n"
	}
	stop := func(cmd *exec.Cmd, out *binOutput, done chan error) {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		if code := waitExit(t, done); code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
	}

	cmd, out, done, dial := start([]string{"/bin/sh", "-c", `ulimit -n 256 && exec "$0" "$@"`})
	c := dialRetry(t, dial)
	rd := bufio.NewReader(c)
	raised := do(c, rd, "CONFIG", "GET", "maxclients") == getMax("10000")
	before, fit := "224", 224
	if raised { // the limit is 10032 now, and may go as far as fs.nr_open
		before, fit = "10000", nrOpen-32
	}
	if got := do(c, rd, "CONFIG", "SET", "maxclients", strconv.Itoa(nrOpen)); got != tryWith(fit) {
		t.Fatalf("CONFIG SET maxclients %d: %q, want %q", nrOpen, got, tryWith(fit))
	}
	if got := do(c, rd, "CONFIG", "GET", "maxclients"); got != getMax(before) {
		t.Fatalf("CONFIG GET maxclients after the failed set: %q, want %s", got, before)
	}
	// maxclients + 32 is 32 bits, as in Redis: 4294967264 needs 0 descriptors
	if got := do(c, rd, "CONFIG", "SET", "maxclients", "4294967264"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients 4294967264: %q", got)
	}
	if got := do(c, rd, "CONFIG", "SET", "maxclients", before); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients %s: %q", before, got)
	}
	if !raised {
		if got := do(c, rd, "CONFIG", "SET", "maxclients", "100000"); got != tryWith(224) {
			t.Fatalf("CONFIG SET maxclients 100000: %q", got)
		}
		if got := do(c, rd, "CONFIG", "SET", "maxclients", "225"); got != tryWith(224) {
			t.Fatalf("CONFIG SET maxclients 225: %q", got)
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
		for _, cc := range conns[1:] {
			cc.Close()
		}
		if got := do(c, rd, "CONFIG", "SET", "maxclients", "100"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET maxclients 100: %q", got)
		}
		if got := do(c, rd, "CONFIG", "GET", "maxclients"); got != getMax("100") {
			t.Fatalf("CONFIG GET maxclients: %q", got)
		}
	}
	stop(cmd, out, done)
	for _, want := range []string{
		"You requested maxclients of " + strconv.Itoa(nrOpen) + " requiring at least " + strconv.Itoa(nrOpen+32) + " max file descriptors.",
		"maxclients has been reduced to " + strconv.Itoa(fit) + " to compensate for low ulimit.",
		"Failed applying new configuration. Possibly related to new maxclients setting. Restoring previous settings.",
	} {
		if !strings.Contains(out.log(), want) {
			t.Errorf("log: want %q:\n%s", want, out.log())
		}
	}

	// A soft limit below the hard one: raised for a maxclients that needs
	// it (the Go runtime has already raised the soft limit to one below
	// the hard one), and the hard limit lowered with it.
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux) for a soft limit below the hard one")
	}
	cmd, out, done, dial = start([]string{prlimit, "--nofile=256:2000"}, "--maxclients", "100")
	c = dialRetry(t, dial)
	rd = bufio.NewReader(c)
	if got := do(c, rd, "CONFIG", "SET", "maxclients", "1968"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients 1968 under a hard limit of 2000: %q", got)
	}
	if soft, hard := nofileOf(t, cmd.Process.Pid); soft != "2000" || hard != "2000" {
		t.Errorf("limits after maxclients 1968: %s %s, want 2000 2000 (as Redis: both set)", soft, hard)
	}
	if !raised {
		if got := do(c, rd, "CONFIG", "SET", "maxclients", "1969"); got != tryWith(1968) {
			t.Fatalf("CONFIG SET maxclients 1969: %q", got)
		}
	}
	if got := do(c, rd, "CONFIG", "GET", "maxclients"); got != getMax("1968") {
		t.Fatalf("CONFIG GET maxclients: %q", got)
	}
	stop(cmd, out, done)
	if !strings.Contains(out.log(), "Increased maximum number of open files to 2000 (it was originally set to ") {
		t.Errorf("log: want Redis's notice of the raise:\n%s", out.log())
	}
}

// nofileOf is the soft and hard "Max open files" of process pid.
func nofileOf(t *testing.T, pid int) (soft, hard string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "Max open files")); strings.HasPrefix(line, "Max open files") && len(f) >= 2 {
			return f[0], f[1]
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits:\n%s", pid, b)
	return "", ""
}
