package diff

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/server"
)

// TestRandomDiff is a seeded randomized differential test: it generates
// random command sequences over a small keyspace (so commands collide on
// the same keys, types and tokens), sends each command to redis-server and
// to tumbler and compares the raw reply bytes.
//
// By default it runs the fixed seeds in randomDiffRuns, so CI is
// reproducible. For longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_DIFF_SEED=123 TUMBLER_DIFF_STEPS=50000 \
//	    go test -run TestRandomDiff ./diff/
//
// runs one seed (TUMBLER_DIFF_RESP3=1 runs it after HELLO 3).
// TUMBLER_DIFF_VERBOSE=1 logs every command with both replies.
//
// Time never makes the two servers diverge: every relative TTL the
// generator sends is either at least 1000 s or invalid/≤ 0, every absolute
// time is either at least 1000 s in the future or in the past, so no key
// expires naturally during a run. Future deadlines are also never reused
// (see cmdGen.futureSec), so NX/XX/GT/LT comparisons never compare two
// deadlines that differ only by how much time passed between commands.
// Replies that depend on the clock (TTL, PTTL, EXPIRETIME, PEXPIRETIME,
// scripts returning a PTTL) are compared with a tolerance; everything else
// byte for byte.
func TestRandomDiff(t *testing.T) {
	runs := randomDiffRuns
	if s := os.Getenv("TUMBLER_DIFF_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TUMBLER_DIFF_SEED=%q: %v", s, err)
		}
		steps := 20000
		if s := os.Getenv("TUMBLER_DIFF_STEPS"); s != "" {
			if steps, err = strconv.Atoi(s); err != nil || steps <= 0 {
				t.Fatalf("TUMBLER_DIFF_STEPS=%q: want a positive integer", s)
			}
		}
		runs = []randomRun{{seed: seed, steps: steps, resp3: os.Getenv("TUMBLER_DIFF_RESP3") == "1"}}
	}

	redis := target{"redis", startRedis(t)}
	tumbler := target{"tumbler", server.RunT(t).Addr()}
	var logf func(format string, args ...any)
	if os.Getenv("TUMBLER_DIFF_VERBOSE") == "1" {
		logf = t.Logf
	}

	var all []randomMismatch
	guarded := map[string]int{}
	total := 0
	for _, run := range runs {
		if len(all) >= maxRandomMismatches {
			break
		}
		rc, err := redis.open()
		if err != nil {
			t.Fatal(err)
		}
		tc, err := tumbler.open()
		if err != nil {
			rc.close()
			t.Fatal(err)
		}
		start := time.Now()
		res, err := runRandom(run, rc, tc, time.Now, maxRandomMismatches-len(all), logf)
		rc.close()
		tc.close()
		if err != nil {
			t.Fatalf("seed %d: %v", run.seed, err)
		}
		t.Logf("seed %d (%s): %d commands in %v, %d mismatches, %d guarded by knownRandomDiffBugs",
			run.seed, run.proto(), res.steps, time.Since(start).Round(time.Millisecond), len(res.mismatches), res.guardedTotal())
		total += res.steps
		all = append(all, res.mismatches...)
		for name, n := range res.guarded {
			guarded[name] += n
		}
	}
	t.Logf("%d commands checked in total", total)
	for _, b := range knownRandomDiffBugs {
		if guarded[b.name] == 0 {
			// Not an error: the generator is random and may simply not have
			// hit the bug. A guard that never fires over many seeds is a
			// candidate for removal.
			t.Logf("knownRandomDiffBugs %q did not fire in this run (fixed?)", b.name)
		} else {
			t.Logf("knownRandomDiffBugs %q fired %d times", b.name, guarded[b.name])
		}
	}
	for _, m := range all {
		t.Errorf("%s", m)
	}
}

// randomDiffRuns are the default, reproducible runs. Seeds 9, 36 and 37
// were picked because, within 4000 commands, they hit the bugs the test
// found (36 and 37 the Lua tonumber one, 9 and 37 the EXPIRETIME
// overflow, all of them the EVALSHA one), so they keep those fixed.
var randomDiffRuns = []randomRun{
	{seed: 1, steps: 4000},
	{seed: 9, steps: 4000},
	{seed: 36, steps: 4000, resp3: true},
	{seed: 37, steps: 4000, resp3: true},
}

// maxRandomMismatches bounds how many mismatches are collected before the
// test stops generating commands.
const maxRandomMismatches = 20

// historyLen is how many preceding commands a mismatch report shows.
const historyLen = 5

// knownRandomDiffBug guards a tumbler bug found by this test, so the test
// can run green until it is fixed. match is given the command and both
// replies of a mismatch; a mismatch it matches is counted, not reported.
// Remove an entry once the bug is fixed.
type knownRandomDiffBug struct {
	name  string
	match func(args []string, want, got []byte) bool
}

// knownRandomDiffBugs lists the tumbler bugs this test has found and that
// are not fixed yet, each with a minimal reproduction. It found three,
// all fixed since: EVALSHA with a SHA not 40 characters long, EXPIRETIME
// near the int64 maximum, and Lua tonumber of numbers with an exponent or
// beyond int64.
var knownRandomDiffBugs = []knownRandomDiffBug{}

