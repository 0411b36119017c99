package luavm

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every expected reply was checked against redis-server 7.0.15 (the same
// scripts, sent with EVAL, compared byte for byte).
func TestCmsgpack(t *testing.T) {
	runLibCases(t, []libCase{
		// the library's fields
		{"return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}", "*4 $cmsgpack $lua-cmsgpack 0.4.0 $Copyright (C) 2012, Salvatore Sanfilippo $MessagePack C implementation for Lua"},
		// integers: the smallest format that holds them
		{hexFn + "return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 2^32-1, 2^32, 2^53))", "$00017fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf0020000000000000"},
		{hexFn + "return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1, -2^63))", "$ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000"},
		// other numbers: float 32 when exact, else float 64
		{hexFn + "return hex(cmsgpack.pack(0.5, 1.5, 0.1, -0, 1e300, 3.4e38, 3.5e38))", "$ca3f000000ca3fc00000cb3fb999999999999a00cb7e37e43c8800759ccb47eff933c78cdfadcb47f074f8c4d3cd7b"},
		{hexFn + "return hex(cmsgpack.pack(2^63, -2^63-2^11, 2^64, 1/0, -1/0, 0/0, -(0/0)))", "$ca5f000000cbc3e0000000000001ca5f800000ca7f800000caff800000cbfff8000000000000cb7ff8000000000000"},
		// strings
		{hexFn + "return hex(cmsgpack.pack('', 'a', 'hello'))", "$a0a161a568656c6c6f"},
		{hexFn + "return hex(cmsgpack.pack(string.rep('x', 31)):sub(1, 2) .. cmsgpack.pack(string.rep('x', 32)):sub(1, 3))", "$bf78d92078"},
		{hexFn + "return hex(cmsgpack.pack(string.rep('x', 255)):sub(1, 3) .. cmsgpack.pack(string.rep('x', 256)):sub(1, 4))", "$d9ff78da010078"},
		{hexFn + "return hex(cmsgpack.pack(string.rep('x', 65535)):sub(1, 4) .. cmsgpack.pack(string.rep('x', 65536)):sub(1, 6))", "$daffff78db0001000078"},
		{"return #cmsgpack.pack(string.rep('x', 65535)) .. ' ' .. #cmsgpack.pack(string.rep('x', 65536))", "$65538 65541"},
		// booleans, nil and values msgpack has no type for
		{hexFn + "return hex(cmsgpack.pack(true, false, nil, cjson.null, cmsgpack.pack))", "$c3c2c0c0c0"},
		// tables: arrays when the keys are 1..n, else maps
		{hexFn + "return hex(cmsgpack.pack({}, {1, 2, 3}, {[1]=1, [2]=2}, {[2]=2}, {1, nil, 3}))", "$90930102039201028102028201010303"},
		{hexFn + "return hex(cmsgpack.pack({[1.5]=1}, {[0]=1}, {[-1]=1}, {[true]=1}, {a=1}))", "$81ca3fc000000181000181ff0181c30181a16101"},
		{hexFn + "return hex(cmsgpack.pack({[2^31]=1}, {[2^31-1]=1}))", "$81ce800000000181ce7fffffff01"},
		{hexFn + "local t = {} for i=1,16 do t[i]=i end return hex(cmsgpack.pack(t))", "$dc00100102030405060708090a0b0c0d0e0f10"},
		{hexFn + "local t = {} for i=1,65535 do t[i]=0 end return hex(cmsgpack.pack(t):sub(1, 4))", "$dcffff00"},
		{hexFn + "local t = {} for i=1,65536 do t[i]=0 end return hex(cmsgpack.pack(t):sub(1, 6))", "$dd0001000000"},
		{hexFn + "local t = {} for i=1,16 do t['k'..i]=i end return hex(cmsgpack.pack(t):sub(1, 3))", "$de0010"},
		// a map's pairs are in Lua 5.1's order
		{hexFn + "return hex(cmsgpack.pack({a=1, b=2}, {b=1, a=2}))", "$82a16101a1620282a16102a16201"},
		{hexFn + "local t = {} t.name='x' t.ts=5 t.owner='me' return hex(cmsgpack.pack(t))", "$83a2747305a46e616d65a178a56f776e6572a26d65"},
		{hexFn + "local t = {} for i=1,12 do t['field'..i]=i end return hex(cmsgpack.pack(t))", "$8ca76669656c6431320ca76669656c6431310ba66669656c643909a66669656c643202a66669656c643101a66669656c643707a66669656c643808a76669656c6431300aa66669656c643606a66669656c643303a66669656c643505a66669656c643404"},
		{hexFn + "local t = {} t[10]=1 t[20]=2 t[30]=3 t[1.5]=4 t[true]=5 return hex(cmsgpack.pack(t))", "$851402c3050a01ca3fc00000041e03"},
		{hexFn + "local t = {1, 2, 3} t.x=1 t.y=2 return hex(cmsgpack.pack(t))", "$85010102020303a17902a17801"},
		{hexFn + "local t = {} t[1] = 1 t[3] = 1 t[4] = 1 t[8] = 1 t[15] = 1 t[29] = 1 t[31] = 1 t[10906] = 1 t[59944] = 1 t[60809] = 1 t['k784'] = 2 t['k110'] = 2 t['k410'] = 2 t['k110'] = 2 t['k866'] = 2 t['k297'] = 2 t['k395'] = 2 t['k68'] = 2 t['k981'] = 2 return hex(cmsgpack.pack(t))", "$de0012010103010401cded8901a46b33393502a36b363802a46b393831021d0108011f01cd2a9a01a46b38363602cdea2801a46b34313002a46b32393702a46b31313002a46b373834020f01"},
		{hexFn + "local t = {} t[49213] = 1 t['k644'] = 2 t['k203'] = 2 t['k797'] = 2 t['k691'] = 2 t['k276'] = 2 t['k344'] = 2 t['k89'] = 2 t['k318'] = 2 t['k340'] = 2 return hex(cmsgpack.pack(t))", "$8aa46b32373602a46b33313802a46b36393102a36b383902a46b37393702a46b32303302a46b36343402cdc03d01a46b33343002a46b33343402"},
		{hexFn + "local t = {} t[3] = 1 t[-9223372036854775808] = 2 t['k195'] = 2 t['k749'] = 2 t['k787'] = 2 t['k134'] = 2 t['k429'] = 2 t['k659'] = 2 t['k392'] = 2 t['k119'] = 2 return hex(cmsgpack.pack(t))", "$8aa46b34323902a46b33393202a46b31313902a46b37343902a46b31393502a46b363539020301a46b37383702d3800000000000000002a46b31333402"},
		{hexFn + "return hex(cmsgpack.pack(cmsgpack.unpack(cmsgpack.pack({a=1, b=2, c=3, d=4, e=5, f=6}))))", "$86a16101a16303a16202a16505a16404a16606"},
		// nesting: tables 16 deep become nil, so cycles end
		{hexFn + "local t = {} t[1]=t return hex(cmsgpack.pack(t))", "$91919191919191919191919191919191c0"},
		{hexFn + "local t = {} t.a=t return hex(cmsgpack.pack(t))", "$81a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a16181a161c0"},
		{"local t = {} t[1]=t t[2]=t return #cmsgpack.pack(t)", ":131071"},
		// unpack
		{"return {cmsgpack.unpack(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 2^32-1, 2^32, 2^53))}", "*11 :0 :1 :127 :128 :255 :256 :65535 :65536 :4294967295 :4294967296 :9007199254740992"},
		{"return {cmsgpack.unpack(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1, -2^63))}", "*10 :-1 :-32 :-33 :-128 :-129 :-32768 :-32769 :-2147483648 :-2147483649 :-9223372036854775808"},
		{"return {cmsgpack.unpack(cmsgpack.pack('a', true, false, 'b'))}", "*4 $a :1 (nil) $b"},
		{"return cmsgpack.unpack(cmsgpack.pack({1, 2, {3, 'x'}}))", "*3 :1 :2 *2 :3 $x"},
		{"return cmsgpack.unpack(cmsgpack.pack({a='b'})).a", "$b"},
		{"return cmsgpack.unpack(cmsgpack.pack(1.5)) * 2", ":3"},
		{"return cmsgpack.unpack(cmsgpack.pack(0.1)) == 0.1", ":1"},
		{"return cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255')", ":-1"},
		{"return cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\1')", ":-9223372036854775808"},
		{"return cmsgpack.unpack('\\211\\255\\255\\255\\255\\255\\255\\255\\254')", ":-2"},
		{"return {cmsgpack.unpack('\\204\\200\\208\\200\\205\\1\\2\\209\\255\\254\\206\\0\\1\\0\\0\\210\\255\\255\\255\\255')}", "*6 :200 :-56 :258 :-2 :65536 :-1"},
		{"return {cmsgpack.unpack('\\217\\3abc\\218\\0\\1z\\219\\0\\0\\0\\2xy')}", "*3 $abc $z $xy"},
		{"return {cmsgpack.unpack('\\147\\192\\192\\1')}", "*1 *0"},
		{"return cmsgpack.unpack('\\147\\192\\192\\1')[3]", ":1"},
		{"return cmsgpack.unpack('\\129\\145\\1\\2')", "*0"},
		{"return {cmsgpack.unpack('\\129\\1\\192')}", "*1 *0"},
		{"return {cmsgpack.unpack('\\130\\1\\2\\1\\192')}", "*1 *0"},
		{"return {cmsgpack.unpack('\\202\\127\\192\\0\\1')}", "*1 :-9223372036854775808"},
		{hexFn + "return hex(cmsgpack.pack(cmsgpack.unpack('\\202\\127\\128\\0\\1')))", "$cb7ff8000020000000"},
		{hexFn + "return hex(cmsgpack.pack(cmsgpack.unpack('\\203\\127\\240\\0\\0\\0\\0\\0\\1')))", "$cb7ff0000000000001"},
		{"return {cmsgpack.unpack('')}", "*0"},
		{"return {cmsgpack.unpack(5)}", "*1 :53"},
		{"return {cmsgpack.unpack(-5)}", "*2 :45 :53"},
		{"return {cmsgpack.unpack('\\1\\2', 'x', 'y')}", "*2 :1 :2"},
		// unpack_one and unpack_limit: the next offset (-1 at the end) first
		{"return {cmsgpack.unpack_one('')}", "*1 :-1"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3')}", "*2 :1 :1"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 1)}", "*2 :2 :2"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 2)}", "*2 :-1 :3"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 3)}", "*1 :-1"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', '1')}", "*2 :2 :2"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 0)}", "*3 :1 :2 :3"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 0, 1)}", "*1 :1"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 2)}", "*3 :2 :1 :2"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 2, 1)}", "*3 :-1 :2 :3"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 5, 1)}", "*3 :-1 :2 :3"},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 1.9, 1.9)}", "*2 :2 :2"},
		{"local s = cmsgpack.pack({1}, 'two', 3) local t, off, v = {}, 0 repeat off, v = cmsgpack.unpack_one(s, off) t[#t+1] = type(v) until off == -1 return t", "*3 $table $string $number"},
		// how many results fit on Lua 5.1's C stack
		{"return #{cmsgpack.unpack(string.rep('\\1', 7999))}", ":7999"},
		{"return #{cmsgpack.unpack_limit(string.rep('\\1', 9000), 7998)}", ":7999"},
		{"return #{cmsgpack.unpack_limit(string.rep('\\1', 9000), 7997, 5)}", ":7998"},
		{"return cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1') ~= nil", ":1"},
		{"return cmsgpack.unpack(string.rep('\\129\\1', 3999) .. '\\1\\1') ~= nil", ":1"},
		{"local t = {} for i=1,4000 do t[i]=i end return #cmsgpack.pack(unpack(t))", ":11618"},
		{"local t = {} for i=1,3997 do t[i]=1 end return #{cmsgpack.unpack(string.rep('\\1', 4000), unpack(t))}", ":4000"},
		// errors
		{"return cmsgpack.pack()", "-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.) script: {sha}, on @user_script:1."},
		{"return select(2, pcall(cmsgpack.pack))", "$bad argument #0 to '?' (MessagePack pack needs input.)"},
		{"local t = {} for i=1,4001 do t[i]=i end return #cmsgpack.pack(unpack(t))", "-ERR user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack()}", "-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got no value) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack({})}", "-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got table) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\193')}", "-ERR user_script:1: Bad data format in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\196\\1a')}", "-ERR user_script:1: Bad data format in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\1\\193')}", "-ERR user_script:1: Bad data format in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\205\\1')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\217\\3ab')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\218\\0')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\219\\255\\255\\255\\255abc')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\221\\255\\255\\255\\255\\1\\2')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\223\\255\\255\\255\\255\\1\\2')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\147\\1\\2')}", "-ERR user_script:1: Missing bytes in input. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\129\\192\\1')}", "-ERR table index is nil script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack('\\129\\203\\255\\248\\0\\0\\0\\0\\0\\0\\1')}", "-ERR table index is NaN script: {sha}, on @user_script:1."},
		{"return select(2, pcall(cmsgpack.unpack, '\\129\\192\\1'))", "$table index is nil"},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 4)}", "-ERR user_script:1: Start offset 4 greater than input length 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', -1)}", "-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 0/0)}", "-ERR user_script:1: Invalid request to unpack with offset of 0 and limit of 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 2^32+1)}", "-ERR user_script:1: Start offset 1 greater than input length 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_one('\\1\\2\\3', 'x')}", "-ERR user_script:1: bad argument #2 to 'unpack_one' (number expected, got string) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_one()}", "-ERR user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3')}", "-ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', -5, 1)}", "-ERR user_script:1: Invalid request to unpack with offset of 1 and limit of 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_limit('\\1\\2\\3', 5, -1)}", "-ERR user_script:1: Invalid request to unpack with offset of -1 and limit of 3. script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack_limit()}", "-ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value) script: {sha}, on @user_script:1."},
		{"return #{cmsgpack.unpack(string.rep('\\1', 8000))}", "-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: {sha}, on @user_script:1."},
		{"return #{cmsgpack.unpack(string.rep('\\1', 7999), 1)}", "-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: {sha}, on @user_script:1."},
		{"return #{cmsgpack.unpack_limit(string.rep('\\1', 9000), 7999)}", "-ERR user_script:1: stack overflow (in function mp_unpack_full) script: {sha}, on @user_script:1."},
		{"return cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1') ~= nil", "-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array) script: {sha}, on @user_script:1."},
		{"return {cmsgpack.unpack(string.rep('\\145', 100000))}", "-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array) script: {sha}, on @user_script:1."},
		{"return cmsgpack.unpack(string.rep('\\129', 7998) .. '\\1\\1') ~= nil", "-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: {sha}, on @user_script:1."},
		{"return cmsgpack.unpack(string.rep('\\129\\1', 4000) .. '\\1\\1') ~= nil", "-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: {sha}, on @user_script:1."},
		{"local t = {} for i=1,3998 do t[i]=1 end return #{cmsgpack.unpack(string.rep('\\1', 4002), unpack(t))}", "-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: {sha}, on @user_script:1."},
		{"cmsgpack.pack = nil", "-ERR user_script:1: Attempt to modify a readonly table script: {sha}, on @user_script:1."},
	})
}

