package engine

// Pub/sub in the engine: PUBLISH and SPUBLISH are engine commands so that
// scripts can publish (Redisson and Spring's lock registry publish on
// unlock from Lua, which Redis 7 allows), while the subscriptions live in
// the server, which owns the connections and implements Publisher.

// Publisher delivers published messages to subscribers. The server
// implements it. Publish may be called with the keyspace lock held (from a
// script) or without it (from a client): it must not take the keyspace
// lock, and it must never wait for a subscriber to read.
type Publisher interface {
	// Publish sends message on channel (a shard channel when shard is set)
	// and returns the number of receivers, as PUBLISH replies. pub is the
	// publishing client (a script's caller), nil when there is none.
	Publish(pub *Client, channel, message []byte, shard bool) int64
}

// clientHooks is the engine state that pub/sub and client tracking need;
// Engine embeds it.
type clientHooks struct {
	publisher Publisher

	// current is the client whose command holds the keyspace lock, nil
	// outside commands (active expiry, embedders). Key-modification hooks
	// read it to tell a client's own writes from others' (tracking's
	// NOLOOP, and invalidations sent after the writer's reply).
	current *Client
	// runner is the client whose goroutine runs the command holding the
	// lock: a keyspace notification is published on its behalf, so that
	// a connection subscribed to its own events gets them in place
	// (before the reply, inside EXEC's array), as in Redis.
	runner *Client
	// onRead is called, with the keyspace lock held, for each key read by a
	// read-only command of a client with TrackKeys set.
	onRead func(cl *Client, key []byte)
	// onFlush hooks run under the keyspace lock when FLUSHDB/FLUSHALL
	// start; flushing is set while the flush then reports every key to the
	// onModified hooks.
	onFlush  []func()
	flushing bool
}

func registerPubSub(e *Engine) {
	const flags = FlagPubSub | FlagLoading | FlagStale | FlagFast | FlagNoKeys
	e.Register(
		&Command{Name: "publish", Arity: 3, Flags: flags, Group: "pubsub", Fn: func(c *Ctx) { publishGeneric(c, false) }},
		&Command{Name: "spublish", Arity: 3, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, Group: "pubsub", Fn: func(c *Ctx) { publishGeneric(c, true) }},
	)
}

// SetPublisher installs the subscriber registry PUBLISH delivers to. Call
// it before the engine serves commands. Without one PUBLISH replies 0.
func (e *Engine) SetPublisher(p Publisher) { e.publisher = p }

// PUBLISH channel message / SPUBLISH shardchannel message
func publishGeneric(c *Ctx, shard bool) {
	if c.Script != nil && c.Script.ReadOnly {
		// Redis counts may-replicate commands as writes in scripts.
		c.W.WriteError(ErrScriptWriteRO)
		return
	}
	var n int64
	if p := c.Eng.publisher; p != nil {
		n = p.Publish(c.Client, c.Args[1], c.Args[2], shard)
	}
	c.W.WriteInt(n)
}

// allowedSubscribed reports whether cmd may run on a RESP2 connection in
// subscribed mode (Redis's processCommand list).
func allowedSubscribed(cmd *Command) bool {
	switch cmd.Name {
	case "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe",
		"psubscribe", "punsubscribe", "quit", "reset":
		return true
	}
	return false
}

// subscribedRefusal returns the error for a command refused in RESP2
// subscribed mode, or "" when it may run.
func subscribedRefusal(c *Ctx, cmd *Command) string {
	if c.Client == nil || !c.Client.Subscribed || c.W.Proto() != 2 || allowedSubscribed(cmd) {
		return ""
	}
	return "ERR Can't execute '" + cmd.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// pingSubscribed writes PING's reply for a RESP2 connection in subscribed
// mode, ["pong", message], and reports whether it did.
func pingSubscribed(c *Ctx) bool {
	if c.Client == nil || !c.Client.Subscribed || c.Script != nil || c.W.Proto() != 2 {
		return false
	}
	c.W.WriteArray(2)
	c.W.WriteBulkString("pong")
	if len(c.Args) == 2 {
		c.W.WriteBulk(c.Args[1])
	} else {
		c.W.WriteBulkString("")
	}
	return true
}
