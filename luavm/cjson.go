package luavm

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// ---- cjson (lua-cjson 2.1.0, as bundled in Redis 7.0) ----
//
// cjson.encode(v) writes v as JSON, cjson.decode(s) reads it back, and
// seven functions configure them: encode_sparse_array, encode_max_depth,
// decode_max_depth, encode_number_precision, encode_keep_buffer,
// encode_invalid_numbers and decode_invalid_numbers. Each takes its new
// setting(s) (nothing: leave them) and returns the current ones. The
// settings belong to one module table: cjson.new() makes another, with its
// own functions and default settings. Redis runs every script in one Lua
// state, so a script's settings stay for the scripts after it, until
// SCRIPT FLUSH makes a new state; so do they here (VM.cjsonCfg).
//
// This follows lua_cjson.c, strbuf.c and fpconv.c byte for byte, errors
// and their positions included:
//
//   - encode iterates a table as lua_next does (lua51table.go): that order
//     is the order of an object's members, and of its errors. A table is
//     an array when every key is a positive integer, unless it is
//     excessively sparse (more than ratio times as many slots as items
//     and more than safe slots): an error, or an object if convert is on.
//     The largest key is held in a C int, so a key past 2^31-1 makes it
//     INT_MIN, and the table an object, unless a later key (in lua_next's
//     order) is larger again.
//   - numbers are C's "%.14g" (encode_number_precision sets the 14); NaN
//     and ±Inf are an error, or with encode_invalid_numbers "nan"/"inf"
//     ("on") or "null" ("null"); a number key is the same in quotes.
//   - strings escape ", \, / and the control characters (\b \t \n \f \r,
//     the rest and 0x7f as \u00xx); other bytes pass as they are.
//   - decode reads the string as C does, up to its first NUL, and numbers
//     with strtod: "+1", "0x10", "01", "1.", "inf", "nan" are numbers
//     (decode_invalid_numbers off refuses all but "1."). Strings may hold
//     any byte but NUL raw; a \u escape must be a BMP code point or a
//     surrogate pair.
//   - nesting is bounded by encode_max_depth and decode_max_depth, and by
//     Lua 5.1's limit of 8000 stack slots for a C function (lua_checkstack),
//     counted as the C code uses them: so at most 7997 nested arrays
//     encode, 3999 nested objects, and the Go recursion here stays as
//     shallow as the C one, whatever depth a script configures.
//
// Beyond Redis: encode refuses output past vm.sizeLimit() with "not
// enough memory" (Redis grows its buffer until malloc fails), and both
// directions check the script's context as they go, so that SCRIPT KILL
// and the memory bound stop a long call.
//
// Where it may differ: the lua_next order is rebuilt from the keys
// present, in gopher-lua's order (lua51table.go), so a table constructor
// whose keys Lua 5.1 presizes into other collisions, integer keys (1 to
// 2^22 - 1, gopher-lua's array part: arraycap.go) set out of ascending order among other
// keys, and keys deleted or assigned nil (which keep a node in Lua 5.1)
// can give another order: of an object's members, of which error comes
// first, and, for a table with a key past 2^31-1, of its largest key. The
// settings also return to their defaults after a script stopped by the
// memory bound (resetState makes a new state; Redis has no such bound).

// The C library's limits and defaults.
const (
	cjsonMaxCStack = 8000    // LUAI_MAXCSTACK: lua_checkstack fails past it
	cjsonTick      = 1 << 16 // steps between checks of the script's context
)

// cjsonConfig is lua-cjson's json_config_t: one module table's settings.
type cjsonConfig struct {
	sparseConvert     int32 // 0 or 1
	sparseRatio       int32
	sparseSafe        int32
	encodeMaxDepth    int32
	decodeMaxDepth    int32
	encodeInvalidNums int32 // 0 off, 1 on, 2 "null"
	decodeInvalidNums int32 // 0 or 1
	encodeKeepBuffer  int32 // 0 or 1: no effect but its own value
	encodePrecision   int32
}

var cjsonDefaults = cjsonConfig{
	sparseRatio:       2,
	sparseSafe:        10,
	encodeMaxDepth:    1000,
	decodeMaxDepth:    1000,
	decodeInvalidNums: 1,
	encodeKeepBuffer:  1,
	encodePrecision:   14,
}

