package server

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tumblerdb/tumbler/engine"
)

// Client-side caching: CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO and
// the invalidation messages, following Redis 7.2's src/tracking.c.
//
// The table maps each key a tracking client read to the IDs of those
// clients. A write to the key (engine key-modification hook, called under
// the keyspace lock, expiry included) sends each of them an invalidation
// and forgets the key; the client that wrote gets its own after its reply.
// BCAST clients instead register key prefixes: keys written under a prefix
// are gathered during a command and broadcast after it (Redis: before the
// event loop sleeps). FLUSHDB/FLUSHALL send every tracking client one
// invalidation with a null key list.
//
// Messages go to the client itself as RESP3 pushes [invalidate, keys], or
// to its REDIRECT client: as a push when that one speaks RESP3, as a
// message on __redis__:invalidate when it is a subscribed RESP2 client.
//
// Locking: the table's mu guards the table and every connection's
// trackState (except the CACHING flag, which only the connection's own
// goroutine touches). Lock order: keyspace lock, table, a connection's omu.

// trackTable is the server's tracking state.
type trackTable struct {
	mu       sync.Mutex
	nclients atomic.Int32                  // connections with tracking on
	keys     map[string]map[int64]struct{} // key -> IDs of clients that may cache it
	items    int                           // (key, client ID) pairs in keys
	byID     map[int64]*client             // tracking connections and redirect targets
	prefixes map[string]*bcastPrefix       // BCAST prefix -> subscribers and written keys
	dirty    atomic.Bool                   // some prefix has written keys to broadcast
	maxKeys  atomic.Int64                  // tracking-table-max-keys; 0: no limit
}

// bcastPrefix is one BCAST prefix: its clients, and the keys written since
// the last broadcast with the client that wrote each last (for NOLOOP).
type bcastPrefix struct {
	clients map[*client]struct{}
	keys    map[string]*client
}

// trackState is one connection's tracking mode.
type trackState struct {
	on, bcast, optin, optout, noloop, broken bool
	redirect                                 int64
	prefixes                                 []string // BCAST prefixes, sorted

	caching bool // CLIENT CACHING given for the next command; own goroutine only
}

// pendingInv is an invalidation for the running client, sent after its
// reply: a key, or a flush (null) when flush is set.
type pendingInv struct {
	key   string
	flush bool
}

const invalidateChannel = "__redis__:invalidate"

func (s *Server) registerTracking() {
	t := &s.trk
	t.keys = map[string]map[int64]struct{}{}
	t.byID = map[int64]*client{}
	t.prefixes = map[string]*bcastPrefix{}
	s.eng.AddOnModified(s.trackModified)
	s.eng.AddOnFlush(s.trackFlush)
	s.eng.SetOnRead(s.trackRead)

	const conn = engine.FlagNoKeys | engine.FlagNoScript | engine.FlagLoading | engine.FlagStale
	subs := s.eng.Lookup([]byte("client")).Subs
	subs["tracking"] = &engine.Command{Name: "client|tracking", Arity: -3, Flags: conn, Fn: s.cmdClientTracking}
	subs["caching"] = &engine.Command{Name: "client|caching", Arity: 3, Flags: conn, Fn: s.cmdClientCaching}
	subs["getredir"] = &engine.Command{Name: "client|getredir", Arity: 2, Flags: conn, Fn: s.cmdClientGetRedir}
	subs["trackinginfo"] = &engine.Command{Name: "client|trackinginfo", Arity: 2, Flags: conn, Fn: s.cmdClientTrackingInfo}
}

