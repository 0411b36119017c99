package diff

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// TestRandomDiffWide is TestRandomDiff's wider sibling: a seeded random
// differential test over transactions (MULTI/EXEC/DISCARD/WATCH/UNWATCH,
// on two connections per server, so one connection's writes touch the
// other's watched keys), the list and hash commands tumbler implements,
// more string and keyspace commands, the bit commands
// (random_bits_test.go), and scripts exercising the Lua bridge and
// libraries (reply conversions, redis.call/pcall errors, cjson,
// string/table/math/bit, tonumber/tostring, EVAL_RO, shebang flags,
// SCRIPT EXISTS). Arguments are valid and invalid alike: wrong
// arity, wrong types, bad and edge numbers, unknown options and option
// conflicts.
//
// By default it runs the fixed seeds in wideDiffRuns (a few seconds). For
// longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_DIFF_WIDE_SEED=123 TUMBLER_DIFF_WIDE_STEPS=20000 \
//	    go test -run TestRandomDiffWide ./diff/
//
// TUMBLER_DIFF_WIDE_SEED is one seed (RESP2) or a range (1-50, RESP2
// for even seeds and RESP3 for odd ones); TUMBLER_DIFF_WIDE_RESP3=0 or 1
// forces one protocol. For triage: TUMBLER_DIFF_WIDE_MAX=n collects up to
// n mismatches (30), TUMBLER_DIFF_WIDE_SUMMARY=1 reports one line each,
// TUMBLER_DIFF_WIDE_DUMP=1 adds both keyspaces to a report, and
// TUMBLER_DIFF_VERBOSE=1 logs every command with both replies.
//
// Differences already known are listed in knownWideDiffs (deliberate or
// unfixable) and wideBugs (found by this test, not fixed yet); they are
// counted, not reported. A mismatch in EXEC's reply is matched element by
// element against the commands it ran. After any other mismatch both
// servers are resynchronised (DISCARD, UNWATCH, FLUSHALL, SCRIPT FLUSH).
//
// Time: as in TestRandomDiff (the same relSec/absSec helpers), no key
// ever expires by itself during a run; TTL and PTTL replies, bare or
// inside an EXEC, are compared with a tolerance. Blocking commands never
// block: before one is sent outside MULTI, both servers are asked whether
// its source keys exist (EXISTS), and if they might not, its timeout is
// replaced by one that fails at once or expires after 10 ms (the same
// null reply from both).
//
// HGETALL/HKEYS/HVALS order is defined (insertion order) only while a
// hash is listpack-encoded: the runner asks Redis for the encoding first
// and compares a hashtable's reply as a multiset (as it does any such
// reply inside EXEC). h:big gets values over 64 bytes, so it converts.
func TestRandomDiffWide(t *testing.T) {
	runs := wideDiffRuns
	if s := os.Getenv("TUMBLER_DIFF_WIDE_SEED"); s != "" {
		lo, hi, err := parseSeedRange(s)
		if err != nil {
			t.Fatalf("TUMBLER_DIFF_WIDE_SEED=%q: %v", s, err)
		}
		steps := 20000
		if s := os.Getenv("TUMBLER_DIFF_WIDE_STEPS"); s != "" {
			if steps, err = strconv.Atoi(s); err != nil || steps <= 0 {
				t.Fatalf("TUMBLER_DIFF_WIDE_STEPS=%q: want a positive integer", s)
			}
		}
		runs = nil
		for seed := lo; seed <= hi; seed++ {
			resp3 := seed%2 == 1 && lo != hi
			switch os.Getenv("TUMBLER_DIFF_WIDE_RESP3") {
			case "1":
				resp3 = true
			case "0":
				resp3 = false
			}
			runs = append(runs, randomRun{seed: seed, steps: steps, resp3: resp3})
		}
	}

	redis := target{"redis", startRedis(t)}
	tumbler := target{"tumbler", server.RunT(t).Addr()}
	var logf func(format string, args ...any)
	if os.Getenv("TUMBLER_DIFF_VERBOSE") == "1" {
		logf = t.Logf
	}

	var all []wideMismatch
	guarded := map[string]int{}
	total := 0
	for _, run := range runs {
		if len(all) >= maxWideMismatches {
			break
		}
		start := time.Now()
		res, err := runWide(run, redis, tumbler, time.Now, maxWideMismatches-len(all), logf)
		if err != nil {
			t.Fatalf("seed %d: %v", run.seed, err)
		}
		t.Logf("seed %d (%s): %d commands in %v, %d mismatches, %d known",
			run.seed, run.proto(), res.steps, time.Since(start).Round(time.Millisecond), len(res.mismatches), res.guardedTotal())
		total += res.steps
		all = append(all, res.mismatches...)
		for name, n := range res.guarded {
			guarded[name] += n
		}
	}
	t.Logf("%d commands checked in total", total)
	for _, k := range knownWideDiffs {
		if n := guarded[k.name]; n > 0 {
			t.Logf("knownWideDiffs %q matched %d times", k.name, n)
		}
	}
	for _, k := range wideBugs {
		if n := guarded[k.name]; n > 0 {
			t.Logf("wideBugs %q matched %d times", k.name, n)
		} else {
			t.Logf("wideBugs %q did not fire in this run (fixed?)", k.name)
		}
	}
	if os.Getenv("TUMBLER_DIFF_WIDE_SUMMARY") == "1" {
		// one line a mismatch, for triage over many seeds
		for _, m := range all {
			family := m.st.tmpl
			if family == "" {
				family = strings.ToLower(m.st.args[0])
			}
			t.Logf("MM\t%s\t%d/%d\t%s\t%q\t%q", family, m.run.seed, m.step, showFull(m.st.args), m.want, m.got)
		}
		if len(all) > 0 {
			t.Errorf("%d mismatches", len(all))
		}
		return
	}
	for _, m := range all {
		t.Errorf("%s", m)
	}
}

// wideDiffRuns are the default, reproducible runs: together about 4 s.
// Over them every wideBugs entry but "bit ops on non-integers" fires.
var wideDiffRuns = []randomRun{
	{seed: 1, steps: 5000},
	{seed: 2, steps: 5000, resp3: true},
	{seed: 3, steps: 5000},
	{seed: 4, steps: 5000, resp3: true},
}

// maxWideMismatches bounds the mismatches collected (env
// TUMBLER_DIFF_WIDE_MAX overrides it, for triage).
var maxWideMismatches = func() int {
	if n, err := strconv.Atoi(os.Getenv("TUMBLER_DIFF_WIDE_MAX")); err == nil && n > 0 {
		return n
	}
	return 30
}()

func parseSeedRange(s string) (lo, hi uint64, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.ParseUint(a, 10, 64); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = strconv.ParseUint(b, 10, 64); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("empty range")
		}
	}
	return lo, hi, nil
}

// ---- known differences ----

// knownWide is a difference between the servers that this test knows.
// A mismatch it matches is counted, not reported. stateless: the
// difference is in the reply alone (no write can differ), so the run
// goes on without resynchronising the servers.
type knownWide struct {
	name      string
	stateless bool
	match     func(st wstep, want, got []byte) bool
}

