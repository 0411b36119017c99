package server

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"

	"github.com/tumblerdb/tumbler/engine"
)

// This file is the ACL command (Redis 7.0's aclCommand, src/acl.c): the
// users and their rules live in the engine (engine/acl.go); here are the
// parts that need connections: disconnecting the clients of deleted
// users, and of pub/sub clients whose channels were revoked.

// ACL error texts (src/acl.c).
const (
	errACLNoFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
	errACLSave   = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"
	errGenPass   = "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
)

// registerAuthCommands adds ACL and its subcommands (flags and arity as
// Redis 7.0's COMMAND INFO).
func (s *Server) registerAuthCommands() {
	const f = engine.FlagNoKeys | engine.FlagNoScript | engine.FlagLoading | engine.FlagStale
	const adm = f | engine.FlagAdmin
	s.eng.Register(&engine.Command{Name: "acl", Arity: -2, Flags: engine.FlagNoKeys, Group: "server", Subs: map[string]*engine.Command{
		"cat":     {Arity: -2, Flags: f, Fn: s.cmdACLCat},
		"deluser": {Arity: -3, Flags: adm, Fn: s.cmdACLDelUser},
		"dryrun":  {Arity: -4, Flags: adm, Fn: s.cmdACLDryRun},
		"genpass": {Arity: -2, Flags: f, Fn: cmdACLGenPass},
		"getuser": {Arity: 3, Flags: adm, Fn: s.cmdACLGetUser},
		"help":    engine.HelpCommand(engine.FlagNoKeys, engine.ACLHelp),
		"list":    {Arity: 2, Flags: adm, Fn: s.cmdACLList},
		"load":    {Arity: 2, Flags: adm, Fn: s.cmdACLLoad},
		"log":     {Arity: -2, Flags: adm, Fn: s.cmdACLLog},
		"save":    {Arity: 2, Flags: adm, Fn: s.cmdACLSave},
		"setuser": {Arity: -3, Flags: adm, Fn: s.cmdACLSetUser},
		"users":   {Arity: 2, Flags: adm, Fn: s.cmdACLUsers},
		"whoami":  {Arity: 2, Flags: f, Fn: func(c *engine.Ctx) { c.W.WriteBulkString(userOf(cl(c))) }},
	}})
	s.eng.ACL().ClientInfo = func(ec *engine.Client) string {
		if me, ok := ec.Conn.(*client); ok {
			return s.clientLine(me, true) // (the client whose command was refused, on its goroutine)
		}
		return ""
	}
}

// ACL SETUSER username [rule [rule ...]]
func (s *Server) cmdACLSetUser(c *engine.Ctx) {
	name := string(c.Args[2])
	if engine.HasSpace(name) {
		c.W.WriteError("ERR Usernames can't contain spaces or null characters")
		return
	}
	ops := make([]string, len(c.Args)-3)
	for i, a := range c.Args[3:] {
		ops[i] = string(a)
	}
	acl := s.eng.ACL()
	before := acl.User(name)
	if msg, _ := acl.SetUser(name, ops); msg != "" {
		c.W.WriteError(msg)
		return
	}
	if before != nil && !before.AllChannels() {
		s.killPubSubRevoked(before)
	}
	c.W.WriteStatus("OK")
}

// killPubSubRevoked disconnects u's pub/sub clients subscribed to a
// channel or pattern u may no longer use, as ACLKillPubsubClientsIfNeeded
// (which skips the scan when no permission was taken away; a scan that
// finds nothing to close is the same).
func (s *Server) killPubSubRevoked(u *engine.ACLUser) {
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		c.mu.Lock()
		mine := c.ACL == u
		c.mu.Unlock()
		if !mine {
			return true
		}
		kill := false
		s.ps.mu.RLock()
		for kind := range c.ps.subs {
			for ch := range c.ps.subs[kind] {
				if !u.CheckChannel([]byte(ch), psKind(kind) == kindPattern) {
					kill = true
				}
			}
		}
		s.ps.mu.RUnlock()
		if kill {
			s.kill(c)
		}
		return true
	})
}

// ACL DELUSER username [username ...]
func (s *Server) cmdACLDelUser(c *engine.Ctx) {
	names := make([]string, len(c.Args)-2)
	for i, a := range c.Args[2:] {
		names[i] = string(a)
	}
	gone, msg := s.eng.ACL().DelUser(names)
	if msg != "" {
		c.W.WriteError(msg)
		return
	}
	s.disconnectUsers(cl(c), gone)
	c.W.WriteInt(int64(len(gone)))
}

// disconnectUsers closes the connections authenticated as the users
// gone; me, when among them, closes after its reply (ACLFreeUserAndKillClients).
func (s *Server) disconnectUsers(me *client, gone []*engine.ACLUser) {
	if len(gone) == 0 {
		return
	}
	isGone := map[*engine.ACLUser]bool{}
	for _, u := range gone {
		isGone[u] = true
	}
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		c.mu.Lock()
		hit := c.ACL != nil && isGone[c.ACL]
		c.mu.Unlock()
		if !hit {
			return true
		}
		if c == me {
			me.closeNow = true
		} else {
			s.kill(c)
		}
		return true
	})
}

