package diff

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// TestUnixSocketClients compares what redis-server and tumbler say of a
// client connected by their unix sockets (unixsocket, unixsocketperm),
// with each socket's path written as <sock>: CLIENT INFO's and CLIENT
// LIST's addr, laddr and flags (another client's too, a TCP one's
// beside), the MONITOR line of its command, CONFIG GET of the two
// parameters, CLIENT KILL LADDR by the socket's address, and the socket
// file's mode.
func TestUnixSocketClients(t *testing.T) {
	dir, err := os.MkdirTemp("", "tu") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// paths of one length, so that replies with them are alike
	rPath, tPath := filepath.Join(dir, "r.sock"), filepath.Join(dir, "t.sock")
	redisAddr := proc.StartRedis(t, "--unixsocket", rPath, "--unixsocketperm", "770")
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) {
		c.UnixSocket = tPath
		if _, err := server.ApplyDirective(c, "unixsocketperm", "770"); err != nil {
			t.Fatal(err)
		}
	}))

	field := regexp.MustCompile(` (addr|laddr|flags)=\S*`)
	stamp := regexp.MustCompile(`^\+\d+\.\d+ `)
	tcpPort := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	run := func(tcpAddr, path string) []string {
		var out []string
		note := func(what string, b []byte) {
			out = append(out, what+": "+strings.ReplaceAll(string(b), path, "<sock>"))
		}
		fields := func(b []byte) []byte {
			var sb strings.Builder
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "id=") {
					sb.WriteString(strings.Join(field.FindAllString(line, -1), "") + " |")
				}
			}
			return tcpPort.ReplaceAll([]byte(sb.String()), []byte("127.0.0.1:<port>"))
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "mode: "+fi.Mode().String())

		uc, err := net.DialTimeout("unix", path, ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		u := &conn{c: uc, r: bufio.NewReader(uc)}
		defer u.close()
		do := func(c *conn, what string, args ...string) []byte {
			b, err := c.do(args...)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return b
		}
		do(u, "setname", "CLIENT", "SETNAME", "u") // accepted before the TCP one: the lower ID
		tc, err := dial(tcpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer tc.close()
		do(tc, "setname", "CLIENT", "SETNAME", "t")
		note("unix CLIENT INFO", fields(do(u, "info", "CLIENT", "INFO")))
		note("unix CLIENT LIST", fields(do(u, "list", "CLIENT", "LIST")))
		// one name each: several come in Redis's dict order
		note("CONFIG GET unixsocket", do(u, "config", "CONFIG", "GET", "unixsocket"))
		note("CONFIG GET unixsocketperm", do(u, "config", "CONFIG", "GET", "unixsocketperm"))
		note("CONFIG SET unixsocket", do(u, "config", "CONFIG", "SET", "unixsocket", "/tmp/x.sock"))
		note("SET", do(u, "set", "SET", "k", "v"))
		note("GET over TCP", do(tc, "get", "GET", "k"))

		note("MONITOR", do(tc, "monitor", "MONITOR"))
		do(u, "echo", "ECHO", "hi")
		tc.c.SetReadDeadline(time.Now().Add(ioTimeout))
		line, err := ReadReply(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		note("monitor line", stamp.ReplaceAll(line, []byte("+<time> ")))

		k, err := dial(tcpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer k.close()
		note("CLIENT KILL LADDR", do(k, "kill", "CLIENT", "KILL", "LADDR", path+":0"))
		return out
	}
	want, got := run(redisAddr, rPath), run(srv.Addr(), tPath)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("\nredis:\n  %s\ntumbler:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
}