// Tracking option errors, verbatim from Redis.
const (
	errRedirectTwice     = "ERR A client can only redirect to a single other client"
	errRedirectMissing   = "ERR The client ID you want redirect to does not exist"
	errPrefixNeedsBcast  = "ERR PREFIX option requires BCAST mode to be enabled"
	errSwitchBcast       = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errOptBcast          = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errOptInOut          = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	errSwitchOpt         = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errCachingNotOn      = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingYesNoOptin = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errCachingNoNoOptout = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
func (s *Server) cmdClientTracking(c *engine.Ctx) {
	me := cl(c)
	var (
		redir                                int64
		bcast, optin, optout, noloop, hasRed bool
		prefixes                             []string
		target                               *client
	)
	for j := 3; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		opt := c.Args[j]
		switch {
		case engine.EqFold(opt, "redirect") && more > 0:
			j++
			if hasRed {
				c.W.WriteError(errRedirectTwice)
				return
			}
			id, ok := engine.ParseInt(c.Args[j])
			if !ok {
				c.W.WriteError(engine.ErrNotInteger)
				return
			}
			redir, hasRed = id, true
			if target = s.clientByID(id); target == nil {
				c.W.WriteError(errRedirectMissing)
				return
			}
		case engine.EqFold(opt, "bcast"):
			bcast = true
		case engine.EqFold(opt, "optin"):
			optin = true
		case engine.EqFold(opt, "optout"):
			optout = true
		case engine.EqFold(opt, "noloop"):
			noloop = true
		case engine.EqFold(opt, "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(c.Args[j]))
		default:
			c.W.WriteError(engine.ErrSyntax)
			return
		}
	}
	switch {
	case engine.EqFold(c.Args[2], "on"):
	case engine.EqFold(c.Args[2], "off"):
		s.disableTracking(me)
		c.W.WriteStatus("OK")
		return
	default:
		c.W.WriteError(engine.ErrSyntax)
		return
	}

	t := &s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &me.ps.trk
	switch {
	case !bcast && len(prefixes) > 0:
		c.W.WriteError(errPrefixNeedsBcast)
		return
	case st.on && st.bcast != bcast:
		c.W.WriteError(errSwitchBcast)
		return
	case bcast && (optin || optout):
		c.W.WriteError(errOptBcast)
		return
	case optin && optout:
		c.W.WriteError(errOptInOut)
		return
	case (optin && st.optout) || (optout && st.optin):
		c.W.WriteError(errSwitchOpt)
		return
	}
	if bcast && !checkPrefixes(c, st.prefixes, prefixes) {
		return
	}
	s.enablePush(me)
	if !st.on {
		t.nclients.Add(1)
	}
	st.on = true
	me.ps.tracking.Store(true)
	st.broken, st.bcast, st.optin, st.optout, st.noloop = false, false, false, false, false
	st.redirect = redir
	t.byID[me.ID] = me
	if target != nil {
		t.byID[target.ID] = target
		if gone(target) { // it closed since clientByID found it
			delete(t.byID, target.ID)
		}
	}
	if bcast {
		st.bcast = true
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			t.addPrefix(me, p)
		}
	}
	st.optin, st.optout, st.noloop = optin, optout, noloop
	me.TrackKeys = !st.bcast
	c.W.WriteStatus("OK")
}

// checkPrefixes is Redis's checkPrefixCollisionsOrReply, including its
// quirk: an overlap between two new prefixes other than the first replies
// the error and then lets the command go on (and reply OK too).
func checkPrefixes(c *engine.Ctx, existing, prefixes []string) bool {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range prefixes {
		for _, old := range existing {
			if overlap(old, p) {
				c.W.WriteError("ERR Prefix '" + p + "' overlaps with an existing prefix '" + old + "'. Prefixes for a single client must not overlap.")
				return false
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				c.W.WriteError("ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap.")
				return i != 0
			}
		}
	}
	return true
}

// addPrefix registers me for BCAST invalidations of prefix. Requires mu.
func (t *trackTable) addPrefix(me *client, prefix string) {
	bp := t.prefixes[prefix]
	if bp == nil {
		bp = &bcastPrefix{clients: map[*client]struct{}{}, keys: map[string]*client{}}
		t.prefixes[prefix] = bp
	}
	if _, ok := bp.clients[me]; ok {
		return
	}
	bp.clients[me] = struct{}{}
	st := &me.ps.trk
	i := sort.SearchStrings(st.prefixes, prefix)
	st.prefixes = append(st.prefixes, "")
	copy(st.prefixes[i+1:], st.prefixes[i:])
	st.prefixes[i] = prefix
	me.mem.prefixes.Store(int64(len(st.prefixes)) * memPrefix) // (evict.go)
}

// disableTracking is CLIENT TRACKING OFF (and RESET's part).
func (s *Server) disableTracking(me *client) {
	t := &s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	t.disableLocked(me)
}

func (t *trackTable) disableLocked(me *client) {
	st := &me.ps.trk
	if st.bcast {
		for _, p := range st.prefixes {
			if bp := t.prefixes[p]; bp != nil {
				delete(bp.clients, me)
				if len(bp.clients) == 0 {
					delete(t.prefixes, p)
				}
			}
		}
		st.prefixes = nil
		me.mem.prefixes.Store(0)
	}
	if st.on {
		if t.nclients.Add(-1) == 0 {
			// Nobody tracks any more: the table only holds stale IDs.
			t.keys, t.items = map[string]map[int64]struct{}{}, 0
		}
		st.on, st.broken, st.bcast, st.optin, st.optout, st.noloop = false, false, false, false, false, false
		me.ps.tracking.Store(false)
	}
	st.caching = false
	me.TrackKeys = false
}

