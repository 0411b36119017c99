package server

import "sync"

// goroutines counts goroutines as a sync.WaitGroup does, but its Wait
// does not wait for those that are away: a connection's goroutine while
// it runs a FailWhen predicate, which may call Restart or Close. Both wait
// for every connection's goroutine, and would otherwise wait for the very
// one that called them. (A goroutine away still returns later, once the
// predicate does; its command does not run: fixtureBefore.)
type goroutines struct {
	mu      sync.Mutex
	n       int           // counted and not yet returned
	away    int           // of those, how many are away
	changed chan struct{} // closed at the next change, when someone waits
}

// Add counts d more goroutines, as WaitGroup.Add.
func (g *goroutines) Add(d int) { g.update(d, 0) }

// Done counts one goroutine as returned.
func (g *goroutines) Done() { g.update(-1, 0) }

// leave marks one counted goroutine away until back.
func (g *goroutines) leave() { g.update(0, 1) }

// back ends leave.
func (g *goroutines) back() { g.update(0, -1) }

func (g *goroutines) update(dn, daway int) {
	g.mu.Lock()
	g.n += dn
	g.away += daway
	if g.n < 0 || g.away < 0 {
		g.mu.Unlock()
		panic("server: goroutine count below zero")
	}
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
	g.mu.Unlock()
}

// state reports whether every goroutine counted has returned or is away,
// and if not, a channel closed at the next change.
func (g *goroutines) state() (done bool, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n <= g.away {
		return true, nil
	}
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return false, g.changed
}

// Wait waits until every goroutine counted has returned or is away.
func (g *goroutines) Wait() {
	for {
		done, changed := g.state()
		if done {
			return
		}
		<-changed
	}
}
