package luavm

import "testing"

// Expected values were taken from redis-server 7.0.15.
func TestCJSON(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ script, want string }{
		{`return cjson.encode({1,2,'a',{x=1}})`, `$[1,2,"a",{"x":1}]`},
		{`return cjson.encode({})`, `${}`},
		{`return cjson.encode({a='/"'})`, `${"a":"\/\""}`},
		{`return cjson.encode(0.1)`, `$0.1`},
		{`return cjson.encode(1e20)`, `$1e+20`},
		{`return cjson.encode({[1]=1,[3]=3})`, `$[1,null,3]`},
		{`return cjson.encode(cjson.null)`, `$null`},
		{`local t = cjson.decode('[1,null,{"a":true}]') return {type(t[2]), tostring(t[3].a), #t}`, `*3 $userdata $true :3`},
		{`return cjson.decode('{"n":2.5}').n * 2`, `:5`},
	}
	for _, c := range cases {
		f.expect(c.want, "EVAL", c.script, "0")
	}
	s := `return cjson.encode({[1]=1,[30]=3})`
	f.expect("-ERR user_script:1: Cannot serialise table: excessively sparse array script: "+SHA1Hex([]byte(s))+", on @user_script:1.", "EVAL", s, "0")
}

func TestBit(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ script, want string }{
		{`return bit.tohex(255)`, `$000000ff`},
		{`return bit.tohex(-1, -4)`, `$FFFF`},
		{`return bit.band(0xff, 0x0f)`, `:15`},
		{`return bit.bor(1, 2, 4)`, `:7`},
		{`return bit.bxor(5, 1)`, `:4`},
		{`return bit.bnot(0)`, `:-1`},
		{`return bit.lshift(1, 31)`, `:-2147483648`},
		{`return bit.rshift(-1, 28)`, `:15`},
		{`return bit.arshift(-16, 2)`, `:-4`},
		{`return bit.tobit(2^32+5)`, `:5`},
		{`return bit.rol(0x12345678, 12)`, `:1164411171`},
		{`return bit.bswap(0x12345678)`, `:2018915346`},
	}
	for _, c := range cases {
		f.expect(c.want, "EVAL", c.script, "0")
	}
	f.expect("-ERR user_script:1: Attempt to modify a readonly table script: "+SHA1Hex([]byte("bit.band = nil"))+", on @user_script:1.", "EVAL", "bit.band = nil", "0")
}

// TestCollectGarbage_AsLua51: collectgarbage checks its options and
// returns what Lua 5.1's does, collecting nothing; setpause and
// setstepmul keep their values until SCRIPT FLUSH.
func TestCollectGarbage_AsLua51(t *testing.T) {
	f := newFixture(t)
	sha := func(s string) string { return SHA1Hex([]byte(s)) }
	f.expect(":200", "EVAL", "return collectgarbage('setpause', 100)", "0")
	f.expect(":100", "EVAL", "return collectgarbage('setpause', 150)", "0")
	f.expect(":200", "EVAL", "return collectgarbage('setstepmul', '300')", "0")
	f.expect(":300", "EVAL", "return collectgarbage('setstepmul')", "0")
	f.expect(":0", "EVAL", "return collectgarbage('setstepmul', 0)", "0")
	f.expect("+OK", "SCRIPT", "FLUSH")
	f.expect("*2 :200 :200", "EVAL", "return {collectgarbage('setpause', 1), collectgarbage('setstepmul', 1)}", "0")
	// functions run in a Lua state of their own in Redis: their values
	// are theirs, and SCRIPT FLUSH leaves them
	f.expect("$gc", "FUNCTION", "LOAD", "#!lua name=gc\nredis.register_function('p', function(k, a) return collectgarbage('setpause', tonumber(a[1])) end)")
	f.expect(":200", "FCALL", "p", "0", "122")
	f.expect(":1", "EVAL", "return collectgarbage('setpause', 133)", "0")
	f.expect("+OK", "SCRIPT", "FLUSH")
	f.expect(":122", "FCALL", "p", "0", "144")
	f.expect(":200", "EVAL", "return collectgarbage('setpause', 200)", "0")
	f.expect("*5 :0 :0 :0 (nil) :1", "EVAL", "return {collectgarbage(), collectgarbage(nil), collectgarbage('collect'), collectgarbage('step'), 1}", "0")
	f.expect("*4 :0 :0 :0 :0", "EVAL", "return {collectgarbage('stop'), collectgarbage('restart'), collectgarbage('count'), gcinfo()}", "0")
	for _, c := range []struct{ script, want string }{
		{"return collectgarbage('nosuch')", "bad argument #1 to 'collectgarbage' (invalid option 'nosuch')"},
		{"return collectgarbage(5)", "bad argument #1 to 'collectgarbage' (invalid option '5')"},
		{"return collectgarbage({})", "bad argument #1 to 'collectgarbage' (string expected, got table)"},
		{"return collectgarbage('setpause', 'x')", "bad argument #2 to 'collectgarbage' (number expected, got string)"},
	} {
		f.expect("-ERR user_script:1: "+c.want+" script: "+sha(c.script)+", on @user_script:1.", "EVAL", c.script, "0")
	}
}
