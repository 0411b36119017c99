package server

import "testing"

// With enable-module-command yes (or local, from loopback), MODULE LOAD
// and UNLOAD get Redis's failures: tumbler loads no modules.
func TestModule_LoadFailsWhenAllowed(t *testing.T) {
	for _, mode := range []string{"yes", "local"} {
		srv := RunT(t, WithConfig(func(c *Config) { c.setParam("enable-module-command", mode) }))
		c := dial(t, srv.Addr())
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"MODULE", "LOAD", "/x.so"}, "-ERR Error loading the extension. Please check the server logs.\r\n"},
			{[]string{"MODULE", "LOADEX", "/x.so", "ARGS", "a"}, "-ERR Error loading the extension. Please check the server logs.\r\n"},
			{[]string{"MODULE", "UNLOAD", "x"}, "-ERR Error unloading module: no such module with that name\r\n"},
			{[]string{"MODULE", "LIST"}, "*0\r\n"},
		} {
			if got := c.do(tc.args...); got != tc.want {
				t.Errorf("%s: %q = %q, want %q", mode, tc.args, got, tc.want)
			}
		}
	}
}
