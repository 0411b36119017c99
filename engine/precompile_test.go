package engine

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// preScripter is a Scripter and Precompiler that records what it was
// given: whether Precompile found the keyspace lock free, and what Run
// found in Ctx.Prepared.
type preScripter struct {
	stubScripter
	e        *Engine
	mu       sync.Mutex
	pre      []string // the bodies precompiled
	lockFree []bool   // whether the keyspace lock was free for each
	ranWith  []any    // Ctx.Prepared at each Run
}

type preToken struct{ body string }

const preTakes = 30 * time.Millisecond

func (s *preScripter) Precompile(body []byte) (any, time.Duration) {
	free := s.e.mu.TryLock()
	if free {
		s.e.mu.Unlock()
	}
	time.Sleep(preTakes) // a large script's compiling
	s.mu.Lock()
	s.pre = append(s.pre, string(body))
	s.lockFree = append(s.lockFree, free)
	s.mu.Unlock()
	return &preToken{string(body)}, preTakes
}

func (s *preScripter) Run(c *Ctx, sha, body []byte, keys, argv [][]byte) bool {
	s.mu.Lock()
	s.ranWith = append(s.ranWith, c.Prepared)
	s.mu.Unlock()
	c.W.WriteInt(1)
	return true
}

// EVAL and EVAL_RO compile a large script before the keyspace lock is
// taken, and the script's run finds it; the compiling counts in the
// command's time (commandstats, the slow log), as in Redis where EVAL
// compiles. Small scripts, EVALSHA and queued EVALs compile as they run.
func TestPrecompile_LargeEvalBeforeTheLock(t *testing.T) {
	te := newTestEngine(t)
	st := &preScripter{e: te.Engine}
	te.SetScripter(st)
	big := "return 1 --" + strings.Repeat("x", PrecompileMin)
	small := "return 1 --" + strings.Repeat("x", PrecompileMin-12)

	ctx := &Ctx{}
	run := func(args ...string) {
		t.Helper()
		ctx.Args = ctx.Args[:0]
		for _, a := range args {
			ctx.Args = append(ctx.Args, []byte(a))
		}
		w := &enginetest.TextWriter{}
		ctx.W = w
		te.Exec(ctx)
		if ctx.Prepared != nil {
			t.Fatalf("%.20q: Ctx.Prepared left set after the command", args)
		}
	}
	run("EVAL", big, "0")
	run("EVAL_RO", big, "0")
	run("EVAL", small, "0")
	run("EVALSHA", strings.Repeat("a", 40), "0")
	if len(st.pre) != 2 || st.pre[0] != big || st.pre[1] != big {
		t.Fatalf("precompiled %d bodies, want EVAL's and EVAL_RO's large one", len(st.pre))
	}
	for i, free := range st.lockFree {
		if !free {
			t.Errorf("precompile %d ran under the keyspace lock", i)
		}
	}
	if len(st.ranWith) != 4 {
		t.Fatalf("%d runs", len(st.ranWith))
	}
	for i, want := range []bool{true, true, false, false} {
		tok, _ := st.ranWith[i].(*preToken)
		if (tok != nil) != want || (tok != nil && tok.body != big) {
			t.Errorf("run %d found Prepared %v; want the precompiled script: %v", i, st.ranWith[i], want)
		}
	}
	if us := usecOf(t, te.Engine, "eval"); us < preTakes.Microseconds() {
		t.Errorf("EVAL's commandstats time %d µs leaves out its %v of compiling", us, preTakes)
	}

	// Queued by MULTI: compiled when EXEC comes, before it takes the
	// keyspace lock for the transaction; EXEC's time counts it too.
	c := te.client()
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "EVAL", big, "0")
	c.expect("+QUEUED", "EVAL", small, "0")
	if len(st.pre) != 2 {
		t.Fatalf("a queued EVAL was precompiled when queued")
	}
	evalUs := usecOf(t, te.Engine, "eval")
	c.expect("*2 :1 :1", "EXEC")
	if len(st.pre) != 3 || st.pre[2] != big || !st.lockFree[2] {
		t.Fatalf("EXEC precompiled %d bodies (lock free: %v), want the large EVAL's before the lock", len(st.pre)-2, st.lockFree[2:])
	}
	n := len(st.ranWith)
	if tok, _ := st.ranWith[n-2].(*preToken); tok == nil || tok.body != big || st.ranWith[n-1] != nil {
		t.Errorf("the EVALs EXEC ran found Prepared %v, %v", st.ranWith[n-2], st.ranWith[n-1])
	}
	if us := usecOf(t, te.Engine, "eval") - evalUs; us < preTakes.Microseconds() {
		t.Errorf("the queued EVALs' commandstats time %d µs leaves out the compiling", us)
	}
	if us := usecOf(t, te.Engine, "exec"); us < preTakes.Microseconds() {
		t.Errorf("EXEC's commandstats time %d µs leaves out the compiling", us)
	}
}

// A doomed transaction (EXECABORT, a WATCH broken) compiles nothing when
// EXEC comes, and a panic's recovery leaves no prepared script for the
// next command.
func TestPrecompile_DoomedConcurrentRecovered(t *testing.T) {
	te := newTestEngine(t)
	st := &preScripter{e: te.Engine}
	te.SetScripter(st)
	big := "return 1 --" + strings.Repeat("x", PrecompileMin)

	c := te.client()
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "EVAL", big, "0")
	c.expect("-ERR wrong number of arguments for 'get' command", "GET")
	c.expect("-"+ErrExecAbort, "EXEC")
	c.expect("+OK", "WATCH", "w")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "EVAL", big, "0")
	te.do("SET", "w", "1")
	c.expect("(nilarray)", "EXEC")
	if len(st.pre) != 0 {
		t.Fatalf("a doomed transaction's EVAL was compiled %d times", len(st.pre))
	}

	ctx := &Ctx{Prepared: &preToken{big}, prep: time.Second}
	ctx.Recovered(&enginetest.TextWriter{})
	if ctx.Prepared != nil || ctx.prep != 0 {
		t.Fatalf("after Recovered: Prepared %v, prep %v", ctx.Prepared, ctx.prep)
	}
}
