package luavm

import "testing"

// TestUnpack_Lua51Bounds checks unpack's bounds against redis-server
// 7.0.15's replies: C ints, an empty range for a start past the end, and
// "too many results" past the C stack (8000 slots, the arguments
// included). unpack({0}, 7e22) used to push elements until the memory
// bound stopped it (found by FuzzScript; its input is in the corpus).
func TestUnpack_Lua51Bounds(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ script, want string }{
		{"return {unpack({0}, 7e22)}", "*0"},
		{"return {unpack({0}, -7e22)}", "*0"},
		{"return {unpack({0}, 1, 7e22)}", "*0"},
		{"return {unpack({1, 2, 3})}", "*3 :1 :2 :3"},
		{"return {unpack({1, 2, 3}, '2', '3')}", "*2 :2 :3"},
		{"return {unpack({1, 2, 3}, -1, 1)}", "*0"},
		{"return select('#', unpack({}, 1, 7997))", ":7997"},
		{"return select('#', unpack({1, 2}, 2147483647, 2147483648))", ":0"},
		{"return {unpack({1, 2}, -2147483648, -2147483647)}", "*0"},
	} {
		f.expect(c.want, "EVAL", c.script, "0")
	}
	for _, s := range []string{
		"return {unpack({0}, -100000000)}",
		"return select('#', unpack({}, 1, 7998))",
		"return select('#', unpack({}, -2147483648, 2147483647))",
	} {
		f.expect("-ERR user_script:1: too many results to unpack script: "+SHA1Hex([]byte(s))+", on @user_script:1.", "EVAL", s, "0")
	}
}
