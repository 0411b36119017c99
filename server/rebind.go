package server

import (
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
)

// CONFIG SET port and CONFIG SET bind move the plain TCP listeners, as
// Redis's changeListenPort and changeBindAddr do: connections already
// made stay, new ones come on the new addresses, and when one of those
// cannot be listened on the old ones come back and the set fails. The TLS
// listeners stay where they are (Redis moves them with bind too).

// errRebindPort and errRebindBind are Redis's CONFIG SET errors for a port
// or bind addresses it cannot listen on.
var (
	errRebindPort = errors.New("Unable to listen on this port. Check server logs.")
	errRebindBind = errors.New("Failed to bind to specified addresses.")
)

// plainAddrs returns the addresses of cfg's plain TCP listeners, each
// with whether it is optional ("-" in bind): Addr, then each of
// ExtraAddrs on its port. A port of 0 (one picked at start) is the port
// the server listens on now.
func (s *Server) plainAddrs(cfg *Config) (addrs []string, optional []bool) {
	if cfg.TLSOnly {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, nil
	}
	if port == "0" && s.port != 0 {
		port = strconv.Itoa(s.port)
	}
	addrs, optional = []string{net.JoinHostPort(host, port)}, []bool{false}
	for _, b := range cfg.ExtraAddrs {
		h, opt := bindHost(b)
		addrs = append(addrs, net.JoinHostPort(h, port))
		optional = append(optional, opt)
	}
	return addrs, optional
}

// rebind moves the plain listeners from old's addresses to next's, when
// they differ. Called by CONFIG SET (with the keyspace and the settings
// locked); it fails, with nothing changed, when next's addresses cannot
// all be listened on, or when Restart is running.
func (s *Server) rebind(old, next *Config, byPort bool) error {
	fail := errRebindBind
	if byPort {
		fail = errRebindPort
	}
	if next.TLSOnly != old.TLSOnly {
		// port 0 (no plain listener) or back: the primary listener
		// would change kind. Not supported on a running server.
		s.log.Warn("CONFIG SET: cannot switch plain TCP listening on or off while running (port 0)")
		return fail
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return nil // Start listens on next's addresses; Close ends all
	}
	from, _ := s.plainAddrs(old)
	to, optional := s.plainAddrs(next)
	if slices.Equal(from, to) {
		return nil
	}
	if !s.fx.restartMu.TryLock() {
		s.log.Warn("CONFIG SET: cannot move the listeners while the server restarts")
		return fail
	}
	defer s.fx.restartMu.Unlock()

	// Stop every accept loop (the TLS ones too: their loops end together),
	// then listen on the new addresses, or on the old ones again.
	var plain, other []net.Listener
	for _, ln := range append([]net.Listener{s.ln}, s.prod.extra...) {
		if _, isTLS := ln.(*tlsListener); isTLS {
			other = append(other, ln)
		} else {
			plain = append(plain, ln)
		}
		_ = ln.Close()
	}
	<-s.fx.acceptDone
	opened, err := s.listenPlain(to, optional)
	if err != nil {
		s.log.Warn("CONFIG SET: cannot listen on the new addresses; listening on the old ones again", "err", err)
		back := make([]net.Listener, 0, len(plain))
		for _, ln := range plain {
			nl, rerr := s.relisten(ln.Addr().String())
			if rerr != nil {
				s.log.Error("CONFIG SET: cannot listen on an old address again", "err", rerr)
				continue
			}
			back = append(back, nl)
		}
		opened = back
	}
	for _, ln := range other {
		nl, rerr := s.relisten(ln.Addr().String())
		if rerr != nil {
			s.log.Error("CONFIG SET: cannot listen on the TLS address again", "err", rerr)
			continue
		}
		tl := ln.(*tlsListener)
		opened = append(opened, &tlsListener{Listener: tls.NewListener(nl, tl.cfg), cfg: tl.cfg})
	}
	if len(opened) == 0 {
		return fail // (logged above)
	}
	s.ln, s.prod.extra = opened[0], opened[1:]
	if ta, ok := s.ln.Addr().(*net.TCPAddr); ok && !next.TLSOnly {
		s.port = ta.Port
	}
	s.serveListeners()
	if err != nil {
		return fail
	}
	s.log.Info("CONFIG SET: listening on new addresses", "addrs", to)
	return nil
}

// listenPlain listens on addrs, skipping an optional one that is not
// available (as Start does); it fails, closing what it opened, when a
// required one is not, or when none is.
func (s *Server) listenPlain(addrs []string, optional []bool) ([]net.Listener, error) {
	listen := s.fx.listen
	if listen == nil {
		listen = listenClients
	}
	var opened []net.Listener
	for i, a := range addrs {
		ln, err := listen(a)
		if err != nil {
			if optional[i] {
				s.log.Warn("could not listen on an optional bind address", "addr", a, "err", err)
				continue
			}
			for _, o := range opened {
				_ = o.Close()
			}
			return nil, err
		}
		opened = append(opened, ln)
	}
	if len(opened) == 0 {
		return nil, errors.New("no bind address available")
	}
	return opened, nil
}
