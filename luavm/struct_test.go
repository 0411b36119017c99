package luavm

import (
	"strings"
	"testing"
)

// hexFn is a Lua helper that cases prepend to show bytes as hex.
const hexFn = "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end "

type libCase struct{ script, want string }

// runLibCases runs each script with EVAL; {sha} in a want stands for the
// script's SHA1.
func runLibCases(t *testing.T, cases []libCase) {
	t.Helper()
	f := newFixture(t)
	for _, c := range cases {
		f.expect(strings.ReplaceAll(c.want, "{sha}", SHA1Hex([]byte(c.script))), "EVAL", c.script, "0")
	}
}

// Every expected reply was checked against redis-server 7.0.15 (the same
// scripts, sent with EVAL, compared byte for byte).
func TestStruct(t *testing.T) {
	runLibCases(t, []libCase{
		// integers: sizes, signedness, byte order
		{hexFn + "return hex(struct.pack('>I2', 258))", "$0102"},
		{hexFn + "return hex(struct.pack('<I2', 258))", "$0201"},
		{hexFn + "return hex(struct.pack('bBhHlLT', -1, 255, -2, 65535, -3, 2^53, 7))", "$fffffefffffffdffffffffffffff00000000000020000700000000000000"},
		{hexFn + "return hex(struct.pack('>i', -2) .. struct.pack('<I', 1))", "$fffffffe01000000"},
		{hexFn + "return hex(struct.pack('>I3', 0x123456))", "$123456"},
		{hexFn + "return hex(struct.pack('>i12', -2) .. struct.pack('<i12', -2))", "$00000000fffffffffffffffefeffffffffffffff00000000"},
		{hexFn + "return hex(struct.pack('i0', 5))", "$"},
		{hexFn + "return hex(struct.pack('<i2', 70000) .. struct.pack('<i2', -70000))", "$701190ee"},
		{hexFn + "return hex(struct.pack('<B', 256.7) .. struct.pack('<b', -0.5))", "$0000"},
		// doubles cast to 64 bits as C does
		{hexFn + "return hex(struct.pack('>I8', 2^64) .. struct.pack('>I8', -1))", "$0000000000000000ffffffffffffffff"},
		{hexFn + "return hex(struct.pack('>i8', -2^63) .. struct.pack('>I8', 2^63))", "$80000000000000008000000000000000"},
		{hexFn + "return hex(struct.pack('>I8', 2^63 + 2^62) .. struct.pack('>I8', 2^65))", "$c0000000000000000000000000000000"},
		{hexFn + "return hex(struct.pack('>I8', 0/0) .. struct.pack('>I8', 1/0))", "$80000000000000000000000000000000"},
		{hexFn + "return hex(struct.pack('>i8', -1/0) .. struct.pack('>i8', 2^64 + 2^63 + 2^62))", "$80000000000000000000000000000000"},
		{hexFn + "return hex(struct.pack('>I4', 1.9) .. struct.pack('>i4', -1.9))", "$00000001ffffffff"},
		{hexFn + "return hex(struct.pack('>I4', -2^40) .. struct.pack('i', 2^70))", "$0000000000000000"},
		// floating point
		{hexFn + "return hex(struct.pack('>d', 1.5) .. struct.pack('<f', 1.5))", "$3ff80000000000000000c03f"},
		{hexFn + "return hex(struct.pack('f', 1e300) .. struct.pack('>f', 0/0))", "$0000807fffc00000"},
		{hexFn + "return hex(struct.pack('d', 0/0) .. struct.pack('>d', -(0/0)) .. struct.pack('>d', 1/0))", "$000000000000f8ff7ff80000000000007ff0000000000000"},
		// strings
		{hexFn + "return hex(struct.pack('c', 'abc') .. struct.pack('c0', 'abc'))", "$61616263"},
		{hexFn + "return hex(struct.pack('s', 'abc') .. struct.pack('s', 'a\\0b') .. struct.pack('c2', 'a\\0b'))", "$61626300610062006100"},
		{hexFn + "return hex(struct.pack('c', 12.5) .. struct.pack('c0', 1e20) .. struct.pack('c0', -0))", "$3131652b32302d30"},
		{"return struct.pack('c0', 0.1) .. '|' .. struct.pack('c0', 2^53) .. '|' .. struct.pack('c0', 1e-5)", "$0.1|9.007199254741e+15|1e-05"},
		{"return struct.pack('c0', 1/0) .. '|' .. struct.pack('c0', -1/0) .. '|' .. struct.pack('c0', 0/0)", "$inf|-inf|-nan"},
		// numeric strings as numbers
		{hexFn + "return hex(struct.pack('i', '12') .. struct.pack('>I2', '0x10') .. struct.pack('>I2', ' 10 ') .. struct.pack('i', '1e2'))", "$0c0000000010000a64000000"},
		// alignment, padding, spaces
		{hexFn + "return hex(struct.pack('!4bi', 1, 2) .. struct.pack('!bd', 1, 2))", "$010000000200000001000000000000000000000000000040"},
		{hexFn + "return hex(struct.pack('!16bd', 1, 2) .. struct.pack('!4bcd', 1, 'a', 2))", "$01000000000000000000000000000040016100000000000000000040"},
		{hexFn + "return hex(struct.pack('bx!4i', 1, 2) .. struct.pack('!bxh', 1, 2))", "$010000000200000001000200"},
		{hexFn + "return hex(struct.pack('!4i3i', 1, 2) .. struct.pack('!4bi3', 1, 2))", "$000001000000000002000000010000020000"},
		{hexFn + "return hex(struct.pack('!8bI5', 1, 2) .. struct.pack('!8bbI6', 1, 2, 3))", "$01000000000200000000010200000000030000000000"},
		{hexFn + "return hex(struct.pack('!32bi17', 1, 2))", "$01000000000000000000000000000000000200000000000000000000000000000000"},
		{hexFn + "return hex(struct.pack(' b  b ', 1, 2))", "$0102"},
		// the format ends at a NUL; extra arguments are ignored
		{hexFn + "return hex(struct.pack('b\\0b', 1, 2) .. struct.pack('b', 1, 2, 3))", "$0101"},
		{hexFn + "return hex(struct.pack('') .. struct.pack('', 1))", "$"},
		// unpack
		{"return {struct.unpack('>I2', 'ab')}", "*2 :24930 :3"},
		{"return {struct.unpack('>I2', 'abc', 2)}", "*2 :25187 :4"},
		{"return {struct.unpack('b', '\\200')}", "*2 :-56 :2"},
		{"return {struct.unpack('B', '\\200')}", "*2 :200 :2"},
		{"return {struct.unpack('h', '\\200\\200')}", "*2 :-14136 :3"},
		{"return {struct.unpack('<I3', '\\1\\2\\3')}", "*2 :197121 :4"},
		{"return {struct.unpack('>i3', '\\255\\255\\254')}", "*2 :-2 :4"},
		{"return {struct.unpack('>I8', '\\255\\255\\255\\255\\255\\255\\255\\255')}", "*2 :-9223372036854775808 :9"},
		{"return {struct.unpack('i0', 'abc')}", "*2 :0 :1"},
		{"return {struct.unpack('>i9', '\\255\\255\\255\\255\\255\\255\\255\\255\\255')}", "*2 :-1 :10"},
		{"return {struct.unpack('>I9', '\\1\\2\\3\\4\\5\\6\\7\\8\\9')}", "*2 :144964032628459520 :10"},
		{"return {struct.unpack('>i12', string.rep('\\1', 12))}", "*2 :-2130640639 :13"},
		{"return {struct.unpack('>i32', string.rep('\\255', 32))}", "*2 :-1 :33"},
		{"return {struct.unpack('s', 'abc\\0de')}", "*2 $abc :5"},
		{"return {struct.unpack('ss', 'a\\0\\0')}", "*3 $a $ :4"},
		{"return {struct.unpack('>s', 'abc\\0', 4)}", "*2 $ :5"},
		{"return {struct.unpack('bc0', '\\3abcd')}", "*2 $abc :5"},
		{"return {struct.unpack('sc0', 'x\\0abcd')}", "-ERR user_script:1: format 'c0' needs a previous size script: {sha}, on @user_script:1."},
		{"return {struct.unpack('c1c0', '3abcd')}", "*2 $abc :5"},
		{"return {struct.unpack('Bc0', '\\0abcd')}", "*2 $ :2"},
		{"return {struct.unpack('!4bi', '\\1\\0\\0\\0\\2\\0\\0\\0')}", "*3 :1 :2 :9"},
		{"return {struct.unpack('xxb', '\\1\\2\\3')}", "*2 :3 :4"},
		{"return {struct.unpack(' b ', '\\1\\2\\3')}", "*2 :1 :2"},
		{"return {struct.unpack('>d', struct.pack('>d', 0.1))}", "*2 :0 :9"},
		{"return struct.unpack('<f', struct.pack('<f', 0.1)) == 0.10000000149011612", ":1"},
		{"return {struct.unpack('>f', '\\127\\192\\0\\1')}", "*2 :-9223372036854775808 :5"},
		{hexFn + "return hex(struct.pack('>f', struct.unpack('>f', '\\127\\128\\0\\1')))", "$7fc00001"},
		{"return {struct.unpack('<d', '\\0\\0\\0\\0\\0\\0\\240\\127')}", "*2 :-9223372036854775808 :9"},
		{"return {struct.unpack('b', '\\1', '1')}", "*2 :1 :2"},
		{"return {struct.unpack('b', '\\1', 1.9)}", "*2 :1 :2"},
		{"return {struct.unpack('', 'abc', 10)}", "*1 :10"},
		{"return {struct.unpack('', 'abc', -1)}", "*1 :-1"},
		{"return {struct.unpack('', 'abc', -5)}", "*1 :-5"},
		{"return {struct.unpack('', 'abc', 2^70)}", "*1 :-9223372036854775808"},
		{"return {struct.unpack('', 'abc', 0/0)}", "*1 :-9223372036854775808"},
		{"return {struct.unpack('<', 'abc', 4)}", "*1 :4"},
		{"return {struct.unpack(123, '\\1\\2\\3')}", "-ERR user_script:1: bad argument #1 to 'unpack' (invalid format option '1') script: {sha}, on @user_script:1."},
		{"return #{struct.unpack(string.rep('b', 7997), string.rep('a', 9000))}", ":7998"},
		{"return #{struct.unpack(string.rep('x', 9000), string.rep('a', 9000))}", ":1"},
		// size
		{"return struct.size('!8bd')", ":16"},
		{"return struct.size('Bhd') + struct.size('!bhd') * 100 + struct.size('!2bhd') * 10000", ":121611"},
		{"return struct.size('i') .. ' ' .. struct.size('l') .. ' ' .. struct.size('T') .. ' ' .. struct.size('xc5')", "$4 8 8 6"},
		{"return struct.size('i3!4i') .. ' ' .. struct.size('!4bx') .. ' ' .. struct.size('!4b!2h') .. ' ' .. struct.size('h b')", "$8 2 4 3"},
		{"return struct.size('') .. ' ' .. struct.size('>') .. ' ' .. struct.size('!') .. ' ' .. struct.size('z') .. ' ' .. struct.size(5)", "$0 0 0 0 0"},
		{"return struct.size('c') .. ' ' .. struct.size('c00003') .. ' ' .. struct.size('i04') .. ' ' .. struct.size('i12c3')", "$1 3 4 15"},
		{"return struct.size('!1073741824ic1d') .. ' ' .. struct.size('!1073741824i!c')", "$16 5"},
		{"return struct.size('c2147483647c2147483647')", ":4294967294"},
		// errors
		{"return struct.pack('i33', 1)", "-ERR user_script:1: integral size 33 is larger than limit of 32 script: {sha}, on @user_script:1."},
		{"return struct.pack('i99999999999', 1)", "-ERR user_script:1: integral size overflow script: {sha}, on @user_script:1."},
		{"return struct.pack('c2147483648', 'a')", "-ERR user_script:1: integral size overflow script: {sha}, on @user_script:1."},
		{"return struct.size('i2147483647')", "-ERR user_script:1: integral size 2147483647 is larger than limit of 32 script: {sha}, on @user_script:1."},
		{"return struct.pack('!2147483648', 1)", "-ERR user_script:1: integral size overflow script: {sha}, on @user_script:1."},
		{"return struct.pack('!3i', 1)", "-ERR user_script:1: alignment 3 is not a power of 2 script: {sha}, on @user_script:1."},
		{"return struct.size('!0')", "-ERR user_script:1: alignment 0 is not a power of 2 script: {sha}, on @user_script:1."},
		{"return struct.pack('!17i', 1)", "-ERR user_script:1: alignment 17 is not a power of 2 script: {sha}, on @user_script:1."},
		{"return struct.pack('z', 1)", "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z') script: {sha}, on @user_script:1."},
		{"return struct.pack('=b', 1)", "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '=') script: {sha}, on @user_script:1."},
		{"return struct.size('\\255')", "-ERR user_script:1: bad argument #1 to 'size' (invalid format option '\xff') script: {sha}, on @user_script:1."},
		{"return struct.size('i-4')", "-ERR user_script:1: bad argument #1 to 'size' (invalid format option '-') script: {sha}, on @user_script:1."},
		{"return struct.pack(12, 1)", "-ERR user_script:1: bad argument #1 to 'pack' (invalid format option '1') script: {sha}, on @user_script:1."},
		{"return struct.pack(nil)", "-ERR user_script:1: bad argument #1 to 'pack' (string expected, got nil) script: {sha}, on @user_script:1."},
		{"return struct.size()", "-ERR user_script:1: bad argument #1 to 'size' (string expected, got no value) script: {sha}, on @user_script:1."},
		{"return struct.size('s')", "-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size) script: {sha}, on @user_script:1."},
		{"return struct.size('c0')", "-ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size) script: {sha}, on @user_script:1."},
		{"return struct.pack('c5', 'abc')", "-ERR user_script:1: bad argument #3 to 'pack' (string too short) script: {sha}, on @user_script:1."},
		{"return struct.pack('s')", "-ERR user_script:1: bad argument #2 to 'pack' (string expected, got nil) script: {sha}, on @user_script:1."},
		{"return struct.pack('i')", "-ERR user_script:1: bad argument #2 to 'pack' (number expected, got nil) script: {sha}, on @user_script:1."},
		{"return struct.pack('ii', 1)", "-ERR user_script:1: bad argument #3 to 'pack' (number expected, got nil) script: {sha}, on @user_script:1."},
		{"return struct.pack('i', 'x')", "-ERR user_script:1: bad argument #2 to 'pack' (number expected, got string) script: {sha}, on @user_script:1."},
		{"return struct.pack('i', true)", "-ERR user_script:1: bad argument #2 to 'pack' (number expected, got boolean) script: {sha}, on @user_script:1."},
		{"return struct.pack('c', true)", "-ERR user_script:1: bad argument #2 to 'pack' (string expected, got boolean) script: {sha}, on @user_script:1."},
		{"return struct.pack('>I2', {})", "-ERR user_script:1: bad argument #2 to 'pack' (number expected, got table) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('>I2', 'a')}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('>I2', 'abc', 3)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('>I2', 'abc', 0)}", "-ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('>I2', 'abc', -1)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('b', 'abc', 10)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('<', 'abc', 5)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('x', 'abc', 4)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('s', 'abc')}", "-ERR user_script:1: unfinished string in data script: {sha}, on @user_script:1."},
		{"return {struct.unpack('s', 'abc', 4)}", "-ERR user_script:1: unfinished string in data script: {sha}, on @user_script:1."},
		{"return {struct.unpack('c0', 'abcd')}", "-ERR user_script:1: format 'c0' needs a previous size script: {sha}, on @user_script:1."},
		{"return {struct.unpack('c1c0', 'xabcd')}", "-ERR user_script:1: format 'c0' needs a previous size script: {sha}, on @user_script:1."},
		{"return {struct.unpack('bc0', '\\9abcd')}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('c3', 'ab')}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('b', '\\1', 'x')}", "-ERR user_script:1: bad argument #3 to 'unpack' (number expected, got string) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('b')}", "-ERR user_script:1: bad argument #2 to 'unpack' (string expected, got no value) script: {sha}, on @user_script:1."},
		{"return {struct.unpack()}", "-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got no value) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('>I2', {})}", "-ERR user_script:1: bad argument #2 to 'unpack' (string expected, got table) script: {sha}, on @user_script:1."},
		{"return #{struct.unpack(string.rep('b', 7998), string.rep('a', 9000))}", "-ERR user_script:1: stack overflow (too many results) script: {sha}, on @user_script:1."},
		{"return #{struct.unpack(string.rep('b', 7997), string.rep('a', 9000), 1)}", "-ERR user_script:1: stack overflow (too many results) script: {sha}, on @user_script:1."},
		{"return #{struct.unpack(string.rep('b', 7997)..'x', string.rep('a', 9000))}", "-ERR user_script:1: stack overflow (too many results) script: {sha}, on @user_script:1."},
		{"return #{struct.unpack(string.rep('b', 7996)..'bc0', string.rep('\\1', 9000))}", "-ERR user_script:1: stack overflow (too many results) script: {sha}, on @user_script:1."},
		// how the function is named in argument errors
		{"local p = struct.pack return p('z')", "-ERR user_script:1: bad argument #1 to 'p' (invalid format option 'z') script: {sha}, on @user_script:1."},
		{"local t = {f=struct.pack} return t.f('z')", "-ERR user_script:1: bad argument #1 to 'f' (invalid format option 'z') script: {sha}, on @user_script:1."},
		{"return select(2, pcall(struct.pack, 'z'))", "$bad argument #1 to '?' (invalid format option 'z')"},
		{"return select(2, pcall(struct.unpack, 'b', ''))", "$bad argument #2 to '?' (data string too short)"},
		// the library is read-only
		{"struct.pack = nil", "-ERR user_script:1: Attempt to modify a readonly table script: {sha}, on @user_script:1."},
		{"struct.foo = 1", "-ERR user_script:1: Attempt to modify a readonly table script: {sha}, on @user_script:1."},
	})
}

