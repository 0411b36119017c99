package luavm

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
	"github.com/tumblerdb/tumbler/engine/enginetest"
)

// cjson (cjson.go) is lua-cjson 2.1.0 as Redis 7.0 ships it. Every
// expected reply is redis-server 7.0.15's for the same script (errors up
// to " script: <sha>..."); compat/diff/testdata/luacjson.txt diffs more
// against it, and compat/diff's TestCjsonRandomDiff random ones.

type cjsonCase struct{ script, want string }

// expectCjson runs the cases in order on f (settings of the global cjson
// persist from one to the next, as in Redis). An error reply is compared
// up to its " script: " suffix.
func expectCjson(t *testing.T, f *fixture, cases []cjsonCase) {
	t.Helper()
	for _, tc := range cases {
		got := f.do(2, "EVAL", tc.script, "0")
		if strings.HasPrefix(tc.want, "-") {
			if !strings.HasPrefix(got, tc.want+" script: ") {
				t.Errorf("%s:\n got %q\nwant %q...", tc.script, got, tc.want)
			}
		} else if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.script, got, tc.want)
		}
	}
}

// encode: lua_next's key order, C's %.14g, lua-cjson's escapes, its
// sparse array rule with the largest key held in a C int, and its errors.
func TestCjson_Encode(t *testing.T) {
	expectCjson(t, newFixture(t), []cjsonCase{
		{`return cjson.encode({a=1,b=2,c=3})`, `${"a":1,"c":3,"b":2}`},
		{`return cjson.encode({x=1,y=2,z=3,w=4,name='n',id=7})`, `${"y":2,"x":1,"name":"n","z":3,"id":7,"w":4}`},
		{`return cjson.encode({1,2,'a',{x=1}})`, `$[1,2,"a",{"x":1}]`},
		{`return cjson.encode({})`, `${}`},
		{`return cjson.encode({a='/"'})`, `${"a":"\/\""}`},
		{`return cjson.encode(string.char(0,1,7,8,9,10,11,12,13,14,31,32,34,39,47,92,127,128,255))`, "$\"\\u0000\\u0001\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f \\\"'\\/\\\\\\u007f\x80\xff\""},
		{`return cjson.encode({-0, 0, 1e300, 2^53, 2^63, -2^63, 123456789012345, 1234567890123456, 0.1, 1/3, 5e-324, 1e-5, 1e-4, 100000000000000, 1e15})`, `$[-0,-0,1e+300,9.007199254741e+15,9.2233720368548e+18,-9.2233720368548e+18,1.2345678901234e+14,1.2345678901235e+15,0.1,0.33333333333333,4.9406564584125e-324,1e-05,0.0001,1e+14,1e+15]`},
		{`return cjson.encode(0.1)`, `$0.1`},
		{`return cjson.encode(1e20)`, `$1e+20`},
		{`return cjson.encode(true)`, `$true`},
		{`return cjson.encode(nil)`, `$null`},
		{`return cjson.encode(cjson.null)`, `$null`},
		{`return cjson.encode({1,2,nil,4})`, `$[1,2,null,4]`},
		{`return cjson.encode({[1]=1,[3]=3})`, `$[1,null,3]`},
		{`return cjson.encode({[10]=1})`, `$[null,null,null,null,null,null,null,null,null,1]`},
		{`return cjson.encode({[11]=1})`, `-ERR user_script:1: Cannot serialise table: excessively sparse array`},
		{`return cjson.encode({1,2,3,4,5,[11]=1})`, `$[1,2,3,4,5,null,null,null,null,null,1]`},
		{`return cjson.encode({1,2,3,4,5,[12]=1})`, `$[1,2,3,4,5,null,null,null,null,null,null,1]`},
		{`return cjson.encode({[0]=1})`, `${"0":1}`},
		{`return cjson.encode({[-1]=1})`, `${"-1":1}`},
		{`return cjson.encode({[1.5]=1})`, `${"1.5":1}`},
		{`return cjson.encode({[2^31]=1})`, `${"2147483648":1}`},
		{`return cjson.encode({[2^32+1]=1})`, `${"4294967297":1}`},
		{`local t = {} t[2^31] = 1 t[2^27] = 2 return cjson.encode(t)`, `-ERR user_script:1: Cannot serialise table: excessively sparse array`},
		{`local t = {} t[2^31] = 1 t[2^27] = 2 t.x = 3 return cjson.encode(t)`, `${"134217728":2,"2147483648":1,"x":3}`},
		{`local t = {} t[5] = 2 t[2^31] = 1 return cjson.encode(t)`, `${"5":2,"2147483648":1}`},
		{`local c = cjson.new() c.encode_sparse_array(true) local t = {} t[2^32+1] = 1 t[2^31] = 2 t[2^27] = 3 return c.encode(t)`, `${"4294967297":1,"2147483648":2,"134217728":3}`},
		{`local t = {} t[1/0] = 5 t[2^27] = 1 return cjson.encode(t)`, `-ERR user_script:1: Cannot serialise table: excessively sparse array`},
		{`return cjson.encode({[math.huge]=1})`, `-ERR user_script:1: Cannot serialise number: must not be NaN or Inf`},
		{`return cjson.encode({[true]=1})`, `-ERR user_script:1: Cannot serialise boolean: table key must be a number or string`},
		{`return cjson.encode({[{}]=1})`, `-ERR user_script:1: Cannot serialise table: table key must be a number or string`},
		{`return cjson.encode(function() end)`, `-ERR user_script:1: Cannot serialise function: type not supported`},
		{`return cjson.encode({f=tostring})`, `-ERR user_script:1: Cannot serialise function: type not supported`},
		{`return cjson.encode({1, cjson.encode})`, `-ERR user_script:1: Cannot serialise function: type not supported`},
		{`return cjson.encode(0/0)`, `-ERR user_script:1: Cannot serialise number: must not be NaN or Inf`},
		{`return cjson.encode(1/0)`, `-ERR user_script:1: Cannot serialise number: must not be NaN or Inf`},
		{`return cjson.encode({a={1/0}})`, `-ERR user_script:1: Cannot serialise number: must not be NaN or Inf`},
		{`local t = {} t[1] = t return cjson.encode(t)`, `-ERR user_script:1: Cannot serialise, excessive nesting (1001)`},
		{`local t = {} t.a = t return cjson.encode(t)`, `-ERR user_script:1: Cannot serialise, excessive nesting (1001)`},
		{`local function f() return cjson.encode({[true]=1}) end return f()`, `-ERR user_script:1: Cannot serialise boolean: table key must be a number or string`},
		{`return {pcall(cjson.encode, {[20]=1})}`, `*2 (nil) $Cannot serialise table: excessively sparse array`},
		{`return cjson.encode()`, `-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)`},
		{`return cjson.encode(1, 2)`, `-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)`},
		{`local e = cjson.encode return e()`, `-ERR user_script:1: bad argument #1 to 'e' (expected 1 argument)`},
		{`return #cjson.encode(cjson.decode(string.rep('[', 1000)..string.rep(']', 1000)))`, `:2000`},
	})
}

