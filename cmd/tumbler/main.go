// Command tumbler is a Redis-protocol lock server.
//
//	tumbler --port 6379 --bind 127.0.0.1 --requirepass secret --lua-time-limit 5000 --restart-delay 30s
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

func main() {
	port := flag.Int("port", 6379, "TCP port to listen on")
	bind := flag.String("bind", "127.0.0.1", "address to listen on")
	pass := flag.String("requirepass", "", "password clients must AUTH with")
	luaLimit := flag.Int("lua-time-limit", 5000, "milliseconds a script may run before other clients get BUSY")
	var restartDelay time.Duration
	flag.Func("restart-delay", "refuse writes that could grant a lock for this long after starting: your longest lock TTL (milliseconds, or a duration such as 30s)", func(v string) error {
		d, err := parseDelay(v)
		restartDelay = d
		return err
	})
	// obs: observability flags (server/observe.go, server/metrics.go)
	metricsAddr := flag.String("metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics (off when empty)")
	logLevel := flag.String("loglevel", "notice", "log level: debug, verbose, notice or warning")

	flag.Parse()

	level, err := server.ParseLogLevel(*logLevel) // obs
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv := server.New(server.Config{
		Addr:         net.JoinHostPort(*bind, strconv.Itoa(*port)),
		RequirePass:  *pass,
		LuaTimeLimit: time.Duration(*luaLimit) * time.Millisecond,
		RestartDelay: restartDelay,
		Logger:       log,
		MetricsAddr:  *metricsAddr, // obs
	})
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	log.Info("tumbler ready to accept connections", "addr", srv.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case <-srv.Done(): // obs: a client sent SHUTDOWN
		log.Info("shut down by SHUTDOWN")
	}
	srv.Close()
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
