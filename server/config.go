package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/luavm"
)

// This file is tumbler's configuration: the directives of a redis.conf
// style file (LoadConfigFile, ApplyDirective), the live settings that
// CONFIG SET changes, and CONFIG GET / SET / REWRITE on the server side.
// docs/configuration.md lists every directive.
//
// One table of directives serves the config file, the tumbler binary's
// flags and CONFIG GET/SET/REWRITE: each parses its words into a Config,
// with Redis 7.0's syntax and error texts, and formats its value back.
// CONFIG SET works on a copy of the live Config and installs it only when
// every value was accepted, so a multi-parameter CONFIG SET is atomic.

// prodState is the server's part of security, limits and configuration.
type prodState struct {
	mu  sync.Mutex             // serialises CONFIG SET and CONFIG REWRITE
	cfg atomic.Pointer[Config] // the live settings, replaced whole
	// startErr is why the configured renames or users could not be
	// applied at start-up (Start refuses to serve, as Redis exits).
	startErr string
	limits   protoLimits
	level    slog.LevelVar
	isLocal  func(net.Addr) bool // protected mode's loopback test; tests replace it
	extra    []net.Listener      // listeners other than Server.ln (tls.go)
	tlsAddr  string              // the TLS listener's address, guarded by Server.mu
	// tlsPort is the port a TLS listener last listened on, kept while
	// none does (an empty bind): a TLS address with port 0, picked at
	// start, listens there again (listenSpecs), as the plain port does
	// (Server.port). Guarded by Server.mu.
	tlsPort int
	// tlsLive is the TLS configuration handshakes use (serveTLSConfig);
	// nil when TLS is not served from the tls-* settings.
	tlsLive atomic.Pointer[tls.Config]
	// tlsServe is the configuration the TLS listeners were made with
	// (serveTLSConfig); nil without TLS. Guarded by Server.mu.
	tlsServe *tls.Config
}

// Logger returns the server's logger, which drops records below the
// configured loglevel.
func (s *Server) Logger() *slog.Logger { return s.log }

// live returns the current settings. The Config must not be modified.
func (s *Server) live() *Config { return s.prod.cfg.Load() }

// fillDefaults gives the settings of this file their defaults.
// ProtoMaxBulkLen and MaxMultibulkLen have floors (Redis's 1 MB for the
// first), which the framer's fast paths rely on.
func fillDefaults(c *Config) {
	if c.ProtoMaxBulkLen <= 0 {
		c.ProtoMaxBulkLen = framerMaxBulk
	}
	c.ProtoMaxBulkLen = max(c.ProtoMaxBulkLen, 1<<20)
	if c.MaxMultibulkLen <= 0 {
		c.MaxMultibulkLen = framerMaxMultibulk
	}
	c.MaxMultibulkLen = max(c.MaxMultibulkLen, 1024)
	if c.ClientQueryBufferLimit <= 0 {
		c.ClientQueryBufferLimit = framerQueryBufLimit
	}
	if c.OutputBufferLimits == (OutputBufferLimits{}) {
		c.OutputBufferLimits = DefaultOutputBufferLimits()
	}
	if c.LogLevel == "" {
		c.LogLevel = "notice"
	}
	if c.TLSAuthClients == "" {
		c.TLSAuthClients = "yes"
	}
}

// initConfig is called once by New, after the engine exists.
func (s *Server) initConfig() {
	fillDefaults(&s.cfg)
	s.prod.isLocal = isLoopback
	s.log = slog.New(&levelHandler{h: s.cfg.Logger.Handler(), level: &s.prod.level})
	s.prod.limits.log = s.log
	live := s.cfg
	s.applyLive(&live)
	s.registerConfigParams()
	s.eng.SetConfigHandler(configHandler{s})
	s.registerAuthCommands() // acl.go
	s.eng.FinishCommands()   // the command table is complete: ACL data for late subcommands
	// rename-command (rename.go), then the users, whose rules name
	// commands by their own names
	if s.prod.startErr = s.renameCommands(s.cfg.RenameCommands); s.prod.startErr == "" {
		s.prod.startErr = s.startUsers(&s.cfg)
	}
}

// startUsers loads the users of cfg, as Redis at start-up: users from
// user directives, or from the ACL file, not both.
func (s *Server) startUsers(cfg *Config) string {
	if cfg.ACLFile != "" && len(cfg.Users) > 0 {
		return errUsersAndACLFile
	}
	return s.loadUsers(cfg) // acl.go
}

// errUsersAndACLFile is Redis's refusal of a configuration with both.
const errUsersAndACLFile = "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both."

// applyLive installs c as the live settings and applies what changes the
// running server.
func (s *Server) applyLive(c *Config) {
	if old := s.live(); old != nil && old.RequirePass != c.RequirePass {
		s.eng.ACL().SetDefaultPassword(c.RequirePass) // as Redis's updateRequirePass
	}
	s.eng.ACL().SetPubsubDefault(c.param("acl-pubsub-default", "resetchannels") == "allchannels")
	if n, err := strconv.ParseInt(c.param("acllog-max-len", "128"), 10, 64); err == nil {
		s.eng.ACL().SetLogMaxLen(n)
	}
	l := &s.prod.limits
	l.maxBulk.Store(c.ProtoMaxBulkLen)
	s.eng.SetProtoMaxBulkLen(c.ProtoMaxBulkLen)
	l.maxMultibulk.Store(int64(c.MaxMultibulkLen))
	l.maxQueryBuf.Store(c.ClientQueryBufferLimit)
	l.idle.Store(int64(c.Timeout))
	l.keepAlive.Store(keepAliveSecs(c))
	if c.Timeout > 0 {
		s.loopsLeave() // the event loops keep no idle timers (eventloop_linux.go)
	}
	s.eng.SetBusyThreshold(c.LuaTimeLimit)
	s.vm.SetMemoryLimit(luaMemoryLimit(c))
	s.eng.SetMaxMemory(c.MaxMemory)
	s.eng.SetSlowlogSlowerThan(slowlogSlowerThan(c))
	s.eng.SetSlowlogMaxLen(slowlogMaxLen(c))
	s.eng.SetNotifyKeyspaceEvents(c.NotifyKeyspaceEvents)
	s.eng.SetEncodingLimits(encodingsOf(c))
	s.eng.SetLatencyTracking(c.param("latency-tracking", "yes") == "yes")
	s.eng.SetLatencyPercentiles(latencyPercentiles(c))
	if ms, err := strconv.ParseInt(c.param("latency-monitor-threshold", "0"), 10, 64); err == nil {
		s.eng.SetLatencyMonitorThreshold(ms)
	}
	toWrite, _ := strconv.ParseInt(c.param("min-replicas-to-write", "0"), 10, 64)
	maxLag, _ := strconv.ParseInt(c.param("min-replicas-max-lag", "10"), 10, 64)
	s.eng.SetMinReplicas(toWrite, maxLag)
	s.setEvictionLimit(evictionLimit(c)) // maxmemory-clients (evict.go)
	if n, err := strconv.ParseInt(c.param("tracking-table-max-keys", "1000000"), 10, 64); err == nil {
		s.trk.maxKeys.Store(n) // (tracking.go)
		s.trimTracking(n)      // a lower limit holds at once, as Redis's next command's trim
	}
	s.prod.level.Set(logLevels[c.LogLevel])
	s.prod.cfg.Store(c)
}

