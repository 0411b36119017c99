package diff

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestLuaPairsOrderDiff builds random tables on redis-server and tumbler
// and compares the order pairs, next and table.foreach visit their keys
// in, byte for byte: constructors' tables, keys of every kind (strings, integers in and far
// beyond the array part, negative and fractional numbers, booleans),
// deletions during a traversal, after the last insertions, keys set again
// after their deletion, and tables grown again after a traversal.
//
// The tables are built as tumbler's model of Lua 5.1's tables can follow
// them (luavm/pairs51.go): a run of integer keys in ascending order, then
// the other keys, and deletions either during a traversal or after the
// last keys added before one (the README says what differs otherwise).
// One case in four is a table constructor of random fields instead (its
// own script), then maybe more keys.
//
// One script (luaPairsScript) replays the operations in ARGV. For longer
// exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_LUAPAIRS_SEED=7 TUMBLER_LUAPAIRS_CASES=100000 \
//	    go test -run TestLuaPairsOrderDiff ./diff/
func TestLuaPairsOrderDiff(t *testing.T) {
	seed, cases := seedAndCases(t, "LUAPAIRS", 1500)
	rc, tc := dialPair(t)
	sha := scriptLoad(t, luaPairsScript, rc, tc)
	g := &pairsGen{r: rand.New(rand.NewPCG(seed, 0x7061697273))}
	mismatches := 0
	for i := 0; i < cases && mismatches < 10; i++ {
		args := append([]string{"EVALSHA", sha, "0"}, g.ops()...)
		if i%4 == 3 { // a table constructor's (its own script)
			args = []string{"EVAL", g.constructor(), "0"}
		}
		if want, got := doBoth(t, rc, tc, args); !bytes.Equal(want, got) {
			mismatches++
			t.Errorf("case %d (seed %d): %s\n redis:   %q\n tumbler: %q", i, seed, showFull(args[1:]), want, got)
		}
	}
}

// scriptLoad loads script on each of cs and returns its SHA1.
func scriptLoad(t *testing.T, script string, cs ...*conn) string {
	t.Helper()
	var sha []byte
	for _, c := range cs {
		reply, err := c.do("SCRIPT", "LOAD", script)
		if err != nil || len(reply) == 0 || reply[0] != '$' {
			t.Fatalf("SCRIPT LOAD: %q %v", reply, err)
		}
		sha = bytes.TrimSpace(reply[bytes.IndexByte(reply, '\n')+1:])
	}
	return string(sha)
}

// doBoth sends args to redis-server (rc) and tumbler (tc) and returns
// their replies.
func doBoth(t *testing.T, rc, tc *conn, args []string) (want, got []byte) {
	t.Helper()
	want, err := rc.do(args...)
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	if got, err = tc.do(args...); err != nil {
		t.Fatalf("tumbler: %v", err)
	}
	return want, got
}

// luaPairsScript replays ARGV on a table: +k sets key k, -k deletes it,
// Dk marks it to be deleted by the next T; T traverses with pairs,
// deleting the marked keys as met, N with next, F with table.foreach.
// A key is s<string>, n<number> or b1/b0. It returns the keys each
// traversal met, and then those of a last one, after a "|" each.
const luaPairsScript = `
collectgarbage("stop") local t, out, del = {}, {}, {}
local function key(a)
  local c, r = a:sub(1, 1), a:sub(2)
  if c == 's' then return r elseif c == 'n' then return tonumber(r) end
  return r == '1'
end
local function show(k)
  local ty = type(k)
  if ty == 'string' then return 's' .. k elseif ty == 'number' then return 'n' .. tostring(k) end
  return 'b' .. tostring(k)
end
for i = 1, #ARGV do
  local a = ARGV[i]
  local c = a:sub(1, 1)
  if c == '+' then t[key(a:sub(2))] = i
  elseif c == '-' then t[key(a:sub(2))] = nil
  elseif c == 'D' then del[key(a:sub(2))] = true
  elseif c == 'T' then
    out[#out+1] = '|'
    for k in pairs(t) do out[#out+1] = show(k) if del[k] then t[k] = nil end end
    del = {}
  elseif c == 'N' then
    out[#out+1] = '|'
    local k = next(t)
    while k ~= nil do out[#out+1] = show(k) k = next(t, k) end
  elseif c == 'F' then
    out[#out+1] = '|'
    table.foreach(t, function(k) out[#out+1] = show(k) end)
  end
end
out[#out+1] = '|'
for k in pairs(t) do out[#out+1] = show(k) end
return out`

