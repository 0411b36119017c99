package diff

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestLuaTableConstructorDiff builds random table constructors on
// redis-server and tumbler and compares what they make: list items from
// none to 120 (50 and 100, where Lua 5.1 flushes them, often), record
// fields ("[i] = v", "k = v", keys that are calls, nil or NaN keys that
// fail) at random places, often just after the 50th or 100th item or
// after the last, and a call or "..." of 0 to 5 values ending the list
// (luavm/longtable.go).
// The field expressions count their calls, so the order they run in,
// and where a failing store stops them, show in the reply, with the
// error. One case in three traverses the table with pairs instead
// (luavm/presize.go's sizes; the fields the README's traversal
// differences leave out are left out).
//
// For longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_LUACTOR_SEED=7 TUMBLER_LUACTOR_CASES=100000 \
//	    go test -run TestLuaTableConstructorDiff ./diff/
func TestLuaTableConstructorDiff(t *testing.T) {
	seed, cases := seedAndCases(t, "LUACTOR", 1000)
	rc, tc := dialPair(t)
	r := rand.New(rand.NewPCG(seed, 0x63746f72))
	mismatches := 0
	for i := 0; i < cases && mismatches < 10; i++ {
		args := []string{"EVAL", constructorCase(r, i%3 == 2), "0"}
		if want, got := doBoth(t, rc, tc, args); !bytes.Equal(want, got) {
			mismatches++
			t.Errorf("case %d (seed %d): %s\n redis:   %q\n tumbler: %q", i, seed, strconv.Quote(args[1]), want, got)
		}
	}
}

// constructorCase is a script that builds a random constructor's table
// and returns its values at 1 to 130 and its string keys (traverse: the
// pairs of pairs), and how many calls its fields made; or the error that
// stopped it and the calls made until then.
func constructorCase(r *rand.Rand, traverse bool) string {
	n := []int{r.IntN(121), 50, 100, 45 + r.IntN(11), 95 + r.IntN(11)}[r.IntN(5)]
	if traverse {
		n = max(n, 1)
	}
	var records []string
	for range r.IntN(7) {
		kinds := 6
		if traverse {
			kinds = 3 // no key of a call's (beyond the list: not in ascending order), none that fails
		}
		switch r.IntN(kinds) {
		case 0:
			records = append(records, "k"+strconv.Itoa(1+r.IntN(3))+" = 'r'")
		case 1:
			i := 1 + r.IntN(n+5)
			if traverse {
				i = 1 + r.IntN(n)
			}
			records = append(records, "["+strconv.Itoa(i)+"] = 'r"+strconv.Itoa(r.IntN(10))+"'")
		case 2:
			records = append(records, "x = c()")
		case 3:
			records = append(records, "[c()] = 'c'")
		case 4:
			records = append(records, "[z] = c()")
		case 5:
			records = append(records, "[0/0] = c()")
		}
	}
	// the records' places: each after a number of list items, often a
	// multiple of 50, or all of them
	after := make([]int, len(records))
	for i := range after {
		switch after[i] = r.IntN(n + 1); r.IntN(4) {
		case 0, 1:
			if n >= 50 {
				after[i] = 50 * (1 + r.IntN(n/50))
			}
		case 2:
			after[i] = n
		}
	}
	var fields []string
	for item := 0; item <= n; item++ {
		for i, a := range after {
			if a == item {
				fields = append(fields, records[i])
			}
		}
		if item == n {
			break
		}
		switch v := strconv.Itoa(item + 1); r.IntN(10) {
		case 0:
			fields = append(fields, "'v"+v+"'")
		case 1:
			fields = append(fields, "c()")
		case 2:
			if !traverse {
				fields = append(fields, "nil")
				break
			}
			fallthrough
		default:
			fields = append(fields, v)
		}
	}
	switch r.IntN(4) {
	case 0:
		var vs []string
		for i := range r.IntN(6) {
			vs = append(vs, "'u"+strconv.Itoa(i)+"'")
		}
		fields = append(fields, "unpack({"+strings.Join(vs, ", ")+"})")
	case 1:
		fields = append(fields, "...")
	}
	show := "for i = 1, 130 do o[#o+1] = tostring(t[i]) end " +
		"o[#o+1] = tostring(t.k1) .. tostring(t.k2) .. tostring(t.k3) .. tostring(t.x) "
	if traverse {
		show = "for k, v in pairs(t) do o[#o+1] = tostring(k) .. '=' .. tostring(v) end "
	}
	return "local n = 0 local function c() n = n + 1 return n end local z " +
		"local function mk(...) return {" + strings.Join(fields, ", ") + "} end " +
		"local ok, t = pcall(mk, 'a', 'b', 'c') if not ok then return t .. ' ' .. n end " +
		"local o = {n} " + show + "return table.concat(o, ' ')"
}
