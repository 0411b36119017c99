// Command tumbler is a Redis-protocol lock server.
//
//	tumbler [config-file] [--directive value ...] [-]
//	tumbler --port 6379 --bind 127.0.0.1 --requirepass secret --lua-time-limit 5000 --restart-delay 30s
//	tumbler /etc/tumbler.conf --port 7000
//
// The config file uses redis.conf syntax; every directive is also a flag,
// read as redis-server reads its command line (cmdline.go), and flags
// override the file (see docs/configuration.md).
package main

import (
	"errors"
	"fmt"
	"github.com/tumblerdb/tumbler/engine"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/tumblerdb/tumbler/server"
)

func main() {
	// As redis-server: a closed terminal (SIGHUP) or a log reader gone
	// (SIGPIPE, a write to stderr's broken pipe) does not stop the server.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	cl, err := parseCmdline(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	switch {
	case cl.version:
		fmt.Printf("tumbler v=%s redis_version=%s go=%s bits=64\n", engine.BuildVersion(), engine.Version, runtime.Version())
		return
	case cl.help:
		usage(os.Stderr)
		os.Exit(1) // as redis-server --help
	}
	var stdin []byte
	if cl.stdin {
		if stdin, err = io.ReadAll(os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "tumbler: reading config from standard input:", err)
			os.Exit(1)
		}
	}
	l, err := loadConfig(cl.confPath, stdin, cl.directives)
	if err != nil {
		var ce *server.ConfigError
		if errors.As(err, &ce) && ce.LogLine {
			// as redis-server's serverLog before its log is set up: on
			// standard output, as a process that is not yet the server ('C')
			os.Stdout.Write(earlyLogLine(ce.Reason))
		} else {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
	cfg, warnings := l.cfg, l.warnings
	ready := func() {}
	if cfg.Daemonize && !supervisedByEnv(cfg.Supervised) { // as redis-server: a supervised server stays in the foreground
		ready = daemonize(stdin) // returns in the daemon only (daemon_unix.go)
		if cfg.PidFile == "" {
			cfg.PidFile = defaultDaemonPidFile // as redis-server
		}
	}
	// As redis-server's logfile "": standard output (what fails before
	// the log is set up goes to standard error, as Redis's config errors).
	var logOut io.Writer = os.Stdout
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.Path(cfg.LogFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644) // relative to dir
		if err != nil {
			fmt.Fprintln(os.Stderr, &server.ConfigError{File: cfg.ConfigFile, Reason: "Can't open the log file: " + server.ErrText(err)})
			os.Exit(1)
		}
		defer f.Close()
		logOut = f
	}
	cfg.Logger = slog.New(newRedisLogHandler(logOut))        // logfmt.go
	nofileNotices, nofileWarnings, err := fitOpenFiles(&cfg) // maxclients and ulimit -n (nofile_unix.go)
	if err != nil {
		cfg.Logger.Error(err.Error())
		if logOut != os.Stderr {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
	// CONFIG SET maxclients fits the limit again, as Redis's
	// updateMaxclients; a limit that leaves no client by then exits, as
	// Redis does.
	var srv *server.Server
	cfg.FitOpenFiles = func(maxClients int) (int, []string, []string) {
		fit, notices, warnings, err := adjustOpenFiles(maxClients) // nofile_unix.go
		if err != nil {
			srv.Logger().Error(err.Error()) // (the log only, as Redis's serverLog)
			os.Exit(1)
		}
		return fit, notices, warnings
	}
	// ---- end of configuration ----

	srv = server.New(cfg)
	log := srv.Logger()
	for _, w := range warnings {
		log.Warn("config: " + w)
	}
	for _, n := range nofileNotices {
		log.Info(n)
	}
	for _, w := range nofileWarnings {
		log.Warn(w)
	}
	// Caught from before the server listens: a SIGTERM sent as soon as it
	// answers still stops it cleanly (profile written, pid file removed).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	sup := resolveSupervisor(cfg.Supervised, log)
	if err := srv.Start(); err != nil {
		log.Error(err.Error()) // in the log file too, as Redis's "Failed listening on port"
		if logOut != os.Stderr {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(1)
	}
	// Fewer collections while the live heap is small (gcfloor.go).
	defer keepHeapFloor(defaultHeapFloor, srv.Engine().MaxMemory)()
	if l.cpuProfile != "" {
		stop, err := startCPUProfile(l.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tumbler: --cpuprofile:", err)
			srv.Close()
			os.Exit(1)
		}
		defer stop()
	}
	pidWritten := false
	if cfg.PidFile != "" { // as redis-server: written once listening, removed at exit
		if err := os.WriteFile(cfg.Path(cfg.PidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Warn("Failed to write PID file: " + err.Error())
		} else {
			pidWritten = true
		}
	}
	where := []any{"addr", srv.Addr()}
	if srv.TLSAddr() != "" {
		where = append(where, "tls_addr", srv.TLSAddr())
	}
	if cfg.UnixSocket != "" {
		where = append(where, "unixsocket", cfg.Path(cfg.UnixSocket))
	}
	// Redis's own words, which scripts and test harnesses wait for in its
	// log (Redis 7.0 writes "Ready to accept connections").
	log.Info("Ready to accept connections", where...)
	if cfg.RestartDelay > 0 {
		// an operator should know why writes are refused for a while
		log.Warn("restart delay: lock grants reply nil and other writes are refused until it passes (Redlock's delayed restart)",
			"restart_delay", cfg.RestartDelay.String())
	}
	sup.ready(log)
	ready() // daemonize: the command that started the daemon returns
	// The shutdown, in redis-server's words (harnesses and alerts watch
	// its log for them).
	select {
	case s := <-sig:
		name := "SIGTERM"
		if s == syscall.SIGINT {
			name = "SIGINT"
		}
		log.Warn("Received " + name + " scheduling shutdown...")
		log.Warn("User requested shutdown...")
	case <-srv.Done(): // obs: a client sent SHUTDOWN (which logs "User requested shutdown...")
	}
	sup.stopping(log)
	if pidWritten {
		log.Info("Removing the pid file.")
		_ = os.Remove(cfg.Path(cfg.PidFile))
	}
	if cfg.UnixSocket != "" {
		log.Info("Removing the unix socket file.") // (closing its listener does)
	}
	srv.Close()
	log.Warn("tumbler is now ready to exit, bye bye...")
}

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
