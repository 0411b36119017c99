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
// On Linux, plain TCP and Unix socket connections are served by event
// loops, as Redis serves them: one goroutine per loop reads every ready socket, runs the
// complete commands of each read in order, then writes the replies
// (eventloop_linux.go). A connection moves to its own goroutine for
// anything that may wait (a blocked command, a long script, a pause,
// pushes); TLS connections, and all of them elsewhere or with Config
// NoEventLoop, always have one (redcon's model). Commands reach the
// engine, which serialises keyspace access. All Server methods are safe
// for concurrent use.
package server

import (
	"crypto/tls"
	"errors"
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
	// Port 0 picks a free port (see Server.Addr). Its host may be written
	// as bind's first address is: "*" (every IPv4 address), "::*" (every
	// IPv6 one), and a leading "-" makes it optional (skipped when the
	// host has no such address, as Redis skips it).
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
	// FitOpenFiles, if set, fits the process's open files limit to a
	// maxclients that CONFIG SET changes, as Redis's updateMaxclients
	// calls adjustOpenFilesLimit: it raises the limit where it can and
	// returns the maxclients the limit allows (maxClients when it fits),
	// with the lines to log (notices, warnings). When that is less, the
	// CONFIG SET fails with Redis's "The operating system is not able to
	// handle the specified number of clients, try with N" and maxclients
	// keeps its value. The tumbler binary sets it (RLIMIT_NOFILE,
	// cmd/tumbler/nofile_unix.go, which also fits the limit at start);
	// unset, as in embedded servers and RunT, the process's limit is left
	// alone and every maxclients is taken.
	FitOpenFiles func(maxClients int) (fit int, notices, warnings []string)
	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger

	// RestartDelay, if set, makes the server refuse writes to keys for
	// this long (on its clock) after it starts and after every Restart:
	// the "delayed restart" that keeps a node which lost its locks in a
	// crash from granting them again (see Restart). Lock grants (SET NX,
	// SETNX, MSETNX) are answered as if the lock were held by someone
	// else, other writes with an error; FUNCTION's writes go through.
	RestartDelay time.Duration
	// CommandLog is how many received commands the server keeps for
	// Commands; 0 (New's default) keeps none. RunT keeps 1024.
	CommandLog int
	// EnableDebugCommand allows DEBUG as Redis's enable-debug-command
	// does: "no" (the default, as in Redis 7), "yes", or "local" (from
	// loopback connections only). RunT sets "yes".
	EnableDebugCommand string

	// ---- Security, limits and configuration (auth.go, tls.go,
	// limits.go, config.go). Every field can also be set by the
	// config-file directive named in its comment.

	// Users are the users of the configuration, with their ACL rules
	// (user); the default user is declared as "default".
	Users []User
	// RenameCommands rename commands, in order (rename-command from to):
	// a command renamed is known to clients and scripts by its new name
	// only, and one renamed to "" not at all (server/rename.go).
	RenameCommands []CommandRename
	// ACLFile is the ACL file users are loaded from at start-up and by
	// ACL LOAD, and saved to by ACL SAVE (aclfile); it excludes Users.
	ACLFile string
	// NoProtectedMode turns protected mode off (protected-mode no).
	NoProtectedMode bool
	// ExtraAddrs are more hosts to listen on with Addr's port (bind's
	// second and later addresses); a leading "-" makes one optional.
	ExtraAddrs []string
	// TLSAddr is the TLS listener's address (tls-port); "" means no TLS,
	// an empty host means Addr's host and ExtraAddrs, port 0 a free port.
	TLSAddr string
	// TLSOnly disables the plain TCP listener (port 0).
	TLSOnly bool
	// NoBind is an empty bind (bind ""), as Redis's empty list of bind
	// addresses: no TCP listener, plain or TLS, listens on them, so only
	// the unix socket (or a TLS address with a host of its own) serves.
	NoBind bool
	// UnixSocket, if set, is a Unix domain socket to listen on as well
	// (unixsocket; relative to Dir): an existing file there is replaced,
	// as Redis does, and removed when the server closes. Its mode is the
	// unixsocketperm parameter's (octal; 0, the default, leaves the
	// umask's). With TLSOnly and no TLSAddr it is the only listener.
	UnixSocket string
	// TLSConfig, if set, is used as is; otherwise the TLS configuration is
	// built from the files below (tls-cert-file, tls-key-file,
	// tls-ca-cert-file, tls-ca-cert-dir), TLSAuthClients (tls-auth-clients:
	// "yes", the default, "no" or "optional") and TLSProtocols
	// (tls-protocols, default TLSv1.2 and later).
	TLSConfig *tls.Config
	// Dir is the dir directive's directory, made absolute. Redis changes
	// to it, so its relative file paths (aclfile, logfile, pidfile, the
	// TLS files) are relative to it; tumbler never changes its working
	// directory and reads those paths against Dir instead (Config.Path).
	Dir            string
	TLSCertFile    string
	TLSKeyFile     string
	TLSCACertFile  string
	TLSCACertDir   string
	TLSAuthClients string
	TLSProtocols   string
	// Timeout closes a connection idle that long; 0 never (timeout).
	Timeout time.Duration
	// MaxMemory refuses commands flagged denyoom while the Go heap in use
	// exceeds it, in bytes; 0 means no limit (maxmemory).
	MaxMemory uint64
	// ProtoMaxBulkLen is the longest bulk argument; default 512 MB, at
	// least 1 MB (proto-max-bulk-len).
	ProtoMaxBulkLen int64
	// MaxMultibulkLen caps a request's argument count; default 1M, at
	// least 1024.
	MaxMultibulkLen int
	// ClientQueryBufferLimit closes a client whose incomplete request
	// outgrows it; default 1 GB (client-query-buffer-limit).
	ClientQueryBufferLimit int64
	// OutputBufferLimits are the per-class output limits; the zero value
	// means Redis's defaults (client-output-buffer-limit).
	OutputBufferLimits OutputBufferLimits
	// LogLevel is debug, verbose, notice (the default) or warning
	// (loglevel); it filters what reaches Logger.
	LogLevel string
	// LogFile is where the tumbler binary writes its log (logfile); the
	// server itself only reports it.
	LogFile string
	// PidFile is where the tumbler binary writes its process id while it
	// runs (pidfile), as redis-server does; the server itself only
	// reports it.
	PidFile string
	// Daemonize makes the tumbler binary run in the background
	// (daemonize), as redis-server does; the server itself only reports
	// it.
	Daemonize bool
	// Supervised is how the tumbler binary tells a supervisor it is ready
	// (supervised: no, upstart, systemd, auto), as redis-server does; the
	// server itself only reports it.
	Supervised string
	// ConfigFile is the config file the settings came from, for CONFIG
	// REWRITE and INFO.
	ConfigFile string
	// MetricsAddr, if set, serves Prometheus metrics at
	// http://MetricsAddr/metrics (metrics-addr; server/metrics.go).
	MetricsAddr string
	// NoEventLoop serves every connection with a goroutine of its own
	// (event-loop no). By default plain TCP and Unix socket connections
	// on Linux are served by event loops, as Redis serves them
	// (eventloop_linux.go).
	NoEventLoop bool
	// EventLoops is how many event loops serve connections; 0 means
	// GOMAXPROCS.
	EventLoops int
	// LuaMemoryLimit is how much the heap may grow while one Lua script
	// runs before the script is stopped; 0 means 256 MB, negative no
	// limit (lua-memory-limit; luavm/memory.go).
	LuaMemoryLimit int64
	// SlowlogLogSlowerThan is slowlog-log-slower-than in microseconds
	// (negative: no slow log; 0: every command) and SlowlogMaxLen
	// slowlog-max-len; nil means Redis's defaults, 10000 and 128.
	SlowlogLogSlowerThan *int64
	SlowlogMaxLen        *int64
	// NotifyKeyspaceEvents is notify-keyspace-events: the classes of
	// keyspace notifications published (engine.ParseKeyspaceEvents's
	// flags; 0, the default, publishes none).
	NotifyKeyspaceEvents uint32
	// Encodings are the thresholds of the compact encodings that OBJECT
	// ENCODING reports (hash-max-listpack-entries, hash-max-listpack-value,
	// set-max-intset-entries, zset-max-listpack-entries,
	// zset-max-listpack-value, list-max-listpack-size, list-compress-depth,
	// and the old *-ziplist-* names); nil means Redis 7.0's defaults.
	// The directives replace the value pointed to, never change it.
	Encodings *engine.EncodingLimits

	// params are the Redis parameters tumbler accepts and reports but
	// does not act on (hz, appendfsync...: config_params.go), and those
	// it acts on (tcp-keepalive, oom-score-adj...: actedParams),
	// by name, as CONFIG GET shows them; a parameter not in the map has
	// Redis's default. Set them with ApplyDirective or LoadConfigFile. A
	// change replaces the map, never modifies it, so copies of a Config
	// (CONFIG SET's) never share one.
	params map[string]string
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

	mu       sync.Mutex
	ln       net.Listener
	started  bool
	closed   bool
	done     chan struct{}
	closeEnd chan struct{} // closed when Close has finished
	wg       goroutines    // every goroutine the server starts (goroutines.go)

	nextID  atomic.Int64
	clients sync.Map // *client -> struct{}
	nconns  atomic.Int64
	// push-capable connections (enablePush) not yet gone (uncountPush):
	// the output limit cron checks them (pubsub.go)
	pushConns atomic.Int64
	closing   atomic.Bool
	evict     clientEviction // maxmemory-clients (evict.go)
	// cronPaused (DEBUG PAUSE-CRON) stops the 100 ms tick (sampleLoop).
	cronPaused atomic.Bool
	peaks      clientPeaks // INFO's client_recent_max_*_buffer (observe.go)

	fx          fixture   // test-fixture and fault state (server/fixture.go)
	prod        prodState // security, limits and configuration (config.go)
	pubsubState           // pub/sub and client tracking (pubsub.go, tracking.go)

	// The active expiry's pauses for clients (expireLoop): the probe of
	// client input, whether a pause is on, and the kick that ends it.
	probe         *inputProbe
	expiryPausing atomic.Bool
	expiryKick    chan struct{}

	// The timings below, copied from their package variables by New, so
	// that a test that changes one for its own server leaves no other
	// server's goroutines reading it as it changes back.
	expirySlice      time.Duration // expirySlice
	expiryPauseMax   time.Duration // expiryPauseMax
	shutdownDrainMax time.Duration // shutdownDrainMax
	drainStuck       time.Duration // drainStuck

	loops     []*ioLoop // the event loops, started by Start (eventloop_linux.go)
	loopStats loopStats

	shutdown atomic.Bool // obs: SHUTDOWN closed the server (server/observe.go)
	// cutShort: SHUTDOWN NOSAVE stopped a busy script, as Redis exits in
	// the middle of it: replies from then on are not sent (handle).
	cutShort    atomic.Bool
	metricsAddr atomic.Value // obs: string, the metrics listener's address (server/metrics.go)
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
	s := &Server{cfg: cfg, log: cfg.Logger, done: make(chan struct{}), closeEnd: make(chan struct{}), expiryKick: make(chan struct{}, 1),
		expirySlice: expirySlice, expiryPauseMax: expiryPauseMax, shutdownDrainMax: shutdownDrainMax, drainStuck: drainStuck}
	dbs, _ := strconv.Atoi(cfg.param("databases", "16")) // checked by the config parser
	s.eng = engine.New(engine.Config{Clock: cfg.Clock, BusyThreshold: cfg.LuaTimeLimit, Databases: dbs})
	s.eng.OnReleaseMemory(sharedReadBufs.drain) // pooled read buffers go first (readbuf.go)
	s.vm = luavm.Install(s.eng)
	s.eng.SetInfoProvider(s)
	s.registerConnCommands()
	s.registerPubSub()   // pubsub.go
	s.registerTracking() // tracking.go
	s.registerProbes()   // probes.go
	s.registerModule()   // module.go
	s.registerObserve()  // obs: SHUTDOWN (server/observe.go)
	s.registerBlocking() // blocking.go: CLIENT UNBLOCK
	s.initFixture()      // fixture: MONITOR, DEBUG, CLIENT PAUSE/KILL, fault state (server/fixture.go)
	s.initConfig()       // live settings, CONFIG GET/SET, users, limits (config.go)
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
	if msg := s.prod.startErr; msg != "" { // the configured renames and users (config.go)
		return errors.New(msg)
	}
	if s.probe == nil {
		s.probe = newInputProbe() // once, before any accept loop starts; Close closes it
	}
	s.setOOMScoreAdj(s.live()) // as redis-server at start (oomscore.go); a failure is logged
	ln, err := s.listen()      // plain, extra bind and TLS listeners (tls.go)
	if err != nil {
		return err
	}
	if err := s.startObserve(); err != nil { // obs: ops/sec sampler, metrics listener (server/observe.go)
		_ = ln.Close()
		s.closeListeners()
		return err
	}
	s.ln = ln
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		s.port = ta.Port
	}
	if n := loopCount(&s.cfg); !s.cfg.NoEventLoop && n > 0 {
		if err := s.startLoops(n); err != nil {
			s.log.Warn("event loop unavailable, a goroutine per connection", "err", err)
		}
	}
	s.started = true
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.busyLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.collectFreed()
	}()
	s.beginServing() // fixture: the accept loops, started the same way again by Restart (server/fixture.go)
	go func() {
		defer s.wg.Done()
		s.expireLoop()
	}()
	return nil
}

