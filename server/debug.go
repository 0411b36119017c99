package server

import (
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// DEBUG SLEEP and DEBUG SET-ACTIVE-EXPIRE, and the active expiry switches
// they (and CLIENT PAUSE) control.

func (s *Server) registerDebug() {
	s.eng.Register(&engine.Command{Name: "debug", Arity: -2,
		Flags: engine.FlagNoKeys | engine.FlagNoScript | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale,
		Group: "server", Fn: s.cmdDebug,
		// Redis refuses a protected command before NOAUTH and ACL checks
		Guard: func(c *engine.Ctx) string {
			if !s.debugAllowed(connOf(c)) {
				return errDebugNotAllowed
			}
			return ""
		}})
}

func debugMode(m string) string {
	switch engine.LowerASCII(m) {
	case "yes", "local":
		return engine.LowerASCII(m)
	}
	return "no"
}

const errDebugNotAllowed = `ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`

// connOf is the connection of c's client, nil for the server's own
// calls (the fixture's clients have none).
func connOf(c *engine.Ctx) *client {
	if c.Client == nil {
		return nil
	}
	me, _ := c.Client.Conn.(*client)
	return me
}

// debugAllowed applies Config.EnableDebugCommand.
func (s *Server) debugAllowed(c *client) bool { return protectedAllowed(s.cfg.EnableDebugCommand, c) }

// protectedAllowed reports whether c may run a protected command (DEBUG,
// MODULE LOAD) under its enable-*-command setting mode: "yes", "local"
// (from a loopback or Unix socket peer) or "no".
func protectedAllowed(mode string, c *client) bool {
	if c == nil {
		return true // the server's own call (fixture)
	}
	switch debugMode(mode) {
	case "yes":
		return true
	case "local":
		if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
			return ta.IP.IsLoopback()
		}
		return c.nc.RemoteAddr().Network() == "unix"
	}
	return false
}

var debugHelp = []string{
	"CONFIG-REWRITE-FORCE-ALL",
	"    Like CONFIG REWRITE but writes all configuration options, including",
	"    keywords not listed in original configuration file or default values.",
	"DIGEST",
	"    Output a hex signature representing the current DB content.",
	"DIGEST-VALUE <key> [<key> ...]",
	"    Output a hex signature of the values of all the specified keys.",
	"ERROR <string>",
	"    Return a Redis protocol error with <string> as message. Useful for clients",
	"    unit tests to simulate Redis errors.",
	"LOG <message>",
	"    Write <message> to the server log.",
	"OBJECT <key>",
	"    Show low level info about `key` and associated value.",
	"POPULATE <count> [<prefix>] [<size>]",
	"    Create <count> string keys named key:<num>. If <prefix> is specified then",
	"    it is used instead of the 'key' prefix. These are not propagated to",
	"    replicas. Cluster slots are not respected so keys not belonging to the",
	"    current node can be created in cluster mode.",
	"PROTOCOL <type>",
	"    Reply with a test value of the specified type. <type> can be: string,",
	"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
	"    true, false.",
	"RELOAD [option ...]",
	"    Save the data set in memory (tumbler keeps no RDB file) and load it back.",
	"    Valid <option> values:",
	"    * MERGE: conflicting keys will be loaded from the saved data set.",
	"    * NOFLUSH: the existing database will not be removed before load, and",
	"      conflicting keys make the load fail, with nothing changed.",
	"    * NOSAVE: the database will be loaded from the last save.",
	"SET-ACTIVE-EXPIRE <0|1>",
	"    Setting it to 0 disables expiring keys in background when they are not",
	"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
	"    default.",
	"QUICKLIST-PACKED-THRESHOLD <size>",
	"    Sets the threshold for elements to be inserted as plain vs packed nodes",
	"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
	"SLEEP <seconds>",
	"    Stop the server for <seconds>. Decimals allowed.",
	"CLIENT-EVICTION",
	"    Show low level client eviction pools info (maxmemory-clients).",
	"PAUSE-CRON <0|1>",
	"    Stop periodic cron job processing (tumbler's 100 ms tick: INFO's rates, the",
	"    pub/sub output limits, the clients' memory for maxmemory-clients).",
	"REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
	"    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
	"    tumbler keeps no reply buffer peaks: accepted, changes nothing.",
	"REPLYBUFFER RESIZING <0|1>",
	"    Enable or disable the reply buffer resize cron job. tumbler resizes no reply",
	"    buffer on a timer: accepted, changes nothing.",
}

