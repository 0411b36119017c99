package engine

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// stubFunctions is a FunctionEngine for the engine's own tests. A
// library's body is lines "fn <name> [flag ...] [desc=<text>]", each a
// function, or "fail <text>", an error. A function named w... SETs its
// first key to "v"; the others reply "<name>:<keys>|<args>".
type stubFunctions struct {
	created []string    // bodies created
	runs    []ScriptRun // c.Script as each call saw it
}

func (s *stubFunctions) Create(lib *Library, body []byte, prepared any, timeout time.Duration) string {
	s.created = append(s.created, string(body))
	if timeout != FunctionLoadTimeout {
		return "timeout " + timeout.String()
	}
	for _, line := range strings.Split(string(body), "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if words[0] == "fail" {
			return strings.Join(words[1:], " ")
		}
		var desc *string
		var flags ScriptFlag
		for _, w := range words[2:] {
			if d, ok := strings.CutPrefix(w, "desc="); ok {
				desc = &d
				continue
			}
			f, ok := ParseScriptFlag(w, true)
			if !ok {
				return "unknown flag given"
			}
			flags |= f
		}
		if msg := lib.AddFunction(words[1], desc, flags, words[1]); msg != "" {
			return msg
		}
	}
	return ""
}

func (s *stubFunctions) Call(c *Ctx, fn *Function, keys, args [][]byte) {
	s.runs = append(s.runs, *c.Script)
	if strings.HasPrefix(fn.Name, "w") {
		c.Call([][]byte{[]byte("set"), keys[0], []byte("v")}, c.W)
		return
	}
	var b strings.Builder
	b.WriteString(fn.Impl.(string) + ":")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k)
	}
	b.WriteByte('|')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(a)
	}
	c.W.WriteBulkString(b.String())
}

func newFunctionsEngine(t *testing.T) (*testEngine, *stubFunctions) {
	te := newTestEngine(t)
	st := &stubFunctions{}
	te.RegisterFunctionEngine("STUB", st)
	return te, st
}

func TestFunctionLoad_ShebangAndNames(t *testing.T) {
	te, st := newFunctionsEngine(t)
	const nameErr = "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	for _, tc := range []struct{ code, want string }{
		{"", "-ERR Missing library metadata"},
		{"stub name=x\nfn f", "-ERR Missing library metadata"},
		{"#!stub name=x", "-ERR Invalid library metadata"},
		{"#!stub name=x\x00\nfn f", "-ERR Invalid library metadata"},
		{"#!stub name=\"x\nfn f", "-ERR Invalid library metadata"},
		{"#!stub\nfn f", "-ERR Library name was not given"},
		{"#!stub name=x other=1\nfn f", "-ERR Invalid metadata value given: other=1"},
		{"#!stub name=x NAME=y\nfn f", "-ERR Invalid metadata value, name argument was given multiple times"},
		{"#!stub name=\nfn f", nameErr},
		{"#!stub name=a-b\nfn f", nameErr},
		{"#!nosuch name=x\nfn f", "-ERR Engine 'nosuch' not found"},
		{"#! name=x\nfn f", "-ERR Engine '' not found"},
		{"#!stub name=x\n", "-ERR No functions registered"},
		{"#!stub name=x\nfail it broke", "-ERR it broke"},
		{"#!stub name=x\nfn f\nfn f", "-ERR Function already exists in the library"},
		{"#!stub name=x\nfn bad-name", nameErr},
		{"#!STUB Name=\"x_1\"\nfn f", "$x_1"},
		{"#!stub name=x_1\nfn g", "-ERR Library 'x_1' already exists"},
		{"#!stub name=x_2\nfn F", "-ERR Function F already exists"},
	} {
		te.expect(tc.want, "FUNCTION", "LOAD", tc.code)
	}
	// the engine got the code from the shebang's newline on
	if got := st.created[len(st.created)-1]; got != "\nfn F" {
		t.Fatalf("body created: %q", got)
	}
	te.expect("-ERR Unknown option given: nope", "FUNCTION", "LOAD", "nope", "#!stub name=y\nfn g")
	te.expect("-ERR Unknown option given:  a b", "FUNCTION", "LOAD", "\na\nb\r\n", "#!stub name=y\nfn g")
	te.expect("$x_1", "FUNCTION", "LOAD", "replace", "REPLACE", "#!stub name=x_1\nfn f2")
	te.expect("-ERR Function not found", "FCALL", "f", "0")
	te.expect("$f2:|", "FCALL", "F2", "0")
}

