package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tumblerdb/tumbler/server"
)

// Lock clients configured with a database index: redis-py Redis(db=N) and
// its URL forms (compat/python/test_database.py).
func TestPythonRedisPyDatabase(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(python); err != nil {
		missing(t, "%s is not installed (apt-get install python3 python3-redis)", python)
	}
	if out, err := exec.Command(python, "-c", "import redis, redis.lock").CombinedOutput(); err != nil {
		missing(t, "%s cannot import redis (apt-get install python3-redis): %v: %s", python, err, strings.TrimSpace(string(out)))
	}
	srv := server.RunT(t)
	out := run(t, pythonTimeout, root,
		[]string{"TUMBLER_ADDR=" + srv.Addr(), "PYTHONDONTWRITEBYTECODE=1"},
		python, filepath.Join("compat", "python", "test_database.py"), "-v")
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? in`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no unittest summary in the output")
	}
	if n, _ := strconv.Atoi(m[1]); n < 14 {
		t.Fatalf("unittest ran %d tests, want at least 14", n)
	}
	if !regexp.MustCompile(`(?m)^OK$`).MatchString(out) {
		t.Fatal("unittest did not report OK (or skipped tests)")
	}
}

// node-redis 4 and 6, ioredis 5 and 6 and redlock with a database index
// (compat/node/database.test.js), over three tumblers.
func TestNodeDatabase(t *testing.T) {
	node, dir := nodeSetup(t)
	srvs := server.RunN(t, 3)
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr()
	}
	out := run(t, nodeTimeout, dir,
		[]string{"TUMBLER_ADDR=" + addrs[0], "TUMBLER_ADDRS=" + strings.Join(addrs, ",")},
		node, "--test", "database.test.js")
	nodeSummary(t, out, 21)
}