// collectFreedAfter is how long after a command freed much data (a
// FLUSHALL, the UNLINK of a large set) the server collects, unless Go
// has collected meanwhile: at most one such collection in that time.
var collectFreedAfter = 250 * time.Millisecond

// collectFreed makes memory that commands freed show in used_memory soon
// (engine.FreedMuch): Go would leave it counted until its next collection,
// which a server gone quiet may not make for two minutes.
func (s *Server) collectFreed() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.eng.FreedMuch():
		}
		cycles := engine.GCCycles()
		t.Reset(collectFreedAfter)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-t.C:
		}
		s.eng.CollectFreed(cycles)
	}
}

// Addr returns the address the server listens on, "host:port". Before
// Start (and after Close), and while a CONFIG SET bind has left it
// listening nowhere, it is the configured address, which with port 0 is
// not one a client can reach: call it after Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return s.cfg.Addr
	}
	return s.ln.Addr().String()
}

// Close stops listening, closes every connection and stops the expiry
// loop. It is safe to call more than once: a call while another runs
// (SHUTDOWN's, which Done announced) returns once that one has finished,
// so a program that exits after Close does not cut short the replies
// SHUTDOWN lets connections send (drainForShutdown).
func (s *Server) Close() error {
	defer s.wg.calling(goroutineID())() // (a predicate's Close: goroutines)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closeEnd
		return nil
	}
	s.closed = true
	defer close(s.closeEnd)
	started := s.started
	lns := s.listeners() // Restart and rebind replace them under mu
	s.mu.Unlock()
	s.closing.Store(true)
	// No script may run past this point, including ones already queued in
	// a connection's pipeline, or the wait below would hang behind them.
	s.vm.Close()
	s.eng.Close() // MIGRATE's connections to its targets
	close(s.done)
	if !started {
		s.probe.close() // a failed Start made it
		return nil
	}
	var err error
	for i, ln := range lns { // the primary, then the others (tls.go)
		if e := ln.Close(); i == 0 && !errors.Is(e, net.ErrClosed) {
			err = e // (closed: a Restart has it closed, nothing went wrong)
		}
	}
	if s.shutdown.Load() {
		s.drainForShutdown(s.shutdownDrainMax)
	}
	s.clients.Range(func(k, _ any) bool {
		k.(*client).closeNC()
		return true
	})
	s.stopLoops()
	s.wg.Wait()
	s.probe.close()
	return err
}