// latencyPercentiles is latency-tracking-info-percentiles, as numbers
// (its value is checked and written out when set: see percentiles).
func latencyPercentiles(c *Config) []float64 {
	var ps []float64
	for _, w := range strings.Fields(c.param("latency-tracking-info-percentiles", "50 99 99.9")) {
		if f, err := strconv.ParseFloat(w, 64); err == nil {
			ps = append(ps, f)
		}
	}
	return ps
}

// slowlogSlowerThan and slowlogMaxLen are the slow log settings, with
// their defaults.
func slowlogSlowerThan(c *Config) int64 {
	if c.SlowlogLogSlowerThan == nil {
		return engine.DefaultSlowlogSlowerThan
	}
	return *c.SlowlogLogSlowerThan
}

func slowlogMaxLen(c *Config) int64 {
	if c.SlowlogMaxLen == nil {
		return engine.DefaultSlowlogMaxLen
	}
	return *c.SlowlogMaxLen
}

// luaMemoryLimit is lua-memory-limit in bytes; 0 means no limit. The
// default, 256 MB, is independent of maxmemory: maxmemory bounds the
// keyspace, which a script's temporary Lua values are not part of, and
// lock scripts need kilobytes, so the bound only has to stop a runaway
// script well before it takes the host's memory.
func luaMemoryLimit(c *Config) int64 {
	switch {
	case c.LuaMemoryLimit < 0:
		return 0
	case c.LuaMemoryLimit == 0:
		return luavm.DefaultMemoryLimit
	}
	return c.LuaMemoryLimit
}

// logLevels maps Redis's log levels to slog's.
var logLevels = map[string]slog.Level{
	"debug":   slog.LevelDebug - 4,
	"verbose": slog.LevelDebug,
	"notice":  slog.LevelInfo,
	"warning": slog.LevelWarn,
}

// levelHandler filters records below loglevel before the Logger's own
// handler sees them, so that CONFIG SET loglevel works with any Logger.
type levelHandler struct {
	h     slog.Handler
	level *slog.LevelVar
}

func (l *levelHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.level.Level() && l.h.Enabled(ctx, lv)
}
func (l *levelHandler) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }
func (l *levelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &levelHandler{h: l.h.WithAttrs(a), level: l.level}
}
func (l *levelHandler) WithGroup(n string) slog.Handler {
	return &levelHandler{h: l.h.WithGroup(n), level: l.level}
}

// ---- the directives ----

// directive is one configuration setting.
type directive struct {
	name string
	// multi directives take several words (MULTI_ARG in Redis): a single
	// non-empty word is split again; CONFIG SET splits at spaces.
	multi bool
	// live directives may be changed by CONFIG SET.
	live bool
	// own directives are tumbler's, not Redis's parameters. One that is
	// not live still takes CONFIG SET of the value it has (nothing to
	// change), so that a tool setting every parameter to its own value,
	// as Redis's test suite does, gets through; any other value is
	// refused as immutable.
	own bool
	// fileOnly directives (user) are not CONFIG parameters.
	fileOnly bool
	// alias, when set, is the directive this is another name of
	// (lua-time-limit for busy-reply-threshold): CONFIG GET and SET know
	// both names, CONFIG REWRITE writes only the other one.
	alias string
	// set parses the words into c and returns "" or the reason they are
	// refused, worded as Redis words it; warn, if set, returns a warning
	// for accepted words that tumbler does not act on.
	set  func(c *Config, args []string) string
	warn func(args []string) string
	// get formats the configured value (CONFIG GET, CONFIG REWRITE).
	get func(c *Config) string
	// lines, if set, gives the directive's lines for CONFIG REWRITE
	// (default: name and get's value, quoted as needed).
	lines func(c *Config) []string
	// rewrite, if set, gives instead lines that CONFIG REWRITE places one
	// by one, as Redis's rewriteConfigRewriteLine (for a directive it
	// writes as several calls of it: client-output-buffer-limit): each
	// takes the place of the directive's next line in the file, lines of
	// the file left over are blanked, and a line left over is appended
	// only when forced (not its default value).
	rewrite func(c *Config) []rewriteLine

	// inert directives are Redis parameters tumbler stores and reports
	// but does not act on (config_params.go); they are not among
	// DirectiveNames.
	inert bool
	// fixed directives have tumbler's value whatever they are given
	// (save, appendonly): a value that differs is accepted with warn's
	// warning from the config file and refused by CONFIG SET with
	// refuse's reason. CONFIG REWRITE leaves their lines as they are.
	fixed  bool
	refuse func(args []string) string
	// protected directives are Redis's PROTECTED_CONFIG: CONFIG SET
	// changes them only as enable-protected-configs allows.
	protected bool
	// hidden directives are Redis's HIDDEN_CONFIG: CONFIG GET reports
	// them only when named, not for a pattern.
	hidden bool
}

var directives = map[string]*directive{}

func addDirective(d *directive) { directives[d.name] = d }

// addAlias adds name as another name of the directive d.
func addAlias(d *directive, name string) {
	a := *d
	a.name, a.alias = name, d.name
	addDirective(&a)
}

// numeric parses and bounds a number as Redis's numeric configs do
// (numericParseString, numericBoundaryCheck): memory values (1gb, 100mb,
// 1k) when mem is set, percentages (10%, kept negative) too when percent
// is, octal numbers when octal is, integers (string2ll) otherwise;
// unsigned types compare and print their bounds unsigned.
type numeric struct {
	mem, unsigned, percent, octal bool
	lo, hi                        int64
}

func (n numeric) parse(s string) (int64, string) {
	v, ok := int64(0), false
	if n.mem {
		var u uint64
		u, ok = memToULL(s)
		v = int64(u)
	}
	if !ok && n.percent && len(s) > 1 && s[len(s)-1] == '%' {
		v, ok = engine.ParseInt([]byte(s[:len(s)-1]))
		ok = ok && v >= 0
		v = -v
	}
	if !ok && n.octal {
		var rest string
		var overflow bool
		v, rest, overflow = cStrtoll(s, 8)
		ok = rest == "" && !overflow
	}
	if !ok && !n.mem && !n.percent && !n.octal {
		v, ok = engine.ParseInt([]byte(s))
	}
	switch {
	case ok:
	case n.mem && n.percent:
		return 0, "argument must be a memory or percent value"
	case n.mem:
		return 0, "argument must be a memory value"
	case n.octal:
		return 0, "argument couldn't be parsed as an octal number"
	default:
		return 0, "argument couldn't be parsed into an integer"
	}
	switch {
	case n.unsigned:
		if uint64(v) < uint64(n.lo) || uint64(v) > uint64(n.hi) {
			f := func(b int64) string { return strconv.FormatUint(uint64(b), 10) }
			if n.octal {
				f = func(b int64) string { return strconv.FormatUint(uint64(b), 8) }
			}
			return 0, "argument must be between " + f(n.lo) + " and " + f(n.hi) + " inclusive"
		}
	case n.percent && v < 0:
		if v < n.lo {
			return 0, "percentage argument must be less or equal to " + strconv.FormatInt(-n.lo, 10)
		}
	case v < n.lo || v > n.hi:
		return 0, "argument must be between " + strconv.FormatInt(n.lo, 10) + " and " + strconv.FormatInt(n.hi, 10) + " inclusive"
	}
	return v, ""
}