// cjsonLib is the global cjson table; its settings are vm.cjsonCfg.
func (vm *VM) cjsonLib() *lua.LTable {
	vm.cjsonNull = vm.L.NewUserData()
	t, cfg := vm.newCjson(vm.L)
	vm.cjsonCfg = cfg
	return t
}

// resetCjson gives the global cjson its default settings again, as a
// fresh Lua state would: Redis makes one on SCRIPT FLUSH.
func (vm *VM) resetCjson() {
	if vm.cjsonCfg != nil {
		*vm.cjsonCfg = cjsonDefaults
	}
}

// newCjson is lua_cjson_new: a module table with its own settings.
// cjson.null is one value for every module table (a NULL lightuserdata in
// Redis).
func (vm *VM) newCjson(L *lua.LState) (*lua.LTable, *cjsonConfig) {
	cfg := new(cjsonConfig)
	*cfg = cjsonDefaults
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return vm.cjsonEncode(L, cfg) },
		"decode": func(L *lua.LState) int { return vm.cjsonDecode(L, cfg) },
		// convert: excessively sparse arrays become objects (else an
		// error); ratio: 0 allows any sparseness; safe: an array with no
		// key above it is never sparse.
		"encode_sparse_array": func(L *lua.LState) int {
			cjsonArgInit(L, 3)
			cjsonEnumOption(L, 1, &cfg.sparseConvert, nil, 1)
			cjsonIntegerOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			cjsonIntegerOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		},
		"decode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		},
		"encode_number_precision": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodePrecision, 1, 14)
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeKeepBuffer, nil, 1)
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeInvalidNums, []string{"off", "on", "null"}, 1)
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.decodeInvalidNums, nil, 1)
		},
		"new": func(L *lua.LState) int {
			t, _ := vm.newCjson(L)
			L.Push(t)
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	t.RawSetString("null", vm.cjsonNull)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t, cfg
}