// knownWideDiffs are deliberate or documented differences, or ones that
// cannot reasonably be removed.
var knownWideDiffs = []knownWide{
	knownSortErrno,
	// tostring() and .. of a NaN: glibc's printf writes -nan for a NaN
	// with its sign bit set, tumbler always nan (README).
	{"lua tostring of NaN", true, func(st wstep, want, got []byte) bool {
		w, ok1 := bulkText(want)
		g, ok2 := bulkText(got)
		return st.tag == "float-text" && ok1 && ok2 && w == "-nan" && g == "nan"
	}},
	// Errors raised by the Lua VM or its libraries are worded by
	// gopher-lua (knownDiffs has the same class for eval.txt): "bad
	// argument #1 to tonumber" without quotes around the function,
	// pattern errors, a position prefix where Lua 5.1 has none, and
	// the compiler's messages. Only when both replies are errors of the
	// same script.
	{"lua error wording", true, func(st wstep, want, got []byte) bool {
		scriptLoad := len(st.args) > 1 && strings.EqualFold(st.args[0], "script") && strings.EqualFold(st.args[1], "load")
		return (st.tmpl != "" || scriptLoad) && luaWordingOnly(want, got)
	}},
	// The coroutine library is not provided: gopher-lua's coroutines
	// outlive the script that made them (each holds a child of the VM's
	// context), and a yield across pcall corrupts them, where Lua 5.1
	// refuses it.
	{"no coroutine library", true, func(st wstep, want, got []byte) bool {
		return strings.Contains(st.body, "coroutine") && bytes.Contains(got, []byte("nonexistent global variable 'coroutine'"))
	}},
	// tumbler has no OBJECT IDLETIME (it does not track access times),
	// so its OBJECT HELP lacks those lines.
	{"OBJECT HELP without IDLETIME", true, func(st wstep, want, got []byte) bool {
		return len(st.args) == 2 && strings.EqualFold(st.args[0], "object") && strings.EqualFold(st.args[1], "help") &&
			bytes.HasPrefix(want, []byte("*15\r\n")) && bytes.HasPrefix(got, []byte("*12\r\n"))
	}},
	// SET ... EXAT/PXAT with a time in the past stores a key that has
	// already expired. tumbler reclaims it at once; Redis 7.0 counts it
	// in DBSIZE until its active expiry cycle gets to it (every 100 ms),
	// so DBSIZE right after is larger in Redis, by timing. (Nothing else
	// sees the key in either.)
	{"DBSIZE counts an expired key Redis has not reclaimed yet", true, func(st wstep, want, got []byte) bool {
		x, ok1 := integerOf(want)
		y, ok2 := integerOf(got)
		dbsize := strings.EqualFold(st.args[0], "dbsize") || strings.Contains(st.body, "dbsize") ||
			(st.tmpl != "" && strings.EqualFold(st.args[len(st.args)-1], "dbsize"))
		return dbsize && ok1 && ok2 && x > y
	}},
	// MULTI, SET k abc, OBJECT REFCOUNT k, EXEC: Redis 7.0 answers 2 for
	// the REFCOUNT, tumbler 1. Redis frees a transaction's arguments only
	// after EXEC, so a value a queued command stored is still referenced
	// by its argv. An artifact of Redis's memory management.
	{"OBJECT REFCOUNT inside EXEC", true, func(st wstep, want, got []byte) bool {
		return len(st.args) > 1 && strings.EqualFold(st.args[0], "object") && strings.EqualFold(st.args[1], "refcount") &&
			string(want) == ":2\r\n" && string(got) == ":1\r\n"
	}},
	// SSCAN t 0 on a hashtable set of more than 10 members (all of
	// wSMembers, reached by SUNIONSTORE or a RESTORE of one):
	//   redis:   a cursor and about 10 members, as its dict's buckets fall
	//   tumbler: about 10 members in its own table's order, and its own
	//            cursor (or cursor 0 and the whole set)
	// Redis's dict order follows a hash seed drawn at startup, so which
	// members a partial scan returns differs between any two processes.
	// Either server may return the whole set with cursor 0, or a part
	// and a cursor. Only where the runner saw a hashtable (encPeek); in
	// MULTI, where it cannot look, the generator asks for COUNT 100 and
	// both return the whole set.
	{"SSCAN of a large hashtable set is partial, in the dict's order", true, func(st wstep, want, got []byte) bool {
		return strings.EqualFold(st.args[0], "sscan") && st.hashtable &&
			bytes.HasPrefix(got, []byte("*2\r\n$")) && bytes.HasPrefix(want, []byte("*2\r\n$"))
	}},
	// EVAL "return redis.call('blpop', KEYS[1], 0)" 1 l
	//   redis:   -ERR This Redis command is not allowed from script script: ...
	//   tumbler: _  (or the popped element)
	// BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN and BZPOPMAX are
	// "noscript" in 7.0 (BLMPOP and BZMPOP are not). tumbler reports
	// 7.2.4 and follows Redis 7.2 here (redis #11568): a script may call
	// them, and they never block.
	{"blocking list commands run from scripts", false, func(st wstep, want, got []byte) bool {
		return bytes.Contains(want, []byte("This Redis command is not allowed from script")) &&
			!bytes.Contains(got, []byte("not allowed from script")) &&
			containsAny(strings.ToLower(st.body), "blpop", "brpop", "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "call(argv[1]", "pcall(argv[1]")
	}},
	knownZrankArity,
}

// knownZrankArity: ZRANK z a x (or ZREVRANK), a fourth argument
//
//	redis:   -ERR wrong number of arguments for 'zrank' command
//	tumbler: -ERR syntax error (WITHSCORE: the rank and score)
//
// tumbler takes Redis 7.2's ZRANK ... WITHSCORE (it reports 7.2; arity
// -3, cmdinfo_test's redis72Arity), where 7.0's arity is 3. Not
// stateless: inside MULTI, Redis refuses to queue it (EXECABORT), where
// tumbler queues it and EXEC runs the transaction.
var knownZrankArity = knownWide{"ZRANK and ZREVRANK take 7.2's WITHSCORE", false, func(st wstep, want, got []byte) bool {
	return len(st.args) == 4 && (strings.EqualFold(st.args[0], "zrank") || strings.EqualFold(st.args[0], "zrevrank")) &&
		string(want) == "-ERR wrong number of arguments for '"+strings.ToLower(st.args[0])+"' command\r\n" &&
		(string(got) == "-ERR syntax error\r\n" || string(got) == "+QUEUED\r\n" || strings.EqualFold(st.args[3], "withscore"))
}}

// knownSortErrno: SORT l (or SORT_RO, or BY a pattern), numbers only
//
//	redis:   -ERR One or more scores can't be converted into double
//	tumbler: the sorted elements
//
// Redis's sortCommandGeneric tests errno == ERANGE after strtod without
// clearing errno first, so an ERANGE left behind by an earlier command (a
// score or float that overflowed) fails every numeric SORT until some
// other call sets errno again. A Redis bug tumbler does not copy. Not
// stateless: with STORE, Redis stores nothing.
var knownSortErrno = knownWide{"SORT sees a stale ERANGE in Redis", false, func(st wstep, want, got []byte) bool {
	return containsAny(strings.ToLower(st.args[0]), "sort") && string(want) == "-"+"ERR One or more scores can't be converted into double\r\n" &&
		!bytes.HasPrefix(got, []byte("-"))
}}

// wideBugs are the differences this test found that are tumbler bugs
// (or gaps), not fixed yet. Like knownRandomDiffBugs they keep the test
// green; remove an entry once fixed. Each has a minimal reproduction.
var wideBugs = []knownWide{
	// BLPOP l inf   (l missing or not)
	//   redis: -ERR timeout is negative; tumbler: -ERR timeout is out of range
	// Redis converts timeout*1000 (a long double, inf or > 2^63) to long
	// long: x86 gives LLONG_MIN.
	{"huge blocking timeout error text", true, func(st wstep, want, got []byte) bool {
		return string(want) == "-ERR timeout is negative\r\n" && string(got) == "-ERR timeout is out of range\r\n"
	}},
	// LPOS l a RANK -9223372036854775808
	//   redis 7.0: nil (takes it); tumbler: -ERR value is out of range, value must between ...
	// (tumbler has 7.2's check)
	{"LPOS RANK LLONG_MIN", true, func(st wstep, want, got []byte) bool {
		return bytes.Contains(got, []byte("value must between -9223372036854775807")) && containsAny(strings.Join(st.args, " "), "-9223372036854775808")
	}},
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// sameBut reports whether want and got are the same reply but for
// leaves (non-aggregates) where leaf holds.
func sameBut(want, got []byte, leaf func(w, g []byte) bool) bool {
	hw, ew, ok1 := Elements(want)
	hg, eg, ok2 := Elements(got)
	if ok1 && ok2 {
		if !bytes.Equal(hw, hg) || len(ew) != len(eg) {
			return false
		}
		for i := range ew {
			if !bytes.Equal(ew[i], eg[i]) && !sameBut(ew[i], eg[i], leaf) {
				return false
			}
		}
		return true
	}
	return leaf(want, got)
}

func bulkText(raw []byte) (string, bool) {
	if len(raw) < 4 || raw[0] != '$' {
		return "", false
	}
	i := bytes.Index(raw, []byte("\r\n"))
	if i < 0 || len(raw) < i+4 {
		return "", false
	}
	return string(raw[i+2 : len(raw)-2]), true
}

// luaWordingOnly reports whether want and got are errors of one script
// run that differ only in how the Lua VM words the error (see
// knownWideDiffs).
func luaWordingOnly(want, got []byte) bool {
	if len(want) < 3 || len(got) < 3 || want[0] != '-' || got[0] != '-' {
		return false
	}
	w, g := string(want[1:len(want)-2]), string(got[1:len(got)-2])
	if strings.HasPrefix(w, "ERR Error compiling script") && strings.HasPrefix(g, "ERR Error compiling script") {
		return true
	}
	wi, gi := strings.LastIndex(w, " script: "), strings.LastIndex(g, " script: ")
	if wi < 0 || gi < 0 || w[wi:] != g[gi:] {
		return false
	}
	w, g = w[:wi], g[:gi]
	switch {
	case strings.Contains(w, "bad argument #") && (strings.Contains(g, "bad argument #") || strings.Contains(g, "wrong number of arguments")):
		return true
	case containsAny(w, "malformed pattern", "unfinished capture", "invalid capture index", "invalid pattern capture", "missing '['"):
		return true
	case strings.Contains(w, "attempt to concatenate") && strings.Contains(g, "cannot perform concat operation"):
		return true // eval.txt has the arithmetic twin ("cannot perform add operation")
	}
	// the function's name quoted or not
	if strings.ReplaceAll(w, "'", "") == strings.ReplaceAll(g, "'", "") {
		return true
	}
	// a position prefix ("user_script:1: ") where Lua 5.1 raises from C
	return strings.HasPrefix(w, "ERR ") && strings.HasPrefix(g, "ERR user_script:") &&
		strings.HasSuffix(g, ": "+strings.TrimPrefix(w, "ERR ")) && strings.HasPrefix(w, "ERR attempt to ")
}

func matchKnownWide(st wstep, want, got []byte) (name string, stateless bool) {
	for _, list := range [][]knownWide{knownWideDiffs, wideBugs} {
		for _, k := range list {
			if k.match(st, want, got) {
				return k.name, k.stateless
			}
		}
	}
	return "", false
}

// ---- the runner ----

// wstep is one generated command.
type wstep struct {
	conn      int // which of the two connections sends it
	args      []string
	tol       int64  // > 0: clock-like integers (TTL, PTTL) may differ by this much
	unordered bool   // aggregates compare as multisets (KEYS, hashtable hashes, Lua maps)
	tag       string // "float-text": an EVAL whose reply may be a number's text
	tmpl      string // the script family (wideScript.name) of an EVAL
	// fixedArity: never drop or add an argument (SPOP and SRANDMEMBER
	// without their count draw at random)
	fixedArity bool
	body       string // an EVAL's script, also for EVALSHA
	// encPeek: keys of a hash reply (HGETALL, HKEYS, HVALS, or a script
	// returning one) whose order is compared only while listpack-encoded,
	// or of a set SSCAN scans
	encPeek []string
	// hashtable: the runner saw an encPeek key hashtable-encoded
	hashtable bool
	// A blocking command: the keys whose existence keeps it from
	// blocking, and the index of its timeout argument.
	peek []string
	tIdx int
}

type wideMismatch struct {
	run       randomRun
	step      int
	st        wstep
	want, got []byte
	why       string
	history   []wideHistory
	dump      string // TUMBLER_DIFF_WIDE_DUMP=1: both keyspaces after the mismatch
	culprit   *wstep // for an EXEC: the queued command whose reply differs
}

type wideHistory struct {
	step       int
	st         wstep
	want, got  []byte
	mismatched bool
}

func (m wideMismatch) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (%s) step %d conn %d: %s: %s\n  redis:   %q\n  tumbler: %q\n",
		m.run.seed, m.run.proto(), m.step, m.st.conn, showFull(m.st.args), m.why, m.want, m.got)
	if m.culprit != nil {
		fmt.Fprintf(&b, "  the differing EXEC element is the reply to: %s (%s)\n", showFull(m.culprit.args), m.culprit.tmpl)
	}
	if m.st.tmpl != "" || m.st.tag != "" {
		fmt.Fprintf(&b, "  script family: %s %s\n", m.st.tmpl, m.st.tag)
	}
	fmt.Fprintf(&b, "  preceding commands:\n")
	if len(m.history) == 0 {
		fmt.Fprintf(&b, "    (none)\n")
	}
	for _, h := range m.history {
		if h.mismatched {
			fmt.Fprintf(&b, "    step %d conn %d: %s -> redis %q, tumbler %q\n", h.step, h.st.conn, showFull(h.st.args), h.want, h.got)
		} else {
			fmt.Fprintf(&b, "    step %d conn %d: %s -> %q\n", h.step, h.st.conn, showFull(h.st.args), h.want)
		}
	}
	b.WriteString(m.dump)
	resp3 := " TUMBLER_DIFF_WIDE_RESP3=0"
	if m.run.resp3 {
		resp3 = " TUMBLER_DIFF_WIDE_RESP3=1"
	}
	fmt.Fprintf(&b, "  rerun: TUMBLER_REQUIRE_REDIS=1 TUMBLER_DIFF_WIDE_SEED=%d TUMBLER_DIFF_WIDE_STEPS=%d%s go test -run TestRandomDiffWide ./diff/",
		m.run.seed, m.step+1, resp3)
	return b.String()
}

// showFull is show without clipping (scripts are the point here), up to
// 400 bytes an argument.
func showFull(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 400 {
			a = a[:397] + "..."
		}
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// wideSession holds two connections to each server.
type wideSession struct {
	resp3          bool
	redis, tumbler target
	rc, tc         [2]*conn
}

func (s *wideSession) open() error {
	s.close()
	for i := 0; i < 2; i++ {
		var err error
		if s.rc[i], err = s.redis.open(); err != nil {
			return err
		}
		if s.tc[i], err = s.tumbler.open(); err != nil {
			return err
		}
		if s.resp3 {
			for _, c := range []*conn{s.rc[i], s.tc[i]} {
				r, err := c.do("HELLO", "3")
				if err != nil || len(r) == 0 || r[0] != '%' {
					return fmt.Errorf("HELLO 3: %q %v", r, err)
				}
			}
		}
	}
	return nil
}

func (s *wideSession) close() {
	for i := 0; i < 2; i++ {
		if s.rc[i] != nil {
			s.rc[i].close()
			s.rc[i] = nil
		}
		if s.tc[i] != nil {
			s.tc[i].close()
			s.tc[i] = nil
		}
	}
}

// resync brings both servers back to the same state after a mismatch:
// no transaction, nothing watched, an empty keyspace and script cache.
// When a connection does not answer as expected, all are reopened.
func (s *wideSession) resync() error {
	for i := 0; i < 2; i++ {
		for _, c := range []*conn{s.rc[i], s.tc[i]} {
			if _, err := c.do("DISCARD"); err != nil {
				return s.open()
			}
			if r, err := c.do("UNWATCH"); err != nil || string(r) != "+OK\r\n" {
				return s.open()
			}
		}
	}
	for _, c := range []*conn{s.rc[0], s.tc[0]} {
		for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}} {
			if r, err := c.do(cmd...); err != nil || string(r) != "+OK\r\n" {
				return s.open()
			}
		}
	}
	return nil
}

// dumpKeyspace lists every key of tg with its type, value and TTL, on a
// fresh connection (the test's may be inside MULTI), for debugging a
// divergence.
func dumpKeyspace(tg target) string {
	c, err := dial(tg.addr)
	if err != nil {
		return fmt.Sprintf("    (%v)\n", err)
	}
	defer c.close()
	r, err := c.do("KEYS", "*")
	if err != nil {
		return fmt.Sprintf("    (%v)\n", err)
	}
	_, elems, _ := Elements(r)
	var keys []string
	for _, e := range elems {
		if k, ok := bulkText(e); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := c.do("TYPE", k)
		var val []byte
		switch strings.TrimSpace(string(typ)) {
		case "+string":
			val, _ = c.do("GET", k)
		case "+list":
			val, _ = c.do("LRANGE", k, "0", "-1")
		case "+hash":
			val, _ = c.do("HGETALL", k)
		}
		ttl, _ := c.do("TTL", k)
		enc, _ := c.do("OBJECT", "ENCODING", k)
		fmt.Fprintf(&b, "    %q %q %q ttl %q enc %q\n", k, typ, val, ttl, enc)
	}
	return b.String()
}

// existsCount is EXISTS keys... on c, or 0 on any failure.
func existsCount(c *conn, keys []string) int64 {
	r, err := c.do(append([]string{"EXISTS"}, keys...)...)
	if err != nil {
		return 0
	}
	n, ok := integerOf(r)
	if !ok || r[0] != ':' {
		return 0
	}
	return n
}

type wideResult struct {
	steps      int
	mismatches []wideMismatch
	guarded    map[string]int
}

func (r wideResult) guardedTotal() int {
	n := 0
	for _, v := range r.guarded {
		n += v
	}
	return n
}

func runWide(run randomRun, redis, tumbler target, now func() time.Time, limit int, logf func(string, ...any)) (wideResult, error) {
	res := wideResult{guarded: map[string]int{}}
	s := &wideSession{resp3: run.resp3, redis: redis, tumbler: tumbler}
	if err := s.open(); err != nil {
		return res, err
	}
	defer s.close()
	g := newWideGen(run.seed, now)
	var history []wideHistory
	for i := 0; i < run.steps; i++ {
		st := g.next()
		if st.encPeek != nil && !g.conns[st.conn].inMulti {
			// HGETALL and friends: only a listpack's order is defined.
			for _, k := range st.encPeek {
				if r, err := s.rc[st.conn].do("OBJECT", "ENCODING", k); err == nil && bytes.Contains(r, []byte("hashtable")) {
					st.unordered, st.hashtable = true, true
				}
			}
		}
		if st.peek != nil && !g.conns[st.conn].inMulti {
			// Would it block? Ask both; any doubt makes it non-blocking.
			if existsCount(s.rc[st.conn], st.peek) == 0 || existsCount(s.tc[st.conn], st.peek) == 0 {
				if !safeEmptyTimeout(st.args[st.tIdx]) {
					st.args[st.tIdx] = g.emptyTimeout()
				}
			}
		}
		want, err := s.rc[st.conn].do(st.args...)
		if err != nil {
			return res, fmt.Errorf("step %d: %s: redis: %v", i, show(st.args), err)
		}
		got, err := s.tc[st.conn].do(st.args...)
		broken := false
		if err != nil {
			got = []byte(fmt.Sprintf("<tumbler: %v>", err))
			broken = true
		}
		var queued []wstep
		if isExec(st) {
			queued = g.conns[st.conn].queuedSteps
		}
		g.observe(st, want)
		res.steps++
		if logf != nil {
			logf("step %d conn %d: %s\n  redis:   %q\n  tumbler: %q", i, st.conn, show(st.args), want, got)
		}
		mismatch := false
		if why := compareWide(st, want, got); why != "" && !(isExec(st) && execAgrees(queued, want, got)) {
			mismatch = true
			k, culprit, stateless := classifyWide(st, queued, want, got)
			if k != "" {
				res.guarded[k]++
			} else {
				res.mismatches = append(res.mismatches, wideMismatch{
					run: run, step: i, st: st, want: want, got: got, why: why, culprit: culprit,
					history: append([]wideHistory(nil), history...),
				})
				if os.Getenv("TUMBLER_DIFF_WIDE_DUMP") == "1" {
					m := &res.mismatches[len(res.mismatches)-1]
					m.dump = "  redis keyspace:\n" + dumpKeyspace(redis) + "  tumbler keyspace:\n" + dumpKeyspace(tumbler)
				}
			}
			// A known difference in a reply alone leaves the servers'
			// states in agreement; anything else resynchronises them.
			if !stateless || broken {
				var err error
				if broken {
					err = s.open()
				} else {
					err = s.resync()
				}
				if err != nil {
					return res, fmt.Errorf("step %d: resync: %v", i, err)
				}
				g.reset()
			}
		}
		history = append(history, wideHistory{step: i, st: st, want: want, got: got, mismatched: mismatch})
		if len(history) > 8 {
			history = history[1:]
		}
		if len(res.mismatches) >= limit {
			break
		}
	}
	return res, nil
}

func isExec(st wstep) bool { return strings.EqualFold(st.args[0], "exec") }

// execAgrees reports whether an EXEC's replies agree element by element,
// each compared as its queued command's own (compareWide): the EXEC's
// step carries every queued command's tolerance and order-freedom at
// once, and a clock-like PTTL beside a hashtable's HKEYS agrees neither
// exactly, nor as a multiset.
func execAgrees(queued []wstep, want, got []byte) bool {
	_, ew, ok1 := Elements(want)
	_, eg, ok2 := Elements(got)
	if !ok1 || !ok2 || len(ew) != len(eg) || len(ew) != len(queued) || want[0] != got[0] {
		return false
	}
	for i := range ew {
		if compareWide(queued[i], ew[i], eg[i]) != "" {
			return false
		}
	}
	return true
}

// classifyWide looks a mismatch up in knownWideDiffs and wideBugs. An
// EXEC's reply is taken apart: each differing element is matched against
// the command queued for it, and culprit is the first one no entry
// explains. stateless: every matching entry is a reply difference only.
func classifyWide(st wstep, queued []wstep, want, got []byte) (name string, culprit *wstep, stateless bool) {
	if isExec(st) && len(queued) > 0 {
		_, ew, ok1 := Elements(want)
		_, eg, ok2 := Elements(got)
		if ok1 && ok2 && len(ew) == len(eg) && len(ew) == len(queued) && want[0] == got[0] {
			stateless = true
			for i := range ew {
				if compareWide(queued[i], ew[i], eg[i]) == "" {
					continue
				}
				k, sl := matchKnownWide(queued[i], ew[i], eg[i])
				if k == "" {
					if !stateless {
						// an element before left the servers' states
						// apart (a known difference that is not in the
						// reply alone): what the commands after it see
						// differs with it
						continue
					}
					return "", &queued[i], false
				}
				name, stateless = k, stateless && sl
			}
			return name, nil, stateless
		}
	}
	name, stateless = matchKnownWide(st, want, got)
	return name, nil, stateless
}

func compareWide(st wstep, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	if st.unordered && SameMultiset(want, got) {
		return ""
	}
	if st.tol > 0 && approxClock(want, got, st.tol) {
		return ""
	}
	if st.tol > 0 {
		return fmt.Sprintf("replies differ (time-dependent, tolerance ±%d)", st.tol)
	}
	return "replies differ"
}

// approxClock is Approx where only clock-like integers (|n| >= 900) may
// differ, at any depth.
func approxClock(a, b []byte, tol int64) bool {
	if x, ok := integerOf(a); ok {
		y, ok := integerOf(b)
		if !ok || a[0] != b[0] {
			return false
		}
		if x == y {
			return true
		}
		d := x - y
		return clockLike(x) && clockLike(y) && d >= -tol && d <= tol
	}
	ha, ea, ok1 := Elements(a)
	hb, eb, ok2 := Elements(b)
	if !ok1 || !ok2 {
		return bytes.Equal(a, b)
	}
	if !bytes.Equal(ha, hb) || len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if !approxClock(ea[i], eb[i], tol) {
			return false
		}
	}
	return true
}