// format writes a value as CONFIG GET shows it (numericConfigGet).
func (n numeric) format(v int64) string {
	switch {
	case n.percent && v < 0:
		return strconv.FormatInt(-v, 10) + "%"
	case n.mem:
		return strconv.FormatUint(uint64(v), 10)
	case n.octal:
		return strconv.FormatUint(uint64(v), 8)
	case n.unsigned:
		return strconv.FormatUint(uint64(v), 10)
	}
	return strconv.FormatInt(v, 10)
}

// rewrite writes a value as CONFIG REWRITE does (numericConfigRewrite):
// memory values in gb, mb or kb when they divide.
func (n numeric) rewrite(v int64) string {
	if n.mem && !(n.percent && v < 0) {
		return formatMemory(v)
	}
	return n.format(v)
}

// memToULL is Redis's memtoull: digits with an optional unit b, k (1000),
// kb (1024), m, mb, g, gb, any case; no sign. Like Redis it saturates a
// number too long for 64 bits and lets the unit multiplication wrap. It
// reads s as a C string, up to a NUL byte ("1k\0x" is 1000).
func memToULL(s string) (uint64, bool) {
	s = engine.CStr(s)
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch engine.LowerASCII(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 {
		return 0, false
	}
	var v uint64
	for _, ch := range s[:i] {
		d := uint64(ch - '0')
		if v > (^uint64(0)-d)/10 {
			v = ^uint64(0) // strtoull saturates
			break
		}
		v = v*10 + d
	}
	return v * mul, true
}

const (
	intMax  = 1<<31 - 1
	uintMax = 1<<32 - 1
	longMax = 1<<63 - 1
)

func numDirective(name string, live bool, n numeric, get func(c *Config) int64, set func(c *Config, v int64)) *directive {
	return &directive{
		name: name, live: live,
		set: func(c *Config, args []string) string {
			v, reason := n.parse(args[0])
			if reason == "" {
				set(c, v)
			}
			return reason
		},
		get:   func(c *Config) string { return n.format(get(c)) },
		lines: func(c *Config) []string { return []string{name + " " + n.rewrite(get(c))} },
	}
}

// formatMemory writes a memory value as CONFIG REWRITE does
// (rewriteConfigFormatMemory): in gb, mb or kb when it is a whole number
// of them, else in bytes.
func formatMemory(v int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "gb"}, {1 << 20, "mb"}, {1 << 10, "kb"}} {
		if v != 0 && v%u.size == 0 {
			return strconv.FormatInt(v/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}

// yesNo is Redis's yesnotoi: strcasecmp, so s ends at a NUL byte.
func yesNo(s string) (bool, bool) {
	switch engine.LowerC([]byte(s)) {
	case "yes":
		return true, true
	case "no":
		return false, true
	}
	return false, false
}

func boolDirective(name string, live bool, get func(c *Config) bool, set func(c *Config, v bool)) *directive {
	return &directive{
		name: name, live: live,
		set: func(c *Config, args []string) string {
			v, ok := yesNo(args[0])
			if !ok {
				return "argument must be 'yes' or 'no'"
			}
			set(c, v)
			return ""
		},
		get: func(c *Config) string {
			if get(c) {
				return "yes"
			}
			return "no"
		},
	}
}

func enumDirective(name string, live bool, values []string, get func(c *Config) string, set func(c *Config, v string) string) *directive {
	return &directive{
		name: name, live: live,
		set: func(c *Config, args []string) string {
			v := engine.LowerC([]byte(args[0])) // strcasecmp
			for _, ok := range values {
				if v == ok {
					return set(c, v)
				}
			}
			return "argument(s) must be one of the following: " + strings.Join(values, ", ")
		},
		get: get,
	}
}

// stringDirective is a string setting; check, if set, refuses a value.
// CONFIG REWRITE writes the value quoted as Redis does (sdscatrepr), and
// no line for an empty value, as for Redis's strings that may be NULL.
func stringDirective(name string, get func(c *Config) *string, check func(v string) string) *directive {
	return &directive{
		name: name,
		set: func(c *Config, args []string) string {
			if check != nil {
				if reason := check(args[0]); reason != "" {
					return reason
				}
			}
			*get(c) = args[0]
			return ""
		},
		get: func(c *Config) string { return *get(c) },
		lines: func(c *Config) []string {
			if *get(c) == "" {
				return nil
			}
			return []string{name + " " + catRepr(*get(c))}
		},
	}
}

// hostOf and portOf split Config.Addr, with the server's defaults.
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return "127.0.0.1"
	}
	return h
}

func portOf(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil || addr == "" {
		return "6379"
	}
	return p
}

