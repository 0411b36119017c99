package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/server"
)

// cmdline is what the command line asks for, read as redis-server reads
// its own (server.c, main): a config file first, "-" to read config
// lines from standard input, then directives.
type cmdline struct {
	confPath string
	stdin    bool
	// directives holds each --option with its arguments, as the words of
	// a config line: the name, then the values.
	directives [][]string
	version    bool // -v or --version, alone
	help       bool // -h or --help, alone
}

// parseCmdline reads the arguments after the program name as Redis 7.0
// does: "--name" starts a directive, and every argument up to the next
// one is a value of it, taken as is (the first value after a lone name is
// taken even if it starts with "--": --requirepass --secret). An argument
// holding a name and values ("--port 7000", one argument) is split as a
// config line. A bare --save followed by another option, or last, is
// save "" (Redis 7.0.1 reads it so, for generated command lines). A "-"
// as the first or last argument reads config lines from standard input
// after the config file. It fails only on unbalanced quotes.
func parseCmdline(args []string) (cmdline, error) {
	var cl cmdline
	if len(args) == 0 {
		return cl, nil
	}
	switch args[0] {
	case "-v", "--version":
		cl.version = true
		return cl, nil
	case "-h", "--help":
		cl.help = true
		return cl, nil
	}
	j := 0
	if !strings.HasPrefix(args[0], "-") {
		cl.confPath = args[0]
		j = 1
	}
	nameTaken := true // false right after a lone --name: the next argument is its value
	for ; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "-" && (j == 0 || j == len(args)-1):
			cl.stdin = true
		case nameTaken && strings.HasPrefix(a, "--"):
			words, ok := engine.SplitArgs(a[2:])
			if !ok {
				return cl, &server.ConfigError{Text: a, Reason: "Unbalanced quotes in configuration line"}
			}
			cl.directives = append(cl.directives, words)
			if len(words) > 1 {
				break // "--port 7000": name and value in one
			}
			save := engine.EqualFoldASCII(a, "--save")
			switch last := j == len(args)-1; {
			case save && !last && strings.HasPrefix(args[j+1], "--"), save && last:
				cl.directives[len(cl.directives)-1] = append(words, "")
			default:
				nameTaken = false
			}
		default:
			if len(cl.directives) == 0 {
				// A value before any --name: Redis reads it as a directive
				// of that name, which it then refuses.
				cl.directives = append(cl.directives, nil)
			}
			last := &cl.directives[len(cl.directives)-1]
			*last = append(*last, a)
			nameTaken = true
		}
	}
	return cl, nil
}

// optionUsage describes the common options; the others point to the docs.
var optionUsage = map[string]string{
	"port":                       "TCP port; 0 with --tls-port serves TLS only (default 6379)",
	"bind":                       "addresses to listen on; a leading - makes one optional (default * -::*, as Redis: every address, loopback clients only while there is no password)",
	"requirepass":                "password of the default user: AUTH pass, AUTH default pass, HELLO 3 AUTH default pass",
	"user":                       "a named user, name:password or a user line (alice on >pw ~* +@all); repeatable",
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
	"logfile":                    "write the log to this file instead of standard output",
	"client-output-buffer-limit": "class hard soft seconds ... (default normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60)",
	"enable-protected-configs":   "no|yes|local: allow CONFIG SET of the protected dbfilename and dir (local: from loopback clients) (default no)",
	"restart-delay":              "refuse writes that could grant a lock for this long after starting: your longest lock TTL (milliseconds, or a duration such as 30s)",
	"metrics-addr":               "serve Prometheus metrics at http://HOST:PORT/metrics (off when empty)",
	"include":                    "read a config file (a glob pattern: several) at this point",
	"cpuprofile":                 "write a CPU profile (pprof) of the run to this file, until SIGINT/SIGTERM or SHUTDOWN",
}

