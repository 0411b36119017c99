package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ACL DELUSER disconnects the deleted user's connections; the deleting
// connection, when it is one of them, gets its reply first.
func TestACL_DelUserDisconnects(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	if got := admin.do("ACL", "SETUSER", "bob", "on", "nopass", "+@all", "~*"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	victim := dial(t, srv.Addr())
	if got := victim.do("AUTH", "bob", "x"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	self := dial(t, srv.Addr())
	self.do("AUTH", "bob", "x")
	if got := admin.do("ACL", "DELUSER", "bob"); got != ":1\r\n" {
		t.Fatal(got)
	}
	if got := readAll(t, victim); got != "" {
		t.Fatalf("deleted user's connection read %q before closing", got)
	}
	if got := admin.do("ACL", "SETUSER", "bob", "on", "nopass", "+@all", "~*"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	self2 := dial(t, srv.Addr())
	self2.do("AUTH", "bob", "x")
	if got := self2.do("ACL", "DELUSER", "bob"); got != ":1\r\n" {
		t.Fatalf("DELUSER of oneself: %q", got)
	}
	if got := readAll(t, self2); got != "" {
		t.Fatalf("after deleting its own user: %q", got)
	}
	if got := admin.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("the default user's connection: %q", got)
	}
}

// ACL SETUSER that takes a channel away closes the user's pub/sub
// clients subscribed to it, and only those.
func TestACL_RevokedChannelClosesSubscribers(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	admin.do("ACL", "SETUSER", "sub", "on", "nopass", "+@all", "&a", "&b")
	onA := dial(t, srv.Addr())
	onA.do("AUTH", "sub", "x")
	if got := onA.do("SUBSCRIBE", "a"); !strings.HasPrefix(got, "*3\r\n$9\r\nsubscribe\r\n") {
		t.Fatal(got)
	}
	onB := dial(t, srv.Addr())
	onB.do("AUTH", "sub", "x")
	onB.do("SUBSCRIBE", "b")
	if got := admin.do("ACL", "SETUSER", "sub", "resetchannels", "&b"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := readAll(t, onA); got != "" {
		t.Fatalf("subscriber of a revoked channel read %q", got)
	}
	if got := onB.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
		t.Fatalf("subscriber of a kept channel: %q", got)
	}
}

// ACL LOG's fields: reason, context, object, username and the client's
// CLIENT INFO line, for refusals at top level, in MULTI, in scripts,
// and failed authentications.
func TestACL_LogFields(t *testing.T) {
	srv := RunT(t)
	admin := dial(t, srv.Addr())
	admin.do("ACL", "SETUSER", "lg", "on", ">pw", "~k", "+@all", "-flushall")
	c := dial(t, srv.Addr())
	c.do("AUTH", "lg", "bad")
	c.do("AUTH", "lg", "pw")
	c.do("CLIENT", "SETNAME", "logme")
	c.do("GET", "other")
	c.do("MULTI")
	c.do("FLUSHALL")
	c.do("DISCARD")
	c.do("EVAL", "return redis.pcall('get', 'x')", "0")
	acl := srv.Engine().ACL()
	entries := acl.Log(10)
	want := []struct{ reason, context, object, user string }{
		{"key", "lua", "x", "lg"},
		{"command", "multi", "flushall", "lg"},
		{"key", "toplevel", "other", "lg"},
		{"auth", "toplevel", "AUTH", "lg"},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries: %+v", len(entries), entries)
	}
	for i, w := range want {
		le := entries[i]
		if le.Reason != w.reason || le.Context != w.context || le.Object != w.object || le.Username != w.user || le.Count != 1 {
			t.Errorf("entry %d: %+v, want %+v", i, le, w)
		}
	}
	if !strings.Contains(entries[0].Info, " name=logme ") || !strings.Contains(entries[0].Info, " user=lg ") {
		t.Errorf("client info %q", entries[0].Info)
	}
	if got := admin.do("ACL", "LOG", "1"); !strings.HasPrefix(got, "*1\r\n*14\r\n$5\r\ncount\r\n:1\r\n$6\r\nreason\r\n$3\r\nkey\r\n$7\r\ncontext\r\n$3\r\nlua\r\n$6\r\nobject\r\n$1\r\nx\r\n$8\r\nusername\r\n$2\r\nlg\r\n$11\r\nage-seconds\r\n") {
		t.Errorf("ACL LOG 1: %q", got)
	}
	admin.do("CONFIG", "SET", "acllog-max-len", "2")
	if n := len(acl.Log(10)); n != 2 {
		t.Errorf("acllog-max-len 2 keeps %d entries", n)
	}
}

// aclfile: users load at start-up, ACL SAVE writes them, ACL LOAD reads
// them back (all or nothing), and CONFIG REWRITE writes no user lines.
func TestACL_File(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(path, []byte("user alice on >a ~a:* +@all\nuser default on nopass ~* &* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "tumbler.conf")
	os.WriteFile(conf, []byte("aclfile "+path+"\n"), 0o600)
	srv := RunT(t, WithConfig(func(c *Config) { c.ACLFile, c.ConfigFile = path, conf }))
	admin := dial(t, srv.Addr())
	alice := dial(t, srv.Addr())
	if got := alice.do("AUTH", "alice", "a"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := alice.do("SET", "b:1", "v"); got != "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n" {
		t.Fatal(got)
	}
	admin.do("ACL", "SETUSER", "bob", "on", "nopass", "+get", "~*")
	if got := admin.do("ACL", "SAVE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	data, _ := os.ReadFile(path)
	want := "user alice on #" + sha256Hex("a") + " ~a:* resetchannels +@all\nuser bob on nopass ~* resetchannels -@all +get\nuser default on nopass ~* &* +@all\n"
	if string(data) != want {
		t.Fatalf("saved\n%s\nwant\n%s", data, want)
	}
	os.WriteFile(path, []byte("user carol on nopass +@all ~*\nuser bad on +nosuch\nbogus line\n"), 0o600)
	got := admin.do("ACL", "LOAD")
	wantErr := "-ERR " + path + ":2: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
		path + ":3 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n"
	if got != wantErr {
		t.Fatalf("ACL LOAD of a bad file: %q\nwant %q", got, wantErr)
	}
	if got := admin.do("ACL", "USERS"); got != "*3\r\n$5\r\nalice\r\n$3\r\nbob\r\n$7\r\ndefault\r\n" {
		t.Fatalf("after a failed LOAD: %q", got)
	}
	os.WriteFile(path, []byte("user carol on nopass +@all ~*\n"), 0o600)
	if got := admin.do("ACL", "LOAD"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if got := admin.do("ACL", "LIST"); got != "*2\r\n$43\r\nuser carol on nopass ~* resetchannels +@all\r\n$34\r\nuser default on nopass ~* &* +@all\r\n" {
		t.Fatalf("after LOAD: %q", got)
	}
	if got := readAll(t, alice); got != "" {
		t.Fatalf("a replaced user's connection read %q", got)
	}
	if got := admin.do("CONFIG", "REWRITE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if data, _ := os.ReadFile(conf); strings.Contains(string(data), "user ") {
		t.Fatalf("CONFIG REWRITE with an ACL file wrote users:\n%s", data)
	}
	if got := admin.do("CONFIG", "GET", "aclfile"); got != "*2\r\n$7\r\naclfile\r\n$"+strconv.Itoa(len(path))+"\r\n"+path+"\r\n" {
		t.Fatalf("CONFIG GET aclfile: %q", got)
	}
}

// A configuration with both user lines and an ACL file does not start,
// nor one whose ACL file is missing.
func TestACL_FileRefusals(t *testing.T) {
	srv := New(Config{Addr: "127.0.0.1:0", ACLFile: "/x.acl", Users: []User{{Name: "a", Rules: []string{"on"}}}})
	if err := srv.Start(); err == nil || err.Error() != errUsersAndACLFile {
		srv.Close()
		t.Fatalf("users and aclfile: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "none.acl")
	srv = New(Config{Addr: "127.0.0.1:0", ACLFile: missing})
	if err := srv.Start(); err == nil || err.Error() != "Aborting Redis startup because of ACL errors: Error loading ACLs, opening file '"+missing+"': No such file or directory" {
		srv.Close()
		t.Fatalf("missing aclfile: %v", err)
	}
}

// Without an ACL file, ACL LOAD and SAVE are refused with Redis's text.
func TestACL_NoFile(t *testing.T) {
	c := dial(t, RunT(t).Addr())
	for _, sub := range []string{"LOAD", "SAVE"} {
		if got := c.do("ACL", sub); got != "-"+errACLNoFile+"\r\n" {
			t.Errorf("ACL %s: %q", sub, got)
		}
	}
}

// ACL rules may name Redis's commands tumbler does not serve, and their
// categories: an ACL file written for Redis loads, ACL CAT lists them,
// ACL SAVE writes the rules back; the commands themselves stay unknown.
func TestACL_UnservedCommands(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	rules := "user app on nopass ~* &* +@all -@stream -xadd -@geo\nuser default on nopass ~* &* +@all\n"
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := RunT(t, WithConfig(func(c *Config) { c.ACLFile = path }))
	c := dial(t, srv.Addr())
	if got := c.do("ACL", "GETUSER", "app"); !strings.Contains(got, "+@all -@stream -@geo") {
		t.Fatalf("GETUSER app: %q", got)
	}
	cat := c.do("ACL", "CAT", "hyperloglog")
	for _, name := range []string{"pfadd", "pfcount", "pfdebug", "pfmerge", "pfselftest"} {
		if !strings.Contains(cat, "$"+strconv.Itoa(len(name))+"\r\n"+name+"\r\n") {
			t.Errorf("ACL CAT hyperloglog lacks %s: %q", name, cat)
		}
	}
	if got := c.do("ACL", "SAVE"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "user app on nopass ~* &* +@all -@stream -@geo\n") {
		t.Fatalf("ACL SAVE wrote %q", data)
	}
	if got := c.do("PFADD", "h", "a"); !strings.HasPrefix(got, "-ERR unknown command 'PFADD'") {
		t.Errorf("PFADD: %q", got)
	}
	if got := c.do("ACL", "DRYRUN", "app", "XADD", "s", "*", "f", "v"); got != "-ERR Command 'XADD' not found\r\n" {
		t.Errorf("DRYRUN XADD: %q", got)
	}
	// COMMAND does not list them
	if got := c.do("COMMAND", "INFO", "pfadd"); got != "*1\r\n$-1\r\n" {
		t.Errorf("COMMAND INFO pfadd: %q", got)
	}
}
