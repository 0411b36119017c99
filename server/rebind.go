package server

import (
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
)

// CONFIG SET port, tls-port and bind move the listeners, as Redis's
// changeListenPort and changeBindAddr do: connections already made stay,
// new ones come on the new addresses, and when one of those cannot be
// listened on the old ones come back and the set fails. Addresses that
// leave nothing to listen on (an empty bind and no unix socket, or only
// optional addresses the host lacks) are no failure: as in Redis, the
// server then listens nowhere, serving the connections it has, until a
// CONFIG SET gives it addresses again.

// errRebindPort and errRebindBind are Redis's CONFIG SET errors for a port
// or bind addresses it cannot listen on.
var (
	errRebindPort = errors.New("Unable to listen on this port. Check server logs.")
	errRebindBind = errors.New("Failed to bind to specified addresses.")
)

// listenSpec is one listener to open: its address, whether it may be
// skipped when unavailable ("-" in bind), and whether it serves TLS.
type listenSpec struct {
	addr     string // for unix, the socket's path
	optional bool
	relisten bool // an old address taken back: skipped on any failure
	tls      bool
	unix     bool
}

// listenSpecs returns the listeners cfg asks for, plain ones first (the
// first of all is the primary one), as listen opens them. A port of 0 (one
// picked at start) is the port the server listens on now, or last did.
func (s *Server) listenSpecs(cfg *Config) []listenSpec {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil
	}
	var specs []listenSpec
	if !cfg.TLSOnly && !cfg.NoBind {
		if port == "0" && s.port != 0 {
			port = strconv.Itoa(s.port)
		}
		for _, b := range append([]string{host}, cfg.ExtraAddrs...) {
			h, opt := bindHost(b)
			specs = append(specs, listenSpec{addr: net.JoinHostPort(h, port), optional: opt})
		}
	}
	unix := func(specs []listenSpec) []listenSpec {
		if cfg.UnixSocket == "" {
			return specs
		}
		return append(specs, listenSpec{addr: cfg.Path(cfg.UnixSocket), unix: true})
	}
	if cfg.TLSAddr == "" {
		return unix(specs)
	}
	th, tp, err := net.SplitHostPort(cfg.TLSAddr)
	if err != nil {
		return unix(specs)
	}
	if tp == "0" && s.prod.tlsPort != 0 {
		tp = strconv.Itoa(s.prod.tlsPort)
	}
	hosts := []string{th}
	if th == "" { // a TLS port alone listens on every bind address
		hosts = nil
		if !cfg.NoBind {
			hosts = append([]string{host}, cfg.ExtraAddrs...)
		}
	}
	for _, h := range hosts {
		h, opt := bindHost(h)
		specs = append(specs, listenSpec{addr: net.JoinHostPort(h, tp), optional: opt, tls: true})
	}
	return unix(specs)
}

