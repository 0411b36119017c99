package server

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A relative include is read relative to dir as set when the include is
// read, as redis-server 7.0 reads it (it has changed to dir by then): a
// dir line or flag before the include moves it, one after does not; in a
// file, on the command line (IncludeConfig, after the file) and in an
// included file alike, globs too.
func TestInclude_RelativeToDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	dir := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cwd, "rel.conf"), "maxclients 1\n")
	write(filepath.Join(dir, "rel.conf"), "maxclients 2\n")
	write(filepath.Join(cwd, "g1.conf"), "timeout 1\n")
	write(filepath.Join(dir, "g1.conf"), "timeout 2\n")
	write(filepath.Join(dir, "nested.conf"), "include rel.conf\n")
	load := func(t *testing.T, text string, flags ...string) *Config {
		t.Helper()
		var cfg Config
		if _, err := LoadConfigFile(writeConf(t, "main.conf", text), &cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(flags); i += 2 {
			var err error
			if flags[i] == "include" {
				_, err = IncludeConfig(flags[i+1], &cfg)
			} else {
				_, err = ApplyDirective(&cfg, flags[i], flags[i+1])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return &cfg
	}
	for _, c := range []struct {
		name, file string
		flags      []string
		maxclients int
		timeout    int // seconds; 0: no g1.conf read
	}{
		{"file, include after dir", "dir " + dir + "\ninclude rel.conf\n", nil, 2, 0},
		{"file, include before dir", "include rel.conf\ndir " + dir + "\n", nil, 1, 0},
		{"file, glob after dir", "dir " + dir + "\ninclude g*.conf\n", nil, 10000, 2},
		{"file, glob before dir", "include g*.conf\ndir " + dir + "\n", nil, 10000, 1},
		{"file, nested include after dir", "dir " + dir + "\ninclude nested.conf\n", nil, 2, 0},
		{"flags, include after dir", "", []string{"dir", dir, "include", "rel.conf"}, 2, 0},
		{"flags, include before dir", "", []string{"include", "rel.conf", "dir", dir}, 1, 0},
		{"flags, glob after dir", "", []string{"dir", dir, "include", "g*.conf"}, 10000, 2},
		{"dir in the file, include flag", "dir " + dir + "\n", []string{"include", "rel.conf"}, 2, 0},
		{"absolute include after dir", "dir " + dir + "\ninclude " + filepath.Join(cwd, "rel.conf") + "\n", nil, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := load(t, c.file, c.flags...)
			if got := directives["maxclients"].get(cfg); got != strconv.Itoa(c.maxclients) {
				t.Errorf("maxclients %s, want %d (the wrong rel.conf read)", got, c.maxclients)
			}
			if got := directives["timeout"].get(cfg); got != strconv.Itoa(c.timeout) {
				t.Errorf("timeout %s, want %d (the wrong g1.conf read)", got, c.timeout)
			}
		})
	}
	// A missing file is named as the include names it, as Redis names it,
	// and looked for in dir.
	var cfg Config
	if _, err := ApplyDirective(&cfg, "dir", dir); err != nil {
		t.Fatal(err)
	}
	_, err := IncludeConfig("none.conf", &cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.File != filepath.Join(dir, "none.conf") ||
		ce.Reason != "Fatal error, can't open config file 'none.conf': No such file or directory" {
		t.Fatalf("missing include: %v", err)
	}
}