// ACL GETUSER username
func (s *Server) cmdACLGetUser(c *engine.Ctx) {
	u := s.eng.ACL().User(string(c.Args[2]))
	if u == nil {
		c.W.WriteNull()
		return
	}
	d := u.Snapshot()
	w := c.W
	w.WriteMap(6)
	w.WriteBulkString("flags")
	w.WriteSet(len(d.Flags))
	for _, f := range d.Flags {
		w.WriteBulkString(f)
	}
	w.WriteBulkString("passwords")
	w.WriteArray(len(d.Passwords))
	for _, p := range d.Passwords {
		w.WriteBulkString(p)
	}
	writeSelector := func(sd engine.SelectorDesc) {
		w.WriteBulkString("commands")
		w.WriteBulkString(sd.Commands)
		w.WriteBulkString("keys")
		w.WriteBulkString(sd.Keys)
		w.WriteBulkString("channels")
		w.WriteBulkString(sd.Channels)
	}
	writeSelector(d.Selectors[0])
	w.WriteBulkString("selectors")
	w.WriteArray(len(d.Selectors) - 1)
	for _, sd := range d.Selectors[1:] {
		w.WriteMap(3)
		writeSelector(sd)
	}
}

// ACL LIST
func (s *Server) cmdACLList(c *engine.Ctx) {
	users := s.eng.ACL().Users()
	c.W.WriteArray(len(users))
	for _, u := range users {
		c.W.WriteBulkString("user " + u.Name + " " + u.Snapshot().Rules)
	}
}

// ACL USERS
func (s *Server) cmdACLUsers(c *engine.Ctx) {
	users := s.eng.ACL().Users()
	c.W.WriteArray(len(users))
	for _, u := range users {
		c.W.WriteBulkString(u.Name)
	}
}

// ACL CAT [category]
func (s *Server) cmdACLCat(c *engine.Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(engine.ErrSubcommandSyntax(c.Args))
		return
	}
	if len(c.Args) == 2 {
		cats := engine.ACLCategories()
		c.W.WriteArray(len(cats))
		for _, n := range cats {
			c.W.WriteBulkString(n)
		}
		return
	}
	names, ok := s.eng.CommandsInCategory(string(c.Args[2]))
	if !ok {
		cat := engine.CStr(c.Args[2]) // %.128s
		if len(cat) > 128 {
			cat = cat[:128]
		}
		c.W.WriteError("ERR Unknown category '" + string(cat) + "'")
		return
	}
	c.W.WriteArray(len(names))
	for _, n := range names {
		c.W.WriteBulkString(n)
	}
}

