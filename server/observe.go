package server

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file is the server's side of observability and operations: the
// instantaneous_ops_per_sec sampler, the metrics listener (metrics.go),
// connection logs, log levels, and SHUTDOWN.

// PeerAddr implements engine.PeerAddr for the slow log.
func (c *client) PeerAddr() string { return c.addr }

// registerObserve adds SHUTDOWN.
func (s *Server) registerObserve() {
	s.eng.Register(&engine.Command{Name: "shutdown", Arity: -1,
		Flags: engine.FlagNoKeys | engine.FlagNoScript | engine.FlagNoMulti | engine.FlagAdmin | engine.FlagLoading | engine.FlagStale | engine.FlagAllowBusy,
		Group: "server", Summary: "Synchronously saves the database(s) to disk and shuts down the Redis server.", Fn: s.cmdShutdown})
}

// startObserve opens the metrics listener, if one is configured, and
// starts the ops/sec sampler. Start calls it before it begins serving; an
// error leaves nothing running.
func (s *Server) startObserve() error {
	if s.cfg.MetricsAddr != "" {
		if err := s.startMetrics(s.cfg.MetricsAddr); err != nil {
			return err
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sampleLoop()
	}()
	return nil
}

// sampleLoop samples the command rate every 100 ms, as Redis's serverCron
// does for instantaneous_ops_per_sec, and checks the subscribers' output
// limits, as its clientsCron does.
func (s *Server) sampleLoop() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			if s.cronPaused.Load() { // DEBUG PAUSE-CRON 1
				continue
			}
			s.eng.SampleOps(now)
			s.peaks.track(s, now) // clientsCronTrackExpansiveClients, once a second
			s.checkPushLimits()   // clientsCron's output limit check (pubsub.go)
			s.evictionTick()      // and its measure of every client, for maxmemory-clients (evict.go)
		}
	}
}

// serveLogged serves a connection with debug logs of its start and end.
// Its end counts for Close (s.wg) only once the last log line is written.
func (s *Server) serveLogged(nc net.Conn, id int64) {
	defer s.wg.Done()
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.serveConn(nc, id)
		return
	}
	addr := nc.RemoteAddr().String()
	s.log.Debug("accepted", "addr", addr)
	start := time.Now()
	s.serveConn(nc, id)
	s.log.Debug("client closed connection", "addr", addr, "duration", time.Since(start))
}

// Done returns a channel closed when the server closes: by Close, or by a
// client's SHUTDOWN. A program embedding the server waits on it to exit.
func (s *Server) Done() <-chan struct{} { return s.done }

// ShutdownRequested reports whether SHUTDOWN closed the server.
func (s *Server) ShutdownRequested() bool { return s.shutdown.Load() }

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
//
// tumbler keeps no data on disk, so SAVE and NOSAVE differ only while a
// script is busy: then, as in Redis, only SHUTDOWN NOSAVE goes ahead. The
// server closes at once (there is never a shutdown in progress to ABORT);
// the client gets no reply, its connection closes.
func (s *Server) cmdShutdown(c *engine.Ctx) {
	var nosave, save, abort, other bool
	for _, a := range c.Args[1:] {
		switch {
		case engine.EqFold(a, "nosave"):
			nosave = true
		case engine.EqFold(a, "save"):
			save = true
		case engine.EqFold(a, "now"), engine.EqFold(a, "force"):
			other = true
		case engine.EqFold(a, "abort"):
			abort = true
		default:
			c.W.WriteError(engine.ErrSyntax)
			return
		}
	}
	if (abort && (nosave || save || other)) || (nosave && save) {
		c.W.WriteError(engine.ErrSyntax)
		return
	}
	if abort {
		c.W.WriteError("ERR No shutdown in progress.")
		return
	}
	// Sent while a script or an EXEC runs, SHUTDOWN reaches Redis once
	// it ends or the script is busy, and then needs NOSAVE: an EXEC (its
	// scripts after the first too) is never cut short by a plain SHUTDOWN.
	if !s.eng.WaitScripts() {
		if !nosave {
			c.W.WriteError(s.eng.BusyError())
			return
		}
		s.cutShort.Store(true)
	}
	s.log.Warn("User requested shutdown...", "addr", cl(c).addr)
	s.shutdown.Store(true)
	cl(c).closeNow = true
	// No connection is accepted from now on, before this one closes: a
	// client that sees it close and dials again is refused, as by Redis,
	// which has exited by then. (Close, which closes the listeners too,
	// runs on its own and could come after.)
	s.stopListening()
	go s.Close() // Close waits for this connection's goroutine
}

// stopListening closes every listener. Close closes them again, which
// does nothing more; the accept loops end as they do in Close.
func (s *Server) stopListening() {
	s.mu.Lock()
	lns := s.listeners()
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// LevelVerbose is Redis's "verbose" log level.
const LevelVerbose = slog.LevelDebug + 2

// clientPeaks is Redis's record of expansive clients
// (clientsCronTrackExpansiveClients): the largest input and output
// buffers a client had, in a slot for each of the last 8 seconds, for
// INFO's client_recent_max_input_buffer and _output_buffer. Every
// connection is looked at once a second, as Redis's clientsCron looks at
// each once a second.
type clientPeaks struct {
	mu      sync.Mutex
	last    int64 // the second of the last look
	in, out [8]int64
}

// track looks at every connection, if the second changed since the last
// look: its input (read buffer, partial request, arguments) and its
// unwritten output.
func (p *clientPeaks) track(s *Server, now time.Time) {
	sec := now.Unix()
	p.mu.Lock()
	defer p.mu.Unlock()
	if sec == p.last {
		return
	}
	p.last = sec
	slot := sec % 8
	// the slot after this one is the oldest: cleared, as Redis clears it
	next := (slot + 1) % 8
	p.in[next], p.out[next] = 0, 0
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		qbuf, free, argv := c.inputMem(false)
		p.in[slot] = max(p.in[slot], int64(qbuf+free+argv))
		p.out[slot] = max(p.out[slot], int64(c.pendingOutput())+c.mem.writing.Load())
		return true
	})
}

// max returns the largest input and output of the last 8 seconds.
func (p *clientPeaks) max() (in, out int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for j := range p.in {
		in, out = max(in, p.in[j]), max(out, p.out[j])
	}
	return in, out
}