// drainForShutdown lets each connection end the batch it is running and
// send its replies before SHUTDOWN closes it, as Redis has sent the
// replies of the commands it ran before a SHUTDOWN (an EXEC that SHUTDOWN
// waited for: its reply was still to be written when Close began). It
// shuts down the reading side of every connection (nothing is run from
// now on anyway: handle), so each goes as it reads the end, and waits up
// to timeout for them, but not for one whose peer takes none of its
// output for drainStuck (Redis exits without waiting for anyone). A
// blocked client sees the end as a hang-up; one a pause holds, or a TLS
// connection, is closed after the wait.
func (s *Server) drainForShutdown(timeout time.Duration) {
	type draining struct {
		c       *client
		unsent  int       // the socket's unacknowledged output when last looked at
		since   time.Time // when it last changed
		watched bool      // unsentBytes can tell
	}
	var open []draining
	now := time.Now()
	s.clients.Range(func(k, _ any) bool {
		c := k.(*client)
		if rc, ok := c.nc.(interface{ CloseRead() error }); ok && rc.CloseRead() == nil {
			n, ok := unsentBytes(c.nc)
			open = append(open, draining{c: c, unsent: n, since: now, watched: ok})
		}
		return true
	})
	deadline := now.Add(timeout)
	for len(open) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		now := time.Now()
		kept := open[:0]
		for _, d := range open {
			if _, ok := s.clients.Load(d.c); !ok {
				continue // gone
			}
			if d.watched {
				n, ok := unsentBytes(d.c.nc)
				switch {
				case !ok:
					d.watched = false
				case n != d.unsent || n == 0: // taking output, or none left to take
					d.unsent, d.since = n, now
				case now.Sub(d.since) >= s.drainStuck:
					continue // its peer reads nothing: not waited for
				}
			}
			kept = append(kept, d)
		}
		open = kept
	}
}

