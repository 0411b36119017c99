package luavm

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// A large EVAL's script is compiled before the keyspace lock is taken
// (engine.Precompiler): its replies, errors, caching and native run are
// those of a script compiled as it runs.
func TestPrecompile_SameAsCompilingInTheRun(t *testing.T) {
	f := newFixture(t)
	pad := "\n--" + strings.Repeat("x", engine.PrecompileMin) // past the size: precompiled
	big := release + pad
	sha := SHA1Hex([]byte(big))

	// A lock script padded with a comment is still the lock script: it
	// runs natively, and is cached as EVAL caches.
	f.do(2, "SET", "k", "tok")
	n := f.vm.NativeRuns()
	f.expect(":1", "EVAL", big, "1", "k", "tok")
	if f.vm.NativeRuns() != n+1 {
		t.Errorf("the precompiled lock script did not run natively")
	}
	f.expect("*1 :1", "SCRIPT", "EXISTS", sha)
	f.do(2, "SET", "k", "tok")
	f.expect(":1", "EVALSHA", sha, "1", "k", "tok")

	// Errors: compiling, the shebang, at run time; line numbers counted
	// from the script's own first line.
	for _, body := range []string{
		"return 1 +" + pad,
		"#!lua flags=no-such\nreturn 1" + pad,
		"#!lua\nreturn 1 +" + pad,
		"local x = nil\nreturn x.y" + pad,
	} {
		got := f.do(2, "EVAL", body, "0")
		f.vm.Flush()
		want := ""
		// the same script compiled in the run: SCRIPT LOAD's compile
		// error, or EVALSHA's run after it (no precompiling either way)
		if load := f.do(2, "SCRIPT", "LOAD", body); strings.HasPrefix(load, "-") {
			want = load
		} else {
			want = f.do(2, "EVALSHA", SHA1Hex([]byte(body)), "0")
		}
		if got != want || !strings.HasPrefix(got, "-") {
			t.Errorf("%.30q:\n precompiled %q\n in the run  %q", body, got, want)
		}
		f.vm.Flush()
		f.expect("*1 :0", "SCRIPT", "EXISTS", SHA1Hex([]byte(body))) // a failed compile caches nothing
	}

	// What one body's Precompile made is not taken for another's, of
	// the same length or not, nor for a copy of its own.
	f.vm.Flush()
	other := []byte(strings.Replace(big, "return 0", "return 7", 1))
	for _, body := range [][]byte{[]byte(big + " "), other} {
		pre, _ := f.vm.Precompile(body)
		s, errMsg := f.vm.load([]byte(big), pre)
		if errMsg != "" || s == nil || s.sha != sha {
			t.Errorf("load of another body's precompiled script: %v %q", s, errMsg)
		}
		f.vm.Flush()
	}
	own := []byte(big)
	pre, _ := f.vm.Precompile(own)
	if s, _ := f.vm.load(own, pre); s != pre.(*precompiled).s {
		t.Errorf("load did not take its own body's precompiled script")
	}
	f.vm.Flush()
	if s, _ := f.vm.load([]byte(big), pre); s == pre.(*precompiled).s {
		t.Errorf("load took the precompiled script for a copy of its body")
	}
	// A cached body is not compiled again.
	if got, took := f.vm.Precompile([]byte(big)); got != nil || took != 0 {
		t.Errorf("Precompile of a cached script = %v, %v; want nil, 0", got, took)
	}
}

