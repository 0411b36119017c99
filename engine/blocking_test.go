package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// blockClient is one connection's view in engine-level blocking tests: a
// Ctx that may block, as the server's connections are.
type blockClient struct {
	te  *testEngine
	ctx *Ctx
	w   *enginetest.TextWriter
}

func (te *testEngine) blockingClient(id int64) *blockClient {
	w := &enginetest.TextWriter{}
	return &blockClient{te: te, w: w, ctx: &Ctx{W: w, Client: &Client{ID: id}, CanBlock: true}}
}

// run executes a command and returns what it replied at once.
func (bc *blockClient) run(args ...string) string {
	bc.w.Reset()
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	bc.ctx.Args = bargs
	bc.te.Exec(bc.ctx)
	return bc.w.String()
}

// finish ends a wait for the given reason and returns the reply written.
func (bc *blockClient) finish(why WaitEnd) string {
	bc.w.Reset()
	bc.te.FinishWait(bc.ctx, why)
	return bc.w.String()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (te *testEngine) noWaiters() {
	te.t.Helper()
	if n := te.BlockedClients(); n != 0 {
		te.t.Fatalf("blocked clients = %d, want 0", n)
	}
	if len(te.blk.waiting) != 0 || len(te.blk.byClient) != 0 {
		te.t.Fatalf("waiter queues not empty: %d keys, %d clients", len(te.blk.waiting), len(te.blk.byClient))
	}
}

func TestBlocking_ServedByPushAfterTheCommand(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	if got := a.run("BLPOP", "q", "0"); got != "" {
		t.Fatalf("a blocked BLPOP replied %q", got)
	}
	w := a.ctx.Blocked
	if w == nil || w.Timeout() != 0 {
		t.Fatalf("waiter %+v", w)
	}
	if got := b.run("RPUSH", "q", "x", "y"); got != ":2" {
		t.Fatalf("RPUSH = %q (the reply counts the elements before serving)", got)
	}
	if !isClosed(w.Done()) {
		t.Fatal("waiter not served at the end of RPUSH")
	}
	if got := a.finish(WaitWoken); got != "*2 $q $x" {
		t.Fatalf("served reply %q", got)
	}
	e.expect("*1 $y", "LRANGE", "q", "0", "-1")
	e.noWaiters()
}

func TestBlocking_TimeoutReleasesTheWaiter(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.run("BRPOP", "q", "0.25")
	if d := a.ctx.Blocked.Timeout(); d != 250*time.Millisecond {
		t.Fatalf("timeout %v", d)
	}
	if got := a.finish(WaitTimeout); got != "(nilarray)" {
		t.Fatalf("timeout reply %q", got)
	}
	e.noWaiters()
	e.expect(":1", "RPUSH", "q", "x")
	e.expect(":1", "LLEN", "q")
}

// A timeout decided after the waiter was served loses the race: the
// element is delivered, not dropped.
func TestBlocking_ServedBeforeTimeoutStillDelivers(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	a.run("BLPOP", "q", "1")
	b.run("RPUSH", "q", "x")
	if got := a.finish(WaitTimeout); got != "*2 $q $x" {
		t.Fatalf("reply %q", got)
	}
	e.noWaiters()
}

func TestBlocking_GoneClientLeavesQueueAndElement(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	a.run("BLPOP", "q", "0")
	if got := a.finish(WaitGone); got != "" {
		t.Fatalf("a gone client got %q", got)
	}
	e.noWaiters()
	b.run("RPUSH", "q", "x")
	e.expect(":1", "LLEN", "q")
}

func TestBlocking_FIFOAcrossWaiters(t *testing.T) {
	e := newTestEngine(t)
	var cs []*blockClient
	for i := 1; i <= 3; i++ {
		c := e.blockingClient(int64(i))
		c.run("BLPOP", "q", "0")
		cs = append(cs, c)
	}
	e.expect(":2", "RPUSH", "q", "1", "2")
	if !isClosed(cs[0].ctx.Blocked.Done()) || !isClosed(cs[1].ctx.Blocked.Done()) || isClosed(cs[2].ctx.Blocked.Done()) {
		t.Fatal("the first two blocked clients must be served, the third not")
	}
	if got := cs[0].finish(WaitWoken); got != "*2 $q $1" {
		t.Fatalf("first %q", got)
	}
	if got := cs[1].finish(WaitWoken); got != "*2 $q $2" {
		t.Fatalf("second %q", got)
	}
	e.expect(":1", "LPUSH", "q", "3")
	if got := cs[2].finish(WaitWoken); got != "*2 $q $3" {
		t.Fatalf("third %q", got)
	}
	e.noWaiters()
}

// A key listed twice is waited on once, and served once.
func TestBlocking_DuplicateKeys(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.run("BLPOP", "q", "q", "p", "q", "0")
	if n := len(a.ctx.Blocked.keys); n != 2 {
		t.Fatalf("waiting on %d keys, want 2", n)
	}
	e.expect(":2", "RPUSH", "q", "x", "y")
	if got := a.finish(WaitWoken); got != "*2 $q $x" {
		t.Fatalf("reply %q", got)
	}
	e.expect(":1", "LLEN", "q")
	e.noWaiters()
}

func TestBlocking_BLMPOPServedWithCount(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.run("BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "2")
	e.expect(":3", "RPUSH", "b", "1", "2", "3")
	if got := a.finish(WaitWoken); got != "*2 $b *2 $3 $2" {
		t.Fatalf("reply %q", got)
	}
}

// RESP3 clients get the served reply encoded for them: the recorded reply
// is replayed on the waiter's own writer.
func TestBlocking_TimeoutNullInRESP3(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.w.P = 3
	a.run("BLPOP", "q", "0")
	if a.ctx.Blocked.reply.Proto() != 3 {
		t.Fatal("recorder does not report the waiter's protocol")
	}
	if got := a.finish(WaitTimeout); got != "(nilarray)" {
		t.Fatalf("reply %q", got)
	}
}

func TestBlocking_UnblockClient(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	if e.UnblockClient(a.ctx.Client, false) {
		t.Fatal("unblocked a client that was not blocked")
	}
	a.run("BLPOP", "q", "0")
	if !e.UnblockClient(a.ctx.Client, false) {
		t.Fatal("UnblockClient = false for a blocked client")
	}
	if got := a.finish(WaitWoken); got != "(nilarray)" {
		t.Fatalf("unblocked as timeout: %q", got)
	}
	a.run("BLPOP", "q", "0")
	e.UnblockClient(a.ctx.Client, true)
	if got := a.finish(WaitWoken); got != "-"+ErrUnblocked {
		t.Fatalf("unblocked with error: %q", got)
	}
	e.noWaiters()
}

// An error a blocked client gets, from CLIENT UNBLOCK ... ERROR or from its
// command when served (BLMOVE to a key of another type), is an error
// reply: errorstats, total_error_replies and the command's failed_calls
// count it, as Redis's updateStatsOnUnblock and afterErrorReply do. A
// timeout, or a plain CLIENT UNBLOCK, is no error.
func TestBlocking_ErrorsCount(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	a.run("BLPOP", "q", "0")
	e.UnblockClient(a.ctx.Client, false)
	a.finish(WaitWoken)
	a.run("BLPOP", "q", "0")
	e.UnblockClient(a.ctx.Client, true)
	if got := a.finish(WaitWoken); got != "-"+ErrUnblocked {
		t.Fatalf("unblocked with error: %q", got)
	}
	e.expect("+OK", "SET", "dst", "str")
	a.run("BLMOVE", "src", "dst", "LEFT", "LEFT", "0")
	b.run("RPUSH", "src", "x")
	if got := a.finish(WaitWoken); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("BLMOVE served to a string: %q", got)
	}
	if got := e.infoField("errorstats", "errorstat_UNBLOCKED"); got != "count=1" {
		t.Errorf("errorstat_UNBLOCKED %q", got)
	}
	if got := e.infoField("errorstats", "errorstat_WRONGTYPE"); got != "count=1" {
		t.Errorf("errorstat_WRONGTYPE %q", got)
	}
	if got := e.infoField("stats", "total_error_replies"); got != "2" {
		t.Errorf("total_error_replies %q", got)
	}
	for cmd, want := range map[string]string{"cmdstat_blpop": "calls=2,", "cmdstat_blmove": "calls=1,"} {
		if got := e.infoField("commandstats", cmd); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ",failed_calls=1") {
			t.Errorf("%s:%s", cmd, got)
		}
	}
	e.noWaiters()
}