// decode: strtod's numbers (hex, inf, nan, leading zeros and '+'), raw
// control bytes in strings, \u escapes and surrogate pairs, the input read
// up to its first NUL, and the errors with their positions.
func TestCjson_Decode(t *testing.T) {
	expectCjson(t, newFixture(t), []cjsonCase{
		{`return cjson.decode('[1,2')`, `-ERR user_script:1: Expected comma or array end but found T_END at character 5`},
		{`return cjson.decode('{"a":')`, `-ERR user_script:1: Expected value but found T_END at character 6`},
		{`return cjson.decode('not json')`, `-ERR user_script:1: Expected value but found invalid token at character 1`},
		{`return cjson.decode('"\\ud83d"')`, `-ERR user_script:1: Expected value but found invalid unicode escape code at character 2`},
		{`return cjson.decode('"\\ude00"')`, `-ERR user_script:1: Expected value but found invalid unicode escape code at character 2`},
		{`return cjson.decode('"\\uD83D\\u0041"')`, `-ERR user_script:1: Expected value but found invalid unicode escape code at character 2`},
		{`return cjson.decode('"\\u12G4"')`, `-ERR user_script:1: Expected value but found invalid unicode escape code at character 2`},
		{`return cjson.decode('"\\x"')`, `-ERR user_script:1: Expected value but found invalid escape code at character 2`},
		{`return cjson.decode('"abc')`, `-ERR user_script:1: Expected value but found unexpected end of string at character 5`},
		{`return cjson.decode('"a\0b"')`, `-ERR user_script:1: Expected value but found unexpected end of string at character 3`},
		{`return cjson.decode(string.rep('[', 1001))`, `-ERR user_script:1: Found too many nested data structures (1001) at character 1001`},
		{`return cjson.decode(string.rep('{"a":', 1001))`, `-ERR user_script:1: Found too many nested data structures (1001) at character 5001`},
		{`return cjson.decode()`, `-ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)`},
		{`return cjson.decode('[1]', 2)`, `-ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)`},
		{`return cjson.decode({})`, `-ERR user_script:1: bad argument #1 to 'decode' (string expected, got table)`},
		{`return cjson.decode(123)`, `:123`},
		{`return cjson.decode(1e100)`, `:-9223372036854775808`},
		{`return cjson.decode('\0a')`, `-ERR user_script:1: JSON parser does not support UTF-16 or UTF-32`},
		{`return cjson.decode('a\0')`, `-ERR user_script:1: JSON parser does not support UTF-16 or UTF-32`},
		{`return cjson.decode('[1]\0xx')`, `*1 :1`},
		{`return cjson.decode('')`, `-ERR user_script:1: Expected value but found T_END at character 1`},
		{`return cjson.decode(' ')`, `-ERR user_script:1: Expected value but found T_END at character 2`},
		{`return cjson.decode('{"a":1,}')`, `-ERR user_script:1: Expected object key string but found T_OBJ_END at character 8`},
		{`return cjson.decode('{1:2}')`, `-ERR user_script:1: Expected object key string but found T_NUMBER at character 2`},
		{`return cjson.decode('{"a" 1}')`, `-ERR user_script:1: Expected colon but found T_NUMBER at character 6`},
		{`return cjson.decode('[1 2]')`, `-ERR user_script:1: Expected comma or array end but found T_NUMBER at character 4`},
		{`return cjson.decode('[1,]')`, `-ERR user_script:1: Expected value but found T_ARR_END at character 4`},
		{`return cjson.decode('tru')`, `-ERR user_script:1: Expected value but found invalid token at character 1`},
		{`return cjson.decode('nul')`, `-ERR user_script:1: Expected value but found invalid token at character 1`},
		{`return cjson.decode('-')`, `-ERR user_script:1: Expected value but found invalid number at character 1`},
		{`return cjson.decode('- 1')`, `-ERR user_script:1: Expected value but found invalid number at character 1`},
		{`return cjson.decode('.5')`, `-ERR user_script:1: Expected value but found invalid token at character 1`},
		{`return cjson.decode('[1] x')`, `-ERR user_script:1: Expected the end but found invalid token at character 5`},
		{`return cjson.decode('\v1')`, `-ERR user_script:1: Expected value but found invalid token at character 1`},
		{`return cjson.encode(cjson.decode('[NaN, Infinity, 0x10, 01, 1., "a\tb", -Infinity, +5]'))`, `-ERR user_script:1: Cannot serialise number: must not be NaN or Inf`},
		{`return cjson.decode('[NaN, Infinity, 0x10, 01, 1., "a\tb", -Infinity, +5]')[3]`, `:16`},
		{`return {cjson.decode('0x1p4'), cjson.decode('-0x10'), cjson.decode('1e2'), cjson.decode(' 7 ')}`, `*4 :16 :-16 :100 :7`},
		{`return string.format('%g %g %g %g %g', cjson.decode('-nan'), cjson.decode('nan'), cjson.decode('NaN(abc)'), cjson.decode('-Infinity'), cjson.decode('1e999'))`, `$-nan nan nan -inf inf`},
		{`return cjson.decode('infinit')`, `-ERR user_script:1: Expected the end but found invalid token at character 4`},
		{`return cjson.decode('nan(')`, `-ERR user_script:1: Expected the end but found invalid token at character 4`},
		{`return cjson.decode('"\\u00e9\\u20ac\\uD83D\\uDE00\\u0041\\/\\b\\f\\n\\r\\t\\"\\\\"')`, "$é€😀A/\b\f\n\r\t\"\\"},
		{`return cjson.decode('"\\u0000x"')`, "$\x00x"},
		{`return #cjson.decode('"\\u0000x"')`, `:2`},
		{`return cjson.decode('"raw\1\31\127\255"')`, "$raw\x01\x1f\x7f\xff"},
		{`local t = cjson.decode('[1,null,{"a":true}]') return {type(t[2]), tostring(t[3].a), #t, tostring(t[2] == cjson.null)}`, `*4 $userdata $true :3 $true`},
		{`return cjson.decode('{"n":2.5}').n * 2`, `:5`},
		{`return cjson.decode('{"a":1,"a":2}').a`, `:2`},
		{`return cjson.encode(cjson.decode('{"b":1,"a":2,"c":{"y":1,"x":2}}'))`, `${"a":2,"c":{"y":1,"x":2},"b":1}`},
		{`return {pcall(cjson.decode, '[')}`, `*2 (nil) $Expected value but found T_END at character 2`},
		{`local d = cjson.decode return d()`, `-ERR user_script:1: bad argument #1 to 'd' (expected 1 argument)`},
	})
}

