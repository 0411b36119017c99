package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"net"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file is authentication: the default user (requirepass), named
// users, protected mode and ACL WHOAMI.

// User is a user of the configuration (the "user" directive): Rules are
// its ACL rules in Redis's syntax ("on", ">password", "~lock:*",
// "+@all", "(...)" ...); as in Redis, a user whose rules do not say "on"
// is off. A User without Rules is the full-access user its other fields
// describe (kept for embedders). The two forms do not mix: Start refuses
// a User with Rules and any other field set.
type User struct {
	Name  string
	Rules []string
	// Off disables the user: AUTH as it fails (Redis's "off").
	Off bool
	// NoPass lets the user in with any password (Redis's "nopass").
	NoPass bool
	// Passwords the user may authenticate with. PasswordHashes holds more,
	// as lowercase hex SHA-256 digests (Redis's "#<hash>").
	Passwords      []string
	PasswordHashes []string
}

// ErrDenied is the reply to a connection refused by protected mode,
// verbatim from Redis 7.0 (src/networking.c, clientAcceptHandler).
const ErrDenied = "DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Setup a an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside."

// defaultNoPass reports whether the default user has no password: then
// AUTH <password> is refused and protected mode applies.
func (s *Server) defaultNoPass() bool { return s.eng.ACL().Default().NoPass() }

// sha256Hex is a password's digest as Redis's "#<hash>" rule writes it.
func sha256Hex(p string) string {
	d := sha256.Sum256([]byte(p))
	return hex.EncodeToString(d[:])
}

// authRequired reports whether a new connection must authenticate: the
// default user is off or has passwords (Redis's authRequired).
func (s *Server) authRequired() bool {
	d := s.eng.ACL().Default()
	return !d.NoPass() || !d.On()
}

// authenticate returns the user for user and pass, or nil after logging
// the failure (ACL LOG) for the command me sent (AUTH or HELLO).
func (s *Server) authenticate(me *client, user, pass []byte, cmdName []byte) *engine.ACLUser {
	u := s.eng.ACL().Authenticate(user, pass)
	if u == nil {
		s.eng.ACL().LogAuthFailure(&me.Client, string(cmdName), string(user))
	}
	return u
}

// isLoopback reports whether a client address is the loopback interface,
// as Redis's islocalClient: exactly 127.0.0.1 or ::1.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a != nil && a.Network() == "unix"
	}
	return ta.IP.Equal(net.IPv4(127, 0, 0, 1)) || ta.IP.Equal(net.IPv6loopback)
}

// tlsHandshakeTimeout bounds a TLS client's handshake.
const tlsHandshakeTimeout = 10 * time.Second

// admit runs once per new connection, after maxclients admitted it, as
// Redis's clientAcceptHandler: it completes a TLS handshake, then refuses
// a client from outside the loopback interface while protected mode is on
// and the default user has no password. A refused client gets ErrDenied
// and is closed.
func (s *Server) admit(c *client) bool {
	if tc, ok := c.nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.log.Debug("TLS handshake failed", "addr", c.addr, "err", err)
			return false
		}
	}
	if s.live().NoProtectedMode || !s.defaultNoPass() || s.prod.isLocal(c.nc.RemoteAddr()) {
		return true
	}
	s.eng.Stats.RejectedConns.Add(1)
	c.w.WriteError(ErrDenied)
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_ = c.flush()
	return false
}