// Only the top-level command may block: the same handler run by another
// command (as EXEC runs queued commands), or from a caller that cannot
// wait, replies as if the timeout had passed.
func TestBlocking_NotWhenNestedOrCallerCannotWait(t *testing.T) {
	e := newTestEngine(t)
	e.Register(&Command{Name: "runall", Arity: -2, Flags: FlagWrite, Fn: func(c *Ctx) {
		// runs each argument as a one-word-separated command, on the
		// caller's Ctx, like a transaction's EXEC
		for _, line := range c.Args[1:] {
			var args [][]byte
			start := 0
			for i := 0; i <= len(line); i++ {
				if i == len(line) || line[i] == ' ' {
					args = append(args, line[start:i])
					start = i + 1
				}
			}
			sub := c.Eng.Lookup(args[0])
			c.Args = args
			c.Cmd = sub
			sub.Fn(c)
		}
	}})
	a := e.blockingClient(1)
	if got := a.run("RUNALL", "BLPOP q 0", "BRPOP q 0", "BLMOVE q d LEFT LEFT 0", "BLMPOP 0 1 q LEFT",
		"BZPOPMIN q 0", "BZPOPMAX q 0", "BZMPOP 0 1 q MIN"); got != "(nilarray) (nilarray) (nil) (nilarray) (nilarray) (nilarray) (nilarray)" {
		t.Fatalf("nested replies %q", got)
	}
	if a.ctx.Blocked != nil {
		t.Fatal("a nested blocking command registered a waiter")
	}
	e.expect("(nilarray)", "BLPOP", "q", "0") // Ctx without CanBlock
	e.noWaiters()

	// A handler run outside Exec, after a top-level BLPOP has come and
	// gone, does not block either.
	a.run("BLPOP", "q", "0")
	a.finish(WaitTimeout)
	w := &enginetest.TextWriter{}
	blpop := e.Lookup([]byte("blpop"))
	sub := &Ctx{Eng: e.Engine, Args: [][]byte{[]byte("BLPOP"), []byte("q"), []byte("0")}, W: w, Client: a.ctx.Client, Cmd: blpop, CanBlock: true}
	e.Lock()
	blpop.Fn(sub)
	e.Unlock()
	if sub.Blocked != nil || w.String() != "(nilarray)" {
		t.Fatalf("BLPOP run outside Exec: %q, blocked=%v", w.String(), sub.Blocked != nil)
	}
	e.noWaiters()
}

