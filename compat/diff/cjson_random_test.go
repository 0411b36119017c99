package diff

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestCjsonRandomDiff sends the same random cjson scripts to redis-server
// and tumbler and compares the replies byte for byte: decoding of random
// JSON-ish bytes (valid JSON, lua-cjson's extensions such as hex, inf and
// nan, and mutated, truncated or corrupted texts) under random settings,
// and encoding of random tables (dense and sparse arrays, odd keys, NaN
// and infinities, control bytes, shared and cyclic tables, unsupported
// types) under random settings, errors included.
//
// Tables are built by assignments, one key at a time: Lua 5.1 presizes a
// table constructor's hash part, which can give its keys another lua_next
// order than the one tumbler rebuilds (luavm/lua51table.go).
//
// It runs a few thousand cases by default; for longer exploration:
//
//	TUMBLER_REQUIRE_REDIS=1 TUMBLER_CJSON_SEED=7 TUMBLER_CJSON_CASES=200000 \
//	    go test -run TestCjsonRandomDiff ./diff/
func TestCjsonRandomDiff(t *testing.T) {
	seed, cases := seedAndCases(t, "CJSON", 3000)
	rc, tc := dialPair(t)

	g := &cjsonGen{r: rand.New(rand.NewPCG(seed, 0x636a736f6e))}
	mismatches := 0
	for i := 0; i < cases && mismatches < 20; i++ {
		var args []string
		if g.r.IntN(2) == 0 {
			args = g.decodeCase()
		} else {
			args = g.encodeCase()
		}
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("redis: %v", err)
		}
		got, err := tc.do(args...)
		if err != nil {
			t.Fatalf("tumbler: %v", err)
		}
		if !bytes.Equal(want, got) {
			mismatches++
			shown := showFull(args)
			if os.Getenv("TUMBLER_CJSON_FULL") == "1" {
				shown = fmt.Sprintf("%q", args)
			}
			t.Errorf("case %d (seed %d): %s\n redis:   %q\n tumbler: %q", i, seed, shown, want, got)
		}
	}
}

type cjsonLine struct {
	key  int
	line string
}

type cjsonGen struct {
	r    *rand.Rand
	code strings.Builder
	nvar int
}

