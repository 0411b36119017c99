package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A dir that is missing or not a directory stops start-up with exit
// status 1 and Redis's reason, as redis-server 7.0's chdir to it does;
// a relative --include after --dir is read in dir.
func TestBinary_DirMustExistAndHoldsIncludes(t *testing.T) {
	bin := build(t)
	port := strconv.Itoa(freePort(t))
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", port, "--dir", "/nonexistent"}, "Reading the command line\n>>> '--dir /nonexistent'\nNo such file or directory\n"},
		{[]string{"--port", port, "--dir", file}, "Reading the command line\n>>> '--dir " + file + "'\nNot a directory\n"},
	} {
		_, out, done := runBin(t, bin, c.args...)
		if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), c.want) {
			t.Errorf("%q: exit %d, stderr %q\nwant %q", c.args, code, out.errs(), c.want)
		}
	}
	conf := filepath.Join(t.TempDir(), "tumbler.conf")
	os.WriteFile(conf, []byte("port "+port+"\ndir /nonexistent\n"), 0o600)
	_, out, done := runBin(t, bin, conf)
	want := "Reading the configuration file " + conf + ", at line 2\n>>> 'dir /nonexistent'\nNo such file or directory\n"
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), want) {
		t.Errorf("dir /nonexistent: exit %d, stderr %q\nwant %q", code, out.errs(), want)
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rel.conf"), []byte("nosuchdirective\n"), 0o600)
	_, out, done = runBin(t, bin, "--port", port, "--dir", dir, "--include", "rel.conf")
	want = "Reading the configuration file " + filepath.Join(dir, "rel.conf") + ", at line 1\n>>> 'nosuchdirective'\n"
	if code := waitExit(t, done); code != 1 || !strings.Contains(out.errs(), want) {
		t.Errorf("--dir %s --include rel.conf: exit %d, stderr %q\nwant %q", dir, code, out.errs(), want)
	}
}
