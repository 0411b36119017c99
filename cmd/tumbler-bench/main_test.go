package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/bench"
	"github.com/tumblerdb/tumbler/internal/testpki"
	"github.com/tumblerdb/tumbler/server"
)

func TestRun_JSONAgainstTumbler(t *testing.T) {
	t.Parallel()
	srv := server.RunT(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--addr", srv.Addr(), "--workload", "contended", "--workers", "4", "--keys", "2", "--duration", "100ms", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Workload != "contended" || res.Keys != 2 || res.Ops <= 0 || res.Violations != 0 {
		t.Errorf("result %+v", res)
	}
	if errb.Len() != 0 {
		t.Errorf("--json wrote to stderr: %s", errb.String())
	}
}

func TestRun_TableAndProgress(t *testing.T) {
	t.Parallel()
	srv := server.RunT(t)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--addr", srv.Addr(), "--workers", "2", "--duration", "1800ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "latency p99.9") || !strings.Contains(errb.String(), "ops/s") {
		t.Errorf("stdout %s\nstderr %s", out.String(), errb.String())
	}
}

func TestRun_BadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--workload", "nope"},
		{"--no-such-flag"},
		{"extra"},
		{"--ttl", "500us"},  // would be PX 0
		{"--ttl", "1500us"}, // would be PX 1
		// values the library would take as "the default"
		{"--duration", "0"},
		{"--duration", "-1s"},
		{"--ttl", "0"},
		{"--ttl", "-5s"},
		{"--workers", "0"},
		{"--workers", "-5"},
		{"--keys", "-1"},
		{"--conns", "-1"},
		{"--hold", "-1s"},
		{"--retry", "0"},
		{"--retry", "-1ms"},
		{"--node-timeout", "0"},
		{"--node-timeout", "-1ms"},
		{"--pipeline", "-2"},
		{"--workload", "cycle", "--pipeline", "8"}, // cycle does not pipeline
	} {
		var out, errb bytes.Buffer
		// the address is never dialled: the arguments are refused first
		if code := run(context.Background(), append([]string{"--addr", "127.0.0.1:1"}, args...), &out, &errb); code != 1 || out.Len() != 0 {
			t.Errorf("%q: exit %d, output %q, want 1 and none", args, code, out.String())
		}
		if !strings.Contains(errb.String(), "tumbler-bench") || strings.Contains(errb.String(), "connection refused") {
			t.Errorf("%q: stderr %q, want the argument named, no run", args, errb.String())
		}
	}
}

// TestRun_ViolationsExitTwo: against a server that grants every SET NX the
// command reports violations and exits 2.
func TestRun_ViolationsExitTwo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := bench.NewConn(nc)
				for {
					r, err := c.ReadReply()
					if err != nil || len(r.Elems) == 0 {
						return
					}
					reply := "+OK\r\n"
					switch strings.ToUpper(string(r.Elems[0].Str)) {
					case "SCRIPT":
						sum := sha1.Sum(r.Elems[2].Str)
						reply = "$40\r\n" + hex.EncodeToString(sum[:]) + "\r\n"
					case "EVALSHA":
						reply = ":1\r\n"
					}
					if _, err := nc.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--addr", ln.Addr().String(), "--workload", "contended", "--workers", "4", "--keys", "1", "--hold", "2ms", "--duration", "150ms", "--json"}, &out, &errb)
	// (stderr says "N violations, M errors" whatever N is: the count is
	// read from the JSON)
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || code != 2 || res.Violations == 0 || res.Errors != 0 {
		t.Errorf("exit %d, %d violations, %d errors, stderr %q (%v); want 2, violations, no error", code, res.Violations, res.Errors, errb.String(), err)
	}
}

func TestRun_MassExpiryJSON(t *testing.T) {
	t.Parallel()
	srv := server.RunT(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--addr", srv.Addr(), "--workload", "massexpiry", "--workers", "2", "--keys", "500",
		"--window", "20ms", "--lead", "1500ms", "--duration", "3s", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	m := res.MassExpiry
	if m == nil || m.Expiring != 500 || m.Loaded != 500 || m.WindowMs != 20 || !m.AllReclaimed || res.Latency.P99 <= 0 {
		t.Errorf("result %s", out.String())
	}
	for _, k := range []string{`"reclaim_after_last_deadline_ms"`, `"all_reclaimed"`, `"before_latency_us"`, `"reclaim_points"`} {
		if !strings.Contains(out.String(), k) {
			t.Errorf("JSON has no %s", k)
		}
	}
}

// TestRun_HelpExitsZero: --help prints the usage and succeeds, as
// tumbler --help does.
func TestRun_HelpExitsZero(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	if !strings.Contains(errb.String(), "-workload") {
		t.Errorf("--help printed no usage: %q", errb.String())
	}
}

// --tls with a CA and a client certificate, and --user with --password,
// against a tumbler that requires both: the run is clean. Without the
// client certificate, or with the wrong user, it does not start.
func TestRun_TLSAndACLUser(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) {
		c.TLSAddr = "127.0.0.1:0"
		c.TLSOnly = true
		c.TLSConfig = &tls.Config{
			Certificates: []tls.Certificate{pki.Server}, ClientCAs: pki.Pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		}
		c.Users = []server.User{{Name: "locker", Passwords: []string{"lpw"}}}
		c.RequirePass = "dpw"
	}))
	base := []string{"--addr", srv.TLSAddr(), "--workload", "cycle", "--workers", "2", "--duration", "100ms", "--json",
		"--tls", "--cacert", pki.CAFile}
	client := []string{"--cert", pki.ClientCertFile, "--key", pki.ClientKeyFile}
	var out, errb bytes.Buffer
	args := append(append(append([]string{}, base...), client...), "--user", "locker", "--password", "lpw")
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Ops == 0 || !res.OK() {
		t.Fatalf("%v: %+v", err, res)
	}
	for _, bad := range [][]string{
		append(append(append([]string{}, base...), client...), "--user", "locker", "--password", "dpw"), // the default user's password
		append(append([]string{}, base...), "--user", "locker", "--password", "lpw"),                    // no client certificate
		append(append(append([]string{}, base...), client...), "--user", "locker"),                      // a user without a password
		{"--addr", srv.TLSAddr(), "--cacert", pki.CAFile},                                               // TLS options without --tls
	} {
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), bad, &out, &errb); code != 1 {
			t.Errorf("%q: exit %d, want 1 (stderr %s)", bad, code, errb.String())
		}
	}
}