type randomRun struct {
	seed  uint64
	steps int
	resp3 bool
}

func (r randomRun) proto() string {
	if r.resp3 {
		return "RESP3"
	}
	return "RESP2"
}

// replier is one side of the comparison; *conn is one.
type replier interface {
	do(args ...string) ([]byte, error)
}

type randomResult struct {
	steps      int
	mismatches []randomMismatch
	guarded    map[string]int
}

func (r randomResult) guardedTotal() int {
	n := 0
	for _, v := range r.guarded {
		n += v
	}
	return n
}

type historyEntry struct {
	step       int
	args       []string
	want, got  []byte
	mismatched bool
}

type randomMismatch struct {
	run        randomRun
	step       int
	args       []string
	script     string
	want, got  []byte
	why        string
	history    []historyEntry
	lastResync int // step of the previous resync (FLUSHALL), -1 if none
}

func (m randomMismatch) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (%s) step %d: %s: %s\n  redis:   %q\n  tumbler: %q\n",
		m.run.seed, m.run.proto(), m.step, show(m.args), m.why, m.want, m.got)
	if m.script != "" {
		fmt.Fprintf(&b, "  script: %s\n", m.script)
	}
	if m.lastResync >= 0 {
		fmt.Fprintf(&b, "  (both servers were FLUSHALLed after the mismatch at step %d)\n", m.lastResync)
	}
	fmt.Fprintf(&b, "  preceding commands:\n")
	if len(m.history) == 0 {
		fmt.Fprintf(&b, "    (none)\n")
	}
	for _, h := range m.history {
		if h.mismatched {
			fmt.Fprintf(&b, "    step %d: %s -> redis %q, tumbler %q\n", h.step, show(h.args), h.want, h.got)
		} else {
			fmt.Fprintf(&b, "    step %d: %s -> %q\n", h.step, show(h.args), h.want)
		}
	}
	resp3 := ""
	if m.run.resp3 {
		resp3 = " TUMBLER_DIFF_RESP3=1"
	}
	fmt.Fprintf(&b, "  rerun: TUMBLER_REQUIRE_REDIS=1 TUMBLER_DIFF_SEED=%d TUMBLER_DIFF_STEPS=%d%s go test -run TestRandomDiff ./diff/",
		m.run.seed, m.step+1, resp3)
	return b.String()
}

// runRandom runs one seed on the two connections, which must be fresh
// (FLUSHALL, SCRIPT FLUSH). It stops after run.steps commands or after
// limit mismatches. After every mismatch both servers are FLUSHALLed, so
// one difference in state does not cascade into many reports.
func runRandom(run randomRun, redis, tumbler replier, now func() time.Time, limit int, logf func(string, ...any)) (randomResult, error) {
	res := randomResult{guarded: map[string]int{}}
	if run.resp3 {
		for _, s := range []struct {
			name string
			c    replier
		}{{"redis", redis}, {"tumbler", tumbler}} {
			reply, err := s.c.do("HELLO", "3")
			if err != nil {
				return res, fmt.Errorf("%s: HELLO 3: %v", s.name, err)
			}
			if len(reply) == 0 || reply[0] != '%' {
				return res, fmt.Errorf("%s: HELLO 3 replied %q, want a map", s.name, reply)
			}
		}
	}
	g := newCmdGen(run.seed, now)
	var history []historyEntry
	lastResync := -1
	for i := 0; i < run.steps; i++ {
		st := g.next()
		want, err := redis.do(st.args...)
		if err != nil {
			return res, fmt.Errorf("step %d: %s: redis: %v", i, show(st.args), err)
		}
		got, err := tumbler.do(st.args...)
		if err != nil {
			return res, fmt.Errorf("step %d: %s: tumbler: %v (redis replied %q)", i, show(st.args), err, want)
		}
		res.steps++
		if logf != nil {
			logf("step %d: %s\n  redis:   %q\n  tumbler: %q", i, show(st.args), want, got)
		}
		mismatch := false
		if why := compareRandom(want, got, st.tol); why != "" {
			mismatch = true
			if b := matchKnownRandomBug(st.args, want, got); b != "" {
				res.guarded[b]++
			} else {
				res.mismatches = append(res.mismatches, randomMismatch{
					run: run, step: i, args: st.args, script: st.script, want: want, got: got, why: why,
					history: append([]historyEntry(nil), history...), lastResync: lastResync,
				})
			}
			// Resynchronise: the servers' states may differ now.
			for _, c := range []replier{redis, tumbler} {
				if r, err := c.do("FLUSHALL"); err != nil || string(r) != "+OK\r\n" {
					return res, fmt.Errorf("step %d: FLUSHALL after mismatch: %q %v", i, r, err)
				}
			}
			lastResync = i
		}
		history = append(history, historyEntry{step: i, args: st.args, want: want, got: got, mismatched: mismatch})
		if len(history) > historyLen {
			history = history[1:]
		}
		if len(res.mismatches) >= limit {
			break
		}
	}
	return res, nil
}