// ---- the generator ----

type wideConnState struct {
	inMulti     bool
	queued      int
	queuedSteps []wstep
	tol         int64
	unordered   bool
}

type wideGen struct {
	*cmdGen
	conns [2]wideConnState
}

func newWideGen(seed uint64, now func() time.Time) *wideGen {
	return &wideGen{cmdGen: newCmdGen(seed^0x5769_6465, now)}
}

// reset forgets the connections' state (after a resync).
func (g *wideGen) reset() { g.conns = [2]wideConnState{} }

// observe follows the transaction state from Redis's reply.
func (g *wideGen) observe(st wstep, reply []byte) {
	cs := &g.conns[st.conn]
	name := strings.ToLower(st.args[0])
	switch {
	case name == "multi" && string(reply) == "+OK\r\n":
		*cs = wideConnState{inMulti: true}
	case cs.inMulti && (name == "exec" || name == "discard"):
		if !bytes.HasPrefix(reply, []byte("-ERR wrong number of arguments")) {
			*cs = wideConnState{}
		}
	case cs.inMulti && string(reply) == "+QUEUED\r\n":
		cs.queued++
		cs.queuedSteps = append(cs.queuedSteps, st)
	}
}

var (
	wStrKeys  = []string{"s:1", "s:2", "s:3"}
	wListKeys = []string{"l:1", "l:2", "l:3"}
	wHashKeys = []string{"h:1", "h:2"}
	wZsetKeys = []string{"z:1", "z:2"}
	wSetKeys  = []string{"t:1", "t:2", "t:3"}
	wBigHash  = "h:big"
	wNoKey    = "none"

	// wValues are short (≤ 45 bytes) values: only HINCRBYFLOAT (whose
	// results can run to 309 bytes) and h:big's long values make a hash
	// hashtable-encoded.
	wValues = []string{"a", "b", "c", "pivot", "x y", "", "0", "1", "-1", "10", "42", "007", "3.5", "-0", "+1", " 1",
		"1e3", "0x10", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "10000", "9999",
		"line\r\nbreak", "\x00\xff", "é", strings.Repeat("v", 44), strings.Repeat("w", 45), "inf", "nan", "1.5e308"}
	wFields = []string{"f1", "f2", "f3", "a", "", "10", "é"}

	// wInts are integer arguments, valid and not.
	wInts = []string{"0", "1", "2", "3", "-1", "-2", "-3", "5", "10", "-10", "100", "-100", "abc", "", "1.5",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		" 1", "+1", "-0", "01", "0x1", "1e1", "4294967296", "2147483648", "-2147483649"}
	wSmallInts = []string{"0", "1", "2", "-1", "-2", "3", "5", "-5", "20"}
)

func (g *wideGen) strKey() string  { return wStrKeys[g.r.IntN(len(wStrKeys))] }
func (g *wideGen) listKey() string { return wListKeys[g.r.IntN(len(wListKeys))] }
func (g *wideGen) hashKey() string { return wHashKeys[g.r.IntN(len(wHashKeys))] }
func (g *wideGen) zsetKey() string { return wZsetKeys[g.r.IntN(len(wZsetKeys))] }
func (g *wideGen) setKey() string  { return wSetKeys[g.r.IntN(len(wSetKeys))] }

// anyKey is any key of the keyspace.
func (g *wideGen) anyKey() string {
	switch n := g.r.IntN(24); {
	case n < 7:
		return g.strKey()
	case n < 13:
		return g.listKey()
	case n < 18:
		return g.hashKey()
	case n < 20:
		return g.zsetKey()
	case n < 22:
		return g.setKey()
	case n < 23:
		return wBigHash
	default:
		return wNoKey
	}
}

// scriptKey is any key but h:big: a script's hash reply then mostly
// keeps a comparable (listpack) order.
func (g *wideGen) scriptKey() string {
	for {
		if k := g.anyKey(); k != wBigHash {
			return k
		}
	}
}

// typedKey is usually a key of the given kind, else any key (wrong
// types).
func (g *wideGen) typedKey(kind byte) string {
	if g.chance(0.85) {
		switch kind {
		case 's':
			return g.strKey()
		case 'l':
			return g.listKey()
		case 'h':
			return g.hashKey()
		case 'z':
			return g.zsetKey()
		case 't':
			return g.setKey()
		}
	}
	return g.anyKey()
}

func (g *wideGen) anyKeys(min, max int) []string {
	n := min + g.r.IntN(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.anyKey()
	}
	return out
}

func (g *wideGen) val() string   { return wValues[g.r.IntN(len(wValues))] }
func (g *wideGen) field() string { return wFields[g.r.IntN(len(wFields))] }
func (g *wideGen) intArg() string {
	if g.chance(0.6) {
		return wSmallInts[g.r.IntN(len(wSmallInts))]
	}
	return wInts[g.r.IntN(len(wInts))]
}

// dir is a LEFT/RIGHT argument, rarely something else.
func (g *wideGen) dir() string {
	if g.chance(0.04) {
		return g.pick("UP", "", "LEFTX")
	}
	return g.kw(g.pick("LEFT", "RIGHT"))
}

// next generates the next command.
func (g *wideGen) next() wstep {
	c := 0
	if g.chance(0.25) {
		c = 1
	}
	cs := &g.conns[c]
	if cs.inMulti {
		if g.chance(0.12 + 0.06*float64(cs.queued)) {
			st := wstep{args: []string{g.kw("EXEC")}}
			switch n := g.r.IntN(20); {
			case n < 2:
				st.args[0] = g.kw("DISCARD")
			case n < 3:
				st.args = append(st.args, "extra")
			}
			st.conn, st.tol, st.unordered = c, cs.tol, cs.unordered
			return st
		}
	}
	st := g.command(cs.inMulti)
	if cs.inMulti && isExec(st) {
		st.tol, st.unordered = cs.tol, cs.unordered
	}
	if st.peek == nil && !st.fixedArity {
		// wrong arity now and then: a missing last or an extra argument
		if g.chance(0.03) && len(st.args) > 1 {
			st.args = st.args[:len(st.args)-1]
		} else if g.chance(0.02) {
			st.args = append(st.args, g.pick("extra", "NX", "0", "GET", "COUNT"))
		}
	}
	st.conn = c
	if cs.inMulti {
		if st.tol > cs.tol {
			cs.tol = st.tol
		}
		cs.unordered = cs.unordered || st.unordered
	}
	return st
}

func (g *wideGen) command(inMulti bool) wstep {
	switch n := g.r.IntN(108); {
	case n >= 100:
		return g.bitCmd() // random_bits_test.go
	case n < 13:
		return g.stringCmd()
	case n < 28:
		return g.listCmd()
	case n < 30:
		return g.blockingCmd()
	case n < 42:
		return g.hashCmd(inMulti)
	case n < 45:
		return g.zsetCmd()
	case n < 48:
		return g.setCmd(inMulti)
	case n < 50:
		if g.chance(0.3) {
			return g.sortCmd()
		}
		return g.keyspaceCmd(inMulti)
	case n < 58:
		return g.txCmd(inMulti)
	case n < 61:
		return g.scriptCmd()
	default:
		return g.evalCmd()
	}
}

// ---- transactions ----

func (g *wideGen) txCmd(inMulti bool) wstep {
	var args []string
	switch n := g.r.IntN(20); {
	case n < 8:
		args = []string{g.kw("MULTI")}
	case n < 12:
		args = append([]string{g.kw("WATCH")}, g.anyKeys(1, 3)...)
	case n < 14:
		args = []string{g.kw("UNWATCH")}
	case n < 16:
		args = []string{g.kw("EXEC")}
	case n < 17:
		args = []string{g.kw("DISCARD")}
	case n < 18:
		args = []string{g.kw("WATCH")}
	case n < 19:
		// errors that abort a transaction when queued
		args = []string{g.pick("NOSUCHCMD", "GETT", "MULT"), g.anyKey()}
	default:
		args = []string{g.kw("GET")} // arity
	}
	return wstep{args: args}
}

// ---- strings ----

func (g *wideGen) stringCmd() wstep {
	k := g.typedKey('s')
	var args []string
	switch n := g.r.IntN(30); {
	case n < 3:
		args = []string{g.kw(g.pick("GETRANGE", "SUBSTR")), k, g.intArg(), g.intArg()}
	case n < 7:
		args = []string{g.kw(g.pick("INCRBY", "DECRBY")), k, g.intArg()}
		if g.chance(0.3) {
			args[2] = g.pick("9223372036854775807", "-9223372036854775808", "-9223372036854775807", "1", "-1")
		}
	case n < 9:
		args = []string{g.kw(g.pick("INCR", "DECR")), k}
	case n < 12:
		args = g.wGetex(k)
	case n < 17:
		args = g.wSet(k)
	case n < 19:
		args = []string{g.kw("MSETNX")}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.anyKey(), g.val())
		}
		if g.chance(0.1) {
			args = args[:len(args)-1]
		}
	case n < 20:
		args = []string{g.kw("MSET")}
		for i := 1 + g.r.IntN(2); i > 0; i-- {
			args = append(args, g.strKey(), g.val())
		}
	case n < 22:
		args = []string{g.kw("APPEND"), k, g.val()}
	case n < 24:
		args = []string{g.kw("GET"), k}
	case n < 25:
		args = []string{g.kw("STRLEN"), k}
	case n < 26:
		args = []string{g.kw(g.pick("GETSET", "SETNX")), k, g.val()}
	case n < 27:
		args = []string{g.kw("GETDEL"), k}
	case n < 28:
		args = append([]string{g.kw("MGET")}, g.anyKeys(1, 4)...)
	default:
		if g.chance(0.5) {
			args = []string{g.kw("SETEX"), k, g.relSec(), g.val()}
		} else {
			args = []string{g.kw("PSETEX"), k, g.relMs(), g.val()}
		}
	}
	return wstep{args: args}
}

// wSet is SET with option combinations, GET/KEEPTTL/EXAT in particular.
func (g *wideGen) wSet(k string) []string {
	args := []string{g.kw("SET"), k, g.val()}
	opts := []string{"NX", "XX", "GET", "GET", "KEEPTTL", "KEEPTTL", "EX", "PX", "EXAT", "EXAT", "PXAT", "FOO"}
	for n := g.r.IntN(4); n > 0; n-- {
		switch o := opts[g.r.IntN(len(opts))]; o {
		case "EX", "PX", "EXAT", "PXAT":
			args = append(args, g.expiryOpt(o)...)
		default:
			args = append(args, g.kw(o))
		}
	}
	return args
}

func (g *wideGen) wGetex(k string) []string {
	args := []string{g.kw("GETEX"), k}
	for n := g.r.IntN(3); n > 0; n-- {
		switch o := g.pick("EX", "PX", "EXAT", "PXAT", "PERSIST", "PERSIST", "KEEPTTL", "FOO"); o {
		case "PERSIST", "FOO", "KEEPTTL":
			args = append(args, g.kw(o))
		default:
			args = append(args, g.expiryOpt(o)...)
		}
	}
	return args
}

// ---- lists ----

func (g *wideGen) elems(min, max int) []string {
	n := min + g.r.IntN(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.listVal()
	}
	return out
}

// listVal is a list element: mostly a few distinct values, so LPOS, LREM
// and LINSERT find them.
func (g *wideGen) listVal() string {
	if g.chance(0.7) {
		return g.pick("a", "b", "c", "pivot", "1")
	}
	return g.val()
}

