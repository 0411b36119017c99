package engine

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file holds CONFIG: GET, SET, RESETSTAT and REWRITE. The engine
// knows only parameter names and how to read them; the server owns the
// settings, so CONFIG SET and REWRITE are handed to its ConfigHandler.

func registerConfig(e *Engine) {
	const f = FlagNoKeys | FlagNoScript | FlagLoading | FlagStale
	e.Register(&Command{Name: "config", Arity: -2, Group: "server", Subs: map[string]*Command{
		"help":      HelpCommand(0, configHelp),
		"get":       {Arity: -3, Flags: f | FlagAdmin, Fn: cmdConfigGet},
		"set":       {Arity: -4, Flags: f | FlagAdmin, Fn: cmdConfigSet},
		"resetstat": {Arity: 2, Flags: f | FlagAdmin | flagStats, Fn: cmdConfigResetStat},
		"rewrite":   {Arity: 2, Flags: f | FlagAdmin, Fn: cmdConfigRewrite},
	}})
}

// Error texts of CONFIG, verbatim from Redis 7.0 (src/config.c).
const (
	ErrConfigNoFile = "ERR The server is running without a config file"
)

// ErrConfigUnknown is CONFIG SET's reply for a parameter it does not know.
// The name is printed with %s: up to a NUL byte.
func ErrConfigUnknown(name string) string {
	return "ERR Unknown option or number of arguments for CONFIG SET - '" + cstr(name) + "'"
}

// ErrConfigSet is CONFIG SET's reply when setting name failed for reason.
func ErrConfigSet(name, reason string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason
}

// ParamSpec describes one configuration parameter for CONFIG GET and SET.
type ParamSpec struct {
	// Name is the parameter's lower-case name. An alias (lua-time-limit
	// for busy-reply-threshold) is registered as a parameter of its own,
	// as Redis lists both.
	Name string
	// Get returns the current value; it is called without the keyspace
	// lock and must not take it.
	Get func() string
	// Settable parameters may be changed by CONFIG SET, through the
	// ConfigHandler; the others reply "can't set immutable config".
	Settable bool
	// MultiArg parameters take several words (bind, save,
	// client-output-buffer-limit): CONFIG SET splits the value at each
	// space, as Redis does.
	MultiArg bool
	// Hidden parameters are reported by CONFIG GET only when named, never
	// matched by a pattern (Redis's HIDDEN_CONFIG: testing knobs).
	Hidden bool
	// CheckSet, if set, is asked by CONFIG SET while it checks the names,
	// before any value is parsed; a reason it returns fails the command as
	// an immutable parameter does (Redis's protected configs: "can't set
	// protected config").
	CheckSet func(c *Ctx) string
}

// ConfigPair is one parameter and its new value for ConfigHandler.ConfigSet.
type ConfigPair struct {
	Name string   // the parameter's lower-case name
	Args []string // the value; several words for MultiArg parameters
}

// ConfigHandler applies CONFIG SET and CONFIG REWRITE; the server
// implements it.
type ConfigHandler interface {
	// ConfigSet applies every pair or none. When a value is refused it
	// returns the index of its pair and Redis's reason text ("argument
	// must be a memory value"); otherwise bad is -1.
	ConfigSet(pairs []ConfigPair) (bad int, reason string)
	// ConfigRewrite writes the running configuration to the config file.
	// It returns the error reply, or "" when the file was written.
	ConfigRewrite() string
}

// configState is the engine's parameter table.
type configState struct {
	params  []ParamSpec
	handler ConfigHandler
}

// RegisterParam adds a read-only parameter that CONFIG GET reports; get
// is called without the keyspace lock. A parameter of the same name is
// replaced.
func (e *Engine) RegisterParam(name string, get func() string) {
	e.RegisterParamSpec(ParamSpec{Name: name, Get: get})
}