type pairsGen struct {
	r    *rand.Rand
	used map[string]bool
	keys []string // the keys set, in order
	gone map[string]bool
	seen int // keys[:seen] were set before the last traversal
	maxN int // the largest integer key in the array part's range set
	out  []string
}

// ops is one case: build, maybe traverse deleting some keys, maybe add
// more, maybe delete some and set some of those again.
func (g *pairsGen) ops() []string {
	g.used, g.keys, g.gone, g.seen, g.maxN, g.out = map[string]bool{}, nil, map[string]bool{}, 0, 0, nil
	size := 1 + g.r.IntN(12)
	if g.r.IntN(6) == 0 {
		size = 1 + g.r.IntN(300)
	}
	if g.r.IntN(40) == 0 {
		size = 1 + g.r.IntN(3000)
	}
	g.add(size)
	grown := false // keys added since the last traversal
	if g.r.IntN(2) == 0 {
		g.traverse(true)
		if g.r.IntN(2) == 0 {
			g.add(1 + g.r.IntN(size+4))
			grown = true
			if g.r.IntN(2) == 0 {
				g.traverse(false)
				grown = false
			}
		}
	}
	if g.r.IntN(2) == 0 {
		// deletions after the last keys added (a traversal between them,
		// as the model cannot tell when keys were deleted before it
		// looks), then some of those keys set again
		if grown {
			g.traverse(false)
		}
		var gone []string
		for i, k := range g.keys {
			// a key present, and not an integer set since the last
			// traversal: the model cannot tell those deleted from never set
			if !g.gone[k] && (i < g.seen || !strings.HasPrefix(k, "n") || k[1] < '0' || k[1] > '9') && g.r.IntN(3) == 0 {
				g.out = append(g.out, "-"+k)
				gone = append(gone, k)
			}
		}
		for _, k := range gone {
			if g.r.IntN(3) == 0 {
				g.out = append(g.out, "+"+k)
			}
		}
	}
	return g.out
}

// traverse adds a traversal: with deleting, pairs deleting random keys.
func (g *pairsGen) traverse(deleting bool) {
	if !deleting {
		g.out = append(g.out, g.pick("T", "N", "F"))
		g.seen = len(g.keys)
		return
	}
	for _, k := range g.keys {
		if g.r.IntN(3) == 0 {
			g.out = append(g.out, "D"+k)
			g.gone[k] = true
		}
	}
	g.out = append(g.out, "T")
	g.seen = len(g.keys)
}