// Precompiling runs outside the keyspace lock, beside scripts running in
// the VM and other precompiles: nothing they share may race (go test
// -race), and every reply is right.
func TestPrecompile_BesideRunningScripts(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				// distinct bodies, so that each compiles; concatenations
				// and a numeric for, whose compiling rewrites the chunk
				body := "local s = '' for i = 1, 3 do s = s .. i .. ARGV[1] end return s --" +
					strconv.Itoa(g) + "." + strconv.Itoa(i) + strings.Repeat("x", engine.PrecompileMin)
				if got := f.do(2, "EVAL", body, "0", "a"); got != "$1a2a3a" {
					errs <- got
				}
				if got := f.do(2, "EVAL", "return #ARGV[1] .. 'b'", "0", "xyz"); got != "$3b" {
					errs <- got
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// One script compiles at a time (its compiling takes many times its size
// in memory), but a cached one, which an event loop may run, never waits
// for another's compiling.
func TestPrecompile_OneAtATimeCachedNeverWaits(t *testing.T) {
	f := newFixture(t)
	cached := "return 1 --" + strings.Repeat("x", engine.PrecompileMin)
	f.expect(":1", "EVAL", cached, "0")
	f.vm.precompiling.Lock() // another script compiling
	done := make(chan struct{})
	go func() {
		defer close(done)
		if pre, _ := f.vm.Precompile([]byte(cached)); pre != nil {
			t.Errorf("Precompile of a cached script = %v", pre)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Precompile of a cached script waited for another's compiling")
	}
	var took, total time.Duration
	started, done2 := make(chan struct{}), make(chan struct{})
	go func() {
		start := time.Now()
		close(started)
		_, took = f.vm.Precompile([]byte(cached + " "))
		total = time.Since(start)
		close(done2)
	}()
	<-started
	const wait = 100 * time.Millisecond
	time.Sleep(wait) // it waits meanwhile
	f.vm.precompiling.Unlock()
	<-done2
	if took <= 0 || took > total-wait {
		t.Errorf("the compile reported %v of a call of %v, which waited %v for another's", took, total, wait)
	}
}

// A large library FUNCTION LOAD compiles before the keyspace lock
// (engine.LibraryPrecompiler) loads as one compiled under it: the same
// functions, the same errors; and Create compiles what it is given
// when what was precompiled is another body's.
func TestPrecompile_LibraryAsCompiledUnderTheLock(t *testing.T) {
	f := newFixture(t)
	pad := "\n--" + strings.Repeat("x", engine.PrecompileMin)
	f.expect("$big", "FUNCTION", "LOAD", "#!lua name=big\nredis.register_function('seven', function() return 7 end)"+pad)
	f.expect(":7", "FCALL", "seven", "0")
	for _, code := range []string{
		"#!lua name=e\nlocal = 1\n",
		"#!lua name=e\nerror('boom')\n",
		"#!lua name=e\nreturn 1\n",
	} {
		want := f.do(2, "FUNCTION", "LOAD", code) // small: compiled under the lock
		if got := f.do(2, "FUNCTION", "LOAD", code+pad); got != want || !strings.HasPrefix(got, "-ERR ") {
			t.Errorf("%q:\n precompiled %q\n under the lock %q", code, got, want)
		}
	}

	pre, took := f.vm.PrecompileLibrary([]byte("\nredis.register_function('a', function() return 1 end)"))
	if took <= 0 {
		t.Errorf("PrecompileLibrary took %v", took)
	}
	lib := &engine.Library{Name: "x", Engine: "LUA"}
	if msg := f.vm.Create(lib, []byte("\nredis.register_function('b', function() return 2 end)"), pre, engine.FunctionLoadTimeout); msg != "" {
		t.Fatal(msg)
	}
	if lib.Function("b") == nil || lib.Function("a") != nil {
		t.Errorf("Create ran another body's precompiled library: %v", lib.Functions())
	}
}

// SCRIPT LOAD, which runs without the keyspace lock, compiles a large
// script one at a time with the others (Precompile), and a small one at
// once.
func TestPrecompile_ScriptLoadOneAtATime(t *testing.T) {
	f := newFixture(t)
	big := "return 1 --" + strings.Repeat("x", engine.PrecompileMin)
	f.vm.precompiling.Lock() // another script compiling
	done := make(chan string, 1)
	go func() { done <- f.do(2, "SCRIPT", "LOAD", big) }()
	f.expect("$"+SHA1Hex([]byte("return 2")), "SCRIPT", "LOAD", "return 2")
	select {
	case got := <-done:
		t.Fatalf("a large SCRIPT LOAD compiled beside another's compiling: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
	f.vm.precompiling.Unlock()
	if got := <-done; got != "$"+SHA1Hex([]byte(big)) {
		t.Fatalf("SCRIPT LOAD = %q", got)
	}
	f.expect("*1 :1", "SCRIPT", "EXISTS", SHA1Hex([]byte(big)))
}
