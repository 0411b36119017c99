package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
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
	if r.MassExpiry != nil {
		r.massExpiryTable(row)
		return tw.Flush()
	}
	row("workload", r.Workload)
	row("addrs", strings.Join(r.Addrs, ","))
	row("workers / conns", fmt.Sprintf("%d / %d", r.Workers, r.Conns))
	row("keys / pipeline", fmt.Sprintf("%d / %d", r.Keys, r.Pipeline))
	row("ttl / hold", fmt.Sprintf("%dms / %dus", r.TTLMs, r.HoldUs))
	if r.NodeTimeoutUs > 0 {
		row("node timeout", time.Duration(r.NodeTimeoutUs)*time.Microsecond)
	}
	row("seed", r.Seed)
	row("elapsed", fmt.Sprintf("%.2fs", r.ElapsedSec))
	row("ops", r.Ops)
	row("ops/s", fmt.Sprintf("%.0f", r.OpsPerSec))
	row("requests/s", fmt.Sprintf("%.0f", r.RequestsPerSec))
	l := r.Latency
	row("latency p50", fmt.Sprintf("%.1fus", l.P50))
	row("latency p99", fmt.Sprintf("%.1fus%s", l.P99, fewSamples(l.Samples, 100)))
	row("latency p99.9", fmt.Sprintf("%.1fus%s", l.P999, fewSamples(l.Samples, 1000)))
	row("latency max", fmt.Sprintf("%.1fus", l.Max))
	row("busy (refused acquires)", r.Busy)
	row("lost (lock gone at release, lease over)", r.Lost)
	row("expired takeovers", r.ExpiredTakeovers)
	if r.NoScriptFallbacks > 0 {
		row("NOSCRIPT, sent again as EVAL", r.NoScriptFallbacks)
	}
	row("errors", r.Errors)
	r.stoppedRow(row)
	if r.NodeTimeoutUs > 0 { // redlock
		row("reconnects", r.Reconnects)
	}
	row("violations", r.Violations)
	row("  of which lost within the lease", r.LostBeforeLease)
	if r.FirstError != "" {
		row("first error", r.FirstError)
	}
	return tw.Flush()
}

func (r *Result) massExpiryTable(row func(k string, v any)) {
	m := r.MassExpiry
	lat := func(l Latency) string {
		return fmt.Sprintf("p50 %.1fus  p99 %.1fus  p99.9 %.1fus  max %.1fus  (%d samples)", l.P50, l.P99, l.P999, l.Max, l.Samples)
	}
	row("workload", r.Workload)
	row("addr", strings.Join(r.Addrs, ","))
	row("expiring keys / stay keys", fmt.Sprintf("%d / %d", m.Expiring, m.StayKeys))
	row("deadline window / lead", fmt.Sprintf("%dms / %dms", m.WindowMs, m.LeadMs))
	row("load", fmt.Sprintf("%.2fs (%.0fms before the first deadline), %d keys counted", m.LoadSec, m.LoadSlackMs, m.Loaded))
	row("GET workers / conns", fmt.Sprintf("%d / %d", r.Workers, r.Conns))
	row("seed", r.Seed)
	switch {
	case m.AllReclaimed:
		row("all reclaimed", fmt.Sprintf("%.1fms after the last deadline (poll every %.1fms)", m.ReclaimAfterLastDeadlineMs, m.PollMs))
	case m.Interrupted && m.Polls == 0:
		row("all reclaimed", "not measured: interrupted while loading")
	case m.Interrupted:
		when := "before the first deadline"
		if m.ReclaimWindowMs > 0 {
			when = fmt.Sprintf("%.0fms after the first deadline", m.ReclaimWindowMs)
		}
		row("all reclaimed", fmt.Sprintf("not measured: interrupted %s, %d keys left", when, m.Remaining))
	default:
		row("all reclaimed", fmt.Sprintf("NO: %d keys left %.0fms after the last deadline", m.Remaining, m.ReclaimAfterLastDeadlineMs))
	}
	for _, p := range m.Points {
		row(fmt.Sprintf("%g%% reclaimed", p.Fraction*100), fmt.Sprintf("%.1fms after the last deadline", p.AfterLastDeadlineMs))
	}
	if m.Interrupted {
		row("reclaim window", fmt.Sprintf("%.1fms (first deadline to the interruption)", m.ReclaimWindowMs))
	} else {
		row("reclaim window", fmt.Sprintf("%.1fms (first deadline to all reclaimed or the cap)", m.ReclaimWindowMs))
	}
	row("GET latency in the window", lat(r.Latency))
	row("GET latency before", lat(m.BeforeLatency))
	row("GETs before / in the window", fmt.Sprintf("%d / %d", m.GetsBefore, m.GetsDuring))
	row("elapsed", fmt.Sprintf("%.2fs", r.ElapsedSec))
	row("errors", r.Errors)
	r.stoppedRow(row)
	if m.EarlyGone > 0 {
		row("keys gone before their deadline", m.EarlyGone)
	}
	if r.FirstError != "" {
		row("first error", r.FirstError)
	}
}

// stoppedRow shows, when there were any, the workers an error ended
// before the run did (Result.WorkersStopped).
func (r *Result) stoppedRow(row func(k string, v any)) {
	if r.WorkersStopped > 0 {
		row("  workers an error stopped", fmt.Sprintf("%d of %d (not replaced)", r.WorkersStopped, r.Workers))
	}
}

// fewSamples notes, after a percentile that needs at least need samples
// to be one, that it came from fewer.
func fewSamples(samples, need int64) string {
	if samples >= need {
		return ""
	}
	return fmt.Sprintf(" (only %d samples)", samples)
}