func (g *pairsGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

// add sets up to n new keys: integers of the array part's range first, in
// ascending order, then others in random order.
func (g *pairsGen) add(n int) {
	ints := 0
	switch g.r.IntN(4) {
	case 0:
		ints = n
	case 1:
		ints = g.r.IntN(n + 1)
	}
	gap := 1
	if g.r.IntN(3) == 0 {
		gap = 1 + g.r.IntN(20)
	}
	for i := 0; i < ints; i++ {
		g.maxN += 1 + g.r.IntN(gap)
		g.set("n" + strconv.Itoa(g.maxN))
	}
	for i := ints; i < n; i++ {
		g.set(g.otherKey())
	}
}

func (g *pairsGen) set(k string) {
	if g.used[k] {
		return
	}
	g.used[k] = true
	g.keys = append(g.keys, k)
	g.out = append(g.out, "+"+k)
}

// otherKey is a key outside the array part's range.
func (g *pairsGen) otherKey() string {
	switch g.r.IntN(12) {
	case 0:
		return "n-" + strconv.Itoa(g.r.IntN(1000)) // (n-0 is 0)
	case 1:
		return "n" + strconv.FormatFloat(float64(2*g.r.IntN(2000)+1-2000)/16, 'g', -1, 64) // (never an integer)
	case 2:
		return "n" + strconv.Itoa(4194304+g.r.IntN(1<<24)) // past gopher-lua's array part
	case 3:
		return g.pick("n2147483648", "n4294967296", "n1e+15", "n-1e+300", "n1e-300", "n0.1", "n9007199254740992")
	case 4:
		return g.pick("b1", "b0")
	case 5:
		return "s" + strconv.Itoa(g.r.IntN(200))
	case 6:
		return "sk" + strconv.Itoa(g.r.IntN(5000))
	}
	const alpha = "abcxyzABC_019:-"
	var b strings.Builder
	for n := g.r.IntN(9); n > 0; n-- {
		b.WriteByte(alpha[g.r.IntN(len(alpha))])
	}
	return "s" + b.String()
}

// constructor is a script that makes a table with a constructor of random
// fields (list items, then a call's values last, and other keys: the
// integer ones in the array part's range where Lua presizes it), maybe
// adds keys, and returns them in pairs order, or the table as a map
// (values included: not from 50 list items on, with other fields, where
// gopher-lua can give items other values).
func (g *pairsGen) constructor() string {
	var fields []string
	na := g.r.IntN(4)
	if g.r.IntN(5) == 0 {
		na = g.r.IntN(120)
	}
	nh := g.r.IntN(12)
	if g.r.IntN(5) == 0 {
		nh = g.r.IntN(200)
	}
	items, others := na, nh
	for items+others > 0 {
		if g.r.IntN(items+others) < items {
			items--
			fields = append(fields, g.pick("'v'", "1", "true", "{}"))
			continue
		}
		others--
		k := g.otherKey()
		switch {
		case k[0] == 'b':
			k = map[byte]string{'1': "true", '0': "false"}[k[1]]
		case k[0] == 'n':
			k = k[1:]
		case g.r.IntN(2) == 0 && k != "s" && strings.Trim(k[1:], "abcxyzABC_") == "" && strings.IndexByte("_abcxyzABC", k[1]) >= 0:
			fields = append(fields, k[1:]+" = 1") // a name
			continue
		default:
			k = strconv.Quote(k[1:])
		}
		if na > 0 && g.r.IntN(8) == 0 { // in the array part
			k = strconv.Itoa(1 + g.r.IntN(na))
		}
		fields = append(fields, "["+k+"] = 1")
	}
	if g.r.IntN(6) == 0 {
		fields = append(fields, g.pick("(function() return 1, 2, 3 end)()", "((function() return 1, 2 end)())", "unpack({1, 2, 3, 4, 5})"))
	}
	var b strings.Builder
	b.WriteString("local t = {" + strings.Join(fields, ", ") + "}\n")
	for n := g.r.IntN(3) * g.r.IntN(6); n > 0; n-- {
		k := g.otherKey()
		switch k[0] {
		case 'b':
			k = map[byte]string{'1': "true", '0': "false"}[k[1]]
		case 'n':
			k = k[1:]
		default:
			k = strconv.Quote(k[1:])
		}
		b.WriteString("t[" + k + "] = 2\n")
	}
	if na < 50 && g.r.IntN(3) == 0 { // written as a map, in lua_next's order (see below)
		b.WriteString("return {map = t}")
	} else {
		b.WriteString("local r = {} for k in pairs(t) do r[#r+1] = type(k) .. ':' .. tostring(k) end return r")
	}
	return b.String()
}