// RegisterParamSpec adds a parameter for CONFIG GET (and CONFIG SET when
// Settable), replacing one of the same name. Register before serving.
func (e *Engine) RegisterParamSpec(p ParamSpec) {
	p.Name = strings.ToLower(p.Name)
	for i := range e.params.params {
		if e.params.params[i].Name == p.Name {
			e.params.params[i] = p
			return
		}
	}
	e.params.params = append(e.params.params, p)
}

// SetConfigHandler installs what applies CONFIG SET and CONFIG REWRITE.
// Without one, every parameter is immutable and CONFIG REWRITE replies
// that there is no config file.
func (e *Engine) SetConfigHandler(h ConfigHandler) { e.params.handler = h }

// defaultParams are the values CONFIG GET reports for parameters nobody
// registered: what a client probing a Redis server expects to read.
var defaultParams = map[string]string{
	"maxmemory": "0", "maxmemory-policy": "noeviction", "save": "", "appendonly": "no",
	"databases": "16", "maxclients": "10000", "timeout": "0", "cluster-enabled": "no",
	"slave-read-only": "yes", "replica-read-only": "yes",
	"proto-max-bulk-len": "536870912", "client-query-buffer-limit": "1073741824",
	"lua-time-limit": "", "busy-reply-threshold": "",
	// per-command latency histograms on, as Redis's defaults (INFO
	// latencystats, LATENCY HISTOGRAM: latency.go)
	"latency-tracking":                  "yes",
	"latency-tracking-info-percentiles": "50 99 99.9",
}

// lookupParam finds a registered parameter by name, case-insensitively.
func (e *Engine) lookupParam(name string) *ParamSpec {
	name = LowerASCII(name)
	for i := range e.params.params {
		if e.params.params[i].Name == name {
			return &e.params.params[i]
		}
	}
	return nil
}

// configValues returns every parameter's current value by name.
func (e *Engine) configValues() map[string]string {
	values := make(map[string]string, len(defaultParams)+len(e.params.params))
	for k, v := range defaultParams {
		values[k] = v
	}
	ms := strconv.FormatInt(e.BusyThreshold().Milliseconds(), 10)
	values["lua-time-limit"], values["busy-reply-threshold"] = ms, ms
	for _, p := range e.params.params {
		values[p.Name] = p.Get()
	}
	return values
}

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *Ctx) {
	values := c.Eng.configValues()
	hidden := map[string]bool{}
	for _, p := range c.Eng.params.params {
		if p.Hidden {
			hidden[p.Name] = true
		}
	}
	var all []string
	for k := range values {
		if !hidden[k] {
			all = append(all, k)
		}
	}
	sort.Strings(all)
	// Each parameter is reported once, under the first pattern that names
	// it: a plain name is echoed as the client spelled it, a glob reports
	// the canonical names.
	type kv struct{ k, v string }
	var out []kv
	seen := map[string]bool{}
	for _, pat := range c.Args[2:] {
		// As Redis: strpbrk finds a glob, and stringmatch matches it, up
		// to a NUL byte; a plain name is looked up whole (a dict lookup
		// that hashes the whole sds, so a name with a NUL is none).
		if !isGlob(cstr(pat)) {
			name := LowerASCII(string(pat))
			if v, ok := values[name]; ok && !seen[name] {
				seen[name] = true
				out = append(out, kv{string(pat), v})
			}
			continue
		}
		for _, k := range all {
			if !seen[k] && Match(cstr(pat), []byte(k), true) {
				seen[k] = true
				out = append(out, kv{k, values[k]})
			}
		}
	}
	c.W.WriteMap(len(out))
	for _, p := range out {
		c.W.WriteBulkString(p.k)
		c.W.WriteBulkString(p.v)
	}
}

func isGlob(b []byte) bool {
	for _, ch := range b {
		if ch == '*' || ch == '?' || ch == '[' {
			return true
		}
	}
	return false
}

