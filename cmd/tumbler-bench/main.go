// Command tumbler-bench measures lock throughput and latency against any
// Redis-protocol server (tumbler, Redis, ...) and checks mutual exclusion
// while it runs.
//
//	tumbler-bench --addr 127.0.0.1:6379 --workload cycle --workers 50 --duration 10s
//	tumbler-bench --addr 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --workload redlock
//	tumbler-bench --addr 127.0.0.1:6379 --workload fill --keys 1000000 --json
//
// It exits with status 2 when it saw a mutual-exclusion violation or an
// error, 1 when it could not run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/bench"
)

func main() {
	var o bench.Options
	addr := flag.String("addr", "127.0.0.1:6379", "server address host:port; a comma-separated list for redlock")
	flag.StringVar(&o.Workload, "workload", "cycle", "one of "+strings.Join(bench.Workloads, ", "))
	flag.IntVar(&o.Conns, "conns", 0, "connections per address (default: one per worker)")
	flag.IntVar(&o.Workers, "workers", 50, "concurrent workers")
	flag.IntVar(&o.Keys, "keys", 0, "distinct lock keys (default: workers/4 for contended, workers*pipeline*4 otherwise; exact count for fill)")
	flag.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to run (fill runs until done)")
	flag.DurationVar(&o.TTL, "ttl", 30*time.Second, "lock lease (PX)")
	flag.IntVar(&o.Pipeline, "pipeline", 0, "pipeline depth for pipelined (default 16) and fill (default 64)")
	flag.DurationVar(&o.Hold, "hold", 0, "time a lock is held before release (cycle, contended, redlock)")
	flag.DurationVar(&o.Retry, "retry", time.Millisecond, "mean retry delay after a refused acquire (jittered ±50%)")
	flag.Uint64Var(&o.Seed, "seed", 0, "random seed (0: random)")
	flag.StringVar(&o.KeyPrefix, "prefix", "", "key prefix (default tb:<seed>: or lk: for fill)")
	flag.StringVar(&o.Password, "password", "", "AUTH password")
	asJSON := flag.Bool("json", false, "print the result as JSON (no progress lines)")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	flag.Parse()
	o.Addrs = strings.Split(*addr, ",")
	if !*asJSON && !*quiet {
		o.Progress = os.Stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, o)
	if err != nil && res.Workload == "" {
		fmt.Fprintln(os.Stderr, "tumbler-bench:", err)
		os.Exit(1)
	}
	if *asJSON {
		_ = res.WriteJSON(os.Stdout)
	} else {
		_ = res.WriteTable(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tumbler-bench:", err)
		os.Exit(1)
	}
	if !res.OK() {
		fmt.Fprintf(os.Stderr, "tumbler-bench: %d violations, %d errors\n", res.Violations, res.Errors)
		os.Exit(2)
	}
}