// cjsonArgInit is json_arg_init: at most n arguments, padded with nils
// to n, so that the settings pushed go after them.
func cjsonArgInit(L *lua.LState, n int) {
	if L.GetTop() > n {
		cArgError(L, n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// cjsonIntegerOption is json_integer_option: argument i, unless nil,
// becomes the setting (luaL_checkinteger, then cast to a C int); the range
// error always names argument #1, as the C code does. It pushes the
// setting.
func cjsonIntegerOption(L *lua.LState, i int, setting *int32, lo, hi int32) int {
	if L.Get(i) != lua.LNil {
		v := int32(cCheckInteger(L, i))
		if v < lo || v > hi {
			cArgError(L, 1, fmt.Sprintf("expected integer between %d and %d", lo, hi))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
	return 1
}

// cjsonEnumOption is json_enum_option: argument i, unless nil, is a
// boolean (true is boolTrue) or one of options by name (default "off",
// "on"). It pushes the setting: a boolean for 0 and boolTrue, else its
// name.
func cjsonEnumOption(L *lua.LState, i int, setting *int32, options []string, boolTrue int32) int {
	if options == nil {
		options, boolTrue = []string{"off", "on"}, 1
	}
	if v := L.Get(i); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok && boolTrue != 0 {
			*setting = 0
			if b {
				*setting = boolTrue
			}
		} else {
			name := cString(cCheckString(L, i)) // strcmp and %s stop at a NUL
			found := false
			for k, o := range options {
				if o == name {
					*setting, found = int32(k), true
					break
				}
			}
			if !found {
				cArgError(L, i, "invalid option '"+name+"'")
			}
		}
	}
	if boolTrue != 0 && (*setting == 0 || *setting == boolTrue) {
		L.Push(lua.LBool(*setting != 0))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
	return 1
}

// ---- encoding ----

type cjsonEncoder struct {
	L     *lua.LState
	pre   *presizes                   // the constructors' tables (presize.go)
	ro    map[*lua.LTable]*lua.LTable // read-only proxies: encoded as their tables
	cfg   *cjsonConfig
	null  *lua.LUserData
	buf   []byte
	limit int
	steps int
}

func (vm *VM) cjsonEncode(L *lua.LState, cfg *cjsonConfig) int {
	if L.GetTop() != 1 {
		cArgError(L, 1, "expected 1 argument")
	}
	e := &cjsonEncoder{L: L, ro: vm.roReal, cfg: cfg, null: vm.cjsonNull, limit: vm.sizeLimit(), pre: &vm.presized}
	e.data(L.Get(1), 0, 1)
	L.Push(lua.LString(e.buf))
	return 1
}

// fail is json_encode_exception: "Cannot serialise <type of v>: reason".
func (e *cjsonEncoder) fail(v lua.LValue, reason string) {
	cError(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

// tick counts a step of the encoding and stops it when the script was
// stopped or the output has grown past the limit.
func (e *cjsonEncoder) tick() {
	if len(e.buf) > e.limit {
		e.L.RaiseError("not enough memory")
	}
	e.steps += 16
	if e.steps%cjsonTick == 0 {
		if ctx := e.L.Context(); ctx != nil && ctx.Err() != nil {
			e.L.RaiseError("%s", ctx.Err().Error())
		}
	}
}

// data is json_append_data for v at depth (the tables around it), with
// slots of the C function's Lua stack in use.
func (e *cjsonEncoder) data(v lua.LValue, depth, slots int) {
	e.tick()
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LNumber:
		e.number(v)
	case lua.LBool:
		if v {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LTable:
		if real := e.ro[v]; real != nil {
			v = real // Redis's read-only tables are the tables themselves
		}
		depth++
		// json_check_encode_depth: lua_checkstack(l, 3) as well
		if int64(depth) > int64(e.cfg.encodeMaxDepth) || slots+3 > cjsonMaxCStack {
			cError(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(v); n > 0 {
			e.array(v, n, depth, slots)
		} else {
			e.object(v, depth, slots)
		}
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case *lua.LUserData:
		if v != e.null {
			e.fail(v, "type not supported")
		}
		e.buf = append(e.buf, "null"...)
	default:
		e.fail(v, "type not supported")
	}
}

// cjsonEscapes is lua-cjson's char2escape: "" for a byte written as is.
var cjsonEscapes = func() (esc [256]string) {
	const hex = "0123456789abcdef"
	for c := 0; c < 0x20; c++ {
		esc[c] = `\u00` + string(hex[c>>4]) + string(hex[c&15])
	}
	esc['\b'], esc['\t'], esc['\n'], esc['\f'], esc['\r'] = `\b`, `\t`, `\n`, `\f`, `\r`
	esc['"'], esc['/'], esc['\\'], esc[0x7f] = `\"`, `\/`, `\\`, `\u007f`
	return esc
}()

// str is json_append_string.
func (e *cjsonEncoder) str(s string) {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		if esc := cjsonEscapes[s[i]]; esc != "" {
			n += len(esc) - 1
		}
	}
	if len(e.buf)+n > e.limit {
		e.L.RaiseError("not enough memory")
	}
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if esc := cjsonEscapes[s[i]]; esc != "" {
			e.buf = append(append(e.buf, s[start:i]...), esc...)
			start = i + 1
		}
	}
	e.buf = append(append(e.buf, s[start:]...), '"')
}

// number is json_append_number (a number key's "must not be NaN or Inf"
// names a number too).
func (e *cjsonEncoder) number(v lua.LNumber) {
	f := float64(v)
	invalid := math.IsInf(f, 0) || math.IsNaN(f)
	switch e.cfg.encodeInvalidNums {
	case 0:
		if invalid {
			e.fail(v, "must not be NaN or Inf")
		}
	case 1:
		// "nan" whatever its sign, as the C code does for platforms
		// printing "-nan"
		if math.IsNaN(f) {
			e.buf = append(e.buf, "nan"...)
			return
		}
	default:
		if invalid {
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = cjsonFormatNumber(e.buf, f, int(e.cfg.encodePrecision))
}

// cjsonFormatNumber is fpconv_g_fmt: C's "%.<precision>g".
func cjsonFormatNumber(b []byte, f float64, precision int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f): // not reached: encode writes NaN itself
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', precision, 64)
}

// arrayLength is lua_array_length: the array's length, or -1 (or any
// other number below 1) for an object.
func (e *cjsonEncoder) arrayLength(t *lua.LTable) int32 {
	// Every key a positive integer? The answer does not depend on the
	// order; the largest key does when one overflows the C int.
	items, overflow := 0, false
	isArray := true
	luaNext(t, func(k, _ lua.LValue) bool {
		f, ok := cjsonArrayKey(k)
		if !ok {
			isArray = false
			return false
		}
		items++
		overflow = overflow || f > math.MaxInt32
		return true
	})
	if !isArray {
		return -1
	}
	var maxKey int32
	upd := func(k lua.LValue, _ lua.LValue) {
		if f, _ := cjsonArrayKey(k); f > float64(maxKey) {
			maxKey = int32Of(f) // max = k: INT_MIN past the int's range
		}
	}
	if overflow {
		lua51Pairs(t, e.pre, upd)
	} else {
		luaNext(t, func(k, v lua.LValue) bool { upd(k, v); return true })
	}
	cfg := e.cfg
	// items * ratio in C's int arithmetic: it wraps
	if cfg.sparseRatio > 0 && maxKey > int32(items)*cfg.sparseRatio && maxKey > cfg.sparseSafe {
		if cfg.sparseConvert == 0 {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return maxKey
}

// cjsonArrayKey is the number an array key is: an integer from 1 up
// (infinity too, floor(inf) being inf).
func cjsonArrayKey(k lua.LValue) (float64, bool) {
	n, ok := k.(lua.LNumber)
	f := float64(n)
	return f, ok && f != 0 && math.Floor(f) == f && f >= 1
}

// array is json_append_array: t[1] to t[n], a nil as null.
func (e *cjsonEncoder) array(t *lua.LTable, n int32, depth, slots int) {
	e.buf = append(e.buf, '[')
	for i := 1; i <= int(n); i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.data(t.RawGet(lua.LNumber(i)), depth, slots+1)
	}
	e.buf = append(e.buf, ']')
}

// object is json_append_object, in lua_next's order.
func (e *cjsonEncoder) object(t *lua.LTable, depth, slots int) {
	e.buf = append(e.buf, '{')
	comma := false
	lua51Pairs(t, e.pre, func(k, v lua.LValue) {
		if comma {
			e.buf = append(e.buf, ',')
		}
		comma = true
		switch k := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.number(k)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.str(string(k))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.data(v, depth, slots+2)
	})
	e.buf = append(e.buf, '}')
}

// ---- decoding ----

type cjsonTokenType int

const (
	tObjBegin cjsonTokenType = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var cjsonTokenNames = [...]string{
	"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END",
	"T_WHITESPACE", "T_ERROR", "T_UNKNOWN",
}

// cjsonCh2Token is the config's ch2token: a byte's token, tUnknown for
// the first byte of a string, number, literal or invalid number.
var cjsonCh2Token = func() (t [256]cjsonTokenType) {
	for i := range t {
		t[i] = tError
	}
	t['{'], t['}'], t['['], t[']'] = tObjBegin, tObjEnd, tArrBegin, tArrEnd
	t[','], t[':'], t[0] = tComma, tColon, tEnd
	t[' '], t['\t'], t['\n'], t['\r'] = tWhitespace, tWhitespace, tWhitespace, tWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = tUnknown
	}
	return t
}()

// cjsonEscape2Char is escape2char: the byte an escape stands for; 'u' for
// \u, 0 for an invalid escape.
var cjsonEscape2Char = func() (t [256]byte) {
	t['"'], t['\\'], t['/'], t['b'], t['t'] = '"', '\\', '/', '\b', '\t'
	t['n'], t['f'], t['r'], t['u'] = '\n', '\f', '\r', 'u'
	return t
}()

type cjsonToken struct {
	typ   cjsonTokenType
	index int    // 0-based
	str   string // a string's value; an error's description
	num   float64
	b     bool
}

type cjsonDecoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  *lua.LUserData
	data  string // up to the first NUL: the C code reads no further
	ptr   int
	depth int
	tmp   []byte
	steps int
}

func (vm *VM) cjsonDecode(L *lua.LState, cfg *cjsonConfig) int {
	if L.GetTop() != 1 {
		cArgError(L, 1, "expected 1 argument")
	}
	s := cCheckString(L, 1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		cError(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	d := &cjsonDecoder{L: L, cfg: cfg, null: vm.cjsonNull, data: cString(s)}
	var tok cjsonToken
	d.next(&tok)
	v := d.value(&tok, 1)
	d.next(&tok)
	if tok.typ != tEnd {
		d.parseError("the end", &tok)
	}
	L.Push(v)
	return 1
}

// at is the byte at i, 0 (the C string's NUL) past the end.
func (d *cjsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (d *cjsonDecoder) tokenError(tok *cjsonToken, msg string) {
	tok.typ, tok.index, tok.str = tError, d.ptr, msg
}

// tick counts n steps of the decoding (a token, or bytes of white space
// or of a string) and stops it if the script was stopped.
func (d *cjsonDecoder) tick(n int) {
	d.steps += n
	if d.steps >= cjsonTick {
		d.steps = 0
		if ctx := d.L.Context(); ctx != nil && ctx.Err() != nil {
			d.L.RaiseError("%s", ctx.Err().Error())
		}
	}
}

// next is json_next_token.
func (d *cjsonDecoder) next(tok *cjsonToken) {
	d.tick(64)
	var ch byte
	for {
		ch = d.at(d.ptr)
		tok.typ = cjsonCh2Token[ch]
		if tok.typ != tWhitespace {
			break
		}
		d.ptr++
		d.tick(1)
	}
	tok.index = d.ptr
	switch tok.typ {
	case tError:
		d.tokenError(tok, "invalid token")
		return
	case tEnd:
		return
	case tUnknown:
	default:
		d.ptr++
		return
	}
	rest := d.data[d.ptr:]
	switch {
	case ch == '"':
		d.stringToken(tok)
	case ch == '-' || isDigit(ch):
		if d.cfg.decodeInvalidNums == 0 && d.invalidNumber() {
			d.tokenError(tok, "invalid number")
			return
		}
		d.numberToken(tok)
	case len(rest) >= 4 && rest[:4] == "true":
		tok.typ, tok.b = tBoolean, true
		d.ptr += 4
	case len(rest) >= 5 && rest[:5] == "false":
		tok.typ, tok.b = tBoolean, false
		d.ptr += 5
	case len(rest) >= 4 && rest[:4] == "null":
		tok.typ = tNull
		d.ptr += 4
	case d.cfg.decodeInvalidNums != 0 && d.invalidNumber():
		// only what is sure to be a number (inf, nan, +), so that other
		// bad tokens say "invalid token"
		d.numberToken(tok)
	default:
		d.tokenError(tok, "invalid token")
	}
}

// invalidNumber is json_is_invalid_number: strtod reads it, strict JSON
// does not (a leading '+' or zero, hex, inf, nan).
func (d *cjsonDecoder) invalidNumber() bool {
	p := d.ptr
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if c := d.at(p); c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || isDigit(c2)
	} else if c <= '9' || c >= 0x80 { // C's char is signed: bytes from 0x80 are below '9'
		return false
	}
	if p+3 > len(d.data) {
		return false
	}
	w := string([]byte{d.data[p] | 0x20, d.data[p+1] | 0x20, d.data[p+2] | 0x20})
	return w == "inf" || w == "nan" // strncasecmp
}

// numberToken is json_next_number_token: strtod's number.
func (d *cjsonDecoder) numberToken(tok *cjsonToken) {
	// strtod reads nothing past the letters, digits and signs a number
	// may hold ("nan(x_1)" the most): give it no more, as it copies what
	// it is given (else a document of many numbers is quadratic).
	end := d.ptr
	for end < len(d.data) && cjsonNumberByte(d.data[end]) {
		end++
	}
	s := d.data[d.ptr:end]
	f, n := strtod(s)
	if n == 0 {
		d.tokenError(tok, "invalid number")
		return
	}
	if math.IsNaN(f) && s[0] == '-' {
		f = math.Copysign(f, -1) // glibc's "-nan" is negative
	}
	tok.typ, tok.num = tNumber, f
	d.ptr += n
}

// cjsonNumberByte says whether c may be part of what strtod reads.
func cjsonNumberByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '+' || c == '-' || c == '_' || c == '(' || c == ')'
}

// stringToken is json_next_string_token; d.ptr is at the opening quote.
func (d *cjsonDecoder) stringToken(tok *cjsonToken) {
	d.ptr++
	d.tmp = d.tmp[:0]
	for {
		ch := d.at(d.ptr)
		if ch == '"' {
			break
		}
		if ch == 0 {
			d.tokenError(tok, "unexpected end of string")
			return
		}
		if ch == '\\' {
			ch = cjsonEscape2Char[d.at(d.ptr+1)]
			if ch == 'u' {
				if d.unicodeEscape() {
					continue
				}
				d.tokenError(tok, "invalid unicode escape code")
				return
			}
			if ch == 0 {
				d.tokenError(tok, "invalid escape code")
				return
			}
			d.ptr++
		}
		d.tmp = append(d.tmp, ch)
		d.ptr++
		d.tick(1)
	}
	d.ptr++
	tok.typ, tok.str = tString, string(d.tmp)
}

// hex4 is decode_hex4 at i: the value of 4 hex digits, or -1.
func (d *cjsonDecoder) hex4(i int) int {
	v := 0
	for k := 0; k < 4; k++ {
		c := d.at(i + k)
		x := digitVal(c)
		if x > 15 {
			return -1
		}
		v = v<<4 | x
	}
	return v
}

// unicodeEscape is json_append_unicode_escape at "\u": it appends the
// code point (a surrogate pair as one) as UTF-8.
func (d *cjsonDecoder) unicodeEscape() bool {
	cp := d.hex4(d.ptr + 2)
	if cp < 0 {
		return false
	}
	escLen := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 { // a low surrogate first
			return false
		}
		if d.at(d.ptr+6) != '\\' || d.at(d.ptr+7) != 'u' {
			return false
		}
		lo := d.hex4(d.ptr + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		escLen = 12
	}
	switch {
	case cp <= 0x7F:
		d.tmp = append(d.tmp, byte(cp))
	case cp <= 0x7FF:
		d.tmp = append(d.tmp, byte(cp>>6)|0xC0, byte(cp&0x3F)|0x80)
	case cp <= 0xFFFF:
		d.tmp = append(d.tmp, byte(cp>>12)|0xE0, byte(cp>>6&0x3F)|0x80, byte(cp&0x3F)|0x80)
	default:
		d.tmp = append(d.tmp, byte(cp>>18)|0xF0, byte(cp>>12&0x3F)|0x80, byte(cp>>6&0x3F)|0x80, byte(cp&0x3F)|0x80)
	}
	d.ptr += escLen
	return true
}

// parseError is json_throw_parse_error.
func (d *cjsonDecoder) parseError(expected string, tok *cjsonToken) {
	found := cjsonTokenNames[tok.typ]
	if tok.typ == tError {
		found = tok.str
	}
	cError(d.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

// descend is json_decode_descend: one level deeper, needing need stack
// slots beyond the slots in use.
func (d *cjsonDecoder) descend(slots, need int) {
	d.depth++
	if int64(d.depth) <= int64(d.cfg.decodeMaxDepth) && slots+need <= cjsonMaxCStack {
		return
	}
	cError(d.L, "Found too many nested data structures (%d) at character %d", d.depth, d.ptr)
}

// value is json_process_value, with slots of the C function's Lua stack
// in use.
func (d *cjsonDecoder) value(tok *cjsonToken, slots int) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tObjBegin:
		return d.object(slots)
	case tArrBegin:
		return d.array(slots)
	case tNull:
		return d.null
	}
	d.parseError("value", tok)
	return nil
}

// object is json_parse_object_context: its stack holds the table and a
// key while a value is read.
func (d *cjsonDecoder) object(slots int) lua.LValue {
	d.descend(slots, 3)
	t := d.L.NewTable()
	var tok cjsonToken
	d.next(&tok)
	if tok.typ == tObjEnd {
		d.depth--
		return t
	}
	for {
		if tok.typ != tString {
			d.parseError("object key string", &tok)
		}
		key := tok.str
		d.next(&tok)
		if tok.typ != tColon {
			d.parseError("colon", &tok)
		}
		d.next(&tok)
		t.RawSetString(key, d.value(&tok, slots+2))
		d.next(&tok)
		if tok.typ == tObjEnd {
			d.depth--
			return t
		}
		if tok.typ != tComma {
			d.parseError("comma or object end", &tok)
		}
		d.next(&tok)
	}
}

// array is json_parse_array_context: its stack holds the table while a
// value is read.
func (d *cjsonDecoder) array(slots int) lua.LValue {
	d.descend(slots, 2)
	t := d.L.NewTable()
	var tok cjsonToken
	d.next(&tok)
	if tok.typ == tArrEnd {
		d.depth--
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, d.value(&tok, slots+1))
		d.next(&tok)
		if tok.typ == tArrEnd {
			d.depth--
			return t
		}
		if tok.typ != tComma {
			d.parseError("comma or array end", &tok)
		}
		d.next(&tok)
	}
}
