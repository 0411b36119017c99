package server

import (
	"github.com/tumblerdb/tumbler/engine"
)

// MODULE and ASKING, answered as a Redis 7.0 without modules and without
// cluster support answers them: tools that list the modules find none,
// and loading one fails (tumbler cannot load Redis modules).

func (s *Server) registerModule() {
	const admin = engine.FlagNoKeys | engine.FlagAdmin | engine.FlagNoScript
	protected := func(c *engine.Ctx) string {
		if !protectedAllowed(s.live().param("enable-module-command", "no"), connOf(c)) {
			return errModuleNotAllowed
		}
		return ""
	}
	loadFails := func(c *engine.Ctx) {
		if msg := protected(c); msg != "" {
			c.W.WriteError(msg)
			return
		}
		c.W.WriteError("ERR Error loading the extension. Please check the server logs.")
	}
	s.eng.Register(
		&engine.Command{Name: "asking", Arity: 1, Flags: engine.FlagNoKeys | engine.FlagFast, Group: "cluster", Fn: clusterDisabled},
		&engine.Command{Name: "module", Arity: -2, Flags: engine.FlagNoKeys, Group: "server", Subs: map[string]*engine.Command{
			"list":   {Arity: 2, Flags: admin, Fn: func(c *engine.Ctx) { c.W.WriteArray(0) }},
			"load":   {Arity: -3, Flags: admin | engine.FlagNoAsyncLoading, Guard: protected, Fn: loadFails},
			"loadex": {Arity: -3, Flags: admin | engine.FlagNoAsyncLoading, Guard: protected, Fn: loadFails},
			"unload": {Arity: 3, Flags: admin | engine.FlagNoAsyncLoading, Guard: protected, Fn: func(c *engine.Ctx) {
				if msg := protected(c); msg != "" {
					c.W.WriteError(msg)
					return
				}
				c.W.WriteError("ERR Error unloading module: no such module with that name")
			}},
			"help": engine.HelpCommand(engine.FlagNoKeys, moduleHelp),
		}},
	)
}

const errModuleNotAllowed = `ERR MODULE command not allowed. If the enable-module-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`

var moduleHelp = []string{
	"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LIST",
	"    Return a list of loaded modules.",
	"LOAD <path> [<arg> ...]",
	"    Load a module library from <path>, passing to it any optional arguments.",
	"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
	"    Load a module library from <path>, while passing it module configurations and optional arguments.",
	"UNLOAD <name>",
	"    Unload a module.",
	"HELP",
	"    Prints this help.",
}
