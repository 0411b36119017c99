// Package server is tumbler's wire: a redcon front end speaking RESP2 and
// RESP3, per-connection state (protocol, authentication, name), the
// connection-level commands, the background expiry loop, and the API for
// embedding tumbler in a program or a test.
//
//	srv := server.New(server.Config{Addr: "127.0.0.1:0"})
//	if err := srv.Start(); err != nil { ... }
//	defer srv.Close()
//	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
//
// In tests, RunT starts a server on a free loopback port and closes it when
// the test ends.
//
// # Concurrency
//
// Each connection is served by its own goroutine (redcon's model): every
// complete command of one read is handled in order, then the replies are
// flushed once. Commands reach the engine, which serialises keyspace
// access. All Server methods are safe for concurrent use.
package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/expiry"
	"github.com/tumblerdb/tumbler/luavm"
)

// Config configures a Server.
type Config struct {
	// Addr is the TCP address to listen on; default "127.0.0.1:6379".
	// Port 0 picks a free port (see Server.Addr).
	Addr string
	// RequirePass, if set, makes clients authenticate (AUTH / HELLO AUTH)
	// as the default user with this password.
	RequirePass string
	// LuaTimeLimit is the busy-script threshold; default 5s.
	LuaTimeLimit time.Duration
	// Clock supplies time; default the system clock. Use
	// expiry.NewManualClock for deterministic tests.
	Clock expiry.Clock
	// MaxClients is reported by INFO and CONFIG GET; default 10000.
	MaxClients int
	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger
}

// Errors returned by Start.
var (
	ErrStarted = errors.New("tumbler: server already started")
	ErrClosed  = errors.New("tumbler: server closed")
)

// Server is a running tumbler instance.
type Server struct {
	cfg  Config
	eng  *engine.Engine
	vm   *luavm.VM
	log  *slog.Logger
	port int

	mu      sync.Mutex
	ln      net.Listener
	started bool
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup

	nextID  atomic.Int64
	clients sync.Map // *client -> struct{}
	nconns  atomic.Int64
	closing atomic.Bool
}

// New returns a server; Start makes it listen.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:6379"
	}
	if cfg.Clock == nil {
		cfg.Clock = expiry.NewSystemClock()
	}
	if cfg.LuaTimeLimit <= 0 {
		cfg.LuaTimeLimit = 5 * time.Second
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	s.eng = engine.New(engine.Config{Clock: cfg.Clock, BusyThreshold: cfg.LuaTimeLimit})
	s.vm = luavm.Install(s.eng)
	s.eng.SetInfoProvider(s)
	s.registerConnCommands()
	s.registerBlocking() // blocking.go: CLIENT UNBLOCK
	s.registerParams()
	return s
}

// Engine returns the server's engine (for embedders and tests).
func (s *Server) Engine() *engine.Engine { return s.eng }

// Start listens on the configured address and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return ErrStarted
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("tumbler: cannot listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		s.port = ta.Port
	}
	s.started = true
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.busyLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ln)
	}()
	go func() {
		defer s.wg.Done()
		s.expireLoop()
	}()
	return nil
}

// Addr returns the address the server listens on, "host:port".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return s.cfg.Addr
	}
	return s.ln.Addr().String()
}

// Close stops listening, closes every connection and stops the expiry
// loop. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	s.closing.Store(true)
	// No script may run past this point, including ones already queued in
	// a connection's pipeline, or the wait below would hang behind them.
	s.vm.Close()
	close(s.done)
	if !started {
		return nil
	}
	err := s.ln.Close()
	s.clients.Range(func(k, _ any) bool {
		_ = k.(*client).nc.Close()
		return true
	})
	s.wg.Wait()
	return err
}

// expireLoop is the active expiry: it sleeps until the next deadline (or
// until a nearer one is set), then reclaims due keys in bounded batches,
// yielding between batches so a mass expiry never stalls clients.
func (s *Server) expireLoop() {
	const batch = 256
	buf := make([]expiry.Item, 0, batch)
	_, manual := s.cfg.Clock.(*expiry.ManualClock)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		n, next, ok := s.eng.ReclaimDue(batch, buf)
		if n == batch {
			select {
			case <-s.done:
				return
			default:
			}
			runtime.Gosched()
			continue
		}
		var tc <-chan time.Time
		if ok && !manual {
			d := time.Duration(next-s.eng.Now()) * time.Millisecond
			if d < time.Millisecond {
				d = time.Millisecond
			}
			timer.Reset(d)
			tc = timer.C
		}
		select {
		case <-s.done:
			timer.Stop()
			return
		case <-s.eng.Wake():
		case <-tc:
		}
		timer.Stop()
	}
}

// busyLoop lets the engine hand the keyspace lock over from a script past
// the busy threshold, so that commands queued behind it reply BUSY. It
// sleeps until a script starts, then until that script could reach the
// threshold; only while a busy script runs does it look every 20 ms.
func (s *Server) busyLoop() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.eng.ScriptStarted():
		}
		for {
			start := s.eng.ScriptStart()
			if start.IsZero() {
				break
			}
			wait := s.eng.BusyThreshold() - time.Since(start)
			if wait <= 0 {
				s.eng.YieldIfBusy()
				wait = 20 * time.Millisecond
			}
			timer.Reset(wait)
			select {
			case <-s.done:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}
}

// ServerInfo implements engine.InfoProvider.
func (s *Server) ServerInfo() engine.ServerInfo {
	return engine.ServerInfo{
		Port:             s.port,
		ConnectedClients: int(s.nconns.Load()),
		MaxClients:       s.cfg.MaxClients,
	}
}

func (s *Server) registerParams() {
	s.eng.RegisterParam("port", func() string { return strconv.Itoa(s.port) })
	s.eng.RegisterParam("bind", func() string {
		host, _, err := net.SplitHostPort(s.cfg.Addr)
		if err != nil {
			return ""
		}
		return host
	})
	s.eng.RegisterParam("requirepass", func() string { return s.cfg.RequirePass })
	s.eng.RegisterParam("maxclients", func() string { return strconv.Itoa(s.cfg.MaxClients) })
}

// acceptLoop serves each accepted connection on its own goroutine until
// the listener closes.
func (s *Server) acceptLoop(ln net.Listener) {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.wg.Add(1)
		go s.serveConn(nc)
	}
}

// checkPassword compares in constant time.
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	if s.cfg.RequirePass == "" {
		return true
	}
	return subtle.ConstantTimeCompare(pass, []byte(s.cfg.RequirePass)) == 1
}
