package engine

// min-replicas-to-write and min-replicas-max-lag. tumbler is a master
// that never has a replica, so with both above 0 Redis's
// checkGoodReplicasStatus always fails for it: write commands are
// refused, as a Redis master with no replica connected refuses them.

// ErrNoReplicas is Redis's reply to a write refused for want of replicas.
const ErrNoReplicas = "NOREPLICAS Not enough good replicas to write."

// SetMinReplicas applies min-replicas-to-write and min-replicas-max-lag.
func (e *Engine) SetMinReplicas(toWrite, maxLag int64) {
	e.noReplicas.Store(toWrite > 0 && maxLag > 0)
}

// writeCall reports whether processCommand counts the command c runs a
// write command (is_write_command): see writes; an EXEC is one when a
// command it queued is (mstate.cmd_flags).
func (e *Engine) writeCall(c *Ctx, cmd *Command) bool {
	if cmd.Name == "exec" {
		return c.Client != nil && c.Client.AnyQueued(e.writes)
	}
	return e.writes(cmd, c.Args)
}

// writes reports whether cmd with args is a write command: flagged write,
// or an EVAL, EVALSHA or FCALL (or their _RO forms) whose script or
// function declares flags without no-writes (scriptFlagsToCmdFlags). An
// EVAL of a script without a shebang is not: its writes are checked one
// by one as it makes them (Ctx.Call).
func (e *Engine) writes(cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagWrite != 0 {
		return true
	}
	fl, ok := e.scriptFlags(cmd, args)
	return ok && fl.Writes()
}
