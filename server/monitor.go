package server

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/tumblerdb/tumbler/engine"
)

// MONITOR and the parts of CLIENT LIST that show what connections do.

func (s *Server) registerMonitor() {
	s.eng.Register(&engine.Command{Name: "monitor", Arity: 1,
		Flags: engine.FlagNoKeys | engine.FlagNoScript | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale,
		Group: "server", Fn: s.cmdMonitor})
}

// MONITOR
func (s *Server) cmdMonitor(c *engine.Ctx) {
	if c.DenyBlocking() {
		// inside EXEC a client expects a reply a command (monitorCommand)
		c.W.WriteError("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	me := cl(c)
	if me.fx.monitor.Load() {
		return // Redis ignores a second MONITOR without a reply
	}
	s.enablePush(me)
	c.W.WriteStatus("OK") // before the first line fed to it
	me.fx.monitor.Store(true)
	s.fx.mmu.Lock()
	var list []*client
	if p := s.fx.monitors.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, me)
	s.fx.monitors.Store(&list)
	s.fx.mmu.Unlock()
}

// removeMonitor takes a connection out of MONITOR mode (RESET, or the
// connection ending).
func (s *Server) removeMonitor(c *client) {
	if !c.fx.monitor.Swap(false) {
		return
	}
	s.fx.mmu.Lock()
	defer s.fx.mmu.Unlock()
	p := s.fx.monitors.Load()
	if p == nil {
		return
	}
	list := make([]*client, 0, len(*p))
	for _, m := range *p {
		if m != c {
			list = append(list, m)
		}
	}
	s.fx.monitors.Store(&list)
}

func (s *Server) monitoring() bool {
	p := s.fx.monitors.Load()
	return p != nil && len(*p) > 0
}

// feedMonitors sends one command to every MONITOR client, in Redis's
// format: +<unix time with µs> [<db> <client address>|lua] "arg" "arg"...
// from is nil for a command run by a script. It may be called under the
// keyspace lock.
func (s *Server) feedMonitors(from *client, db int, args [][]byte) {
	p := s.fx.monitors.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	wall := s.cfg.Clock.Wall()
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, wall.Unix(), 10)
	b = append(b, '.')
	us := strconv.Itoa(wall.Nanosecond() / 1000)
	b = append(b, "000000"[len(us):]...)
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	switch {
	case from == nil:
		b = append(b, "lua"...)
	case from.unixPath != "":
		b = append(b, "unix:"...)
		b = append(b, from.unixPath...)
	default:
		b = append(b, from.addr...)
	}
	b = append(b, ']')
	redact := redacted(s.cmdName(args[0]), args)
	for i, a := range args {
		b = append(b, ' ')
		if redact != nil && redact[i] {
			a = []byte("(redacted)")
		}
		b = appendRepr(b, a)
	}
	line := string(b)
	for _, m := range *p {
		m.push(func(w *respWriter) { w.WriteStatus(line) })
	}
}

// redacted marks the arguments Redis replaces with "(redacted)" for
// MONITOR: AUTH's password (and user), HELLO's AUTH pair, MIGRATE's AUTH
// password and AUTH2 pair (engine.MigrateSecrets). name is the
// command's own name (Server.cmdName).
func redacted(name []byte, args [][]byte) []bool {
	switch {
	case engine.EqFold(name, "auth"):
		if len(args) > 3 {
			return nil // a syntax error, shown as sent
		}
		r := make([]bool, len(args))
		for i := 1; i < len(args); i++ {
			r[i] = true
		}
		return r
	case engine.EqFold(name, "hello"):
		if len(args) >= 2 {
			if v, ok := engine.ParseInt(args[1]); !ok || v < 2 || v > 3 {
				return nil
			}
		}
		var r []bool
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case engine.EqFold(args[j], "auth") && more >= 2:
				if r == nil {
					r = make([]bool, len(args))
				}
				r[j+1], r[j+2] = true, true
				j += 2
			case engine.EqFold(args[j], "setname") && more >= 1 && validName(args[j+1]):
				j++
			default:
				return r
			}
		}
		return r
	case engine.EqFold(name, "migrate"):
		pos := engine.MigrateSecrets(args)
		if pos == nil {
			return nil
		}
		r := make([]bool, len(args))
		for _, i := range pos {
			r[i] = true
		}
		return r
	}
	return nil
}