// Serving runs the waiter's command again (Redis 7.2): its first key that
// holds a list is used, whichever key was pushed to.
func TestBlocking_ServedCommandChecksItsKeysInOrder(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.run("BLPOP", "k1", "k2", "0")
	e.Register(&Command{Name: "push2", Arity: 1, Flags: FlagWrite, Fn: func(c *Ctx) {
		for _, k := range []string{"k2", "k1"} {
			ent, l := c.Eng.createList([]byte(k))
			l.PushBack("from-" + k)
			c.Eng.listChanged([]byte(k), ent, l, "rpush")
		}
		c.W.WriteStatus("OK")
	}})
	e.expect("+OK", "PUSH2")
	if got := a.finish(WaitWoken); got != "*2 $k1 $from-k1" {
		t.Fatalf("reply %q", got)
	}
	e.expect("*1 $from-k2", "LRANGE", "k2", "0", "-1")
}

func TestParseBlockTimeout(t *testing.T) {
	e := newTestEngine(t)
	for _, tc := range []struct {
		arg  string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"1", time.Second, ""},
		{"0.5", 500 * time.Millisecond, ""},
		{"0.0001", time.Millisecond, ""}, // ceil: a tiny timeout still times out
		{"1e-4940", time.Millisecond, ""},
		{"-0.0009", 0, ""}, // ceil(-0.9) = 0: waits forever, as Redis
		{"-0", 0, ""},
		{".25", 250 * time.Millisecond, ""},
		{"0x1p-2", 250 * time.Millisecond, ""},
		{"1e3", 1000 * time.Second, ""},
		{"-1", 0, "ERR timeout is negative"},
		{"-inf", 0, "ERR timeout is negative"},
		{"1e30", 0, "ERR timeout is out of range"},
		{"inf", 0, "ERR timeout is out of range"},
		{"9223372036854775807", 0, "ERR timeout is out of range"},
		{"9223372036854775", 0, "ERR timeout is out of range"}, // now + ms overflows
		{"abc", 0, "ERR timeout is not a float or out of range"},
		{"", 0, "ERR timeout is not a float or out of range"},
		{" 1", 0, "ERR timeout is not a float or out of range"},
		{"1 ", 0, "ERR timeout is not a float or out of range"},
		{"nan", 0, "ERR timeout is not a float or out of range"},
		{"1e5000", 0, "ERR timeout is not a float or out of range"},
		{"1e-5000", 0, "ERR timeout is not a float or out of range"},
		{"1_0", 0, "ERR timeout is not a float or out of range"},
		{"0x", 0, "ERR timeout is not a float or out of range"},
		{"1e", 0, "ERR timeout is not a float or out of range"},
	} {
		w := &enginetest.TextWriter{}
		c := &Ctx{Eng: e.Engine, W: w, Now: e.Now()}
		d, ok := parseBlockTimeout(c, []byte(tc.arg))
		switch {
		case tc.err != "" && (ok || w.String() != "-"+tc.err):
			t.Errorf("%q: ok=%v reply %q, want error %q", tc.arg, ok, w.String(), tc.err)
		case tc.err == "" && (!ok || d != tc.want):
			t.Errorf("%q: %v ok=%v (%q), want %v", tc.arg, d, ok, w.String(), tc.want)
		}
	}
}

