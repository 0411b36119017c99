package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/internal/testpki"
)

func TestLoadConfig_FlagsOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tumbler.conf")
	os.WriteFile(path, []byte("port 7000\nrequirepass filepw\ntimeout 5\nuser alice on >a ~* +@all\nsave 60 1\n"), 0o600)
	l, err := loadConfig(path, nil, [][]string{
		{"port", "7001"}, {"requirepass", "flagpw"}, {"user", "alice:c"}, {"user", "bob:p:w"},
		{"bind", "127.0.0.1", "-::1"}, {"daemonize", "yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, warnings := l.cfg, l.warnings
	if cfg.Addr != "127.0.0.1:7001" || cfg.RequirePass != "flagpw" || cfg.Timeout != 5*time.Second || len(cfg.ExtraAddrs) != 1 || !cfg.Daemonize {
		t.Fatalf("config %+v", cfg)
	}
	if len(cfg.Users) != 2 || cfg.Users[0].Name != "alice" || cfg.Users[0].Rules[1] != ">c" || cfg.Users[1].Name != "bob" || cfg.Users[1].Rules[1] != ">p:w" {
		t.Fatalf("users %+v", cfg.Users)
	}
	if len(warnings) != 1 || warnings[0] != path+":5: tumbler keeps no data on disk: 'save 60 1' is ignored" {
		t.Fatalf("warnings %q", warnings)
	}
	_, err = loadConfig("", nil, [][]string{{"maxmemory", "lots"}})
	if err == nil || !strings.Contains(err.Error(), ">>> '--maxmemory lots'\nargument must be a memory value") {
		t.Fatalf("bad flag: %v", err)
	}
	_, err = loadConfig("", nil, [][]string{{"user", ":nouser"}})
	if err == nil || !strings.Contains(err.Error(), "--user takes name:password") {
		t.Fatalf("bad --user: %v", err)
	}
	// --user NAME is a user line of just the name, as in Redis; a user
	// given twice on the command line is Redis's error
	l, err = loadConfig("", nil, [][]string{{"user", "foo"}})
	if err != nil || len(l.cfg.Users) != 1 || l.cfg.Users[0].Name != "foo" || len(l.cfg.Users[0].Rules) != 0 {
		t.Fatalf("--user foo: %+v, %v", l.cfg.Users, err)
	}
	for _, flags := range [][][]string{{{"user", "foo"}, {"user", "foo"}}, {{"user", "default"}, {"user", "default on nopass"}}, {{"user", "a:x"}, {"user", "a", "on"}}} {
		_, err = loadConfig("", nil, flags)
		if err == nil || !strings.Contains(err.Error(), "Duplicate user found. A user can only be defined once in config files") {
			t.Errorf("%v: %v", flags, err)
		}
	}
	// An unknown option is Redis's error for an unknown directive.
	_, err = loadConfig("", nil, [][]string{{"PORT", "7002"}, {"no-such-option", "1"}})
	if err == nil || !strings.Contains(err.Error(), ">>> '--no-such-option 1'\nBad directive or wrong number of arguments") {
		t.Fatalf("unknown option: %v", err)
	}
	// Config lines from standard input come after the file and before the
	// options; include reads a file where it stands.
	inc := filepath.Join(t.TempDir(), "inc.conf")
	os.WriteFile(inc, []byte("maxclients 77\ntimeout 9\n"), 0o600)
	l, err = loadConfig(path, []byte("port 7003\nrequirepass stdinpw\n"), [][]string{{"include", inc}, {"TimeOut", "8"}, {"restart-delay", "30s"}, {"cpuprofile", "/tmp/x.prof"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.cfg.Addr != "*:7003" || !reflect.DeepEqual(l.cfg.ExtraAddrs, []string{"-::*"}) || l.cfg.RequirePass != "stdinpw" || l.cfg.MaxClients != 77 || l.cfg.Timeout != 8*time.Second ||
		l.cfg.RestartDelay != 30*time.Second || l.cpuProfile != "/tmp/x.prof" {
		t.Fatalf("file, stdin, include and options: %+v, cpuprofile %q", l.cfg, l.cpuProfile)
	}
	_, err = loadConfig("", []byte("port 1\nnonsense here\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "Reading the configuration file stdin, at line 2\n>>> 'nonsense here'") {
		t.Fatalf("bad stdin line: %v", err)
	}
}

// runBin starts the binary; it is killed when the test ends.
func runBin(t *testing.T, bin string, args ...string) (*exec.Cmd, *binOutput, chan error) {
	t.Helper()
	return runBinEnv(t, bin, nil, args...)
}

// binOutput is what the binary wrote: its log on standard output (as
// redis-server's, with logfile ""), and on standard error what stopped it
// before the log was set up (as Redis's config errors) or from listening.
type binOutput struct{ stdout, stderr bytes.Buffer }

// log is the standard output: the log, without a log file.
func (o *binOutput) log() string { return o.stdout.String() }

// errs is the standard error.
func (o *binOutput) errs() string { return o.stderr.String() }

func (o *binOutput) String() string {
	return "stdout:\n" + o.stdout.String() + "stderr:\n" + o.stderr.String()
}

// runBinEnv is runBin with env added to the binary's environment.
func runBinEnv(t *testing.T, bin string, env []string, args ...string) (*exec.Cmd, *binOutput, chan error) {
	t.Helper()
	out := new(binOutput)
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &out.stdout, &out.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out, done
}

// waitExit returns the exit code of a binary expected to stop by itself.
func waitExit(t *testing.T, done chan error) int {
	t.Helper()
	select {
	case err := <-done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("tumbler did not exit")
	}
	return -1
}

// dialRetry connects once the binary listens.
func dialRetry(t *testing.T, dial func() (net.Conn, error)) net.Conn {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := dial()
		if err == nil {
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(10 * time.Second))
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("tumbler never listened: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// roundTrip sends raw RESP and reads len(want) bytes.
func roundTrip(t *testing.T, c net.Conn, rd *bufio.Reader, send, want string) {
	t.Helper()
	if _, err := c.Write([]byte(send)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	if _, err := io_ReadFull(rd, buf); err != nil {
		t.Fatalf("read: %v (got %q, want %q)", err, buf, want)
	}
	if string(buf) != want {
		t.Fatalf("got %q, want %q", buf, want)
	}
}

func io_ReadFull(rd *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := rd.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestBinary_ConfigFileWithFlagOverrides(t *testing.T) {
	bin := build(t)
	filePort, flagPort := freePort(t), freePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "tumbler.conf")
	logfile := filepath.Join(dir, "tumbler.log")
	os.WriteFile(conf, []byte("# tumbler\nport "+strconv.Itoa(filePort)+"\nrequirepass filepw\nmaxclients 20\nappendonly no\nappendfsync always\nlogfile "+logfile+"\n"), 0o600)
	cmd, out, done := runBin(t, bin, conf, "--port", strconv.Itoa(flagPort), "--requirepass", "flagpw", "--hz", "50")
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(flagPort)) })
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "AUTH filepw\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	roundTrip(t, c, rd, "AUTH flagpw\r\n", "+OK\r\n")
	roundTrip(t, c, rd, "CONFIG GET maxclients\r\n", "*2\r\n$10\r\nmaxclients\r\n$2\r\n20\r\n")
	roundTrip(t, c, rd, "CONFIG GET appendfsync\r\n", "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n")
	roundTrip(t, c, rd, "CONFIG GET hz\r\n", "*2\r\n$2\r\nhz\r\n$2\r\n50\r\n")
	roundTrip(t, c, rd, "CONFIG SET timeout 7\r\nCONFIG REWRITE\r\n", "+OK\r\n+OK\r\n")
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(filePort), time.Second); err == nil {
		t.Fatal("the file's port is served although --port overrides it")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	data, _ := os.ReadFile(conf)
	if !strings.Contains(string(data), "\nport "+strconv.Itoa(flagPort)+"\nrequirepass \"flagpw\"\n") || !strings.Contains(string(data), "\ntimeout 7\n") ||
		!strings.Contains(string(data), "\nappendonly no\nappendfsync always\n") || !strings.Contains(string(data), "\nhz 50\n") {
		t.Fatalf("rewritten config:\n%s", data)
	}
	log, _ := os.ReadFile(logfile)
	if !strings.Contains(string(log), "Ready to accept connections") || !strings.Contains(string(log), "'appendfsync' is accepted but has no effect in tumbler") ||
		!strings.Contains(string(log), "--hz: 'hz' is accepted but has no effect in tumbler") || strings.Contains(string(log), "appendonly") {
		t.Fatalf("log file:\n%s\nstderr:\n%s", log, out)
	}
}

// A config file that cannot be opened, named or included, is one warning
// line on standard output, as redis-server logs it, not the block.
func TestBinary_MissingConfigFileLogsALine(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.conf")
	including := filepath.Join(dir, "inc.conf")
	os.WriteFile(including, []byte("port 7000\ninclude "+missing+"\n"), 0o600)
	line := regexp.MustCompile(`^\d+:C \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} # Fatal error, can't open config file '` +
		regexp.QuoteMeta(missing) + `': No such file or directory\n$`)
	for _, conf := range []string{missing, including} {
		_, out, done := runBin(t, bin, conf)
		if code := waitExit(t, done); code != 1 || !line.MatchString(out.log()) || out.errs() != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", conf, code, out.log(), out.errs())
		}
	}
}

func TestBinary_BadConfigExitsWithFileAndLine(t *testing.T) {
	bin := build(t)
	conf := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(conf, []byte("port 7000\n\nmaxmemory lots\n"), 0o600)
	_, out, done := runBin(t, bin, conf)
	if code := waitExit(t, done); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	want := "*** FATAL CONFIG FILE ERROR (tumbler 7.2.4) ***\nReading the configuration file " + conf + ", at line 3\n>>> 'maxmemory lots'\nargument must be a memory value\n"
	if !strings.Contains(out.errs(), want) {
		t.Fatalf("stderr %q\nwant %q", out.errs(), want)
	}
	_, out, done = runBin(t, bin, "--port", "0")
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), "configured to not listen anywhere") {
		t.Fatalf("--port 0 alone: exit %d, %q", code, out.errs())
	}
	_, out, done = runBin(t, bin, "--maxmemory-policy", "allkeys-lru")
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), "only noeviction is supported") {
		t.Fatalf("--maxmemory-policy allkeys-lru: exit %d, %q", code, out.errs())
	}
}

// --port 0 with --tls-port serves TLS only.
func TestBinary_TLSOnly(t *testing.T) {
	bin := build(t)
	pki := testpki.New(t)
	port := strconv.Itoa(freePort(t))
	cmd, out, done := runBin(t, bin, "--port", "0", "--tls-port", port, "--tls-cert-file", pki.CertFile,
		"--tls-key-file", pki.KeyFile, "--tls-auth-clients", "no")
	c := dialRetry(t, func() (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: pki.Pool})
	})
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "PING\r\nCONFIG GET port\r\n", "+PONG\r\n*2\r\n$4\r\nport\r\n$1\r\n0\r\n")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// The command line takes redis-server's: every directive Redis knows, a
// multi-word one given as several arguments (--save 60 1).
// The command line reads as redis-server 7.0's (server.c, main).
func TestParseCmdline(t *testing.T) {
	for _, tc := range []struct {
		in    []string
		conf  string
		stdin bool
		want  string // the directives, words joined by |, directives by ;
	}{
		{in: []string{"--save", "", "--appendonly", "no"}, want: "save|;appendonly|no"},
		{in: []string{"--save", "60", "1", "--port", "7000"}, want: "save|60|1;port|7000"},
		{in: []string{"--bind", "127.0.0.1", "-::1"}, want: "bind|127.0.0.1|-::1"},
		{in: []string{"--user", "alice", "on", ">p w", "~*"}, want: "user|alice|on|>p w|~*"},
		// a bare --save before another option, or last, is save ""
		{in: []string{"--port", "7000", "--save", "--appendonly", "no"}, want: "port|7000;save|;appendonly|no"},
		{in: []string{"--save", "--port", "7000"}, want: "save|;port|7000"},
		{in: []string{"--port", "7000", "--save"}, want: "port|7000;save|"},
		// ...spelled in ASCII case only (strcasecmp): with a long s
		// (U+017F, which Unicode folds with "s") it is a name of its own,
		// which takes the next argument
		{in: []string{"--SAVE", "--port", "7000"}, want: "SAVE|;port|7000"},
		{in: []string{"--\u017fave", "--port", "7000"}, want: "\u017fave|--port|7000"},
		// any other lone name takes the next argument, even "--..."
		{in: []string{"--requirepass", "--secret", "--port", "1"}, want: "requirepass|--secret;port|1"},
		// name and value in one argument, split as a config line
		{in: []string{"--port 7000", "--bind", "::1"}, want: "port|7000;bind|::1"},
		{in: []string{`--user "a b" on`}, want: "user|a b|on"},
		{in: []string{"tumbler.conf", "--port", "7000"}, conf: "tumbler.conf", want: "port|7000"},
		{in: []string{"tumbler.conf", "-", "--port", "7000", "-"}, conf: "tumbler.conf", stdin: true, want: "-;port|7000"}, // (only a first or last "-" is stdin)
		{in: []string{"-", "--port", "7000"}, stdin: true, want: "port|7000"},
		{in: []string{"tumbler.conf", "7000"}, conf: "tumbler.conf", want: "7000"},
		{in: []string{"--port", "7000", "tumbler.conf"}, want: "port|7000|tumbler.conf"},
		{in: []string{"-port", "7000"}, want: "-port|7000"},
	} {
		cl, err := parseCmdline(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var ds []string
		for _, d := range cl.directives {
			ds = append(ds, strings.Join(d, "|"))
		}
		if got := strings.Join(ds, ";"); got != tc.want || cl.confPath != tc.conf || cl.stdin != tc.stdin {
			t.Errorf("%q: directives %q, conf %q, stdin %v; want %q, %q, %v", tc.in, got, cl.confPath, cl.stdin, tc.want, tc.conf, tc.stdin)
		}
	}
	for _, in := range [][]string{{"-v"}, {"--version"}} {
		if cl, _ := parseCmdline(in); !cl.version {
			t.Errorf("%q is not --version", in)
		}
	}
	for _, in := range [][]string{{"-h"}, {"--help"}} {
		if cl, _ := parseCmdline(in); !cl.help {
			t.Errorf("%q is not --help", in)
		}
	}
	if _, err := parseCmdline([]string{`--port "7000`}); err == nil || !strings.Contains(err.Error(), "Unbalanced quotes") {
		t.Errorf("unbalanced quotes: %v", err)
	}
}

// TestLoadConfig_NamesFoldASCIIOnly: directive names and their words
// fold case as Redis's config parser does (sdstolower, strcasecmp),
// ASCII letters only: a Kelvin sign (U+212A, which Unicode lowers to
// "k") in a name or a memory unit is no "k", in the file and as a flag.
func TestLoadConfig_NamesFoldASCIIOnly(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line, reason string
	}{
		{"tcp-\u212aeepalive 300", "Bad directive or wrong number of arguments"},
		{"maxmemory 1\u212ab", "argument must be a memory value"},
		{"client-output-buffer-limit pubsub 32\u212a 8mb 60", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"TCP-KEEPALIVE 300", ""},
		{"maxmemory 1KB", ""},
	} {
		path := filepath.Join(dir, "tumbler.conf")
		if err := os.WriteFile(path, []byte(tc.line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		words := strings.Fields(tc.line)
		for _, how := range []struct {
			name  string
			path  string
			flags [][]string
		}{{"file", path, nil}, {"flag", "", [][]string{words}}} {
			_, err := loadConfig(how.path, nil, how.flags)
			switch {
			case tc.reason == "" && err != nil:
				t.Errorf("%s %q: %v", how.name, tc.line, err)
			case tc.reason != "" && (err == nil || !strings.HasSuffix(err.Error(), "\n"+tc.reason)):
				t.Errorf("%s %q: %v; want %q", how.name, tc.line, err, tc.reason)
			}
		}
	}
}

// enable-debug-command is a directive, in the file and as a flag, as the
// DEBUG refusal tells the operator.
// TestLoadConfig_DefaultBindIsRedis: with no bind, the binary listens as
// redis-server does ("* -::*": every address, loopback clients only
// while there is no password); port keeps it, and bind replaces it.
func TestLoadConfig_DefaultBindIsRedis(t *testing.T) {
	for _, tc := range []struct {
		flags [][]string
		addr  string
		extra []string
	}{
		{nil, "*:6379", []string{"-::*"}},
		{[][]string{{"port", "7000"}}, "*:7000", []string{"-::*"}},
		{[][]string{{"bind", "127.0.0.1"}, {"port", "7000"}}, "127.0.0.1:7000", nil},
		{[][]string{{"bind", "-::1", "127.0.0.1"}}, "[-::1]:6379", []string{"127.0.0.1"}},
	} {
		l, err := loadConfig("", nil, tc.flags)
		if err != nil {
			t.Fatal(err)
		}
		if l.cfg.Addr != tc.addr || len(l.cfg.ExtraAddrs)+len(tc.extra) > 0 && !reflect.DeepEqual(l.cfg.ExtraAddrs, tc.extra) {
			t.Errorf("%v: Addr %q, ExtraAddrs %q; want %q, %q", tc.flags, l.cfg.Addr, l.cfg.ExtraAddrs, tc.addr, tc.extra)
		}
	}
}

func TestLoadConfig_EnableDebugCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tumbler.conf")
	os.WriteFile(path, []byte("enable-debug-command local\n"), 0o600)
	l, err := loadConfig(path, nil, nil)
	if err != nil || l.cfg.EnableDebugCommand != "local" || len(l.warnings) != 0 {
		t.Fatalf("file: %q %q %v", l.cfg.EnableDebugCommand, l.warnings, err)
	}
	l, err = loadConfig(path, nil, [][]string{{"enable-debug-command", "yes"}})
	if err != nil || l.cfg.EnableDebugCommand != "yes" {
		t.Fatalf("flag: %q %v", l.cfg.EnableDebugCommand, err)
	}
	_, err = loadConfig("", nil, [][]string{{"enable-debug-command", "maybe"}})
	if err == nil || !strings.Contains(err.Error(), "argument(s) must be one of the following: no, yes, local") {
		t.Fatalf("bad value: %v", err)
	}
}

// redis-server's usual command lines start tumbler: the directives it
// ignores are warnings, the ones it refuses stop it with Redis's block.
func TestBinary_RedisServerCommandLine(t *testing.T) {
	bin := build(t)
	port := freePort(t)
	pidfile := filepath.Join(t.TempDir(), "tumbler.pid")
	cmd, out, done := runBin(t, bin, "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--save", "60", "1", "--dir", t.TempDir(), "--bind", "127.0.0.1", "-::1", "--enable-debug-command", "local",
		"--pidfile", pidfile, "--tcp-keepalive", "60", "--hz", "50", "--shutdown-on-sigterm", "now", "force", "--databases", "4")
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)) })
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "DEBUG SLEEP 0\r\n", "+OK\r\n")
	roundTrip(t, c, rd, "CONFIG GET enable-debug-command\r\n", "*2\r\n$20\r\nenable-debug-command\r\n$5\r\nlocal\r\n")
	// the parameters tumbler does not act on are reported, as are those
	// it acts on; save keeps tumbler's value
	roundTrip(t, c, rd, "CONFIG GET tcp-keepalive\r\n", "*2\r\n$13\r\ntcp-keepalive\r\n$2\r\n60\r\n")
	roundTrip(t, c, rd, "CONFIG GET hz\r\n", "*2\r\n$2\r\nhz\r\n$2\r\n50\r\n")
	roundTrip(t, c, rd, "CONFIG GET shutdown-on-sigterm\r\n", "*2\r\n$19\r\nshutdown-on-sigterm\r\n$9\r\nnow force\r\n")
	roundTrip(t, c, rd, "CONFIG GET save\r\n", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n")
	roundTrip(t, c, rd, "CONFIG GET databases\r\n", "*2\r\n$9\r\ndatabases\r\n$1\r\n4\r\n")
	roundTrip(t, c, rd, "SELECT 3\r\n", "+OK\r\n")
	roundTrip(t, c, rd, "SELECT 4\r\n", "-ERR DB index is out of range\r\n")
	// the pid file is written once the server listens (it answered), and
	// removed at exit
	if data, err := os.ReadFile(pidfile); err != nil || string(data) != strconv.Itoa(cmd.Process.Pid)+"\n" {
		t.Errorf("pid file: %q %v, want %d", data, err, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pid file left behind: %v", err)
	}
	for _, w := range []string{"--save: tumbler keeps no data on disk: 'save 60 1' is ignored", "--dir: tumbler writes no data files",
		"--hz: 'hz' is accepted but has no effect"} {
		if !strings.Contains(out.log(), w) {
			t.Errorf("no warning %q in:\n%s", w, out)
		}
	}
	for _, f := range []string{"--databases", "--tcp-keepalive"} {
		if strings.Contains(out.log(), f) {
			t.Errorf("a warning for %s, which tumbler acts on:\n%s", f, out)
		}
	}
	if strings.Contains(out.log(), "--appendonly") {
		t.Errorf("a warning for --appendonly no, which is what tumbler does:\n%s", out)
	}
	_, out, done = runBin(t, bin, "--port", strconv.Itoa(port), "--hz", "fast")
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), ">>> '--hz fast'\nargument couldn't be parsed into an integer") {
		t.Fatalf("--hz fast: exit %d, %q", code, out.errs())
	}
	_, out, done = runBin(t, bin, "--port", strconv.Itoa(port), "--replicaof", "10.0.0.1", "6379")
	want := "Reading the command line\n>>> '--replicaof 10.0.0.1 6379'\ntumbler does not replicate"
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), want) {
		t.Fatalf("--replicaof: exit %d, %q", code, out.errs())
	}
}

