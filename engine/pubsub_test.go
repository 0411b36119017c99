package engine

import (
	"reflect"
	"testing"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

type recPublisher struct {
	calls []string
	pubs  []*Client
}

func (p *recPublisher) Publish(pub *Client, channel, message []byte, shard bool) int64 {
	kind := "publish"
	if shard {
		kind = "spublish"
	}
	p.calls = append(p.calls, kind+" "+string(channel)+" "+string(message))
	p.pubs = append(p.pubs, pub)
	return int64(len(p.calls))
}

func execAs(e *testEngine, cl *Client, proto int, args ...string) string {
	w := &enginetest.TextWriter{P: proto}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	e.Exec(&Ctx{Args: bargs, W: w, Client: cl})
	return w.String()
}

// callAs runs args as a script's redis.call on behalf of cl.
func callAs(e *testEngine, cl *Client, args ...string) string {
	w := &enginetest.TextWriter{}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	e.Lock()
	defer e.Unlock()
	c := &Ctx{Eng: e.Engine, Client: cl, Script: &ScriptRun{}, Now: e.Now()}
	e.beginCommand(c)
	defer e.endCommand()
	c.Call(bargs, w)
	return w.String()
}

func TestPublish_WithoutPublisherRepliesZero(t *testing.T) {
	e := newTestEngine(t)
	e.expect(":0", "PUBLISH", "ch", "msg")
	e.expect(":0", "SPUBLISH", "ch", "msg")
	e.expect("-ERR wrong number of arguments for 'publish' command", "PUBLISH", "ch")
}

// PUBLISH from a client and from a script reach the Publisher with the
// publishing client.
func TestPublish_ClientsAndScriptsReachPublisher(t *testing.T) {
	e := newTestEngine(t)
	p := &recPublisher{}
	e.SetPublisher(p)
	cl := &Client{ID: 7}
	if got := execAs(e, cl, 2, "PUBLISH", "ch", "a"); got != ":1" {
		t.Fatalf("PUBLISH: %s", got)
	}
	if got := callAs(e, cl, "publish", "ch", "b"); got != ":2" {
		t.Fatalf("redis.call publish: %s", got)
	}
	if got := execAs(e, cl, 2, "SPUBLISH", "sh", "c"); got != ":3" {
		t.Fatalf("SPUBLISH: %s", got)
	}
	want := []string{"publish ch a", "publish ch b", "spublish sh c"}
	if !reflect.DeepEqual(p.calls, want) || p.pubs[0] != cl || p.pubs[1] != cl {
		t.Fatalf("publisher saw %q from %v", p.calls, p.pubs)
	}
}

// A RESP2 connection in subscribed mode runs only the pub/sub commands,
// PING, QUIT and RESET; RESP3 runs everything. PING answers as a message.
func TestSubscribedMode_RESP2Gate(t *testing.T) {
	e := newTestEngine(t)
	e.Register(&Command{Name: "subscribe", Arity: -2, Flags: FlagNoKeys, Fn: func(c *Ctx) { c.W.WriteStatus("SUBSCRIBED") }})
	cl := &Client{Subscribed: true}
	refused := "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
	if got := execAs(e, cl, 2, "GET", "k"); got != refused {
		t.Fatalf("GET: %s", got)
	}
	if got := execAs(e, cl, 2, "COMMAND", "COUNT"); got != "-ERR Can't execute 'command|count': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context" {
		t.Fatalf("COMMAND COUNT: %s", got)
	}
	if got := execAs(e, cl, 2, "NOPE"); got != "-ERR unknown command 'NOPE', with args beginning with: " {
		t.Fatalf("unknown command: %s", got)
	}
	if got := execAs(e, cl, 2, "GET"); got != "-ERR wrong number of arguments for 'get' command" {
		t.Fatalf("GET arity: %s", got)
	}
	if got := execAs(e, cl, 2, "SUBSCRIBE", "x"); got != "+SUBSCRIBED" {
		t.Fatalf("SUBSCRIBE: %s", got)
	}
	if got := execAs(e, cl, 2, "PING"); got != "*2 $pong $" {
		t.Fatalf("PING: %s", got)
	}
	if got := execAs(e, cl, 2, "PING", "hi"); got != "*2 $pong $hi" {
		t.Fatalf("PING hi: %s", got)
	}
	if got := execAs(e, cl, 3, "GET", "k"); got != "(nil)" {
		t.Fatalf("RESP3 GET: %s", got)
	}
	if got := execAs(e, cl, 3, "PING"); got != "+PONG" {
		t.Fatalf("RESP3 PING: %s", got)
	}
	cl.Subscribed = false
	if got := execAs(e, cl, 2, "PING"); got != "+PONG" {
		t.Fatalf("PING after leaving: %s", got)
	}
}