func (g *wideGen) listCmd() wstep {
	k := g.typedKey('l')
	var args []string
	switch n := g.r.IntN(40); {
	case n < 7:
		args = append([]string{g.kw(g.pick("LPUSH", "RPUSH", "RPUSH")), k}, g.elems(1, 3)...)
	case n < 9:
		args = append([]string{g.kw(g.pick("LPUSHX", "RPUSHX")), k}, g.elems(1, 2)...)
	case n < 12:
		args = []string{g.kw("LRANGE"), k, g.intArg(), g.intArg()}
		if g.chance(0.4) {
			args[2], args[3] = "0", "-1"
		}
	case n < 14:
		args = []string{g.kw("LINDEX"), k, g.intArg()}
	case n < 16:
		args = []string{g.kw("LINSERT"), k, g.kw(g.pick("BEFORE", "AFTER", "BEFORE", "AFTER", "MIDDLE")), g.listVal(), g.listVal()}
	case n < 19:
		args = []string{g.kw("LPOS"), k, g.listVal()}
		for i := g.r.IntN(4); i > 0; i-- {
			switch o := g.pick("RANK", "RANK", "COUNT", "COUNT", "MAXLEN", "FOO"); o {
			case "FOO":
				args = append(args, g.kw(o))
			default:
				args = append(args, g.kw(o), g.intArg())
			}
		}
	case n < 21:
		args = []string{g.kw("LSET"), k, g.intArg(), g.listVal()}
	case n < 23:
		args = []string{g.kw("LTRIM"), k, g.intArg(), g.intArg()}
	case n < 25:
		args = []string{g.kw("LREM"), k, g.intArg(), g.listVal()}
	case n < 27:
		args = []string{g.kw("LMOVE"), k, g.typedKey('l'), g.dir(), g.dir()}
	case n < 28:
		args = []string{g.kw("RPOPLPUSH"), k, g.typedKey('l')}
	case n < 31:
		args = g.lmpop("LMPOP", 0)
	case n < 36:
		args = []string{g.kw(g.pick("LPOP", "RPOP")), k}
		if g.chance(0.5) {
			args = append(args, g.intArg())
		}
	default:
		args = []string{g.kw("LLEN"), k}
	}
	return wstep{args: args}
}

// lmpop is [B]LMPOP's arguments after the name: numkeys, keys, a
// direction and an optional COUNT, sometimes malformed. off is 1 for
// BLMPOP (whose timeout the caller inserts first).
func (g *wideGen) lmpop(name string, off int) []string {
	return g.mpop(name, 'l', g.dir)
}

// zmpop is [B]ZMPOP's arguments, as lmpop's, with MIN|MAX.
func (g *wideGen) zmpop(name string) []string {
	return g.mpop(name, 'z', func() string {
		if g.chance(0.04) {
			return g.pick("LEFT", "", "MINX")
		}
		return g.kw(g.pick("MIN", "MAX"))
	})
}

// mpop is the arguments of [B]LMPOP and [B]ZMPOP: numkeys, keys of the
// given kind, where, an optional COUNT.
func (g *wideGen) mpop(name string, kind byte, where func() string) []string {
	keys := make([]string, 1+g.r.IntN(3))
	for i := range keys {
		keys[i] = g.typedKey(kind)
	}
	nk := strconv.Itoa(len(keys))
	if g.chance(0.08) {
		nk = g.pick("0", "-1", "abc", strconv.Itoa(len(keys)+2), "9223372036854775807")
	}
	args := append([]string{g.kw(name), nk}, keys...)
	args = append(args, where())
	if g.chance(0.4) {
		args = append(args, g.kw("COUNT"), g.pick("1", "2", "5", "0", "-1", "abc", "9223372036854775807"))
	}
	if g.chance(0.04) {
		args = append(args, g.kw("COUNT"), "1") // repeated option
	}
	return args
}

// blockingCmd is BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX or BZMPOP. The runner makes sure it cannot block (peek).
func (g *wideGen) blockingCmd() wstep {
	t := g.timeout()
	switch n := g.r.IntN(8); n {
	case 5, 6:
		keys := make([]string, 1+g.r.IntN(2))
		for i := range keys {
			keys[i] = g.typedKey('z')
		}
		args := append(append([]string{g.kw(g.pick("BZPOPMIN", "BZPOPMAX"))}, keys...), t)
		return wstep{args: args, peek: keys, tIdx: len(args) - 1}
	case 7:
		rest := g.zmpop("BZMPOP")
		args := append([]string{rest[0], t}, rest[1:]...)
		return wstep{args: args, peek: keyArgs(args), tIdx: 1}
	case 0, 1:
		keys := make([]string, 1+g.r.IntN(2))
		for i := range keys {
			keys[i] = g.typedKey('l')
		}
		args := append(append([]string{g.kw(g.pick("BLPOP", "BRPOP"))}, keys...), t)
		return wstep{args: args, peek: keys, tIdx: len(args) - 1}
	case 2:
		src := g.typedKey('l')
		args := []string{g.kw("BLMOVE"), src, g.typedKey('l'), g.dir(), g.dir(), t}
		return wstep{args: args, peek: []string{src}, tIdx: 5}
	case 3:
		src := g.typedKey('l')
		return wstep{args: []string{g.kw("BRPOPLPUSH"), src, g.typedKey('l'), t}, peek: []string{src}, tIdx: 3}
	default:
		rest := g.lmpop("BLMPOP", 1)
		args := append([]string{rest[0], t}, rest[1:]...)
		return wstep{args: args, peek: keyArgs(args), tIdx: 1}
	}
}

// keyArgs is the arguments of a generated command that are keys.
func keyArgs(args []string) []string {
	var keys []string
	for _, a := range args {
		if strings.Contains(a, ":") || a == wNoKey {
			keys = append(keys, a)
		}
	}
	return keys
}

// timeout is a blocking command's timeout, valid or not.
func (g *wideGen) timeout() string {
	return g.pick("0", "0", "1", "0.5", "100", "1e3", "0x10", "0.0001", "-1", "-0.5", "abc", "", "inf", "1.5.5", "9223372036854775807")
}

// safeEmptyTimeout reports whether t is a timeout Redis rejects outright,
// so the command cannot block even on missing keys.
func safeEmptyTimeout(t string) bool {
	switch t {
	case "-1", "-0.5", "abc", "", "1.5.5":
		return true
	}
	return false
}

// emptyTimeout replaces the timeout of a command that could block:
// mostly one Redis rejects, sometimes a 10 ms wait (rare: it costs the
// time).
func (g *wideGen) emptyTimeout() string {
	if g.chance(0.1) {
		return "0.01"
	}
	return g.pick("-1", "abc", "-0.5", "", "1.5.5")
}

// ---- hashes ----

func (g *wideGen) hashCmd(inMulti bool) wstep {
	k := g.typedKey('h')
	big := false
	if g.chance(0.08) {
		k, big = wBigHash, true
	}
	hv := func() string {
		if big && g.chance(0.3) {
			return strings.Repeat("L", 65+g.r.IntN(10))
		}
		return g.val()
	}
	var args, encPeek []string
	unordered := false
	switch n := g.r.IntN(40); {
	case n < 8:
		args = []string{g.kw(g.pick("HSET", "HSET", "HMSET")), k}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.field(), hv())
		}
		if g.chance(0.08) {
			args = args[:len(args)-1]
		}
	case n < 10:
		args = []string{g.kw("HSETNX"), k, g.field(), hv()}
	case n < 13:
		args = []string{g.kw("HGET"), k, g.field()}
	case n < 15:
		args = []string{g.kw("HMGET"), k}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.field())
		}
	case n < 21:
		args = []string{g.kw(g.pick("HGETALL", "HKEYS", "HVALS")), k}
		// compared in order only while listpack-encoded: the runner
		// asks (encPeek); in MULTI it cannot, so EXEC compares as a
		// multiset
		encPeek = []string{k}
		unordered = inMulti
	case n < 23:
		args = []string{g.kw("HLEN"), k}
	case n < 25:
		args = []string{g.kw("HEXISTS"), k, g.field()}
	case n < 27:
		args = []string{g.kw("HSTRLEN"), k, g.field()}
	case n < 31:
		args = []string{g.kw("HINCRBY"), k, g.field(), g.intArg()}
		if g.chance(0.3) {
			args[3] = g.pick("9223372036854775807", "-9223372036854775808", "1", "-1")
		}
	case n < 34:
		args = []string{g.kw("HINCRBYFLOAT"), k, g.field(),
			g.pick("1", "0.1", "-1.5", "1e308", "-1e308", "inf", "nan", "abc", "", "3.0", "1e-5", "0x10", " 1", "5.0e3", "-0", "1.7976931348623157e308", "10.5000")}
	default:
		args = []string{g.kw("HDEL"), k}
		for i := 1 + g.r.IntN(2); i > 0; i-- {
			args = append(args, g.field())
		}
	}
	return wstep{args: args, unordered: unordered, encPeek: encPeek}
}

// ---- keyspace ----

// ---- sorted sets ----

var (
	wScores    = []string{"1", "2", "-1", "0", "1.5", "-0", "inf", "-inf", "+inf", "abc", "nan", "1e400", "0x10", "3.0", "(1", " 1", "2.5e-3", "1e-400"}
	wZMembers  = []string{"a", "b", "c", "d", "x", "", "10", "é"}
	wBounds    = []string{"-inf", "+inf", "(1", "1", "2", "(2", "0", "abc", "", "(", "5", "(-inf", "nan", "1e400"}
	wLexBounds = []string{"-", "+", "[a", "(a", "[c", "(c", "a", "", "[", "(", "[b", "(d"}
)

func (g *wideGen) zmember() string {
	if g.chance(0.02) {
		return strings.Repeat("m", 65) // converts the set to a skip list
	}
	return g.pick(wZMembers...)
}

// wLexKey is the sorted set the lex range commands read: its members all
// score 0, where lex order is defined (over mixed scores Redis's skip
// list answers by its random levels).
const wLexKey = "z:lex"

func (g *wideGen) zsetCmd() wstep {
	k := g.typedKey('z')
	lexKey := wLexKey
	if g.chance(0.1) {
		lexKey = g.anyKey() // wrong types, missing keys
	}
	var args []string
	switch n := g.r.IntN(58); {
	case n < 2:
		args = []string{g.kw("ZADD"), wLexKey}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, "0", g.zmember())
		}
	case n < 10:
		args = []string{g.kw("ZADD"), k}
		for _, opt := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
			if g.chance(0.12) {
				args = append(args, g.kw(opt))
			}
		}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.pick(wScores...), g.zmember())
		}
	case n < 13:
		args = []string{g.kw("ZINCRBY"), k, g.pick(wScores...), g.zmember()}
	case n < 15:
		args = []string{g.kw("ZREM"), k, g.zmember(), g.zmember()}
	case n < 17:
		args = []string{g.kw(g.pick("ZCARD", "ZSCORE", "ZRANK", "ZREVRANK")), k}
		if !strings.EqualFold(args[0], "zcard") {
			args = append(args, g.zmember())
		}
	case n < 18:
		args = []string{g.kw("ZMSCORE"), k, g.zmember(), g.zmember()}
	case n < 20:
		args = []string{g.kw("ZCOUNT"), k, g.pick(wBounds...), g.pick(wBounds...)}
	case n < 21:
		args = []string{g.kw("ZLEXCOUNT"), lexKey, g.pick(wLexBounds...), g.pick(wLexBounds...)}
	case n < 28:
		args = append([]string{g.kw("ZRANGE")}, g.zrangeForm(k, lexKey)...)
		if g.chance(0.4) {
			args = append(args, g.kw("WITHSCORES"))
		}
	case n < 32:
		cmd := g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZREVRANGE")
		switch cmd {
		case "ZRANGEBYLEX", "ZREVRANGEBYLEX":
			args = []string{g.kw(cmd), lexKey, g.pick(wLexBounds...), g.pick(wLexBounds...)}
		case "ZREVRANGE":
			args = []string{g.kw(cmd), k, g.pick(wSmallInts...), g.pick(wSmallInts...)}
		default:
			args = []string{g.kw(cmd), k, g.pick(wBounds...), g.pick(wBounds...)}
		}
		if g.chance(0.3) {
			args = append(args, g.kw("WITHSCORES"))
		}
		if g.chance(0.3) {
			args = append(args, g.kw("LIMIT"), g.pick(wSmallInts...), g.pick(wSmallInts...))
		}
	case n < 35:
		switch cmd := g.pick("ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX"); cmd {
		case "ZREMRANGEBYSCORE":
			args = []string{g.kw(cmd), k, g.pick(wBounds...), g.pick(wBounds...)}
		case "ZREMRANGEBYRANK":
			args = []string{g.kw(cmd), k, g.pick(wSmallInts...), g.pick(wSmallInts...)}
		default:
			args = []string{g.kw(cmd), lexKey, g.pick(wLexBounds...), g.pick(wLexBounds...)}
		}
	case n < 42:
		args = []string{g.kw(g.pick("ZPOPMIN", "ZPOPMAX")), k}
		if g.chance(0.5) {
			args = append(args, g.pick(wSmallInts...))
		}
	case n < 50:
		args = g.zsetOpArgs()
	case n < 53:
		args = g.zrangestoreArgs(lexKey)
	case n < 55:
		// a count past the set's size: the whole set, highest first, not
		// a random part
		args = []string{g.kw("ZRANDMEMBER"), k, g.pick("100", "100", "0", "x", "-9223372036854775808")}
		if g.chance(0.4) {
			args = append(args, g.kw(g.pick("WITHSCORES", "WITHSCORES", "NOPE")))
		}
		return wstep{args: args, fixedArity: true}
	default:
		args = g.zmpop("ZMPOP")
	}
	return wstep{args: args}
}

// wWeights are ZUNION/ZINTER weights, valid and not.
var wWeights = []string{"1", "2", "-1", "0", "0.5", "-0", "inf", "-inf", "nan", "abc", "1e400", ""}

