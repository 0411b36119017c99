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