func TestFunctionLoad_ReplaceKeepsTheOldOnFailure(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	te.expect("$a", "FUNCTION", "LOAD", "#!stub name=a\nfn fa\nfn fb")
	te.expect("$b", "FUNCTION", "LOAD", "#!stub name=b\nfn fc")
	te.expect("-ERR Function FC already exists", "FUNCTION", "LOAD", "REPLACE", "#!stub name=a\nfn FC")
	te.expect("-ERR it broke", "FUNCTION", "LOAD", "REPLACE", "#!stub name=a\nfail it broke")
	te.expect("$fa:|", "FCALL", "fa", "0")
	// replacing a library frees its functions' names for itself
	te.expect("$a", "FUNCTION", "LOAD", "REPLACE", "#!stub name=a\nfn fb\nfn fd")
	te.expect("-ERR Function not found", "FCALL", "fa", "0")
	te.expect("$fd:|", "FCALL", "fd", "0")
	if f, l, _ := te.FunctionCounts(); f != 3 || l != 2 {
		t.Fatalf("FunctionCounts = %d functions, %d libraries", f, l)
	}
	te.expect("-ERR Library not found", "FUNCTION", "DELETE", "A")
	te.expect("+OK", "FUNCTION", "DELETE", "a")
	te.expect("-ERR Function not found", "FCALL", "fd", "0")
	te.expect("+OK", "FUNCTION", "FLUSH", "ASYNC")
	te.expect("*0", "FUNCTION", "LIST")
	te.expect("-ERR FUNCTION FLUSH only supports SYNC|ASYNC option", "FUNCTION", "FLUSH", "now")
	te.expect("-ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.", "function", "flush", "sync", "x")
}