func matchKnownRandomBug(args []string, want, got []byte) string {
	for _, b := range knownRandomDiffBugs {
		if b.match(args, want, got) {
			return b.name
		}
	}
	return ""
}

// compareRandom returns "" when got matches want, else why not. With tol
// 0 the replies must be byte-identical. With tol > 0 (a time-dependent
// reply) two integers may differ by at most tol, but only when both are
// clock-like (|n| >= 900: no TTL the generator sets is below 1000 s), so
// the small sentinels -3, -2, -1, 0, 1 are still compared exactly.
func compareRandom(want, got []byte, tol int64) string {
	if bytes.Equal(want, got) {
		return ""
	}
	if tol <= 0 {
		return "replies differ"
	}
	x, ok1 := integerOf(want)
	y, ok2 := integerOf(got)
	if ok1 && ok2 && clockLike(x) && clockLike(y) && Approx(want, got, tol) {
		return ""
	}
	return fmt.Sprintf("replies differ (time-dependent, tolerance ±%d)", tol)
}

func clockLike(n int64) bool { return n >= 900 || n <= -900 }

// ---- the command generator ----

// rstep is one generated command. tol > 0 marks a time-dependent reply;
// script names the lock client's script an EVAL/EVALSHA runs.
type rstep struct {
	args   []string
	tol    int64
	script string
}

const (
	tolSec = 3    // TTL, EXPIRETIME
	tolMs  = 3000 // PTTL, PEXPIRETIME, scripts returning a PTTL
)

var (
	lockKeys = []string{"lock:a", "lock:b", "lock:c", "lock:d", "lock:e", "lock:f"}
	ctrKeys  = []string{"ctr:1", "ctr:2"}
	listKey  = "list:q"
	hashKey  = "hash:h"
	// latchKey is Redisson's unlock latch; it is also a plain key.
	latchKey = "latch:x"
	tokens   = []string{"tok:1", "tok:2", "tok:3", "uuid-1:7", "uuid-2:9", "", "0", "1", "10", "-3", "a b",
		"9223372036854775807", "line\r\nbreak"}
	fields = []string{"f1", "f2", "uuid-1:7", "uuid-2:9"}
)

type cmdGen struct {
	r    *rand.Rand
	now  func() time.Time
	used map[int64]bool
}

func newCmdGen(seed uint64, now func() time.Time) *cmdGen {
	return &cmdGen{r: rand.New(rand.NewPCG(seed, 0x7475_6d62_6c65_72)), now: now, used: map[int64]bool{}}
}

