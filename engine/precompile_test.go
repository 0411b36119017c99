package engine

import (
	"strconv"
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
	checkPrecompiled(t, big, 2, st.pre, st.lockFree, st.ranWith, []bool{true, true, false, false})
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

// checkPrecompiled checks that body was precompiled n times and nothing
// else, each time with the keyspace lock free, and that each run (or a
// library's create) was given what was precompiled where given says.
func checkPrecompiled(t *testing.T, body string, n int, pre []string, lockFree []bool, ran []any, given []bool) {
	t.Helper()
	if len(pre) != n {
		t.Fatalf("precompiled %d bodies, want %d", len(pre), n)
	}
	for i, b := range pre {
		if b != body {
			t.Errorf("precompiled %.30q, want %.30q", b, body)
		}
		if !lockFree[i] {
			t.Errorf("precompile %d ran under the keyspace lock", i)
		}
	}
	if len(ran) != len(given) {
		t.Fatalf("%d runs, want %d", len(ran), len(given))
	}
	for i, want := range given {
		tok, _ := ran[i].(*preToken)
		if (tok != nil) != want || (tok != nil && tok.body != body) {
			t.Errorf("run %d was given %v; want what was precompiled: %v", i, ran[i], want)
		}
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

// preFunctions is stubFunctions with a LibraryPrecompiler that records
// whether it found the keyspace lock free, and what Create was given.
type preFunctions struct {
	stubFunctions
	e        *Engine
	pre      []string // the bodies precompiled
	lockFree []bool
	gotPre   []any // prepared, at each Create
}

func (s *preFunctions) PrecompileLibrary(body []byte) (any, time.Duration) {
	free := s.e.mu.TryLock()
	if free {
		s.e.mu.Unlock()
	}
	time.Sleep(preTakes)
	s.pre = append(s.pre, string(body))
	s.lockFree = append(s.lockFree, free)
	return &preToken{string(body)}, preTakes
}

func (s *preFunctions) Create(lib *Library, body []byte, prepared any, timeout time.Duration) string {
	s.gotPre = append(s.gotPre, prepared)
	return s.stubFunctions.Create(lib, body, nil, timeout)
}

// FUNCTION LOAD compiles a large library before the keyspace lock is
// taken, when the load would compile it: not for a small one, a bad
// option or shebang, an unknown engine, or a library of the name
// without REPLACE. Queued in MULTI it compiles when EXEC comes.
func TestPrecompile_LargeFunctionLoadBeforeTheLock(t *testing.T) {
	te := newTestEngine(t)
	st := &preFunctions{e: te.Engine}
	te.RegisterFunctionEngine("STUB", st)
	pad := "\n" + strings.Repeat(" ", PrecompileMin)
	lib := func(name string) string { return "#!stub name=" + name + "\nfn " + name + pad }
	c := te.client()

	c.expect("$a", "FUNCTION", "LOAD", lib("a"))
	c.expect("$b", "FUNCTION", "LOAD", "#!stub name=b\nfn b") // small
	c.expect("-ERR Unknown option given: nope", "FUNCTION", "LOAD", "nope", lib("c"))
	c.expect("-ERR Library 'a' already exists", "FUNCTION", "LOAD", lib("a"))
	c.expect("-ERR Engine 'other' not found", "FUNCTION", "LOAD", "#!other name=d"+pad)
	c.expect("-ERR Invalid metadata value given: x=1", "FUNCTION", "LOAD", "#!stub name=d x=1"+pad)
	c.expect("-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
		"FUNCTION", "LOAD", "#!stub name=d-e"+pad)
	c.expect("$a", "FUNCTION", "LOAD", "REPLACE", lib("a"))
	checkPrecompiled(t, "\nfn a"+pad, 2, st.pre, st.lockFree, st.gotPre, []bool{true, false, true})
	if us := usecOf(t, te.Engine, "function|load"); us < 2*preTakes.Microseconds() {
		t.Errorf("FUNCTION LOAD's commandstats time %d µs leaves out its compiling", us)
	}

	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "FUNCTION", "LOAD", lib("m"))
	if len(st.pre) != 2 {
		t.Fatalf("a queued FUNCTION LOAD was precompiled when queued")
	}
	c.expect("*1 $m", "EXEC")
	if len(st.pre) != 3 || !st.lockFree[2] {
		t.Fatalf("EXEC precompiled %d libraries (lock free: %v), want one before the lock", len(st.pre)-2, st.lockFree[2:])
	}
	if tok, _ := st.gotPre[len(st.gotPre)-1].(*preToken); tok == nil || tok.body != "\nfn m"+pad {
		t.Errorf("the queued load's create was given %v", st.gotPre[len(st.gotPre)-1])
	}
}

// loadScripter is a preScripter whose Load records what it was given.
type loadScripter struct {
	preScripter
	loaded []any // prepared, at each Load
}

func (s *loadScripter) Load(body []byte, prepared any) (string, string) {
	s.loaded = append(s.loaded, prepared)
	return "sha", ""
}

// SCRIPT LOAD compiles a large script in its prepare, taking its turn
// with the others' compiling: alone, where it takes no keyspace lock,
// and queued in MULTI, before EXEC takes the lock (where waiting its
// turn would hold every client up).
func TestPrecompile_LargeScriptLoad(t *testing.T) {
	te := newTestEngine(t)
	st := &loadScripter{preScripter: preScripter{e: te.Engine}}
	te.SetScripter(st)
	big := "return 1 --" + strings.Repeat("x", PrecompileMin)
	c := te.client()
	c.expect("$sha", "SCRIPT", "LOAD", big)
	c.expect("$sha", "SCRIPT", "LOAD", "return 1")
	c.expect("+OK", "MULTI")
	c.expect("+QUEUED", "SCRIPT", "LOAD", big)
	c.expect("*1 $sha", "EXEC")
	checkPrecompiled(t, big, 2, st.pre, st.lockFree, st.loaded, []bool{true, false, true})
	if us := usecOf(t, te.Engine, "script|load"); us < 2*preTakes.Microseconds() {
		t.Errorf("SCRIPT LOAD's commandstats time %d µs leaves out its compiling", us)
	}
}

// EXEC prepares its queued commands until those prepared come to
// precompileQueuedMax bytes (what they compile is held until they run),
// the first always; the rest compile as they run. Commands whose prepare
// left nothing do not count.
func TestPrecompile_QueuedUpToABudget(t *testing.T) {
	te := newTestEngine(t)
	st := &preScripter{e: te.Engine}
	te.SetScripter(st)
	big := "return 1 --" + strings.Repeat("x", PrecompileMin)
	small := "return 2"
	defer func(m int) { precompileQueuedMax = m }(precompileQueuedMax)
	c := te.client()
	for _, tc := range []struct {
		max   int
		evals []string
		given []bool
	}{
		{2*len(big) + 10, []string{big, small, small, big, big}, []bool{true, false, false, true, false}}, // two EVALs' bytes, with "EVAL" and "0"
		{len(big) / 2, []string{big, big}, []bool{true, false}},                                           // the first, bigger than the budget
	} {
		precompileQueuedMax = tc.max
		st.pre, st.lockFree, st.ranWith = nil, nil, nil
		c.expect("+OK", "MULTI")
		for _, body := range tc.evals {
			c.expect("+QUEUED", "EVAL", body, "0")
		}
		c.expect("*"+strconv.Itoa(len(tc.evals))+strings.Repeat(" :1", len(tc.evals)), "EXEC")
		n := 0
		for _, g := range tc.given {
			if g {
				n++
			}
		}
		checkPrecompiled(t, big, n, st.pre, st.lockFree, st.ranWith, tc.given)
	}
}