// DEBUG SLEEP seconds | SET-ACTIVE-EXPIRE 0|1 | DIGEST | DIGEST-VALUE key...
// | OBJECT key | POPULATE count [prefix [size]] | RELOAD [MERGE] [NOFLUSH] [NOSAVE]
// | PROTOCOL type | ERROR msg | LOG msg | HELP
//
// As Redis's debugCommand, a subcommand with the wrong number of
// arguments is a syntax error.
func (s *Server) cmdDebug(c *engine.Ctx) {
	me := cl(c)
	if !s.debugAllowed(me) {
		c.W.WriteError(errDebugNotAllowed)
		return
	}
	sub := c.Args[1]
	switch {
	case len(c.Args) == 2 && engine.EqFold(sub, "help"):
		c.W.WriteArray(len(debugHelp) + 3)
		c.W.WriteStatus(upper(c.Args[0]) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
		for _, l := range debugHelp {
			c.W.WriteStatus(l)
		}
		c.W.WriteStatus("HELP")
		c.W.WriteStatus("    Prints this help.")
	case len(c.Args) == 3 && engine.EqFold(sub, "sleep"):
		if !s.debugSleep(me, sleepMicros(strtod(c.Args[2]))) {
			me.closeNow = true // the server closed (or the client was killed) mid-sleep
			return
		}
		c.W.WriteStatus("OK")
	case len(c.Args) == 2 && engine.EqFold(sub, "config-rewrite-force-all"):
		if s.cfg.ConfigFile == "" {
			// Redis's rewriteConfig opens a NULL path: EFAULT
			c.W.WriteError("ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address")
			return
		}
		if err := s.rewriteConfigFile(true); err != nil {
			s.log.Warn("DEBUG CONFIG-REWRITE-FORCE-ALL failed", "err", err)
			c.W.WriteError("ERR CONFIG-REWRITE-FORCE-ALL failed: " + errText(err))
			return
		}
		c.W.WriteStatus("OK")
	case len(c.Args) == 3 && engine.EqFold(sub, "set-active-expire"):
		s.eng.SetActiveExpiry(atoi(c.Args[2]) != 0)
		s.fx.notify()
		s.eng.Kick()
		c.W.WriteStatus("OK")
	case len(c.Args) == 2 && engine.EqFold(sub, "digest"):
		s.eng.WithKeyspace(c, engine.DebugDigest)
	case engine.EqFold(sub, "digest-value"):
		s.eng.WithKeyspace(c, engine.DebugDigestValue)
	case len(c.Args) >= 3 && len(c.Args) <= 5 && engine.EqFold(sub, "populate"):
		s.eng.WithKeyspace(c, engine.DebugPopulate)
	case engine.EqFold(sub, "reload"):
		s.eng.WithKeyspace(c, engine.DebugReload)
	case len(c.Args) == 3 && engine.EqFold(sub, "object"):
		s.eng.WithKeyspace(c, engine.DebugObject)
	case len(c.Args) == 3 && engine.EqFold(sub, "quicklist-packed-threshold"):
		if n, ok := memToULL(string(c.Args[2])); !ok || !s.eng.SetQuicklistPackedThreshold(n) {
			c.W.WriteError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
			return
		}
		c.W.WriteStatus("OK")
	case len(c.Args) == 2 && engine.EqFold(sub, "client-eviction"):
		if s.evict.limit.Load() == 0 {
			c.W.WriteError("ERR maxmemory-clients is disabled.")
			return
		}
		c.W.WriteVerbatim("txt", s.evictionBuckets())
	case len(c.Args) == 3 && engine.EqFold(sub, "pause-cron"):
		s.cronPaused.Store(atoi(c.Args[2]) != 0)
		c.W.WriteStatus("OK")
	case len(c.Args) == 4 && engine.EqFold(sub, "replybuffer"):
		debugReplyBuffer(c)
	case len(c.Args) == 3 && engine.EqFold(sub, "protocol"):
		debugProtocol(c)
	case len(c.Args) == 3 && engine.EqFold(sub, "error"):
		// written as it is, not as an error reply: Redis's addReplySds,
		// which no error statistic counts
		msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(string(c.Args[2]))
		rawReply(c).raw([]byte("-" + msg + "\r\n"))
	case len(c.Args) == 3 && engine.EqFold(sub, "log"):
		s.log.Warn("DEBUG LOG: " + string(c.Args[2]))
		c.W.WriteStatus("OK")
	default:
		c.W.WriteError(errSubcommandSyntax(c.Args))
	}
}

// debugReplyBuffer is DEBUG REPLYBUFFER PEAK-RESET-TIME never|reset|ms |
// RESIZING 0|1, checked as Redis checks it. Redis's reply buffers track
// their peak and shrink on a timer; tumbler's do neither, so there is
// nothing to set.
func debugReplyBuffer(c *engine.Ctx) {
	switch what, v := c.Args[2], c.Args[3]; {
	case engine.EqFold(what, "peak-reset-time"):
		if !engine.EqFold(v, "never") && !engine.EqFold(v, "reset") {
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				c.W.WriteError(engine.ErrNotInteger)
				return
			}
		}
	case engine.EqFold(what, "resizing"):
	default:
		c.W.WriteError(errSubcommandSyntax(c.Args))
		return
	}
	c.W.WriteStatus("OK")
}