// Tables that hold themselves are k^16 objects deep down; pack stops at the
// memory limit (Redis would run out of memory), and does so quickly. The
// watchdog may see the heap grow first: either error will do.
func TestCmsgpack_SelfReferenceBounded(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(4 << 20)
	for _, s := range []string{
		"local t = {} for i = 1, 10 do t[i] = t end return #cmsgpack.pack(t)",
		"local t = {} for i = 1, 10 do t['k'..i] = t end return #cmsgpack.pack(t)",
		"local t = {} for i = 1, 10 do t[i] = t end return #cmsgpack.pack(1, 2, t, t)",
		"local s = string.rep('x', 1500000) return #cmsgpack.pack(s, s, s)",
	} {
		start := time.Now()
		sha := SHA1Hex([]byte(s))
		got := f.do(2, "EVAL", s, "0")
		if got != "-ERR user_script:1: not enough memory script: "+sha+", on @user_script:1." &&
			!strings.HasPrefix(got, "-ERR Script used too much memory") {
			t.Errorf("%s: %s", s, got)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v", s, d)
		}
	}
	// below the limit the copies are exact: 2^16-1 arrays of two (checked
	// against redis-server 7.0.15). The bound is the process's live heap,
	// which the scripts above left full of garbage and a loaded machine's
	// collector may count late: this one gets room to spare (it failed a
	// clean-clone CI run once at 4 MB).
	f.vm.SetMemoryLimit(64 << 20)
	runtime.GC()
	s := "local t = {} t[1] = t t[2] = t local s = cmsgpack.pack(t) return {#s, s:byte(1), s:byte(#s), s:byte(65536), s:byte(65537), select('#', s:byte(1, 7000))}"
	f.expect("*6 :131071 :146 :192 :192 :146 :7000", "EVAL", s, "0")
}