// Hostile formats and data end in errors, not in huge allocations.
func TestStruct_Bounded(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(4 << 20)
	withoutWatchdog(f.vm) // pack's own check, not the watchdog's tick
	// a result past the memory limit
	s := "local s = string.rep('x', 1500000) return #struct.pack('c0c0c0', s, s, s)"
	if got := f.do(2, "EVAL", s, "0"); got != "-ERR user_script:1: not enough memory script: "+SHA1Hex([]byte(s))+", on @user_script:1." {
		t.Errorf("%s: %s", s, got)
	}
	cases := []libCase{
		{"local s = string.rep('x', 100000) return #struct.pack('c0', s)", ":100000"},
		{"return #struct.pack('c2147483647', 'x')", "-ERR user_script:1: bad argument #3 to 'pack' (string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('c2147483647', 'x')}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('Ic0', '\\255\\255\\255\\255')}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return {struct.unpack('!1073741824xd', string.rep('x', 16), 2^62)}", "-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: {sha}, on @user_script:1."},
		{"return #struct.pack(string.rep('i32', 1000), unpack((function() local t = {} for i = 1, 1000 do t[i] = i end return t end)()))", ":32000"},
	}
	for _, c := range cases {
		f.expect(strings.ReplaceAll(c.want, "{sha}", SHA1Hex([]byte(c.script))), "EVAL", c.script, "0")
	}
}