func (g *cmdGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *cmdGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// kw returns a keyword (command name or option) as is, lowercase, or in
// mixed case: Redis matches them case-insensitively.
func (g *cmdGen) kw(s string) string {
	switch n := g.r.IntN(10); {
	case n < 6:
		return s
	case n < 9:
		return strings.ToLower(s)
	default:
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' && g.r.IntN(2) == 0 {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
}

func (g *cmdGen) key() string {
	// The list and hash keys are rare here (the list and hash commands
	// pick them on purpose): string writes to them would keep them
	// strings most of the time.
	switch n := g.r.IntN(20); {
	case n < 15:
		return lockKeys[g.r.IntN(len(lockKeys))]
	case n < 17:
		return ctrKeys[g.r.IntN(len(ctrKeys))]
	case n < 18:
		return listKey
	case n < 19:
		return hashKey
	default:
		return latchKey
	}
}

func (g *cmdGen) keys(min, max int) []string {
	n := min + g.r.IntN(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func (g *cmdGen) token() string { return tokens[g.r.IntN(len(tokens))] }

func (g *cmdGen) value() string {
	if g.chance(0.25) {
		return g.pick("0", "1", "42", "-7", "9223372036854775806", "9223372036854775807", "-9223372036854775808", "3.5", " 1")
	}
	return g.token()
}

func (g *cmdGen) field() string { return fields[g.r.IntN(len(fields))] }

// futureSec returns a fresh offset into the future, in seconds: at least
// 1000 s, and at least 1000 s away from every offset returned before, so
// that two deadlines set by different commands never differ only by the
// time that passed between the commands (which would make GT/LT, and
// anything comparing deadlines, depend on timing). Offsets are
// b*1000+337: a sum of two or three of them (redis-py's additive extend)
// is never one of them either. Rarely the offset is huge (up to ~9e15 s,
// still valid for Redis's overflow checks when added to now).
func (g *cmdGen) futureSec() int64 {
	for {
		var b int64
		if g.chance(0.93) {
			b = 1 + g.r.Int64N(1_000_000)
		} else {
			b = 1_000_000_000 + g.r.Int64N(9_000_000_000_000)
		}
		if !g.used[b] {
			g.used[b] = true
			return b*1000 + 337
		}
	}
}

// badNumbers are invalid or out-of-range numbers. None of them can be
// read as a small positive TTL by a lenient parser: a tumbler that
// accepted one would differ from Redis on that very reply.
var badNumbers = []string{"abc", "", "1.5e9", "2000000.5", "0x1000000", "+2000000", " 2000000", "2000000 ",
	"0002000000", "-0", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e10"}

// relSec is a relative TTL in seconds: usually a fresh future offset,
// else zero, negative, invalid or overflowing.
func (g *cmdGen) relSec() string {
	if g.chance(0.82) {
		return strconv.FormatInt(g.futureSec(), 10)
	}
	if g.chance(0.4) {
		return g.pick("0", "-1", "-1000000", "-9223372036854775808",
			"9223372036854775807", "9223372036854775", "9223372036854776", "9223372036854")
	}
	return g.pick(badNumbers...)
}

// relMs is a relative TTL in milliseconds, like relSec.
func (g *cmdGen) relMs() string {
	if g.chance(0.82) {
		return strconv.FormatInt(g.futureSec()*1000+g.r.Int64N(1000), 10)
	}
	if g.chance(0.4) {
		return g.pick("0", "-1", "-1000000", "-9223372036854775808",
			"9223372036854775807", "9223372036854775000", "9223370000000000000")
	}
	return g.pick(badNumbers...)
}

// absSec is an absolute Unix time in seconds: the future (≥ 1000 s
// ahead), the past, or invalid.
func (g *cmdGen) absSec() string {
	now := g.now().Unix()
	switch n := g.r.IntN(20); {
	case n < 14:
		return strconv.FormatInt(now+g.futureSec(), 10)
	case n < 17:
		return g.pick(strconv.FormatInt(now-1000-g.r.Int64N(1_000_000), 10), "1", "0", "-1", "-9223372036854775808")
	case n < 18:
		return g.pick("9223372036854775", "9223372036854776", "9223372036854775807")
	default:
		return g.pick(badNumbers...)
	}
}

// absMs is an absolute Unix time in milliseconds, like absSec.
func (g *cmdGen) absMs() string {
	now := g.now().UnixMilli()
	switch n := g.r.IntN(20); {
	case n < 14:
		return strconv.FormatInt(now+g.futureSec()*1000+g.r.Int64N(1000), 10)
	case n < 17:
		return g.pick(strconv.FormatInt(now-1_000_000-g.r.Int64N(1_000_000_000), 10), "1", "0", "-1", "-9223372036854775808")
	case n < 18:
		return g.pick("9223372036854775807", "9223372036854775806", "9223372036854775808")
	default:
		return g.pick(badNumbers...)
	}
}

// expiryOpt is one SET/GETEX expiry option with its argument (sometimes
// missing).
func (g *cmdGen) expiryOpt(name string) []string {
	out := []string{g.kw(name)}
	if g.chance(0.04) {
		return out // argument missing
	}
	switch name {
	case "EX":
		return append(out, g.relSec())
	case "PX":
		return append(out, g.relMs())
	case "EXAT":
		return append(out, g.absSec())
	case "PXAT":
		return append(out, g.absMs())
	}
	return out
}

func (g *cmdGen) set() []string {
	args := []string{g.kw("SET"), g.key(), g.value()}
	if g.chance(0.45) {
		// the shapes lock clients send
		switch g.r.IntN(8) {
		case 0: // redsync, redis-py 4.3.4: px N nx
			return append(args, g.kw("PX"), g.relMs(), g.kw("NX"))
		case 1: // Jedis, node-redis
			return append(args, g.kw("NX"), g.kw("PX"), g.relMs())
		case 2: // StackExchange.Redis, python-redis-lock
			return append(args, g.kw("EX"), g.relSec(), g.kw("NX"))
		case 3: // rueidislock
			return append(args, g.kw("NX"), g.kw("PXAT"), g.absMs())
		case 4:
			return append(args, g.kw("XX"), g.kw("KEEPTTL"))
		case 5:
			return append(args, g.kw("GET"))
		case 6:
			return append(args, g.kw("NX"), g.kw("GET"), g.kw("EX"), g.relSec())
		default:
			return args
		}
	}
	for n := g.r.IntN(4); n > 0; n-- {
		switch o := g.pick("NX", "XX", "GET", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "FOO"); o {
		case "EX", "PX", "EXAT", "PXAT":
			args = append(args, g.expiryOpt(o)...)
		default:
			args = append(args, g.kw(o))
		}
	}
	return args
}

func (g *cmdGen) getex() []string {
	args := []string{g.kw("GETEX"), g.key()}
	for n := g.r.IntN(3); n > 0; n-- {
		switch o := g.pick("EX", "PX", "EXAT", "PXAT", "PERSIST", "PERSIST", "FOO"); o {
		case "PERSIST", "FOO":
			args = append(args, g.kw(o))
		default:
			args = append(args, g.expiryOpt(o)...)
		}
	}
	return args
}

// expire builds EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT with NX/XX/GT/LT flags.
func (g *cmdGen) expire() []string {
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
	args := []string{g.kw(name), g.key(), when}
	n := 0
	if g.chance(0.55) {
		n = 1 + g.r.IntN(2)
	}
	for ; n > 0; n-- {
		args = append(args, g.kw(g.pick("NX", "XX", "GT", "LT", "NX", "XX", "GT", "LT", "FOO")))
	}
	return args
}

func (g *cmdGen) delta() string {
	return g.pick("1", "-1", "5", "0", "1000", "abc", "", "1.5", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775807")
}

func (g *cmdGen) pairs(cmd string) []string {
	args := []string{g.kw(cmd)}
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		args = append(args, g.key(), g.value())
	}
	if g.chance(0.1) {
		args = args[:len(args)-1] // odd number of arguments
	}
	return args
}

// next generates the next command.
func (g *cmdGen) next() rstep {
	var args []string
	var tol int64
	switch n := g.r.IntN(100); {
	case n < 16:
		args = g.set()
	case n < 20:
		args = []string{g.kw("GET"), g.key()}
	case n < 22:
		args = []string{g.kw("SETNX"), g.key(), g.value()}
	case n < 24:
		args = []string{g.kw("SETEX"), g.key(), g.relSec(), g.value()}
	case n < 26:
		args = []string{g.kw("PSETEX"), g.key(), g.relMs(), g.value()}
	case n < 27:
		args = []string{g.kw("GETSET"), g.key(), g.value()}
	case n < 28:
		args = []string{g.kw("GETDEL"), g.key()}
	case n < 30:
		args = g.getex()
	case n < 33:
		args = append([]string{g.kw(g.pick("DEL", "UNLINK", "EXISTS"))}, g.keys(1, 3)...)
	case n < 34:
		args = []string{g.kw("TYPE"), g.key()}
	case n < 42:
		args = g.expire()
	case n < 43:
		args = []string{g.kw("PERSIST"), g.key()}
	case n < 47:
		cmd := g.pick("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME")
		args = []string{g.kw(cmd), g.key()}
		tol = tolSec
		if cmd[0] == 'P' {
			tol = tolMs
		}
	case n < 50:
		switch cmd := g.pick("INCR", "DECR", "INCRBY", "DECRBY"); cmd {
		case "INCR", "DECR":
			args = []string{g.kw(cmd), g.pick(ctrKeys[0], ctrKeys[1], g.key())}
		default:
			args = []string{g.kw(cmd), g.pick(ctrKeys[0], ctrKeys[1], g.key()), g.delta()}
		}
	case n < 51:
		args = []string{g.kw("APPEND"), g.key(), g.value()}
	case n < 52:
		args = []string{g.kw("STRLEN"), g.key()}
	case n < 54:
		args = g.pairs(g.pick("MSET", "MSETNX"))
	case n < 55:
		args = append([]string{g.kw("MGET")}, g.keys(1, 4)...)
	case n < 58:
		switch cmd := g.pick("LPUSH", "RPUSH", "LPOP", "LLEN"); cmd {
		case "LPUSH", "RPUSH":
			k := g.pick(listKey, listKey, g.key())
			args = append([]string{g.kw(cmd), k}, g.token())
			if g.chance(0.3) {
				args = append(args, g.token())
			}
		case "LPOP":
			args = []string{g.kw(cmd), g.pick(listKey, listKey, g.key())}
			if g.chance(0.3) {
				args = append(args, g.pick("1", "2", "0", "-1", "abc"))
			}
		default:
			args = []string{g.kw(cmd), g.pick(listKey, g.key())}
		}
	case n < 61:
		k := g.pick(hashKey, hashKey, g.key())
		switch cmd := g.pick("HSET", "HGET", "HDEL"); cmd {
		case "HSET":
			args = []string{g.kw(cmd), k, g.field(), g.value()}
			if g.chance(0.2) {
				args = append(args, g.field(), g.value())
			}
		case "HGET":
			args = []string{g.kw(cmd), k, g.field()}
		default:
			args = []string{g.kw(cmd), k, g.field()}
			if g.chance(0.3) {
				args = append(args, g.field())
			}
		}
	case n < 95:
		return g.eval()
	case n < 98:
		args = g.script()
	default:
		// the error quotes the arguments: at most 128 bytes of them, with
		// CR and LF turned into spaces
		args = []string{g.pick("NOSUCHCMD", "sett", "Lock", "EVALX", "bad\r\ncmd"), g.key(), g.token()}
		switch g.r.IntN(4) {
		case 0:
			args = args[:1]
		case 1:
			args = append(args, strings.Repeat("x", 40+g.r.IntN(100)), g.token())
		}
	}
	// wrong arity now and then: a missing last or an extra argument
	if g.chance(0.04) && len(args) > 1 {
		args = args[:len(args)-1]
	} else if g.chance(0.03) {
		args = append(args, g.pick("extra", "NX", "0", "GET"))
	}
	return rstep{args: args, tol: tol}
}

// ---- scripts ----

// luaScript is a lock client's script and how that client calls it.
type luaScript struct {
	name string
	body string
	// keys and argv return the arguments the client sends.
	keys func(g *cmdGen) []string
	argv func(g *cmdGen) []string
	// timeReply: the script may return a PTTL.
	timeReply bool
}

func oneKey(g *cmdGen) []string { return []string{g.key()} }

func redissonKeys(g *cmdGen) []string {
	k := g.pick(hashKey, hashKey, g.key())
	return []string{k, "redisson_lock__channel:{" + k + "}"}
}

func (g *cmdGen) redissonField() string { return g.pick("uuid-1:7", "uuid-2:9", "uuid-1:7", "f1") }

var luaScripts = []luaScript{
	// go-redsync/redsync v4 scripts.go
	{name: "redsync delete", body: `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }},
	{name: "redsync touchWithSetNX", body: `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
`, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "redsync touch", body: `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},

	// bsm/redislock v0.9.4
	{name: "redislock refresh", body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "redislock release", body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }},
	{name: "redislock pttl", body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }, timeReply: true},
	// ARGV[2] is always numeric: tonumber(nil)-1 would raise a Lua
	// arithmetic error, whose text is a known gopher-lua difference
	// (knownDiffs, eval.txt:339), not what this test is after.
	{name: "redislock obtain", body: `
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`, keys: oneKey, argv: func(g *cmdGen) []string {
		return []string{g.token(), g.pick("0", "1", "3", "4", "100", "-2"), g.relMs()}
	}},

	// zeromicro/go-zero core/stores/redis lockscript.lua, delscript.lua
	{name: "go-zero lock", body: `if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
else
    return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
end`, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "go-zero del", body: `if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
else
    return 0
end`, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }},

	// redis/rueidis rueidislock/lock.go
	{name: "rueidislock delkey", body: `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }},
	{name: "rueidislock extend", body: `if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.absMs()} }},
	{name: "rueidislock acqms", body: `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "rueidislock acqat", body: `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.absMs()} }},
	{name: "rueidislock fcqms", body: `local r = redis.call("SET",KEYS[1],ARGV[1],"PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "rueidislock fcqat", body: `local r = redis.call("SET",KEYS[1],ARGV[1],"PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`,
		keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.absMs()} }},

	// redis-py 4.3.4 redis/lock.py
	{name: "redis-py release", body: `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    `, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token()} }},
	// ARGV[2] is numeric: with ARGV[3] == "0" it is added to the PTTL in
	// Lua (a non-number would raise a gopher-lua-worded arithmetic error).
	{name: "redis-py extend", body: `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        local expiration = redis.call('pttl', KEYS[1])
        if not expiration then
            expiration = 0
        end
        if expiration < 0 then
            return 0
        end

        local newttl = ARGV[2]
        if ARGV[3] == "0" then
            newttl = ARGV[2] + expiration
        end
        redis.call('pexpire', KEYS[1], newttl)
        return 1
    `, keys: oneKey, argv: func(g *cmdGen) []string {
		ms := g.relMs()
		if _, err := strconv.ParseInt(ms, 10, 64); err != nil || strings.ContainsAny(ms, "+ ") || len(ms) > 1 && ms[0] == '0' {
			ms = g.pick("0", "-1", "-5000")
		}
		return []string{g.token(), ms, g.pick("0", "1")}
	}},
	{name: "redis-py reacquire", body: `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    `, keys: oneKey, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},

	// Redisson RedissonLock (3.x): tryLockInnerAsync, unlockInnerAsync,
	// renewExpirationAsync, the newer unlock with its latch key, and the
	// probe it runs at start.
	{name: "redisson lock", body: "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);",
		keys: func(g *cmdGen) []string { return []string{g.pick(hashKey, hashKey, g.key())} },
		argv: func(g *cmdGen) []string { return []string{g.relMs(), g.redissonField()} }, timeReply: true},
	{name: "redisson unlock", body: "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return nil;",
		keys: redissonKeys,
		argv: func(g *cmdGen) []string { return []string{"0", g.relMs(), g.redissonField()} }},
	{name: "redisson renew", body: "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return 0;",
		keys: func(g *cmdGen) []string { return []string{g.pick(hashKey, hashKey, g.key())} },
		argv: func(g *cmdGen) []string { return []string{g.relMs(), g.redissonField()} }},
	{name: "redisson unlock latch", body: redissonUnlockLatch,
		keys: func(g *cmdGen) []string {
			k := redissonKeys(g)
			return append(k, g.pick(latchKey, latchKey, g.key()))
		},
		argv: func(g *cmdGen) []string {
			return []string{"0", g.relMs(), g.redissonField(), g.pick("PUBLISH", "publish", "spublish"), g.relMs()}
		}},
	{name: "redisson probe", body: "redis.call('get', KEYS[1]) redis.call('get', KEYS[2])",
		keys: func(g *cmdGen) []string { return []string{g.key(), g.key()} },
		argv: func(g *cmdGen) []string { return nil }},

	// mike-marcacci/node-redlock v5
	{name: "redlock acquire", body: `
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
`, keys: func(g *cmdGen) []string { return g.keys(1, 3) }, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "redlock extend", body: `
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
`, keys: func(g *cmdGen) []string { return g.keys(1, 3) }, argv: func(g *cmdGen) []string { return []string{g.token(), g.relMs()} }},
	{name: "redlock release", body: `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
`, keys: func(g *cmdGen) []string { return g.keys(1, 3) }, argv: func(g *cmdGen) []string { return []string{g.token()} }},
}