// parseOutputLimits applies client-output-buffer-limit words, Redis's
// updateClientOutputBufferLimit: groups of class hard soft seconds, all
// checked before any is applied.
func parseOutputLimits(l *OutputBufferLimits, args []string) string {
	if len(args)%4 != 0 {
		return "Wrong number of arguments in buffer limit configuration."
	}
	next := *l
	for j := 0; j < len(args); j += 4 {
		var dst *OutputBufferLimit
		switch engine.LowerASCII(args[j]) {
		case "normal":
			dst = &next.Normal
		case "replica", "slave":
			dst = &next.Replica
		case "pubsub":
			dst = &next.PubSub
		default:
			return "Invalid client class specified in buffer limit configuration."
		}
		hard, ok1 := memToULL(args[j+1])
		soft, ok2 := memToULL(args[j+2])
		// strtoll's value goes to an int, as Redis's soft_seconds
		ll, rest, _ := cStrtoll(args[j+3], 10)
		secs := int64(int32(ll))
		if !ok1 || !ok2 || rest != "" || secs < 0 {
			return "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		*dst = OutputBufferLimit{Hard: hard, Soft: soft, SoftSeconds: secs}
	}
	*l = next
	return ""
}

// cStrtoll is C's strtoll(s, &end, base) for base 8 or 10: leading
// white space, a sign, digits, saturating at the int64 bounds (overflow,
// as errno ERANGE). rest is what end points to: the text after the
// digits, or all of s when there are none, so that like C it takes ""
// (rest "") as 0 but not " " or "-".
func cStrtoll(s string, base int) (v int64, rest string, overflow bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var u uint64
	limit := uint64(1) << 63 // the magnitude of the bound on this side
	if !neg {
		limit--
	}
	for ; i < len(s) && s[i] >= '0' && s[i] < '0'+byte(base); i++ {
		d := uint64(s[i] - '0')
		if overflow || u > (limit-d)/uint64(base) {
			overflow = true
			continue
		}
		u = u*uint64(base) + d
	}
	if i == start {
		return 0, s, false
	}
	if overflow {
		u = limit
	}
	if neg {
		return -int64(u), s[i:], overflow
	}
	return int64(u), s[i:], overflow
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func init() {
	addDirective(&directive{
		name: "port", live: true, // CONFIG SET moves the listeners (rebind.go)
		set: func(c *Config, args []string) string {
			v, reason := numeric{lo: 0, hi: 65535}.parse(args[0])
			if reason != "" {
				return reason
			}
			c.TLSOnly = v == 0
			if v != 0 {
				c.Addr = net.JoinHostPort(hostOf(c.Addr), strconv.FormatInt(v, 10))
			}
			return ""
		},
		get: func(c *Config) string {
			if c.TLSOnly {
				return "0"
			}
			return portOf(c.Addr)
		},
	})
	addDirective(&directive{
		name: "bind", multi: true, live: true,
		set: func(c *Config, args []string) string {
			if len(args) > 16 {
				return "Too many bind addresses specified."
			}
			if len(args) == 0 || (len(args) == 1 && args[0] == "") {
				// Redis's setConfigBindOption: no addresses at all (not
				// its default), so no TCP listener; Addr's host stays for
				// a later bind to replace
				c.NoBind, c.ExtraAddrs = true, nil
				return ""
			}
			c.NoBind = false
			c.Addr = net.JoinHostPort(args[0], portOf(c.Addr)) // as written: "*", "-addr" (bindHost)
			c.ExtraAddrs = append([]string(nil), args[1:]...)
			return ""
		},
		get: func(c *Config) string {
			if c.NoBind {
				return ""
			}
			return strings.Join(append([]string{hostOf(c.Addr)}, c.ExtraAddrs...), " ")
		},
		lines: func(c *Config) []string {
			if c.NoBind {
				return []string{`bind ""`} // rewriteConfigBindOption
			}
			words := append([]string{"bind", hostOf(c.Addr)}, c.ExtraAddrs...)
			for i := range words {
				words[i] = quoteArg(words[i])
			}
			return []string{strings.Join(words, " ")}
		},
	})
	addDirective(stringDirective("aclfile", func(c *Config) *string { return &c.ACLFile }, nil))
	addDirective(stringDirective("unixsocket", func(c *Config) *string { return &c.UnixSocket }, nil))
	d := stringDirective("requirepass", func(c *Config) *string { return &c.RequirePass }, nil)
	d.live = true
	addDirective(d)
	addDirective(&directive{
		name: "user", multi: true, fileOnly: true,
		set: func(c *Config, args []string) string {
			if len(args) < 1 {
				return "Bad directive or wrong number of arguments"
			}
			u := User{Name: args[0], Rules: append([]string{}, args[1:]...)}
			if reason, bad := engine.CheckUserRules(args[1:]); reason != "" {
				// Redis names argv[bad], counting "user" and the name
				// (ACLAppendUserForLoading's index is into the rules): kept.
				word := "user"
				if bad > 0 {
					word = args[bad-1]
				}
				return "Error in user declaration '" + word + "': " + reason
			}
			for i := range c.Users {
				if c.Users[i].Name == u.Name {
					c.Users = append(append([]User(nil), c.Users[:i]...), c.Users[i+1:]...)
					break
				}
			}
			c.Users = append(append([]User(nil), c.Users...), u)
			return ""
		},
		lines: func(c *Config) []string {
			var out []string
			_, rules := usersOf(c) // acl.go
			for i, u := range c.Users {
				out = append(out, "user "+u.Name+" "+strings.Join(rules[i], " "))
			}
			return out
		},
	})
	addDirective(boolDirective("protected-mode", true,
		func(c *Config) bool { return !c.NoProtectedMode },
		func(c *Config, v bool) { c.NoProtectedMode = !v }))
	addDirective(numDirective("timeout", true, numeric{lo: 0, hi: intMax},
		func(c *Config) int64 { return int64(c.Timeout / time.Second) },
		func(c *Config, v int64) { c.Timeout = time.Duration(v) * time.Second }))
	addDirective(numDirective("maxclients", true, numeric{unsigned: true, lo: 1, hi: uintMax},
		func(c *Config) int64 {
			if c.MaxClients <= 0 {
				return 10000
			}
			return int64(c.MaxClients)
		},
		func(c *Config, v int64) { c.MaxClients = int(v) }))
	addDirective(numDirective("maxmemory", true, numeric{mem: true, unsigned: true, lo: 0, hi: -1},
		func(c *Config) int64 { return int64(c.MaxMemory) },
		func(c *Config, v int64) { c.MaxMemory = uint64(v) }))
	addDirective(enumDirective("maxmemory-policy", true,
		[]string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
		func(c *Config) string { return "noeviction" },
		func(c *Config, v string) string {
			if v != "noeviction" {
				return "tumbler never evicts keys (they are locks): only noeviction is supported"
			}
			return ""
		}))
	addDirective(numDirective("proto-max-bulk-len", true, numeric{mem: true, lo: 1 << 20, hi: longMax},
		func(c *Config) int64 {
			if c.ProtoMaxBulkLen <= 0 {
				return framerMaxBulk
			}
			return c.ProtoMaxBulkLen
		},
		func(c *Config, v int64) { c.ProtoMaxBulkLen = v }))
	addDirective(numDirective("client-query-buffer-limit", true, numeric{mem: true, unsigned: true, lo: 1 << 20, hi: longMax},
		func(c *Config) int64 {
			if c.ClientQueryBufferLimit <= 0 {
				return framerQueryBufLimit
			}
			return c.ClientQueryBufferLimit
		},
		func(c *Config, v int64) { c.ClientQueryBufferLimit = v }))
	addDirective(&directive{
		name: "client-output-buffer-limit", multi: true, live: true,
		set: func(c *Config, args []string) string {
			if c.OutputBufferLimits == (OutputBufferLimits{}) {
				c.OutputBufferLimits = DefaultOutputBufferLimits()
			}
			return parseOutputLimits(&c.OutputBufferLimits, args)
		},
		get: func(c *Config) string { return outputLimitsOf(c).String() },
		// As Redis's rewriteConfigClientOutputBufferLimitOption: a line
		// for each class in this order, memory values as Redis writes
		// them (of its long long: formatMemory), forced when the class is
		// not its default.
		rewrite: func(c *Config) []rewriteLine {
			l, def := outputLimitsOf(c), DefaultOutputBufferLimits()
			f := func(name string, x, d OutputBufferLimit) rewriteLine {
				return rewriteLine{
					text:  "client-output-buffer-limit " + name + " " + formatMemory(int64(x.Hard)) + " " + formatMemory(int64(x.Soft)) + " " + strconv.FormatInt(x.SoftSeconds, 10),
					force: x != d,
				}
			}
			return []rewriteLine{f("normal", l.Normal, def.Normal), f("replica", l.Replica, def.Replica), f("pubsub", l.PubSub, def.PubSub)}
		},
	})
	d = numDirective("busy-reply-threshold", true, numeric{lo: 0, hi: longMax},
		func(c *Config) int64 {
			if c.LuaTimeLimit <= 0 {
				return 5000
			}
			if raw, ok := c.params["busy-reply-threshold"]; ok && c.LuaTimeLimit == math.MaxInt64 {
				v, _ := strconv.ParseInt(raw, 10, 64)
				return v
			}
			return c.LuaTimeLimit.Milliseconds()
		},
		func(c *Config, v int64) {
			// 0 (every script is busy at once) is kept as 1 ns: a zero
			// Config.LuaTimeLimit means the 5 s default. Past what a
			// Duration holds (292 years) it is the longest Duration, and
			// the value is kept to be reported.
			c.LuaTimeLimit = math.MaxInt64
			if v < math.MaxInt64/int64(time.Millisecond) {
				c.LuaTimeLimit = max(time.Duration(v)*time.Millisecond, 1)
			} else {
				c.setParam("busy-reply-threshold", strconv.FormatInt(v, 10))
			}
		})
	addDirective(d)
	addAlias(d, "lua-time-limit")
	addDirective(numDirective("slowlog-log-slower-than", true, numeric{lo: -1, hi: longMax},
		slowlogSlowerThan, func(c *Config, v int64) { c.SlowlogLogSlowerThan = &v }))
	addDirective(numDirective("slowlog-max-len", true, numeric{unsigned: true, lo: 0, hi: longMax},
		slowlogMaxLen, func(c *Config, v int64) { c.SlowlogMaxLen = &v }))
	addDirective(&directive{
		name: "notify-keyspace-events", live: true,
		set: func(c *Config, args []string) string {
			flags, ok := engine.ParseKeyspaceEvents(args[0])
			if !ok {
				return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
			}
			c.NotifyKeyspaceEvents = flags
			return ""
		},
		get: func(c *Config) string { return engine.FormatKeyspaceEvents(c.NotifyKeyspaceEvents) },
	})
	addDirective(numDirective("lua-memory-limit", true, numeric{mem: true, unsigned: true, lo: 0, hi: longMax},
		func(c *Config) int64 { return max(luaMemoryLimit(c), 0) },
		func(c *Config, v int64) {
			// 0 (no limit) is kept as -1: a zero Config.LuaMemoryLimit
			// means the default.
			c.LuaMemoryLimit = v
			if v == 0 {
				c.LuaMemoryLimit = -1
			}
		}))
	addDirective(&directive{
		name: "tls-port", live: true, // CONFIG SET moves the listeners (rebind.go)
		set: func(c *Config, args []string) string {
			v, reason := numeric{lo: 0, hi: 65535}.parse(args[0])
			if reason != "" {
				return reason
			}
			c.TLSAddr = ""
			if v != 0 {
				c.TLSAddr = ":" + strconv.FormatInt(v, 10)
			}
			return ""
		},
		get: func(c *Config) string {
			if c.TLSAddr == "" {
				return "0"
			}
			_, p, _ := net.SplitHostPort(c.TLSAddr)
			return p
		},
	})
	// The tls-* settings TLS is built from change live (buildLiveTLS, tls.go).
	liveTLS := func(d *directive) *directive { d.live = true; return d }
	addDirective(liveTLS(stringDirective("tls-cert-file", func(c *Config) *string { return &c.TLSCertFile }, nil)))
	addDirective(liveTLS(stringDirective("tls-key-file", func(c *Config) *string { return &c.TLSKeyFile }, nil)))
	addDirective(liveTLS(stringDirective("tls-ca-cert-file", func(c *Config) *string { return &c.TLSCACertFile }, nil)))
	addDirective(liveTLS(stringDirective("tls-ca-cert-dir", func(c *Config) *string { return &c.TLSCACertDir }, nil)))
	// (checked when TLS is configured from it, as Redis's tlsConfigure:
	// CONFIG SET refuses a bad one only while TLS is served)
	addDirective(liveTLS(stringDirective("tls-protocols", func(c *Config) *string { return &c.TLSProtocols }, nil)))
	addDirective(enumDirective("tls-auth-clients", true, []string{"no", "yes", "optional"},
		func(c *Config) string {
			if c.TLSAuthClients == "" {
				return "yes"
			}
			return c.TLSAuthClients
		},
		func(c *Config, v string) string { c.TLSAuthClients = v; return "" }))
	addDirective(enumDirective("loglevel", true, []string{"debug", "verbose", "notice", "warning"},
		func(c *Config) string {
			if c.LogLevel == "" {
				return "notice"
			}
			return c.LogLevel
		},
		func(c *Config, v string) string { c.LogLevel = v; return "" }))
	d = stringDirective("logfile", func(c *Config) *string { return &c.LogFile }, nil)
	d.lines = func(c *Config) []string { return []string{"logfile " + catRepr(c.LogFile)} } // Redis allows it empty
	addDirective(d)
	addDirective(stringDirective("pidfile", func(c *Config) *string { return &c.PidFile }, nil))
	addDirective(enumDirective("supervised", false, []string{"upstart", "systemd", "auto", "no"},
		func(c *Config) string {
			if c.Supervised == "" {
				return "no"
			}
			return c.Supervised
		},
		func(c *Config, v string) string { c.Supervised = v; return "" }))
	// tumbler's own; start-up only (own: see directive)
	ownDirective := func(d *directive) *directive { d.own = true; return d }
	addDirective(ownDirective(boolDirective("event-loop", false,
		func(c *Config) bool { return !c.NoEventLoop },
		func(c *Config, v bool) { c.NoEventLoop = !v })))
	addDirective(ownDirective(stringDirective("metrics-addr", func(c *Config) *string { return &c.MetricsAddr }, nil)))
	addDirective(&directive{
		name: "restart-delay", own: true,
		set: func(c *Config, args []string) string {
			if ms, ok := engine.ParseInt([]byte(args[0])); ok && ms >= 0 {
				c.RestartDelay = time.Duration(ms) * time.Millisecond
				return ""
			}
			d, err := time.ParseDuration(args[0])
			if err != nil || d < 0 {
				return "argument must be a duration (500ms, 2s) or a number of milliseconds"
			}
			c.RestartDelay = d
			return ""
		},
		get: func(c *Config) string { return c.RestartDelay.String() },
	})
	// The encoding thresholds, with Redis 7.0's bounds: the sizes are
	// size_t (0 to LONG_MAX), the value lengths memory values; the list
	// settings are ints and only reported.
	entries := numeric{unsigned: true, lo: 0, hi: longMax}
	bytes := numeric{mem: true, unsigned: true, lo: 0, hi: longMax}
	encDirective("hash-max-listpack-entries", "hash-max-ziplist-entries", entries,
		func(l *engine.EncodingLimits) *int64 { return &l.HashMaxListpackEntries })
	encDirective("hash-max-listpack-value", "hash-max-ziplist-value", bytes,
		func(l *engine.EncodingLimits) *int64 { return &l.HashMaxListpackValue })
	encDirective("set-max-intset-entries", "", entries,
		func(l *engine.EncodingLimits) *int64 { return &l.SetMaxIntsetEntries })
	encDirective("zset-max-listpack-entries", "zset-max-ziplist-entries", entries,
		func(l *engine.EncodingLimits) *int64 { return &l.ZsetMaxListpackEntries })
	encDirective("zset-max-listpack-value", "zset-max-ziplist-value", bytes,
		func(l *engine.EncodingLimits) *int64 { return &l.ZsetMaxListpackValue })
	encDirective("list-max-listpack-size", "list-max-ziplist-size", numeric{lo: -1 << 31, hi: intMax},
		func(l *engine.EncodingLimits) *int64 { return &l.ListMaxListpackSize })
	encDirective("list-compress-depth", "", numeric{lo: 0, hi: intMax},
		func(l *engine.EncodingLimits) *int64 { return &l.ListCompressDepth })
	// DEBUG's gate, as Redis's protected config: no, yes, or local
	// (loopback connections only); not changed by CONFIG SET.
	addDirective(enumDirective("enable-debug-command", false, []string{"no", "yes", "local"},
		func(c *Config) string { return debugMode(c.EnableDebugCommand) },
		func(c *Config, v string) string { c.EnableDebugCommand = v; return "" }))
	addDirective(boolDirective("daemonize", false, func(c *Config) bool { return c.Daemonize }, func(c *Config, v bool) { c.Daemonize = v }))
	addDirective(&directive{
		name: "cluster-enabled",
		set: func(c *Config, args []string) string {
			v, ok := yesNo(args[0])
			if !ok {
				return "argument must be 'yes' or 'no'"
			}
			if v {
				return "tumbler has no cluster mode"
			}
			return ""
		},
		get: func(c *Config) string { return "no" },
	})
}

// encodingsOf returns the encoding thresholds of c.
func encodingsOf(c *Config) engine.EncodingLimits {
	if c.Encodings == nil {
		return engine.DefaultEncodingLimits()
	}
	return *c.Encodings
}

// encDirective adds a live directive for one encoding threshold (field
// of the limits), and its old name when alias is set. Setting it gives
// the Config limits of its own, so copies of a Config never share a
// change.
func encDirective(name, alias string, n numeric, field func(*engine.EncodingLimits) *int64) {
	d := numDirective(name, true, n,
		func(c *Config) int64 {
			l := encodingsOf(c)
			return *field(&l)
		},
		func(c *Config, v int64) {
			l := encodingsOf(c)
			*field(&l) = v
			c.Encodings = &l
		})
	addDirective(d)
	if alias != "" {
		addAlias(d, alias)
	}
}

func outputLimitsOf(c *Config) OutputBufferLimits {
	if c.OutputBufferLimits == (OutputBufferLimits{}) {
		return DefaultOutputBufferLimits()
	}
	return c.OutputBufferLimits
}

// refusedDirectives are redis.conf directives tumbler cannot honour and
// will not ignore: start-up fails with the reason.
var refusedDirectives = map[string]string{
	"replicaof":  "tumbler does not replicate",
	"slaveof":    "tumbler does not replicate",
	"loadmodule": "tumbler does not load modules",
	"sentinel":   "sentinel directive while not in sentinel mode",
}

// ignoredDirectives are the directives Redis 7.0 still reads and
// ignores, with one argument (its deprecated_configs): accepted with a
// warning. They are not CONFIG parameters.
var ignoredDirectives = map[string]bool{
	"list-max-ziplist-entries": true, "list-max-ziplist-value": true, "lua-replicate-commands": true,
}

// ---- the config file ----

// ConfigError is a configuration that cannot be used: a config file line
// (File and Line set) or a command-line option (Line 0). Its Error text is
// the block Redis prints before exiting.
type ConfigError struct {
	File   string // the config file; "" for a command-line option
	Line   int    // 1-based; 0 when the error is not on a line
	Text   string // the offending line or option
	Reason string
	// LogLine: Redis logs this one as a warning line (serverLog), not in
	// the block, before it exits: a config file it cannot open.
	LogLine bool
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("\n*** FATAL CONFIG FILE ERROR (tumbler " + engine.Version + ") ***\n")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "Reading the configuration file %s, at line %d\n", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "Reading the configuration file %s\n", e.File)
	default:
		b.WriteString("Reading the command line\n")
	}
	if e.Text != "" {
		fmt.Fprintf(&b, ">>> '%s'\n", e.Text)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// maxIncludeDepth bounds include nesting (and include loops).
const maxIncludeDepth = 16

// LoadConfigFile reads a config file in redis.conf syntax into cfg:
// one directive per line with its arguments, split as Redis's
// sdssplitargs does ("double quotes" with \n \r \t \b \a \xHH escapes,
// 'single quotes'), # comments and blank lines skipped, directive names
// case-insensitive, later lines overriding earlier ones; "include path"
// (with glob patterns) reads another file in place. It sets
// cfg.ConfigFile. The warnings name lines tumbler accepted but does not
// act on. An unknown or malformed directive is a *ConfigError naming the
// file and line.
func LoadConfigFile(path string, cfg *Config) (warnings []string, err error) {
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		abs = path
	}
	cfg.ConfigFile = abs
	seen := map[string]bool{}
	return loadFile(path, path, cfg, seen, 0)
}

// LoadConfigData reads config lines as LoadConfigFile reads a file's;
// name is where they came from, for errors and warnings ("stdin": the
// tumbler binary reads its standard input when given "-", as
// redis-server). An include in them reads a file relative to dir, as
// set by then (the current directory without one).
func LoadConfigData(name string, data []byte, cfg *Config) (warnings []string, err error) {
	return loadData(name, data, cfg, map[string]bool{}, 0)
}

// IncludeConfig reads the files a glob pattern names (a path without
// glob characters names one, which must exist), as a config file's
// "include pattern" line does: the tumbler binary's --include. A
// relative pattern is relative to cfg's dir, as Redis (which has changed
// to it) reads it.
func IncludeConfig(pattern string, cfg *Config) (warnings []string, err error) {
	return includeFiles(pattern, cfg, map[string]bool{}, 0)
}

// loadFile reads the config file at path; name is the path as Redis
// would name it, in the error for a file that cannot be opened.
func loadFile(path, name string, cfg *Config, seenUsers map[string]bool, depth int) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Reason: "Fatal error, can't open config file '" + name + "': " + errText(err), LogLine: true}
	}
	return loadData(path, data, cfg, seenUsers, depth)
}