// TestRun_FlagsThatDoNotApply: a flag given for a workload that would
// ignore it is refused, named with the workloads it applies to; the same
// flag for one that uses it is accepted.
func TestRun_FlagsThatDoNotApply(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--workload", "pipelined", "--hold", "5ms"},
		{"--workload", "extend", "--hold", "5ms"},
		{"--workload", "cycle", "--retry", "2ms"},
		{"--workload", "contended", "--node-timeout", "2s"},
		{"--workload", "fill", "--keys", "10", "--duration", "5s"},
		{"--workload", "massexpiry", "--ttl", "5s"},
		{"--workload", "cycle", "--window", "50ms"},
		{"--workload", "redlock", "--lead", "1s"},
		{"--workload", "cycle", "--interval", "1ms"},
		{"--workload", "cycle", "--poll", "1ms"},
		{"--workload", "cycle", "--addr", "127.0.0.1:1,127.0.0.1:2"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--addr", "127.0.0.1:1"}, args...), &out, &errb); code != 1 || out.Len() != 0 {
			t.Errorf("%q: exit %d, output %q, want 1 and none", args, code, out.String())
		}
		if !strings.Contains(errb.String(), "apply to") && !strings.Contains(errb.String(), "is for redlock") ||
			strings.Contains(errb.String(), "connection refused") {
			t.Errorf("%q: stderr %q, want the flag refused before any dial", args, errb.String())
		}
	}
	srv := server.RunT(t)
	for _, args := range [][]string{
		{"--workload", "contended", "--hold", "1ms", "--retry", "1ms", "--keys", "2"},
		{"--workload", "extend", "--retry", "2ms"},
		{"--workload", "redlock", "--node-timeout", "2s", "--hold", "1ms"},
		{"--workload", "cycle", "--hold", "1ms", "--ttl", "5s"},
	} {
		var out, errb bytes.Buffer
		args = append([]string{"--addr", srv.Addr(), "--workers", "2", "--duration", "100ms", "--json"}, args...)
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Errorf("%q: exit %d, stderr %s", args, code, errb.String())
		}
	}
}

// TestRun_NoAuthHint: against a server that needs a password, a run
// without --password says which flag is missing.
func TestRun_NoAuthHint(t *testing.T) {
	t.Parallel()
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) { c.RequirePass = "pw" }))
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--addr", srv.Addr(), "--duration", "100ms"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %s)", code, errb.String())
	}
	if !strings.Contains(errb.String(), "NOAUTH") || !strings.Contains(errb.String(), "--password") {
		t.Errorf("stderr %q, want the NOAUTH error and the flag to give", errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), []string{"--addr", srv.Addr(), "--duration", "100ms", "--password", "bad"}, &out, &errb); code != 1 {
		t.Fatalf("wrong password: exit %d, want 1", code)
	}
	if strings.Contains(errb.String(), "requires a password") {
		t.Errorf("wrong password: stderr %q asks for a password that was given", errb.String())
	}
}

// TestRun_InterruptedSaysSo: a run cut short by its context (Ctrl-C)
// prints the table of what ran, and says it was interrupted, with the
// counts, rather than the context's error.
func TestRun_InterruptedSaysSo(t *testing.T) {
	t.Parallel()
	srv := server.RunT(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"--addr", srv.Addr(), "--workers", "2", "--duration", "1m", "--quiet"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %s)", code, errb.String())
	}
	if !strings.Contains(out.String(), "latency p99.9") {
		t.Errorf("no table on stdout: %q", out.String())
	}
	if e := errb.String(); !strings.Contains(e, "interrupted after") || !strings.Contains(e, "0 violations, 0 errors") || strings.Contains(e, "context canceled") {
		t.Errorf("stderr %q", e)
	}
}

// TestRun_InterruptedDuringSetup: Ctrl-C while the setup waits for a
// server that accepts and never answers says the run was interrupted.
func TestRun_InterruptedDuringSetup(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"--addr", ln.Addr().String(), "--quiet"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %s)", code, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted before the run began") {
		t.Errorf("stderr %q", errb.String())
	}
}