// zsetOpArgs is ZUNION, ZINTER, ZDIFF, their STORE forms or ZINTERCARD:
// sorted sets and sets as inputs, WEIGHTS, AGGREGATE, WITHSCORES, LIMIT,
// now and then where the command takes no such option.
func (g *wideGen) zsetOpArgs() []string {
	cmd := g.pick("ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD")
	args := []string{g.kw(cmd)}
	store := strings.HasSuffix(cmd, "STORE")
	if store {
		args = append(args, g.typedKey('z'))
	}
	n := 1 + g.r.IntN(3)
	nk := strconv.Itoa(n)
	if g.chance(0.08) {
		nk = g.pick("0", "-1", "abc", strconv.Itoa(n+2), "9223372036854775807")
	}
	args = append(args, nk)
	for i := 0; i < n; i++ {
		if g.chance(0.2) {
			args = append(args, g.typedKey('t'))
		} else {
			args = append(args, g.typedKey('z'))
		}
	}
	weighted := cmd == "ZUNION" || cmd == "ZINTER" || cmd == "ZUNIONSTORE" || cmd == "ZINTERSTORE"
	if (weighted || g.chance(0.05)) && g.chance(0.35) {
		args = append(args, g.kw("WEIGHTS"))
		for i := 0; i < n; i++ {
			args = append(args, g.pick(wWeights...))
		}
		if g.chance(0.1) {
			args = args[:len(args)-1] // one weight short
		}
	}
	if (weighted || g.chance(0.05)) && g.chance(0.35) {
		args = append(args, g.kw("AGGREGATE"), g.kw(g.pick("SUM", "MIN", "MAX", "MAX", "AVG")))
	}
	if (!store && cmd != "ZINTERCARD" && g.chance(0.5)) || g.chance(0.03) {
		args = append(args, g.kw("WITHSCORES"))
	}
	if (cmd == "ZINTERCARD" && g.chance(0.4)) || g.chance(0.02) {
		args = append(args, g.kw("LIMIT"), g.pick("0", "1", "2", "-1", "x"))
	}
	return args
}

// zrangestoreArgs is ZRANGESTORE with any ZRANGE form, now and then
// WITHSCORES, which it refuses.
func (g *wideGen) zrangestoreArgs(lexKey string) []string {
	args := append([]string{g.kw("ZRANGESTORE"), g.typedKey('z')}, g.zrangeForm(g.typedKey('z'), lexKey)...)
	if g.chance(0.05) {
		args = append(args, g.kw("WITHSCORES"))
	}
	return args
}

// zrangeForm is the arguments of a ZRANGE form: the source k (lexKey
// for BYLEX), a range by rank, score or lex, REV, LIMIT.
func (g *wideGen) zrangeForm(k, lexKey string) []string {
	var lo, hi string
	by := g.pick("", "", "BYSCORE", "BYLEX")
	switch by {
	case "BYSCORE":
		lo, hi = g.pick(wBounds...), g.pick(wBounds...)
	case "BYLEX":
		lo, hi = g.pick(wLexBounds...), g.pick(wLexBounds...)
		k = lexKey
	default:
		lo, hi = g.pick(wSmallInts...), g.pick(wSmallInts...)
	}
	args := []string{k, lo, hi}
	if by != "" {
		args = append(args, g.kw(by))
	}
	if g.chance(0.3) {
		args = append(args, g.kw("REV"))
	}
	if g.chance(0.3) {
		args = append(args, g.kw("LIMIT"), g.pick(wSmallInts...), g.pick(wSmallInts...))
	}
	return args
}

// ---- sets ----

// wSMembers are set members: integers keep a set an intset (whose order
// is defined); the others make it a hashtable, whose replies are
// compared as multisets.
var wSMembers = []string{"1", "2", "3", "-5", "10", "007", "a", "b", "x y", "", "-0"}

func (g *wideGen) setCmd(inMulti bool) wstep {
	k := g.typedKey('t')
	var args, encPeek []string
	unordered := true
	switch n := g.r.IntN(30); {
	case n < 8:
		args = []string{g.kw("SADD"), k}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.pick(wSMembers...))
		}
		unordered = false
	case n < 11:
		args = []string{g.kw("SREM"), k, g.pick(wSMembers...), g.pick(wSMembers...)}
		unordered = false
	case n < 13:
		args = []string{g.kw("SMOVE"), k, g.typedKey('t'), g.pick(wSMembers...)}
		unordered = false
	case n < 16:
		args = []string{g.kw(g.pick("SISMEMBER", "SCARD", "SMEMBERS")), k}
		if strings.EqualFold(args[0], "sismember") {
			args = append(args, g.pick(wSMembers...))
		}
	case n < 17:
		args = []string{g.kw("SMISMEMBER"), k, g.pick(wSMembers...), g.pick(wSMembers...)}
		unordered = false
	case n < 22:
		cmd := g.pick("SINTER", "SUNION", "SDIFF", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE")
		args = []string{g.kw(cmd)}
		if strings.HasSuffix(cmd, "STORE") {
			args = append(args, g.typedKey('t'))
		}
		for i := 1 + g.r.IntN(3); i > 0; i-- {
			args = append(args, g.typedKey('t'))
		}
	case n < 24:
		args = []string{g.kw("SINTERCARD"), g.pick("1", "2", "0", "3"), g.typedKey('t'), g.typedKey('t')}
		if g.chance(0.3) {
			args = append(args, g.kw("LIMIT"), g.pick("0", "1", "-1", "x"))
		}
		unordered = false
	case n < 26:
		// cursor 0 only: a hashtable's later cursors are its dict's,
		// and which members its first call returns too (the runner
		// looks: encPeek)
		args = []string{g.kw("SSCAN"), k, g.pick("0", "0", "0", "x")}
		if g.chance(0.3) {
			args = append(args, g.kw("MATCH"), g.pick("*", "1*", "?", "a"))
		}
		encPeek = []string{k}
		if inMulti {
			args = append(args, "COUNT", "100")
		}
	default:
		// a count past the set's size: the whole set, not a random part
		args = []string{g.kw(g.pick("SPOP", "SRANDMEMBER")), k, g.pick("100", "0", "x")}
		return wstep{args: args, unordered: true, fixedArity: true}
	}
	return wstep{args: args, unordered: unordered, encPeek: encPeek}
}

// sortCmd is SORT or SORT_RO of a list, sorted set or set, with options
// and patterns over the string and hash keys. Where the order of equal
// elements is the servers' own (a set left unsorted, ALPHA BY ties: Redis
// loads sets and sorted sets in hash order), the reply is compared as a
// multiset, and neither LIMIT nor STORE is given.
func (g *wideGen) sortCmd() wstep {
	name := g.pick("SORT", "SORT", "SORT_RO")
	args := []string{g.kw(name), g.typedKey(g.pick("l", "z", "t")[0])}
	var opts [][]string
	var by string // the last BY: the one sorted by
	alpha, nosort := false, false
	for i := g.r.IntN(5); i > 0; i-- {
		switch o := g.pick("BY", "GET", "GET", "LIMIT", "ASC", "DESC", "ALPHA", "ALPHA", "STORE", "FOO"); o {
		case "BY":
			by = g.pick("nosort", "s:*", "h:*->f", "h:*->n", "nokey*")
			nosort = nosort || by == "nosort" // a BY without '*' is for good
			opts = append(opts, []string{g.kw(o), by})
		case "GET":
			opts = append(opts, []string{g.kw(o), g.pick("#", "s:*", "h:*->f", "h:*->", "plain")})
		case "LIMIT":
			opts = append(opts, []string{g.kw(o), g.intArg(), g.intArg()})
		case "STORE":
			opts = append(opts, []string{g.kw(o), g.typedKey('l')})
		case "ALPHA":
			alpha = true
			opts = append(opts, []string{g.kw(o)})
		default:
			opts = append(opts, []string{g.kw(o)})
		}
	}
	unordered := nosort || alpha && by != ""
	for _, o := range opts {
		if unordered && (strings.EqualFold(o[0], "LIMIT") || strings.EqualFold(o[0], "STORE")) {
			continue
		}
		args = append(args, o...)
	}
	return wstep{args: args, unordered: unordered}
}

func (g *wideGen) keyspaceCmd(inMulti bool) wstep {
	var args []string
	var tol int64
	unordered := false
	switch n := g.r.IntN(56); {
	case n < 4:
		args = []string{g.kw("TYPE"), g.anyKey()}
	case n < 8:
		args = []string{g.kw("EXISTS")}
		k := g.anyKey()
		for i := 1 + g.r.IntN(4); i > 0; i-- {
			if g.chance(0.5) {
				k = g.anyKey()
			}
			args = append(args, k)
		}
	case n < 11:
		args = append([]string{g.kw(g.pick("DEL", "UNLINK"))}, g.anyKeys(1, 4)...)
	case n < 17:
		sub := g.pick("ENCODING", "ENCODING", "ENCODING", "REFCOUNT", "REFCOUNT", "FREQ", "HELP", "NOPE")
		args = []string{g.kw("OBJECT"), g.kw(sub)}
		if sub != "HELP" || g.chance(0.2) {
			args = append(args, g.anyKey())
		}
	case n < 19:
		args = []string{g.kw("DBSIZE")}
	case n < 22:
		args = []string{g.kw("ECHO"), g.val()}
		if g.chance(0.1) {
			args = args[:1]
		}
	case n < 25:
		args = []string{g.kw("PING")}
		for i := g.r.IntN(3); i > 0; i-- {
			args = append(args, g.val())
		}
	case n < 27:
		if inMulti {
			args = []string{g.kw("DBSIZE")}
			break
		}
		args = []string{g.kw("KEYS"), g.pick("*", "*:1", "l:*", "h:?", "[sh]:*", "none", "*\\:*")}
		unordered = true
	case n < 31:
		cmd := g.pick("TTL", "PTTL")
		args = []string{g.kw(cmd), g.anyKey()}
		tol = tolSec
		if cmd == "PTTL" {
			tol = tolMs
		}
	case n < 34:
		args = g.expireW()
	case n < 35:
		args = []string{g.kw("PERSIST"), g.anyKey()}
	case n < 36:
		args = []string{g.kw(g.pick("FLUSHALL", "FLUSHDB"))}
		if g.chance(0.3) {
			args = append(args, g.pick("ASYNC", "SYNC", "sync", "LAZY"))
		}
	case n < 37:
		args = []string{g.kw("SELECT"), g.pick("0", "abc", "-1", "0 ", "")}
	case n < 39:
		args = []string{g.kw(g.pick("RENAME", "RENAMENX")), g.anyKey(), g.anyKey()}
	case n < 41:
		args = []string{g.kw("COPY"), g.anyKey(), g.anyKey()}
		if g.chance(0.4) {
			args = append(args, g.kw("REPLACE"))
		}
		if g.chance(0.2) {
			args = append(args, g.kw("DB"), g.pick("0", "0", "x", "-1"))
		}
	case n < 42:
		args = append([]string{g.kw("TOUCH")}, g.anyKeys(1, 3)...)
	case n < 44:
		args = []string{g.kw("INCRBYFLOAT"), g.typedKey('s'), g.pick("0.1", "-1.5", "1e3", "abc", "inf", "3", "0x10", " 1", "1.23456789012345678", "-0")}
	case n < 46:
		args = []string{g.kw("EXPIRE"), g.anyKey(), g.relSec()}
	case n < 48:
		args = []string{g.kw("EVAL"), dumpScript, "1", g.anyKey()}
	default:
		args = g.dumpRestore()
	}
	return wstep{args: args, tol: tol, unordered: unordered}
}

// dumpScript DUMPs KEYS[1] when its payload's bytes are Redis's: not
// for a hashtable (they follow the table's order) nor for a list long
// enough to have had several nodes (cut where its history cut them in
// Redis); those give their encoding instead.
const dumpScript = "local e = redis.call('object', 'encoding', KEYS[1]) " +
	"if e == 'hashtable' or (e == 'quicklist' and redis.call('llen', KEYS[1]) > 100) then return e end return redis.call('dump', KEYS[1])"

// dumpRestoreScript RESTOREs KEYS[1]'s DUMP into KEYS[2], with ARGV as
// the TTL and options: each server restores its own payload, so any
// payload round-trips, and the value it makes (its encoding, what the
// commands after see of it) is compared from then on.
//
// A hashtable hash's DUMP lists its fields in its dict's order, which in
// Redis follows a hash seed drawn at startup; restored small, it is a
// listpack in that order, so HGETALL's order would differ between any
// two processes. The script then writes the restored hash again with its
// fields sorted (keeping its TTL), as both servers agree on that order.
const dumpRestoreScript = "local d = redis.call('dump', KEYS[1]) if not d then return 'no such key' end " +
	"local ht = redis.call('type', KEYS[1]).ok == 'hash' and redis.call('object', 'encoding', KEYS[1]) == 'hashtable' " +
	"local a = {KEYS[2], ARGV[1], d} for i = 2, #ARGV do a[#a + 1] = ARGV[i] end local r = redis.call('restore', unpack(a)) " +
	"if ht and redis.call('object', 'encoding', KEYS[2]) == 'listpack' then " +
	"local kv, f = redis.call('hgetall', KEYS[2]), {} for i = 1, #kv, 2 do f[#f + 1] = {kv[i], kv[i + 1]} end " +
	"table.sort(f, function(x, y) return x[1] < y[1] end) local pt = redis.call('pttl', KEYS[2]) redis.call('del', KEYS[2]) " +
	"for _, p in ipairs(f) do redis.call('hset', KEYS[2], p[1], p[2]) end " +
	"if pt > 0 then redis.call('pexpire', KEYS[2], pt) end end return r"

func (g *wideGen) dumpRestore() []string {
	args := []string{g.kw("EVAL"), dumpRestoreScript, "2", g.anyKey(), g.anyKey()}
	switch n := g.r.IntN(10); {
	case n < 6:
		args = append(args, "0")
	case n < 8:
		args = append(args, g.relMs())
	default:
		args = append(args, g.absMs(), g.kw("ABSTTL"))
	}
	if g.chance(0.7) {
		args = append(args, g.kw("REPLACE"))
	}
	switch n := g.r.IntN(20); {
	case n < 2:
		args = append(args, g.kw("IDLETIME"), g.intArg())
	case n < 4:
		args = append(args, g.kw("FREQ"), g.intArg())
	case n < 5:
		args = append(args, g.pick("REPLACE", "ABSTTL", "bad", "IDLETIME"))
	}
	return args
}

func (g *wideGen) expireW() []string {
	name := g.pick("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT")
	var when string
	switch name {
	case "EXPIRE":
		when = g.relSec()
	case "PEXPIRE":
		when = g.relMs()
	case "EXPIREAT":
		when = g.absSec()
	default:
		when = g.absMs()
	}
	args := []string{g.kw(name), g.anyKey(), when}
	if g.chance(0.4) {
		args = append(args, g.kw(g.pick("NX", "XX", "GT", "LT", "FOO")))
	}
	return args
}

// ---- SCRIPT ----

