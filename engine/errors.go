package engine

// Error texts, verbatim from Redis 7 (src/server.c shared objects,
// src/t_string.c, src/expire.c, src/eval.c, src/script_lua.c).
const (
	ErrSyntax          = "ERR syntax error"
	ErrNotInteger      = "ERR value is not an integer or out of range"
	ErrNotFloat        = "ERR value is not a valid float"
	ErrIncrNaNOrInf    = "ERR increment would produce NaN or Infinity"
	ErrIntRange        = "ERR value is out of range, value must between -2147483648 and 2147483647"
	ErrWrongType       = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrOverflow        = "ERR increment or decrement would overflow"
	ErrDecrOverflow    = "ERR decrement would overflow"
	ErrInvalidCursor   = "ERR invalid cursor"
	ErrDBIndex         = "ERR DB index is out of range"
	ErrSameObject      = "ERR source and destination objects are the same"
	ErrNoProto         = "NOPROTO unsupported protocol version"
	ErrProtoNotInt     = "ERR Protocol version is not an integer or out of range"
	ErrNoAuth          = "NOAUTH Authentication required."
	ErrWrongPass       = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNoPassword  = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrNXXXGTLT        = "ERR NX and XX, GT or LT options at the same time are not compatible"
	ErrGTLT            = "ERR GT and LT options at the same time are not compatible"
	ErrNumKeysNeg      = "ERR Number of keys can't be negative"
	ErrNumKeysTooMany  = "ERR Number of keys can't be greater than number of args"
	ErrNoScript        = "NOSCRIPT No matching script. Please use EVAL."
	ErrNotBusy         = "NOTBUSY No scripts in execution right now."
	ErrBusy            = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	ErrUnkillable      = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	ErrScriptKilled    = "ERR Script killed by user with SCRIPT KILL..."
	ErrClusterDisabled = "ERR This instance has cluster support disabled"
	ErrClientName      = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrStringTooLong   = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

	// Errors raised inside scripts by redis.call (src/script_lua.c, src/script.c).
	ErrScriptNoArgs     = "ERR Please specify at least one argument for this redis lib call"
	ErrScriptArgType    = "ERR Lua redis lib command arguments must be strings or integers"
	ErrScriptUnknownCmd = "ERR Unknown Redis command called from script"
	ErrScriptArity      = "ERR Wrong number of args calling Redis command from script"
	ErrScriptNoScript   = "ERR This Redis command is not allowed from script"
	ErrScriptWriteRO    = "ERR Write commands are not allowed from read-only scripts."
	ErrScriptReadonly   = "Attempt to modify a readonly table"

	// ErrScriptMemory is tumbler's own (Redis has no per-script memory
	// bound): a script stopped by lua-memory-limit (luavm/memory.go).
	ErrScriptMemory = "ERR Script used too much memory"
)

// ErrWrongArgs returns Redis's arity error for the command's full name
// ("get", or "client|setname" for a subcommand).
func ErrWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// ErrInvalidExpire returns Redis's error for an out-of-range expire time.
func ErrInvalidExpire(name string) string {
	return "ERR invalid expire time in '" + name + "' command"
}

// ErrUnknownSubcommand returns Redis's error for an unknown subcommand of
// container (given in upper case, as Redis prints it).
func ErrUnknownSubcommand(sub []byte, container string) string {
	return "ERR unknown subcommand '" + clip(sub, 128) + "'. Try " + container + " HELP."
}

// ErrSubcommandSyntax is Redis's addReplySubcommandSyntaxError for args:
// a subcommand given the wrong arguments, named as sent, and its
// container in upper case: ASCII letters only, as sdstoupper (a name
// given by rename-command may hold any byte).
func ErrSubcommandSyntax(args [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + clip(args[1], 128) + "'. Try " + upperASCII(string(args[0])) + " HELP."
}

// ErrUnknownCommand returns Redis's text for an unknown command: the name
// (at most 128 bytes) and the first arguments, quoted, while the list is
// shorter than 128 bytes; newlines become spaces.
func ErrUnknownCommand(args [][]byte) string {
	b := make([]byte, 0, 96)
	b = append(b, "ERR unknown command '"...)
	b = append(b, clip(args[0], 128)...)
	b = append(b, "', with args beginning with: "...)
	var list []byte
	for i := 1; i < len(args) && len(list) < 128; i++ {
		list = append(list, '\'')
		list = append(list, clip(args[i], 128-len(list)+1)...)
		list = append(list, '\'', ' ')
	}
	b = append(b, list...)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// clip is C's "%.*s" of b: at most n bytes, up to its first NUL.
func clip(b []byte, n int) string {
	b = cstr(b)
	if n < 0 {
		n = 0
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}