// The configuration functions: their replies, argument errors (a range
// error always names argument #1), and module tables from cjson.new with
// settings of their own. The global cjson is read-only; a new one is not.
func TestCjson_Config(t *testing.T) {
	expectCjson(t, newFixture(t), []cjsonCase{
		{`return {cjson.encode_sparse_array()}`, `*3 (nil) :2 :10`},
		{`return cjson.encode_max_depth()`, `:1000`},
		{`return cjson.decode_max_depth()`, `:1000`},
		{`return cjson.encode_number_precision()`, `:14`},
		{`return cjson.encode_keep_buffer()`, `:1`},
		{`return cjson.encode_invalid_numbers()`, `(nil)`},
		{`return cjson.decode_invalid_numbers()`, `:1`},
		{`return {cjson._NAME, cjson._VERSION, type(cjson.new), type(cjson.null)}`, `*4 $cjson $2.1.0 $function $userdata`},
		{`return cjson.encode_max_depth(1, 2)`, `-ERR user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)`},
		{`return cjson.encode_sparse_array(1, 2, 3, 4)`, `-ERR user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)`},
		{`return cjson.encode_max_depth(0)`, `-ERR user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)`},
		{`return cjson.encode_max_depth(2^31)`, `-ERR user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)`},
		{`return cjson.encode_max_depth('x')`, `-ERR user_script:1: bad argument #1 to 'encode_max_depth' (number expected, got string)`},
		{`return cjson.encode_number_precision(0)`, `-ERR user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)`},
		{`return cjson.encode_number_precision(15)`, `-ERR user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)`},
		{`return cjson.encode_sparse_array(nil, -1)`, `-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)`},
		{`return cjson.encode_sparse_array(nil, nil, -1)`, `-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)`},
		{`return cjson.encode_sparse_array(nil, 2^31)`, `-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)`},
		{`return cjson.encode_sparse_array('x')`, `-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'x')`},
		{`return cjson.encode_sparse_array({})`, `-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (string expected, got table)`},
		{`return cjson.encode_keep_buffer('yes')`, `-ERR user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'yes')`},
		{`return cjson.encode_keep_buffer(1)`, `-ERR user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option '1')`},
		{`return cjson.encode_invalid_numbers('maybe')`, `-ERR user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option 'maybe')`},
		{`return cjson.decode_invalid_numbers({})`, `-ERR user_script:1: bad argument #1 to 'decode_invalid_numbers' (string expected, got table)`},
		{`cjson.encode_max_depth = 1`, `-ERR user_script:1: Attempt to modify a readonly table`},
		{`cjson.x = 1`, `-ERR user_script:1: Attempt to modify a readonly table`},
		{`local c = cjson.new() return {c.encode_max_depth('7'), c.encode_max_depth(2^32+5), cjson.encode_max_depth()}`, `*3 :7 :5 :1000`},
		{`local c = cjson.new() return {c.encode_sparse_array(true, 3, 4)}`, `*3 :1 :3 :4`},
		{`local c = cjson.new() return {c.encode_sparse_array('on', nil, 0)}`, `*3 :1 :2 :0`},
		{`local c = cjson.new() return {c.encode_keep_buffer(false), c.encode_keep_buffer('on'), c.encode_keep_buffer()}`, `*3 (nil) :1 :1`},
		{`local c = cjson.new() return {c.encode_invalid_numbers('null'), c.encode_invalid_numbers(true), c.encode_invalid_numbers('off'), c.encode_invalid_numbers('on')}`, `*4 $null :1 (nil) :1`},
		{`local c = cjson.new() return {c.decode_invalid_numbers(false), c.decode_invalid_numbers('on')}`, `*2 (nil) :1`},
		{`local c = cjson.new() c.encode_sparse_array(true) return {c.encode({[20]=1}), pcall(cjson.encode, {[20]=1})}`, `*3 ${"20":1} (nil) $Cannot serialise table: excessively sparse array`},
		{`local c = cjson.new() c.encode_sparse_array(false, 0) return c.encode({[20]=1, [1]=2})`, `$[2,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,1]`},
		{`local c = cjson.new() c.encode_sparse_array(false, 1, 0) return {pcall(c.encode, {[3]=1, [1]=2})}`, `*2 (nil) $Cannot serialise table: excessively sparse array`},
		{`local c = cjson.new() c.encode_sparse_array(false, 2147483647, 0) return {pcall(c.encode, {1,[100]=2})}`, `*2 (nil) $Cannot serialise table: excessively sparse array`},
		{`local c = cjson.new() c.encode_sparse_array(false, 2147483647, 0) return c.encode({1,2,[100]=2})`, `$[1,2,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,2]`},
		{`local c = cjson.new() c.encode_number_precision(1) return c.encode({1/3, 123, 0.15, 9.5, 95, 1e-10, -0})`, `$[0.3,1e+02,0.1,1e+01,1e+02,1e-10,-0]`},
		{`local c = cjson.new() c.encode_number_precision(3) return c.encode({[1/3]=1})`, `${"0.333":1}`},
		{`local c = cjson.new() c.encode_invalid_numbers(true) return c.encode({0/0, -(0/0), 1/0, -1/0})`, `$[nan,nan,inf,-inf]`},
		{`local c = cjson.new() c.encode_invalid_numbers('null') return c.encode({0/0, 1/0, -1/0})`, `$[null,null,null]`},
		{`local c = cjson.new() c.encode_invalid_numbers(true) return c.encode({[1/0]=1})`, `${"inf":1}`},
		{`local c = cjson.new() c.encode_invalid_numbers('null') return c.encode({[1/0]=1})`, `${"null":1}`},
		{`local c = cjson.new() c.encode_max_depth(2) return {pcall(c.encode, {{1}}), pcall(c.encode, {{{}}})}`, `*3 :1 (nil) $Cannot serialise, excessive nesting (3)`},
		{`local c = cjson.new() c.decode_max_depth(2) return {pcall(c.decode, '[[1]]'), pcall(c.decode, '[[[]]]')}`, `*3 :1 (nil) $Found too many nested data structures (3) at character 3`},
		{`local c = cjson.new() c.decode_max_depth(2) return {pcall(c.decode, '{"a":{"b":{}}}')}`, `*2 (nil) $Found too many nested data structures (3) at character 11`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, 'NaN')}`, `*2 (nil) $Expected value but found invalid token at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, '-inf')}`, `*2 (nil) $Expected value but found invalid number at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, '0x10')}`, `*2 (nil) $Expected value but found invalid number at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, '01')}`, `*2 (nil) $Expected value but found invalid number at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, '+1')}`, `*2 (nil) $Expected value but found invalid token at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {pcall(c.decode, '-01')}`, `*2 (nil) $Expected value but found invalid number at character 1`},
		{`local c = cjson.new() c.decode_invalid_numbers(false) return {c.decode('1.'), c.decode('-0'), c.decode('10')}`, `*3 :1 :0 :10`},
		{`local c = cjson.new() c.x = 1 c.encode = nil return {c.x, type(c.encode), tostring(c.null == cjson.null), type(c.new().encode)}`, `*4 :1 $nil $true $function`},
		{`local c = cjson.new() return tostring(rawequal(c.encode, cjson.encode))`, `$false`},
	})
}

// The settings of the global cjson stay for the scripts after, as in
// Redis's one Lua state, until SCRIPT FLUSH, which in Redis makes a new
// state.
func TestCjson_SettingsPersistUntilScriptFlush(t *testing.T) {
	f := newFixture(t)
	expectCjson(t, f, []cjsonCase{
		{"cjson.encode_max_depth(3) cjson.encode_sparse_array(true, 3, 4) return 1", ":1"},
		{"return cjson.encode_max_depth()", ":3"},
		{"return cjson.encode({{{{}}}})", "-ERR user_script:1: Cannot serialise, excessive nesting (4)"},
		{"return cjson.encode({{{}}})", "$[[{}]]"},
		{"return {cjson.encode_sparse_array()}", "*3 :1 :3 :4"},
		{"return cjson.encode({[20]=1})", `${"20":1}`},
		{"return cjson.new().encode_max_depth()", ":1000"},
	})
	f.expect("+OK", "SCRIPT", "FLUSH")
	expectCjson(t, f, []cjsonCase{
		{"return cjson.encode_max_depth()", ":1000"},
		{"return {cjson.encode_sparse_array()}", "*3 (nil) :2 :10"},
		{"return cjson.encode({{{{}}}})", "$[[[{}]]]"},
	})
}

// Lua 5.1 lets a C function use 8000 stack slots: lua-cjson's checks of
// them stop nesting there whatever depth is configured, at the depths
// the slots its arrays (one a level) and objects (two) use allow.
func TestCjson_StackLimit(t *testing.T) {
	const deep = "cjson.encode_max_depth(100000) cjson.decode_max_depth(100000) "
	expectCjson(t, newFixture(t), []cjsonCase{
		{deep + "local ok, e = pcall(cjson.decode, string.rep('[', 9000)) return e", "$Found too many nested data structures (7999) at character 7999"},
		{deep + "local ok, e = pcall(cjson.decode, string.rep('{\"a\":', 5000)) return e", "$Found too many nested data structures (4000) at character 19996"},
		{deep + "local ok, e = pcall(cjson.decode, string.rep('[{\"a\":', 5000)) return e", "$Found too many nested data structures (5333) at character 15997"},
		{deep + "local t = {} for i=1,9000 do t = {t} end local ok, e = pcall(cjson.encode, t) return e", "$Cannot serialise, excessive nesting (7998)"},
		{deep + "local t = {} for i=1,9000 do t = {a=t} end local ok, e = pcall(cjson.encode, t) return e", "$Cannot serialise, excessive nesting (4000)"},
		{deep + "local t = {} for i=1,9000 do t = {a={t}} end local ok, e = pcall(cjson.encode, t) return e", "$Cannot serialise, excessive nesting (5332)"},
		{deep + "local v = cjson.decode(string.rep('[', 7997)..string.rep(']', 7997)) return 1", ":1"},
		{deep + "local t = {} for i=1,7996 do t = {t} end return #cjson.encode(t)", ":15994"},
	})
}

// encode builds its result in one call: past the size limit it stops
// with "not enough memory", as string.rep does (Redis grows its buffer
// until malloc fails).
func TestCjson_EncodeBoundedBySizeLimit(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(1 << 20)
	for _, script := range []string{
		"local t = {'x'} for i = 1, 40 do t = {t, t} end return #cjson.encode(t)",
		"local c = cjson.new() c.encode_sparse_array(false, 0) return #c.encode({[2^30]=1})",
		"return #cjson.encode({string.rep('\\1', 200000)})",
	} {
		// The memory bound's watchdog may stop the script first, when a
		// loaded machine delays the encoder's own check: either way it is
		// stopped.
		if got := f.do(2, "EVAL", script, "0"); !strings.HasPrefix(got, "-ERR user_script:1: not enough memory") && !strings.HasPrefix(got, "-ERR Script used too much memory") {
			t.Errorf("%s: got %q", script, got)
		}
	}
	f.expect(":8189", "EVAL", "local t = {'x'} for i = 1, 10 do t = {t, t} end return #cjson.encode(t)", "0")
}

// A long encode or decode stops on SCRIPT KILL (and so on the busy
// timeout and the memory bound, which cancel the same way). Redis's
// cannot be stopped.
func TestCjson_KillStopsLongCall(t *testing.T) {
	for _, script := range []string{
		"local t = {} for i = 1, 40 do t = {a=t, b=t} end return cjson.encode(t)",
		"return cjson.decode('{' .. string.rep('\"a\":1,', 10000000) .. '\"a\":1}')",
	} {
		e := engine.New(engine.Config{BusyThreshold: 10 * time.Millisecond})
		vm := Install(e)
		vm.SetMemoryLimit(0)
		done := runBusy(t, e, script)
		vm.Kill()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-ERR Script killed by user with SCRIPT KILL...") {
				t.Fatalf("%s: killed script replied %q", script, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: SCRIPT KILL did not stop it", script)
		}
	}
}

// cjsonFuzzScript decodes ARGV[1] with the settings ARGV[2] picks,
// encodes what it got under other settings and decodes that again,
// catching their errors: a Go panic would show as a "runtime error".
const cjsonFuzzScript = `
local c = cjson.new()
local b = tonumber(ARGV[2])
local out = {}
local function try(f, ...)
  local res = {pcall(f, ...)}
  for k = 1, #res do out[#out+1] = type(res[k]) == 'string' and res[k] or type(res[k]) end
  return res[1], res[2]
