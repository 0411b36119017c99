package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes r as one indented JSON object followed by a newline.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a human-readable table.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("workload", r.Workload)
	row("addrs", strings.Join(r.Addrs, ","))
	row("workers / conns", fmt.Sprintf("%d / %d", r.Workers, r.Conns))
	row("keys / pipeline", fmt.Sprintf("%d / %d", r.Keys, r.Pipeline))
	row("ttl / hold", fmt.Sprintf("%dms / %dus", r.TTLMs, r.HoldUs))
	row("seed", r.Seed)
	row("elapsed", fmt.Sprintf("%.2fs", r.ElapsedSec))
	row("ops", r.Ops)
	row("ops/s", fmt.Sprintf("%.0f", r.OpsPerSec))
	row("requests/s", fmt.Sprintf("%.0f", r.RequestsPerSec))
	row("latency p50", fmt.Sprintf("%.1fus", r.Latency.P50))
	row("latency p99", fmt.Sprintf("%.1fus", r.Latency.P99))
	row("latency p99.9", fmt.Sprintf("%.1fus", r.Latency.P999))
	row("latency max", fmt.Sprintf("%.1fus", r.Latency.Max))
	row("busy (refused acquires)", r.Busy)
	row("lost (lock gone at release)", r.Lost)
	row("expired takeovers", r.ExpiredTakeovers)
	row("errors", r.Errors)
	row("violations", r.Violations)
	if r.FirstError != "" {
		row("first error", r.FirstError)
	}
	return tw.Flush()
}
