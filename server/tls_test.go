package server

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/internal/testpki"
)

// testPKI is one test's certificates (internal/testpki), with the
// server tests' helpers.
type testPKI struct{ *testpki.PKI }

func newTestPKI(t *testing.T) *testPKI { return &testPKI{testpki.New(t)} }

// tlsConfig gives the files to a server Config.
func (p *testPKI) tlsConfig(c *Config, authClients string) {
	c.TLSAddr = "127.0.0.1:0"
	c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.CertFile, p.KeyFile, p.CAFile
	c.TLSAuthClients = authClients
}

// tlsDo dials addr over TLS with the given client certificates, sends one
// command and returns the reply, or the error that ended the exchange.
func (p *testPKI) tlsDo(addr string, certs []tls.Certificate, args ...string) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc := &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"}
	if len(certs) > 0 {
		// Always present the certificate, even one the server's CA list
		// does not name (a Go client would otherwise send none).
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
	}
	conn, err := tls.DialWithDialer(d, "tcp", addr, tc)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(encode(args...))); err != nil {
		return "", err
	}
	var b strings.Builder
	err = readReply(bufio.NewReader(conn), &b)
	return b.String(), err
}

func TestTLS_PlainAndTLSPortsBothServe(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "yes") }))
	if srv.TLSAddr() == "" || srv.TLSAddr() == srv.Addr() {
		t.Fatalf("TLS %q, plain %q", srv.TLSAddr(), srv.Addr())
	}
	if got, err := p.tlsDo(srv.TLSAddr(), []tls.Certificate{p.Client}, "SET", "k", "tls"); err != nil || got != "+OK\r\n" {
		t.Fatalf("TLS SET: %q, %v", got, err)
	}
	if got := dial(t, srv.Addr()).do("GET", "k"); got != "$3\r\ntls\r\n" {
		t.Fatalf("plain GET: %q", got)
	}
	_, port, _ := net.SplitHostPort(srv.TLSAddr())
	if got := dial(t, srv.Addr()).do("CONFIG", "GET", "tls-port"); got != "*2\r\n$8\r\ntls-port\r\n$"+itoa(len(port))+"\r\n"+port+"\r\n" {
		t.Fatalf("CONFIG GET tls-port: %q", got)
	}
}

func TestTLS_AuthClients(t *testing.T) {
	p := newTestPKI(t)
	cases := []struct {
		auth                        string
		noCert, goodCert, otherCert bool // whether each client is served
	}{
		{"yes", false, true, false},
		{"optional", true, true, false},
		{"no", true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.auth, func(t *testing.T) {
			srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, tc.auth) }))
			for _, cl := range []struct {
				name  string
				certs []tls.Certificate
				want  bool
			}{{"no cert", nil, tc.noCert}, {"CA-signed cert", []tls.Certificate{p.Client}, tc.goodCert}, {"other CA's cert", []tls.Certificate{p.OtherClient}, tc.otherCert}} {
				got, err := p.tlsDo(srv.TLSAddr(), cl.certs, "PING")
				if served := err == nil && got == "+PONG\r\n"; served != cl.want {
					t.Errorf("%s: served=%v (reply %q, err %v), want %v", cl.name, served, got, err, cl.want)
				}
			}
		})
	}
}

func TestTLS_OnlyWithPortZero(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no"); c.TLSOnly = true }))
	if srv.Addr() != srv.TLSAddr() {
		t.Fatalf("Addr %q, TLSAddr %q: with TLSOnly the TLS listener is the primary one", srv.Addr(), srv.TLSAddr())
	}
	if got, err := p.tlsDo(srv.TLSAddr(), nil, "CONFIG", "GET", "port"); err != nil || got != "*2\r\n$4\r\nport\r\n$1\r\n0\r\n" {
		t.Fatalf("CONFIG GET port over TLS: %q, %v", got, err)
	}
	// A plain client on the TLS port gets no RESP reply.
	c := dial(t, srv.Addr())
	c.send(encode("PING"))
	if got := waitClosed(t, c); strings.Contains(string(got), "PONG") {
		t.Fatalf("plain client served on the TLS port: %q", got)
	}
	if err := New(Config{Addr: "127.0.0.1:0", TLSOnly: true}).Start(); err == nil || !strings.Contains(err.Error(), "not listen anywhere") {
		t.Fatalf("TLSOnly without TLS: %v", err)
	}
}

