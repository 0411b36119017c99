package server

import (
	"strconv"

	"github.com/tumblerdb/tumbler/engine"
)

// registerConnCommands adds the connection-level commands, which need the
// server's per-connection state, to the engine's command table.
func (s *Server) registerConnCommands() {
	const conn = engine.FlagNoKeys | engine.FlagNoScript
	s.eng.Register(
		&engine.Command{Name: "hello", Arity: -1, Flags: conn | engine.FlagFast | engine.FlagNoAuth | engine.FlagLoading | engine.FlagStale | engine.FlagAllowBusy, Group: "connection", Fn: s.cmdHello},
		&engine.Command{Name: "auth", Arity: -2, Flags: conn | engine.FlagFast | engine.FlagNoAuth | engine.FlagLoading | engine.FlagStale | engine.FlagAllowBusy, Group: "connection", Fn: s.cmdAuth},
		&engine.Command{Name: "quit", Arity: -1, Flags: conn | engine.FlagFast | engine.FlagNoAuth | engine.FlagLoading | engine.FlagStale | engine.FlagAllowBusy, Group: "connection", Fn: s.cmdQuit},
		&engine.Command{Name: "reset", Arity: 1, Flags: conn | engine.FlagFast | engine.FlagNoAuth | engine.FlagLoading | engine.FlagStale | engine.FlagAllowBusy, Group: "connection", Fn: s.cmdReset},
		&engine.Command{Name: "client", Arity: -2, Flags: engine.FlagNoKeys, Group: "connection", Subs: map[string]*engine.Command{
			"help":    engine.HelpCommand(engine.FlagNoKeys, engine.ClientHelp),
			"setname": {Arity: 3, Flags: conn | engine.FlagLoading | engine.FlagStale, Fn: s.cmdClientSetName},
			"getname": {Arity: 2, Flags: conn | engine.FlagLoading | engine.FlagStale, Fn: s.cmdClientGetName},
			"setinfo": {Arity: 4, Flags: conn | engine.FlagLoading | engine.FlagStale, Fn: s.cmdClientSetInfo},
			"id":      {Arity: 2, Flags: conn | engine.FlagLoading | engine.FlagStale, Fn: func(c *engine.Ctx) { c.W.WriteInt(c.Client.ID) }},
			"info":    {Arity: 2, Flags: conn | engine.FlagLoading | engine.FlagStale, Fn: s.cmdClientInfo},
			"list":    {Arity: -2, Flags: conn | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale, Fn: s.cmdClientList},
		}},
	)
}

func cl(c *engine.Ctx) *client { return c.Client.Conn.(*client) }

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func (s *Server) cmdHello(c *engine.Ctx) {
	me := cl(c)
	var ver int64
	next := 1
	if len(c.Args) >= 2 {
		v, ok := engine.ParseInt(c.Args[1])
		if !ok {
			c.W.WriteError(engine.ErrProtoNotInt)
			return
		}
		if v < 2 || v > 3 {
			c.W.WriteError(engine.ErrNoProto)
			return
		}
		ver = v
		next = 2
	}
	var user, pass, name []byte
	for j := next; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		opt := c.Args[j]
		switch {
		case engine.EqFold(opt, "auth") && more >= 2:
			user, pass = c.Args[j+1], c.Args[j+2]
			j += 2
		case engine.EqFold(opt, "setname") && more >= 1:
			name = c.Args[j+1]
			if !validName(name) {
				c.W.WriteError(engine.ErrClientName)
				return
			}
			j++
		default:
			c.W.WriteError("ERR Syntax error in HELLO option '" + string(opt) + "'")
			return
		}
	}
	if user != nil {
		u := s.authenticate(me, user, pass, c.Args[0]) // (auth.go)
		if u == nil {
			c.W.WriteError(engine.ErrWrongPass)
			return
		}
		me.mu.Lock()
		me.NeedsAuth = false
		me.User = u.Name
		me.ACL = u
		me.mu.Unlock()
	}
	if me.NeedsAuth {
		c.W.WriteError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	me.mu.Lock()
	if name != nil {
		me.Name = string(name)
	}
	if ver != 0 {
		me.setProto(int(ver))
	}
	me.mu.Unlock()
	w := c.W
	w.WriteMap(7)
	w.WriteBulkString("server")
	w.WriteBulkString("redis")
	w.WriteBulkString("version")
	w.WriteBulkString(engine.Version)
	w.WriteBulkString("proto")
	w.WriteInt(int64(me.w.proto))
	w.WriteBulkString("id")
	w.WriteInt(me.ID)
	w.WriteBulkString("mode")
	w.WriteBulkString("standalone")
	w.WriteBulkString("role")
	w.WriteBulkString("master")
	w.WriteBulkString("modules")
	w.WriteArray(0)
}

