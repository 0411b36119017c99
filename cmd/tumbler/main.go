// Command tumbler is a Redis-protocol lock server.
//
//	tumbler [config-file] [--directive value ...]
//	tumbler --port 6379 --bind 127.0.0.1 --requirepass secret --lua-time-limit 5000 --restart-delay 30s
//	tumbler /etc/tumbler.conf --port 7000
//
// The config file uses redis.conf syntax; every directive tumbler acts on
// is also a flag, and flags override the file (see docs/configuration.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/tumblerdb/tumbler/engine"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

func main() {
	// ---- fixture: the delayed restart (restart-delay) ----
	var restartDelay time.Duration
	restartDelaySet := false
	flag.Func("restart-delay", "refuse writes that could grant a lock for this long after starting: your longest lock TTL (milliseconds, or a duration such as 30s)", func(v string) error {
		d, err := parseDelay(v)
		restartDelay, restartDelaySet = d, true
		return err
	})
	// ---- obs: the metrics endpoint (metrics-addr) ----
	var metricsAddr string
	metricsAddrSet := false
	flag.Func("metrics-addr", "serve Prometheus metrics at http://HOST:PORT/metrics (off when empty)", func(v string) error {
		metricsAddr, metricsAddrSet = v, true
		return nil
	})
	// ---- --version / -v, as redis-server ----
	showVersion := false
	flag.BoolVar(&showVersion, "version", false, "print tumbler's version and the Redis version it speaks, and exit")
	flag.BoolVar(&showVersion, "v", false, "the same as --version")
	// ---- profiling: a CPU profile of the whole run (bench/RESULTS.md) ----
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile (pprof) of the run to this file, until SIGINT/SIGTERM or SHUTDOWN")
	// ---- configuration: config file, then directive flags (config.go) ----
	dflags := addDirectiveFlags(flag.CommandLine)
	_ = flag.CommandLine.Parse(gatherWords(os.Args[1:]))
	if showVersion {
		fmt.Printf("tumbler v=%s redis_version=%s go=%s bits=64\n", engine.BuildVersion(), engine.Version, runtime.Version())
		return
	}
	var confPath string
	if flag.NArg() > 0 { // tumbler /path/tumbler.conf [--flags...]
		confPath = flag.Arg(0)
		_ = flag.CommandLine.Parse(gatherWords(flag.Args()[1:]))
		if flag.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "tumbler: unexpected argument %q (only one config file may be given)\n", flag.Arg(0))
			os.Exit(1)
		}
	}
	cfg, warnings, err := loadConfig(confPath, dflags.set)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var logOut io.Writer = os.Stderr
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.Path(cfg.LogFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644) // relative to dir
		if err != nil {
			fmt.Fprintln(os.Stderr, &server.ConfigError{File: cfg.ConfigFile, Reason: "Can't open the log file: " + errors.Unwrap(err).Error()})
			os.Exit(1)
		}
		defer f.Close()
		logOut = f
	}
	// The server filters by loglevel itself (CONFIG SET loglevel).
	cfg.Logger = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
	// ---- end of configuration ----

	if restartDelaySet { // the flag overrides the file's restart-delay
		cfg.RestartDelay = restartDelay
	}
	if metricsAddrSet { // the flag overrides the file's metrics-addr
		cfg.MetricsAddr = metricsAddr
	}
	srv := server.New(cfg)
	log := srv.Logger()
	for _, w := range warnings {
		log.Warn("config: " + w)
	}
	// Caught from before the server listens: a SIGTERM sent as soon as it
	// answers still stops it cleanly (profile written, pid file removed).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	sup := resolveSupervisor(cfg.Supervised, log)
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tumbler: --cpuprofile:", err)
			srv.Close()
			os.Exit(1)
		}
		defer stop()
	}
	if cfg.PidFile != "" { // as redis-server: written once listening, removed at exit
		if err := os.WriteFile(cfg.Path(cfg.PidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Warn("Failed to write PID file: " + err.Error())
		} else {
			defer os.Remove(cfg.Path(cfg.PidFile))
		}
	}
	ready := []any{"addr", srv.Addr()}
	if srv.TLSAddr() != "" {
		ready = append(ready, "tls_addr", srv.TLSAddr())
	}
	log.Info("tumbler ready to accept connections", ready...)
	if cfg.RestartDelay > 0 {
		// an operator should know why writes are refused for a while
		log.Warn("restart delay: lock grants reply nil and other writes are refused until it passes (Redlock's delayed restart)",
			"restart_delay", cfg.RestartDelay.String())
	}
	sup.ready(log)
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case <-srv.Done(): // obs: a client sent SHUTDOWN
		log.Info("shut down by SHUTDOWN")
	}
	sup.stopping(log)
	srv.Close()
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

// parseDelay reads a duration given in milliseconds ("30000", as Redis's
// time options are) or with a unit ("30s").
func parseDelay(v string) (time.Duration, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("negative delay %q", v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("not milliseconds or a duration: %q", v)
	}
	return d, nil
}

// ---- directive flags (security, limits and configuration) ----

// flagExcluded are directives other code owns a flag for.
var flagExcluded = map[string]bool{"restart-delay": true, "metrics-addr": true}