// redissonUnlockLatch is Redisson's newer unlockInnerAsync, with its
// unlock latch key KEYS[3].
const redissonUnlockLatch = `local val = redis.call('get', KEYS[3]);
if val ~= false then
    return tonumber(val);
end;

if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    redis.call('set', KEYS[3], 0, 'px', ARGV[5]);
    return 0;
else
    redis.call('del', KEYS[1]);
    redis.call(ARGV[4], KEYS[2], ARGV[1]);
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]);
    return 1;
end;`

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// eval builds EVAL or EVALSHA of a lock script with the arguments its
// client sends, sometimes with a wrong numkeys or SHA.
func (g *cmdGen) eval() rstep {
	sc := luaScripts[g.r.IntN(len(luaScripts))]
	keys, argv := sc.keys(g), sc.argv(g)
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.08) {
		// Only numkeys that fail before the script runs, or 0: every
		// script calls redis.call with KEYS[1] (nil → a Redis error)
		// before it touches an ARGV, except redlock's, whose loops then
		// do nothing. A shifted numkeys could move a token into a TTL
		// argument and let a key expire during the run.
		numkeys = g.pick("-1", "-9223372036854775808", "abc", "1.0", "", "0",
			strconv.Itoa(len(keys)+len(argv)+1), "9223372036854775807")
	}
	var args []string
	if g.chance(0.6) {
		sha := sha1hex(sc.body)
		switch n := g.r.IntN(20); {
		case n == 0:
			sha = strings.ToUpper(sha)
		case n == 1:
			sha = "ffffffffffffffffffffffffffffffffffffffff"
		case n == 2:
			sha = sha[:10]
		}
		args = []string{g.kw("EVALSHA"), sha, numkeys}
	} else {
		args = []string{g.kw("EVAL"), sc.body, numkeys}
	}
	if g.chance(0.01) {
		args = args[:len(args)-1] // no numkeys: wrong arity
	}
	args = append(append(args, keys...), argv...)
	var tol int64
	if sc.timeReply {
		tol = tolMs
	}
	return rstep{args: args, tol: tol, script: sc.name}
}