func TestTLS_BadSettingsFailStart(t *testing.T) {
	p := newTestPKI(t)
	cases := []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"no cert", func(c *Config) { p.tlsConfig(c, "no"); c.TLSCertFile = "" }, "TLS needs tls-cert-file and tls-key-file"},
		{"missing key file", func(c *Config) { p.tlsConfig(c, "no"); c.TLSKeyFile = filepath.Join(p.Dir, "none") }, "failed to load certificate"},
		{"auth without CA", func(c *Config) { p.tlsConfig(c, "yes"); c.TLSCACertFile = "" }, "either tls-ca-cert-file or tls-ca-cert-dir must be specified"},
		{"CA file not PEM", func(c *Config) { p.tlsConfig(c, "yes"); c.TLSCACertFile = p.KeyFile }, "no PEM certificate"},
		{"bad protocols", func(c *Config) { p.tlsConfig(c, "no"); c.TLSProtocols = "SSLv3" }, "invalid tls-protocols"},
	}
	for _, tc := range cases {
		cfg := Config{Addr: "127.0.0.1:0"}
		tc.set(&cfg)
		srv := New(cfg)
		err := srv.Start()
		if err == nil {
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Start() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestTLS_ProtocolsAndCADir(t *testing.T) {
	p := newTestPKI(t)
	caDir := filepath.Join(p.Dir, "cas")
	os.Mkdir(caDir, 0o700)
	os.WriteFile(filepath.Join(caDir, "ca.pem"), p.CACertPEM, 0o600)
	srv := RunT(t, WithConfig(func(c *Config) {
		p.tlsConfig(c, "yes")
		c.TLSCACertFile, c.TLSCACertDir, c.TLSProtocols = "", caDir, "TLSv1.3"
	}))
	if got, err := p.tlsDo(srv.TLSAddr(), []tls.Certificate{p.Client}, "PING"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("TLS 1.3 client: %q, %v", got, err)
	}
	conn, err := tls.Dial("tcp", srv.TLSAddr(), &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}, MaxVersion: tls.VersionTLS12})
	if err == nil {
		err = conn.Handshake()
		conn.Close()
	}
	if err == nil {
		t.Fatal("a TLS 1.2 client was served with tls-protocols TLSv1.3")
	}
}