// ACL GENPASS [bits]
func cmdACLGenPass(c *engine.Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(engine.ErrSubcommandSyntax(c.Args))
		return
	}
	bits := int64(256)
	if len(c.Args) == 3 {
		n, ok := engine.ParseInt(c.Args[2])
		if !ok {
			c.W.WriteError(engine.ErrNotInteger)
			return
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		c.W.WriteError(errGenPass)
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	_, _ = rand.Read(buf)
	c.W.WriteBulkString(hex.EncodeToString(buf)[:chars])
}

// ACL LOG [count | RESET]
func (s *Server) cmdACLLog(c *engine.Ctx) {
	if len(c.Args) > 3 {
		c.W.WriteError(engine.ErrSubcommandSyntax(c.Args))
		return
	}
	count := int64(10)
	if len(c.Args) == 3 {
		if engine.EqFold(c.Args[2], "reset") {
			s.eng.ACL().ResetLog()
			c.W.WriteStatus("OK")
			return
		}
		n, ok := engine.ParseInt(c.Args[2])
		if !ok {
			c.W.WriteError(engine.ErrNotInteger)
			return
		}
		count = max(n, 0)
	}
	entries := s.eng.ACL().Log(int(min(count, 1<<30)))
	now := s.nowUnixMilli()
	w := c.W
	w.WriteArray(len(entries))
	for _, le := range entries {
		w.WriteMap(7)
		w.WriteBulkString("count")
		w.WriteInt(le.Count)
		w.WriteBulkString("reason")
		w.WriteBulkString(le.Reason)
		w.WriteBulkString("context")
		w.WriteBulkString(le.Context)
		w.WriteBulkString("object")
		w.WriteBulkString(le.Object)
		w.WriteBulkString("username")
		w.WriteBulkString(le.Username)
		w.WriteBulkString("age-seconds")
		w.WriteDouble(float64(now-le.Ctime) / 1000)
		w.WriteBulkString("client-info")
		w.WriteBulkString(le.Info)
	}
}

// ACL DRYRUN username command [arg ...]
func (s *Server) cmdACLDryRun(c *engine.Ctx) {
	u := s.eng.ACL().User(string(c.Args[2]))
	if u == nil {
		c.W.WriteError("ERR User '" + string(c.Args[2]) + "' not found")
		return
	}
	args := c.Args[3:]
	cmd := s.eng.LookupArgs(args)
	if cmd == nil {
		c.W.WriteError("ERR Command '" + string(args[0]) + "' not found")
		return
	}
	if !cmd.ArityOK(len(args)) {
		c.W.WriteError("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	if msg := s.eng.DryRun(u, cmd, args); msg != "" {
		c.W.WriteBulkString(msg)
		return
	}
	c.W.WriteStatus("OK")
}

// ACL LOAD
func (s *Server) cmdACLLoad(c *engine.Ctx) {
	if s.live().ACLFile == "" {
		c.W.WriteError(errACLNoFile)
		return
	}
	if msg := s.loadACLFile(cl(c)); msg != "" {
		c.W.WriteError("ERR " + msg)
		return
	}
	c.W.WriteStatus("OK")
}

// ACL SAVE
func (s *Server) cmdACLSave(c *engine.Ctx) {
	if s.live().ACLFile == "" {
		c.W.WriteError(errACLNoFile)
		return
	}
	if err := s.saveACLFile(); err != nil {
		s.log.Warn("ACL SAVE failed", "err", err)
		c.W.WriteError(errACLSave)
		return
	}
	c.W.WriteStatus("OK")
}

// loadACLFile installs the users of the ACL file (ACL LOAD, start-up),
// disconnecting the clients of the users it replaces; me, when one of
// them, closes after its reply. It returns Redis's error text.
func (s *Server) loadACLFile(me *client) string {
	path := s.live().ACLFile
	data, err := os.ReadFile(s.live().Path(path)) // relative to dir (Config.Path)
	if err != nil {
		return "Error loading ACLs, opening file '" + path + "': " + errText(err)
	}
	gone, msg := s.eng.ACL().LoadFile(path, string(data))
	if msg != "" {
		return msg
	}
	s.disconnectUsers(me, gone)
	return ""
}

// saveACLFile writes the users to the ACL file (ACL SAVE), through a
// temporary file renamed over it.
func (s *Server) saveACLFile() error {
	return writeFileAtomic(s.live().Path(s.live().ACLFile), []byte(s.eng.ACL().FileText()))
}

// usersOf returns cfg's users as names and rule lists: a User with
// Rules uses them; one without is the full-access user its fields
// describe.
func usersOf(cfg *Config) (names []string, rules [][]string) {
	for _, u := range cfg.Users {
		names = append(names, u.Name)
		if u.Rules != nil {
			rules = append(rules, u.Rules)
			continue
		}
		r := []string{"off"}
		if !u.Off {
			r[0] = "on"
		}
		if u.NoPass {
			r = append(r, "nopass")
		}
		for _, p := range u.Passwords {
			r = append(r, ">"+p)
		}
		for _, h := range u.PasswordHashes {
			r = append(r, "#"+h)
		}
		rules = append(rules, append(r, "~*", "&*", "+@all"))
	}
	return names, rules
}

// loadUsers installs the users of cfg (start-up, Restart): requirepass
// gives the default user its password, a "user default" line then
// replaces it. It returns Redis's start-up error for a bad rule.
func (s *Server) loadUsers(cfg *Config) string {
	acl := s.eng.ACL()
	if cfg.ACLFile != "" {
		if msg := s.loadACLFile(nil); msg != "" {
			return "Aborting Redis startup because of ACL errors: " + msg
		}
		return ""
	}
	for _, u := range cfg.Users {
		if u.Rules != nil && (u.Off || u.NoPass || len(u.Passwords) > 0 || len(u.PasswordHashes) > 0) {
			return "User " + u.Name + ": a User with Rules takes its password and on/off from them (\">pw\", \"on\"): its Off, NoPass, Passwords and PasswordHashes must be empty"
		}
	}
	names, rules := usersOf(cfg)
	gone, bad := acl.Replace(names, rules, cfg.RequirePass)
	if bad != nil {
		return "Error loading ACL rule '" + bad.Rule + "' for the user named '" + bad.User + "': " + bad.Reason
	}
	s.disconnectUsers(nil, gone)
	return ""
}

// nowUnixMilli is the wall clock in ms (ACL LOG's ages).
func (s *Server) nowUnixMilli() int64 { return s.eng.Clock().Wall().UnixMilli() }

// aclConfigUsers returns the live users as Config users (CONFIG
// REWRITE writes them as user lines).
func (s *Server) aclConfigUsers() []User {
	var out []User
	for _, u := range s.eng.ACL().Users() {
		out = append(out, User{Name: u.Name, Rules: strings.Fields(u.Snapshot().Rules)})
	}
	return out
}