// appendRepr quotes b as Redis's sdscatrepr does.
func appendRepr(out, b []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, ch := range b {
		switch ch {
		case '\\', '"':
			out = append(out, '\\', ch)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		case '\a':
			out = append(out, '\\', 'a')
		case '\b':
			out = append(out, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				out = append(out, ch)
			} else {
				out = append(out, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(out, '"')
}

// redisAdmin names the commands Redis flags admin (or that it never
// shows to MONITOR) that tumbler may not flag so itself: MONITOR never
// shows them.
var redisAdmin = map[string]bool{
	"config|get": true, "config|set": true, "config|resetstat": true, "config|rewrite": true,
	"debug": true, "monitor": true, "shutdown": true, "save": true, "bgsave": true,
	"bgrewriteaof": true, "replicaof": true, "slaveof": true, "failover": true, "sync": true,
	"psync": true, "replconf": true, "pfdebug": true, "pfselftest": true,
	"client|kill": true, "client|list": true, "client|no-evict": true, "client|pause": true,
	"client|unpause": true, "client|unblock": true,
	"acl|deluser": true, "acl|dryrun": true, "acl|getuser": true, "acl|list": true, "acl|load": true,
	"acl|log": true, "acl|save": true, "acl|setuser": true, "acl|users": true,
	"slowlog|get": true, "slowlog|len": true, "slowlog|reset": true,
	"latency|doctor": true, "latency|graph": true, "latency|histogram": true, "latency|history": true,
	"latency|latest": true, "latency|reset": true,
	"module|list": true, "module|load": true, "module|loadex": true, "module|unload": true,
	// (not QUIT: Redis 7.0 runs it as a command, quitCommand, through call(),
	// which shows it; only Redis 6.2 and older answered it before)
}

// skipMonitor reports whether MONITOR never shows cmd.
func skipMonitor(cmd *engine.Command) bool {
	return cmd.Flags&engine.FlagAdmin != 0 || redisAdmin[cmd.Name]
}

// feedsBefore reports whether cmd is shown before it runs (scripts, so
// their commands come after them), not after.
func feedsBefore(cmd *engine.Command) bool {
	switch cmd.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// ---- CLIENT LIST ----

// clientFlags is CLIENT LIST's flags field.
func (s *Server) clientFlags(c *client) string {
	if c.fx.monitor.Load() {
		return "O"
	}
	flags, _, _, _, _ := s.clientListFields(c) // pub/sub, tracking, probes (pubsub.go)
	return flags
}

// clientType is the type CLIENT LIST TYPE and CLIENT KILL TYPE match.
func (s *Server) clientType(c *client) string {
	if _, sub, psub, ssub, _ := s.clientListFields(c); sub+psub+ssub > 0 {
		return "pubsub"
	}
	return "normal"
}

// clientCmd is CLIENT LIST's cmd field: the last command's full name.
func clientCmd(c *client) string {
	if cmd := c.fx.lastCmd.Load(); cmd != nil {
		return cmd.Name
	}
	return "NULL"
}

// clientAgeIdle returns CLIENT LIST's age and idle fields, in seconds of
// the server's clock.
func (s *Server) clientAgeIdle(c *client) (age, idle int64) {
	now := s.eng.Now()
	return max(now-c.fx.created, 0) / 1000, max(now-c.fx.last.Load(), 0) / 1000
}

// clientsByID returns the connections in the order they were made (their
// IDs), the order of Redis's client list.
func (s *Server) clientsByID() []*client {
	var all []*client
	s.clients.Range(func(k, _ any) bool {
		all = append(all, k.(*client))
		return true
	})
	slices.SortFunc(all, func(a, b *client) int { return cmp.Compare(a.ID, b.ID) })
	return all
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func (s *Server) clientList(c *engine.Ctx) {
	var b strings.Builder
	var me *client // the asking connection's line is exact (inputMem)
	if c.Client != nil {
		me, _ = c.Client.Conn.(*client)
	}
	switch {
	case len(c.Args) == 4 && engine.EqFold(c.Args[2], "type"):
		typ, ok := clientTypeByName(c.Args[3])
		if !ok {
			c.W.WriteError("ERR Unknown client type '" + string(engine.CStr(c.Args[3])) + "'") // %s
			return
		}
		for _, o := range s.clientsByID() {
			if s.clientType(o) == typ {
				b.WriteString(s.clientLine(o, o == me))
				b.WriteByte('\n')
			}
		}
	case len(c.Args) > 3 && engine.EqFold(c.Args[2], "id"):
		ids := make([]int64, 0, len(c.Args)-3)
		for _, a := range c.Args[3:] {
			id, ok := engine.ParseInt(a)
			if !ok {
				c.W.WriteError("ERR Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			s.clients.Range(func(k, _ any) bool {
				if o := k.(*client); o.ID == id {
					b.WriteString(s.clientLine(o, o == me))
					b.WriteByte('\n')
					return false
				}
				return true
			})
		}
	case len(c.Args) != 2:
		c.W.WriteError(engine.ErrSyntax)
		return
	default:
		for _, o := range s.clientsByID() {
			b.WriteString(s.clientLine(o, o == me))
			b.WriteByte('\n')
		}
	}
	c.W.WriteVerbatim("txt", b.String())
}
