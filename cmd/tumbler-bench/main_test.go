package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/bench"
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
	if code != 2 || !strings.Contains(errb.String(), "violations") {
		t.Errorf("exit %d, stderr %q; want 2 and violations reported", code, errb.String())
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

// writeTestPKI writes a CA, a server certificate for 127.0.0.1 and a
// client certificate with their keys as PEM files in dir, and returns
// the server's certificate and the CA pool.
func writeTestPKI(t *testing.T, dir string) (serverCert tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writePEM := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	writePEM("ca.crt", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) tls.Certificate {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(name+".crt", "CERTIFICATE", der)
		writePEM(name+".key", "EC PRIVATE KEY", kder)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	leaf("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}), pool
}

// --tls with a CA and a client certificate, and --user with --password,
// against a tumbler that requires both: the run is clean. Without the
// client certificate, or with the wrong user, it does not start.
func TestRun_TLSAndACLUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serverCert, pool := writeTestPKI(t, dir)
	srv := server.RunT(t, server.WithConfig(func(c *server.Config) {
		c.TLSAddr = "127.0.0.1:0"
		c.TLSOnly = true
		c.TLSConfig = &tls.Config{
			Certificates: []tls.Certificate{serverCert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		}
		c.Users = []server.User{{Name: "locker", Passwords: []string{"lpw"}}}
		c.RequirePass = "dpw"
	}))
	base := []string{"--addr", srv.TLSAddr(), "--workload", "cycle", "--workers", "2", "--duration", "100ms", "--json",
		"--tls", "--cacert", filepath.Join(dir, "ca.crt")}
	client := []string{"--cert", filepath.Join(dir, "client.crt"), "--key", filepath.Join(dir, "client.key")}
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
		{"--addr", srv.TLSAddr(), "--cacert", filepath.Join(dir, "ca.crt")},                             // TLS options without --tls
	} {
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), bad, &out, &errb); code != 1 {
			t.Errorf("%q: exit %d, want 1 (stderr %s)", bad, code, errb.String())
		}
	}
}