// usage prints how to run tumbler, as redis-server's --help.
func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: tumbler [/path/to/tumbler.conf] [options] [-]")
	fmt.Fprintln(w, "       tumbler -v or --version")
	fmt.Fprintln(w, "       tumbler -h or --help")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Options are redis.conf directives, as redis-server takes them: --port 7000 --save \"\".")
	fmt.Fprintln(w, "A \"-\" first or last reads config lines from standard input. The common ones:")
	names := make([]string, 0, len(optionUsage))
	for name := range optionUsage {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  --%s\n    \t%s\n", name, optionUsage[name])
	}
	fmt.Fprintln(w, "  --<directive> value...\n    \tany other Redis 7.0 directive: acted on, accepted without effect, or refused (docs/configuration.md)")
}

// loaded is the configuration a command line and its files make.
type loaded struct {
	cfg        server.Config
	warnings   []string
	cpuProfile string // --cpuprofile
}

// loadConfig reads the config file (if any), then the config lines read
// from standard input (if any), then applies the command line's
// directives in their order, as redis-server does.
func loadConfig(path string, stdin []byte, directives [][]string) (loaded, error) {
	var l loaded
	cfg := &l.cfg
	// As redis-server with no bind directive: every IPv4 address, and
	// every IPv6 one where the system has IPv6 ("* -::*"). Protected mode
	// (on by default) serves only loopback clients while the default user
	// has no password. (server.New's own default, for a server embedded
	// in a program or a test, is 127.0.0.1.)
	cfg.Addr, cfg.ExtraAddrs = net.JoinHostPort("*", "6379"), []string{"-::*"}
	if path != "" {
		w, err := server.LoadConfigFile(path, cfg)
		if err != nil {
			return l, err
		}
		l.warnings = w
	}
	if stdin != nil {
		w, err := server.LoadConfigData("stdin", stdin, cfg)
		if err != nil {
			return l, err
		}
		l.warnings = append(l.warnings, w...)
	}
	flagUsers := map[string]bool{}
	for _, words := range directives {
		if len(words) == 0 {
			continue // "--" alone
		}
		name, args := engine.LowerASCII(words[0]), words[1:]
		text := "--" + strings.Join(words, " ")
		fail := func(reason string) (loaded, error) {
			return l, &server.ConfigError{Text: text, Reason: reason}
		}
		switch name {
		case "cpuprofile": // tumbler's own, not a directive
			if len(args) != 1 {
				return fail("wrong number of arguments")
			}
			l.cpuProfile = args[0]
			continue
		case "include":
			if len(args) != 1 {
				break // Redis's error, from ApplyDirective
			}
			w, err := server.IncludeConfig(args[0], cfg)
			l.warnings = append(l.warnings, w...)
			if err != nil {
				var ce *server.ConfigError
				if errors.As(err, &ce) && ce.File == "" {
					return fail(ce.Reason)
				}
				return l, err
			}
			continue
		case "user":
			if len(args) == 1 && !strings.ContainsAny(args[0], " \t") {
				if user, pass, ok := strings.Cut(args[0], ":"); ok {
					// --user name:password
					if user == "" {
						return fail("--user takes name:password or a user line")
					}
					args = []string{user, "on", ">" + pass, "~*", "&*", "+@all"}
				} // else a user line of just a name, as Redis reads --user foo
			}
			if len(args) > 0 {
				// a user given twice on the command line is Redis's error (one
				// from the config file is replaced: docs/configuration.md)
				user, _, _ := strings.Cut(strings.TrimSpace(args[0]), " ")
				if len(args) > 1 {
					user = args[0]
				}
				if flagUsers[user] {
					return fail("Error in user declaration '" + user + "': Duplicate user found. A user can only be defined once in config files")
				}
				flagUsers[user] = true
			}
		}
		w, err := server.ApplyDirective(cfg, name, args...)
		if err != nil {
			var ce *server.ConfigError
			if errors.As(err, &ce) {
				ce.Text = text
			}
			return l, err
		}
		if w != "" {
			l.warnings = append(l.warnings, "--"+name+": "+w)
		}
	}
	return l, nil
}