end
if b % 2 == 1 then c.decode_invalid_numbers(false) end
if b % 4 >= 2 then c.decode_max_depth(5) end
if b % 8 >= 4 then c.encode_sparse_array(true, 1, 1) end
c.encode_invalid_numbers(({true, false, 'null'})[b % 3 + 1])
c.encode_number_precision(b % 14 + 1)
local ok, v = try(c.decode, ARGV[1])
if ok then
  local ok2, s = try(c.encode, v)
  if ok2 then try(c.decode, s) end
  local t = {v, x = {v}}
  -- not NaN, and no large number (gopher-lua would grow its array part to it)
  if v == v and (type(v) ~= 'number' or math.abs(v) < 1000) then t[v] = v end
  try(c.encode, t)
end
return out`

// FuzzCjson decodes arbitrary bytes under arbitrary settings and
// encodes what it decoded: it must never panic, and every call must end.
func FuzzCjson(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[NaN, Infinity, -inf, 0x1p4, 01, 1., +5]`, `"\ud83d"`,
		`[[[[[[[]]]]]]]`, `{"a":1,}`, "\"a\x00b\"", "\x00a", `1e999`, `nan(abc)`, `-`, `"\u12G4"`, `[1 2]`,
		`{"1":1,"2":2}`, `"\/\b\f\n\r\t\"\\"`, "  \t\n 7 ", `tru`, `[` + strings.Repeat(`{"a":`, 20),
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(7))
	}
	e := engine.New(engine.Config{})
	vm := Install(e)
	vm.SetMemoryLimit(16 << 20)
	f.Cleanup(vm.Close)
	f.Fuzz(func(t *testing.T, s string, settings uint8) {
		if len(s) > 4096 {
			return
		}
		w := &enginetest.TextWriter{}
		timer := time.AfterFunc(fuzzRunLimit, vm.Kill)
		e.Exec(&engine.Ctx{Args: args("EVAL", cjsonFuzzScript, "0", s, strconv.Itoa(int(settings))), W: w})
		timer.Stop()
		got := w.String()
		if strings.HasPrefix(got, "-") && !strings.Contains(got, "Script killed") {
			t.Fatalf("%q %d: %s", s, settings, got)
		}
		if strings.Contains(got, "runtime error") || strings.Contains(got, "goroutine") {
			t.Fatalf("%q %d: a Go panic: %s", s, settings, got)
		}
	})
}

// A document of many numbers decodes in time linear in its length: each
// number is read from its own bytes, where reading each from the rest of
// the document (copied by strtod's lowering) took hours for this one.
func TestCjson_DecodeManyNumbersIsLinear(t *testing.T) {
	newFixture(t).expect(":1000000", "EVAL", "return #cjson.decode('[' .. string.rep('1.5,', 999999) .. '1]')", "0")
}