// AUTH [username] password
func (s *Server) cmdAuth(c *engine.Ctx) {
	me := cl(c)
	if len(c.Args) > 3 {
		c.W.WriteError(engine.ErrSyntax)
		return
	}
	user, pass := []byte("default"), c.Args[1]
	if len(c.Args) == 2 {
		if s.defaultNoPass() { // (auth.go)
			c.W.WriteError(engine.ErrAuthNoPassword)
			return
		}
	} else {
		user, pass = c.Args[1], c.Args[2]
	}
	u := s.authenticate(me, user, pass, c.Args[0]) // (auth.go)
	if u == nil {
		c.W.WriteError(engine.ErrWrongPass)
		return
	}
	me.mu.Lock()
	me.NeedsAuth = false
	me.User = u.Name
	me.ACL = u
	me.mu.Unlock()
	c.W.WriteStatus("OK")
}

// QUIT
func (s *Server) cmdQuit(c *engine.Ctx) {
	c.W.WriteStatus("OK")
	cl(c).closeNow = true
}

// RESET
func (s *Server) cmdReset(c *engine.Ctx) {
	me := cl(c)
	s.eng.DiscardTransaction(c.Client) // RESET ends MULTI and drops WATCHes (clearClientConnectionState)
	me.mu.Lock()
	me.setProto(2)
	me.Name = ""
	me.User = ""
	me.ACL = s.eng.ACL().Default()
	me.NeedsAuth = s.authRequired() // (auth.go)
	// CLIENT NO-TOUCH is Redis 7.2's, whose RESET clears it (7.2 clears
	// NO-EVICT too; 7.0's, whose NO-EVICT this is, keeps it)
	me.ps.noTouch, me.NoTouch = false, false
	me.mu.Unlock()
	c.Client.ResetDB()  // selectDb(c, 0)
	s.removeMonitor(me) // fixture: RESET leaves MONITOR mode (server/monitor.go)
	s.resetPubSub(me)   // leave subscribed mode, stop tracking (pubsub.go)
	// CLIENT REPLY OFF and a SKIP for the next command end, before the
	// reply (a RESET that SKIP itself silences stays silent)
	if me.reply.off {
		me.reply = replyMode{}
		me.w.WriteStatus("RESET") // c.W discards: it was chosen with OFF on
		return
	}
	me.reply.skipNext = false
	c.W.WriteStatus("RESET")
}

// validName reports whether a client name or attribute has only the
// characters Redis allows ('!' through '~').
func validName(b []byte) bool { return engine.ValidClientName(b) }

// CLIENT SETNAME connection-name
func (s *Server) cmdClientSetName(c *engine.Ctx) {
	if !validName(c.Args[2]) {
		c.W.WriteError(engine.ErrClientName)
		return
	}
	me := cl(c)
	me.mu.Lock()
	me.Name = string(c.Args[2])
	me.mu.Unlock()
	c.W.WriteStatus("OK")
}

// CLIENT GETNAME
func (s *Server) cmdClientGetName(c *engine.Ctx) {
	if n := cl(c).Name; n != "" {
		c.W.WriteBulkString(n)
	} else {
		c.W.WriteNull()
	}
}

// CLIENT SETINFO LIB-NAME libname | LIB-VER libver
func (s *Server) cmdClientSetInfo(c *engine.Ctx) {
	me := cl(c)
	attr := c.Args[2]
	var dst *string
	switch {
	case engine.EqFold(attr, "lib-name"):
		dst = &me.LibName
	case engine.EqFold(attr, "lib-ver"):
		dst = &me.LibVer
	default:
		c.W.WriteError("ERR Unrecognized option '" + string(attr) + "'")
		return
	}
	if !validName(c.Args[3]) {
		c.W.WriteError("ERR " + string(attr) + " cannot contain spaces, newlines or special characters.") // (as sent, as 7.2)
		return
	}
	me.mu.Lock()
	*dst = string(c.Args[3])
	me.mu.Unlock()
	c.W.WriteStatus("OK")
}

