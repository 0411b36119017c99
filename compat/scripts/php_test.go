package scripts

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// The PHP suite, compat/php/lock_test.php: Symfony Lock 5.4's RedisStore
// (Debian php-symfony-lock) on phpredis (php-redis) and on Predis 1.1
// (php-predis), run with Debian's /usr/bin/php. Each client library gets
// three fresh servers: the suite's CombinedStore tests SHUTDOWN the second
// and third. The same suite runs against three redis-servers too, so a
// check that fails on both is a test bug. Set up with:
//
//	apt-get install -y php-cli php-redis php-predis php-symfony-lock

const (
	php = "/usr/bin/php"

	// The suite takes about 5 s; this only bounds a hung client or server.
	phpTimeout = 2 * time.Minute

	// Tests in lock_test.php; a run that reports fewer lost some.
	phpMinTests = 20
)

// phpSetup checks php and the three Debian packages and returns the suite.
func phpSetup(t *testing.T) (root, script string) {
	t.Helper()
	root = repoRoot(t)
	script = filepath.Join(root, "compat", "php", "lock_test.php")
	if _, err := os.Stat(php); err != nil {
		missing(t, "%s is not installed (apt-get install php-cli php-redis php-predis php-symfony-lock)", php)
	}
	// The suite's probe mode checks the extension and the autoloaders.
	out, err := exec.Command(php, script, "probe").CombinedOutput()
	if err != nil {
		missing(t, "%s cannot run the PHP suite: %v: %s", php, err, strings.TrimSpace(string(out)))
	}
	t.Log(strings.TrimSpace(string(out)))
	if v, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "php-symfony-lock").Output(); err == nil {
		t.Logf("php-symfony-lock %s", v)
	}
	return root, script
}

func TestPHPSymfonyLock(t *testing.T) {
	root, script := phpSetup(t)
	for _, lib := range []string{"phpredis", "predis"} {
		t.Run("tumbler/"+lib, func(t *testing.T) {
			t.Parallel()
			srvs := server.RunN(t, 3, server.WithConfig(func(c *server.Config) { c.Logger = testLogger(t) }))
			addrs := make([]string, len(srvs))
			for i, s := range srvs {
				addrs[i] = s.Addr()
			}
			runPHP(t, root, script, lib, addrs)
			// combined_one_down and combined_two_down really took those down.
			for i, want := range []bool{false, true, true} {
				if got := srvs[i].ShutdownRequested(); got != want {
					t.Errorf("server %d: ShutdownRequested() = %v, want %v", i, got, want)
				}
			}
		})
		t.Run("redis-server/"+lib, func(t *testing.T) {
			t.Parallel()
			addrs := []string{startRedis(t), startRedis(t), startRedis(t)}
			runPHP(t, root, script, lib, addrs)
			for i, want := range []bool{true, false, false} {
				if err := ping(addrs[i]); (err == nil) != want {
					t.Errorf("redis-server %d: PING error %v, want it up: %v", i, err, want)
				}
			}
		})
	}
}

// runPHP runs the suite for lib with addrs[0] as the main server and all
// three for CombinedStore, and checks its summary: every test ran, none
// failed, none skipped.
func runPHP(t *testing.T, root, script, lib string, addrs []string) {
	t.Helper()
	out := run(t, phpTimeout, root,
		[]string{"TUMBLER_ADDR=" + addrs[0], "TUMBLER_ADDRS=" + strings.Join(addrs, ",")},
		php, script, lib)
	m := regexp.MustCompile(`(?m)^` + lib + `: (\d+) passed, (\d+) failed, (\d+) skipped$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no summary line in the PHP suite's output")
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	skipped, _ := strconv.Atoi(m[3])
	if failed != 0 || skipped != 0 {
		t.Fatalf("PHP suite: %d failed, %d skipped (output above)", failed, skipped)
	}
	if passed < phpMinTests {
		t.Fatalf("PHP suite passed %d tests, want at least %d", passed, phpMinTests)
	}
}

// testLogger sends a server's logs (the SHUTDOWN warnings) to t.Log, with
// the test's output instead of the test binary's stderr.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tLogWriter{t}, nil))
}

type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