// redis-cli --tls, as operators use it, against a TLS-only tumbler.
func TestTLS_RedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	if out, _ := exec.Command(cli, "--tls", "--help").CombinedOutput(); !strings.Contains(string(out), "--cacert") {
		t.Skip("redis-cli built without TLS")
	}
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "yes"); c.TLSOnly = true; c.RequirePass = "pw" }))
	_, port, _ := net.SplitHostPort(srv.TLSAddr())
	run := func(args ...string) string {
		base := []string{"--tls", "--cacert", p.CAFile, "--cert", p.ClientCertFile, "--key", p.ClientKeyFile, "-h", "127.0.0.1", "-p", port}
		cmd := exec.Command(cli, append(base, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("--no-auth-warning", "-a", "pw", "SET", "lock", "me"); got != "OK" {
		t.Fatalf("SET: %q", got)
	}
	if got := run("--no-auth-warning", "-a", "pw", "GET", "lock"); got != "me" {
		t.Fatalf("GET: %q", got)
	}
	if got := run("GET", "lock"); got != "NOAUTH Authentication required." {
		t.Fatalf("GET without password: %q", got)
	}
}

// Restart takes every listener down and brings each back as it was: a
// TLS port comes back speaking TLS (a TLS-only server's too), and no
// listener serves while the server is down.
func TestRestart_BringsBackEveryListenerAsItWas(t *testing.T) {
	p := newTestPKI(t)
	t.Run("tls-only", func(t *testing.T) {
		srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no"); c.TLSOnly = true }))
		if got, err := p.tlsDo(srv.TLSAddr(), nil, "SET", "k", "v"); err != nil || got != "+OK\r\n" {
			t.Fatalf("SET over TLS: %q, %v", got, err)
		}
		if err := srv.Restart(true); err != nil {
			t.Fatal(err)
		}
		if got, err := p.tlsDo(srv.TLSAddr(), nil, "GET", "k"); err != nil || got != "$1\r\nv\r\n" {
			t.Fatalf("GET over TLS after Restart: %q, %v", got, err)
		}
	})
	t.Run("plain-and-tls", func(t *testing.T) {
		srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no") }))
		plainAddr, tlsAddr := srv.Addr(), srv.TLSAddr()
		// A TLS client connected before the crash loses its connection.
		tc, err := tls.Dial("tcp", tlsAddr, &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		tcl := &rawClient{t: t, conn: tc, rd: bufio.NewReader(tc)}
		if got := tcl.do("SET", "k", "v"); got != "+OK\r\n" {
			t.Fatalf("SET over TLS: %q", got)
		}
		var down []string
		srv.fx.listen = func(a string) (net.Listener, error) {
			if len(down) == 0 { // the server is down: no port may serve
				for _, addr := range []string{plainAddr, tlsAddr} {
					if _, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
						t.Errorf("%s accepts connections while the server is down", addr)
					}
				}
			}
			down = append(down, a)
			return net.Listen("tcp", a)
		}
		if err := srv.Restart(false); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(down, []string{plainAddr, tlsAddr}) {
			t.Fatalf("listened again on %v, want %v", down, []string{plainAddr, tlsAddr})
		}
		tcl.expectClosed()
		if got, err := p.tlsDo(tlsAddr, nil, "GET", "k"); err != nil || got != "$-1\r\n" {
			t.Fatalf("GET over TLS after Restart(false): %q, %v", got, err)
		}
		if got := dial(t, plainAddr).do("PING"); got != "+PONG\r\n" {
			t.Fatalf("plain PING after Restart: %q", got)
		}
	})
}

// CONFIG SET of the tls-* settings configures TLS anew, as Redis's
// applyTlsCfg: new connections get the new certificate (a rotation
// without a restart), connections made keep theirs, settings TLS cannot
// be configured with are Redis's error with nothing changed, and a
// Restart comes back with the certificates the server started with.
func TestTLS_ConfigSetRotatesCertificates(t *testing.T) {
	p, next := newTestPKI(t), newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) { p.tlsConfig(c, "no") }))
	c := dial(t, srv.Addr())
	served := func(pki *testPKI, certs ...tls.Certificate) bool {
		got, err := pki.tlsDo(srv.TLSAddr(), certs, "PING")
		return err == nil && got == "+PONG\r\n"
	}
	if !served(p) || served(next) {
		t.Fatal("before: want the first certificate")
	}
	old, err := tls.Dial("tcp", srv.TLSAddr(), &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := c.do("CONFIG", "SET", "tls-cert-file", next.CertFile, "tls-key-file", next.KeyFile); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET the new certificate = %q", got)
	}
	if served(p) || !served(next) {
		t.Fatal("after CONFIG SET: want the new certificate")
	}
	old.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := old.Write([]byte(encode("PING"))); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := readReply(bufio.NewReader(old), &b); err != nil || b.String() != "+PONG\r\n" {
		t.Fatalf("the connection made before: %q, %v", b.String(), err)
	}

	want := "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs.\r\n"
	if got := c.do("CONFIG", "SET", "timeout", "7", "tls-key-file", filepath.Join(t.TempDir(), "missing.key")); got != want {
		t.Fatalf("CONFIG SET a missing key = %q, want %q", got, want)
	}
	if got := c.do("CONFIG", "GET", "tls-key-file"); !strings.HasSuffix(got, next.KeyFile+"\r\n") {
		t.Fatalf("tls-key-file after the failed set: %q", got)
	}
	if got := c.do("CONFIG", "GET", "timeout"); got != "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n" {
		t.Fatalf("timeout after the failed set: %q", got)
	}
	if !served(next) {
		t.Fatal("after the failed set: want the new certificate still")
	}
	want = "-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - Unable to update TLS configuration. Check server logs.\r\n"
	if got := c.do("CONFIG", "SET", "tls-protocols", "SSLv3"); got != want {
		t.Fatalf("CONFIG SET tls-protocols SSLv3 = %q, want %q", got, want)
	}

	// client certificates, checked against the CA the server started with
	if got := c.do("CONFIG", "SET", "tls-auth-clients", "yes"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-auth-clients yes = %q", got)
	}
	if served(next) || !served(next, p.Client) {
		t.Fatal("tls-auth-clients yes: want a client certificate signed by the CA")
	}

	if err := srv.Restart(true); err != nil {
		t.Fatal(err)
	}
	if !served(p) || served(next) {
		t.Fatal("after Restart: want the certificate the server started with")
	}
}