// trackingClosed forgets a closing connection.
func (s *Server) trackingClosed(me *client) {
	t := &s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	if me.ps.trk.on {
		t.disableLocked(me)
	}
	delete(t.byID, me.ID)
}

// clientByID finds a live connection by ID (CLIENT TRACKING REDIRECT).
func (s *Server) clientByID(id int64) *client {
	var found *client
	s.clients.Range(func(k, _ any) bool {
		if c := k.(*client); c.ID == id && !gone(c) {
			found = c
			return false
		}
		return true
	})
	return found
}

func gone(c *client) bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

// CLIENT CACHING YES|NO
func (s *Server) cmdClientCaching(c *engine.Ctx) {
	me := cl(c)
	s.trk.mu.Lock()
	st := me.ps.trk
	s.trk.mu.Unlock()
	opt := c.Args[2]
	switch {
	case !st.on:
		c.W.WriteError(errCachingNotOn)
	case engine.EqFold(opt, "yes") && !st.optin:
		c.W.WriteError(errCachingYesNoOptin)
	case engine.EqFold(opt, "no") && !st.optout:
		c.W.WriteError(errCachingNoNoOptout)
	case engine.EqFold(opt, "yes"), engine.EqFold(opt, "no"):
		me.ps.trk.caching = true
		c.W.WriteStatus("OK")
	default:
		c.W.WriteError(engine.ErrSyntax)
	}
}

// CLIENT GETREDIR
func (s *Server) cmdClientGetRedir(c *engine.Ctx) {
	c.W.WriteInt(s.trackingRedirect(cl(c)))
}

// trackingRedirect is the redirect CLIENT GETREDIR and CLIENT LIST report:
// -1 when tracking is off, 0 when on without REDIRECT.
func (s *Server) trackingRedirect(me *client) int64 {
	s.trk.mu.Lock()
	defer s.trk.mu.Unlock()
	if !me.ps.trk.on {
		return -1
	}
	return me.ps.trk.redirect
}

// CLIENT TRACKINGINFO
func (s *Server) cmdClientTrackingInfo(c *engine.Ctx) {
	me := cl(c)
	s.trk.mu.Lock()
	st := me.ps.trk
	st.prefixes = append([]string(nil), st.prefixes...)
	s.trk.mu.Unlock()
	st.caching = me.ps.trk.caching

	flags := []string{"off"}
	if st.on {
		flags[0] = "on"
	}
	if st.bcast {
		flags = append(flags, "bcast")
	}
	if st.optin {
		flags = append(flags, "optin")
		if st.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if st.optout {
		flags = append(flags, "optout")
		if st.caching {
			flags = append(flags, "caching-no")
		}
	}
	if st.noloop {
		flags = append(flags, "noloop")
	}
	if st.broken {
		flags = append(flags, "broken_redirect")
	}
	w := c.W
	w.WriteMap(3)
	w.WriteBulkString("flags")
	w.WriteSet(len(flags))
	for _, f := range flags {
		w.WriteBulkString(f)
	}
	w.WriteBulkString("redirect")
	if st.on {
		w.WriteInt(st.redirect)
	} else {
		w.WriteInt(-1)
	}
	w.WriteBulkString("prefixes")
	w.WriteArray(len(st.prefixes))
	for _, p := range st.prefixes {
		w.WriteBulkString(p)
	}
}

// current returns the connection running the command that holds the
// keyspace lock, or nil. Requires the keyspace lock.
func (s *Server) current() *client {
	if ec := s.eng.Current(); ec != nil {
		if c, ok := ec.Conn.(*client); ok {
			return c
		}
	}
	return nil
}

// trackRead remembers that a tracking client read key (engine hook, under
// the keyspace lock, on the client's own goroutine).
func (s *Server) trackRead(ec *engine.Client, key []byte) {
	me, ok := ec.Conn.(*client)
	if !ok {
		return
	}
	t := &s.trk
	t.mu.Lock()
	st := &me.ps.trk
	if (st.optin && !st.caching) || (st.optout && st.caching) {
		t.mu.Unlock()
		return
	}
	ids := t.keys[string(key)]
	added := ids == nil
	if added {
		ids = map[int64]struct{}{}
		t.keys[string(key)] = ids
	}
	if _, ok := ids[me.ID]; !ok {
		ids[me.ID] = struct{}{}
		t.items++
	}
	if max := t.maxKeys.Load(); added && max > 0 && int64(len(t.keys)) > max {
		s.trackLimitLocked(max)
	}
	t.mu.Unlock()
}

// trimTracking brings the table down to max keys, if it is over (a lower
// tracking-table-max-keys).
func (s *Server) trimTracking(max int64) {
	t := &s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	if max > 0 && int64(len(t.keys)) > max {
		s.trackLimitLocked(max)
	}
}

// trackLimitLocked holds the table to tracking-table-max-keys, as Redis's
// trackingLimitUsedSlots: keys taken at random (the one just read among
// them) are invalidated for every client that may cache them, the reader
// included, NOLOOP or not (its own after its reply), until the table is
// back at the limit. Requires mu.
func (s *Server) trackLimitLocked(max int64) {
	t := &s.trk
	for key := range t.keys { // (Go's map order: a random start)
		if int64(len(t.keys)) <= max {
			return
		}
		s.invalidateLocked(key, nil)
	}
}

// trackModified invalidates key for the clients that may cache it (engine
// hook, under the keyspace lock).
func (s *Server) trackModified(key string) {
	t := &s.trk
	if t.nclients.Load() == 0 || s.eng.Flushing() {
		return
	}
	cur := s.current()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.prefixes) > 0 {
		for p, bp := range t.prefixes {
			if strings.HasPrefix(key, p) {
				bp.keys[key] = cur
				t.dirty.Store(true)
			}
		}
		if cur == nil && t.dirty.Load() {
			s.broadcastLocked(nil) // no command to wait for (active expiry)
		}
	}
	s.invalidateLocked(key, cur)
}

