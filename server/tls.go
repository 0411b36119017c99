package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file opens the listeners: plain TCP on Addr (and on ExtraAddrs,
// Redis's further bind addresses), and TLS on TLSAddr, configured as
// Redis's tls-* directives do. Plain and TLS ports may both listen; with
// TLSOnly (Redis's "port 0") only TLS does.

// listen opens every listener. It returns the primary one, which Start
// serves and Addr reports (the TLS listener when TLSOnly), and starts the
// accept loops of the others itself.
func (s *Server) listen() (net.Listener, error) {
	cfg := &s.cfg
	if cfg.TLSOnly && cfg.TLSAddr == "" && cfg.UnixSocket == "" {
		return nil, errors.New("tumbler: configured to not listen anywhere (port 0, no tls-port and no unixsocket)")
	}
	var tlsCfg *tls.Config
	if cfg.TLSAddr != "" {
		var err error
		if tlsCfg, err = buildTLSConfig(cfg); err != nil {
			return nil, err
		}
		tlsCfg = s.serveTLSConfig(cfg, tlsCfg)
		s.prod.tlsServe = tlsCfg
	}
	var opened []net.Listener
	fail := func(err error) (net.Listener, error) {
		for _, ln := range opened {
			_ = ln.Close()
		}
		return nil, err
	}
	open := func(addr string, optional bool) (net.Listener, error) {
		ln, err := listenClients(addr)
		if err != nil {
			if skipBind(err, optional) {
				s.log.Warn("Could not create server TCP listening socket", "addr", addr, "err", err)
				return nil, nil
			}
			return nil, fmt.Errorf("tumbler: cannot listen on %s: %w", addr, err)
		}
		opened = append(opened, ln)
		return ln, nil
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("tumbler: bad address %q: %w", cfg.Addr, err)
	}
	var primary net.Listener
	if !cfg.TLSOnly && !cfg.NoBind {
		for _, b := range append([]string{host}, cfg.ExtraAddrs...) {
			h, optional := bindHost(b)
			ln, err := open(net.JoinHostPort(h, port), optional)
			if err != nil {
				return fail(err)
			}
			if ln != nil && primary == nil {
				primary = ln
				port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			}
		}
	}
	if tlsCfg != nil {
		th, tp, err := net.SplitHostPort(cfg.TLSAddr)
		if err != nil {
			return fail(fmt.Errorf("tumbler: bad TLS address %q: %w", cfg.TLSAddr, err))
		}
		hosts := []string{th}
		if th == "" {
			// A TLS port alone (tls-port) listens on every bind address
			// (none for an empty bind).
			hosts = nil
			if !cfg.NoBind {
				hosts = append([]string{host}, cfg.ExtraAddrs...)
			}
		}
		first := true
		for _, h := range hosts {
			h, optional := bindHost(h)
			ln, err := open(net.JoinHostPort(h, tp), optional)
			if err != nil {
				return fail(err)
			}
			if ln == nil {
				continue
			}
			if first {
				first = false
				s.prod.tlsPort = ln.Addr().(*net.TCPAddr).Port
				tp = strconv.Itoa(s.prod.tlsPort)
				s.prod.tlsAddr = ln.Addr().String()
			}
			opened[len(opened)-1] = &tlsListener{Listener: tls.NewListener(ln, tlsCfg), cfg: tlsCfg}
			if primary == nil {
				primary = opened[len(opened)-1]
			}
		}
	}
	if cfg.UnixSocket != "" {
		ln, err := listenUnix(cfg.Path(cfg.UnixSocket), unixSocketPerm(cfg))
		if err != nil {
			return fail(err)
		}
		opened = append(opened, ln)
		if primary == nil {
			primary = ln
		}
	}
	if primary == nil { // every bind address skipped (skipBind)
		return nil, errors.New("tumbler: configured to not listen anywhere, exiting")
	}
	for _, ln := range opened {
		if ln != primary {
			s.prod.extra = append(s.prod.extra, ln) // served by beginServing (fixture.go)
		}
	}
	return primary, nil
}

// listenUnix listens on a Unix domain socket at path, as Redis's
// anetUnixServer after its unlink: whatever file is there is removed
// first, and a perm other than 0 is the socket's mode. Closing the
// listener removes the file.
func listenUnix(path string, perm os.FileMode) (net.Listener, error) {
	_ = os.Remove(path) // as Redis: "don't care if this fails"
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("tumbler: cannot listen on the unix socket %s: %w", path, err)
	}
	if perm != 0 {
		if err := os.Chmod(path, perm); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("tumbler: cannot set the unix socket's mode (unixsocketperm): %w", err)
		}
	}
	return ln, nil
}