func TestFunctionList_OrderPatternAndCode(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	te.expect("$beta", "FUNCTION", "LOAD", "#!stub name=beta\nfn b2 no-writes ALLOW-OOM desc=second\nfn b1")
	te.expect("$alpha", "FUNCTION", "LOAD", "#!stub name=alpha\nfn a1 allow-cross-slot-keys no-cluster allow-stale no-writes")
	lib := func(name, fns string) string {
		return "%3 $library_name $" + name + " $engine $STUB $functions " + fns
	}
	alpha := lib("alpha", "*1 %3 $name $a1 $description (nil) $flags ~4 +no-writes +allow-stale +no-cluster +allow-cross-slot-keys")
	beta := lib("beta", "*2 %3 $name $b2 $description $second $flags ~2 +no-writes +allow-oom %3 $name $b1 $description (nil) $flags ~0")
	te.expect("*2 "+alpha+" "+beta, "FUNCTION", "LIST")
	te.expect("*1 "+beta, "FUNCTION", "LIST", "LIBRARYNAME", "B*")
	te.expect("*0", "FUNCTION", "LIST", "libraryname", "gamma")
	te.expect("*1 "+strings.Replace(alpha, "%3", "%4", 1)+" $library_code $#!stub name=alpha\nfn a1 allow-cross-slot-keys no-cluster allow-stale no-writes",
		"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "a?pha")
	te.expect("-ERR library name argument was not given", "FUNCTION", "LIST", "LIBRARYNAME")
	te.expect("-ERR Unknown argument withcode", "FUNCTION", "LIST", "WITHCODE", "withcode")
	te.expect("-ERR Unknown argument libraryname", "FUNCTION", "LIST", "libraryname", "a", "libraryname", "b")
	te.expect("-ERR Unknown argument x", "FUNCTION", "LIST", "x")
	te.expect("%2 $running_script (nil) $engines %1 $STUB %2 $libraries_count :2 $functions_count :3", "FUNCTION", "STATS")
}

func TestFcall_NumKeysFlagsAndReadOnly(t *testing.T) {
	te, st := newFunctionsEngine(t)
	te.expect("$l", "FUNCTION", "LOAD", "#!stub name=l\nfn f\nfn ro no-writes\nfn w\nfn wro no-writes\nfn woom allow-oom")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL", "f", "0"}, "$f:|"},
		{[]string{"FCALL", "f", "2", "k1", "k2", "a1"}, "$f:k1,k2|a1"},
		{[]string{"FCALL", "f", "3", "k1", "k2"}, "-" + ErrNumKeysTooMany},
		{[]string{"FCALL", "f", "-1"}, "-" + ErrNumKeysNeg},
		{[]string{"FCALL", "f", "x"}, "-ERR Bad number of keys provided"},
		{[]string{"FCALL", "f", "1.0", "k"}, "-ERR Bad number of keys provided"},
		{[]string{"FCALL", "nosuch", "x"}, "-ERR Function not found"},
		{[]string{"FCALL_RO", "f", "0"}, "-" + ErrScriptWriteFlagRO},
		{[]string{"FCALL_RO", "ro", "1", "k"}, "$ro:k|"},
		{[]string{"FCALL", "w", "1", "k"}, "+OK"},
		{[]string{"FCALL", "wro", "1", "k"}, "-" + ErrScriptWriteRO},
		{[]string{"FCALL_RO", "wro", "1", "k"}, "-" + ErrScriptWriteRO},
		{[]string{"FCALL", "woom", "1", "k"}, "+OK"},
	} {
		te.expect(tc.want, tc.args...)
	}
	// c.Script as each call saw it: FCALL_RO and no-writes run read-only,
	// allow-oom's writes pass maxmemory
	want := []ScriptRun{{}, {}, {ReadOnly: true}, {}, {ReadOnly: true}, {ReadOnly: true}, {AllowOOM: true}}
	if len(st.runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(st.runs), len(want))
	}
	for i, r := range st.runs {
		if r.ReadOnly != want[i].ReadOnly || r.AllowOOM != want[i].AllowOOM {
			t.Errorf("run %d: ReadOnly %v AllowOOM %v, want %v %v", i, r.ReadOnly, r.AllowOOM, want[i].ReadOnly, want[i].AllowOOM)
		}
	}
	te.expect("$v", "GET", "k")
}

// Over maxmemory, FCALL is refused before it runs unless its function is
// flagged no-writes or allow-oom; an unknown function keeps FCALL's own
// flags.
func TestFcall_DenyOOMByFunctionFlags(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	te.expect("$l", "FUNCTION", "LOAD", "#!stub name=l\nfn f\nfn ro no-writes\nfn oom allow-oom")
	te.mem.max.Store(1)
	defer te.mem.max.Store(0)
	fcall := te.Lookup([]byte("fcall"))
	for name, want := range map[string]bool{"f": true, "F": true, "ro": false, "oom": false, "nosuch": false} {
		if got := te.denyOOM(fcall, [][]byte{[]byte("fcall"), []byte(name), []byte("0")}); got != want {
			t.Errorf("denyOOM(FCALL %s) = %v, want %v", name, got, want)
		}
	}
	te.expect("-"+ErrOOM, "FCALL", "f", "0")
	te.expect("$ro:|", "FCALL", "ro", "0")
}

