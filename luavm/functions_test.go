package luavm

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tumblerdb/tumbler/engine"
)

// lib is a library's code: a shebang naming it, then body.
func lib(name, body string) string { return "#!lua name=" + name + "\n" + body }

func TestFunction_RegisterForms(t *testing.T) {
	f := newFixture(t)
	f.expect("$a", "FUNCTION", "LOAD", lib("a", "redis.register_function('pos', function(keys, args) return {keys[1], args[1]} end)"))
	f.expect("$b", "FUNCTION", "LOAD", lib("b", "redis.register_function{function_name='named', callback=function() return 'n' end, description='d', flags={'no-writes', 'ALLOW-OOM'}}"))
	f.expect("$c", "FUNCTION", "LOAD", lib("c", "redis.register_function(7, function() return 'seven' end)"))
	f.expect("*2 $k $a", "FCALL", "pos", "1", "k", "a")
	f.expect("$n", "FCALL_RO", "NAMED", "0")
	f.expect("$seven", "FCALL", "7", "0")
	f.expect("*1 %3 $library_name $b $engine $LUA $functions *1 %3 $name $named $description $d $flags ~2 +no-writes +allow-oom",
		"FUNCTION", "LIST", "LIBRARYNAME", "b")

	reg := "ERR Error registering functions: ERR "
	for _, tc := range []struct{ body, want string }{
		{"redis.register_function()", reg + "wrong number of arguments to redis.register_function"},
		{"redis.register_function('f', function() end, 3)", reg + "wrong number of arguments to redis.register_function"},
		{"redis.register_function('f')", reg + "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
		{"redis.register_function(nil, function() end)", reg + "first argument to redis.register_function must be a string"},
		{"redis.register_function('f', 'g')", reg + "second argument to redis.register_function must be a function"},
		{"redis.register_function('', function() end)", reg + "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
		{"redis.register_function('f', function() end) redis.register_function('f', function() end)", reg + "Function already exists in the library"},
		{"redis.register_function{[true]=1}", reg + "named argument key given to redis.register_function is not a string"},
		{"redis.register_function{function_name={}}", reg + "function_name argument given to redis.register_function must be a string"},
		{"redis.register_function{description=true}", reg + "description argument given to redis.register_function must be a string"},
		{"redis.register_function{callback=1}", reg + "callback argument given to redis.register_function must be a function"},
		{"redis.register_function{flags=1}", reg + "flags argument to redis.register_function must be a table representing function flags"},
		{"redis.register_function{flags={'no-writes', 'bad'}}", reg + "unknown flag given"},
		{"redis.register_function{flags={{}}}", reg + "unknown flag given"},
		{"redis.register_function{other=1}", reg + "unknown argument given to redis.register_function"},
		{"redis.register_function{callback=function() end}", reg + "redis.register_function must get a function name argument"},
		{"redis.register_function{function_name='f'}", reg + "redis.register_function must get a callback argument"},
		{"return 1", "ERR No functions registered"},
		{"return +", "ERR Error compiling function: user_function:2: unexpected symbol near '+'"},
	} {
		f.expect("-"+tc.want, "FUNCTION", "LOAD", lib("x", tc.body))
	}
	// flags after a nil are not read
	f.expect("$y", "FUNCTION", "LOAD", lib("y", "redis.register_function{function_name='fy', callback=function() end, flags={'no-writes', nil, 'bad'}}"))
	f.expect("*1 %3 $library_name $y $engine $LUA $functions *1 %3 $name $fy $description (nil) $flags ~1 +no-writes",
		"FUNCTION", "LIST", "LIBRARYNAME", "y")
}

// While a library loads, it sees only redis.register_function, redis.log,
// the log levels and the version; its globals are read-only.
func TestFunction_LoadSandbox(t *testing.T) {
	f := newFixture(t)
	missing := func(name string) string {
		return "-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable '" + name + "'"
	}
	for _, tc := range []struct{ body, want string }{
		{"return math.random()", missing("math")},
		{"return redis.call('ping')", missing("call")},
		{"return redis.setresp(3)", missing("setresp")},
		{"return redis.set_repl(1)", missing("set_repl")},
		{"error('x')", missing("error")},
		{"local x = KEYS", missing("KEYS")},
		{"local g = _G", missing("_G")},
		{"local mt = getmetatable(_G)", missing("getmetatable")},
		{"redis.math.random()", missing("math")},
		{"a = 1", "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
		{"redis.x = 1", "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
		{"redis.log(99, 'x')", "-ERR Error registering functions: ERR Invalid debug level."},
	} {
		f.expect(tc.want, "FUNCTION", "LOAD", lib("x", tc.body))
	}
	f.expect("$ok", "FUNCTION", "LOAD", lib("ok", "local v = redis.REDIS_VERSION .. redis.REDIS_VERSION_NUM\n"+
		"redis.log(redis.LOG_WARNING, 'loading', redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE)\n"+
		"redis.register_function('v', function() return v end)"))
	f.expect("$"+engine.Version+"459268", "FCALL", "v", "0")
	f.expect("*0", "FUNCTION", "LIST", "LIBRARYNAME", "x")
}

// Functions run with globals of their own: no KEYS or ARGV (they are the
// arguments), read-only, the scripts' redis API without register_function
// and the EVAL-only calls.
func TestFunction_RunGlobals(t *testing.T) {
	f := newFixture(t)
	f.expect("$g", "FUNCTION", "LOAD", lib("g", strings.Join([]string{
		"redis.register_function('keys', function() return KEYS end)",
		"redis.register_function('set', function() x = 1 end)",
		"redis.register_function('api', function() return {type(redis.call), type(redis.register_function), type(redis.breakpoint), type(redis.debug), type(redis.replicate_commands), type(cjson.encode)} end)",
		"redis.register_function('g', function() return _G.redis == redis and _G._G == _G end)",
		"redis.register_function('ls', function() return loadstring('return redis.call(\"ping\")')() end)",
		"redis.register_function('lk', function() return loadstring('return KEYS')() end)",
	}, "\n")))
	f.expect("-ERR user_function:2: Script attempted to access nonexistent global variable 'KEYS' script: keys, on @user_function:2.", "FCALL", "keys", "0")
	f.expect("-ERR user_function:3: Attempt to modify a readonly table script: set, on @user_function:3.", "FCALL", "set", "0")
	f.expect("*6 $function $nil $nil $nil $nil $function", "FCALL", "api", "0")
	f.expect(":1", "FCALL", "g", "0")
	f.expect("+PONG", "FCALL", "ls", "0")
	if got := f.do(2, "FCALL", "lk", "0"); !strings.Contains(got, "Script attempted to access nonexistent global variable 'KEYS'") {
		t.Errorf("a chunk loaded in a function read KEYS: %q", got)
	}
	// an EVAL still has its KEYS, and redis.breakpoint
	f.expect("*1 $k", "EVAL", "return KEYS", "1", "k")
	f.expect("$function", "EVAL", "return type(redis.breakpoint)", "0")
}

// A function's errors name it and its line, as Redis's: "script: <name>,
// on @user_function:<line>."
func TestFunction_ErrorsNameTheFunction(t *testing.T) {
	f := newFixture(t)
	f.expect("$e", "FUNCTION", "LOAD", lib("e", strings.Join([]string{
		"redis.register_function('Boom', function()",
		"  error('boom')",
		"end)",
		"redis.register_function('call', function() return redis.call('nosuch') end)",
		"local lib = redis",
		"redis.register_function('again', function() lib.register_function('z', function() end) end)",
		"redis.register_function('ro', function() return redis.call('set', 'k', 'v') end)",
	}, "\n")))
	f.expect("-ERR user_function:3: boom script: Boom, on @user_function:3.", "FCALL", "boom", "0")
	f.expect("-ERR Unknown Redis command called from script script: call, on @user_function:5.", "FCALL", "call", "0")
	f.expect("-ERR redis.register_function can only be called on FUNCTION LOAD command script: again, on @user_function:7.", "FCALL", "again", "0")
	f.expect("-ERR Can not execute a script with write flag using *_ro command.", "FCALL_RO", "ro", "0")
}

func TestFunction_LoadTimeout(t *testing.T) {
	f := newFixture(t)
	f.expect("$keep", "FUNCTION", "LOAD", lib("keep", "redis.register_function('keep', function() return 1 end)"))
	start := time.Now()
	f.expect("-ERR Error registering functions: ERR FUNCTION LOAD timeout", "FUNCTION", "LOAD", lib("loop", "local a = 1\nwhile true do a = a + 1 end"))
	if d := time.Since(start); d < engine.FunctionLoadTimeout || d > 10*engine.FunctionLoadTimeout {
		t.Errorf("the load ran %v", d)
	}
	f.expect(":1", "FCALL", "keep", "0")
	f.expect(":2", "EVAL", "return 2", "0") // the state still runs
}

// Functions keep their own cjson settings: an EVAL's do not reach them,
// and SCRIPT FLUSH resets only the scripts'. Neither FLUSH touches the
// other's cache.
func TestFunction_SeparateFromScripts(t *testing.T) {
	f := newFixture(t)
	f.expect("$cj", "FUNCTION", "LOAD", lib("cj", "redis.register_function('depth', function(keys, args) return cjson.encode_max_depth(args[1]) end)"))
	f.expect(":5", "FCALL", "depth", "0", "5")
	f.expect(":1000", "EVAL", "return cjson.encode_max_depth()", "0")
	f.expect(":7", "EVAL", "return cjson.encode_max_depth(7)", "0")
	f.expect(":5", "FCALL", "depth", "0")
	f.expect("+OK", "SCRIPT", "FLUSH")
	f.expect(":1000", "EVAL", "return cjson.encode_max_depth()", "0")
	f.expect(":5", "FCALL", "depth", "0")
	sha := SHA1Hex([]byte("return 1"))
	f.expect("$"+sha, "SCRIPT", "LOAD", "return 1")
	f.expect("+OK", "FUNCTION", "FLUSH")
	f.expect("*1 :1", "SCRIPT", "EXISTS", sha)
	f.expect("-ERR Function not found", "FCALL", "depth", "0")
}

// A script stopped by the memory bound makes a new Lua state; functions
// are made again from their library's code, their library's own state
// starting again.
func TestFunction_MadeAgainAfterMemoryStop(t *testing.T) {
	f := newFixture(t)
	f.vm.SetMemoryLimit(testMemLimit)
	defer f.vm.Close()
	f.expect("$n", "FUNCTION", "LOAD", lib("n", "local n = 0\nredis.register_function('bump', function() n = n + 1 return n end)\nredis.register_function('other', function() return 'o' end)"))
	f.expect(":1", "FCALL", "bump", "0")
	f.expect(":2", "FCALL", "bump", "0")
	bomb := "local t={}\nwhile true do t[#t+1]=string.rep('x',1000) end"
	f.expect(memoryReply(bomb, "2"), "EVAL", bomb, "0")
	gen := f.vm.stateGen
	f.expect(":1", "FCALL", "bump", "0")
	f.expect("$o", "FCALL", "other", "0")
	f.expect(":2", "FCALL", "bump", "0")
	if f.vm.stateGen != gen {
		t.Fatal("the state was replaced again")
	}
	// a function stopped by the bound is reported by its name
	f.expect("$big", "FUNCTION", "LOAD", lib("big", "redis.register_function('big', function()\nlocal t={}\nwhile true do t[#t+1]=string.rep('x',1000) end\nend)"))
	got := f.do(2, "FCALL", "big", "0")
	if !strings.HasPrefix(got, "-"+engine.ErrScriptMemory) || !strings.HasSuffix(got, " script: big, on @user_function:4.") {
		t.Fatalf("a function over the bound: %q", got)
	}
	runtime.GC()
	f.expect(":1", "FCALL", "bump", "0")
}