// unixSocketPerm is the unixsocketperm parameter (octal, validated when
// set).
func unixSocketPerm(cfg *Config) os.FileMode {
	v, _ := strconv.ParseUint(cfg.param("unixsocketperm", "0"), 8, 32)
	return os.FileMode(v) & os.ModePerm
}

// isUnixListener reports whether ln listens on a Unix domain socket.
func isUnixListener(ln net.Listener) bool { return ln.Addr().Network() == "unix" }

// tlsListener is a TLS listener that keeps its configuration, so that
// Restart can listen again the same way.
type tlsListener struct {
	net.Listener
	cfg *tls.Config
}

// skipBind reports whether a bind address that could not be listened on
// is skipped, as Redis's listenToPort skips it: an optional one ("-")
// that is not the host's (EADDRNOTAVAIL), and any whose address family
// or protocol the system lacks (an IPv6 address without IPv6). Any other
// failure (the port taken) stops the server.
func skipBind(err error, optional bool) bool {
	if optional && errors.Is(err, syscall.EADDRNOTAVAIL) {
		return true
	}
	for _, e := range []error{syscall.ENOPROTOOPT, syscall.EPROTONOSUPPORT, syscall.ESOCKTNOSUPPORT, syscall.EPFNOSUPPORT, syscall.EAFNOSUPPORT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// bindHost turns a bind address into a host to listen on: a leading '-'
// marks it optional (Redis skips it when unavailable), "*" is every IPv4
// address and "::*" every IPv6 one.
func bindHost(b string) (host string, optional bool) {
	if strings.HasPrefix(b, "-") {
		b, optional = b[1:], true
	}
	switch b {
	case "*":
		b = "0.0.0.0"
	case "::*":
		b = "::"
	}
	return b, optional
}

// listenTCP listens on addr as Redis binds its address: an IPv4 address
// (0.0.0.0 too) on IPv4 alone, an IPv6 address (:: too) on IPv6 alone
// (IPV6_V6ONLY, as Redis's anetV6Only), a name or no host on what it
// resolves to. (Go listens on 0.0.0.0 with a socket of both families, so
// --bind 0.0.0.0 took IPv6 connections, past firewall rules written for
// IPv4.) keepAlive is the listener's net.ListenConfig.KeepAlive: 0 for
// Go's 15 s, -1 to leave accepted sockets as the system makes them.
func listenTCP(addr string, keepAlive time.Duration) (net.Listener, error) {
	network := "tcp"
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil {
			if ip.To4() != nil {
				network = "tcp4"
			} else {
				network = "tcp6"
			}
		}
	}
	lc := net.ListenConfig{KeepAlive: keepAlive}
	return lc.Listen(context.Background(), network, addr)
}

// listenClients listens for clients. Accept leaves the socket's
// keepalive as the system has it (off), as Redis's accept does: serveConn
// then sets tcp-keepalive's (setKeepAlive), and a setting the system
// refuses leaves the system's timing, as with Redis.
func listenClients(addr string) (net.Listener, error) { return listenTCP(addr, -1) }

// closeListeners closes the listeners other than the primary one.
func (s *Server) closeListeners() {
	for _, ln := range s.prod.extra {
		_ = ln.Close()
	}
}

// TLSAddr returns the address of the TLS listener, "" without one.
func (s *Server) TLSAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prod.tlsAddr
}

// serveTLSConfig returns the configuration the TLS listeners serve with:
// one that hands each handshake the live configuration, tc at first, which
// CONFIG SET of a tls-* setting replaces (buildLiveTLS), as Redis's
// applyTlsCfg does: new connections get the new certificates, connections
// made keep theirs. An embedder's Config.TLSConfig is served as it is.
func (s *Server) serveTLSConfig(cfg *Config, tc *tls.Config) *tls.Config {
	if cfg.TLSConfig != nil {
		return tc
	}
	s.prod.tlsLive.Store(tc)
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return s.prod.tlsLive.Load(), nil
	}}
}