// drainStuck is how long SHUTDOWN's drain waits for a connection whose
// peer takes none of its output (a var for tests, which New copies).
var drainStuck = 250 * time.Millisecond

// shutdownDrainMax bounds SHUTDOWN's drain (a var for tests, which New
// copies).
var shutdownDrainMax = time.Second

// A mass expiry is reclaimed in slices of expirySlice. Between slices,
// if a client's input is waiting, the loop pauses until a client has been
// served (or expiryPauseMax passed): in a 1M-lock expiry a GET then waits
// about 0.3 ms at the median, and the reclaim runs flat out while no
// client waits (bench/RESULTS.md). While pauses end by their timeout
// instead (a client that sends without reading its replies keeps its
// socket ready without being served; or there is no probe, off Linux),
// slices double up to expirySliceMax, so the reclaim keeps most of its
// speed; the first pause a client ends brings them back to expirySlice.
const expirySliceMax = 8 * time.Millisecond

// expirySlice is the shortest slice (a var for tests, which New copies).
var expirySlice = 250 * time.Microsecond

// expiryPauseMax bounds a pause (a var for tests, which New copies).
var expiryPauseMax = time.Millisecond

// expireLoop is the active expiry: it sleeps until the next deadline (or
// until a nearer one is set), then reclaims due keys in bounded batches,
// letting waiting clients in between slices so a mass expiry never stalls
// them.
func (s *Server) expireLoop() {
	const batch = 256
	slice := time.Now() // the start of the current slice of reclaiming
	sliceLen := s.expirySlice
	_, manual := s.cfg.Clock.(*expiry.ManualClock)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		if !s.holdActiveExpiry() { // fixture: DEBUG SET-ACTIVE-EXPIRE 0 and CLIENT PAUSE hold active expiry (server/debug.go)
			return
		}
		n, next, ok := s.eng.ReclaimDue(batch)
		if n == batch {
			if time.Since(slice) < sliceLen {
				continue
			}
			// due keys are left for after the clients' turn: Redis's
			// expired_time_cap_reached_count
			s.eng.Stats.ExpireTimeCap.Add(1)
			s.eng.LatencySample("expire-cycle", time.Since(slice))
			if !s.probe.ready() {
				sliceLen = s.expirySlice
			} else {
				switch s.pauseExpiry(timer) {
				case pauseClosing:
					return
				case pauseTimedOut:
					sliceLen = min(2*sliceLen, expirySliceMax)
				default:
					sliceLen = s.expirySlice
				}
			}
			slice = time.Now()
			continue
		}
		s.eng.LatencySample("expire-cycle", time.Since(slice))
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
		slice = time.Now()
	}
}