// Relative file paths are relative to dir, as in Redis (which changes to
// it): the ACL file, the log file and the pid file are found and written
// there, wherever tumbler was started.
func TestBinary_RelativePathsFromDir(t *testing.T) {
	bin := build(t)
	port := freePort(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "users.acl"), []byte("user default on nopass ~* &* +@all\nuser app on >pw ~* +@all\n"), 0o600)
	conf := filepath.Join(t.TempDir(), "tumbler.conf")
	os.WriteFile(conf, []byte("port "+strconv.Itoa(port)+"\ndir "+dir+"\naclfile users.acl\nlogfile tumbler.log\npidfile tumbler.pid\n"), 0o600)
	cmd, out, done := runBin(t, bin, conf)
	c := dialRetry(t, func() (net.Conn, error) { return net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)) })
	rd := bufio.NewReader(c)
	roundTrip(t, c, rd, "AUTH app pw\r\n", "+OK\r\n")
	roundTrip(t, c, rd, "ACL SETUSER saved on nopass\r\nACL SAVE\r\n", "+OK\r\n+OK\r\n")
	if pid, err := os.ReadFile(filepath.Join(dir, "tumbler.pid")); err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("pid file in dir: %q, %v", pid, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, done); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if acl, _ := os.ReadFile(filepath.Join(dir, "users.acl")); !strings.Contains(string(acl), "user saved on nopass") {
		t.Errorf("ACL SAVE wrote %q", acl)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "tumbler.log")); !strings.Contains(string(log), "Ready to accept connections") {
		t.Errorf("log file in dir:\n%s\nstderr:\n%s", log, out)
	}
}