// The DUMP payload holds each library's code in name order; RESTORE
// reads it back under each policy.
func TestFunctionDumpRestore_Policies(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	te.expect("$b", "FUNCTION", "LOAD", "#!stub name=b\nfn fb")
	te.expect("$a", "FUNCTION", "LOAD", "#!stub name=a\nfn fa")
	want := dumpFooter([]byte("\xf5\x13#!stub name=a\nfn fa\xf5\x13#!stub name=b\nfn fb"))
	te.expect("$"+string(want), "FUNCTION", "DUMP")
	payload := string(want)

	te.expect("-ERR Library a already exists", "FUNCTION", "RESTORE", payload)
	te.expect("+OK", "FUNCTION", "RESTORE", payload, "replace")
	te.expect("+OK", "FUNCTION", "FLUSH")
	te.expect("+OK", "FUNCTION", "RESTORE", payload)
	te.expect("$fa:|", "FCALL", "fa", "0")
	// a library of another name holding fa: REPLACE does not help
	te.expect("+OK", "FUNCTION", "DELETE", "a")
	te.expect("$c", "FUNCTION", "LOAD", "#!stub name=c\nfn FA")
	te.expect("-ERR Library b already exists", "FUNCTION", "RESTORE", payload, "APPEND")
	te.expect("-ERR Function fa already exists", "FUNCTION", "RESTORE", payload, "REPLACE")
	te.expect("$FA:|", "FCALL", "fa", "0")
	te.expect("$fb:|", "FCALL", "fb", "0")
	// FLUSH replaces everything
	te.expect("+OK", "FUNCTION", "RESTORE", payload, "FLUSH")
	te.expect("$fa:|", "FCALL", "fa", "0")
	te.expect("%2 $running_script (nil) $engines %1 $STUB %2 $libraries_count :2 $functions_count :2", "FUNCTION", "STATS")
}

func TestFunctionRestore_BadPayloads(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	str := func(s string) string { return string(rdbAppendString(nil, []byte(s))) }
	wrong := "-ERR DUMP payload version or checksum are wrong"
	v11 := []byte("\xf5" + str("#!stub name=x\nfn f") + "\x0b\x00") // RDB version 11, a correct CRC
	v11 = binary.LittleEndian.AppendUint64(v11, rdbCRC64(v11))
	for _, tc := range []struct {
		payload, want string
	}{
		{"", wrong},
		{"123456789", wrong},
		{"0123456789", wrong},
		{string(dumpFooter(nil)[:9]) + "x", wrong},
		{string(v11), wrong},
		{string(dumpFooter([]byte("\x00" + str("#!stub name=x\nfn f")))), "-ERR given type is not a function"},
		{string(dumpFooter([]byte("\xf5"))), "-ERR Failed loading library payload"},
		{string(dumpFooter([]byte("\xf5\x82abc"))), "-ERR Failed loading library payload"},
		{string(dumpFooter([]byte("\xf5\xc4abc"))), "-ERR Failed loading library payload"},
		{string(dumpFooter([]byte("\xf5\xc3\x02\x05\x00a"))), "-ERR Failed loading library payload"},
		{string(dumpFooter([]byte("\xf5\xc0\x7b"))), "-ERR Missing library metadata"},
		{string(dumpFooter([]byte("\xf5" + str("#!stub name=x\n")))), "-ERR No functions registered"},
		{string(dumpFooter([]byte("\xf5" + str("#!stub name=x\nfn f") + "\xf5" + str("#!stub name=x\nfn g")))), "-ERR Library 'x' already exists"},
		{string(dumpFooter([]byte("\xf6\x82"))), "-ERR Failed loading library name"},
		{string(dumpFooter([]byte("\xf6" + str("x")))), "-ERR Failed loading engine name"},
		{string(dumpFooter([]byte("\xf6" + str("x") + str("STUB") + "\x82"))), "-ERR Failed loading library description indicator"},
		{string(dumpFooter([]byte("\xf6" + str("x") + str("STUB") + "\x01"))), "-ERR Failed loading library description"},
		{string(dumpFooter([]byte("\xf6" + str("x") + str("STUB") + "\x00"))), "-ERR Failed loading library blob"},
		{string(dumpFooter(nil)), "+OK"},
	} {
		te.expect(tc.want, "FUNCTION", "RESTORE", tc.payload)
	}
	te.expect("-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.", "FUNCTION", "RESTORE", string(dumpFooter(nil)), "merge")
	te.expect("-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.", "function", "RESTORE", "a", "b", "c")
	// the old format: name, engine, description, then the code without its shebang
	old := dumpFooter([]byte("\xf6" + str("oldlib") + str("STUB") + "\x01" + str("ignored") + str("fn oldf")))
	te.expect("+OK", "FUNCTION", "RESTORE", string(old))
	te.expect("*1 %4 $library_name $oldlib $engine $STUB $functions *1 %3 $name $oldf $description (nil) $flags ~0 $library_code $#!STUB name=oldlib\nfn oldf",
		"FUNCTION", "LIST", "WITHCODE")
}