// CONFIG SET parameter value [parameter value ...]
//
// As Redis 7.0's configSetCommand: every name is checked first (the first
// unknown, immutable or repeated one fails the command before anything
// changes), then all values are applied together or not at all.
func cmdConfigSet(c *Ctx) {
	if len(c.Args)%2 != 0 {
		c.W.WriteError(ErrSyntax)
		return
	}
	e := c.Eng
	pairs := make([]ConfigPair, 0, (len(c.Args)-2)/2)
	specs := make([]*ParamSpec, 0, cap(pairs))
	var unchanged []string // fixed parameters set to the value they have
	for i := 2; i < len(c.Args); i += 2 {
		name := string(c.Args[i])
		p := e.lookupParam(name)
		if p == nil {
			lname := LowerASCII(name)
			def, known := defaultParams[lname]
			if !known {
				c.W.WriteError(ErrConfigUnknown(name))
				return
			}
			if keepsFixedValue(lname, string(c.Args[i+1]), def) {
				if slices.Contains(unchanged, lname) {
					c.W.WriteError(ErrConfigSet(name, "duplicate parameter"))
					return
				}
				unchanged = append(unchanged, lname)
				continue
			}
		}
		if p == nil || !p.Settable || e.params.handler == nil {
			c.W.WriteError(ErrConfigSet(name, "can't set immutable config"))
			return
		}
		if p.CheckSet != nil {
			if reason := p.CheckSet(c); reason != "" {
				c.W.WriteError(ErrConfigSet(name, reason))
				return
			}
		}
		for _, q := range specs {
			if q == p {
				c.W.WriteError(ErrConfigSet(name, "duplicate parameter"))
				return
			}
		}
		specs = append(specs, p)
		pairs = append(pairs, ConfigPair{Name: p.Name, Args: splitConfigValue(string(c.Args[i+1]), p.MultiArg)})
	}
	if len(pairs) == 0 {
		c.W.WriteStatus(statusOK) // only unchanged values (no handler needed)
		return
	}
	if bad, reason := e.params.handler.ConfigSet(pairs); bad >= 0 {
		c.W.WriteError(ErrConfigSet(pairs[bad].Name, reason))
		return
	}
	c.W.WriteStatus(statusOK)
}

// keepsFixedValue reports whether CONFIG SET name value asks a parameter
// tumbler cannot change for the value it has: turning persistence off
// (save "", appendonly no), which test setups do first thing. That is
// accepted and changes nothing; any other value is immutable.
func keepsFixedValue(name, value, current string) bool {
	switch name {
	case "save":
		return value == current // "": no snapshots
	case "appendonly":
		return EqualFoldASCII(value, current) // no
	}
	return false
}

// splitConfigValue splits a CONFIG SET value into its words: at every
// single space for multi-word parameters (Redis's sdssplitlen, so "" has
// no words), or not at all.
func splitConfigValue(v string, multi bool) []string {
	if !multi {
		return []string{v}
	}
	if v == "" {
		return nil
	}
	return strings.Split(v, " ")
}

// CONFIG REWRITE
func cmdConfigRewrite(c *Ctx) {
	h := c.Eng.params.handler
	if h == nil {
		c.W.WriteError(ErrConfigNoFile)
		return
	}
	if msg := h.ConfigRewrite(); msg != "" {
		c.W.WriteError(msg)
		return
	}
	c.W.WriteStatus(statusOK)
}

// CONFIG RESETSTAT
func cmdConfigResetStat(c *Ctx) {
	c.Eng.ResetStats()
	c.W.WriteStatus(statusOK)
}

// ResetStats clears what CONFIG RESETSTAT clears: INFO's counters,
// commandstats, errorstats and the latency histograms.
func (e *Engine) ResetStats() {
	s := &e.Stats
	s.ExpiredKeys.Store(0)
	s.KeyspaceHits.Store(0)
	s.KeyspaceMisses.Store(0)
	// RESETSTAT itself is counted once it has run, as in Redis: the first
	// of the new count
	s.Commands.Store(0)
	s.ConnsReceived.Store(0)
	s.RejectedConns.Store(0)
	s.EvictedClients.Store(0)
	s.ScriptRuns.Store(0)
	e.resetObserved() // obs: commandstats, errorstats, slow-log counters (observe.go)
}