func (g *wideGen) scriptCmd() wstep {
	var args []string
	switch n := g.r.IntN(40); {
	case n < 18:
		body, _ := g.pickScript()
		args = []string{g.kw("SCRIPT"), g.kw("LOAD"), body}
	case n < 34:
		args = []string{g.kw("SCRIPT"), g.kw("EXISTS")}
		for k := g.r.IntN(20); k >= 0; k-- {
			body, _ := g.pickScript()
			sha := sha1hex(body)
			switch g.r.IntN(8) {
			case 0:
				sha = "0000000000000000000000000000000000000000"
			case 1:
				sha = strings.ToUpper(sha)
			case 2:
				sha = sha[:39]
			case 3:
				sha = g.pick("", "x", sha+"0")
			}
			args = append(args, sha)
		}
		if g.chance(0.05) {
			args = args[:2]
		}
	case n < 35:
		args = []string{g.kw("SCRIPT"), g.kw("FLUSH")}
		if g.chance(0.6) {
			args = append(args, g.pick("SYNC", "ASYNC", "async", "NOW"))
		}
	case n < 36:
		args = []string{g.kw("SCRIPT"), g.kw("KILL")}
	case n < 37:
		args = []string{g.kw("SCRIPT"), g.kw("HELP")}
	case n < 38:
		args = []string{g.kw("SCRIPT"), g.kw("NOPE"), "x"}
	case n < 39:
		args = []string{g.kw("SCRIPT")}
	default:
		args = []string{g.kw("SCRIPT"), g.kw("LOAD")}
	}
	return wstep{args: args}
}

// ---- EVAL ----

// wideScript is a family of small script bodies with the keys and
// arguments to call them with.
type wideScript struct {
	name   string
	bodies []string
	keys   int                       // how many keys (any but h:big)
	argv   func(g *wideGen) []string // nil: no arguments
	tag    string                    // "float-text": the reply may be a float's text
	// hashReply: the script may return KEYS[1]'s HGETALL (or HKEYS...),
	// whose order is compared only while it is listpack-encoded
	hashReply bool
	// unordered: the script may return a map through a Lua table (a
	// RESP3 reply converted with redis.setresp(3)), whose order is the
	// Lua implementation's table order
	unordered bool
}

func (g *wideGen) pickScript() (string, *wideScript) {
	sc := &wideScripts[g.r.IntN(len(wideScripts))]
	return sc.bodies[g.r.IntN(len(sc.bodies))], sc
}

func (g *wideGen) evalCmd() wstep {
	body, sc := g.pickScript()
	var keys []string
	for i := 0; i < sc.keys; i++ {
		keys = append(keys, g.scriptKey())
	}
	var argv []string
	if sc.argv != nil {
		argv = sc.argv(g)
	}
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.03) {
		numkeys = g.pick("-1", "abc", "", strconv.Itoa(len(keys)+len(argv)+1), "9223372036854775807", "01")
	}
	var args []string
	switch n := g.r.IntN(20); {
	case n < 9:
		args = []string{g.kw("EVAL"), body, numkeys}
	case n < 16:
		sha := sha1hex(body)
		if g.chance(0.05) {
			sha = strings.ToUpper(sha)
		}
		args = []string{g.kw("EVALSHA"), sha, numkeys}
	case n < 18:
		args = []string{g.kw("EVAL_RO"), body, numkeys}
	default:
		args = []string{g.kw("EVALSHA_RO"), sha1hex(body), numkeys}
	}
	args = append(append(args, keys...), argv...)
	st := wstep{args: args, tag: sc.tag, tmpl: sc.name, body: body, unordered: sc.unordered}
	if sc.hashReply && len(keys) > 0 {
		st.encPeek = keys[:1]
		if g.conns[0].inMulti || g.conns[1].inMulti {
			st.unordered = true // EXEC's order is then not compared (next)
		}
	}
	return st
}

func argvFrom(vals ...string) func(g *wideGen) []string {
	return func(g *wideGen) []string { return []string{g.pick(vals...)} }
}

func argv2(a, b []string) func(g *wideGen) []string {
	return func(g *wideGen) []string { return []string{g.pick(a...), g.pick(b...)} }
}

func argvVal(g *wideGen) []string { return []string{g.val()} }

// patternTokens are the pieces argvPattern builds Lua patterns from:
// every kind of pattern item, and the malformed ones.
var patternTokens = []string{"a", "x", ".", "%a", "%d", "%s", "%w", "%p", "%A", "%z", "%%", "%(", "[ab]", "[^a]",
	"[a-c]", "[%d(]", "[]]", "[^]]", "[a-]", "*", "+", "-", "?", "(", ")", "()", "%1", "%2", "%b()", "%bxa",
	"%f[%w]", "%f[%W]", "%f[a]", "^", "$", "%", "[", "%b", "%f", " ", "\x00"}

// argvPattern is a random subject and a random pattern of one to six
// tokens.
func argvPattern(g *wideGen) []string {
	var p strings.Builder
	for n := 1 + g.r.IntN(6); n > 0; n-- {
		t := patternTokens[g.r.IntN(len(patternTokens))]
		p.WriteString(t)
	}
	subjects := []string{"", "a", "aaa", "abc", "a(b)c", "x a1 (b(c)) d", "xax", "a\x00b", "^a$", "]a-c%", "  a  b  "}
	return []string{subjects[g.r.IntN(len(subjects))], p.String()}
}

var scriptCallCmds = []string{"get", "incr", "decr", "llen", "hlen", "hgetall", "hkeys", "hvals", "type", "exists",
	"del", "lpop", "rpop", "strlen", "persist", "getdel", "nosuch", "GET", "multi", "exec", "watch", "unwatch",
	"discard", "blpop", "eval", "evalsha", "script", "ping", "echo", "dbsize", "object", "subscribe", "select",
	"hello", "auth", "lrange", "hincrby", "lmpop", "client", "quit", "reset", "monitor"}

var tonumberArgs = []string{"0x10", " 10 ", "10 ", "1e1", "", "abc", "inf", "-inf", "nan", "-0", "1.5", "9223372036854775807",
	"0x", "1e500", ".5", "5.", "0b1", "1_000", "0X1F", "  0x10  ", "1e", "+5", "- 5", "010", "0x7fffffffffffffff", "1 2",
	"\t7\n", "0x1p4", "infinity", "1e-400", "-0x10"}

