package engine

import (
	"reflect"
	"testing"
)

// SplitArgs splits a FUNCTION LOAD shebang line as Redis's sdssplitargs.
func TestSplitArgs_Shebangs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"#!lua name=lib", []string{"#!lua", "name=lib"}, true},
		{"#!lua  name=lib \t", []string{"#!lua", "name=lib"}, true},
		{`#!lua name="a b"`, []string{"#!lua", "name=a b"}, true},
		{`#!lua name="\x41\n\"q\\"`, []string{"#!lua", "name=A\n\"q\\"}, true},
		{`#!lua name='it\'s'`, []string{"#!lua", "name=it's"}, true},
		{`#!"lua" name=x`, []string{"#!lua", "name=x"}, true},
		{`#!lua name=""`, []string{"#!lua", "name="}, true},
		{`#!lua name="a"b`, nil, false},
		{`#!lua name='a'b`, nil, false},
		{`#!lua name="open`, nil, false},
		{"#!", []string{"#!"}, true},
		{"", nil, true},
	} {
		got, ok := SplitArgs(c.in)
		if ok != c.ok || (ok && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
