package server

import (
	"cmp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// Pub/sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, SSUBSCRIBE,
// SUNSUBSCRIBE and PUBSUB, as Redis 7 (src/pubsub.c). PUBLISH and SPUBLISH
// are engine commands (scripts publish too) that call Server.Publish.
//
// Locking: the registry's mu guards every subscription, the server's maps
// and each connection's sets alike. Subscribing holds it while writing its
// confirmations, so no message on a channel reaches a subscriber before
// its confirmation, nor after its unsubscribe confirmation. Publish holds
// it for reading and only appends to the subscribers' output buffers (see
// deliver): a subscriber that does not read never slows a publisher; it is
// disconnected when its pending output passes the pub/sub output limit.
// Lock order: keyspace lock, then the registry, then a connection's omu.

// psKind is a kind of subscription.
type psKind int

const (
	kindChannel psKind = iota
	kindPattern
	kindShard
)

var psNames = [3]struct{ sub, unsub, msg string }{
	{"subscribe", "unsubscribe", "message"},
	{"psubscribe", "punsubscribe", "pmessage"},
	{"ssubscribe", "sunsubscribe", "smessage"},
}

// subscribers is the set of connections subscribed to one channel or
// pattern.
type subscribers struct {
	list []*client
	idx  map[*client]int
}

func (s *subscribers) add(c *client) {
	if s.idx == nil {
		s.idx = map[*client]int{}
	}
	s.idx[c] = len(s.list)
	s.list = append(s.list, c)
}

func (s *subscribers) remove(c *client) {
	i, ok := s.idx[c]
	if !ok {
		return
	}
	last := len(s.list) - 1
	s.list[i] = s.list[last]
	s.idx[s.list[i]] = i
	s.list[last] = nil
	s.list = s.list[:last]
	delete(s.idx, c)
}

// pubsubRegistry holds every subscription.
type pubsubRegistry struct {
	mu     sync.RWMutex
	tables [3]map[string]*subscribers // by psKind
}

// pubsubState is the server's pub/sub and client-tracking state.
type pubsubState struct {
	ps  pubsubRegistry
	trk trackTable
}

// psConn is one connection's pub/sub, tracking and output-limit state.
type psConn struct {
	// subs are the names subscribed to, each with its place in the order
	// they were subscribed in (subSeq), by kind; guarded by the
	// registry's mu, as is nsubs (read by CLIENT LIST under it)
	subs   [3]map[string]uint64
	subSeq uint64
	nsubs  [3]int

	// Guarded by the connection's omu.
	inflight  int   // bytes being written by a flush
	softSince int64 // when the pending output reached the soft limit (mono ms); 0 = below
	killed    bool  // disconnected for passing the output limit
	pubsub    bool  // subscribed: Redis's pub/sub client class (output limit, RESP2 redirects)
	// closing: the client killed itself (CLIENT KILL): no push goes out
	// any more, as Redis's client takes no output once it is to close
	// after its reply (the rest of an EXEC's replies are dropped too)
	closing bool
	// early holds the frames pushed before the connection was
	// push-capable, until it is (pushlater.go); wantPush says some wait.
	early    []byte
	wantPush atomic.Bool
	adopt    chan struct{} // asks its goroutine, waiting in a blocked command, to adopt them

	trk      trackState   // guarded by the tracking table's mu (caching: own goroutine)
	tracking atomic.Bool  // trk.on, read unlocked (the idle timeout's exemption)
	pending  []pendingInv // self-invalidations due after the reply (own goroutine)

	noTouch bool // CLIENT NO-TOUCH; guarded by the client's mu (probes.go)
}

// total is the number of channel and pattern subscriptions (what
// SUBSCRIBE and PSUBSCRIBE replies count).
func (p *psConn) total() int { return p.nsubs[kindChannel] + p.nsubs[kindPattern] }

// setSubsMem records what Redis estimates the subscriptions cost
// (pubsubMemOverhead) in m. Requires the registry's mu.
func (p *psConn) setSubsMem(m *clientMem) {
	m.subs.Store(channelsMem(p.nsubs[kindChannel]) + channelsMem(p.nsubs[kindShard]) + int64(p.nsubs[kindPattern]*memPattern))
}

// subscribed reports whether the connection has any subscription.
func (p *psConn) subscribed() bool { return p.total()+p.nsubs[kindShard] > 0 }

func (s *Server) registerPubSub() {
	for k := range s.ps.tables {
		s.ps.tables[k] = map[string]*subscribers{}
	}
	s.eng.SetPublisher(s)

	const sub = engine.FlagPubSub | engine.FlagNoScript | engine.FlagLoading | engine.FlagStale | engine.FlagNoKeys
	const info = engine.FlagPubSub | engine.FlagLoading | engine.FlagStale | engine.FlagNoKeys
	s.eng.Register(
		&engine.Command{Name: "subscribe", Arity: -2, Flags: sub, Group: "pubsub", Fn: func(c *engine.Ctx) { s.subscribe(cl(c), c.Args[1:], kindChannel) }},
		&engine.Command{Name: "psubscribe", Arity: -2, Flags: sub, Group: "pubsub", Fn: func(c *engine.Ctx) { s.subscribe(cl(c), c.Args[1:], kindPattern) }},
		&engine.Command{Name: "ssubscribe", Arity: -2, Flags: sub, FirstKey: 1, LastKey: -1, Step: 1, Group: "pubsub", Fn: func(c *engine.Ctx) {
			if c.DenyBlocking() { // inside EXEC, as Redis 7.0 (SUBSCRIBE and PSUBSCRIBE are allowed there)
				c.W.WriteError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
				return
			}
			s.subscribe(cl(c), c.Args[1:], kindShard)
		}},
		&engine.Command{Name: "unsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Fn: func(c *engine.Ctx) { s.unsubscribe(cl(c), c.Args[1:], kindChannel, true) }},
		&engine.Command{Name: "punsubscribe", Arity: -1, Flags: sub, Group: "pubsub", Fn: func(c *engine.Ctx) { s.unsubscribe(cl(c), c.Args[1:], kindPattern, true) }},
		&engine.Command{Name: "sunsubscribe", Arity: -1, Flags: sub, FirstKey: 1, LastKey: -1, Step: 1, Group: "pubsub", Fn: func(c *engine.Ctx) { s.unsubscribe(cl(c), c.Args[1:], kindShard, true) }},
		&engine.Command{Name: "pubsub", Arity: -2, Group: "pubsub", Subs: map[string]*engine.Command{
			"channels":      {Arity: -2, Flags: info, Fn: func(c *engine.Ctx) { s.cmdPubSubChannels(c, kindChannel) }},
			"shardchannels": {Arity: -2, Flags: info, Fn: func(c *engine.Ctx) { s.cmdPubSubChannels(c, kindShard) }},
			"numsub":        {Arity: -2, Flags: info, Fn: func(c *engine.Ctx) { s.cmdPubSubNumSub(c, kindChannel) }},
			"shardnumsub":   {Arity: -2, Flags: info, Fn: func(c *engine.Ctx) { s.cmdPubSubNumSub(c, kindShard) }},
			"numpat":        {Arity: 2, Flags: info, Fn: s.cmdPubSubNumPat},
			"help":          {Arity: 2, Flags: engine.FlagLoading | engine.FlagStale | engine.FlagNoKeys, Fn: cmdPubSubHelp},
		}},
	)
}

// countFor is the subscription count a confirmation of kind reports:
// shard subscriptions count apart.
func (p *psConn) countFor(kind psKind) int64 {
	if kind == kindShard {
		return int64(p.nsubs[kindShard])
	}
	return int64(p.total())
}

// confirm writes a (un)subscribe confirmation (a push in RESP3); a nil
// name is written as null.
func confirm(w *respWriter, verb string, name []byte, count int64) {
	w.WritePush(3)
	w.WriteBulkString(verb)
	if name == nil {
		w.WriteNull()
	} else {
		w.WriteBulk(name)
	}
	w.WriteInt(count)
}

// SUBSCRIBE channel [channel ...] (and PSUBSCRIBE, SSUBSCRIBE)
func (s *Server) subscribe(me *client, names [][]byte, kind psKind) {
	s.enablePush(me)
	r := &s.ps
	r.mu.Lock()
	defer r.mu.Unlock()
	set := me.ps.subs[kind]
	if set == nil {
		set = map[string]uint64{}
		me.ps.subs[kind] = set
	}
	for _, name := range names {
		if _, ok := set[string(name)]; !ok {
			key := string(name)
			me.ps.subSeq++
			set[key] = me.ps.subSeq
			me.ps.nsubs[kind]++
			subs := r.tables[kind][key]
			if subs == nil {
				subs = &subscribers{}
				r.tables[kind][key] = subs
			}
			subs.add(me)
		}
		confirm(&me.w, psNames[kind].sub, name, me.ps.countFor(kind))
	}
	me.ps.setSubsMem(&me.mem)
	me.setPubSubMode(true)
}

// setPubSubMode records whether the connection is subscribed, for its own
// goroutine (engine.Client.Subscribed) and for others (ps.pubsub).
func (c *client) setPubSubMode(on bool) {
	c.Subscribed = on
	c.omu.Lock()
	c.ps.pubsub = on
	c.omu.Unlock()
}

// UNSUBSCRIBE [channel ...] (and PUNSUBSCRIBE, SUNSUBSCRIBE). With no
// names it leaves every subscription of the kind, and still confirms (with
// a null name) when there was none. notify=false is RESET's silent form.
func (s *Server) unsubscribe(me *client, names [][]byte, kind psKind, notify bool) {
	r := &s.ps
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(names) == 0 {
		// In the order they were subscribed in, as Redis 7.0 keeps a
		// client's patterns (a list; its channels are in a dict, in an
		// order of its own)
		all := make([]string, 0, len(me.ps.subs[kind]))
		for name := range me.ps.subs[kind] {
			all = append(all, name)
		}
		slices.SortFunc(all, func(a, b string) int { return cmp.Compare(me.ps.subs[kind][a], me.ps.subs[kind][b]) })
		for _, name := range all {
			r.remove(me, name, kind)
			if notify {
				confirm(&me.w, psNames[kind].unsub, []byte(name), me.ps.countFor(kind))
			}
		}
		if notify && len(all) == 0 {
			confirm(&me.w, psNames[kind].unsub, nil, me.ps.countFor(kind))
		}
	} else {
		for _, name := range names {
			r.remove(me, string(name), kind)
			if notify {
				confirm(&me.w, psNames[kind].unsub, name, me.ps.countFor(kind))
			}
		}
	}
	me.ps.setSubsMem(&me.mem)
	me.setPubSubMode(me.ps.subscribed())
}

// remove drops one subscription of me, if it has it. Requires mu.
func (r *pubsubRegistry) remove(me *client, name string, kind psKind) {
	if _, ok := me.ps.subs[kind][name]; !ok {
		return
	}
	delete(me.ps.subs[kind], name)
	me.ps.nsubs[kind]--
	if subs := r.tables[kind][name]; subs != nil {
		subs.remove(me)
		if len(subs.list) == 0 {
			delete(r.tables[kind], name)
		}
	}
}

// unsubscribeAll silently drops every subscription of me (RESET, close).
func (s *Server) unsubscribeAll(me *client) {
	for kind := range me.ps.subs {
		if len(me.ps.subs[kind]) > 0 {
			s.unsubscribe(me, nil, psKind(kind), false)
		}
	}
}

// Publish implements engine.Publisher: it appends the message to every
// subscriber's output, channel subscribers first, then pattern ones, and
// returns how many received it. A subscriber publishing to itself gets
// the message before PUBLISH's reply, as in Redis.
func (s *Server) Publish(pub *engine.Client, channel, message []byte, shard bool) int64 {
	r := &s.ps
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n int64
	kind := kindChannel
	if shard {
		kind = kindShard
	}
	if subs := r.tables[kind][string(channel)]; subs != nil {
		verb := psNames[kind].msg
		for _, c := range subs.list {
			s.deliver(c, &c.Client == pub, func(w *respWriter) {
				w.WritePush(3)
				w.WriteBulkString(verb)
				w.WriteBulk(channel)
				w.WriteBulk(message)
			})
			n++
		}
	}
	if shard {
		return n
	}
	for pat, subs := range r.tables[kindPattern] {
		if !engine.Match([]byte(pat), channel, false) {
			continue
		}
		for _, c := range subs.list {
			s.deliver(c, &c.Client == pub, func(w *respWriter) {
				w.WritePush(4)
				w.WriteBulkString("pmessage")
				w.WriteBulkString(pat)
				w.WriteBulk(channel)
				w.WriteBulk(message)
			})
			n++
		}
	}
	return n
}

// deliver appends a frame built by fn (in the connection's protocol) to
// c's output and wakes its flusher. own means the caller is c's own
// goroutine at a frame boundary of its reply (a connection publishing to
// itself): the frame goes in place. Otherwise it goes after the reply of
// the command c is running, if any. A connection whose pending output
// passes its class's output limit is disconnected (pushOverLimit). A
// connection not push-capable gets frames from other goroutines once it
// is (queueEarly).
func (s *Server) deliver(c *client, own bool, fn func(w *respWriter)) {
	c.omu.Lock()
	if c.ps.killed || c.ps.closing {
		c.omu.Unlock()
		return
	}
	if !own && !c.w.shared {
		// Not push-capable yet (a tracking REDIRECT target): queued
		// until it is, which it is asked to become (pushlater.go).
		pw := respWriter{proto: c.w.proto}
		fn(&pw)
		adopt := len(pw.b) > 0 && c.queueEarly(pw.b)
		c.omu.Unlock()
		if adopt {
			go s.adoptPush(c)
		}
		return
	}
	dst := &c.w.b
	if !own && c.inCmd {
		dst = &c.deferred
	}
	pw := respWriter{b: *dst, proto: c.w.proto}
	fn(&pw)
	*dst = pw.b
	kill := s.pushOverLimit(c)
	c.omu.Unlock()
	if kill {
		s.closeOverLimit(c)
		return
	}
	s.measurePushed(c) // maxmemory-clients (evict.go)
	if !own {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// checkPushLimits applies the output limits to every push-capable client
// (subscribers, MONITOR, RESP3 tracking clients), as Redis's clientsCron
// does: a client that stopped reading is disconnected once it has been
// over the soft limit long enough even when no push comes to make deliver
// check it. Called every 100 ms.
func (s *Server) checkPushLimits() {
	if s.pushConns.Load() == 0 {
		return // no push-capable client: nothing to check
	}
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		c.omu.Lock()
		kill := c.w.shared && s.pushOverLimit(c)
		c.omu.Unlock()
		if kill {
			s.closeOverLimit(c)
		}
		return true
	})
}

// pushOverLimit applies to a push-capable client (c.w.shared) its class's
// output limit, as Redis's checkClientOutputBufferLimits: the pubsub
// class's for a subscribed client, the normal class's for the others
// (MONITOR, a RESP3 tracking client), as Redis's getClientType. Over it,
// the client's pending output is dropped, and it reports true once: the
// caller then closes the connection (closeOverLimit). Requires c's omu.
func (s *Server) pushOverLimit(c *client) bool {
	if c.ps.killed || !c.w.shared {
		return false
	}
	l := s.live().OutputBufferLimits.Normal
	if c.ps.pubsub {
		l = s.live().OutputBufferLimits.PubSub
	}
	if !s.overLimit(c, l) {
		return false
	}
	c.ps.killed = true
	c.w.drop()
	c.deferred = nil
	return true
}

// closeOverLimit closes a connection pushOverLimit found over its limit.
func (s *Server) closeOverLimit(c *client) {
	class := "normal"
	c.omu.Lock()
	if c.ps.pubsub {
		class = "pubsub"
	}
	c.omu.Unlock()
	s.log.Warn("closing client over the output buffer limit", "id", c.ID, "addr", c.addr, "class", class)
	c.closeNC()
}

// overLimit reports whether c's pending output breaks l, as Redis's
// checkClientOutputBufferLimits. Requires c's omu.
func (s *Server) overLimit(c *client, l OutputBufferLimit) bool {
	used := uint64(c.w.size() + len(c.deferred) + c.ps.inflight + c.heldOut())
	if l.Hard > 0 && used >= l.Hard {
		return true
	}
	if l.Soft == 0 || used < l.Soft {
		c.ps.softSince = 0
		return false
	}
	now := s.cfg.Clock.Mono()
	if c.ps.softSince == 0 {
		c.ps.softSince = now
		return false
	}
	return time.Duration(now-c.ps.softSince)*time.Millisecond > time.Duration(l.SoftSeconds)*time.Second
}

// PUBSUB CHANNELS [pattern] / PUBSUB SHARDCHANNELS [pattern]
func (s *Server) cmdPubSubChannels(c *engine.Ctx, kind psKind) {
	if len(c.Args) > 3 {
		subcommandSyntaxError(c)
		return
	}
	var pat []byte
	if len(c.Args) == 3 {
		pat = c.Args[2]
	}
	r := &s.ps
	r.mu.RLock()
	var out []string
	for name := range r.tables[kind] {
		if pat == nil || engine.Match(pat, []byte(name), false) {
			out = append(out, name)
		}
	}
	r.mu.RUnlock()
	sort.Strings(out)
	c.W.WriteArray(len(out))
	for _, name := range out {
		c.W.WriteBulkString(name)
	}
}

// PUBSUB NUMSUB [channel ...] / PUBSUB SHARDNUMSUB [shardchannel ...]
func (s *Server) cmdPubSubNumSub(c *engine.Ctx, kind psKind) {
	r := &s.ps
	counts := make([]int64, len(c.Args)-2)
	r.mu.RLock()
	for i, name := range c.Args[2:] {
		if subs := r.tables[kind][string(name)]; subs != nil {
			counts[i] = int64(len(subs.list))
		}
	}
	r.mu.RUnlock()
	c.W.WriteArray(2 * len(counts))
	for i, name := range c.Args[2:] {
		c.W.WriteBulk(name)
		c.W.WriteInt(counts[i])
	}
}

// PUBSUB NUMPAT
func (s *Server) cmdPubSubNumPat(c *engine.Ctx) {
	s.ps.mu.RLock()
	n := len(s.ps.tables[kindPattern])
	s.ps.mu.RUnlock()
	c.W.WriteInt(int64(n))
}

var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Prints this help.",
}

// PUBSUB HELP
func cmdPubSubHelp(c *engine.Ctx) { engine.WriteHelp(c, pubsubHelp) }

// subcommandSyntaxError is Redis's addReplySubcommandSyntaxError.
func subcommandSyntaxError(c *engine.Ctx) {
	c.W.WriteError(errSubcommandSyntax(c.Args))
}

// clientListFields returns CLIENT LIST's flags, sub, psub, ssub and redir
// for me. The caller holds me.mu.
func (s *Server) clientListFields(me *client) (flags string, sub, psub, ssub int, redir int64) {
	s.ps.mu.RLock()
	sub, psub, ssub = me.ps.nsubs[kindChannel], me.ps.nsubs[kindPattern], me.ps.nsubs[kindShard]
	s.ps.mu.RUnlock()
	var b []byte
	if sub+psub+ssub > 0 {
		b = append(b, 'P')
	}
	if me.MultiCount() >= 0 {
		b = append(b, 'x')
	}
	if me.fx.blocked.Load() {
		b = append(b, 'b')
	}
	b = s.trackingFlags(me, b)
	if me.unixPath != "" {
		b = append(b, 'U')
	}
	if me.mem.noEvict.Load() {
		b = append(b, 'e')
	}
	if me.ps.noTouch {
		b = append(b, 'T')
	}
	if len(b) == 0 {
		b = append(b, 'N')
	}
	return string(b), sub, psub, ssub, s.trackingRedirect(me)
}

// pubsubInfo fills INFO's pub/sub and tracking counts.
func (s *Server) pubsubInfo(si *engine.ServerInfo) {
	s.ps.mu.RLock()
	si.PubSubChannels = len(s.ps.tables[kindChannel])
	si.PubSubPatterns = len(s.ps.tables[kindPattern])
	si.PubSubShards = len(s.ps.tables[kindShard])
	s.ps.mu.RUnlock()
	si.TrackingClients = int(s.trk.nclients.Load())
	t := &s.trk
	t.mu.Lock()
	si.TrackingKeys, si.TrackingItems, si.TrackingPrefixes = len(t.keys), t.items, len(t.prefixes)
	t.mu.Unlock()
}

// connClosed drops a closing connection's subscriptions and tracking.
func (s *Server) connClosed(c *client) {
	if c.ps.subscribed() {
		s.unsubscribeAll(c)
	}
	s.trackingClosed(c)
}

// resetPubSub is RESET's part: leave subscribed mode and stop tracking.
func (s *Server) resetPubSub(c *client) {
	s.unsubscribeAll(c)
	s.disableTracking(c)
}