// CONFIG SET tls-port moves the TLS listeners (onto the bind addresses,
// as a tls-port does), turns TLS on from the tls-* settings, as Redis's
// applyTLSPort, or off with 0; settings TLS cannot be configured with are
// Redis's error.
func TestTLS_ConfigSetTLSPort(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSAuthClients = p.CertFile, p.KeyFile, "no"
	}))
	c := dial(t, srv.Addr())
	if srv.TLSAddr() != "" {
		t.Fatal("TLS served without a tls-port")
	}
	port := strconv.Itoa(freeTCPPort(t))
	if got := c.do("CONFIG", "SET", "tls-port", port); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-port = %q", got)
	}
	if want := net.JoinHostPort("127.0.0.1", port); srv.TLSAddr() != want {
		t.Fatalf("TLSAddr() = %q, want %q", srv.TLSAddr(), want)
	}
	if got, err := p.tlsDo(srv.TLSAddr(), nil, "PING"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("PING over TLS: %q, %v", got, err)
	}
	pingAt(t, srv.Addr()) // the plain listener still serves
	moved := strconv.Itoa(freeTCPPort(t))
	if got := c.do("CONFIG", "SET", "tls-port", moved); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-port again = %q", got)
	}
	if got, err := p.tlsDo(net.JoinHostPort("127.0.0.1", moved), nil, "PING"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("PING over TLS on the new port: %q, %v", got, err)
	}
	if got := c.do("CONFIG", "SET", "tls-port", "0"); got != "+OK\r\n" || srv.TLSAddr() != "" {
		t.Fatalf("CONFIG SET tls-port 0 = %q, TLSAddr %q", got, srv.TLSAddr())
	}
	if _, err := p.tlsDo(net.JoinHostPort("127.0.0.1", moved), nil, "PING"); err == nil {
		t.Fatal("TLS still served after tls-port 0")
	}
	// kept, unchecked, while TLS is off, as in Redis
	if got := c.do("CONFIG", "SET", "tls-protocols", "SSLv3"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET tls-protocols SSLv3 with TLS off = %q", got)
	}
	c.do("CONFIG", "SET", "tls-protocols", "")
	c.do("CONFIG", "SET", "tls-key-file", filepath.Join(t.TempDir(), "missing.key"))
	want := "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to update TLS configuration. Check server logs.\r\n"
	if got := c.do("CONFIG", "SET", "tls-port", port); got != want {
		t.Fatalf("CONFIG SET tls-port with a missing key = %q, want %q", got, want)
	}
	if srv.TLSAddr() != "" {
		t.Fatal("TLS served after the failed set")
	}
	pingAt(t, srv.Addr())
}

// A TLS address without a host (":0": a TLS port on the bind addresses,
// picked at start) keeps its picked port across CONFIG SET bind "" and
// back, as the plain port does: with an empty bind there is no TLS
// listener, CONFIG GET tls-port still names the port, and a bind listens
// on it again, plain and TLS.
func TestTLS_PickedPortSurvivesEmptyBind(t *testing.T) {
	p := newTestPKI(t)
	srv := RunT(t, WithConfig(func(c *Config) {
		p.tlsConfig(c, "no")
		c.TLSAddr = ":0"
	}))
	tlsAddr := srv.TLSAddr()
	host, tp, err := net.SplitHostPort(tlsAddr)
	if err != nil || host != "127.0.0.1" || tp == "0" {
		t.Fatalf("TLSAddr() = %q (%v)", tlsAddr, err)
	}
	want := "*2\r\n$8\r\ntls-port\r\n$" + strconv.Itoa(len(tp)) + "\r\n" + tp + "\r\n"
	c := dial(t, srv.Addr())
	if got := c.do("CONFIG", "GET", "tls-port"); got != want {
		t.Fatalf("CONFIG GET tls-port = %q, want %q", got, want)
	}
	if got := c.do("CONFIG", "SET", "bind", ""); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind \"\" = %q", got)
	}
	if _, err := p.tlsDo(tlsAddr, nil, "PING"); err == nil {
		t.Fatal("TLS still served with an empty bind")
	}
	if got := c.do("CONFIG", "GET", "tls-port"); got != want {
		t.Fatalf("CONFIG GET tls-port with an empty bind = %q, want %q", got, want)
	}
	if got := c.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET bind back = %q", got)
	}
	if got := srv.TLSAddr(); got != tlsAddr {
		t.Fatalf("TLSAddr() after bind back = %q, want %q", got, tlsAddr)
	}
	if got, err := p.tlsDo(tlsAddr, nil, "PING"); err != nil || got != "+PONG\r\n" {
		t.Fatalf("PING over TLS after bind back: %q, %v", got, err)
	}
	if got := c.do("CONFIG", "GET", "tls-port"); got != want {
		t.Fatalf("CONFIG GET tls-port after bind back = %q, want %q", got, want)
	}
}
