package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// redisLogHandler writes the log as redis-server does (serverLogRaw):
//
//	4954:M 29 Nov 2026 03:27:48.736 * Ready to accept connections
//
// the process ID, the role (M: a master, which tumbler always is), the
// local time to the millisecond, a character for the level ('.' debug,
// '-' verbose, '*' notice, '#' warning) and the message; tumbler adds
// the record's attributes after it as key=value. Tools that run
// redis-server and read its output (test harnesses waiting for "Ready to
// accept connections", log parsers keyed on the level character) read
// tumbler's the same way.
type redisLogHandler struct {
	mu    *sync.Mutex // one record's line at a time
	w     io.Writer
	pid   string
	attrs string // from WithAttrs, already formatted (" k=v...")
	group string // from WithGroup: "g." prefixes the keys of later attributes
}

func newRedisLogHandler(w io.Writer) *redisLogHandler {
	return &redisLogHandler{mu: new(sync.Mutex), w: w, pid: strconv.Itoa(os.Getpid())}
}

// The server filters by loglevel itself (levelHandler, CONFIG SET loglevel).
func (h *redisLogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *redisLogHandler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b := make([]byte, 0, 128)
	b = append(b, h.pid...)
	b = append(b, ":M "...)
	b = t.AppendFormat(b, "02 Jan 2006 15:04:05.000")
	b = append(b, ' ', levelChar(r.Level), ' ')
	b = append(b, r.Message...)
	b = append(b, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		b = appendAttr(b, h.group, a)
		return true
	})
	b = append(b, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b)
	return err
}

// earlyLogLine is a warning as redis-server logs one before it is the
// server (its role 'C': server.pid not yet set), such as a config file
// it cannot open.
func earlyLogLine(msg string) []byte {
	b := strconv.AppendInt(nil, int64(os.Getpid()), 10)
	b = append(b, ":C "...)
	b = time.Now().AppendFormat(b, "02 Jan 2006 15:04:05.000")
	b = append(b, ' ', levelChar(slog.LevelWarn), ' ')
	b = append(b, msg...)
	return append(b, '\n')
}

func (h *redisLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	b := []byte(h.attrs)
	for _, a := range as {
		b = appendAttr(b, h.group, a)
	}
	n.attrs = string(b)
	return &n
}

func (h *redisLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.group = h.group + name + "."
	return &n
}

// levelChar is Redis's character for a level, slog's mapped as
// server.logLevels maps Redis's levels to slog's.
func levelChar(l slog.Level) byte {
	switch {
	case l < slog.LevelDebug:
		return '.' // debug
	case l < slog.LevelInfo:
		return '-' // verbose
	case l < slog.LevelWarn:
		return '*' // notice
	default:
		return '#' // warning
	}
}

// appendAttr appends " key=value", the key prefixed by the open groups,
// the value quoted when it is empty or holds a space, a quote, an '=' or
// anything unprinted; a group's attributes follow flattened.
func appendAttr(b []byte, prefix string, a slog.Attr) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return b
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			b = appendAttr(b, prefix, ga)
		}
		return b
	}
	b = append(b, ' ')
	b = append(b, prefix...)
	b = append(b, a.Key...)
	b = append(b, '=')
	var v string
	if a.Value.Kind() == slog.KindTime {
		v = a.Value.Time().Format(time.RFC3339Nano)
	} else {
		v = a.Value.String()
	}
	if needsQuote(v) {
		return strconv.AppendQuote(b, v)
	}
	return append(b, v...)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || !unicode.IsPrint(r)
	}) >= 0
}
