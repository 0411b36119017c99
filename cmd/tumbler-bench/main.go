// Command tumbler-bench measures lock throughput and latency against any
// Redis-protocol server (tumbler, Redis, ...) and checks mutual exclusion
// while it runs.
//
//	tumbler-bench --addr 127.0.0.1:6379 --workload cycle --workers 50 --duration 10s
//	tumbler-bench --addr 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --workload redlock
//	tumbler-bench --addr 127.0.0.1:6379 --workload fill --keys 1000000 --json
//	tumbler-bench --addr 127.0.0.1:6379 --workload massexpiry --keys 1000000 --window 100ms
//
// It prints a table (or with --json one JSON object) on stdout and a
// progress line a second on stderr (not with --json or --quiet). It exits
// with status 2 when it saw a mutual-exclusion violation or an error, 1
// when it could not run or was interrupted.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o bench.Options
	fs := flag.NewFlagSet("tumbler-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "server address host:port; a comma-separated list for redlock")
	fs.StringVar(&o.Workload, "workload", "cycle", "one of "+strings.Join(bench.Workloads, ", "))
	fs.IntVar(&o.Conns, "conns", 0, "connections per address (default: one per worker)")
	fs.IntVar(&o.Workers, "workers", 50, "concurrent workers")
	fs.IntVar(&o.Keys, "keys", 0, "distinct lock keys (default: workers/4 for contended, 1000000 for massexpiry, workers*pipeline*4 otherwise; exact count for fill and massexpiry)")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to run (fill runs until done; massexpiry: longest wait after the last deadline)")
	fs.DurationVar(&o.TTL, "ttl", 30*time.Second, "lock lease (PX; massexpiry sets its own deadlines)")
	fs.IntVar(&o.Pipeline, "pipeline", 0, "pipeline depth for pipelined (default 16), fill and massexpiry loading (default 64)")
	fs.DurationVar(&o.Window, "window", 100*time.Millisecond, "massexpiry: span the deadlines fall in")
	fs.DurationVar(&o.Lead, "lead", 0, "massexpiry: start of loading to the first deadline (default 3s + 10us a key)")
	fs.DurationVar(&o.Interval, "interval", time.Millisecond, "massexpiry: pause between one worker's GETs (negative: none)")
	fs.DurationVar(&o.PollEvery, "poll", time.Millisecond, "massexpiry: DBSIZE poll interval")
	fs.DurationVar(&o.Hold, "hold", 0, "time a lock is held before release (cycle, contended, redlock)")
	fs.DurationVar(&o.Retry, "retry", time.Millisecond, "mean retry delay after a refused acquire (jittered ±50%; contended, extend, redlock)")
	fs.DurationVar(&o.NodeTimeout, "node-timeout", 0, "redlock: wait for an address's replies to an attempt at most this long, then fail the attempt on it and leave it out until a new connection to it works, tried this long after (at least 100ms) and as often again (default ttl/20, at least 1s)")
	fs.Uint64Var(&o.Seed, "seed", 0, "random seed for key choice and jitter (0: random)")
	fs.StringVar(&o.KeyPrefix, "prefix", "", "key prefix (default tb:<seed>: or lk: for fill)")
	fs.StringVar(&o.Password, "password", "", "AUTH password")
	fs.StringVar(&o.Password, "pass", "", "the same as --password (redis-cli's name)")
	fs.StringVar(&o.User, "user", "", "ACL user to AUTH as (with --password)")
	useTLS := fs.Bool("tls", false, "connect with TLS")
	caCert := fs.String("cacert", "", "with --tls: CA certificate file to verify the server with (default: the system's)")
	cert := fs.String("cert", "", "with --tls: client certificate file")
	key := fs.String("key", "", "with --tls: client private key file")
	insecure := fs.Bool("insecure", false, "with --tls: do not verify the server's certificate")
	sni := fs.String("sni", "", "with --tls: server name to verify (default: the address's host)")
	asJSON := fs.Bool("json", false, "print the result as JSON (no progress lines)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h, --help: the usage, as asked
		}
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tumbler-bench: unexpected argument %q\n", fs.Arg(0))
		return 1
	}
	if msg := checkFlags(fs); msg != "" {
		fmt.Fprintln(stderr, "tumbler-bench:", msg)
		return 1
	}
	o.Addrs = strings.Split(*addr, ",")
	if msg := checkApplies(fs, o.Workload, len(o.Addrs)); msg != "" {
		fmt.Fprintln(stderr, "tumbler-bench:", msg)
		return 1
	}
	if o.User != "" && o.Password == "" {
		fmt.Fprintln(stderr, "tumbler-bench: --user needs --password")
		return 1
	}
	if *useTLS {
		cfg, err := tlsConfig(*caCert, *cert, *key, *sni, *insecure)
		if err != nil {
			fmt.Fprintln(stderr, "tumbler-bench:", err)
			return 1
		}
		o.TLS = cfg
	} else if *caCert != "" || *cert != "" || *key != "" || *insecure || *sni != "" {
		fmt.Fprintln(stderr, "tumbler-bench: --cacert, --cert, --key, --insecure and --sni need --tls")
		return 1
	}
	if !*asJSON && !*quiet {
		o.Progress = stderr
	}

	res, err := bench.Run(ctx, o)
	if err != nil && res.Workload == "" {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "tumbler-bench: interrupted before the run began:", err)
			return 1
		}
		fmt.Fprintln(stderr, "tumbler-bench:", err)
		if o.Password == "" && strings.Contains(err.Error(), "NOAUTH") {
			fmt.Fprintln(stderr, "tumbler-bench: the server requires a password: give it with --password (and --user for an ACL user)")
		}
		return 1
	}
	if *asJSON {
		_ = res.WriteJSON(stdout)
	} else {
		_ = res.WriteTable(stdout)
	}
	if err != nil { // interrupted (ctx ended): what ran so far is reported
		fmt.Fprintf(stderr, "tumbler-bench: interrupted after %.1fs, the figures are for that part of the run: %d violations, %d errors\n",
			res.ElapsedSec, res.Violations, res.Errors)
		if res.Violations > 0 {
			return 2
		}
		return 1
	}
	if !res.OK() {
		fmt.Fprintf(stderr, "tumbler-bench: %d violations, %d errors\n", res.Violations, res.Errors)
		return 2
	}
	return 0
}

