package server

import "github.com/tumblerdb/tumbler/engine"

// CLIENT REPLY ON|OFF|SKIP, as Redis 7.0: OFF sends no reply from then
// on (the OFF included, and inside a transaction the rest of EXEC's),
// SKIP none for the next command (SKIP included; inside a transaction,
// the command after EXEC), ON sends them again and replies OK. Pushes (pub/sub messages,
// invalidations) still go out: they are written by deliver, not through
// the command's writer. Errors a suppressed command gets still count in
// the error stats.
type replyMode struct {
	off      bool // CLIENT REPLY OFF
	skip     bool // the running command's reply is skipped
	skipNext bool // CLIENT REPLY SKIP ran: skip the next command's
	// blocked is whether the command that blocked was suppressed: its
	// reply, written when the wait ends, is discarded too.
	blocked bool
}

// suppressed reports whether the command about to run gets no reply.
func (m *replyMode) suppressed() bool { return m.off || m.skip }

// next moves SKIP on once a command has run (Redis's resetClient).
func (m *replyMode) next() {
	m.skip = m.skipNext
	m.skipNext = false
}

// discardWriter is the writer of a command whose reply is suppressed.
type discardWriter struct{ proto int }

var _ engine.CopyingWriter = discardWriter{}

func (w discardWriter) Proto() int                 { return w.proto }
func (discardWriter) CopiesReplies()               {}
func (discardWriter) WriteStatus(string)           {}
func (discardWriter) raw([]byte)                   {}
func (discardWriter) header(byte, int)             {}
func (discardWriter) WriteError(string)            {}
func (discardWriter) WriteInt(int64)               {}
func (discardWriter) WriteBulk([]byte)             {}
func (discardWriter) WriteBulkString(string)       {}
func (discardWriter) WriteNull()                   {}
func (discardWriter) WriteNullArray()              {}
func (discardWriter) WriteArray(int)               {}
func (discardWriter) WriteMap(int)                 {}
func (discardWriter) WriteSet(int)                 {}
func (discardWriter) WriteBool(bool)               {}
func (discardWriter) WriteDouble(float64)          {}
func (discardWriter) WriteVerbatim(string, string) {}
func (discardWriter) WriteBigNumber(string)        {}

// cmdClientReply is CLIENT REPLY ON|OFF|SKIP.
func (s *Server) cmdClientReply(c *engine.Ctx) {
	me := cl(c)
	switch {
	case engine.EqFold(c.Args[2], "on"):
		me.reply = replyMode{}
		if me.closeNow {
			break // killed itself earlier in this transaction: no more output
		}
		me.w.WriteStatus("OK") // to the connection: c.W still discards when OFF was on
		if c.InExec() {
			c.RestOfExec = &me.w // the transaction's later replies go out again
		}
	case engine.EqFold(c.Args[2], "off"):
		me.reply.off = true
		if c.InExec() {
			// In Redis the flag acts at once: the transaction's later
			// replies are dropped, after the array header EXEC wrote
			// for them (a malformed reply, as Redis's).
			c.RestOfExec = discardWriter{proto: me.w.proto}
		}
	case engine.EqFold(c.Args[2], "skip"):
		if !me.reply.off {
			me.reply.skipNext = true
		}
	default:
		c.W.WriteError(engine.ErrSyntax)
	}
}
