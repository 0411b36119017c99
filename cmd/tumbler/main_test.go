package main

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tumbler")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a port the binary under test can listen on. It is
// free when freePort returns, and the binary takes it only later: a port
// from the kernel's ephemeral range could meanwhile go to any of the
// other test processes' listeners (127.0.0.1:0) or outgoing connections,
// and the binary would then fail to start, or a test reach another
// server. So the port is taken below that range, where the kernel never
// picks one, at random, and checked free.
func freePort(t *testing.T) int {
	t.Helper()
	low := 32768 // Linux's default ip_local_port_range starts here
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low > 11000 {
		for range 100 {
			port := 10000 + rand.IntN(low-10000)
			if portFree(port) {
				return port
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // no room below the range: an ephemeral one
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// portFree reports whether port can be listened on as the binary listens
// by default: every IPv4 address, and every IPv6 one where there is IPv6
// ("* -::*").
func portFree(port int) bool {
	p := strconv.Itoa(port)
	ln, err := net.Listen("tcp4", "0.0.0.0:"+p)
	if err != nil {
		return false
	}
	defer ln.Close()
	ln6, err := net.Listen("tcp6", "[::]:"+p)
	if err == nil {
		ln6.Close()
		return true
	}
	return !errors.Is(err, syscall.EADDRINUSE)
}

func TestBinary_PortTakenExitsNonZeroWithMessage(t *testing.T) {
	bin := build(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--port", port)
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 {
			t.Fatalf("want a non-zero exit, got %v", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tumbler did not exit when its port was taken")
	}
	if msg := stderr.String(); !strings.Contains(msg, "cannot listen on 0.0.0.0:"+port) || !strings.Contains(msg, "address already in use") {
		t.Fatalf("unclear message: %q", msg)
	}
	// With a log file, the failure is logged there too, as Redis logs
	// "Failed listening on port".
	logfile := filepath.Join(t.TempDir(), "tumbler.log")
	_, out2, done2 := runBin(t, bin, "--port", port, "--logfile", logfile)
	if code := waitExit(t, done2); code != 1 {
		t.Fatalf("with --logfile: exit %d", code)
	}
	logged, _ := os.ReadFile(logfile)
	if !strings.Contains(string(logged), " # tumbler: cannot listen on 0.0.0.0:"+port) || !strings.Contains(out2.errs(), port) {
		t.Fatalf("log file %q, %s: want the failure in both", logged, out2)
	}
}

func TestBinary_ServesAndStopsOnSIGTERM(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", port, "--requirepass", "pw")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	conn := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*1\r\n$4\r\nPING\r\n"))
	want := "-NOAUTH Authentication required.\r\n+OK\r\n+PONG\r\n"
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
		t.Fatalf("got %q, want %q", buf, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SIGTERM should exit cleanly, got %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tumbler did not stop on SIGTERM")
	}
}

// --cpuprofile writes a pprof CPU profile of the run, complete once the
// server stops on SIGTERM.
func TestBinary_CPUProfile(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	cmd, out, done := runBin(t, bin, "--port", port, "--cpuprofile", prof)
	conn := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
	roundTrip(t, conn, bufio.NewReader(conn), "*1\r\n$4\r\nPING\r\n", "+PONG\r\n")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // pprof profiles are gzipped protobuf
		t.Fatalf("%s is not a pprof profile: %d bytes", prof, len(b))
	}
}

// TestBinary_StartupLogSaysWhatItServes: the ready line names the address
// (and no empty TLS address without TLS), and --restart-delay says at
// start that writes are refused for a while, so an operator is not left
// guessing why lock grants reply nil.
func TestBinary_StartupLogSaysWhatItServes(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd, out, done := runBin(t, bin, "--port", port, "--restart-delay", "1h")
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "SET k v NX PX 1000\r\n", "$-1\r\n")
	roundTrip(t, c, rd, "CONFIG GET bind\r\n", "*2\r\n$4\r\nbind\r\n$6\r\n* -::*\r\n") // Redis's default
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	log := out.log()
	if !strings.Contains(log, " * Ready to accept connections addr=0.0.0.0:"+port) || strings.Contains(log, "tls_addr") {
		t.Errorf("ready line: want the address and no tls_addr:\n%s", log)
	}
	if !strings.Contains(log, "restart delay") || !strings.Contains(log, "restart_delay=1h0m0s") {
		t.Errorf("no word of the restart delay:\n%s", log)
	}
}

// TestBinary_UnixSocketOnly: --port 0 --unixsocket serves on the socket
// alone, as redis-server does (tempredis starts its servers so), the ready
// line names the socket, and the file is gone after SIGTERM.
func TestBinary_UnixSocketOnly(t *testing.T) {
	bin := build(t)
	dir, err := os.MkdirTemp("", "tu") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "t.sock")
	cmd, out, done := runBin(t, bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700")
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("unix", sock) })
	roundTrip(t, c, bufio.NewReader(c), "PING\r\n", "+PONG\r\n")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if log := out.log(); !strings.Contains(log, " * Ready to accept connections addr="+sock+" unixsocket="+sock) {
		t.Errorf("ready line: want the socket:\n%s", log)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket file is still there after exit (%v)", err)
	}
}

