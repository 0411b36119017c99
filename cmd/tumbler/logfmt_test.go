package main

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The log's lines are redis-server's: "pid:M dd Mon yyyy hh:mm:ss.mmm c
// message", c the level's character, the attributes after the message.
func TestRedisLogHandler_Format(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newRedisLogHandler(&buf))
	log.Log(nil, slog.LevelDebug-4, "debugged")
	log.Debug("accepted", "addr", "127.0.0.1:5000")
	log.Info("Ready to accept connections", "addr", "127.0.0.1:6379", "restart_delay", time.Hour)
	log.Warn("Closing client that reached max query buffer length", "qbuf", 1048577)
	log.Error("tumbler: cannot listen")
	log.With("conn", 7).WithGroup("g").With("a", "x y").Info("grouped", "b", "", "c", `q"uote`, slog.Group("h", "d", "k=v"))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	prefix := `^` + strconv.Itoa(os.Getpid()) + `:M \d\d [A-Z][a-z][a-z] \d{4} \d\d:\d\d:\d\d\.\d{3} `
	want := []string{
		`\. debugged$`,
		`- accepted addr=127\.0\.0\.1:5000$`,
		`\* Ready to accept connections addr=127\.0\.0\.1:6379 restart_delay=1h0m0s$`,
		`# Closing client that reached max query buffer length qbuf=1048577$`,
		`# tumbler: cannot listen$`,
		`\* grouped conn=7 g\.a="x y" g\.b="" g\.c="q\\"uote" g\.h\.d="k=v"$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !regexp.MustCompile(prefix + w).MatchString(lines[i]) {
			t.Errorf("line %d: %q, want %s%s", i, lines[i], prefix, w)
		}
	}
}