// clientLine describes a connection for CLIENT LIST / CLIENT INFO; it may
// be called from any connection's goroutine. self says whether it is me's
// own (running the command that asks).
func (s *Server) clientLine(me *client, self bool) string {
	age, idle := s.clientAgeIdle(me) // fixture: on the server's clock (server/monitor.go)
	omem := me.pendingOutput()
	qbuf, qfree, argv := me.inputMem(self)
	multiMem := me.MultiMem()
	me.mu.Lock()
	defer me.mu.Unlock()
	_, sub, psub, ssub, redir := s.clientListFields(me) // pub/sub, tracking, probes (pubsub.go)
	return "id=" + strconv.FormatInt(me.ID, 10) +
		" addr=" + me.addr +
		" laddr=" + me.laddr +
		" fd=" + strconv.Itoa(me.fd) + " name=" + me.Name +
		" age=" + strconv.FormatInt(age, 10) +
		" idle=" + strconv.FormatInt(idle, 10) + " flags=" + s.clientFlags(me) + // fixture: real idle and flags
		" db=" + strconv.Itoa(me.DB()) + " sub=" + strconv.Itoa(sub) + " psub=" + strconv.Itoa(psub) + " ssub=" + strconv.Itoa(ssub) +
		" multi=" + strconv.Itoa(me.MultiCount()) + " qbuf=" + strconv.Itoa(qbuf) + " qbuf-free=" + strconv.Itoa(qfree) + " argv-mem=" + strconv.Itoa(argv) +
		" multi-mem=" + strconv.FormatInt(multiMem, 10) + " rbs=0 rbp=0 obl=0 oll=0 omem=" + strconv.Itoa(omem) +
		" tot-mem=" + strconv.FormatInt(int64(qbuf+qfree+argv+omem)+multiMem+me.overhead(), 10) + " events=r cmd=" + clientCmd(me) + " user=" + userOf(me) +
		" redir=" + strconv.FormatInt(redir, 10) + " resp=" + strconv.Itoa(me.w.proto) +
		" lib-name=" + me.LibName + " lib-ver=" + me.LibVer
}

// inputMem returns CLIENT LIST's qbuf, qbuf-free and argv-mem. For the
// connection asking (self) they are exact, as Redis's: its batch's
// requests and what was read after them, the rest of the read buffer, and
// the arguments of the command running (EXEC's in a transaction). Another
// connection's reader belongs to its goroutine: what it published when it
// last waited for input stands in, which is what Redis shows of a client
// between commands: of a partial request, the bytes Redis would not have
// parsed yet as qbuf and its complete arguments as argv-mem
// (cmdReader.pskip); a client blocked (BLPOP) keeps its command's
// arguments, as in Redis.
func (c *client) inputMem(self bool) (qbuf, free, argv int) {
	if self && c.rd != nil {
		qbuf, free = c.rd.queryBuf()
		return qbuf + c.fc.held(), free, engine.ArgvLen(c.ctx.Args)
	}
	qbuf, free = unpackWaiting(c.waiting.Load())
	ahead, aheadFree := unpackWaiting(c.fc.aheadMem.Load()) // a read-ahead's, while it runs
	qbuf, free = qbuf+ahead, free+aheadFree
	if argv = int(c.blocked.Load()); argv == 0 {
		argv = int(c.waitArgv.Load())
	}
	return qbuf, free, argv
}

// pendingOutput is what CLIENT LIST reports as omem (and tot-mem): the
// bytes of replies and pushes not yet written, for a push-capable
// connection (pub/sub, tracking, MONITOR), whose output other goroutines
// fill and a slow reader lets grow. Another connection writes its replies
// after each batch, so it has none between commands (0); its buffer
// belongs to its goroutine and is not read here. Either has the output
// SetLatency delays (delayline.go).
func (c *client) pendingOutput() int {
	c.omu.Lock()
	defer c.omu.Unlock()
	if !c.w.shared { // (set under omu)
		return c.heldOut()
	}
	return c.w.size() + len(c.deferred) + c.ps.inflight + c.heldOut()
}

func userOf(me *client) string {
	if me.User == "" {
		return "default"
	}
	return me.User
}

// CLIENT INFO
func (s *Server) cmdClientInfo(c *engine.Ctx) {
	c.W.WriteVerbatim("txt", s.clientLine(cl(c), true)+"\n")
}

// CLIENT LIST [TYPE type] [ID id ...]
func (s *Server) cmdClientList(c *engine.Ctx) {
	s.clientList(c) // fixture: TYPE and ID filters (server/monitor.go)
}
