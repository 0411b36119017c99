package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tumblerdb/tumbler/compat/internal/proc"
	"github.com/tumblerdb/tumbler/server"
)

// pending lists replay files that are expected to differ until tumbler
// implements what they need (file → reason). A pending file still runs:
// while it differs the test is skipped with the first difference; once it
// matches completely the test fails, so the entry gets removed.
var pending = map[string]string{}

// TestReplay runs every testdata/*.replay against a fresh redis-server and
// a fresh in-process tumbler, step by step, and fails on every frame that
// differs. A file the oracle itself does not answer as written (a <recv>
// with no frame, a frame nobody read) fails whether pending or not.
func TestReplay(t *testing.T) {
	files := loadFiles(t)
	for name := range pending {
		if _, ok := files[name]; !ok {
			t.Errorf("pending names %s, which is not a replay file", name)
		}
	}
	verbose := os.Getenv("TUMBLER_REPLAY_VERBOSE") == "1"
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := files[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			redis := startRedis(t)
			tumbler := server.RunT(t).Addr()
			opt := Options{}
			if verbose {
				opt.Logf = t.Logf
			}
			diffs, err := Run(f, redis, tumbler, opt)
			if err != nil {
				t.Fatalf("the replay does not hold against redis-server itself: %v", err)
			}
			reason, isPending := pending[name]
			switch {
			case isPending && len(diffs) == 0:
				t.Errorf("listed in pending (%s) but now matches redis-server at every step: remove it from pending", reason)
			case isPending:
				t.Skipf("pending: %s\nfirst difference (of %d):\n%s", reason, len(diffs), FirstDiff(diffs))
			case len(diffs) > 0:
				t.Errorf("%s (%s %s): %d step(s) differ from redis-server:\n%s", name, f.Client, f.Version, len(diffs), Render(diffs))
			}
		})
	}
}

// TestReplay_OracleAgreesWithItself runs every file against two fresh
// redis-servers. They must agree at every step not overridden by @expect:
// a step that differs between two identical servers needs a marker (or a
// different sequence), or its differences against tumbler mean nothing.
func TestReplay_OracleAgreesWithItself(t *testing.T) {
	files := loadFiles(t)
	for name, f := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := startRedis(t), startRedis(t)
			diffs, err := Run(f, a, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			expected := map[int]bool{}
			for _, st := range f.Steps {
				if st.Expect != nil {
					expected[st.Line] = true
				}
			}
			for _, d := range diffs {
				if !expected[d.Line] {
					t.Errorf("two redis-servers differ; the step needs a marker:\n%s", d)
				}
			}
		})
	}
}

func loadFiles(t *testing.T) map[string]*File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.replay"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no replays in testdata/ (%v)", err)
	}
	files := map[string]*File{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(filepath.Base(p), bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = f
	}
	return files
}

// startRedis runs redis-server on a free loopback port until the test ends
// and returns its address; DEBUG is enabled, as RunT's tumbler has it (DEBUG
// SLEEP and SET-ACTIVE-EXPIRE in fixture_wire.replay).
func startRedis(t *testing.T) string {
	t.Helper()
	return proc.StartRedis(t, "--enable-debug-command", "yes")
}
