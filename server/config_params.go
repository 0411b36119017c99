package server

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tumblerdb/tumbler/engine"
)

// This file holds the Redis 7.0 parameters tumbler accepts, checks and
// reports but does not act on: hz, appendfsync, the
// replication and cluster settings... (docs/configuration.md). Each is a
// directive made from one line of paramTable, Redis's standardConfig
// table (src/config.c) for the parameters tumbler has no use for: its
// kind, bounds, default, enum values, flags and alias. The config file,
// the flags and CONFIG SET check a value as Redis does, with its error
// texts; CONFIG GET and CONFIG REWRITE write it back as Redis does. The
// values live in Config.params.
//
// A few parameters describe what tumbler does and so keep tumbler's
// value (save, appendonly, dir: fixedParams): a value given in the config
// file is checked and ignored with a warning, CONFIG SET refuses any
// other value, CONFIG REWRITE leaves their lines alone.

// Path returns a file path as Redis would open it: a relative one is
// relative to the dir directive's directory (Config.Dir), if one was
// given.
func (c *Config) Path(p string) string {
	if p == "" || c.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

// param returns a parameter's value, or def when it was never set.
func (c *Config) param(name, def string) string {
	if v, ok := c.params[name]; ok {
		return v
	}
	return def
}

// setParam sets a parameter in a new map: the Config's old map may be
// shared with the live settings that other goroutines read.
func (c *Config) setParam(name, v string) {
	m := make(map[string]string, len(c.params)+1)
	for k, x := range c.params {
		m[k] = x
	}
	m[name] = v
	c.params = m
}

// paramKind is a kind of Redis parameter: how its words are read and how
// its value is written back.
type paramKind struct {
	multi bool // MULTI_ARG_CONFIG: the value is several words
	// parse checks the words as Redis's set function does and returns the
	// value as CONFIG GET shows it, or why the words are refused.
	parse func(words []string) (value, reason string)
	// line writes a value as CONFIG REWRITE does, after the name; ok is
	// false when no line is written (a string config that is NULL).
	line func(value string) (words string, ok bool)
}

// asIs is the line of kinds whose value is written as CONFIG GET shows it.
func asIs(v string) (string, bool) { return v, true }

// yesno is a bool config; check, if set, refuses a value.
func yesno(check func(v bool) string) paramKind {
	return paramKind{line: asIs, parse: func(w []string) (string, string) {
		v, ok := yesNo(w[0])
		if !ok {
			return "", "argument must be 'yes' or 'no'"
		}
		if check != nil {
			if reason := check(v); reason != "" {
				return "", reason
			}
		}
		if v {
			return "yes", ""
		}
		return "no", ""
	}}
}

// number is a numeric config of Redis's type and flags in n.
func number(n numeric) paramKind {
	return paramKind{
		parse: func(w []string) (string, string) {
			v, reason := n.parse(w[0])
			if reason != "" {
				return "", reason
			}
			return n.format(v), ""
		},
		line: func(s string) (string, bool) {
			v, _ := n.parse(s) // s is a value parse returned
			return n.rewrite(v), true
		},
	}
}

// Shorthands for the numeric types: signed and unsigned (UINT, SIZE_T,
// ULONG_LONG, which Redis bounds unsigned), integers and memory values.
func ints(lo, hi int64) paramKind  { return number(numeric{lo: lo, hi: hi}) }
func uints(lo, hi int64) paramKind { return number(numeric{unsigned: true, lo: lo, hi: hi}) }
func mems(lo, hi int64) paramKind  { return number(numeric{mem: true, lo: lo, hi: hi}) }
func umems(lo, hi int64) paramKind { return number(numeric{mem: true, unsigned: true, lo: lo, hi: hi}) }

// clamped is k with the value then held in [lo, hi], as Redis holds hz.
func clamped(k paramKind, lo, hi int64) paramKind {
	parse := k.parse
	k.parse = func(w []string) (string, string) {
		v, reason := parse(w)
		if reason != "" {
			return "", reason
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return strconv.FormatInt(min(max(n, lo), hi), 10), ""
	}
	return k
}

// enumValue is one name of an enum config and its value.
type enumValue struct {
	name string
	val  int
}

// enumNames are enum values numbered in order.
func enumNames(names ...string) []enumValue {
	out := make([]enumValue, len(names))
	for i, n := range names {
		out[i] = enumValue{n, i}
	}
	return out
}

// enum is an enum config; a multi (bitflags) one takes several names and
// ORs their values (configEnumGetValue, configEnumGetName); check, if
// set, refuses a value.
func enum(multi bool, values []enumValue, check func(v int) string) paramKind {
	return paramKind{multi: multi, line: asIs, parse: func(w []string) (string, string) {
		v := 0
		ok := len(w) > 0 && (multi || len(w) == 1)
		for _, word := range w {
			matched := false
			for _, e := range values {
				if engine.EqFold([]byte(word), e.name) { // strcasecmp: ASCII only
					v |= e.val
					matched = true
				}
			}
			ok = ok && matched
		}
		if !ok {
			names := make([]string, len(values))
			for i, e := range values {
				names[i] = e.name
			}
			msg := "argument(s) must be one of the following: " + strings.Join(names, ", ")
			return "", msg[:min(len(msg), 255)] // Redis's 256-byte buffer
		}
		if check != nil {
			if reason := check(v); reason != "" {
				return "", reason
			}
		}
		return enumName(values, v, multi), ""
	}}
}

// enumName is configEnumGetName: the first name of the value, or for
// bitflags the names of its bits in table order.
func enumName(values []enumValue, v int, multi bool) string {
	var names []string
	unmatched := v
	for _, e := range values {
		if v == e.val {
			return e.name
		}
		if multi && e.val != 0 && e.val == unmatched&e.val {
			names = append(names, e.name)
			unmatched &^= e.val
		}
	}
	if len(names) == 0 || unmatched != 0 {
		return "unknown"
	}
	return strings.Join(names, " ")
}

// String config flags: strNull is EMPTY_STRING_IS_NULL (an empty value
// is no value, which CONFIG REWRITE leaves out of the file), strSDS keeps
// a value past a NUL byte (a char* config ends there).
const (
	strNull = 1 << iota
	strSDS
)

// str is a string config; check, if set, refuses a value.
func str(flags int, check func(v string) string) paramKind {
	return paramKind{
		parse: func(w []string) (string, string) {
			v := w[0]
			if flags&strSDS == 0 {
				v, _, _ = strings.Cut(v, "\x00")
			}
			if check != nil {
				if reason := check(v); reason != "" {
					return "", reason
				}
			}
			return v, ""
		},
		line: func(v string) (string, bool) {
			if v == "" && flags&strNull != 0 {
				return "", false
			}
			return catRepr(v), true
		},
	}
}

// catRepr quotes a string as Redis's sdscatrepr: always in double quotes,
// with \\ \" \n \r \t \a \b escapes and \xHH for the other unprintable
// bytes.
func catRepr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				const hex = "0123456789abcdef"
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// baseName refuses a path where a file name is wanted (pathIsBaseName).
func baseName(what, kind string, allowEmpty bool) func(v string) string {
	return func(v string) string {
		if v == "" && !allowEmpty {
			return what + " can't be empty"
		}
		if strings.ContainsAny(v, `/\`) {
			return what + " can't be a path, just a " + kind
		}
		return ""
	}
}

// hostname is isValidAnnouncedHostname.
func hostname(v string) string {
	if len(v) >= 256 {
		return "Hostnames must be less than 256 characters"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "Hostnames may only contain alphanumeric characters, hyphens or dots"
		}
	}
	return ""
}

// procTitle is isValidProcTitleTemplate: the template must expand
// (sdstemplate: {{ is a brace, {name} a known variable) to something
// other than spaces when the title is empty. Of Redis's variables,
// title, server-mode (not in cluster mode) and unixsocket (none) expand
// to nothing then, the others to something.
func procTitle(v string) string {
	const bad = "template format is invalid or contains unknown variables"
	nonEmpty := false
	for p := v; p != ""; {
		open := strings.IndexByte(p, '{')
		if open < 0 {
			nonEmpty = nonEmpty || strings.Trim(p, " ") != ""
			break
		}
		nonEmpty = nonEmpty || strings.Trim(p[:open], " ") != ""
		p = p[open+1:]
		switch {
		case p == "":
			return bad
		case p[0] == '{':
			nonEmpty = true
			p = p[1:]
			continue
		}
		end := strings.IndexByte(p, '}')
		if end < 0 {
			return bad
		}
		switch p[:end] {
		case "title", "server-mode", "unixsocket":
		case "listen-addr", "config-file", "port", "tls-port":
			nonEmpty = true
		default:
			return bad
		}
		p = p[end+1:]
	}
	if !nonEmpty {
		return bad
	}
	return ""
}

// oomScoreAdjValues is oom-score-adj-values: three integers (strtoll)
// between -2000 and 2000.
var oomScoreAdjValues = paramKind{multi: true, line: asIs, parse: func(w []string) (string, string) {
	if len(w) != 3 {
		return "", "wrong number of arguments"
	}
	out := make([]string, 3)
	for i, word := range w {
		v, rest, _ := cStrtoll(word, 10)
		if rest != "" || v < -2000 || v > 2000 {
			return "", "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
		}
		out[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(out, " "), ""
}}

// percentiles is latency-tracking-info-percentiles: numbers (string2d)
// from 0 to 100, written "%f" without the trailing zeros; "" is none.
var percentiles = paramKind{multi: true,
	parse: func(w []string) (string, string) {
		if len(w) == 1 && w[0] == "" {
			w = nil
		}
		out := make([]string, len(w))
		for i, word := range w {
			f, ok := string2d(word)
			if !ok {
				return "", "Invalid latency-tracking-info-percentiles parameters"
			}
			if f > 100 || f < 0 {
				return "", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
			}
			s := strconv.FormatFloat(f, 'f', 6, 64)
			s = strings.TrimRight(s, "0")
			out[i] = strings.TrimSuffix(s, ".")
		}
		return strings.Join(out, " "), ""
	},
	line: func(v string) (string, bool) {
		if v == "" {
			return `""`, true
		}
		return v, true
	},
}

// string2d is Redis's string2d: all of s is one number for strtod, with
// no leading space, not NaN, not out of range (±HUGE_VAL or an underflow
// to zero).
func string2d(s string) (float64, bool) {
	if s == "" || isCSpace(s[0]) {
		return 0, false
	}
	f, n := engine.Strtod(s)
	if n != len(s) || math.IsNaN(f) {
		return 0, false
	}
	if math.IsInf(f, 0) && !strings.ContainsAny(s, "iI") {
		return 0, false // an overflow, not "inf"
	}
	if f == 0 {
		mantissa := engine.LowerASCII(s)
		if strings.Contains(mantissa, "0x") {
			mantissa, _, _ = strings.Cut(mantissa, "p")
			mantissa = strings.Replace(mantissa, "0x", "", 1)
		} else {
			mantissa, _, _ = strings.Cut(mantissa, "e")
		}
		if strings.ContainsAny(mantissa, "123456789abcdef") {
			return 0, false // an underflow
		}
	}
	return f, true
}

// saveParams checks save's words as setConfigSaveOption: pairs of
// seconds (at least 1) and changes (at least 0), strtoll-read; "" is
// none. The value is written back as Redis does ("%jd %d").
func saveParams(w []string) (string, string) {
	if len(w) == 1 && w[0] == "" {
		w = nil
	}
	if len(w)%2 != 0 {
		return "", "Invalid save parameters"
	}
	out := make([]string, len(w))
	for j, word := range w {
		v, rest, _ := cStrtoll(word, 10)
		if rest != "" || (j%2 == 0 && v < 1) || (j%2 == 1 && v < 0) {
			return "", "Invalid save parameters"
		}
		if j%2 == 1 {
			v = int64(int32(v)) // changes is an int
		}
		out[j] = strconv.FormatInt(v, 10)
	}
	return strings.Join(out, " "), ""
}

// Parameter flags: Redis's IMMUTABLE_CONFIG, PROTECTED_CONFIG and
// HIDDEN_CONFIG.
const (
	pImmutable = 1 << iota
	pProtected
	pHidden
)

// paramDef is one line of Redis's standardConfig table.
type paramDef struct {
	name, alias string
	flags       int
	def         string // the value CONFIG GET shows by default
	kind        paramKind
}

// activeDefrag refuses activedefrag yes as Redis built without its own
// jemalloc does (Debian's, the oracle): tumbler has no defragmentation.
func activeDefrag(v bool) string {
	if v {
		return "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution"
	}
	return ""
}

// shutdownFlags is isValidShutdownOnSigFlags.
func shutdownFlags(v int) string {
	if v&1 != 0 && v&2 != 0 {
		return "shutdown options SAVE and NOSAVE can't be used simultaneously"
	}
	return ""
}

var (
	shutdownOnSig   = []enumValue{{"default", 0}, {"save", 1}, {"nosave", 2}, {"now", 4}, {"force", 8}}
	protectedAction = enumNames("no", "yes", "local")
)

// paramTable is Redis 7.0's standardConfig table (src/config.c, in its
// order) for the parameters tumbler does not act on.
var paramTable = []paramDef{
	// bool configs
	{"rdbchecksum", "", pImmutable, "yes", yesno(nil)},
	{"io-threads-do-reads", "", pImmutable, "no", yesno(nil)},
	{"always-show-logo", "", pImmutable, "no", yesno(nil)},
	{"rdbcompression", "", 0, "yes", yesno(nil)},
	{"rdb-del-sync-files", "", 0, "no", yesno(nil)},
	{"activerehashing", "", 0, "yes", yesno(nil)},
	{"stop-writes-on-bgsave-error", "", 0, "yes", yesno(nil)},
	{"set-proc-title", "", pImmutable, "yes", yesno(nil)},
	{"dynamic-hz", "", 0, "yes", yesno(nil)},
	{"lazyfree-lazy-eviction", "", 0, "no", yesno(nil)},
	{"lazyfree-lazy-expire", "", 0, "no", yesno(nil)},
	{"lazyfree-lazy-server-del", "", 0, "no", yesno(nil)},
	{"lazyfree-lazy-user-del", "", 0, "no", yesno(nil)},
	{"lazyfree-lazy-user-flush", "", 0, "no", yesno(nil)},
	{"repl-disable-tcp-nodelay", "", 0, "no", yesno(nil)},
	{"repl-diskless-sync", "", 0, "yes", yesno(nil)},
	{"aof-rewrite-incremental-fsync", "", 0, "yes", yesno(nil)},
	{"no-appendfsync-on-rewrite", "", 0, "no", yesno(nil)},
	{"cluster-require-full-coverage", "", 0, "yes", yesno(nil)},
	{"rdb-save-incremental-fsync", "", 0, "yes", yesno(nil)},
	{"aof-load-truncated", "", 0, "yes", yesno(nil)},
	{"aof-use-rdb-preamble", "", 0, "yes", yesno(nil)},
	{"aof-timestamp-enabled", "", 0, "no", yesno(nil)},
	{"cluster-replica-no-failover", "cluster-slave-no-failover", 0, "no", yesno(nil)},
	{"replica-lazy-flush", "slave-lazy-flush", 0, "no", yesno(nil)},
	{"replica-serve-stale-data", "slave-serve-stale-data", 0, "yes", yesno(nil)},
	{"replica-read-only", "slave-read-only", 0, "yes", yesno(nil)},
	{"replica-ignore-maxmemory", "slave-ignore-maxmemory", 0, "yes", yesno(nil)},
	{"jemalloc-bg-thread", "", 0, "yes", yesno(nil)},
	{"activedefrag", "", 0, "no", yesno(activeDefrag)},
	{"syslog-enabled", "", pImmutable, "no", yesno(nil)},
	{"cluster-allow-reads-when-down", "", 0, "no", yesno(nil)},
	{"cluster-allow-pubsubshard-when-down", "", 0, "yes", yesno(nil)},
	{"crash-log-enabled", "", 0, "yes", yesno(nil)},
	{"crash-memcheck-enabled", "", 0, "yes", yesno(nil)},
	{"use-exit-on-panic", "", pHidden, "no", yesno(nil)},
	{"disable-thp", "", pImmutable, "yes", yesno(nil)},
	{"cluster-allow-replica-migration", "", 0, "yes", yesno(nil)},
	{"replica-announced", "", 0, "yes", yesno(nil)},
	{"aof-disable-auto-gc", "", 0, "no", yesno(nil)},
	{"replica-ignore-disk-write-errors", "", 0, "no", yesno(nil)},

	// string configs
	{"replica-announce-ip", "slave-announce-ip", 0, "", str(strNull, nil)},
	{"masteruser", "", 0, "", str(strNull, nil)},
	{"cluster-announce-ip", "", 0, "", str(strNull, nil)},
	{"cluster-config-file", "", pImmutable, "nodes.conf", str(0, nil)},
	{"cluster-announce-hostname", "", 0, "", str(strNull, hostname)},
	{"syslog-ident", "", pImmutable, "redis", str(0, nil)},
	{"dbfilename", "", pProtected, "dump.rdb", str(0, baseName("dbfilename", "filename", true))},
	{"appendfilename", "", pImmutable, "appendonly.aof", str(0, baseName("appendfilename", "filename", false))},
	{"appenddirname", "", pImmutable, "appendonlydir", str(0, baseName("appenddirname", "dirname", false))},
	{"server_cpulist", "", pImmutable, "", str(strNull, nil)},
	{"bio_cpulist", "", pImmutable, "", str(strNull, nil)},
	{"aof_rewrite_cpulist", "", pImmutable, "", str(strNull, nil)},
	{"bgsave_cpulist", "", pImmutable, "", str(strNull, nil)},
	{"ignore-warnings", "", 0, "", str(0, nil)},
	{"proc-title-template", "", 0, "{title} {listen-addr} {server-mode}", str(0, procTitle)},
	{"bind-source-addr", "", 0, "", str(strNull, nil)},
	{"masterauth", "", 0, "", str(strNull|strSDS, nil)},

	// enum configs
	{"syslog-facility", "", pImmutable, "local0", enum(false, enumNames("user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"), nil)},
	{"repl-diskless-load", "", 0, "disabled", enum(false, enumNames("disabled", "on-empty-db", "swapdb"), nil)},
	{"appendfsync", "", 0, "everysec", enum(false, enumNames("everysec", "always", "no"), nil)},
	{"oom-score-adj", "", 0, "no", enum(false, []enumValue{{"no", 0}, {"yes", 1}, {"relative", 1}, {"absolute", 2}}, nil)},
	{"acl-pubsub-default", "", 0, "resetchannels", enum(false, enumNames("allchannels", "resetchannels"), nil)},
	{"sanitize-dump-payload", "", 0, "no", enum(false, enumNames("no", "yes", "clients"), nil)},
	{"enable-module-command", "", pImmutable, "no", enum(false, protectedAction, nil)},
	{"cluster-preferred-endpoint-type", "", 0, "ip", enum(false, enumNames("ip", "hostname", "unknown-endpoint"), nil)},
	{"propagation-error-behavior", "", 0, "ignore", enum(false, enumNames("ignore", "panic", "panic-on-replicas"), nil)},
	{"shutdown-on-sigint", "", 0, "default", enum(true, shutdownOnSig, shutdownFlags)},
	{"shutdown-on-sigterm", "", 0, "default", enum(true, shutdownOnSig, shutdownFlags)},

	// integer configs
	{"io-threads", "", pImmutable, "1", ints(1, 128)},
	{"auto-aof-rewrite-percentage", "", 0, "100", ints(0, intMax)},
	{"cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, "10", ints(0, intMax)},
	{"tcp-keepalive", "", 0, "300", ints(0, intMax)},
	{"cluster-migration-barrier", "", 0, "1", ints(0, intMax)},
	{"active-defrag-cycle-min", "", 0, "1", ints(1, 99)},
	{"active-defrag-cycle-max", "", 0, "25", ints(1, 99)},
	{"active-defrag-threshold-lower", "", 0, "10", ints(0, 1000)},
	{"active-defrag-threshold-upper", "", 0, "100", ints(0, 1000)},
	{"lfu-log-factor", "", 0, "10", ints(0, intMax)},
	{"lfu-decay-time", "", 0, "1", ints(0, intMax)},
	{"replica-priority", "slave-priority", 0, "100", ints(0, intMax)},
	{"repl-diskless-sync-delay", "", 0, "5", ints(0, intMax)},
	{"maxmemory-samples", "", 0, "5", ints(1, intMax)},
	{"maxmemory-eviction-tenacity", "", 0, "10", ints(0, 100)},
	{"replica-announce-port", "slave-announce-port", 0, "0", ints(0, 65535)},
	{"tcp-backlog", "", pImmutable, "511", ints(0, intMax)},
	{"databases", "", pImmutable, "16", ints(1, intMax)}, // engine.Config.Databases
	{"cluster-port", "", pImmutable, "0", ints(0, 65535)},
	{"cluster-announce-bus-port", "", 0, "0", ints(0, 65535)},
	{"cluster-announce-port", "", 0, "0", ints(0, 65535)},
	{"cluster-announce-tls-port", "", 0, "0", ints(0, 65535)},
	{"repl-timeout", "", 0, "60", ints(1, intMax)},
	{"repl-ping-replica-period", "repl-ping-slave-period", 0, "10", ints(1, intMax)},
	{"rdb-key-save-delay", "", pHidden, "0", ints(-1<<31, intMax)},
	{"key-load-delay", "", pHidden, "0", ints(-1<<31, intMax)},
	{"active-expire-effort", "", 0, "1", ints(1, 10)},
	{"hz", "", 0, "10", clamped(ints(0, intMax), 1, 500)},
	{"min-replicas-to-write", "min-slaves-to-write", 0, "0", ints(0, intMax)},
	{"min-replicas-max-lag", "min-slaves-max-lag", 0, "10", ints(0, intMax)},
	{"watchdog-period", "", pHidden, "0", ints(0, intMax)},
	{"shutdown-timeout", "", 0, "10", ints(0, intMax)},
	{"repl-diskless-sync-max-replicas", "", 0, "0", ints(0, intMax)},
	{"unixsocketperm", "", pImmutable, "0", number(numeric{octal: true, unsigned: true, lo: 0, hi: 0o777})},
	{"socket-mark-id", "", pImmutable, "0", uints(0, uintMax)},
	{"active-defrag-max-scan-fields", "", 0, "1000", ints(1, longMax)},
	{"acllog-max-len", "", 0, "128", ints(0, longMax)},
	{"cluster-node-timeout", "", 0, "15000", ints(0, longMax)},
	{"stream-node-max-entries", "", 0, "100", ints(0, longMax)},
	{"repl-backlog-size", "", 0, "1048576", mems(1, longMax)},
	{"cluster-link-sendbuf-limit", "", 0, "0", umems(0, -1)},
	{"active-defrag-ignore-bytes", "", 0, "104857600", umems(1, longMax)},
	{"stream-node-max-bytes", "", 0, "4096", umems(0, longMax)},
	{"hll-sparse-max-bytes", "", 0, "3000", umems(0, longMax)},
	{"tracking-table-max-keys", "", 0, "1000000", uints(0, longMax)},
	{"maxmemory-clients", "", 0, "0", number(numeric{mem: true, percent: true, lo: -100, hi: longMax})},
	{"repl-backlog-ttl", "", 0, "3600", ints(0, longMax)},
	{"auto-aof-rewrite-min-size", "", 0, "67108864", mems(0, longMax)},
	{"loading-process-events-interval-bytes", "", pHidden, "2097152", ints(1024, intMax)},

	// TLS configs
	{"tls-session-cache-size", "", 0, "20480", ints(0, intMax)},
	{"tls-session-cache-timeout", "", 0, "300", ints(0, intMax)},
	{"tls-cluster", "", 0, "no", yesno(nil)},
	{"tls-replication", "", 0, "no", yesno(nil)},
	{"tls-prefer-server-ciphers", "", 0, "no", yesno(nil)},
	{"tls-session-caching", "", 0, "yes", yesno(nil)},
	{"tls-key-file-pass", "", 0, "", str(strNull, nil)},
	{"tls-client-cert-file", "", 0, "", str(strNull, nil)},
	{"tls-client-key-file", "", 0, "", str(strNull, nil)},
	{"tls-client-key-file-pass", "", 0, "", str(strNull, nil)},
	{"tls-dh-params-file", "", 0, "", str(strNull, nil)},
	{"tls-ciphers", "", 0, "", str(strNull, nil)},
	{"tls-ciphersuites", "", 0, "", str(strNull, nil)},

	// special configs
	{"oom-score-adj-values", "", 0, "0 200 800", oomScoreAdjValues},
	{"latency-tracking-info-percentiles", "", 0, "50 99 99.9", percentiles},
	{"latency-tracking", "", 0, "yes", yesno(nil)},
	{"latency-monitor-threshold", "", 0, "0", ints(0, longMax)},
}

// actedParams are the parameters of paramTable that tumbler acts on
// (applyLive; databases when the server starts), not only reports.
var actedParams = map[string]bool{"latency-tracking": true, "latency-tracking-info-percentiles": true, "latency-monitor-threshold": true, "databases": true,
	"min-replicas-to-write": true, "min-replicas-max-lag": true, "oom-score-adj": true, "oom-score-adj-values": true,
	"tcp-keepalive": true, "maxmemory-clients": true, "tracking-table-max-keys": true, "unixsocketperm": true}

// reportedEmpty are the parameters of directives tumbler refuses (no
// replication): CONFIG GET shows their empty value, as Redis's when they
// are not set; CONFIG SET finds them immutable, as Redis does.
var reportedEmpty = []string{"replicaof", "slaveof"}

// paramDirective makes a directive of a parameter: its value is kept in
// Config.params.
func paramDirective(p paramDef) *directive {
	return &directive{
		name: p.name, multi: p.kind.multi, live: p.flags&pImmutable == 0,
		protected: p.flags&pProtected != 0, hidden: p.flags&pHidden != 0,
		set: func(c *Config, args []string) string {
			v, reason := p.kind.parse(args)
			if reason == "" {
				c.setParam(p.name, v)
			}
			return reason
		},
		get: func(c *Config) string { return c.param(p.name, p.def) },
		lines: func(c *Config) []string {
			words, ok := p.kind.line(c.param(p.name, p.def))
			if !ok {
				return nil
			}
			return []string{p.name + " " + words}
		},
	}
}

// fixedParam is a parameter whose value is tumbler's (value); why says
// why, for the warning and CONFIG SET's refusal.
type fixedParam struct {
	paramDef
	value func() string
	why   string
	// keep, if set, checks the words given against c and records them
	// in c, or returns the reason they are refused; ignored then says
	// what the value still does (the warning).
	keep    func(c *Config, args []string) string
	ignored string
}

// cwd is the working directory, dir's value as in Redis (getcwd).
func cwd() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	return d
}

var fixedParams = []fixedParam{
	{paramDef{"save", "", 0, "", paramKind{multi: true, parse: saveParams}},
		func() string { return "" }, "tumbler keeps no data on disk", nil, ""},
	{paramDef{"appendonly", "", 0, "no", yesno(nil)},
		func() string { return "no" }, "tumbler keeps no data on disk", nil, ""},
	{paramDef{"dir", "", pProtected, "", paramKind{parse: func(w []string) (string, string) {
		if abs, err := filepath.Abs(w[0]); err == nil {
			return abs, ""
		}
		return w[0], ""
	}}}, cwd, "tumbler writes no data files and never changes directory",
		keepDir, "only says where relative paths (aclfile, logfile, pidfile, unixsocket, tls-*) are"},
}

// keepDir checks a dir as Redis's chdir to it does, relative to the dir
// before it (Redis is there), and records it made absolute: a path that
// is missing or not a directory is refused with C's strerror text, "No
// such file or directory" (an empty one too), "Not a directory", so that
// the config file, a flag and CONFIG SET fail as Redis's do.
func keepDir(c *Config, args []string) string {
	dir := c.Path(args[0])
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return errText(err)
	case !fi.IsDir():
		return errText(syscall.ENOTDIR)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c.Dir = dir
	return ""
}

// fixedDirective makes a directive of a fixed parameter: its words are
// checked as Redis checks them, then compared with tumbler's value.
func fixedDirective(f fixedParam) *directive {
	other := func(args []string) bool {
		v, _ := f.kind.parse(args)
		return v != f.value()
	}
	return &directive{
		name: f.name, multi: f.kind.multi, live: f.flags&pImmutable == 0,
		protected: f.flags&pProtected != 0, fixed: true, inert: true,
		set: func(c *Config, args []string) string {
			_, reason := f.kind.parse(args)
			if reason == "" && f.keep != nil {
				reason = f.keep(c, args)
			}
			return reason
		},
		get: func(c *Config) string { return f.value() },
		warn: func(args []string) string {
			if !other(args) {
				return ""
			}
			words := []string{f.name}
			for _, a := range args {
				words = append(words, quoteArg(a))
			}
			if f.ignored != "" {
				return f.why + ": '" + strings.Join(words, " ") + "' " + f.ignored
			}
			return f.why + ": '" + strings.Join(words, " ") + "' is ignored"
		},
		refuse: func(args []string) string {
			if !other(args) {
				return ""
			}
			v := f.value()
			if v == "" {
				v = `""`
			}
			return f.why + ": only " + f.name + " " + v + " is supported"
		},
	}
}

func init() {
	for _, p := range paramTable {
		d := paramDirective(p)
		if actedParams[p.name] {
			addDirective(d)
			if p.alias != "" {
				addAlias(d, p.alias)
			}
			continue
		}
		d.inert = true
		d.warn = func(args []string) string {
			if v, _ := p.kind.parse(args); v == p.def {
				return ""
			}
			return "'" + p.name + "' is accepted but has no effect in tumbler (CONFIG GET reports it)"
		}
		addDirective(d)
		if p.alias != "" {
			addAlias(d, p.alias)
		}
	}
	for _, f := range fixedParams {
		addDirective(fixedDirective(f))
	}
	// enable-protected-configs gates CONFIG SET of the protected
	// parameters (dbfilename, dir): no, yes, or local (loopback
	// connections only).
	addDirective(paramDirective(paramDef{"enable-protected-configs", "", pImmutable, "no", enum(false, protectedAction, nil)}))
}

// applyParams does to the values CONFIG SET has set what Redis's apply
// functions do, for each changed parameter in the order of the pairs:
// updateReplBacklogSize holds repl-backlog-size at 16kb at least,
// updateWatchdogPeriod holds watchdog-period, when not 0, at two ticks
// of the server's hz, which is the new hz only once updateHZ has run
// (hz named before it). A config file's values stay as given, as in
// Redis.
func applyParams(next, old *Config, pairs []engine.ConfigPair) {
	num := func(c *Config, name, def string) int64 {
		v, _ := strconv.ParseInt(c.param(name, def), 10, 64)
		return v
	}
	hz := num(old, "hz", "10")
	for _, p := range pairs {
		name := p.Name
		if d := directives[name]; d.alias != "" {
			name = d.alias
		}
		if d := directives[name]; d.get(next) == d.get(old) {
			continue // set to the value it had: Redis applies nothing
		}
		switch name {
		case "hz":
			hz = num(next, "hz", "10")
		case "repl-backlog-size":
			if num(next, name, "1048576") < 16<<10 {
				next.setParam(name, strconv.Itoa(16<<10))
			}
		case "watchdog-period":
			if v := num(next, name, "0"); v > 0 && v < 1000/hz*2 {
				next.setParam(name, strconv.FormatInt(1000/hz*2, 10))
			}
		}
	}
}

// checkProtected is CONFIG SET's check of a protected parameter
// (allowProtectedAction).
func (s *Server) checkProtected(c *engine.Ctx) string {
	switch s.live().param("enable-protected-configs", "no") {
	case "yes":
		return ""
	case "local":
		if c.Client != nil {
			if me, ok := c.Client.Conn.(*client); ok && s.prod.isLocal(me.nc.RemoteAddr()) {
				return ""
			}
		}
	}
	return "can't set protected config"
}