// genLua writes a random value that cmsgpack.unpack(cmsgpack.pack(v))
// returns unchanged: no nil in arrays, no NaN, tables at most depth deep,
// at most *budget values in all.
func genLua(r *rand.Rand, depth int, budget *int) string {
	*budget--
	n := r.Intn(10)
	if depth == 0 || *budget <= 0 {
		n = r.Intn(7)
	}
	switch n {
	case 0:
		return strconv.FormatInt(r.Int63n(1<<20)-1<<19, 10)
	case 1:
		// any int64 magnitude, and doubles past 2^63
		e := r.Intn(70)
		v := math.Ldexp(1, e) - 1
		if r.Intn(2) == 0 {
			v = -v
		}
		return fmt.Sprintf("%.17g", v)
	case 2:
		return fmt.Sprintf("%.17g", r.NormFloat64()*math.Pow(10, float64(r.Intn(40)-20)))
	case 3:
		return fmt.Sprintf("%.17g", float64(float32(r.Float64()*1000)))
	case 4:
		var b strings.Builder
		b.WriteByte('\'')
		for i, l := 0, []int{0, 5, 31, 32, 200, 300}[r.Intn(6)]; i < l; i++ {
			fmt.Fprintf(&b, "\\%d", r.Intn(256))
		}
		b.WriteByte('\'')
		return b.String()
	case 5:
		return []string{"true", "false"}[r.Intn(2)]
	case 6:
		return []string{"1/0", "-1/0", "2^63", "-2^63", "2^64", "0.1", "-0"}[r.Intn(7)]
	case 7, 8: // array
		items := make([]string, r.Intn(20))
		for i := range items {
			items[i] = genLua(r, depth-1, budget)
		}
		return "{" + strings.Join(items, ", ") + "}"
	default: // map
		items := make([]string, r.Intn(20))
		for i := range items {
			var k string
			switch r.Intn(4) {
			case 0:
				k = genLua(r, 0, budget)
				// gopher-lua keeps integer keys up to 2^26 in an array
				// part that large: no big sparse ones
				if f, err := strconv.ParseFloat(k, 64); k == "1/0" || k == "-1/0" ||
					err == nil && f >= 1 && f <= 1<<27 && f == math.Trunc(f) {
					k = "'x'"
				}
			case 1:
				k = strconv.Itoa(r.Intn(40) - 5)
			default:
				k = fmt.Sprintf("'k%d'", r.Intn(100))
			}
			items[i] = "[" + k + "] = " + genLua(r, depth-1, budget)
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
}

// cmsgpack.unpack(cmsgpack.pack(x)) is x, for generated values (compared
// deeply, in Lua; -0 and 0 are equal there).
func TestCmsgpack_RoundTrip(t *testing.T) {
	f := newFixture(t)
	const deepEq = `local function eq(a, b)
	if type(a) ~= type(b) then return false end
	if type(a) ~= 'table' then return a == b end
	for k, v in pairs(a) do if not eq(v, b[k]) then return false end end
	for k in pairs(b) do if a[k] == nil then return false end end
	return true
end
`
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		var vals []string
		for j := r.Intn(3) + 1; j > 0; j-- {
			budget := 300
			vals = append(vals, genLua(r, 1+r.Intn(14), &budget))
		}
		list := strings.Join(vals, ", ")
		s := deepEq + "local x = {" + list + "} local p = cmsgpack.pack(unpack(x)) local y = {cmsgpack.unpack(p)}\n" +
			"if #x ~= #y then return 'count ' .. #x .. ' ' .. #y end\n" +
			"for i = 1, #x do if not eq(x[i], y[i]) then return 'differs at ' .. i end end\n" +
			"local one = {} local off, v = 0 repeat off, v = cmsgpack.unpack_one(p, off) one[#one+1] = v until off == -1\n" +
			"for i = 1, #x do if not eq(x[i], one[i]) then return 'unpack_one differs at ' .. i end end\n" +
			"return 'ok'"
		if got := f.do(2, "EVAL", s, "0"); got != "$ok" {
			if len(list) > 500 {
				list = list[:500] + "..."
			}
			t.Fatalf("round trip of %s: %s", list, got)
		}
	}
}

// Hostile input: declared lengths past the data, deep nesting, many
// objects. Each ends in Redis's error, never a panic or a huge allocation
// (the limit is far above what these need).
func TestCmsgpack_HostileInput(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(64 << 20)
	for _, c := range []libCase{
		{`return #{cmsgpack.unpack('\221\255\255\255\255' .. string.rep('\192', 100))}`, "Missing bytes in input."},
		{`return #{cmsgpack.unpack('\223\127\255\255\255' .. string.rep('\1', 100))}`, "Missing bytes in input."},
		{`return #{cmsgpack.unpack('\219\127\255\255\255abc')}`, "Missing bytes in input."},
		{`return #{cmsgpack.unpack(string.rep('\145', 200000))}`, "stack overflow (in function mp_decode_to_lua_array)"},
		{`return #{cmsgpack.unpack(string.rep('\129', 200000))}`, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"},
		{`return #{cmsgpack.unpack(string.rep('\192', 200000))}`, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"},
		{`return #{cmsgpack.unpack_limit(string.rep('\192', 200000), 2^40)}`, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"},
	} {
		want := "-ERR user_script:1: " + c.want + " script: " + SHA1Hex([]byte(c.script)) + ", on @user_script:1."
		f.expect(want, "EVAL", c.script, "0")
	}
	// truncating a valid encoding anywhere is an error, not a crash
	s := `local p = cmsgpack.pack({1, 'two', {x = 3.5, y = {true, false}}, string.rep('z', 300), 2^40, -2^40})
local bad = 0
for i = 1, #p - 1 do
	local ok, err = pcall(cmsgpack.unpack, p:sub(1, i))
	if ok or err ~= 'Missing bytes in input.' then bad = bad + 1 end
end
return bad`
	f.expect(":0", "EVAL", s, "0")
}