// includeFiles reads the files pattern names (include). A relative
// pattern is relative to dir as it is then (Config.Path): Redis has
// changed to the directory of a dir line or flag read before the
// include, and not to that of one read after it.
func includeFiles(pattern string, cfg *Config, seenUsers map[string]bool, depth int) ([]string, error) {
	path := cfg.Path(pattern)
	files := []string{path}
	if strings.ContainsAny(pattern, "*?[") {
		var err error
		if files, err = filepath.Glob(path); err != nil {
			return nil, &ConfigError{Text: "include " + pattern, Reason: "bad include pattern: " + err.Error()}
		}
	}
	// Redis names a file as its pattern gives it: relative to dir for a
	// relative pattern.
	name := func(f string) string {
		if path == pattern {
			return f
		}
		if rel, err := filepath.Rel(cfg.Dir, f); err == nil {
			return rel
		}
		return f
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = name(f) // before a file's dir line changes dir
	}
	var warnings []string
	for i, f := range files {
		w, err := loadFile(f, names[i], cfg, seenUsers, depth+1)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

func loadData(path string, data []byte, cfg *Config, seenUsers map[string]bool, depth int) ([]string, error) {
	var warnings []string
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.Trim(raw, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(reason string) ([]string, error) {
			return warnings, &ConfigError{File: path, Line: i + 1, Text: line, Reason: reason}
		}
		args, ok := splitArgs(line)
		if !ok {
			return fail("Unbalanced quotes in configuration line")
		}
		if len(args) == 0 {
			continue
		}
		name := engine.LowerASCII(args[0])
		if name == "include" && len(args) == 2 {
			if depth >= maxIncludeDepth {
				return fail("include nesting too deep (an include loop?)")
			}
			w, err := includeFiles(args[1], cfg, seenUsers, depth)
			warnings = append(warnings, w...)
			if err != nil {
				var ce *ConfigError
				if errors.As(err, &ce) && ce.File == "" { // a bad pattern: this line's
					return fail(ce.Reason)
				}
				return warnings, err
			}
			continue
		}
		if name == "user" && len(args) >= 2 {
			if seenUsers[args[1]] {
				return fail("Error in user declaration '" + args[1] + "': Duplicate user found. A user can only be defined once in config files")
			}
			seenUsers[args[1]] = true
		}
		warn, reason := applyDirective(cfg, name, args[1:], true)
		if reason != "" {
			return fail(reason)
		}
		if warn != "" {
			warnings = append(warnings, fmt.Sprintf("%s:%d: %s", path, i+1, warn))
		}
	}
	return warnings, nil
}

// ErrText is err as Redis reports a failed file operation: the system's
// message, as C's strerror words it ("No such file or directory"), with
// no Go path or operation before it.
func ErrText(err error) string { return errText(err) }

func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	// C's strerror, as Redis words it: "No such file or directory"
	// (Go's text is in lower case)
	text := errno.Error()
	if text != "" && text[0] >= 'a' && text[0] <= 'z' {
		text = string(text[0]-'a'+'A') + text[1:]
	}
	return text
}

// ApplyDirective applies one directive to cfg, as a config file line
// "name args..." would (the tumbler binary turns its flags into
// directives this way, after the config file, so that they override it).
// A multi-word directive given one word splits it as a config line.
func ApplyDirective(cfg *Config, name string, args ...string) (warning string, err error) {
	name = engine.LowerASCII(name)
	warn, reason := applyDirective(cfg, name, args, true)
	if reason != "" {
		text := strings.Join(append([]string{name}, args...), " ")
		return "", &ConfigError{Text: text, Reason: reason}
	}
	return warn, nil
}

// applyDirective returns a warning for a directive accepted but not acted
// on, or the reason it is refused.
func applyDirective(cfg *Config, name string, args []string, resplit bool) (warning, reason string) {
	d := directives[name]
	if d == nil {
		switch {
		case ignoredDirectives[name] && len(args) == 1:
			return "'" + name + "' is not supported by tumbler and is ignored", ""
		case refusedDirectives[name] != "":
			return "", refusedDirectives[name]
		case strings.Contains(name, "."):
			return "", "tumbler does not load modules, so it has no module configs"
		}
		return "", "Bad directive or wrong number of arguments"
	}
	if !d.multi && len(args) != 1 {
		return "", "wrong number of arguments"
	}
	if d.multi && resplit && len(args) == 1 && args[0] != "" {
		words, ok := splitArgs(args[0])
		if !ok {
			return "", "Unbalanced quotes in configuration line"
		}
		args = words
	}
	if reason := d.set(cfg, args); reason != "" {
		return "", reason
	}
	if d.warn != nil {
		return d.warn(args), ""
	}
	return "", ""
}

// splitArgs splits a line into words exactly as Redis's sdssplitargs; ok
// is false for unbalanced quotes or a closing quote not followed by a
// space.
func splitArgs(line string) (args []string, ok bool) { return engine.SplitArgs(line) }

// QuoteConfigArg quotes a word for a config line as CONFIG REWRITE does:
// as is when it needs no quotes, else in double quotes with escapes.
func QuoteConfigArg(s string) string { return quoteArg(s) }

// quoteArg returns s as one word of a config line: as is when that reads
// back the same, otherwise double-quoted with escapes.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\r\n\v\f\"'\\") && isPrint(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isPrint(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// DirectiveNames returns the names of the directives tumbler acts on,
// sorted: every one may be given as a flag of the tumbler binary.
func DirectiveNames() []string {
	var names []string
	for name, d := range directives {
		if !d.inert {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// OtherDirectiveNames returns, sorted, the directives Redis 7.0 knows that
// tumbler accepts and does not act on, or ignores, or refuses
// (docs/configuration.md): the command line takes them as flags too, as
// redis-server does (--save "" --appendonly no).
func OtherDirectiveNames() []string {
	var names []string
	for name, d := range directives {
		if d.inert {
			names = append(names, name)
		}
	}
	for name := range ignoredDirectives {
		names = append(names, name)
	}
	for name := range refusedDirectives {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// allDirectiveNames returns the names of every directive, sorted.
func allDirectiveNames() []string {
	names := make([]string, 0, len(directives))
	for name := range directives {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// wordsDirectives are the directives besides the multi ones whose line
// Redis reads as several words.
var wordsDirectives = map[string]bool{
	"replicaof": true, "slaveof": true, "rename-command": true, "loadmodule": true,
	"sentinel": true, "tls-protocols": true,
}

// MultiWordDirective reports whether a directive's value may be several
// words (bind, save, client-output-buffer-limit...): on the command line
// redis-server gathers the words after --name up to the next --option
// (--save 900 1 --bind 127.0.0.1 ::1).
func MultiWordDirective(name string) bool {
	name = engine.LowerASCII(name)
	if d := directives[name]; d != nil && d.multi {
		return true
	}
	return wordsDirectives[name]
}

// ---- CONFIG GET / SET / REWRITE ----

// registerConfigParams makes every directive but the file-only ones a
// CONFIG GET parameter, settable when live, and the parameters of the
// directives tumbler refuses parameters with Redis's empty value.
func (s *Server) registerConfigParams() {
	for _, name := range reportedEmpty {
		s.eng.RegisterParam(name, func() string { return "" })
	}
	for _, name := range allDirectiveNames() {
		d := directives[name]
		if d.fileOnly {
			continue
		}
		get := func() string { return d.get(s.live()) }
		switch name {
		case "port":
			get = func() string {
				live := s.live() // port 0 is set live under an empty bind (rebind)
				if live.TLSOnly {
					return "0"
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if live.NoBind || s.ln == nil {
					// kept, with nothing to listen on (or before Start):
					// a port picked at start (0) is the one a later bind
					// listens on again (listenSpecs), as INFO's tcp_port
					// says
					if p := portOf(live.Addr); p != "0" || s.port == 0 {
						return p
					}
				}
				return strconv.Itoa(s.port)
			}
		case "tls-port":
			get = func() string {
				if a := s.TLSAddr(); a != "" {
					_, p, _ := net.SplitHostPort(a)
					return p
				}
				live := s.live()
				if p := d.get(live); p != "0" || live.TLSAddr == "" {
					return p
				}
				// a port picked at start, with no TLS listener now (an
				// empty bind): the one a later bind listens on again
				s.mu.Lock()
				defer s.mu.Unlock()
				return strconv.Itoa(s.prod.tlsPort)
			}
		}
		spec := engine.ParamSpec{Name: name, Get: get, Settable: d.live || d.own, MultiArg: d.multi, Hidden: d.hidden}
		if d.protected {
			spec.CheckSet = s.checkProtected
		}
		s.eng.RegisterParamSpec(spec)
	}
}

// configHandler is the server's engine.ConfigHandler.
type configHandler struct{ s *Server }

// ConfigSet applies CONFIG SET to a copy of the live settings and installs
// the copy when every value was accepted.
func (h configHandler) ConfigSet(pairs []engine.ConfigPair) (int, string) {
	s := h.s
	// A new or lower maxmemory-clients (or maxmemory, for a percentage)
	// evicts once this command's reply is written, as Redis evicts in
	// beforeSleep after writing the replies (evict.go). Marked before the
	// limit is set, so that a tick in between leaves the pass to it.
	s.evict.due.Store(dueSet)
	defer s.evict.due.Store(dueSet)
	s.prod.mu.Lock()
	defer s.prod.mu.Unlock()
	next := *s.live()
	for i, p := range pairs {
		d := directives[p.Name]
		if d == nil || !d.live && !d.own {
			return i, "can't set immutable config"
		}
		args := p.Args
		if !d.multi && len(args) != 1 {
			return i, "wrong number of arguments"
		}
		if reason := d.set(&next, args); reason != "" {
			return i, reason
		}
		if !d.live && d.get(&next) != d.get(s.live()) {
			return i, "can't set immutable config"
		}
		if d.fixed {
			if reason := d.refuse(args); reason != "" {
				return i, reason
			}
		}
	}
	old := s.live()
	applyParams(&next, old, pairs)
	oomSet := false
	for i, p := range pairs { // updateOOMScoreAdj, once, if either changed
		if d := directives[p.Name]; strings.HasPrefix(d.name, "oom-score-adj") && d.get(&next) != d.get(old) {
			if !s.setOOMScoreAdj(&next) {
				return i, errOOMScoreAdj
			}
			oomSet = true
			break
		}
	}
	if next.MaxClients != old.MaxClients && s.cfg.FitOpenFiles != nil { // updateMaxclients
		fit, notices, warnings := s.cfg.FitOpenFiles(next.MaxClients)
		for _, n := range notices {
			s.log.Info(n)
		}
		for _, w := range warnings {
			s.log.Warn(w)
		}
		if fit != next.MaxClients {
			s.log.Warn("Failed applying new configuration. Possibly related to new maxclients setting. Restoring previous settings.")
			if oomSet {
				s.setOOMScoreAdj(old) // back, as Redis restores every value of a failed set
			}
			return slices.IndexFunc(pairs, func(p engine.ConfigPair) bool { return p.Name == "maxclients" }),
				"The operating system is not able to handle the specified number of clients, try with " + strconv.Itoa(fit)
		}
	}
	if next.MaxMemory != 0 && next.MaxMemory != old.MaxMemory {
		if used := s.eng.UsedMemory(); next.MaxMemory < used {
			s.log.Warn("the new maxmemory value set via CONFIG SET is smaller than the current memory usage: write commands will be refused", "maxmemory", next.MaxMemory, "used", used)
		}
	}
	tlsNext, err := s.buildLiveTLS(old, &next) // applyTlsCfg (tls.go)
	if err != nil {
		for i, p := range pairs {
			if strings.HasPrefix(p.Name, "tls-") {
				if oomSet {
					s.setOOMScoreAdj(old)
				}
				return i, err.Error()
			}
		}
	}
	for i, p := range pairs { // changeListenPort, changeBindAddr (rebind.go)
		if p.Name == "port" || p.Name == "bind" || p.Name == "tls-port" {
			if err := s.rebind(old, &next, p.Name); err != nil {
				if oomSet {
					s.setOOMScoreAdj(old) // back, as Redis restores every value of a failed set
				}
				return i, err.Error()
			}
			break
		}
	}
	if tlsNext != nil {
		s.prod.tlsLive.Store(tlsNext)
		s.log.Info("CONFIG SET: TLS configuration updated")
	}
	s.applyLive(&next)
	return -1, ""
}

// ConfigRewrite rewrites the config file with the live settings, as
// Redis's CONFIG REWRITE: each directive is written where it first
// appears, under its current name when the line has an old one (later
// occurrences are blanked), others, the fixed directives' lines and
// comments are kept, and settings not in the file that differ from the
// default are appended, after a "# Generated by CONFIG REWRITE" line
// unless the file has one.
func (h configHandler) ConfigRewrite() string {
	s := h.s
	if s.cfg.ConfigFile == "" {
		return engine.ErrConfigNoFile
	}
	if err := s.rewriteConfigFile(false); err != nil {
		s.log.Warn("CONFIG REWRITE failed", "err", err)
		return "ERR Rewriting config file: " + errText(err)
	}
	s.log.Info("CONFIG REWRITE executed with success")
	return ""
}

// rewriteConfigFile rewrites the config file with the live settings
// (ConfigRewrite); all writes every setting, defaults included (DEBUG
// CONFIG-REWRITE-FORCE-ALL, Redis's rewriteConfig force_write).
func (s *Server) rewriteConfigFile(all bool) error {
	s.prod.mu.Lock()
	defer s.prod.mu.Unlock()
	path := s.cfg.ConfigFile
	cfg := *s.live()
	cfg.Users = nil
	if cfg.ACLFile == "" {
		cfg.Users = s.aclConfigUsers() // the live users, as Redis's rewriteConfigUserOption (acl.go)
	}
	content, err := rewriteConfig(path, &cfg, all)
	if err == nil {
		err = writeFileAtomic(path, content)
	}
	return err
}

const rewriteSignature = "# Generated by CONFIG REWRITE"

// rewriteLine is a line of a directive's rewrite: force appends it when
// the file has no line of the directive left for it.
type rewriteLine struct {
	text  string
	force bool
}

// directiveLines returns a directive's lines for cfg.
func directiveLines(d *directive, cfg *Config) []string {
	if d.lines != nil {
		return d.lines(cfg)
	}
	return []string{d.name + " " + quoteArg(d.get(cfg))}
}

func rewriteConfig(path string, cfg *Config, all bool) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []string
	done := map[string]bool{}
	slots := map[string][]int{} // where the lines of a directive with rewrite were
	signed := false
	// As Redis: the lines are kept trimmed, the file's last newline
	// leaves an empty last line (so lines appended come after a blank
	// one), and the written file has no two blank lines in a row.
	var lines []string
	if len(data) > 0 {
		lines = strings.Split(string(data), "\n")
	}
	for _, raw := range lines {
		line := strings.Trim(raw, " \t\r\n")
		if line == rewriteSignature {
			signed = true
		}
		args, ok := splitArgs(line)
		if line == "" || line[0] == '#' || !ok || len(args) == 0 {
			out = append(out, line)
			continue
		}
		d := directives[engine.LowerASCII(args[0])]
		if d == nil || d.fixed {
			out = append(out, line)
			continue
		}
		if d.alias != "" {
			d = directives[d.alias] // an old name's line gets the new name
		}
		if d.rewrite != nil { // filled in below
			slots[d.name] = append(slots[d.name], len(out))
			out = append(out, "")
			continue
		}
		if dl := directiveLines(d, cfg); !done[d.name] && len(dl) > 0 {
			done[d.name] = true
			out = append(out, dl...)
		} else {
			done[d.name] = true
			out = append(out, "") // a later line of it, or one with no value now: blanked, as Redis
		}
	}
	var defaults Config
	fillDefaults(&defaults)
	// Redis's bind, as the binary's (an embedded server's default,
	// 127.0.0.1, is not Redis's: a file that omits bind listens on every
	// address, so a narrower bind must be written)
	defaults.Addr, defaults.ExtraAddrs = net.JoinHostPort("*", "6379"), []string{"-::*"}
	added := signed
	appendLines := func(lines ...string) {
		if !added {
			out = append(out, rewriteSignature)
			added = true
		}
		out = append(out, lines...)
	}
	for _, name := range allDirectiveNames() {
		d := directives[name]
		if d.rewrite != nil && d.alias == "" {
			for i, l := range d.rewrite(cfg) {
				if i < len(slots[name]) {
					out[slots[name][i]] = l.text
				} else if l.force || all {
					appendLines(l.text)
				}
			}
			continue
		}
		if done[name] || d.alias != "" || d.fixed {
			continue
		}
		lines := directiveLines(d, cfg)
		if !all && strings.Join(lines, "\n") == strings.Join(directiveLines(d, &defaults), "\n") {
			continue
		}
		appendLines(lines...)
	}
	var b strings.Builder
	for i, line := range out {
		if line == "" && i > 0 && out[i-1] == "" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}

// writeFileAtomic replaces path with content through a temporary file in
// the same directory, keeping the old file's permissions.
func writeFileAtomic(path string, content []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tumbler-rewrite-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, mode)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
	}
	return err
}
