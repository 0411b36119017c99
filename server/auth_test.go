package server

import (
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	replyNoAuth    = "-NOAUTH Authentication required.\r\n"
	replyWrongPass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
)

func TestAuth_NamedUsers(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.RequirePass = "dpw"
		c.Users = []User{
			{Name: "alice", Passwords: []string{"a1", "a2"}},
			{Name: "bob", Off: true, Passwords: []string{"b"}},
			{Name: "carol", NoPass: true},
			// sha256("password")
			{Name: "dave", PasswordHashes: []string{"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"}},
		}
	}))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"AUTH", "alice", "a1"}, "+OK\r\n"},
		{[]string{"AUTH", "alice", "a2"}, "+OK\r\n"},
		{[]string{"AUTH", "alice", "dpw"}, replyWrongPass},
		{[]string{"AUTH", "alice", ""}, replyWrongPass},
		{[]string{"AUTH", "bob", "b"}, replyWrongPass},
		{[]string{"AUTH", "carol", "anything"}, "+OK\r\n"},
		{[]string{"AUTH", "dave", "password"}, "+OK\r\n"},
		{[]string{"AUTH", "dave", "Password"}, replyWrongPass},
		{[]string{"AUTH", "nobody", "a1"}, replyWrongPass},
		{[]string{"AUTH", "dpw"}, "+OK\r\n"},
		{[]string{"AUTH", "default", "dpw"}, "+OK\r\n"},
		{[]string{"AUTH", "default", "a1"}, replyWrongPass},
	}
	for _, tc := range cases {
		c := dial(t, srv.Addr())
		if got := c.do("GET", "k"); got != replyNoAuth {
			t.Fatalf("before AUTH: %q", got)
		}
		if got := c.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
		if tc.want == "+OK\r\n" {
			user := "default"
			if len(tc.args) == 3 {
				user = tc.args[1]
			}
			if got, want := c.do("ACL", "WHOAMI"), "$"+itoa(len(user))+"\r\n"+user+"\r\n"; got != want {
				t.Errorf("ACL WHOAMI after %q = %q, want %q", tc.args, got, want)
			}
		} else if got := c.do("GET", "k"); got != replyNoAuth {
			t.Errorf("after a failed %q: %q", tc.args, got)
		}
	}
	c := dial(t, srv.Addr())
	if got := c.do("ACL", "WHOAMI"); got != replyNoAuth {
		t.Fatalf("ACL WHOAMI before AUTH: %q", got)
	}
	if got := c.do("HELLO", "3", "AUTH", "alice", "a2"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH alice: %q", got)
	}
	if got := c.do("ACL", "WHOAMI"); got != "$5\r\nalice\r\n" {
		t.Fatalf("ACL WHOAMI: %q", got)
	}
	if got := c.do("CLIENT", "INFO"); !strings.Contains(got, " user=alice ") {
		t.Fatalf("CLIENT INFO: %q", got)
	}
	if got := c.do("RESET"); got != "+RESET\r\n" {
		t.Fatal(got)
	}
	if got := c.do("GET", "k"); got != replyNoAuth {
		t.Fatalf("after RESET: %q", got)
	}
}

func TestAuth_NoPasswordDefaultUser(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.Users = []User{{Name: "alice", Passwords: []string{"a"}}} }))
	c := dial(t, srv.Addr())
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$7\r\ndefault\r\n"},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{[]string{"AUTH", "default", "whatever"}, "+OK\r\n"},
		{[]string{"AUTH", "alice", "b"}, replyWrongPass},
		{[]string{"AUTH", "alice", "a"}, "+OK\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$5\r\nalice\r\n"},
		{[]string{"ACL", "USERS"}, "*2\r\n$5\r\nalice\r\n$7\r\ndefault\r\n"},
	} {
		if got := c.do(st.args...); got != st.want {
			t.Errorf("%q = %q, want %q", st.args, got, st.want)
		}
	}
}

// CONFIG SET requirepass applies to new connections; connections already
// in stay in, as in Redis.
func TestAuth_ConfigSetRequirePass(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	if got := admin.do("CONFIG", "SET", "requirepass", "np"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("existing connection: %q", got)
	}
	c := dial(t, srv.Addr())
	if got := c.do("GET", "k"); got != replyNoAuth {
		t.Fatalf("new connection: %q", got)
	}
	if got := c.do("AUTH", "np"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("CONFIG", "GET", "requirepass"); got != "*2\r\n$11\r\nrequirepass\r\n$2\r\nnp\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("CONFIG", "SET", "requirepass", ""); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := dial(t, srv.Addr()).do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("after requirepass \"\": %q", got)
	}
}

// The user directive accepts restricted users, and they are restricted.
func TestAuth_RestrictedConfigUser(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) {
		c.Users = []User{{Name: "locker", Rules: []string{"on", ">secret", "~lock:*", "+@all", "-@dangerous"}}}
	}))
	c := dial(t, srv.Addr())
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"AUTH", "locker", "secret"}, "+OK\r\n"},
		{[]string{"SET", "lock:a", "1", "NX", "PX", "1000"}, "+OK\r\n"},
		{[]string{"SET", "other", "1"}, "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
		{[]string{"FLUSHALL"}, "-NOPERM this user has no permissions to run the 'flushall' command\r\n"},
		{[]string{"ACL", "WHOAMI"}, "$6\r\nlocker\r\n"},
	} {
		if got := c.do(st.args...); got != st.want {
			t.Errorf("%q = %q, want %q", st.args, got, st.want)
		}
	}
}