var wideScripts = []wideScript{
	// ---- reply conversions ----
	{name: "conv arrays", bodies: []string{
		"return {1,2,3,nil,5}",
		"return {1,'a',{2,{3,'b'}},true,false,'c'}",
		"return {1.5,-2.7,1e3,-0.5}",
		"return {a=1,b=2}",
		"return {}",
		"return {{},{{}}}",
		"local t = {} t[1]=1 t[3]=3 return t",
		"return {false,1}",
		"return {redis.call('get', 'none'), 2}",
		"return {1, {err='E x'}, {ok='y'}, 3}",
		"return {1, {err='inner'}, redis.error_reply('E2 y')}",
		"return {string.char(0,1,255), 'a\\r\\nb'}",
		"return KEYS",
		"return ARGV",
		"return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
	}, keys: 1, argv: argvVal},
	{name: "conv scalars", bodies: []string{
		"return 3.99", "return -3.99", "return 0.5", "return -0.5", "return 1e15", "return 2^53", "return -2^63",
		"return 9007199254740993", "return 1e18", "return -1e18", "return 0", "return -0",
		"return true", "return false", "return nil", "return", "return 'str'", "return ''",
		"return 1, 2", "return math.huge > 0", "return 2^31", "return -2^31 - 1",
	}},
	{name: "conv status/error tables", bodies: []string{
		"return {ok='fine'}", "return {err='MYERR bad'}", "return {err='plain'}", "return {err=''}",
		"return {err=1}", "return {ok=1}", "return {ok=''}", "return {err='ERR'}", "return {err='-ERR dash'}",
		"return {err='x\\r\\ny'}", "return {ok='x\\r\\ny'}", "return {err='E1', ok='O1'}",
		"return {err={}}", "return {ok=false}",
	}},
	{name: "error_reply/status_reply", bodies: []string{
		"return redis.error_reply(ARGV[1])",
		"return redis.status_reply(ARGV[1])",
		"return {redis.error_reply(ARGV[1]), 2}",
		"return redis.error_reply()",
		"return redis.status_reply()",
		"return redis.error_reply(1)",
		"return redis.status_reply(1)",
		"return redis.error_reply({})",
		"return redis.error_reply(ARGV[1], 'extra')",
		"local e = redis.error_reply(ARGV[1]) return e.err",
		"local s = redis.status_reply(ARGV[1]) return s.ok",
		"return type(redis.error_reply('x'))",
		"return {err='ab\\0cd'}", "return redis.status_reply('ab\\0cd')", "error('ab\\0cd')", "error({err='x\\0y'})",
	}, argv: argvFrom("My err", "", "ERR x", "-ERR dash", "WRONGTYPE bad", "line\r\nbreak", "x y z", "OK", "1")},
	{name: "resp3 conv", bodies: []string{
		"return {double=1.5}", "return {double=0.1}", "return {double=-0}", "return {double='3'}", "return {double='x'}",
		"return {map={a=1}}", "return {set={a=true}}", "return {map={}}", "return {set={}}",
		"return {big_number='123'}", "return {map={a={1,2}}}", "return {1, {double=2.5}}", "return {double=1e300}",
		"return {double=1/0}", "return {double=-1/0}", "return {double=3}", "return {double=0/0}", "return {double=-(0/0)}",
	}},

	// ---- redis.call / redis.pcall ----
	{name: "call by name", bodies: []string{
		"return redis.call(ARGV[1], KEYS[1])",
		"local r = redis.pcall(ARGV[1], KEYS[1]) if type(r) == 'table' and r.err then return 'E:' .. r.err end return r",
		"return redis.pcall(ARGV[1], KEYS[1])",
		"return redis.pcall(ARGV[1])",
		"local ok, e = pcall(redis.call, ARGV[1], KEYS[1]) if ok then return {1, e} end if type(e) == 'table' then return {0, e.err} end return {0, e}",
		"local ok, e = pcall(redis.call, ARGV[1], KEYS[1]) if ok then return e end return e",
	}, keys: 1, argv: argvFrom(scriptCallCmds...), hashReply: true},
	{name: "call errors", bodies: []string{
		"return redis.call('incr', KEYS[1])",
		"return redis.pcall('incr', KEYS[1])",
		"return redis.call()",
		"return redis.pcall()",
		"return redis.call({})",
		"return redis.call('get', {})",
		"return redis.call('get', true)",
		"return redis.call('get', KEYS[1], nil)",
		"return redis.call('set', KEYS[1])",
		"return redis.pcall('set', KEYS[1])",
		"return redis.call('nosuch')",
		"return redis.pcall('nosuch', 'a')",
		"return redis.call('lpush', KEYS[1], 'x')",
		"return redis.call('hset', KEYS[1], 'f', 'v')",
		"return redis.call('get', KEYS[1])",
		"local r = redis.call('get', KEYS[1]) return {r, type(r)}",
		"local t = redis.pcall('incr', KEYS[1]) return type(t)",
		"local t = redis.pcall('hget', KEYS[1], 'f1') if type(t) == 'table' then return t.err end return t",
		"local ok, e = pcall(function() return redis.call('hset', KEYS[1]) end) return e",
		"redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])",
		"redis.call('set', KEYS[1], 1e20) return redis.call('get', KEYS[1])",
		"redis.call('set', KEYS[1], -0) return redis.call('get', KEYS[1])",
		"redis.call('set', KEYS[1], 3) return redis.call('object', 'encoding', KEYS[1])",
		"redis.call('set', KEYS[1], 12345678901234567890) return redis.call('get', KEYS[1])",
		"return redis.call('ping')",
		"return type(redis.call('ping'))",
		"return redis.call('ping').ok",
		"return redis.call('set', KEYS[1], 'v').ok",
		"return redis.call('type', KEYS[1]).ok",
		"return redis.call('echo', 'a\\r\\nb')",
		"return redis.call('hmget', KEYS[1], 'f1', 'nope', 'f2')",
		"return redis.call('mget', KEYS[1], 'none', KEYS[1])",
		"return redis.call('lrange', KEYS[1], 0, -1)",
		"return #redis.call('lrange', KEYS[1], 0, -1)",
		"return redis.call('hgetall', KEYS[1])",
		"return redis.call('hincrbyfloat', KEYS[1], 'f1', '1.5')",
		"return redis.call('incrby', KEYS[1], 1.5)",
		"return redis.call('incrby', KEYS[1], 2^53)",
		"return redis.call('lpos', KEYS[1], 'a', 'COUNT', 0)",
		"return redis.call('blpop', KEYS[1], 0)",
		"return redis.call('brpoplpush', KEYS[1], 'l:2', 0)",
		"return redis.call('blmove', KEYS[1], 'l:3', 'LEFT', 'RIGHT', 0)",
		"return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT', 'COUNT', 2)",
		"return redis.call('lmpop', 2, KEYS[1], 'l:1', 'RIGHT')",
		"return redis.call('lpop', KEYS[1], 2)",
		"return redis.call('expire', KEYS[1], 1000000)",
		"return redis.call('getex', KEYS[1], 'persist')",
		"return redis.call('set', KEYS[1], 'x', 'get')",
		"return redis.call('object', 'freq', KEYS[1])",
		"return redis.call('dbsize')",
		"return redis.call('exists', KEYS[1], KEYS[1], 'none')",
		"return redis.call('evalsha', 'x', 0)",
		"return redis.call('script', 'load', 'return 1')",
		"return redis.call('script', 'exists', 'x')",
		"return redis.call('multi')",
		"return redis.call('publish', 'ch', 'm')",
		"return redis.call('GET', KEYS[1]) == false",
	}, keys: 1, hashReply: true},
	{name: "eval_ro writes", bodies: []string{
		"return redis.call('set', KEYS[1], 'x')",
		"return redis.pcall('set', KEYS[1], 'x')",
		"return redis.call('del', KEYS[1])",
		"return redis.call('lpush', KEYS[1], 'a')",
		"return redis.call('get', KEYS[1])",
		"local r = redis.pcall('hset', KEYS[1], 'f', 'v') return r",
		"redis.pcall('incr', KEYS[1]) return redis.call('get', KEYS[1])",
		"return redis.call('blpop', KEYS[1], 0)",
		"return redis.call('lpop', KEYS[1])",
		"return redis.call('expire', KEYS[1], 100000)",
	}, keys: 1},
	{name: "shebang", bodies: []string{
		"#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')",
		"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
		"#!lua\nreturn redis.call('get', KEYS[1])",
		"#!lua flags=bogus\nreturn 1",
		"#!lua name=x\nreturn 1",
		"#!notlua\nreturn 1",
		"#!lua flags=allow-oom,no-writes\nreturn 1",
		"#!lua flags=no-cluster\nreturn 1",
		"#!lua flags=allow-cross-slot-keys\nreturn redis.call('get', 'undeclared')",
		"#!lua flags=allow-stale\nreturn 2",
		"#!lua flags=\nreturn 3",
		"#!lua flags=no-writes,no-writes\nreturn 4",
		"#!lua  flags=no-writes\nreturn 5",
		"#!lua\nreturn redis.call('get', 'undeclared')",
		"#!lua\nreturn redis.call('set', KEYS[1], 'y')",
		"#!lua flags=no-writes\nreturn redis.pcall('lpush', KEYS[1], 'y')",
		"#!",
		"#!lua",
		"#!lua flags=no-writes",
	}, keys: 1},

	// ---- errors ----
	// error() of a table without a string err field (error({}),
	// error({ok='x'}), error({err={}})) crashes redis-server 7.0.15: not
	// generated.
	{name: "error()", bodies: []string{
		"error('boom')", "error('boom', 0)", "error('boom', 2)", "error({err='X boom'})", "error({err='boom'})",
		"error(42)", "error()", "error(redis.error_reply('My err'))", "error(true)",
		"local x = 1\nerror('line2')", "error({err='ERR with\\r\\nnewline'})", "error({err=''})",
		"error('')", "error(nil)", "error(3.5)",
		"local function f() error('deep') end\nlocal function g() f() end\ng()",
		"error('boom', 1)",
	}},
	{name: "pcall", bodies: []string{
		"local ok, e = pcall(error, ARGV[1]) return {ok and 1 or 0, e}",
		"local ok, e = pcall(function() error('x') end) return e",
		"local ok, e = pcall(function() error({a=1}) end) return type(e)",
		"local ok, e = pcall(function() error({err='E1 tbl'}) end) return e",
		"return {pcall(error)}",
		"local ok, e = pcall(error) return type(e)",
		"local a, b = pcall(redis.call, 'get', KEYS[1]) return {a, b}",
		"local ok, e = pcall(function() error(ARGV[1], 0) end) return e",
		"local ok, e = xpcall(function() error('xp') end, function(m) return 'h:' .. m end) return e",
		"return select('#', pcall(error))",
	}, keys: 1, argv: argvVal},

	// ---- cjson, sha1hex ----
	{name: "cjson encode", bodies: []string{
		"return cjson.encode({1,2,3})", "return cjson.encode({a=ARGV[1]})", "return cjson.encode({})",
		"return cjson.encode('a\"b\\\\c/\\n\\t')", "return cjson.encode(ARGV[1])", "return cjson.encode(1.5)",
		"return cjson.encode(10)", "return cjson.encode(-0)", "return cjson.encode(1e20)", "return cjson.encode(0.1)",
		"return cjson.encode(true)", "return cjson.encode(nil)", "return cjson.encode({1,nil,3})",
		"return cjson.encode({[1]=1,[2]=2,[4]=4})", "return cjson.encode({{}})", "return cjson.encode(1/0)",
		"return cjson.encode({1,{2,{3}}})", "return cjson.encode(cjson.null)", "return cjson.encode({a={b={}}})",
		"return cjson.encode(123456789012345)", "return cjson.encode(2^53)", "return cjson.encode(-1.5e-7)",
		"return cjson.encode(tonumber(ARGV[1]))", "return cjson.encode({[1]=1,[20]=2})", "return cjson.encode(string.char(1,127,128))",
	}, argv: argvVal},
	{name: "cjson decode", bodies: []string{
		"return cjson.decode(ARGV[1])",
		"return type(cjson.decode(ARGV[1]))",
		"local v = cjson.decode(ARGV[1]) if type(v) == 'table' then return #v end return v",
		"return cjson.encode(cjson.decode(ARGV[1]))",
		"local v = cjson.decode(ARGV[1]) return v == cjson.null",
	}, argv: argvFrom("[1,2,3]", "[1,null,3]", "{\"a\":1}", "\"str\"", "123", "1.5", "true", "false", "null",
		"[]", "[[1,2],[3]]", "\"\\u00e9\"", "1e2", "-0", "[1,2,null]", " [1] ", "{\"a\":[1,2,{\"b\":null}]}",
		"\"\\/\"", "[\"a\\nb\"]", "12345678901234567890", "0.1", "[true,false]", "{}", "{\"\":\"\"}")},
	{name: "sha1hex", bodies: []string{
		"return redis.sha1hex(ARGV[1])", "return redis.sha1hex(1)", "return redis.sha1hex()", "return redis.sha1hex('')",
		"return redis.sha1hex(ARGV[1], 'x')", "return redis.sha1hex({})", "return redis.sha1hex(1.5)",
	}, argv: argvVal},

	// ---- string library ----
	{name: "string.format", bodies: []string{
		"return string.format(ARGV[1], tonumber(ARGV[2]) or 0)",
		"return string.format(ARGV[1] .. '|', 7)",
	}, argv: argv2([]string{"%d", "%5.2f", "%x", "%X", "%o", "%e", "%g", "%s", "%c", "%5s", "%-5s|", "%%", "%i", "%u",
		"%.3f", "%+d", "% d", "%05d", "%.0f", "%#x", "%.20g", "%10.4e", "%G", "%E"},
		[]string{"3", "3.14159", "-1", "255", "0", "65", "1e10", "-0", "123456789", "2147483647", "0.5", "1.5", "2.5"})},
	{name: "string.format %q/%s", bodies: []string{
		"return string.format('%q', ARGV[1])", "return string.format('%s|%s', ARGV[1], 42)", "return string.format('%10s', ARGV[1])",
		"return string.format('%.2s', ARGV[1])", "return string.format('%s')", "return string.format('%d', 'x')",
		"return string.format('%z', 1)", "return string.format('%q', 1)", "return ('%d'):format(5)",
	}, argv: argvVal},
	{name: "string funcs", bodies: []string{
		"return string.rep(ARGV[1], 3)", "return string.rep('x', 0)", "return string.rep('x', -1)",
		"return string.sub(ARGV[1], tonumber(ARGV[2]) or 1)", "return string.sub(ARGV[1], 2, -2)", "return string.sub(ARGV[1], -3)",
		"return {string.byte(ARGV[1], 1, -1)}", "return string.byte(ARGV[1])", "return string.char(72, 105)",
		"return string.upper(ARGV[1])", "return string.lower(ARGV[1])", "return string.len(ARGV[1])", "return string.reverse(ARGV[1])",
		"return #ARGV[1]", "return ('abc'):upper()", "return ('x'):rep(3)", "return #string.rep('ab', 1000)",
		"return string.sub('hello', 0)", "return string.sub('hello', 10)", "return string.sub('hello', -100, 2)",
		"return {string.byte('')}", "return string.char()",
	}, argv: argv2(wValues, []string{"0", "1", "2", "-1", "-2", "10", "-100", "x"})},
	{name: "string patterns", bodies: []string{
		"return {string.find(ARGV[1], ARGV[2])}", "return {string.find(ARGV[1], ARGV[2], 1, true)}",
		"return {string.match(ARGV[1], ARGV[2])}", "return {string.gsub(ARGV[1], ARGV[2], '<%0>')}",
		"return {string.gsub(ARGV[1], ARGV[2], '%1%1')}", "local t = {} for w in string.gmatch(ARGV[1], ARGV[2]) do t[#t+1] = w end return t",
		"return {string.gsub(ARGV[1], ARGV[2], 'x', 1)}", "return {string.find(ARGV[1], ARGV[2], -2)}",
		"return {string.gsub('hello world', '(%w+)', '%1 %1')}", "return {string.gsub('abc', '', '-')}",
		"return {string.find('a.b', '.', 1, true)}", "return {string.match('key:123', '^(%a+):(%d+)$')}",
		"return {string.gsub('abc', '%w', {a='1', b=true})}", "return {string.gsub('abc', '%w', function(c) if c == 'b' then return false end return c:upper() end)}",
		"return {string.find('abc', '[a-')}", "return {string.match('  x  ', '^%s*(.-)%s*$')}",
		"return {string.find('a+b', '+', 1, true)}", "return {string.match('2024-01-02', '(%d+)-(%d+)-(%d+)')}",
		"return {string.gsub('hello', 'l+', '%%')}", "return {string.match('abc', '()b()')}",
	}, argv: argv2([]string{"hello world", "a,b,,c", "key:123", "", "aaa", "x y z", "1.5e3", "line\r\nbreak"},
		[]string{"%d+", "a", "(%a+)", "^x", ".-", "%s", "[%w_]+", "(o)", ",", "%", "[", "(", "%b()", "%f[%w]%w+", "l", ""})},

	{name: "random patterns", bodies: []string{
		"return {string.find(ARGV[1], ARGV[2])}", "return {string.match(ARGV[1], ARGV[2])}",
		"return {string.find(ARGV[1], ARGV[2], 2)}", "return {string.match(ARGV[1], ARGV[2], -3)}",
		"return {string.gsub(ARGV[1], ARGV[2], '[%0]')}", "return {string.gsub(ARGV[1], ARGV[2], '%1-%2')}",
		"return {string.gsub(ARGV[1], ARGV[2], {a='A', x=1.5, ['(']=false})}",
		"return {string.gsub(ARGV[1], ARGV[2], function(...) return select('#', ...) end, 2)}",
		"local t = {} for a, b in string.gmatch(ARGV[1], ARGV[2]) do t[#t+1] = tostring(a) .. '|' .. tostring(b) end return t",
	}, argv: argvPattern},

	// ---- table, math, bit ----
	{name: "table lib", bodies: []string{
		"local t = {3,1,2} table.sort(t) return t",
		"local t = {3,1,2} table.sort(t, function(a,b) return a>b end) return t",
		"local t = {ARGV[1], 'm', 'a', 'z'} table.sort(t) return t",
		"return table.concat({1,2,'a'}, ',')", "return table.concat({}, ',')", "return table.concat({1,2,3}, '-', 2, 3)",
		"return table.concat({1,2.5,3})", "return table.concat({1,{},3})",
		"local t = {1,2,3} table.insert(t, 2, 9) return t", "local t = {1,2,3} table.insert(t, 4) return t",
		"local t = {1,2,3} local x = table.remove(t) return {x, #t}", "local t = {1,2,3} table.remove(t, 1) return t",
		"return #{1,2,3,nil}", "return table.getn({1,2,3})", "return {unpack({1,2,3})}", "return select('#', 1, nil, 3)",
		"return select(2, 'a', 'b', 'c')", "return table.maxn({[1]=1,[5]=5})", "return {unpack({1,2,3}, 2)}",
		"local t = {} for i = 1, 10 do t[i] = i * i end return t", "local t = {} t[#t+1] = 'a' t[#t+1] = 'b' return t",
		"return select(-1, 'a', 'b')", "local t = setmetatable({}, {__index=function(t,k) return k * 2 end}) return t[21]",
		"return next({})", "local n = 0 for k, v in pairs({a=1,b=2,c=3}) do n = n + v end return n",
		"local n = 0 for i, v in ipairs({1,2,nil,4}) do n = n + v end return n",
		"return rawequal('a', 'a')", "return rawlen and 1 or 0", "return #'abc'",
	}, argv: argvVal},
	{name: "math lib", bodies: []string{
		"return math.floor(3.7)", "return math.floor(-3.5)", "return math.ceil(-3.5)", "return math.abs(-5)", "return math.max(1,5,3)",
		"return math.min(4,2,8)", "return math.fmod(7,3)", "return math.fmod(-7,3)", "return math.pow(2,10)", "return math.sqrt(16)",
		"return math.huge > 1e308", "return {math.modf(3.7)}", "return math.log(1)", "return math.exp(0)",
		"return math.floor(math.log10(1000) + 0.5)", "return math.ldexp(1, 10)", "return math.floor(math.pi*1000)",
		"return 7 % 3", "return -7 % 3", "return 7 % -3", "return math.floor(2^0.5 * 1000)", "return 10 / 4 * 4",
		"return 1/0 > 0", "return -(0/0) ~= -(0/0)", "return math.floor(tonumber(ARGV[1]) or 0)",
		"return math.max(tonumber(ARGV[1]) or 0, 0)", "return {math.frexp(8)}", "return math.floor(-0.0)",
		"return math.fmod(7, 0) ~= math.fmod(7, 0)", "return 5 % 0 ~= 5 % 0", "return math.floor(1e100) == 1e100",
		"return 0x10", "return 1e2", "return .5 * 4", "return 0xA + 1", "return '10' + 5", "return '0x10' + 0",
		"return ' 5 ' * 2", "return 10 .. 20", "return '10' < '9'", "return 1 == 1.0", "return 2^-1 * 4",
		"return math.floor(3)", "return math.abs(-2^63)", "return math.max()", "return math.floor('3.7')",
		"return math.floor(math.huge) == math.huge", "return 1e308 * 10 == math.huge",
	}, argv: argvFrom(tonumberArgs...)},
	{name: "bit lib", bodies: []string{
		"return bit.tobit(2^32+5)", "return bit.bnot(0)", "return bit.lshift(1, 31)", "return bit.rshift(-1, 28)",
		"return bit.arshift(-256, 4)", "return bit.tohex(255)", "return bit.tohex(-1, 4)", "return bit.bxor(5,3)",
		"return bit.bor(1,2,4)", "return bit.rol(1, 33)", "return bit.bswap(0x12345678)", "return bit.band(0xff, 0x0f, 0x3)",
		"return bit.tohex(65535, -4)", "return bit.lshift(1, 40)", "return bit.band(2^53, 1)", "return bit.tobit(-1)",
		"return bit.ror(1, 1)", "return bit.band(tonumber(ARGV[1]) or 0, 255)",
	}, argv: argvFrom("1", "255", "-1", "4294967296", "2147483648", "1.5", "abc")},

	// ---- tonumber / tostring ----
	{name: "tonumber", bodies: []string{
		"return tonumber(ARGV[1])",
		"return type(tonumber(ARGV[1]))",
		"return tonumber(ARGV[1]) == nil",
		"local n = tonumber(ARGV[1]) if n == nil then return 'nil' end if n ~= n then return 'nan' end if n == math.huge then return 'inf' end if n == -math.huge then return '-inf' end if n == math.floor(n) then return {'int', n} end return {'frac', math.floor(n * 1000)}",
		"return tonumber(ARGV[1], 16)", "return tonumber(ARGV[1], 2)", "return tonumber(ARGV[1], 36)", "return tonumber(ARGV[1], 10)",
		"return tonumber(ARGV[1], 1)", "return tonumber(ARGV[1], 37)",
		"return tonumber(nil)", "return tonumber(true)", "return tonumber({})", "return tonumber()",
		"return tonumber('z', 36)", "return tonumber('ff', 16)", "return tonumber('-ff', 16)", "return tonumber('101', 2)",
		"return tonumber('7', 8)", "return tonumber('8', 8)", "return tonumber(' 11 ', 2)", "return tonumber('1.5', 10)",
		"return tonumber(10, 16)", "return tonumber('0x10', 16)",
	}, argv: argvFrom(tonumberArgs...)},
	{name: "tostring", bodies: []string{
		"return tostring(tonumber(ARGV[1]))",
		"local n = tonumber(ARGV[1]) if n then return n .. '' end return 'nil'",
		"return tostring(nil)", "return tostring(true)", "return tostring(false)", "return tostring(-0)", "return tostring(1e15)",
		"return tostring(2^53)", "return tostring(1e100)", "return tostring(123456789012)", "return tostring(0.1)",
		"return tostring(1/0)", "return tostring(-1/0)", "return tostring(0/0)", "return tostring(-(0/0))", "return tostring(1e14)",
		"return tostring(100)", "return tostring(-2^63)", "return tostring(2^63)", "return tostring(3.0)", "return tostring('x')",
		"return 1.5 .. ''", "return 2^31 .. ''", "return tostring(1e16)", "return tostring(12345678901234)",
		"return tostring(123456789012345)", "return tostring(-1e-5)", "return tostring(5e-324)",
	}, argv: argvFrom(tonumberArgs...), tag: "float-text"},

	// ---- globals, sandbox, redis.* ----
	{name: "globals", bodies: []string{
		"x = 1 return x", "return undefinedvar", "local t = redis return type(t.call)", "return type(loadstring)",
		"return type(setmetatable)", "return type(os)", "return type(debug)", "return type(_G)", "return type(getfenv)",
		"return type(print)", "return rawget(_G, 'nonexist') == nil", "return type(cjson.null)", "return type(struct)",
		"return type(cmsgpack)", "return type(bit)", "return type(require)", "return type(dofile)", "return type(module)",
		"return type(newproxy)", "return type(collectgarbage)", "return type(unpack)", "return type(gcinfo)",
		"return type(coroutine)", "return type(io)", "return type(string.dump)", "return type(math.mod)",
		"return type(table.foreach)", "return type(table.foreachi)", "return type(table.setn)", "return type(string.gfind)", "return _VERSION", "return getmetatable('').__index == string",
		"_G.y = 1 return 1", "redis = nil return 1", "redis.call = nil return 1", "string.upper = nil return 1",
		"local ok, e = pcall(function() z = 1 end) return ok", "return loadstring('return 1')()",
		"return type(KEYS)", "return rawset(_G, 'w', 1) and 1", "local goto = 1 return goto",
		"return type(select)", "return type(math.random)", "return type(redis.breakpoint)",
	}},
	{name: "redis misc", bodies: []string{
		"return redis.replicate_commands()", "return redis.set_repl(redis.REPL_ALL)", "return redis.REPL_ALL",
		"return redis.REPL_NONE", "return redis.LOG_WARNING", "return redis.LOG_DEBUG", "redis.log(redis.LOG_NOTICE, 'x')",
		"return redis.log(redis.LOG_NOTICE, 'x', 'y')", "return redis.log()", "return redis.log(99, 'x')",
		"return redis.setresp(2)", "return redis.setresp(4)", "return redis.setresp()", "return redis.setresp('3')",
		"return redis.breakpoint()", "return redis.debug('x')", "return redis.set_repl(99)", "return redis.set_repl()",
		"return type(redis.REDIS_VERSION)", "return type(redis.REDIS_VERSION_NUM)", "return redis.acl_check_cmd('get', 'x')",
		"return redis.acl_check_cmd('nosuch')", "return redis.acl_check_cmd()",
		"return type(redis.sha1hex)", "return type(redis.call)",
	}},
	{name: "setresp 3", bodies: []string{
		"redis.setresp(3) return redis.call(ARGV[1], KEYS[1])",
		"redis.setresp(3) local r = redis.call('hgetall', KEYS[1]) return type(r) == 'table' and r.map ~= nil",
		"redis.setresp(3) return redis.call('get', KEYS[1]) == nil",
		"redis.setresp(3) local r = redis.pcall('get', KEYS[1]) return {type(r)}",
		"redis.setresp(3) return redis.call('lpop', KEYS[1], 5)",
		"redis.setresp(3) return redis.call('hgetall', KEYS[1])",
		"redis.setresp(3) return redis.call('exists', KEYS[1])",
		"redis.setresp(3) local r = redis.call('hincrbyfloat', 'h:2', 'f1', '0.5') return type(r)",
		"redis.setresp(3) return redis.pcall('incr', KEYS[1])",
		"redis.setresp(3) return redis.call('lpos', KEYS[1], 'zz')",
		"redis.setresp(3) local m = redis.call('hgetall', KEYS[1]) local n = 0 for k, v in pairs(m.map or {}) do n = n + 1 end return n",
	}, keys: 1, argv: argvFrom("hgetall", "get", "lrange", "hkeys", "type", "exists", "lpop", "hmget", "ping", "blpop"), unordered: true},
}