func (g *cmdGen) script() []string {
	switch n := g.r.IntN(40); {
	case n < 19:
		return []string{g.kw("SCRIPT"), g.kw("LOAD"), luaScripts[g.r.IntN(len(luaScripts))].body}
	case n < 36:
		args := []string{g.kw("SCRIPT"), g.kw("EXISTS")}
		for k := 1 + g.r.IntN(3); k > 0; k-- {
			sha := sha1hex(luaScripts[g.r.IntN(len(luaScripts))].body)
			switch g.r.IntN(4) {
			case 0:
				sha = "0000000000000000000000000000000000000000"
			case 1:
				sha = strings.ToUpper(sha)
			}
			args = append(args, sha)
		}
		return args
	case n < 37:
		return []string{g.kw("SCRIPT"), g.kw("FLUSH"), g.pick("SYNC", "ASYNC", "sync")}
	case n < 39:
		return []string{g.kw("SCRIPT"), g.kw("NOPE")}
	default:
		return []string{g.kw("SCRIPT"), g.kw("FLUSH")}
	}
}

// ---- tests of the test ----

// TestRandomDiffCompare shows the comparison catches differences: exact
// replies must be byte-identical, and the time tolerance applies only to
// clock-like integers.
func TestRandomDiffCompare(t *testing.T) {
	cases := []struct {
		want, got string
		tol       int64
		same      bool
	}{
		{"+OK\r\n", "+OK\r\n", 0, true},
		{"+OK\r\n", "$-1\r\n", 0, false},
		{"$-1\r\n", "_\r\n", 0, false},
		{":1\r\n", ":0\r\n", 0, false},
		{"$5\r\ntok:1\r\n", "$5\r\ntok:2\r\n", 0, false},
		{"-ERR syntax error\r\n", "-ERR Syntax error\r\n", 0, false},
		{":1000337\r\n", ":1000336\r\n", 0, false},
		{":1000337\r\n", ":1000336\r\n", tolSec, true},
		{":1000337\r\n", ":1000341\r\n", tolSec, false},
		{":1000337000\r\n", ":1000335500\r\n", tolMs, true},
		{":1000337000\r\n", ":1000332000\r\n", tolMs, false},
		{":-1\r\n", ":-2\r\n", tolMs, false},   // sentinels stay exact
		{":-3\r\n", ":-1\r\n", tolMs, false},   // redislock pttl's "not held"
		{":1\r\n", ":0\r\n", tolMs, false},     // a script's 0/1 is not a time
		{":-1\r\n", ":1000\r\n", tolMs, false}, // no TTL vs a TTL
		{"$-1\r\n", ":1000337000\r\n", tolMs, false},
		{":1000337000\r\n", "$10\r\n1000337000\r\n", tolMs, false},
	}
	for _, c := range cases {
		why := compareRandom([]byte(c.want), []byte(c.got), c.tol)
		if (why == "") != c.same {
			t.Errorf("compareRandom(%q, %q, %d) = %q, want same=%v", c.want, c.got, c.tol, why, c.same)
		}
	}
}