// tlsSettingsChanged reports whether next's tls-* settings (those its
// configuration is built from) differ from old's.
func tlsSettingsChanged(old, next *Config) bool {
	return old.TLSCertFile != next.TLSCertFile || old.TLSKeyFile != next.TLSKeyFile ||
		old.TLSCACertFile != next.TLSCACertFile || old.TLSCACertDir != next.TLSCACertDir ||
		old.TLSProtocols != next.TLSProtocols || old.TLSAuthClients != next.TLSAuthClients
}

// errTLSUpdate is Redis's CONFIG SET error for TLS settings it cannot
// configure with.
var errTLSUpdate = errors.New("Unable to update TLS configuration. Check server logs.")

// buildLiveTLS builds the configuration next's tls-* settings give, for
// CONFIG SET, when TLS is served from them (nil, nil otherwise: they are
// only kept, as Redis keeps them without a tls-port).
func (s *Server) buildLiveTLS(old, next *Config) (*tls.Config, error) {
	if s.prod.tlsLive.Load() == nil || !tlsSettingsChanged(old, next) {
		return nil, nil
	}
	tc, err := buildTLSConfig(next)
	if err != nil {
		s.log.Warn("CONFIG SET: cannot configure TLS with the new settings; keeping the old ones", "err", err)
		return nil, errTLSUpdate
	}
	return tc, nil
}

// buildTLSConfig returns the server's TLS configuration: Config.TLSConfig
// when set, otherwise one built from the tls-* settings.
func buildTLSConfig(cfg *Config) (*tls.Config, error) {
	if cfg.TLSConfig != nil {
		return cfg.TLSConfig, nil
	}
	if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
		return nil, errors.New("tumbler: TLS needs tls-cert-file and tls-key-file")
	}
	cert, err := tls.LoadX509KeyPair(cfg.Path(cfg.TLSCertFile), cfg.Path(cfg.TLSKeyFile)) // relative to dir
	if err != nil {
		return nil, fmt.Errorf("tumbler: failed to load certificate %s / key %s: %w", cfg.TLSCertFile, cfg.TLSKeyFile, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.TLSProtocols != "" {
		if tc.MinVersion, tc.MaxVersion, err = tlsVersions(cfg.TLSProtocols); err != nil {
			return nil, err
		}
	}
	switch auth := engine.LowerASCII(cfg.TLSAuthClients); auth {
	case "no":
		tc.ClientAuth = tls.NoClientCert
	case "", "yes", "optional":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		if auth == "optional" {
			tc.ClientAuth = tls.VerifyClientCertIfGiven
		}
		if cfg.TLSCACertFile == "" && cfg.TLSCACertDir == "" {
			return nil, errors.New("tumbler: either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is enabled")
		}
	default:
		return nil, fmt.Errorf("tumbler: tls-auth-clients must be yes, no or optional, not %q", cfg.TLSAuthClients)
	}
	if cfg.TLSCACertFile != "" || cfg.TLSCACertDir != "" {
		pool := x509.NewCertPool()
		var files []string
		if cfg.TLSCACertFile != "" {
			files = append(files, cfg.Path(cfg.TLSCACertFile))
		}
		if cfg.TLSCACertDir != "" {
			entries, err := os.ReadDir(cfg.Path(cfg.TLSCACertDir))
			if err != nil {
				return nil, fmt.Errorf("tumbler: tls-ca-cert-dir: %w", err)
			}
			for _, e := range entries {
				if !e.IsDir() {
					files = append(files, filepath.Join(cfg.Path(cfg.TLSCACertDir), e.Name()))
				}
			}
		}
		for _, f := range files {
			pem, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("tumbler: failed to load CA certificates: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) && f == cfg.Path(cfg.TLSCACertFile) {
				return nil, fmt.Errorf("tumbler: failed to load CA certificates: no PEM certificate in %s", f)
			}
		}
		tc.ClientCAs = pool
	}
	return tc, nil
}

// tlsVersions parses tls-protocols ("TLSv1.2 TLSv1.3") into the lowest
// and highest version allowed.
func tlsVersions(s string) (lo, hi uint16, err error) {
	for _, p := range strings.Fields(s) {
		var v uint16
		switch engine.LowerASCII(p) {
		case "tlsv1":
			v = tls.VersionTLS10
		case "tlsv1.1":
			v = tls.VersionTLS11
		case "tlsv1.2":
			v = tls.VersionTLS12
		case "tlsv1.3":
			v = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("tumbler: invalid tls-protocols specified: %q", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if lo == 0 {
		return 0, 0, errors.New("tumbler: tls-protocols names no protocol")
	}
	return lo, hi, nil
}
