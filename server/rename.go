package server

import (
	"io"
	"log/slog"
	"sync"

	"github.com/tumblerdb/tumbler/engine"
)

// CommandRename is one rename-command line: From renamed To, or taken out
// of the command table when To is "".
type CommandRename struct{ From, To string }

func init() {
	addDirective(&directive{
		// rename-command from to: Redis's, checked as it loads the line
		// (the command must exist by that name now, the new name must not),
		// and kept as written by CONFIG REWRITE (fixed), as Redis keeps
		// the lines it does not rewrite.
		name: "rename-command", multi: true, fileOnly: true, fixed: true,
		set: func(c *Config, args []string) string {
			if len(args) != 2 {
				return "Bad directive or wrong number of arguments"
			}
			next := append(append([]CommandRename(nil), c.RenameCommands...), CommandRename{args[0], args[1]})
			if reason := checkRenames(next); reason != "" {
				return reason
			}
			c.RenameCommands = next
			return ""
		},
	})
}

// commandNames are the names of the command table of a server as New
// builds it, and of Redis's commands it does not serve
// (engine.Engine.CommandNames): what rename-command lines are checked
// against.
var commandNames = sync.OnceValue(func() []string {
	s := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}) // builds, starts nothing
	return s.eng.CommandNames()
})

// checkRenames returns Redis's reason for refusing the last of renames,
// applied in order to the served table, or "".
func checkRenames(renames []CommandRename) string {
	names := map[string]bool{}
	for _, n := range commandNames() {
		names[n] = true
	}
	for _, r := range renames {
		from := engine.LowerASCII(r.From)
		if !names[from] {
			return errNoSuchCommand
		}
		delete(names, from)
		if r.To == "" {
			continue
		}
		if to := engine.LowerASCII(r.To); names[to] {
			return errNameTaken
		} else {
			names[to] = true
		}
	}
	return ""
}

const (
	errNoSuchCommand = "No such command in rename-command"
	errNameTaken     = "Target command name already exists"
)

// renameCommands applies the configured renames to the engine's table
// once it is complete; it returns why one cannot be applied (a Config
// given to New directly, not checked by a config file's directive).
func (s *Server) renameCommands(renames []CommandRename) string {
	for _, r := range renames {
		if err := s.eng.Rename(r.From, r.To); err != nil {
			return "rename-command " + r.From + " " + quoteArg(r.To) + ": " + err.Error()
		}
	}
	return ""
}

// cmdName is the own name of the command name names (nil for none), or
// name itself while no command is renamed: the server's routing by name
// (the event loop's mayWait, MONITOR's redaction) follows the command,
// not the name it was sent by (engine.Engine.CommandName).
func (s *Server) cmdName(name []byte) []byte { return s.eng.CommandName(name) }