// flagUsage describes the common flags; the others point to the docs.
var flagUsage = map[string]string{
	"port":                       "TCP port; 0 with --tls-port serves TLS only (default 6379)",
	"bind":                       "addresses to listen on, space-separated; a leading - makes one optional (default 127.0.0.1)",
	"requirepass":                "password of the default user: AUTH pass, AUTH default pass, HELLO 3 AUTH default pass",
	"user":                       "a named user, name:password or a user line (\"alice on >pw ~* +@all\"); repeatable",
	"protected-mode":             "yes|no: without a password, serve only loopback clients (default yes)",
	"lua-time-limit":             "milliseconds a script may run before other clients get BUSY (default 5000)",
	"busy-reply-threshold":       "same as --lua-time-limit",
	"lua-memory-limit":           "stop a Lua script whose heap growth passes this (256mb default; 0 no limit)",
	"timeout":                    "close connections idle this many seconds; 0 never (default 0)",
	"maxclients":                 "most connections at once (default 10000)",
	"maxmemory":                  "refuse writes that grow memory over this many bytes of Go heap (1gb, 100mb); 0 no limit",
	"tls-port":                   "TLS port (0: no TLS)",
	"tls-cert-file":              "TLS certificate (PEM)",
	"tls-key-file":               "TLS private key (PEM)",
	"tls-ca-cert-file":           "CA certificates to verify clients with (PEM)",
	"tls-auth-clients":           "yes|no|optional: require client certificates (default yes)",
	"loglevel":                   "debug|verbose|notice|warning (default notice)",
	"logfile":                    "write the log to this file instead of stderr",
	"client-output-buffer-limit": "\"class hard soft seconds\" ... (default \"normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60\")",
	"enable-protected-configs":   "no|yes|local: allow CONFIG SET of the protected dbfilename and dir (local: from loopback clients) (default no)",
}

// directiveFlags records directive flags in command-line order.
type directiveFlags struct{ set [][2]string }

type directiveFlag struct {
	name string
	all  *directiveFlags
}

func (f *directiveFlag) String() string { return "" }
func (f *directiveFlag) Set(v string) error {
	f.all.set = append(f.all.set, [2]string{f.name, v})
	return nil
}

// addDirectiveFlags defines a flag for every directive tumbler acts on,
// and, left out of the usage, one for every other directive Redis 7.0
// knows, which the config file takes too: checked and reported by CONFIG
// GET but without effect (--hz 50, --save "", --appendonly no), or
// refused with the reason (--replicaof).
func addDirectiveFlags(fs *flag.FlagSet) *directiveFlags {
	all := &directiveFlags{}
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, name := range server.DirectiveNames() {
		if flagExcluded[name] {
			continue
		}
		usage := flagUsage[name]
		if usage == "" {
			usage = "the " + name + " directive (docs/configuration.md)"
		}
		fs.Var(&directiveFlag{name: name, all: all}, name, usage)
	}
	for _, name := range server.OtherDirectiveNames() {
		fs.Var(&directiveFlag{name: name, all: all}, name, "")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [config-file] [--option value...]\n", fs.Name())
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage != "" {
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		shown.SetOutput(fs.Output())
		shown.PrintDefaults()
		fmt.Fprintln(fs.Output(), "  --<directive> value...\n    \tany other Redis 7.0 directive: checked and reported by CONFIG GET but without effect, or refused (docs/configuration.md)")
	}
	return all
}

// gatherWords makes each multi-word directive given as several arguments
// one flag value, as redis-server reads its command line: the words after
// --save up to the next --option are save's ("--save 900 1" is
// "--save '900 1'"); a word with spaces or quotes is quoted.
func gatherWords(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		name, ok := strings.CutPrefix(a, "--")
		if !ok || strings.Contains(name, "=") || !server.MultiWordDirective(name) {
			continue
		}
		j := i + 1
		for j < len(args) && !strings.HasPrefix(args[j], "--") {
			j++
		}
		words := args[i+1 : j]
		if len(words) < 2 {
			continue
		}
		quoted := make([]string, len(words))
		for k, w := range words {
			quoted[k] = server.QuoteConfigArg(w)
		}
		out = append(out, strings.Join(quoted, " "))
		i = j - 1
	}
	return out
}

// loadConfig reads the config file (if any), then applies the directive
// flags over it in their order.
func loadConfig(path string, flags [][2]string) (server.Config, []string, error) {
	var cfg server.Config
	var warnings []string
	if path != "" {
		w, err := server.LoadConfigFile(path, &cfg)
		if err != nil {
			return cfg, nil, err
		}
		warnings = w
	}
	flagUsers := map[string]bool{}
	for _, f := range flags {
		name, v := f[0], f[1]
		args := []string{v}
		if name == "user" && !strings.ContainsAny(v, " \t") {
			if user, pass, ok := strings.Cut(v, ":"); ok {
				// --user name:password
				if user == "" {
					return cfg, nil, &server.ConfigError{Text: "--user " + v, Reason: "--user takes name:password or a user line"}
				}
				args = []string{user, "on", ">" + pass, "~*", "&*", "+@all"}
			} // else a user line of just a name, as Redis reads --user foo
		}
		if name == "user" {
			// a user given twice on the command line is Redis's error (one
			// from the config file is replaced: docs/configuration.md)
			user, _, _ := strings.Cut(strings.TrimSpace(args[0]), " ")
			if len(args) > 1 {
				user = args[0]
			}
			if flagUsers[user] {
				return cfg, nil, &server.ConfigError{Text: "--user " + v, Reason: "Error in user declaration '" + user + "': Duplicate user found. A user can only be defined once in config files"}
			}
			flagUsers[user] = true
		}
		w, err := server.ApplyDirective(&cfg, name, args...)
		if err != nil {
			var ce *server.ConfigError
			if errors.As(err, &ce) {
				ce.Text = "--" + name + " " + v
			}
			return cfg, nil, err
		}
		if w != "" {
			warnings = append(warnings, "--"+name+": "+w)
		}
	}
	return cfg, warnings, nil
}