// TestBinary_Version: --version and -v print tumbler's own version and
// the Redis version it speaks, as redis-server --version does, and exit.
func TestBinary_Version(t *testing.T) {
	bin := build(t)
	for _, flag := range []string{"--version", "-v"} {
		out, err := exec.Command(bin, flag).Output()
		if err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if s := string(out); !strings.HasPrefix(s, "tumbler v=") || !strings.Contains(s, " redis_version="+engine.Version+" go=go") {
			t.Errorf("%s printed %q", flag, s)
		}
	}
}

// As redis-server, tumbler ignores SIGHUP (a closed terminal) and
// SIGPIPE: with its log going to a pipe whose reader has gone, the next
// log line must not kill it.
func TestBinary_SurvivesSIGHUPAndABrokenLogPipe(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", port, "--loglevel", "debug")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	dial := func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) }
	c := dialRetry(t, dial)
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "PING\r\n", "+PONG\r\n")
	r.Close() // the log's reader goes; a debug line is logged for every connection
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c := dialRetry(t, dial)
		roundTrip(t, c, bufio.NewReader(c), "PING\r\n", "+PONG\r\n")
		c.Close()
		if i == 0 {
			cmd.Process.Signal(syscall.SIGHUP)
		}
	}
	roundTrip(t, c, rd, "SHUTDOWN NOSAVE\r\n", "") // its warning goes to the broken pipe too
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d, want 0 (-1: killed by a signal)", code)
	}
}

// Redis's command-line forms: a bare --save (before another option, or
// last) is save "", an option may carry its value in one argument, names
// are in any case, "-" reads config lines from standard input, and
// --include reads a file.
func TestBinary_RedisCommandLineForms(t *testing.T) {
	bin := build(t)
	inc := filepath.Join(t.TempDir(), "inc.conf")
	os.WriteFile(inc, []byte("maxclients 55\n"), 0o600)
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string // CONFIG GET maxclients
	}{
		{args: []string{"--save", "--port", "PORT"}, want: "10000"},
		{args: []string{"--port", "PORT", "--save", "--appendonly", "no"}, want: "10000"},
		{args: []string{"--port", "PORT", "--save"}, want: "10000"},
		{args: []string{"--port PORT", "--MAXCLIENTS", "44"}, want: "44"},
		{args: []string{"--port", "PORT", "--include", inc}, want: "55"},
		{args: []string{"-", "--port", "PORT"}, stdin: "maxclients 66\n", want: "66"},
	} {
		port := strconv.Itoa(freePort(t))
		args := slices.Clone(tc.args)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "PORT", port)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdin, cmd.Stderr = strings.NewReader(tc.stdin), &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		c := dialRetry(t, func() (net.Conn, error) {
			select {
			case err := <-done:
				t.Fatalf("%q: exited: %v\n%s", args, err, stderr.String())
			default:
			}
			return net.Dial("tcp", "127.0.0.1:"+port)
		})
		want := "*2\r\n$10\r\nmaxclients\r\n$" + strconv.Itoa(len(tc.want)) + "\r\n" + tc.want + "\r\n"
		roundTrip(t, c, bufio.NewReader(c), "CONFIG GET maxclients\r\n", want)
		cmd.Process.Kill()
		<-done
	}
}

// TestBinary_ShutdownLogsAsRedis: a shutdown logs redis-server's lines,
// each once, in its order (harnesses and log alerts watch for them): the
// signal (none for SHUTDOWN), "User requested shutdown...", the pid file
// and the unix socket removed, and the last words.
func TestBinary_ShutdownLogsAsRedis(t *testing.T) {
	bin := build(t)
	for _, how := range []string{"SIGTERM", "SIGINT", "SHUTDOWN"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			port := strconv.Itoa(freePort(t))
			pidfile, sock := filepath.Join(dir, "t.pid"), filepath.Join(dir, "t.sock")
			cmd, out, done := runBin(t, bin, "--port", port, "--bind", "127.0.0.1", "--pidfile", pidfile, "--unixsocket", sock)
			c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+port) })
			switch how {
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				cmd.Process.Signal(syscall.SIGINT)
			default:
				c.Write([]byte("SHUTDOWN\r\n"))
			}
			if code := waitExit(t, done); code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			want := []string{"# User requested shutdown...", "* Removing the pid file.", "* Removing the unix socket file.", "# tumbler is now ready to exit, bye bye..."}
			if how != "SHUTDOWN" {
				want = append([]string{"# Received " + how + " scheduling shutdown..."}, want...)
			}
			log, at := out.log(), 0
			for _, w := range want {
				i := strings.Index(log[at:], " "+w)
				if i < 0 || strings.Count(log, " "+w) != 1 {
					t.Fatalf("%q not once, in order, in the log:\n%s", w, log)
				}
				at += i + len(w)
			}
			if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
				t.Errorf("pid file left: %v", err)
			}
		})
	}
}