// invalidateLocked takes key out of the table and sends its invalidation
// to the clients that may cache it; cur, the client running a command,
// gets its own after its reply. Requires mu.
func (s *Server) invalidateLocked(key string, cur *client) {
	t := &s.trk
	ids := t.keys[key]
	if ids == nil {
		return
	}
	delete(t.keys, key)
	t.items -= len(ids)
	for id := range ids {
		target := t.byID[id]
		if target == nil || gone(target) || !target.ps.trk.on || target.ps.trk.bcast {
			continue
		}
		if target == cur {
			if !target.ps.trk.noloop {
				cur.ps.pending = append(cur.ps.pending, pendingInv{key: key})
			}
			continue
		}
		s.sendInvalidation(target, keysPayload(key), false)
	}
}

// trackFlush tells every tracking client that all keys are invalid
// (engine flush hook, under the keyspace lock).
func (s *Server) trackFlush() {
	t := &s.trk
	if t.nclients.Load() == 0 {
		return
	}
	cur := s.current()
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int64, 0, len(t.byID))
	for id := range t.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		c := t.byID[id]
		if !c.ps.trk.on || gone(c) {
			continue
		}
		if c == cur {
			cur.ps.pending = append(cur.ps.pending, pendingInv{flush: true})
			continue
		}
		s.sendInvalidation(c, nullPayload(c), false)
	}
	t.keys, t.items = map[string]map[int64]struct{}{}, 0
}

// afterCommand runs on a connection's goroutine after each command: it
// ends a CLIENT CACHING window and sends the invalidations of the
// client's own writes, which Redis sends right after the reply. A command
// that blocked has not ended: its client's pending invalidations may still
// grow (by another goroutine, when a push serves it), so afterBlocked runs
// instead, once it is served.
func (s *Server) afterCommand(c *client) {
	if c.ctx.Blocked != nil {
		return
	}
	st := &c.ps.trk
	if st.caching && !c.inTransaction() && !s.keepsCaching(c.ctx.Args) {
		st.caching = false
	}
	s.sendOwnInvalidations(c)
}

// keepsCaching reports whether a command leaves a CLIENT CACHING window
// open for the next: as Redis's resetClient, one that resolved to a
// CLIENT subcommand served by clientCommand, run or refused (every one
// but SETINFO, which has its own in 7.2). A bare CLIENT or an unknown
// subcommand resolves to no such command, and ends the window.
func (s *Server) keepsCaching(args [][]byte) bool {
	if len(args) < 2 || !engine.EqFold(s.cmdName(args[0]), "client") || engine.EqFold(args[1], "setinfo") {
		return false
	}
	_, ok := s.eng.Lookup(args[0]).Subs[engine.LowerASCII(string(args[1]))]
	return ok
}

// afterBlocked is afterCommand for a blocking command (BLPOP, BLMOVE...),
// after its wait and its reply, as Redis resets a client when it unblocks.
// The engine wrote its pending invalidations before it released the wait.
func (s *Server) afterBlocked(c *client) {
	c.ps.trk.caching = false // a blocking command is never CLIENT nor in MULTI
	s.sendOwnInvalidations(c)
}

