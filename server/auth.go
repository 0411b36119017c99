package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"net"
	"strings"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// This file is authentication: the default user (requirepass), named
// users, protected mode and ACL WHOAMI.

// User is a named user for AUTH user pass and HELLO AUTH. tumbler has no
// permissions: every enabled user may run every command.
type User struct {
	Name string
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

// authUser is a user ready for checking: passwords as SHA-256 digests.
type authUser struct {
	off    bool
	nopass bool
	hashes [][sha256.Size]byte
}

// userTable is the users of one configuration, built by newUserTable.
type userTable map[string]*authUser

// newUserTable builds the users of cfg: the default user (on, with
// RequirePass as its password, or nopass without one, unless a User named
// "default" defines it; RequirePass, when set, still replaces its
// passwords) and the named users.
func newUserTable(cfg *Config) userTable {
	t := userTable{"default": {nopass: true}}
	for i := range cfg.Users {
		u := &cfg.Users[i]
		au := &authUser{off: u.Off, nopass: u.NoPass}
		for _, p := range u.Passwords {
			au.hashes = append(au.hashes, sha256.Sum256([]byte(p)))
		}
		for _, h := range u.PasswordHashes {
			var d [sha256.Size]byte
			if b, err := hex.DecodeString(h); err == nil && len(b) == sha256.Size {
				copy(d[:], b)
				au.hashes = append(au.hashes, d)
			}
		}
		t[u.Name] = au
	}
	if cfg.RequirePass != "" {
		d := t["default"]
		t["default"] = &authUser{off: d.off, hashes: [][sha256.Size]byte{sha256.Sum256([]byte(cfg.RequirePass))}}
	}
	return t
}

// check reports whether user may log in with pass. Passwords are
// compared as SHA-256 digests in constant time, every stored digest
// every time.
func (t userTable) check(user, pass []byte) bool {
	u := t[string(user)]
	if u == nil || u.off {
		return false
	}
	if u.nopass {
		return true
	}
	got := sha256.Sum256(pass)
	ok := 0
	for i := range u.hashes {
		ok |= subtle.ConstantTimeCompare(got[:], u.hashes[i][:])
	}
	return ok == 1
}

// defaultOpen reports whether new connections start authenticated: the
// default user is on and needs no password.
func (t userTable) defaultOpen() bool {
	d := t["default"]
	return d.nopass && !d.off
}

// defaultNoPass reports whether the default user has no password: then
// AUTH <password> is refused and protected mode applies.
func (s *Server) defaultNoPass() bool { return (*s.prod.users.Load())["default"].nopass }

// sha256Hex is a password's digest as Redis's "#<hash>" rule writes it.
func sha256Hex(p string) string {
	d := sha256.Sum256([]byte(p))
	return hex.EncodeToString(d[:])
}

// authRequired reports whether a new connection must authenticate.
func (s *Server) authRequired() bool { return !s.prod.users.Load().defaultOpen() }

// checkPassword reports whether user may authenticate with pass.
func (s *Server) checkPassword(user, pass []byte) bool {
	return s.prod.users.Load().check(user, pass)
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

// registerAuthCommands adds ACL WHOAMI.
func (s *Server) registerAuthCommands() {
	const f = engine.FlagNoKeys | engine.FlagNoScript | engine.FlagLoading | engine.FlagStale
	s.eng.Register(&engine.Command{Name: "acl", Arity: -2, Flags: engine.FlagNoKeys, Group: "server", Subs: map[string]*engine.Command{
		"whoami": {Arity: 2, Flags: f, Fn: func(c *engine.Ctx) { c.W.WriteBulkString(userOf(cl(c))) }},
		"help":   engine.HelpCommand(engine.FlagNoKeys, engine.ACLHelp),
	}})
}

// parseUserRules applies the rules of a config file "user" line to u.
// tumbler accepts this subset of Redis's ACL rules:
//
//	on, off              enable or disable the user
//	>password            add a password
//	#<sha256 hex>        add a password by its SHA-256 digest
//	nopass               any password will do (clears the passwords)
//	resetpass            no passwords, and not nopass
//	reset                resetpass, off
//	~*  allkeys  &*  allchannels  +@all  allcommands
//	                     full access, which every tumbler user has
//
// Anything else, key patterns and command restrictions included, is an
// error: tumbler has no permissions and does not pretend to apply them.
// It returns the offending rule and Redis's reason.
func parseUserRules(u *User, rules []string) (bad, reason string) {
	for _, r := range rules {
		switch lr := strings.ToLower(r); {
		case lr == "on":
			u.Off = false
		case lr == "off":
			u.Off = true
		case lr == "nopass":
			u.NoPass, u.Passwords, u.PasswordHashes = true, nil, nil
		case lr == "resetpass":
			u.NoPass, u.Passwords, u.PasswordHashes = false, nil, nil
		case lr == "reset":
			u.Off, u.NoPass, u.Passwords, u.PasswordHashes = true, false, nil, nil
		case lr == "~*" || lr == "allkeys" || lr == "&*" || lr == "allchannels" || lr == "+@all" || lr == "allcommands":
		case strings.HasPrefix(r, ">"):
			u.Passwords = append(u.Passwords, r[1:])
			u.NoPass = false
		case strings.HasPrefix(r, "#"):
			h := r[1:]
			if len(h) != 64 || strings.ToLower(h) != h {
				return r, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
			}
			if _, err := hex.DecodeString(h); err != nil {
				return r, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
			}
			u.PasswordHashes = append(u.PasswordHashes, h)
			u.NoPass = false
		default:
			return r, "tumbler accepts only on, off, >password, #hash, nopass, resetpass, reset and full-access rules (~* &* +@all); it has no per-user permissions"
		}
	}
	return "", ""
}
