package server

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
)

// goroutines counts goroutines as a sync.WaitGroup does, but its Wait,
// called from a goroutine that is away, does not wait for what that
// goroutine marked away: a connection's goroutine running a FailWhen
// predicate (and its connection's push flusher, which ends with it), as
// the predicate may call Restart or Close. Both wait for every
// connection's goroutine, and would otherwise wait for the very one that
// called them. Another goroutine's Wait waits for everything. (The
// goroutines not waited for still return later, once the predicate
// does; its command does not run: fixtureBefore.)
type goroutines struct {
	mu      sync.Mutex
	n       int            // counted and not yet returned
	away    map[int64]int  // by goroutine: how many of n it marked away
	inCall  map[int64]bool // goroutines inside a Restart or Close (calling)
	changed chan struct{}  // closed at the next change, when someone waits
}

// Add counts d more goroutines, as WaitGroup.Add.
func (g *goroutines) Add(d int) { g.update(d, 0, 0) }

// Done counts one goroutine as returned.
func (g *goroutines) Done() { g.update(-1, 0, 0) }

// leave marks n counted goroutines away for the calling goroutine, id
// (goroutineID), until back.
func (g *goroutines) leave(id int64, n int) { g.update(0, id, n) }

// back ends leave.
func (g *goroutines) back(id int64, n int) { g.update(0, id, -n) }

func (g *goroutines) update(dn int, id int64, daway int) {
	g.mu.Lock()
	g.n += dn
	if daway != 0 {
		if g.away == nil {
			g.away = map[int64]int{}
		}
		if g.away[id] += daway; g.away[id] == 0 {
			delete(g.away, id)
		}
	}
	if g.n < 0 || g.away[id] < 0 {
		g.mu.Unlock()
		panic("server: goroutine count below zero")
	}
	g.notifyLocked()
	g.mu.Unlock()
}

// calling marks the calling goroutine, id, as inside a Restart or Close
// until the returned function is called: what it marked away is not
// waited for by the others either (two predicates that each call
// Restart: the second waits for the first, which must not wait for it).
func (g *goroutines) calling(id int64) (done func()) {
	g.mu.Lock()
	if g.inCall == nil {
		g.inCall = map[int64]bool{}
	}
	g.inCall[id] = true
	g.notifyLocked()
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.inCall, id)
		g.notifyLocked()
		g.mu.Unlock()
	}
}

func (g *goroutines) notifyLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// state reports whether every goroutine counted has returned but those
// goroutine self marked away, and those marked by goroutines inside a
// Restart or Close; if not, a channel closed at the next change.
func (g *goroutines) state(self int64) (done bool, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	skip := g.away[self]
	for id := range g.inCall {
		if id != self {
			skip += g.away[id]
		}
	}
	if g.n <= skip {
		return true, nil
	}
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return false, g.changed
}

// Wait waits until every goroutine counted has returned, but those the
// calling goroutine marked away.
func (g *goroutines) Wait() {
	self := goroutineID()
	for {
		done, changed := g.state(self)
		if done {
			return
		}
		<-changed
	}
}

// goroutineID returns the calling goroutine's id, from its stack trace's
// first line ("goroutine 42 [running]:"). It is for the rare calls that
// need it (a FailWhen predicate's, Restart, Close): never a command's.
func goroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _ = bytes.CutPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id
}
