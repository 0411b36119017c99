package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tumblerdb/tumbler/engine"
)

// The Prometheus endpoint (Config.MetricsAddr, tumbler --metrics-addr).
// Every series is read at scrape time from counters the server keeps
// anyway, so serving metrics costs the dispatch path nothing.

var (
	descCommands      = prometheus.NewDesc("tumbler_commands_total", "Commands run, by command (subcommands as container|sub).", []string{"command"}, nil)
	descCommandErrors = prometheus.NewDesc("tumbler_command_errors_total", "Commands that replied an error, by command and kind: failed (while running) or rejected (arity, NOAUTH, BUSY).", []string{"command", "kind"}, nil)
	descCommandTime   = prometheus.NewDesc("tumbler_command_duration_seconds_total", "Time spent running commands, by command.", []string{"command"}, nil)
	descErrors        = prometheus.NewDesc("tumbler_error_replies_total", "Error replies by error code (ERR, WRONGTYPE, NOAUTH, ...).", []string{"code"}, nil)
	descKeys          = prometheus.NewDesc("tumbler_keys", "Keys in all databases (locks held), read under the engine lock at scrape time.", nil, nil)
	descKeysDeadline  = prometheus.NewDesc("tumbler_keys_with_deadline", "Keys with a TTL, read under the engine lock at scrape time.", nil, nil)
	descExpired       = prometheus.NewDesc("tumbler_expired_keys_total", "Keys deleted because their TTL passed (lazily or by the expiry loop).", nil, nil)
	descHits          = prometheus.NewDesc("tumbler_keyspace_hits_total", "Key reads that found the key.", nil, nil)
	descMisses        = prometheus.NewDesc("tumbler_keyspace_misses_total", "Key reads that did not find the key.", nil, nil)
	descScriptRuns    = prometheus.NewDesc("tumbler_script_runs_total", "Script runs: EVAL/EVALSHA and FCALL.", nil, nil)
	descNativeRuns    = prometheus.NewDesc("tumbler_script_native_runs_total", "Script runs served by the native (non-Lua) implementations of common lock scripts.", nil, nil)
	descScriptTime    = prometheus.NewDesc("tumbler_script_duration_seconds", "Duration of EVAL/EVALSHA and FCALL commands.", nil, nil)
	descClients       = prometheus.NewDesc("tumbler_connected_clients", "Open client connections.", nil, nil)
	descConnsTotal    = prometheus.NewDesc("tumbler_connections_received_total", "Connections accepted.", nil, nil)
	descRejected      = prometheus.NewDesc("tumbler_rejected_connections_total", "Connections refused (maxclients).", nil, nil)
	descSlowlog       = prometheus.NewDesc("tumbler_slowlog_length", "Entries in the slow log.", nil, nil)
	descNetIn         = prometheus.NewDesc("tumbler_net_input_bytes_total", "Bytes read from client connections.", nil, nil)
	descNetOut        = prometheus.NewDesc("tumbler_net_output_bytes_total", "Bytes written to client connections.", nil, nil)
)

// collector exports the server's counters to Prometheus.
type collector struct{ s *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommands, descCommandErrors, descCommandTime, descErrors, descKeys, descKeysDeadline,
		descExpired, descHits, descMisses, descScriptRuns, descNativeRuns, descScriptTime, descClients, descConnsTotal, descRejected, descSlowlog, descNetIn, descNetOut} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.s.eng
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	e.CommandStats(func(st engine.CommandStat) {
		if st.Calls == 0 && st.Failed == 0 && st.Rejected == 0 {
			return
		}
		counter(descCommands, float64(st.Calls), st.Name)
		counter(descCommandErrors, float64(st.Failed), st.Name, "failed")
		counter(descCommandErrors, float64(st.Rejected), st.Name, "rejected")
		counter(descCommandTime, float64(st.Usec)/1e6, st.Name)
	})
	_, codes := e.ErrorReplies()
	for code, n := range codes {
		counter(descErrors, float64(n), code)
	}
	if keys, expires, ok := e.KeyCountNoWait(); ok { // a busy script holds the keyspace: leave the gauges out
		gauge(descKeys, float64(keys))
		gauge(descKeysDeadline, float64(expires))
	}
	counter(descExpired, float64(e.Stats.ExpiredKeys.Load()))
	counter(descHits, float64(e.Stats.KeyspaceHits.Load()))
	counter(descMisses, float64(e.Stats.KeyspaceMisses.Load()))
	counter(descScriptRuns, float64(e.Stats.ScriptRuns.Load()))
	counter(descNativeRuns, float64(c.s.vm.NativeRuns()))
	n, sum, buckets := e.ScriptLatency()
	ch <- prometheus.MustNewConstHistogram(descScriptTime, n, sum, buckets)
	gauge(descClients, float64(c.s.nconns.Load()))
	counter(descConnsTotal, float64(e.Stats.ConnsReceived.Load()))
	counter(descRejected, float64(e.Stats.RejectedConns.Load()))
	gauge(descSlowlog, float64(e.SlowlogLen()))
	in, out, _, _ := e.Net.Totals()
	counter(descNetIn, float64(in))
	counter(descNetOut, float64(out))
}

// MetricsHandler returns an http.Handler serving the server's metrics (and
// the Go runtime's and the process's) in the Prometheus format, for
// programs that mount it on their own HTTP server.
func (s *Server) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}})
}

type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Warn("metrics", "err", v) }

// startMetrics serves /metrics on addr until the server closes.
func (s *Server) startMetrics(addr string) error {
	ln, err := listenTCP(addr, 0)
	if err != nil {
		return errors.New("tumbler: cannot listen for metrics on " + addr + ": " + err.Error())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.MetricsHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.metricsAddr.Store(ln.Addr().String())
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("metrics server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		<-s.done
		_ = hs.Close()
	}()
	s.log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// MetricsAddr returns the address the metrics endpoint listens on
// ("host:port"), or "" when there is none.
func (s *Server) MetricsAddr() string {
	a, _ := s.metricsAddr.Load().(string)
	return a
}
