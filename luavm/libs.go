package luavm

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openExtraLibs adds the libraries Redis ships beyond Lua's own: cjson,
// bit (LuaBitOp), struct and cmsgpack.
func (vm *VM) openExtraLibs(G *lua.LTable) {
	G.RawSetString("cjson", vm.cjsonLib())
	G.RawSetString("bit", vm.bitLib())
	G.RawSetString("struct", vm.structLib())
	G.RawSetString("cmsgpack", vm.cmsgpackLib())
}

// ---- cjson (lua-cjson 2.1 as configured by Redis) ----

func (vm *VM) cjsonLib() *lua.LTable {
	L := vm.L
	null := L.NewUserData()
	t := L.NewTable()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b bytes.Buffer
		if msg := jsonEncode(&b, L.Get(1), null, 0); msg != "" {
			L.RaiseError("%s", msg)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			L.RaiseError("Expected value but found invalid token: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if dec.More() {
			L.RaiseError("Expected the end but found trailing data")
		}
		L.Push(jsonToLua(L, v, null))
		return 1
	}))
	return t
}

func jsonNumber(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return ""
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func jsonString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// jsonEncode writes v as JSON; it returns an error message or "".
func jsonEncode(b *bytes.Buffer, v lua.LValue, null *lua.LUserData, depth int) string {
	if depth > 1000 {
		return "Cannot serialise, excessive nesting (1001)"
	}
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case lua.LNumber:
		s := jsonNumber(float64(v))
		if s == "" {
			return "Cannot serialise number: must not be NaN or Inf"
		}
		b.WriteString(s)
	case lua.LString:
		jsonString(b, string(v))
	case *lua.LUserData:
		if v == null {
			b.WriteString("null")
			return ""
		}
		return "Cannot serialise userdata: type not supported"
	case *lua.LTable:
		// An array when every key is a positive integer and it is not
		// excessively sparse (lua-cjson: max > 10 and max > 2*items).
		maxIdx, items, isArray := 0, 0, true
		v.ForEach(func(k, _ lua.LValue) {
			items++
			n, ok := k.(lua.LNumber)
			if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
				isArray = false
				return
			}
			if int(n) > maxIdx {
				maxIdx = int(n)
			}
		})
		if isArray && items > 0 {
			if maxIdx > 10 && maxIdx > items*2 {
				return "Cannot serialise table: excessively sparse array"
			}
			b.WriteByte('[')
			for i := 1; i <= maxIdx; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if msg := jsonEncode(b, v.RawGetInt(i), null, depth+1); msg != "" {
					return msg
				}
			}
			b.WriteByte(']')
			return ""
		}
		type kv struct {
			k string
			v lua.LValue
		}
		var pairs []kv
		bad := ""
		v.ForEach(func(k, val lua.LValue) {
			switch k := k.(type) {
			case lua.LString:
				pairs = append(pairs, kv{string(k), val})
			case lua.LNumber:
				pairs = append(pairs, kv{jsonNumber(float64(k)), val})
			default:
				bad = "Cannot serialise " + k.Type().String() + ": table key must be a number or string"
			}
		})
		if bad != "" {
			return bad
		}
		sort.Slice(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonString(b, p.k)
			b.WriteByte(':')
			if msg := jsonEncode(b, p.v, null, depth+1); msg != "" {
				return msg
			}
		}
		b.WriteByte('}')
	default:
		return "Cannot serialise " + v.Type().String() + ": type not supported"
	}
	return ""
}

func jsonToLua(L *lua.LState, v any, null *lua.LUserData) lua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, e := range v {
			t.RawSetInt(i+1, jsonToLua(L, e, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetString(k, jsonToLua(L, e, null))
		}
		return t
	}
	return lua.LNil
}

// ---- bit (LuaBitOp: 32-bit operations) ----

// tobit is LuaBitOp's barg: it adds 2^52+2^51 to the number, which
// rounds it to an integer (half to even) in the low bits of the double's
// mantissa, and takes the low 32 bits. So 1.5 is 2, -1.5 is -2, and
// 2^32+0.5 is 0.
func tobit(L *lua.LState, i int) int32 {
	f := float64(L.CheckNumber(i))
	return int32(uint32(math.Float64bits(f + 6755399441055744.0)))
}

func (vm *VM) bitLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	ret := func(L *lua.LState, v int32) int { L.Push(lua.LNumber(v)); return 1 }
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			acc := tobit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				acc = op(acc, tobit(L, i))
			}
			return ret(L, acc)
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": func(L *lua.LState) int { return ret(L, tobit(L, 1)) },
		"bnot":  func(L *lua.LState) int { return ret(L, ^tobit(L, 1)) },
		"band":  fold(func(a, b int32) int32 { return a & b }),
		"bor":   fold(func(a, b int32) int32 { return a | b }),
		"bxor":  fold(func(a, b int32) int32 { return a ^ b }),
		"lshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(tobit(L, 1))<<(uint32(tobit(L, 2))&31)))
		},
		"rshift": func(L *lua.LState) int {
			return ret(L, int32(uint32(tobit(L, 1))>>(uint32(tobit(L, 2))&31)))
		},
		"arshift": func(L *lua.LState) int { return ret(L, tobit(L, 1)>>(uint32(tobit(L, 2))&31)) },
		"rol": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return ret(L, int32(x<<n|x>>((32-n)&31)))
		},
		"ror": func(L *lua.LState) int {
			x, n := uint32(tobit(L, 1)), uint32(tobit(L, 2))&31
			return ret(L, int32(x>>n|x<<((32-n)&31)))
		},
		"bswap": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			return ret(L, int32(x>>24|(x>>8)&0xff00|(x&0xff00)<<8|x<<24))
		},
		"tohex": func(L *lua.LState) int {
			x := uint32(tobit(L, 1))
			n := 8
			if L.GetTop() >= 2 {
				n = int(tobit(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n = -n
				digits = "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[x&15]
				x >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}