// pauseExpiry lets the clients whose input is waiting run, between two
// slices of a mass expiry. runtime.Gosched is not enough: a goroutine
// always runnable keeps the scheduler from polling the network, and with
// GOMAXPROCS=1 clients would wait for sysmon's poll, 10 ms later. Blocking
// leaves the scheduler nothing to run, so it polls at once; the first
// client to write its replies kicks the loop awake (kickExpiry), as a
// timer shorter than a millisecond would not: the poll's finest wait is
// a millisecond. It reports how the pause ended.
func (s *Server) pauseExpiry(timer *time.Timer) pauseEnd {
	select {
	case <-s.expiryKick: // stale
	default:
	}
	s.expiryPausing.Store(true)
	timer.Reset(s.expiryPauseMax)
	defer func() {
		s.expiryPausing.Store(false)
		timer.Stop()
	}()
	end := pauseKicked
	select {
	case <-s.done:
		return pauseClosing
	case <-s.expiryKick:
	case <-timer.C:
		end = pauseTimedOut
	}
	// A goroutine woken by a channel runs next, ahead of the other
	// clients the network poll woke: let those run first.
	runtime.Gosched()
	return end
}

// pauseEnd is how a pause of the active expiry ended.
type pauseEnd uint8

const (
	pauseKicked   pauseEnd = iota // a client was served
	pauseTimedOut                 // expiryPauseMax passed first
	pauseClosing                  // the server is closing
)

