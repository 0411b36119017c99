// Package scripts proves the Python, Node.js and PHP lock clients against
// tumbler: it starts tumbler in-process with server.RunT and runs the client
// suites in compat/python, compat/node and compat/php as subprocesses,
// unmodified clients with their default settings.
//
//   - compat/python/test_lock.py: redis-py 4.3.4 (Debian python3-redis),
//     run with /usr/bin/python3, stdlib unittest.
//   - compat/node/*.test.js: ioredis 5 and 6, redlock 5 beta, node-redis 4
//     and 6, pinned by compat/node/package-lock.json, run with `node --test`.
//   - compat/php/lock_test.php: Symfony Lock 5.4 (Debian php-symfony-lock)
//     on phpredis and on Predis, run with /usr/bin/php, also against
//     redis-server (php_test.go).
//
// A missing interpreter, module or node_modules skips the test, unless
// TUMBLER_REQUIRE_CLIENTS=1 (CI), where it fails instead. Set up with:
//
//	apt-get install -y python3-redis nodejs npm
//	apt-get install -y php-cli php-redis php-predis php-symfony-lock
//	(cd compat/node && npm ci)
package scripts

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

const (
	python = "/usr/bin/python3" // Debian's interpreter: the one with python3-redis

	// Each suite takes seconds; these only bound a hung client or server.
	pythonTimeout = 3 * time.Minute
	nodeTimeout   = 3 * time.Minute
)

// repoRoot is /work/main: this package lives in compat/scripts.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join(wd, "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "compat", "python", "test_lock.py")); err != nil {
		t.Fatalf("cannot find the client suites from %s: %v", wd, err)
	}
	return root
}

// missing skips the test, or fails it when the environment promises that
// every client is installed (TUMBLER_REQUIRE_CLIENTS=1).
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("TUMBLER_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("TUMBLER_REQUIRE_CLIENTS=1 but %s", msg)
	}
	t.Skip(msg + " (set TUMBLER_REQUIRE_CLIENTS=1 to make this a failure)")
}

// run runs name args in dir with env added, streams every output line into
// t.Log as it comes, and returns the whole output. It fails the test if the
// command exits non-zero or runs out of time.
func run(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	setProcessGroup(cmd)    // on timeout, kill node's test-file children too
	proc.DieWithParent(cmd) // and the runtime itself if this test binary crashes
	cmd.WaitDelay = 5 * time.Second

	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw

	var out strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line)
			out.WriteByte('\n')
			t.Log(line)
		}
		// Drain anything after a too-long line so the child never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()

	start := time.Now()
	t.Logf("$ (cd %s && %s %s)", dir, name, strings.Join(args, " "))
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
	}
	pw.Close()
	wg.Wait()
	elapsed := time.Since(start).Round(time.Millisecond)

	switch {
	case ctx.Err() == context.DeadlineExceeded:
		t.Fatalf("%s did not finish within %v; killed", name, timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s failed after %v with exit code %d (output above)", name, elapsed, ee.ExitCode())
		}
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s passed in %v", name, elapsed)
	return out.String()
}

func TestPythonRedisPyLock(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(python); err != nil {
		missing(t, "%s is not installed (apt-get install python3 python3-redis)", python)
	}
	probe := exec.Command(python, "-c", "import redis, redis.lock; print(redis.__version__)")
	ver, err := probe.CombinedOutput()
	if err != nil {
		missing(t, "%s cannot import redis (apt-get install python3-redis): %v: %s", python, err, strings.TrimSpace(string(ver)))
	}
	t.Logf("redis-py %s", strings.TrimSpace(string(ver)))

	srv := server.RunT(t)
	out := run(t, pythonTimeout, root,
		[]string{"TUMBLER_ADDR=" + srv.Addr(), "PYTHONDONTWRITEBYTECODE=1"},
		python, filepath.Join("compat", "python", "test_lock.py"), "-v")

	// unittest must have run the whole suite, not zero tests.
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no unittest summary in the output")
	}
	if n, _ := strconv.Atoi(m[1]); n < 20 {
		t.Fatalf("unittest ran %d tests, want at least 20", n)
	}
	if !regexp.MustCompile(`(?m)^OK( \(skipped=\d+\))?$`).MatchString(out) {
		t.Fatal("unittest did not report OK")
	}
	if s := regexp.MustCompile(`(?m)^OK \(skipped=(\d+)\)$`).FindStringSubmatch(out); s != nil {
		t.Logf("NOTE: %s python test(s) skipped; see the skip reasons above", s[1])
	}
}

// nodeSetup checks node and the pinned node_modules and returns compat/node.
func nodeSetup(t *testing.T) (node, dir string) {
	t.Helper()
	dir = filepath.Join(repoRoot(t), "compat", "node")
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH (Node.js 20+ is needed)")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("compat/node/package.json: %v", err)
	}
	if len(pkg.Dependencies) == 0 {
		t.Fatal("compat/node/package.json pins no dependencies")
	}
	for name, want := range pkg.Dependencies {
		// An npm alias ("ioredis6": "npm:ioredis@6.0.0") pins the version after its last '@'.
		if alias, ok := strings.CutPrefix(want, "npm:"); ok {
			want = alias[strings.LastIndexByte(alias, '@')+1:]
		}
		raw, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil {
			missing(t, "%s is not installed in compat/node/node_modules (run: cd compat/node && npm ci)", name)
		}
		var dep struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(raw, &dep); err != nil {
			t.Fatalf("node_modules/%s/package.json: %v", name, err)
		}
		// redlock's own package.json says "v5.0.0-beta.2".
		if got := strings.TrimPrefix(dep.Version, "v"); got != want {
			missing(t, "node_modules/%s is %s, package.json pins %s (run: cd compat/node && npm ci)", name, got, want)
		}
		t.Logf("%s %s", name, want)
	}
	return node, dir
}

// nodeSummary checks the TAP summary of `node --test`: tests ran, none failed.
func nodeSummary(t *testing.T, out string, minTests int) {
	t.Helper()
	count := func(what string) int {
		m := regexp.MustCompile(`(?m)^# ` + what + ` (\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q count in the node --test summary", what)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	pass, fail, cancelled, skipped := count("pass"), count("fail"), count("cancelled"), count("skipped")
	if fail != 0 || cancelled != 0 {
		t.Fatalf("node --test: %d failed, %d cancelled", fail, cancelled)
	}
	if pass+skipped < minTests {
		t.Fatalf("node --test ran %d tests (%d skipped), want at least %d", pass+skipped, skipped, minTests)
	}
	if skipped > 0 {
		t.Logf("NOTE: %d node test(s) skipped; see the skip reasons above", skipped)
	}
}

func TestNodeIoredisRedlock(t *testing.T) {
	node, dir := nodeSetup(t)
	// One server for the ioredis and single-instance redlock tests; it is
	// also the first of the three Redlock instances.
	srvs := []*server.Server{server.RunT(t), server.RunT(t), server.RunT(t)}
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr()
	}
	out := run(t, nodeTimeout, dir,
		[]string{"TUMBLER_ADDR=" + addrs[0], "TUMBLER_ADDRS=" + strings.Join(addrs, ",")},
		node, "--test", "ioredis_redlock.test.js")
	nodeSummary(t, out, 18)
}

func TestNodeRedis4(t *testing.T) {
	node, dir := nodeSetup(t)
	srv := server.RunT(t)
	out := run(t, nodeTimeout, dir,
		[]string{"TUMBLER_ADDR=" + srv.Addr()},
		node, "--test", "noderedis.test.js")
	nodeSummary(t, out, 6)
}