// rawReplier is what DEBUG PROTOCOL and DEBUG ERROR write beyond
// engine.Writer: a connection's respWriter (or the discardWriter of a
// client with replies off).
type rawReplier interface {
	raw(p []byte)
	header(prefix byte, n int)
}

func rawReply(c *engine.Ctx) rawReplier {
	if w, ok := engine.Unwrap(c.W).(rawReplier); ok {
		return w
	}
	return discardWriter{} // a writer of the engine's own (none calls DEBUG)
}

// debugProtocol is DEBUG PROTOCOL type: a reply of each RESP3 type, as
// Redis writes them (RESP2 gets each type's RESP2 form; an attribute is
// left out, and a push refused).
func debugProtocol(c *engine.Ctx) {
	w := c.W
	switch engine.LowerC(c.Args[2]) {
	case "string":
		w.WriteBulkString("Hello World")
	case "integer":
		w.WriteInt(12345)
	case "double":
		w.WriteDouble(3.141)
	case "bignum":
		w.WriteBigNumber("1234567999999999999999999999999999999")
	case "null":
		w.WriteNull()
	case "array":
		w.WriteArray(3)
		for j := range int64(3) {
			w.WriteInt(j)
		}
	case "set":
		w.WriteSet(3)
		for j := range int64(3) {
			w.WriteInt(j)
		}
	case "map":
		w.WriteMap(3)
		for j := range int64(3) {
			w.WriteInt(j)
			w.WriteBool(j == 1)
		}
	case "attrib":
		if w.Proto() >= 3 {
			rawReply(c).header('|', 1)
			w.WriteBulkString("key-popularity")
			w.WriteArray(2)
			w.WriteBulkString("key:123")
			w.WriteInt(90)
		}
		// an attribute is not a reply: a well-formed one follows it
		w.WriteBulkString("Some real reply following the attribute")
	case "push":
		if w.Proto() < 3 {
			w.WriteError("ERR RESP2 is not supported by this command")
			return
		}
		rawReply(c).header('>', 2)
		w.WriteBulkString("server-cpu-usage")
		w.WriteInt(42)
		// a push is not a reply either
		w.WriteBulkString("Some real reply following the push reply")
	case "true":
		w.WriteBool(true)
	case "false":
		w.WriteBool(false)
	case "verbatim":
		w.WriteVerbatim("txt", "This is a verbatim\nstring")
	default:
		w.WriteError("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// sleepMicros is the sleep DEBUG SLEEP secs asks for, in microseconds,
// as Redis computes it: secs*1e6 converted to a C long long. A value that
// does not fit (inf, nan, 1e13) converts to LLONG_MIN on x86-64, a
// negative sleep that nanosleep refuses, so Redis answers at once.
func sleepMicros(secs float64) int64 {
	u := secs * 1e6
	if !(u >= math.MinInt64 && u < math.MaxInt64) {
		return math.MinInt64
	}
	return int64(u)
}

// debugSleep stalls the whole server for usec microseconds of real time,
// as Redis sleeping in its main thread does: the caller gets its reply
// after the sleep, and every command arriving meanwhile waits for it.
// Close (or killing the caller) cuts it short; it then reports false.
func (s *Server) debugSleep(me *client, usec int64) bool {
	if usec <= 0 {
		return true
	}
	d := time.Duration(min(usec, math.MaxInt64/1000/2) * 1000)
	s.fx.pmu.Lock()
	s.fx.sleeps++
	s.fx.anyPause.Store(true)
	s.fx.pmu.Unlock()
	defer func() {
		s.fx.pmu.Lock()
		s.fx.sleeps--
		s.fx.notifyLocked()
		s.fx.pmu.Unlock()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
	case <-me.fx.killed:
	}
	return false
}

// strtod parses the longest prefix of b that is a number, as C's strtod
// does (0 when there is none).
func strtod(b []byte) float64 {
	str := strings.TrimLeft(string(b), " \t\n\v\f\r")
	if len(str) > 64 {
		str = str[:64]
	}
	for n := len(str); n > 0; n-- {
		if f, err := strconv.ParseFloat(str[:n], 64); err == nil {
			return f
		} else if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f
		}
	}
	return 0
}

// atoi parses a leading integer as C's atoi does (0 when there is none).
func atoi(b []byte) int64 {
	str := strings.TrimLeft(string(b), " \t\n\v\f\r")
	i := 0
	if i < len(str) && (str[i] == '+' || str[i] == '-') {
		i++
	}
	for i < len(str) && str[i] >= '0' && str[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(str[:i], 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return n // saturated, and non-zero
		}
		return 0
	}
	return n
}

// ---- active expiry switches ----

// expiryHeldLocked reports whether active expiry must hold still, and
// until when (0: until notified): DEBUG SET-ACTIVE-EXPIRE 0 holds it, and
// so does any CLIENT PAUSE, as in Redis, and a stalled server (DEBUG
// SLEEP, Pause), which does nothing at all. Requires s.fx.pmu.
func (s *Server) expiryHeldLocked(now int64) (until int64, held bool) {
	f := &s.fx
	if !s.eng.ActiveExpiry() {
		return 0, true
	}
	if until, stalled := f.stalledLocked(now); stalled {
		return until, true
	}
	if f.cpUntil != 0 && now < f.cpUntil {
		return f.cpUntil, true
	}
	return 0, false
}

// holdActiveExpiry parks the active expiry loop while it must hold still.
// It reports false when the server closes.
func (s *Server) holdActiveExpiry() bool {
	if s.eng.ActiveExpiry() && !s.fx.anyPause.Load() {
		return true
	}
	return s.waitWhile(func(now int64) (int64, bool) {
		until, held := s.expiryHeldLocked(now)
		s.fx.expiryParked = held
		return until, held
	}, nil, nil)
}

// activeExpiryParked reports whether the active expiry loop is parked.
func (s *Server) activeExpiryParked() bool {
	s.fx.pmu.Lock()
	defer s.fx.pmu.Unlock()
	return s.fx.expiryParked
}

// reclaimDue deletes every key past its deadline now, unless active
// expiry is held (Advance calls it, so that a manual clock's move is
// complete when Advance returns).
func (s *Server) reclaimDue() {
	s.fx.pmu.Lock()
	_, held := s.expiryHeldLocked(s.eng.Now())
	s.fx.pmu.Unlock()
	if held {
		return
	}
	const batch = 256
	for {
		if n, _, _ := s.eng.ReclaimDue(batch); n < batch {
			return
		}
	}
}