// FUNCTION KILL stops only functions and SCRIPT KILL only an EVAL's
// scripts, each answering BUSY for the other kind; the BUSY reply names
// the command that stops the running one; FUNCTION STATS shows a busy
// function and answers BUSY for a busy EVAL.
func TestFunctionKill_OnlyFunctions(t *testing.T) {
	te, _ := newFunctionsEngine(t)
	sc := &stubScripter{}
	te.SetScripter(sc)
	te.SetBusyThreshold(time.Millisecond)
	te.expect("$l", "FUNCTION", "LOAD", "#!stub name=l\nfn spin")
	fn := te.functionLibs().lookup([]byte("spin"))

	busy := func(fn *Function, args ...string) {
		var b [][]byte
		for _, a := range args {
			b = append(b, []byte(a))
		}
		te.scriptBegin(fn, b)
		te.scriptStart.Store(time.Now().Add(-time.Second).UnixNano()) // past the threshold
	}
	te.expect("-"+ErrNotBusy, "FUNCTION", "KILL")

	busy(fn, "fcall", "spin", "1", "k")
	te.expect("-"+ErrBusyFunction, "GET", "k")
	te.expect("-"+ErrBusyFunction, "SCRIPT", "KILL")
	w := &enginetest.TextWriter{}
	te.Exec(&Ctx{Args: [][]byte{[]byte("FUNCTION"), []byte("STATS")}, W: w})
	if got := w.String(); !strings.HasPrefix(got, "%2 $running_script %3 $name $spin $command *4 $fcall $spin $1 $k $duration_ms :") ||
		!strings.HasSuffix(got, " $engines %1 $STUB %2 $libraries_count :1 $functions_count :1") {
		t.Fatalf("FUNCTION STATS during a busy function: %q", got)
	}
	te.expect("+OK", "FUNCTION", "KILL")
	if sc.killed != 1 {
		t.Fatalf("scripter.Kill called %d times", sc.killed)
	}
	te.scriptEnd()

	busy(nil)
	te.expect("-"+ErrBusy, "GET", "k")
	te.expect("-"+ErrBusy, "FUNCTION", "KILL")
	te.expect("-"+ErrBusy, "FUNCTION", "STATS")
	te.expect("+OK", "SCRIPT", "KILL")
	te.scriptEnd()

	// a function that wrote is UNKILLABLE, by either command
	busy(fn)
	te.scriptWrote.Store(true)
	te.expect("-"+ErrUnkillable, "FUNCTION", "KILL")
	te.expect("-"+ErrUnkillable, "SCRIPT", "KILL")
	te.scriptEnd()
	if sc.killed != 2 {
		t.Fatalf("scripter.Kill called %d times", sc.killed)
	}
	te.expect("%2 $running_script (nil) $engines %1 $STUB %2 $libraries_count :1 $functions_count :1", "FUNCTION", "STATS")
}