// fakeServer answers every command from a function; it records what it
// was sent.
type fakeServer struct {
	reply func(args []string) string
	sent  [][]string
}

func (f *fakeServer) do(args ...string) ([]byte, error) {
	f.sent = append(f.sent, args)
	return []byte(f.reply(args)), nil
}

// TestRandomDiffReportsMismatches runs the loop against two fake servers
// that differ only in GET replies, and checks that every differing GET is
// reported with its seed, step and preceding commands, and that nothing
// else is.
func TestRandomDiffReportsMismatches(t *testing.T) {
	isGet := func(args []string) bool { return strings.EqualFold(args[0], "GET") && len(args) == 2 }
	a := &fakeServer{reply: func(args []string) string { return "+OK\r\n" }}
	b := &fakeServer{reply: func(args []string) string {
		if isGet(args) {
			return "$-1\r\n"
		}
		return "+OK\r\n"
	}}
	fixed := func() time.Time { return time.Unix(1_700_000_000, 0) }
	run := randomRun{seed: 42, steps: 400}
	res, err := runRandom(run, a, b, fixed, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.steps != run.steps {
		t.Fatalf("ran %d steps, want %d", res.steps, run.steps)
	}
	gets := 0
	for _, args := range a.sent {
		if isGet(args) {
			gets++
		}
	}
	if gets == 0 || len(res.mismatches) != gets {
		t.Fatalf("%d mismatches reported for %d differing GETs", len(res.mismatches), gets)
	}
	for _, m := range res.mismatches {
		if !isGet(m.args) || m.run.seed != 42 || string(m.want) != "+OK\r\n" || string(m.got) != "$-1\r\n" {
			t.Fatalf("bad mismatch record: %+v", m)
		}
		if m.step >= historyLen && len(m.history) != historyLen {
			t.Fatalf("step %d: %d preceding commands recorded, want %d", m.step, len(m.history), historyLen)
		}
		s := m.String()
		for _, want := range []string{"seed 42", fmt.Sprintf("step %d:", m.step), "redis:   \"+OK\\r\\n\"", "tumbler: \"$-1\\r\\n\"", "preceding commands"} {
			if !strings.Contains(s, want) {
				t.Fatalf("report lacks %q:\n%s", want, s)
			}
		}
	}
	// every mismatch resynchronises both servers
	flushes := func(f *fakeServer) int {
		n := 0
		for _, args := range f.sent {
			if len(args) == 1 && args[0] == "FLUSHALL" {
				n++
			}
		}
		return n
	}
	if flushes(a) != gets || flushes(b) != gets {
		t.Fatalf("FLUSHALL sent %d/%d times, want %d", flushes(a), flushes(b), gets)
	}

	// the limit stops the run early
	res, err = runRandom(run, &fakeServer{reply: a.reply}, &fakeServer{reply: b.reply}, fixed, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.mismatches) != 3 || res.steps >= run.steps {
		t.Fatalf("limit 3: %d mismatches after %d steps", len(res.mismatches), res.steps)
	}
}

// TestRandomDiffDeterministic checks a seed always generates the same
// commands (for a fixed clock), and that the time rules hold: every
// relative TTL is ≥ 1000 s or not positive, every absolute time is ≥ 1000 s
// ahead or in the past.
func TestRandomDiffDeterministic(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	fixed := func() time.Time { return now }
	g1, g2 := newCmdGen(7, fixed), newCmdGen(7, fixed)
	for i := 0; i < 3000; i++ {
		s1, s2 := g1.next(), g2.next()
		if show(s1.args) != show(s2.args) || s1.tol != s2.tol {
			t.Fatalf("step %d: %s vs %s", i, show(s1.args), show(s2.args))
		}
	}
	g := newCmdGen(8, fixed)
	for i := 0; i < 2000; i++ {
		for _, check := range []struct {
			v     string
			min   int64 // smallest valid positive value
			unit  int64 // 1 for relative, now for absolute
			isAbs bool
		}{
			{g.relSec(), 1000, 0, false},
			{g.relMs(), 1_000_000, 0, false},
			{g.absSec(), now.Unix() + 1000, now.Unix(), true},
			{g.absMs(), now.UnixMilli() + 1_000_000, now.UnixMilli(), true},
		} {
			n, err := strconv.ParseInt(check.v, 10, 64)
			if err != nil || (len(check.v) > 1 && check.v[0] == '0') {
				continue // invalid for Redis too
			}
			if check.isAbs {
				if n > check.unit && n < check.min {
					t.Fatalf("absolute time %d is less than 1000 s ahead of %d", n, check.unit)
				}
			} else if n > 0 && n < check.min {
				t.Fatalf("relative TTL %d is below %d", n, check.min)
			}
		}
	}
}