// ---- tests of the test ----

// TestRandomDiffWideDeterministic checks a seed always generates the same
// commands, that every blocking command says how to keep it from
// blocking, and that long hash values go to h:big only.
func TestRandomDiffWideDeterministic(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	fixed := func() time.Time { return now }
	// a fake Redis: MULTI starts a transaction, EXEC/DISCARD end it,
	// anything inside is queued
	reply := func(g *wideGen, st wstep) []byte {
		switch {
		case strings.EqualFold(st.args[0], "multi") && len(st.args) == 1 && !g.conns[st.conn].inMulti:
			return []byte("+OK\r\n")
		case g.conns[st.conn].inMulti && !isExec(st) && !strings.EqualFold(st.args[0], "discard"):
			return []byte("+QUEUED\r\n")
		}
		return []byte("+OK\r\n")
	}
	g1, g2 := newWideGen(7, fixed), newWideGen(7, fixed)
	multis := 0
	for i := 0; i < 5000; i++ {
		s1, s2 := g1.next(), g2.next()
		if showFull(s1.args) != showFull(s2.args) || s1.conn != s2.conn || s1.tol != s2.tol || s1.unordered != s2.unordered {
			t.Fatalf("step %d: %s vs %s", i, showFull(s1.args), showFull(s2.args))
		}
		if s1.peek != nil && (s1.tIdx <= 0 || s1.tIdx >= len(s1.args)) {
			t.Fatalf("step %d: %s: timeout index %d", i, showFull(s1.args), s1.tIdx)
		}
		switch strings.ToLower(s1.args[0]) {
		case "blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop":
			if s1.peek == nil {
				t.Fatalf("step %d: %s without peek keys", i, showFull(s1.args))
			}
		case "hset", "hmset", "hsetnx":
			for _, a := range s1.args[2:] {
				if len(a) > 64 && s1.args[1] != wBigHash {
					t.Fatalf("step %d: %s: long value for %s", i, showFull(s1.args), s1.args[1])
				}
			}
		}
		if g1.conns[s1.conn].inMulti {
			multis++
		}
		g1.observe(s1, reply(g1, s1))
		g2.observe(s2, reply(g2, s2))
	}
	if multis == 0 {
		t.Fatal("no command was generated inside MULTI")
	}
}

// TestRandomDiffWideClassify checks how mismatches are matched against
// the known lists, EXEC's element by element.
func TestRandomDiffWideClassify(t *testing.T) {
	blpopStep := wstep{args: []string{"BLPOP", "l", "inf"}}
	getStep := wstep{args: []string{"GET", "k"}}
	tneg, trange := "-ERR timeout is negative\r\n", "-ERR timeout is out of range\r\n"
	// a known difference (the huge blocking timeout's error text)
	if k, _, _ := classifyWide(blpopStep, nil, []byte(tneg), []byte(trange)); k == "" {
		t.Fatal("blocking timeout difference not recognised")
	}
	// ... but not another error
	if k, _, _ := classifyWide(blpopStep, nil, []byte(tneg), []byte("-ERR timeout is wrong\r\n")); k != "" {
		t.Fatalf("different text classified as %q", k)
	}
	// EXEC: a known element difference is known, an unknown one names
	// its command
	exec := wstep{args: []string{"EXEC"}}
	want := []byte("*2\r\n" + tneg + "$1\r\nv\r\n")
	if k, culprit, stateless := classifyWide(exec, []wstep{blpopStep, getStep}, want, []byte("*2\r\n"+trange+"$1\r\nv\r\n")); k == "" || culprit != nil || !stateless {
		t.Fatalf("EXEC with a known element: %q %v %v", k, culprit, stateless)
	}
	if k, culprit, _ := classifyWide(exec, []wstep{blpopStep, getStep}, want, []byte("*2\r\n"+trange+"$1\r\nw\r\n")); k != "" || culprit == nil || culprit.args[0] != "GET" {
		t.Fatalf("EXEC with an unknown element: %q %v", k, culprit)
	}
	// EXEC: after a known element that leaves the states apart (a script's
	// BLPOP popped in tumbler only), a later element that differs is its
	// consequence; after a reply-only one (above) it is not
	scriptBlpop := wstep{args: []string{"EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "l"}, body: "return redis.call('blpop', KEYS[1], 0)"}
	lpopStep := wstep{args: []string{"LPOP", "l"}}
	noScript := "-ERR This Redis command is not allowed from script script: x, on @user_script:1.\r\n"
	wantExec := []byte("*2\r\n" + noScript + "$1\r\na\r\n")
	gotExec := []byte("*2\r\n*2\r\n$1\r\nl\r\n$1\r\na\r\n$1\r\nb\r\n")
	if k, culprit, stateless := classifyWide(exec, []wstep{scriptBlpop, lpopStep}, wantExec, gotExec); k == "" || culprit != nil || stateless {
		t.Fatalf("EXEC after a script's BLPOP: %q %v %v", k, culprit, stateless)
	}
	if k, culprit, _ := classifyWide(exec, []wstep{lpopStep, scriptBlpop}, []byte("*2\r\n$1\r\na\r\n"+noScript), []byte("*2\r\n$1\r\nb\r\n*2\r\n$1\r\nl\r\n$1\r\na\r\n")); k != "" || culprit == nil || culprit.args[0] != "LPOP" {
		t.Fatalf("EXEC with an unknown element before a known one: %q %v", k, culprit)
	}
	// 7.2's ZRANK arity: a fourth argument, refused or queued, is known
	// (and resynchronises); a wrong reply to a three-argument ZRANK is not
	zrankErr := []byte("-ERR wrong number of arguments for 'zrevrank' command\r\n")
	zrank4 := wstep{args: []string{"ZrevRank", "z", "a", "NX"}}
	for _, got := range []string{"-ERR syntax error\r\n", "+QUEUED\r\n"} {
		if k, _, stateless := classifyWide(zrank4, nil, zrankErr, []byte(got)); k == "" || stateless {
			t.Fatalf("ZREVRANK z a NX answered %q: %q %v", got, k, stateless)
		}
	}
	if k, _, _ := classifyWide(wstep{args: []string{"ZREVRANK", "z", "a"}}, nil, zrankErr, []byte(":0\r\n")); k != "" {
		t.Fatalf("three-argument ZREVRANK classified as %q", k)
	}
	if k, _, _ := classifyWide(zrank4, nil, []byte(":0\r\n"), []byte("-ERR syntax error\r\n")); k != "" {
		t.Fatalf("ZREVRANK difference with no arity error from Redis classified as %q", k)
	}
	// SSCAN: a partial scan is known only of a set the runner saw
	// hashtable-encoded
	sscan := wstep{args: []string{"SSCAN", "t", "0"}, unordered: true}
	whole, part := []byte("*2\r\n$1\r\n0\r\n*2\r\n$1\r\n1\r\n$2\r\n10\r\n"), []byte("*2\r\n$1\r\n7\r\n*1\r\n$1\r\n1\r\n")
	if k, _, _ := classifyWide(sscan, nil, whole, part); k != "" {
		t.Fatalf("partial SSCAN of a set not seen hashtable-encoded classified as %q", k)
	}
	sscan.hashtable = true
	if k, _, _ := classifyWide(sscan, nil, whole, part); k == "" {
		t.Fatal("partial SSCAN of a hashtable set not recognised")
	}
	if k, _, _ := classifyWide(sscan, nil, whole, []byte("-ERR syntax error\r\n")); k != "" {
		t.Fatalf("SSCAN error classified as %q", k)
	}
	// clock tolerance inside EXEC, for clock-like integers only
	if compareWide(wstep{tol: tolMs}, []byte("*2\r\n:1000000\r\n:1\r\n"), []byte("*2\r\n:999000\r\n:1\r\n")) != "" {
		t.Fatal("PTTL within tolerance inside EXEC reported")
	}
	if compareWide(wstep{tol: tolMs}, []byte("*2\r\n:1000000\r\n:1\r\n"), []byte("*2\r\n:1000000\r\n:0\r\n")) == "" {
		t.Fatal("small integer difference inside EXEC not reported")
	} // an EXEC of a PTTL and a hashtable's HKEYS (seed 731449): each
	// element agrees as its own command's, though the whole agrees
	// neither exactly nor as a multiset
	pttl, hkeys := wstep{args: []string{"PTTL", "s"}, tol: tolMs}, wstep{args: []string{"HKEYS", "h"}, unordered: true}
	wantTx := []byte("*2\r\n:683136337814\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n")
	if !execAgrees([]wstep{pttl, hkeys}, wantTx, []byte("*2\r\n:683136337813\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n")) {
		t.Fatal("EXEC of PTTL and HKEYS, each within its own tolerance, reported")
	}
	if execAgrees([]wstep{pttl, hkeys}, wantTx, []byte("*2\r\n:683136337813\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n")) {
		t.Fatal("EXEC with different HKEYS members agreed")
	}
	if execAgrees([]wstep{hkeys, pttl}, wantTx, []byte("*2\r\n:683136337813\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n")) {
		t.Fatal("EXEC compared against the wrong queued commands agreed")
	}
}