// A user directive naming an unknown command fails at start-up, with
// Redis's message.
func TestAuth_ConfigUserUnknownCommand(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0", Users: []User{{Name: "alice", Rules: []string{"on", "+nosuch"}}}})
	err := srv.Start()
	if err == nil {
		srv.Close()
		t.Fatal("started")
	}
	if want := "Error loading ACL rule '+nosuch' for the user named 'alice': Unknown command or category name in ACL"; err.Error() != want {
		t.Fatalf("%v", err)
	}
}

// A User with Rules and a password field (or Off, NoPass) fails to
// start rather than run a user without the password it was given: with
// Rules, the password and on/off come from the rules alone.
func TestAuth_UserRulesAndFieldsDoNotMix(t *testing.T) {
	for _, u := range []User{
		{Name: "alice", Rules: []string{"~*", "+@all"}, Passwords: []string{"pw"}},
		{Name: "alice", Rules: []string{"on"}, PasswordHashes: []string{strings.Repeat("a", 64)}},
		{Name: "alice", Rules: []string{"on"}, NoPass: true},
		{Name: "alice", Rules: []string{"on", "nopass"}, Off: true},
	} {
		srv := New(Config{Addr: "127.0.0.1:0", Users: []User{u}})
		err := srv.Start()
		if err == nil {
			srv.Close()
			t.Fatalf("%+v: started", u)
		}
		if !strings.Contains(err.Error(), "User alice: a User with Rules") {
			t.Fatalf("%+v: %v", u, err)
		}
	}
	// either form alone starts
	for _, u := range []User{
		{Name: "alice", Rules: []string{"on", ">pw", "~*", "+@all"}},
		{Name: "alice", Passwords: []string{"pw"}},
	} {
		srv := RunT(t, WithConfig(func(c *Config) { c.Users = []User{u} }))
		if got := dial(t, srv.Addr()).do("AUTH", "alice", "pw"); got != "+OK\r\n" {
			t.Fatalf("%+v: AUTH = %q", u, got)
		}
	}
}

func TestIsLoopback_AsRedisIslocalClient(t *testing.T) {
	cases := []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3")}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1")}, false},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, true},
	}
	for _, c := range cases {
		if got := isLoopback(c.addr); got != c.want {
			t.Errorf("isLoopback(%v) = %v, want %v", c.addr, got, c.want)
		}
	}
}

// startRemote starts a server on loopback that sees every client as
// remote while remote is set (protected mode's loopback test replaced).
func startRemote(t *testing.T, cfg Config, remote *atomic.Bool) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	srv := New(cfg)
	srv.prod.isLocal = func(net.Addr) bool { return !remote.Load() }
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// readAll reads until the server closes the connection.
func readAll(t *testing.T, c *rawClient) string {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c.rd)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

func TestProtectedMode_RefusesRemoteClientsWithoutPassword(t *testing.T) {
	var remote atomic.Bool
	remote.Store(true)
	srv := startRemote(t, Config{}, &remote)
	c := dial(t, srv.Addr())
	if got := readAll(t, c); got != "-"+ErrDenied+"\r\n" {
		t.Fatalf("remote client got %q", got)
	}
	if !strings.HasPrefix(ErrDenied, "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface.") ||
		!strings.HasSuffix(ErrDenied, "NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.") {
		t.Fatal("DENIED text changed")
	}
	if n := srv.Engine().Stats.RejectedConns.Load(); n != 1 {
		t.Fatalf("rejected_connections = %d", n)
	}
	// From here the (simulated) remote clients are served: a password, or
	// protected mode turned off at run time.
	remote.Store(false)
	admin := dial(t, srv.Addr())
	if got := admin.do("CONFIG", "SET", "protected-mode", "no"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	remote.Store(true)
	if got := dial(t, srv.Addr()).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("protected-mode no: %q", got)
	}
}

func TestProtectedMode_ServesRemoteClientsWhenAllowed(t *testing.T) {
	for name, cfg := range map[string]Config{
		"requirepass":        {RequirePass: "pw"},
		"no protected mode":  {NoProtectedMode: true},
		"default has a hash": {Users: []User{{Name: "default", PasswordHashes: []string{strings.Repeat("a", 64)}}}},
	} {
		t.Run(name, func(t *testing.T) {
			var remote atomic.Bool
			remote.Store(true)
			srv := startRemote(t, cfg, &remote)
			got := dial(t, srv.Addr()).do("PING")
			if got != "+PONG\r\n" && got != replyNoAuth {
				t.Fatalf("PING: %q", got)
			}
		})
	}
	// And loopback clients are always served.
	if got := dial(t, RunT(t).Addr()).do("PING"); got != "+PONG\r\n" {
		t.Fatal(got)
	}
}