// checkFlags refuses values given on the command line that no run can
// use: the library takes a zero or negative count or time as "the
// default", which would silently replace a mistyped --duration 0 with
// ten seconds or --workers -5 with fifty.
func checkFlags(fs *flag.FlagSet) string {
	var msg string
	fs.Visit(func(f *flag.Flag) {
		if msg != "" {
			return
		}
		switch v := f.Value.(flag.Getter).Get().(type) {
		case time.Duration:
			switch f.Name {
			case "duration", "ttl", "window", "poll", "node-timeout", "retry": // (retry 0 would be 1ms)
				if v <= 0 {
					msg = fmt.Sprintf("--%s %v: must be positive", f.Name, v)
				}
			case "hold", "lead":
				if v < 0 {
					msg = fmt.Sprintf("--%s %v: must not be negative", f.Name, v)
				}
			}
		case int:
			switch f.Name {
			case "workers", "keys":
				if v <= 0 {
					msg = fmt.Sprintf("--%s %d: must be positive", f.Name, v)
				}
			case "conns", "pipeline":
				if v < 0 {
					msg = fmt.Sprintf("--%s %d: must not be negative", f.Name, v)
				}
			}
		}
	})
	return msg
}

// onlyFor lists the flags that some workloads ignore, with the workloads
// that use them (bench.Options says how).
var onlyFor = map[string][]string{
	"hold":         {"cycle", "contended", "redlock"},
	"retry":        {"contended", "extend", "redlock"},
	"node-timeout": {"redlock"},
	"duration":     {"cycle", "contended", "extend", "pipelined", "redlock", "massexpiry"}, // fill runs until done
	"ttl":          {"cycle", "contended", "extend", "pipelined", "redlock", "fill"},       // massexpiry sets its own deadlines
	"window":       {"massexpiry"},
	"lead":         {"massexpiry"},
	"interval":     {"massexpiry"},
	"poll":         {"massexpiry"},
}

// checkApplies refuses a flag given on the command line that the
// workload would ignore, as the library refuses a pipeline depth for a
// workload that does not pipeline: a run with --hold 5ms that held
// nothing would be taken for a measure of something else. An unknown
// workload is left to the library to name.
func checkApplies(fs *flag.FlagSet, workload string, addrs int) string {
	if !slices.Contains(bench.Workloads, workload) {
		return ""
	}
	if addrs > 1 && workload != "redlock" {
		return fmt.Sprintf("%s uses one address; a list of %d is for redlock", workload, addrs)
	}
	var msg string
	fs.Visit(func(f *flag.Flag) {
		if ws, ok := onlyFor[f.Name]; ok && msg == "" && !slices.Contains(ws, workload) {
			msg = fmt.Sprintf("--%s does not apply to %s (it applies to %s)", f.Name, workload, strings.Join(ws, ", "))
		}
	})
	return msg
}

// tlsConfig builds the client TLS config of --tls and its options.
func tlsConfig(caCert, cert, key, sni string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: insecure}
	if caCert != "" {
		pem, err := os.ReadFile(caCert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", caCert)
		}
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("--cert and --key go together")
	}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}
