package luavm

import lua "github.com/yuin/gopher-lua"

// The memory of the script cache. gopher-lua compiles each function into
// a code array of room for 1,024 instructions and a line array of 1,024
// ints, and makes room for 32 constants, 32 constant names and 128 calls:
// 17.8 KB kept by every cached script, where a small lock script's
// compiled code needs under 1 KB. A client sending many distinct small
// scripts (values written into the body rather than passed as arguments)
// grew the cache by that much a script. trimProto gives every exported
// slice its length as capacity once a chunk is compiled: the same lock
// script is now under 2 KB, its body, SHA1 and cache entries included
// (TestScriptCache_MemoryPerScript), and so is a small function library,
// where it was 18 KB. (The unexported constant names keep their room
// for 32: 512 bytes a function.)

// trimProto gives the slices of p and its functions' protos their length
// as capacity. It runs last in compiling (nothing changes a proto after).
func trimProto(p *lua.FunctionProto) {
	p.Code = trimmed(p.Code)
	p.DbgSourcePositions = trimmed(p.DbgSourcePositions)
	p.Constants = trimmed(p.Constants)
	p.FunctionPrototypes = trimmed(p.FunctionPrototypes)
	p.DbgLocals = trimmed(p.DbgLocals)
	p.DbgCalls = trimmed(p.DbgCalls)
	p.DbgUpvalues = trimmed(p.DbgUpvalues)
	for _, f := range p.FunctionPrototypes {
		trimProto(f)
	}
}

// trimmed returns s, or a copy of it with no room to spare. An empty s
// gives an empty slice, not nil, that holds no array.
func trimmed[T any](s []T) []T {
	if len(s) == cap(s) {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}
