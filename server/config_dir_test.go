package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// dir is checked as Redis's chdir to it checks it: a missing path (or
// an empty one) is "No such file or directory", a file "Not a
// directory", a fatal config error from the config file or a flag and
// CONFIG SET's refusal, as redis-server 7.0 words them. A relative dir
// is relative to the dir before it, where Redis then is.
func TestDir_MissingOrNotADirectory(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, reason string }{
		{"/nonexistent", "No such file or directory"},
		{filepath.Join(tmp, "none"), "No such file or directory"},
		{"", "No such file or directory"},
		{file, "Not a directory"},
		{filepath.Join(file, "x"), "Not a directory"},
	} {
		var cfg Config
		_, err := ApplyDirective(&cfg, "dir", c.dir)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Reason != c.reason {
			t.Errorf("dir %q: %v, want %q", c.dir, err, c.reason)
		}
	}

	// In a config file: the block Redis prints, at the dir line.
	path := writeConf(t, "dir.conf", "port 7000\ndir /nonexistent\n")
	var cfg Config
	_, err := LoadConfigFile(path, &cfg)
	want := "\n*** FATAL CONFIG FILE ERROR (tumbler 7.2.4) ***\nReading the configuration file " + path +
		", at line 2\n>>> 'dir /nonexistent'\nNo such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("dir /nonexistent in a file: %v\nwant%s", err, want)
	}

	// A relative dir after another: Redis has changed to the first.
	cfg = Config{}
	for _, d := range []string{tmp, "a", "b"} {
		if _, err := ApplyDirective(&cfg, "dir", d); err != nil {
			t.Fatalf("dir %s after %s: %v", d, cfg.Dir, err)
		}
	}
	if want := filepath.Join(tmp, "a", "b"); cfg.Dir != want {
		t.Fatalf("dir %s, a, b: Dir %q, want %q", tmp, cfg.Dir, want)
	}
	if _, err := ApplyDirective(&cfg, "dir", "a"); err == nil {
		t.Fatalf("dir a inside %s/a/b: accepted", tmp)
	}

	// CONFIG SET dir: Redis's errors, then tumbler's own refusal of
	// another directory than its working directory.
	srv := RunT(t, WithConfig(func(c *Config) {
		if _, err := ApplyDirective(c, "enable-protected-configs", "yes"); err != nil {
			t.Fatal(err)
		}
	}))
	doSteps(t, dial(t, srv.Addr()), []wireStep{
		{[]string{"CONFIG", "SET", "dir", "/nonexistent"}, setErr("dir", "No such file or directory")},
		{[]string{"CONFIG", "SET", "dir", ""}, setErr("dir", "No such file or directory")},
		{[]string{"CONFIG", "SET", "dir", file}, setErr("dir", "Not a directory")},
		{[]string{"CONFIG", "SET", "hz", "20", "dir", "/nonexistent"}, setErr("dir", "No such file or directory")},
		{[]string{"CONFIG", "GET", "hz"}, getReply("hz", "10")},
		{[]string{"CONFIG", "SET", "dir", tmp}, setErr("dir", "tumbler writes no data files and never changes directory: only dir "+cwd()+" is supported")},
		{[]string{"CONFIG", "SET", "dir", cwd()}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "dir"}, getReply("dir", cwd())},
	})
}