// rebind moves the listeners from old's addresses to next's, when they
// differ. Called by CONFIG SET (with the keyspace and the settings locked)
// for the parameter named param; it fails, with nothing changed, when
// next's addresses cannot all be listened on, or when Restart is running.
func (s *Server) rebind(old, next *Config, param string) error {
	fail := errRebindPort
	if param == "bind" {
		fail = errRebindBind
	}
	if next.TLSOnly != old.TLSOnly && !(old.NoBind && next.NoBind) {
		// port 0 (no plain listener) or back: the primary listener
		// would change kind. Not supported on a running server. (With
		// an empty bind there is no plain listener either way: Redis's
		// changeListenPort, nothing to move.)
		s.log.Warn("CONFIG SET: cannot switch plain TCP listening on or off while running (port 0)")
		return fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return nil // Start listens on next's addresses; Close ends all
	}
	from, to := s.listenSpecs(old), s.listenSpecs(next)
	if slices.Equal(from, to) {
		return nil
	}
	tlsServe := s.prod.tlsServe
	if tlsServe == nil && next.TLSAddr != "" { // applyTLSPort: TLS was off
		tc, err := buildTLSConfig(next)
		if err != nil {
			s.log.Warn("CONFIG SET: cannot configure TLS", "err", err)
			return errTLSUpdate
		}
		tlsServe = s.serveTLSConfig(next, tc)
	}
	if !s.fx.restartMu.TryLock() {
		s.log.Warn("CONFIG SET: cannot move the listeners while the server restarts")
		return fail
	}
	defer s.fx.restartMu.Unlock()

	// Stop every accept loop, then listen on the new addresses, or on the
	// old ones again.
	var back []listenSpec // (each relisten: whatever comes back serves)
	for _, ln := range s.listeners() {
		_, isTLS := ln.(*tlsListener)
		back = append(back, listenSpec{addr: ln.Addr().String(), relisten: true, tls: isTLS, unix: isUnixListener(ln)})
		_ = ln.Close()
	}
	<-s.fx.acceptDone
	opened, err := s.openListeners(to, tlsServe, listenClients)
	if err != nil {
		s.log.Warn("CONFIG SET: cannot listen on the new addresses; listening on the old ones again", "err", err)
		if s.prod.tlsServe == nil {
			s.prod.tlsLive.Store(nil) // TLS stays off
		}
		if opened, _ = s.openListeners(back, s.prod.tlsServe, s.relisten); len(opened) == 0 && len(back) > 0 {
			s.log.Error("CONFIG SET: cannot listen on the old addresses again either")
		}
	} else if next.TLSAddr == "" { // TLS off: built afresh if it comes back
		s.prod.tlsServe = nil
		s.prod.tlsLive.Store(nil)
	} else {
		s.prod.tlsServe = tlsServe
	}
	s.setListeners(opened)
	s.prod.tlsAddr = ""
	for _, ln := range opened {
		if tl, ok := ln.(*tlsListener); ok {
			s.prod.tlsAddr = tl.Addr().String()
			if ta, ok := tl.Addr().(*net.TCPAddr); ok {
				s.prod.tlsPort = ta.Port
			}
			break
		}
	}
	if s.ln != nil { // (none: the port stays for the addresses to come)
		if ta, ok := s.ln.Addr().(*net.TCPAddr); ok {
			s.port = ta.Port
		}
	}
	s.serveListeners()
	if err != nil {
		return fail
	}
	if len(opened) == 0 {
		s.log.Warn("CONFIG SET: listening nowhere: no address to listen on")
		return nil
	}
	s.log.Info("CONFIG SET: listening on new addresses", "listeners", len(opened))
	return nil
}

// listeners returns every listener the server has, the primary one
// (s.ln) first; none while it listens nowhere. Called with s.mu held,
// or before serving.
func (s *Server) listeners() []net.Listener {
	if s.ln == nil {
		return nil
	}
	return append([]net.Listener{s.ln}, s.prod.extra...)
}

// setListeners makes lns the server's listeners, the first the primary
// one; none: it listens nowhere (rebind). Called with s.mu held.
func (s *Server) setListeners(lns []net.Listener) {
	s.ln, s.prod.extra = nil, nil
	if len(lns) > 0 {
		s.ln, s.prod.extra = lns[0], lns[1:]
	}
}

// openListeners listens as specs say, a TLS one serving tc, skipping an
// address as Start does (skipBind), and an old one taken back that
// fails (relisten); it fails, closing
// what it opened, when a required one is not. listen is how an address is
// listened on (relisten, to take old addresses back).
func (s *Server) openListeners(specs []listenSpec, tc *tls.Config, listen func(string) (net.Listener, error)) ([]net.Listener, error) {
	if s.fx.listen != nil {
		listen = s.fx.listen
	}
	var opened []net.Listener
	for _, sp := range specs {
		var ln net.Listener
		var err error
		if sp.unix {
			ln, err = listenUnix(sp.addr, unixSocketPerm(s.live()))
		} else {
			ln, err = listen(sp.addr)
		}
		if err != nil {
			if skipBind(err, sp.optional) || sp.relisten {
				s.log.Warn("Could not create server TCP listening socket", "addr", sp.addr, "err", err)
				continue
			}
			for _, o := range opened {
				_ = o.Close()
			}
			return nil, err
		}
		if sp.tls {
			ln = &tlsListener{Listener: tls.NewListener(ln, tc), cfg: tc}
		}
		opened = append(opened, ln)
	}
	return opened, nil
}