// kickExpiry ends a pause of the active expiry (pauseExpiry); a connection
// calls it after writing a batch's replies.
func (s *Server) kickExpiry() {
	if s.expiryPausing.Load() {
		select {
		case s.expiryKick <- struct{}{}:
		default:
		}
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
			case <-s.eng.ScriptStarted():
				// another script started, or the threshold changed
				// (CONFIG SET busy-reply-threshold): work the wait out
				// again
				timer.Stop()
			}
		}
	}
}

// ServerInfo implements engine.InfoProvider.
func (s *Server) ServerInfo() engine.ServerInfo {
	si := engine.ServerInfo{
		Port:             s.port,
		ConnectedClients: int(s.nconns.Load()),
		MaxClients:       s.live().MaxClients,
		ConfigFile:       s.cfg.ConfigFile,
		// held by CLIENT PAUSE (faults.go): INFO cannot run while a
		// fixture Pause or DEBUG SLEEP holds commands
		PausedClients: s.pausedCommands(),
	}
	// hz: Redis's serverCron doubles it while there are more than 200
	// clients a tick (dynamic-hz), up to 500
	cfg := s.live()
	si.ConfiguredHz, _ = strconv.Atoi(cfg.param("hz", "10"))
	si.Hz = si.ConfiguredHz
	for cfg.param("dynamic-hz", "yes") == "yes" && si.Hz > 0 && si.ConnectedClients/si.Hz > 200 {
		if si.Hz *= 2; si.Hz > 500 {
			si.Hz = 500
			break
		}
	}
	if len(s.loops) > 0 {
		si.Multiplexing = "epoll" // the event loops (eventloop_linux.go)
	}
	s.pubsubInfo(&si) // pubsub.go
	si.RecentMaxInput, si.RecentMaxOutput = s.peaks.max()
	return si
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
		s.fixtureAccepted(nc) // fixture: Restart waits for these (server/fixture.go)
		// obs: serveConn with debug logs of accept and close (server/observe.go);
		// the ID is taken here, so that IDs (and CLIENT LIST) follow accept order
		go s.serveLogged(nc, s.nextID.Add(1))
	}
}