// BZPOPMIN waits for a sorted set: ZADD creating it serves the waiter at
// the end of the command, with [key, member, score]; the ZADD's reply
// and the rest of the set are left.
func TestBlocking_BZPOPMINServedByZADD(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	if got := a.run("BZPOPMIN", "z1", "z2", "0"); got != "" {
		t.Fatalf("a blocked BZPOPMIN replied %q", got)
	}
	if got := b.run("ZADD", "z2", "2", "y", "1", "x"); got != ":2" {
		t.Fatalf("ZADD = %q", got)
	}
	if got := a.finish(WaitWoken); got != "*3 $z2 $x ,1" {
		t.Fatalf("served reply %q", got)
	}
	e.expect("*1 $y", "ZRANGE", "z2", "0", "-1")
	e.noWaiters()
}

func TestBlocking_BZPOPMAXAndBZMPOPServed(t *testing.T) {
	e := newTestEngine(t)
	a, b := e.blockingClient(1), e.blockingClient(2)
	a.run("BZPOPMAX", "z", "0")
	b.run("BZMPOP", "0", "1", "z", "MAX", "COUNT", "2")
	e.expect(":4", "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
	if got := a.finish(WaitWoken); got != "*3 $z $d ,4" {
		t.Fatalf("BZPOPMAX reply %q", got)
	}
	if got := b.finish(WaitWoken); got != "*2 $z *2 *2 $c ,3 *2 $b ,2" {
		t.Fatalf("BZMPOP reply %q", got)
	}
	e.expect("*1 $a", "ZRANGE", "z", "0", "-1")
	e.noWaiters()
}

func TestBlocking_BZPOPTimeout(t *testing.T) {
	e := newTestEngine(t)
	a := e.blockingClient(1)
	a.run("BZMPOP", "0.5", "1", "z", "MIN")
	if d := a.ctx.Blocked.Timeout(); d != 500*time.Millisecond {
		t.Fatalf("timeout %v", d)
	}
	if got := a.finish(WaitTimeout); got != "(nilarray)" {
		t.Fatalf("timeout reply %q", got)
	}
	e.noWaiters()
	e.expect(":1", "ZADD", "z", "1", "a")
	e.expect(":1", "ZCARD", "z")
}

// A key made ready serves the clients waiting for what it now holds: a
// sorted set does not wake BLPOP, a list does not wake BZPOPMIN.
func TestBlocking_ServesOnlyWaitersOfTheKeysKind(t *testing.T) {
	e := newTestEngine(t)
	l, z := e.blockingClient(1), e.blockingClient(2)
	l.run("BLPOP", "k", "0")
	z.run("BZPOPMIN", "k", "0")
	e.expect(":1", "ZADD", "k", "1", "m")
	if isClosed(l.ctx.Blocked.Done()) {
		t.Fatal("a sorted set served BLPOP")
	}
	if got := z.finish(WaitWoken); got != "*3 $k $m ,1" {
		t.Fatalf("BZPOPMIN reply %q", got)
	}
	z.run("BZPOPMIN", "k", "0")
	e.expect(":1", "RPUSH", "k", "v")
	if isClosed(z.ctx.Blocked.Done()) {
		t.Fatal("a list served BZPOPMIN")
	}
	if got := l.finish(WaitWoken); got != "*2 $k $v" {
		t.Fatalf("BLPOP reply %q", got)
	}
	z.finish(WaitGone)
	e.noWaiters()
}

// Every command that adds a sorted set under a key wakes its waiters:
// the STORE forms, ZRANGESTORE, ZINCRBY, COPY, RENAME.
func TestBlocking_BZPOPServedByStoresAndMoves(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":2", "ZADD", "src", "1", "a", "2", "b")
	a := e.blockingClient(1)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"ZUNIONSTORE", "k", "1", "src"}, "*3 $k $a ,1"},
		{[]string{"ZINTERSTORE", "k", "1", "src"}, "*3 $k $a ,1"},
		{[]string{"ZDIFFSTORE", "k", "1", "src"}, "*3 $k $a ,1"},
		{[]string{"ZRANGESTORE", "k", "src", "1", "1"}, "*3 $k $b ,2"},
		{[]string{"ZINCRBY", "k", "5", "x"}, "*3 $k $x ,5"},
		{[]string{"COPY", "src", "k"}, "*3 $k $a ,1"},
	} {
		e.do("DEL", "k")
		a.run("BZPOPMIN", "k", "0")
		e.do(tc.cmd...)
		if got := a.finish(WaitWoken); got != tc.want {
			t.Errorf("%v: BZPOPMIN got %q, want %q", tc.cmd, got, tc.want)
		}
	}
	e.do("DEL", "k")
	a.run("BZPOPMAX", "k", "0")
	e.do("RENAME", "src", "k")
	if got := a.finish(WaitWoken); got != "*3 $k $b ,2" {
		t.Errorf("RENAME: BZPOPMAX got %q", got)
	}
	e.noWaiters()
}

// A command of a client killed while it waited for the keyspace lock (a
// BLPOP or SET pipelined as another client's EXEC killed it) runs nothing:
// Redis frees a killed client at once.
func TestExec_KilledClientRunsNothing(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":1", "RPUSH", "l", "x")
	cl := &Client{}
	cl.Kill()
	for _, args := range [][]string{{"BLPOP", "l", "0"}, {"SET", "k", "v"}} {
		if got := runAs(e, cl, args...); got != "" {
			t.Errorf("%q from a killed client replied %q", args, got)
		}
	}
	e.expect(":1", "LLEN", "l")
	e.expect(":0", "EXISTS", "k")
	// a live client is unaffected
	if got := runAs(e, &Client{}, "SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
}