func (g *cjsonGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

// cjsonDumpScript decodes ARGV[1] with a fresh module table (settings in
// ARGV[2], ARGV[3]) and prints the result with its keys sorted, numbers
// to 17 digits, then re-encodes it.
const cjsonDumpScript = `
local c = cjson.new()
local out = {}
if ARGV[2] ~= '' then out[#out+1] = tostring(pcall(c.decode_invalid_numbers, ARGV[2] == '1')) end
if ARGV[3] ~= '' then out[#out+1] = tostring(pcall(c.decode_max_depth, tonumber(ARGV[3]))) end
local ok, v = pcall(c.decode, ARGV[1])
if not ok then out[#out+1] = 'E' .. v return out end
local function dump(v)
  local t = type(v)
  if t == 'table' then
    local ks = {}
    for k in pairs(v) do ks[#ks+1] = k end
    table.sort(ks, function(a, b)
      if type(a) ~= type(b) then return type(a) < type(b) end
      return a < b
    end)
    out[#out+1] = '{'
    for _, k in ipairs(ks) do dump(k) out[#out+1] = '=' dump(v[k]) out[#out+1] = ',' end
    out[#out+1] = '}'
  elseif t == 'number' then out[#out+1] = string.format('%.17g', v)
  elseif t == 'string' then out[#out+1] = string.format('%q', v)
  elseif t == 'userdata' then out[#out+1] = tostring(v == cjson.null)
  else out[#out+1] = t .. ':' .. tostring(v) end
end
dump(v)
c.encode_invalid_numbers(true)
local ok, s = pcall(c.encode, v)
out[#out+1] = tostring(ok) .. ':' .. s
return table.concat(out, ' ')`

func (g *cjsonGen) decodeCase() []string {
	var b strings.Builder
	g.jsonValue(&b, 0)
	s := b.String()
	for n := g.r.IntN(4); n > 0 && len(s) > 0 && g.r.IntN(3) == 0; n-- {
		i := g.r.IntN(len(s))
		switch g.r.IntN(4) {
		case 0:
			s = s[:i] + s[i+1:]
		case 1:
			s = s[:i] + string(rune(g.r.IntN(128))) + s[i:]
		case 2:
			s = s[:i] + g.pick(`"`, `\`, `[`, `]`, `{`, `}`, `,`, `:`, " ", "\x00", "\xff", "-", "e", ".", "0", "u") + s[i+1:]
		default:
			s = s[:i]
		}
	}
	inv, depth := "", ""
	switch g.r.IntN(6) {
	case 0:
		inv = "0"
	case 1:
		inv = "1"
	}
	if g.r.IntN(8) == 0 {
		depth = strconv.Itoa(g.r.IntN(5))
	}
	return []string{"EVAL", cjsonDumpScript, "0", s, inv, depth}
}

var cjsonNumberTexts = []string{
	"0", "-0", "1", "-1", "12", "1.5", "-2.25", "1e3", "1E-3", "1e+2", "2.5e-310", "1e999", "-1e999",
	"123456789012345678901234567890", "0.1", "1.", "-1.", ".5", "-.5", "01", "-01", "00", "0x10", "0X1f",
	"-0x10", "0x", "0x1p4", "0x.8", "0xg", "+1", "+0x1", "inf", "-inf", "Inf", "infinity", "-Infinity",
	"infinit", "nan", "-nan", "NaN", "nan(123)", "nan(", "NAN(x_y)", "-", "+", "1e", "1e+", "--1", "-+1",
	"9007199254740993", "4.9e-324", "1.7976931348623157e308", "1_000", "0.000001", "1e-7",
}

func (g *cjsonGen) jsonValue(b *strings.Builder, depth int) {
	ws := func() {
		if g.r.IntN(4) == 0 {
			b.WriteString(g.pick(" ", "\t", "\n", "\r", "  ", "\v", "\f"))
		}
	}
	ws()
	k := g.r.IntN(10)
	if depth > 4 && k >= 7 {
		k = g.r.IntN(7)
	}
	switch k {
	case 0, 1:
		if g.r.IntN(2) == 0 {
			b.WriteString(cjsonNumberTexts[g.r.IntN(len(cjsonNumberTexts))])
		} else {
			fmt.Fprintf(b, "%d", g.r.IntN(2000)-1000)
			if g.r.IntN(2) == 0 {
				fmt.Fprintf(b, ".%d", g.r.IntN(1000))
			}
			if g.r.IntN(3) == 0 {
				fmt.Fprintf(b, "e%s%d", g.pick("", "+", "-"), g.r.IntN(330))
			}
		}
	case 2, 3:
		g.jsonString(b)
	case 4:
		b.WriteString(g.pick("true", "false", "null", "tru", "nul", "fals", "True", "NULL", "t", "n", "f", "i", "N", "I", "x", "'a'", "/", ""))
	case 5, 6:
		g.jsonString(b)
	case 7, 8:
		b.WriteByte('[')
		n := g.r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			g.jsonValue(b, depth+1)
		}
		ws()
		if g.r.IntN(15) != 0 {
			b.WriteByte(']')
		}
	default:
		b.WriteByte('{')
		n := g.r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			if g.r.IntN(12) == 0 {
				g.jsonValue(b, depth+1)
			} else {
				g.jsonString(b)
			}
			ws()
			if g.r.IntN(15) != 0 {
				b.WriteByte(':')
			}
			g.jsonValue(b, depth+1)
		}
		ws()
		if g.r.IntN(15) != 0 {
			b.WriteByte('}')
		}
	}
	ws()
}

func (g *cjsonGen) jsonString(b *strings.Builder) {
	b.WriteByte('"')
	n := g.r.IntN(6)
	for i := 0; i < n; i++ {
		switch g.r.IntN(8) {
		case 0:
			b.WriteString(g.pick(`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\x`, `\'`, `\0`, "\\\x00", `\`))
		case 1:
			b.WriteString(g.pick(`\u0041`, `\u00e9`, `\u20AC`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\uD83D\u0041`,
				`\uD83Dx`, `\u12`, `\u12G4`, `\u0000`, `\uFFFF`, `\uDBFF\uDFFF`, `\uD800\uD800`, `\u`))
		case 2:
			b.WriteByte(byte(g.r.IntN(32)))
		case 3:
			b.WriteByte(byte(128 + g.r.IntN(128)))
		default:
			b.WriteByte(byte('a' + g.r.IntN(26)))
		}
	}
	if g.r.IntN(15) != 0 {
		b.WriteByte('"')
	}
}

// ---- encoding ----

func (g *cjsonGen) encodeCase() []string {
	g.code.Reset()
	g.nvar = 0
	mod := "c"
	g.code.WriteString("local out = {}\nlocal c = cjson.new()\n")
	if g.r.IntN(10) == 0 {
		// the global module, whose settings persist from case to case
		mod = "cjson"
	}
	for n := g.r.IntN(4); n > 0; n-- {
		call := ""
		switch g.r.IntN(7) {
		case 0:
			call = fmt.Sprintf("encode_sparse_array, %s, %s, %s", g.pick("nil", "true", "false", "'on'", "'off'", "'x'", "1"),
				g.pick("nil", "0", "1", "2", "3", "-1", "2147483647", "'5'", "true"), g.pick("nil", "0", "1", "5", "10", "20", "2^31"))
		case 1:
			call = "encode_number_precision, " + g.pick("1", "2", "5", "10", "13", "14", "15", "0", "'3'", "nil", "3.9")
		case 2:
			call = "encode_invalid_numbers, " + g.pick("true", "false", "'on'", "'off'", "'null'", "'x'", "1", "nil")
		case 3:
			call = "encode_max_depth, " + g.pick("1", "2", "3", "5", "1000", "0", "2^32+2", "nil")
		case 4:
			call = "encode_keep_buffer, " + g.pick("true", "false", "'on'", "'off'", "'x'", "nil")
		case 5:
			call = "encode_sparse_array, " + g.pick("true", "false", "nil")
		default:
			call = "encode_number_precision"
		}
		fmt.Fprintf(&g.code, "do local r = {pcall(%s.%s)} for i = 1, #r do out[#out+1] = tostring(r[i]) end end\n", mod, call)
	}
	v := g.luaValue(0)
	fmt.Fprintf(&g.code, "local ok, s = pcall(%s.encode, %s)\nout[#out+1] = tostring(ok) .. ':' .. s\nreturn table.concat(out, ' ')", mod, v)
	return []string{"EVAL", g.code.String(), "0"}
}

// -0 is tonumber('-0'): a -0 literal becomes a constant that Lua 5.1
// shares with 0 (so 1/0 in the same script is -inf), gopher-lua does not.
var cjsonLuaNumbers = []string{
	"0", "tonumber('-0')", "1", "-1", "0.1", "1/3", "-2.5", "1e300", "-1e-300", "2^53", "2^53+1", "2^63", "123456789012345",
	"1234567890123456", "0/0", "-(0/0)", "1/0", "-1/0", "2^31", "2^32+1", "5e-324", "100", "1e15", "1e14", "99999999999999.5",
	"0.00001", "0.0001", "3.14159265358979",
}

var cjsonLuaStrings = []string{
	"''", "'a'", "'/'", "'\\\"'", "'\\\\'", "'\\0'", "'\\1\\2\\31\\127\\128\\255'", "'\\b\\f\\n\\r\\t'", "'é€'",
	"'key'", "'1'", "'01'", "'a/b'", "string.rep('x', 40)",
}

func (g *cjsonGen) luaValue(depth int) string {
	k := g.r.IntN(12)
	if depth >= 4 && k >= 8 {
		k = g.r.IntN(8)
	}
	switch k {
	case 0, 1:
		return cjsonLuaNumbers[g.r.IntN(len(cjsonLuaNumbers))]
	case 2:
		return fmt.Sprintf("%.17g", math.Ldexp(g.r.Float64()-0.5, g.r.IntN(140)-70))
	case 3, 4:
		return cjsonLuaStrings[g.r.IntN(len(cjsonLuaStrings))]
	case 5:
		// no nil: in Lua 5.1 assigning nil to a new key takes a node of the
		// table (and deleting a key keeps its node), which changes the
		// lua_next order tumbler rebuilds from the keys present
		return g.pick("true", "false", "cjson.null", "c.null")
	case 6:
		if g.nvar > 0 && g.r.IntN(2) == 0 {
			return fmt.Sprintf("t%d", g.r.IntN(g.nvar)) // shared (or, inside itself, cyclic)
		}
		return g.pick("tostring", "function() end", "cjson.null", "true")
	case 7:
		return g.pick("{}", "c.null")
	default:
		return g.luaTable(depth)
	}
}

func (g *cjsonGen) luaTable(depth int) string {
	if g.nvar >= 150 { // Lua 5.1 allows 200 locals a function
		return "{}"
	}
	name := fmt.Sprintf("t%d", g.nvar)
	g.nvar++
	fmt.Fprintf(&g.code, "local %s = {}\n", name)
	kind := g.r.IntN(5)
	n := g.r.IntN(6)
	if kind == 4 && g.r.IntN(3) == 0 {
		n = 12 + g.r.IntN(30)
	}
	var front []cjsonLine
	var back []string
	for i := 0; i < n; i++ {
		var key string
		switch kind {
		case 0, 1: // dense
			key = strconv.Itoa(i + 1)
		case 2: // keys of every kind
			key = g.pick("1", "2", "3", "0", "-1", "1.5", "2^31", "2^32+1", "1e10", "1/0", "-1/0", "'a'", "'b'", "'1'",
				"'k/\\1'", "'x'", "'y'", "'z'", "true", "11", "12", "100", "2^53")
		case 3: // string keys
			key = g.pick("'a'", "'b'", "'c'", "'d'", "'e'", "'f'", "'long key'", "'\\0'", "''", "'\\127'")
		default: // sparse integer keys
			key = strconv.Itoa(1 + g.r.IntN(40))
		}
		if kind == 2 && n == 1 && g.r.IntN(6) == 0 {
			key = "{}" // a table key: alone, so that its (address) order does not matter
		}
		v := g.luaValue(depth + 1)
		line := fmt.Sprintf("%s[%s] = %s\n", name, key, v)
		if k, err := strconv.Atoi(key); err == nil && k >= 1 {
			front = append(front, cjsonLine{k, line})
		} else {
			back = append(back, line)
		}
	}
	// gopher-lua keeps integer keys from 1 up in an array part, which
	// pairs visits first and in ascending order, whatever the order they
	// were set in: set them first and in that order, so that the order
	// rebuilt for Lua 5.1 is the order they were set in.
	sort.SliceStable(front, func(i, j int) bool { return front[i].key < front[j].key })
	for _, l := range front {
		g.code.WriteString(l.line)
	}
	for _, l := range back {
		g.code.WriteString(l)
	}
	return name
}