// sendOwnInvalidations sends the invalidations of c's own writes.
func (s *Server) sendOwnInvalidations(c *client) {
	if len(c.ps.pending) == 0 {
		return
	}
	t := &s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range c.ps.pending {
		if p.flush {
			s.sendInvalidation(c, nullPayload(c), true)
		} else {
			s.sendInvalidation(c, keysPayload(p.key), true)
		}
	}
	clear(c.ps.pending)
	c.ps.pending = c.ps.pending[:0]
}

// afterBatch runs on a connection's goroutine after the commands of one
// read, before their replies are flushed: it broadcasts the keys written
// under BCAST prefixes, as Redis does before its event loop sleeps (so a
// pipeline's replies come first).
func (s *Server) afterBatch(c *client) {
	t := &s.trk
	if !t.dirty.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirty.Load() {
		s.broadcastLocked(c)
	}
}

// inTransaction reports whether c is inside MULTI, where CLIENT CACHING
// lasts until EXEC (Redis's resetClient keeps CLIENT_TRACKING_CACHING
// while CLIENT_MULTI is set).
func (c *client) inTransaction() bool { return c.Client.InMulti() }

// broadcastLocked sends the keys written under each BCAST prefix to its
// clients and clears them. own is the connection whose goroutine runs it
// (its frames go in place), nil for none. Requires mu.
func (s *Server) broadcastLocked(own *client) {
	t := &s.trk
	t.dirty.Store(false)
	names := make([]string, 0, len(t.prefixes))
	for p, bp := range t.prefixes {
		if len(bp.keys) > 0 {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, p := range names {
		bp := t.prefixes[p]
		keys := make([]string, 0, len(bp.keys))
		for k := range bp.keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		all := keysPayload(keys...)
		targets := make([]*client, 0, len(bp.clients))
		for c := range bp.clients {
			targets = append(targets, c)
		}
		sort.Slice(targets, func(i, j int) bool { return targets[i].ID < targets[j].ID })
		for _, c := range targets {
			if gone(c) {
				continue
			}
			payload := all
			if c.ps.trk.noloop {
				var mine []string
				for _, k := range keys {
					if bp.keys[k] != c {
						mine = append(mine, k)
					}
				}
				if len(mine) == 0 {
					continue
				}
				payload = keysPayload(mine...)
			}
			s.sendInvalidation(c, payload, c == own)
		}
		bp.keys = map[string]*client{}
	}
}

// keysPayload encodes an invalidation's key list (an array in both
// protocols).
func keysPayload(keys ...string) []byte {
	b := make([]byte, 0, 16*len(keys)+8)
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(keys)), 10)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, '\r', '\n')
		b = append(b, k...)
		b = append(b, '\r', '\n')
	}
	return b
}

// nullPayload is a flush's "all keys" payload: a null in the tracking
// client's own protocol (Redis uses shared.null[c->resp] even when the
// message is redirected).
func nullPayload(c *client) []byte {
	c.omu.Lock()
	p := c.w.proto
	c.omu.Unlock()
	if p == 3 {
		return resp3Null
	}
	return resp2Null
}

// sendInvalidation is Redis's sendTrackingMessage: it sends payload to the
// tracking client c or to its redirect client. own is set when the caller
// is c's goroutine, after c's reply. Requires mu.
func (s *Server) sendInvalidation(c *client, payload []byte, own bool) {
	t := &s.trk
	st := &c.ps.trk
	target, redirected := c, false
	if st.redirect != 0 {
		r := t.byID[st.redirect]
		if r == nil || gone(r) {
			st.broken = true
			id := st.redirect
			s.deliver(c, own, func(w *respWriter) {
				if w.proto == 3 {
					w.WritePush(2)
					w.WriteBulkString("tracking-redir-broken")
					w.WriteInt(id)
				}
			})
			return
		}
		target, redirected = r, true
	}
	s.deliver(target, own && target == c, func(w *respWriter) {
		switch {
		case w.proto == 3:
			w.WritePush(2)
			w.WriteBulkString("invalidate")
		case redirected && target.ps.pubsub: // deliver holds target's omu
			w.WritePush(3)
			w.WriteBulkString("message")
			w.WriteBulkString(invalidateChannel)
		default:
			return // RESP2 without a subscribed redirect: no way to tell it
		}
		w.raw(payload)
	})
}

// trackingFlags adds the tracking letters of CLIENT LIST's flags.
func (s *Server) trackingFlags(me *client, b []byte) []byte {
	s.trk.mu.Lock()
	defer s.trk.mu.Unlock()
	st := &me.ps.trk
	if st.on {
		b = append(b, 't')
	}
	if st.broken {
		b = append(b, 'R')
	}
	if st.bcast {
		b = append(b, 'B')
	}
	return b
}
