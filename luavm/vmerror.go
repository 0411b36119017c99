package luavm

import (
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 words the errors of its VM with what it knows of the value at
// fault (ldebug.c, luaG_typeerror and getobjname): "attempt to index
// local 't' (a nil value)", "attempt to call field 'f' (a nil value)",
// "attempt to perform arithmetic on global 'x' (a string value)". gopher-
// lua words them otherwise ("attempt to index a non-table object(nil)
// with key 'x'", "cannot perform add operation between nil and number",
// "__len undefined"). These are the errors a script with a bug shows its
// user, so every protected call (the script's run, pcall and xpcall)
// rewrites them as Lua 5.1 does, in a message handler, which gopher-lua
// calls with the failed function's frame still on its stack: the
// instruction that failed, and its registers, are there to read.
//
// gopher-lua's code is Lua 5.1's (the same opcodes, a few added): getobjname
// runs on it as it runs on Lua's. The frame's program counter and the
// registers are not exported; they are read with reflect, read-only
// (TestVMErrorsReadFrames fails if a gopher-lua update moves them, and
// the messages then stay gopher-lua's).

// gopher-lua's instruction layout (opcode.go).
func opCode(i uint32) int { return int(i >> 26) }
func argA(i uint32) int   { return int(i>>18) & 0xff }
func argB(i uint32) int   { return int(i & 0x1ff) }
func argC(i uint32) int   { return int(i>>9) & 0x1ff }
func argBx(i uint32) int  { return int(i & 0x3ffff) }
func argSbx(i uint32) int { return argBx(i) - (1<<18-1)>>1 }
func isK(v int) bool      { return v&0x100 != 0 }

// gopher-lua's opcodes (opcode.go), those this file looks at.
const (
	opMove       = lua.OP_MOVE
	opMoveN      = lua.OP_MOVEN
	opLoadNil    = lua.OP_LOADNIL
	opGetUpval   = lua.OP_GETUPVAL
	opGetGlobal  = lua.OP_GETGLOBAL
	opGetTable   = lua.OP_GETTABLE
	opGetTableKS = lua.OP_GETTABLEKS
	opSetGlobal  = lua.OP_SETGLOBAL
	opSetUpval   = lua.OP_SETUPVAL
	opSetTable   = lua.OP_SETTABLE
	opSetTableKS = lua.OP_SETTABLEKS
	opSelf       = lua.OP_SELF
	opAdd        = lua.OP_ADD
	opPow        = lua.OP_POW
	opUnm        = lua.OP_UNM
	opLen        = lua.OP_LEN
	opConcat     = lua.OP_CONCAT
	opJmp        = lua.OP_JMP
	opEq         = lua.OP_EQ
	opLe         = lua.OP_LE
	opTest       = lua.OP_TEST
	opCall       = lua.OP_CALL
	opTailCall   = lua.OP_TAILCALL
	opReturn     = lua.OP_RETURN
	opForLoop    = lua.OP_FORLOOP
	opForPrep    = lua.OP_FORPREP
	opTForLoop   = lua.OP_TFORLOOP
	opSetList    = lua.OP_SETLIST
	opClose      = lua.OP_CLOSE
	opClosure    = lua.OP_CLOSURE
	opVararg     = lua.OP_VARARG
)

// setsA reports whether an instruction writes its register A (Lua 5.1's
// testAMode, for gopher-lua's opcodes).
func setsA(op int) bool {
	switch op {
	case opSetGlobal, opSetUpval, opSetTable, opSetTableKS, opJmp, opEq, lua.OP_LT, opLe,
		opReturn, opTForLoop, opSetList, opClose, lua.OP_NOP:
		return false
	}
	return true
}

// symbexec is the part of Lua 5.1's symbexec that getobjname uses: the
// last instruction before lastpc that wrote register reg (-1 for none),
// following forward jumps that do not pass lastpc.
func symbexec(p *lua.FunctionProto, lastpc, reg int) int {
	last := -1
	code := p.Code
	for pc := 0; pc < lastpc && pc < len(code); pc++ {
		i := code[pc]
		op, a := opCode(i), argA(i)
		if setsA(op) && a == reg {
			last = pc
		}
		switch op {
		case opLoadNil:
			if a <= reg && reg <= argB(i) {
				last = pc
			}
		case opTForLoop:
			if reg >= a+2 {
				last = pc
			}
		case opCall, opTailCall:
			if reg >= a {
				last = pc
			}
		case opSelf:
			if reg == a+1 {
				last = pc
			}
		case opVararg:
			if reg >= a {
				last = pc
			}
		case opJmp, opForLoop, opForPrep:
			if dest := pc + 1 + argSbx(i); pc < dest && dest <= lastpc {
				pc = dest - 1
			}
		case opClosure:
			if int(argBx(i)) < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[argBx(i)].NumUpvalues) // its upvalues' pseudo-instructions
			}
		case opSetList:
			if argC(i) == 0 {
				pc++
			}
		}
	}
	return last
}

// kname is a constant key's name, or "?".
func kname(p *lua.FunctionProto, c int) string {
	if isK(c) {
		if k := c &^ 0x100; k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// knameAt is kname for the key c of the instruction at pc. Where Lua
// has a constant key, gopher-lua may load it into a temporary register
// first (a key in a generic for's expression list): a register that is
// no local, last written by a LOADK of a string, is named by it.
func knameAt(p *lua.FunctionProto, pc, c int) string {
	if isK(c) {
		return kname(p, c)
	}
	if _, ok := localName(p, c+1, pc); ok {
		return "?"
	}
	if k := symbexec(p, pc, c); k >= 0 && opCode(p.Code[k]) == lua.OP_LOADK {
		return kname(p, int(argBx(p.Code[k]))|0x100)
	}
	return "?"
}

// objName is Lua 5.1's getobjname: what register reg holds at pc, as
// "local", "global", "field", "upvalue" or "method" and its name; "" for
// a temporary it cannot name.
func objName(fn *lua.LFunction, pc, reg int) (kind, name string) {
	p := fn.Proto
	if name, ok := localName(p, reg+1, pc); ok {
		return "local", name
	}
	at := symbexec(p, pc, reg)
	if at < 0 {
		return "", ""
	}
	i := p.Code[at]
	switch opCode(i) {
	case opGetGlobal:
		if k := argBx(i); k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return "global", string(s)
			}
		}
		return "global", "?"
	case opMove, opMoveN:
		if b := argB(i); b < argA(i) {
			return objName(fn, at, b)
		}
	case opGetTable, opGetTableKS:
		return "field", knameAt(p, at, argC(i))
	case opGetUpval:
		if b := argB(i); b < len(p.DbgUpvalues) {
			return "upvalue", p.DbgUpvalues[b]
		}
		return "upvalue", "?"
	case opSelf:
		return "method", knameAt(p, at, argC(i))
	case opCall:
		// a coercion's call (coerce.go) stands for its argument: the value
		// is the one the script wrote there, and so is its name
		if a := argA(i); a == reg && argB(i) == 2 {
			if k := symbexec(p, at, a); k >= 0 && opCode(p.Code[k]) == lua.OP_LOADK {
				if bx := argBx(p.Code[k]); bx < len(p.Constants) {
					if isCoercion(p.Constants[bx]) {
						return objName(fn, at, a+1)
					}
				}
			}
		}
	}
	return "", ""
}

// forLocalsAfterExplist makes the hidden locals of each generic for in
// proto and its functions start where Lua 5.1's do: after the values of
// the for's expression list. gopher-lua starts them before, so a value
// computed there into their registers took their names: pairs(nil) in
// "for k, v in pairs(nil)" was "bad argument #1 to '(for generator)'",
// Lua's "to 'pairs'". gopher-lua jumps to the loop's TFORLOOP right after
// the list (a NOP when the body is empty), and starts the loop's names
// after that jump; the hidden locals start at the jump (the pc Lua's
// adjustlocalvars gives them), one before the first name. They end, as
// in Lua, after the TFORLOOP and its jump back, which follow the body:
// the generator a TFORLOOP calls is "(for generator)" (getfuncname).
func forLocalsAfterExplist(p *lua.FunctionProto) {
	ls := p.DbgLocals
	for i := 0; i+3 < len(ls); i++ {
		if ls[i].Name != "(for generator)" || ls[i+1].Name != "(for state)" || ls[i+2].Name != "(for control)" {
			continue
		}
		start, end := ls[i+3].StartPc-1, ls[i].EndPc+2
		if start < ls[i].StartPc || end >= len(p.Code) || opCode(p.Code[end-1]) != opTForLoop ||
			(opCode(p.Code[start]) != lua.OP_JMP && opCode(p.Code[start]) != lua.OP_NOP) {
			continue
		}
		for _, l := range ls[i : i+3] {
			l.StartPc, l.EndPc = start, end
		}
	}
	for _, f := range p.FunctionPrototypes {
		forLocalsAfterExplist(f)
	}
}

// localName is Lua 5.1's luaF_getlocalname: the name of the n-th local
// variable active at pc. (gopher-lua's LFunction.LocalName is off by one
// at both ends: its StartPc is Lua's startpc, its EndPc one less than
// Lua's endpc.)
func localName(p *lua.FunctionProto, n, pc int) (string, bool) {
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc <= l.EndPc {
			n--
			if n == 0 {
				return l.Name, true
			}
		}
	}
	return "", false
}

// frameView reads a gopher-lua call frame's unexported state.
type frameView struct {
	fn   *lua.LFunction
	pc   int // of the instruction that failed (a Lua function's)
	base int // of its registers in the registry (LocalBase)
	args int // the arguments it was called with (NArgs)
	regs reflect.Value
}

// faultFrame finds the frame level levels up the stack of L (1: the
// function the message handler was called for).
func faultFrame(L *lua.LState, level int) (frameView, bool) {
	dbg, ok := L.GetStack(level)
	if !ok {
		return frameView{}, false
	}
	fr := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !fr.IsValid() || fr.Kind() != reflect.Pointer || fr.IsNil() {
		return frameView{}, false
	}
	f := fr.Elem()
	pc, base, nargs := f.FieldByName("Pc"), f.FieldByName("LocalBase"), f.FieldByName("NArgs")
	regs := reflect.ValueOf(L).Elem().FieldByName("reg")
	if !pc.IsValid() || !base.IsValid() || !nargs.IsValid() || !regs.IsValid() || regs.IsNil() {
		return frameView{}, false
	}
	regs = regs.Elem().FieldByName("array")
	if !regs.IsValid() || regs.Kind() != reflect.Slice {
		return frameView{}, false
	}
	got, err := L.GetInfo("f", dbg, lua.LNil)
	fn, _ := got.(*lua.LFunction)
	if err != nil || fn == nil {
		return frameView{}, false
	}
	v := frameView{fn: fn, pc: int(pc.Int()) - 1, base: int(base.Int()), args: int(nargs.Int()), regs: regs}
	if !fn.IsG && (v.pc < 0 || v.pc >= len(fn.Proto.Code)) {
		return frameView{}, false
	}
	return v, true
}

// value describes register reg of the frame: its Lua type, and whether
// arithmetic reads it as a number (a number, or a string that is one).
func (f frameView) value(reg int) (typ string, numeric, stringy bool) {
	i := f.base + reg
	if i < 0 || i >= f.regs.Len() {
		return "nil", false, false
	}
	v := f.regs.Index(i)
	if v.Kind() != reflect.Interface || v.IsNil() {
		return "nil", false, false
	}
	v = v.Elem()
	switch v.Type() {
	case reflect.TypeOf(lua.LNumber(0)):
		return "number", true, true
	case reflect.TypeOf(lua.LString("")):
		_, ok := str2d(v.String())
		return "string", ok, true
	case reflect.TypeOf(lua.LBool(false)):
		return "boolean", false, false
	case reflect.TypeOf(lua.LNil):
		return "nil", false, false
	case reflect.TypeOf((*lua.LTable)(nil)):
		return "table", false, false
	case reflect.TypeOf((*lua.LFunction)(nil)):
		return "function", false, false
	case reflect.TypeOf((*lua.LUserData)(nil)):
		return "userdata", false, false
	case reflect.TypeOf((*lua.LState)(nil)):
		return "thread", false, false
	}
	return "userdata", false, false
}

// constValue is value for an RK operand that is a constant.
func constValue(p *lua.FunctionProto, k int) (typ string, numeric, stringy bool) {
	if k >= len(p.Constants) {
		return "nil", false, false
	}
	switch c := p.Constants[k].(type) {
	case lua.LNumber:
		return "number", true, true
	case lua.LString:
		_, ok := str2d(string(c))
		return "string", ok, true
	case lua.LBool:
		return "boolean", false, false
	}
	return "nil", false, false
}

// typeError is luaG_typeerror for register reg (a constant, when k, has
// no name): "attempt to <op> <kind> '<name>' (a <type> value)".
func (f frameView) typeError(op string, reg int, k bool, typ string) string {
	if !k {
		if kind, name := objName(f.fn, f.pc, reg); kind != "" {
			return "attempt to " + op + " " + kind + " '" + name + "' (a " + typ + " value)"
		}
	}
	return "attempt to " + op + " a " + typ + " value"
}

// opEvents are the metamethods of the arithmetic opcodes, from OP_ADD
// to OP_UNM.
var opEvents = [...]string{"__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm"}

// uncallableTM is the type of the metamethod Lua 5.1 would call for the
// failed arithmetic op of operands b and c (c unused for OP_UNM), when
// there is one that is no function (which gopher-lua leaves uncalled:
// {__add = 5}); "" otherwise. A string's metatable counts for none: Lua
// 5.1's has no arithmetic (tumbler's converts numeric strings, arith.go).
func (f frameView) uncallableTM(L *lua.LState, op, b, c int) string {
	operands := []int{b, c}
	if op == opUnm {
		operands = operands[:1]
	}
	for _, rk := range operands {
		if isK(rk) { // a constant: a number, a string, a boolean or nil
			continue
		}
		v, ok := f.lvalue(rk)
		if !ok {
			continue
		}
		if _, str := v.(lua.LString); str {
			continue
		}
		if tm := L.GetMetaField(v, opEvents[op-opAdd]); tm != lua.LNil {
			if _, fn := tm.(*lua.LFunction); fn {
				return ""
			}
			return tm.Type().String()
		}
	}
	return ""
}

// lvalue is register reg of the frame.
func (f frameView) lvalue(reg int) (lua.LValue, bool) {
	i := f.base + reg
	if i < 0 || i >= f.regs.Len() {
		return nil, false
	}
	v := f.regs.Index(i)
	if v.Kind() != reflect.Interface || v.IsNil() || !v.CanAddr() {
		return nil, false
	}
	// (an unexported field's: read through its address, read-only)
	lv, ok := reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Interface().(lua.LValue)
	return lv, ok
}

// rkValue is value for an RK operand.
func (f frameView) rkValue(rk int) (typ string, numeric, stringy bool) {
	if isK(rk) {
		return constValue(f.fn.Proto, rk&^0x100)
	}
	return f.value(rk)
}

// lua51Error rewords msg, an error gopher-lua raised in the function
// level levels up L's stack, as Lua 5.1 words it; ok is false for any
// other error, or one it cannot place.
func (vm *VM) lua51Error(L *lua.LState, msg string, level int) (string, bool) {
	pos, text := splitPosition(msg)
	switch {
	case strings.HasPrefix(text, "attempt to compare "):
		// luaG_ordererror: "two X values" when both are of one type
		if a, b, ok := strings.Cut(strings.TrimPrefix(text, "attempt to compare "), " with "); ok && a == b {
			return pos + "attempt to compare two " + a + " values", true
		}
		return msg, false
	case text == "too many recursions in gettable": // luaV_gettable past MAXTAGLOOP
		return pos + "loop in gettable", true
	case text == "too many recursions in settable":
		return pos + "loop in settable", true
	case text == "for statement init must be a number":
		return pos + "'for' initial value must be a number", true
	case text == "for statement limit must be a number":
		return pos + "'for' limit must be a number", true
	case text == "for statement step must be a number":
		return pos + "'for' step must be a number", true
	case strings.HasPrefix(text, "bad argument #"):
		return vm.badArgument(L, pos, text, level)
	}
	isIndex := strings.HasPrefix(text, "attempt to index a non-table object(")
	isCall := text == "attempt to call a non-function object"
	isArith := strings.HasPrefix(text, "cannot perform ") && !strings.HasPrefix(text, "cannot perform concat ") ||
		text == "__unm undefined"
	isConcat := strings.HasPrefix(text, "cannot perform concat operation between ")
	isLen := text == "__len undefined"
	if !isIndex && !isCall && !isArith && !isConcat && !isLen {
		return msg, false
	}
	f, ok := faultFrame(L, level)
	if ok && isArith && isCoercion(f.fn) {
		// the strings' arithmetic metamethods (arith.go) raise the
		// error of the instruction that called them
		f, ok = faultFrame(L, level+1)
	}
	if !ok || f.fn.IsG {
		return msg, false
	}
	i := f.fn.Proto.Code[f.pc]
	op, a, b, c := opCode(i), argA(i), argB(i), argC(i)
	var out string
	switch {
	case isIndex && (op == opGetTable || op == opGetTableKS || op == opSelf):
		typ, _, _ := f.value(b)
		out = f.typeError("index", b, false, typ)
	case isIndex && (op == opSetTable || op == opSetTableKS):
		typ, _, _ := f.value(a)
		out = f.typeError("index", a, false, typ)
	case isCall && (op == opCall || op == opTailCall):
		typ, _, _ := f.value(a)
		out = f.typeError("call", a, false, typ)
	case isCall && op == opTForLoop:
		typ, _, _ := f.value(a)
		out = "attempt to call a " + typ + " value"
	case isArith && op >= opAdd && op <= opUnm && f.uncallableTM(L, op, b, c) != "":
		// Lua 5.1's call_binTM calls the first operand's metamethod, or
		// the second's, whatever it is; gopher-lua calls only a function
		out = "attempt to call a " + f.uncallableTM(L, op, b, c) + " value"
	case isArith && op >= opAdd && op <= opPow:
		// luaG_aritherror: the first operand that is not a number
		typ, numeric, _ := f.rkValue(b)
		culprit := b
		if numeric {
			typ, _, _ = f.rkValue(c)
			culprit = c
		}
		out = f.typeError("perform arithmetic on", culprit&^0x100, isK(culprit), typ)
	case isArith && op == opUnm:
		typ, _, _ := f.value(b)
		out = f.typeError("perform arithmetic on", b, false, typ)
	case isLen && op == opLen:
		typ, _, _ := f.value(b)
		out = f.typeError("get length of", b, false, typ)
	case isConcat && op == opConcat:
		// luaV_concat joins from the right, as many strings (and
		// numbers) at once as it can; it fails on the first pair that
		// holds anything else, naming its left value unless that is a
		// string (luaG_concaterror)
		last, joined := c, false
		for last > b {
			_, _, leftS := f.value(last - 1)
			_, _, rightS := f.value(last)
			if !leftS || !(rightS || joined) {
				culprit := last - 1
				if leftS {
					culprit = last
				}
				typ, _, _ := f.value(culprit)
				out = f.typeError("concatenate", culprit, false, typ)
				break
			}
			n := 2
			for last-n >= b {
				if _, _, s := f.value(last - n); !s {
					break
				}
				n++
			}
			last -= n - 1
			joined = true
		}
	}
	if out == "" {
		return msg, false
	}
	return pos + out, true
}

// splitPosition splits "chunk:line: text" into "chunk:line: " and text,
// at the first ":<digits>: " (a chunk's name may have spaces:
// [string "return x"]).
func splitPosition(msg string) (pos, text string) {
	for i := 0; i < len(msg); i++ {
		if msg[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		if j > i+1 && strings.HasPrefix(msg[j:], ": ") {
			return msg[:j+2], msg[j+2:]
		}
	}
	return "", msg
}

// badArgument rewords gopher-lua's "bad argument #N to f (...)" as
// luaL_argerror's "bad argument #N to 'f' (...)", where an argument that
// was not given is "no value", not nil.
func (vm *VM) badArgument(L *lua.LState, pos, text string, level int) (string, bool) {
	rest := strings.TrimPrefix(text, "bad argument #")
	num, rest, ok := strings.Cut(rest, " to ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return pos + text, false
	}
	// gopher-lua's functions name themselves unquoted, luavm's own quoted
	// (format.go's argError); both are named as Lua 5.1 names them below
	quoted := strings.HasPrefix(rest, "'")
	if quoted {
		rest = rest[1:]
	}
	name, detail, ok := strings.Cut(rest, " (")
	if quoted {
		name, ok = strings.CutSuffix(name, "'")
	}
	if !ok || strings.ContainsAny(name, " '") {
		return pos + text, false
	}
	f, ok := faultFrame(L, level)
	if !ok || !f.fn.IsG || f.fn == vm.errorFn {
		return pos + text, false // a script's own error("bad argument ...")
	}
	if !quoted && strings.HasSuffix(detail, ", got nil)") && n > f.args { // (luavm's own say "no value" where Lua's do)
		detail = strings.TrimSuffix(detail, "nil)") + "no value)"
	}
	// The name is the caller's for the function (getfuncname): "?" when
	// the caller is no Lua function; a method's self is not counted.
	name = "?"
	caller, ok := faultFrame(L, level+1)
	if !ok || caller.fn.IsG {
		pos = "" // luaL_where(L, 1) has no line for a caller that is no Lua function
	} else {
		if i := caller.fn.Proto.Code[caller.pc]; opCode(i) == opCall || opCode(i) == opTailCall || opCode(i) == opTForLoop {
			kind, nm := objName(caller.fn, caller.pc, argA(i))
			if kind != "" {
				name = nm
			}
			if kind == "method" {
				n--
				if n == 0 {
					return pos + "calling '" + name + "' on bad self (" + detail, true
				}
				num = strconv.Itoa(n)
			}
		}
	}
	return pos + "bad argument #" + num + " to '" + name + "' (" + detail, true
}

// noteErrSource finds, for an error escaping the run, the function Redis's
// error handler names in the reply's "on <source>:<line>": the one that
// raised it, or its caller when that is a C (Go) function. When that is a
// chunk load or loadstring made, its source as given is kept (errSource:
// "y = 1", "=name", "@file"); the run's own chunk is named as before.
func (vm *VM) noteErrSource(L *lua.LState) {
	vm.errSource, vm.errLine, vm.errObj = "", "", nil
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return
		}
		if dbg.What == "G" {
			continue
		}
		if src, ok := vm.chunkSources[dbg.Source]; ok {
			vm.errSource, vm.errLine = src, strconv.Itoa(dbg.CurrentLine)
		}
		return
	}
}

// lua51Handler is the message handler of protected calls: it rewords the
// errors of gopher-lua's VM (lua51Error) and passes any other value on.
func (vm *VM) lua51Handler(L *lua.LState) int {
	top := len(vm.catchers) == 0 // the error may escape the run
	if top {
		vm.noteErrSource(L)
	}
	if s, ok := L.Get(1).(lua.LString); ok {
		if m, ok := vm.lua51Error(L, string(s), 1); ok {
			L.Push(lua.LString(m))
		}
	}
	if n := len(vm.pcallBases); n > 0 {
		closeAbove(L, vm.pcallBases[n-1])
	}
	if top {
		vm.errObj = L.Get(-1) // errSource is this error's (writeRunError)
	}
	return 1
}

// closeAbove closes the open upvalues of the registers above base (an
// index in the registry), as Lua's luaF_close: the variables of the
// functions an error unwinds, while their registers still hold them.
// Closures made there keep their values; closures of the functions below
// keep sharing theirs. (The list of open upvalues is gopher-lua's, read
// with reflect; Upvalue.Close is exported.)
func closeAbove(L *lua.LState, base int) {
	uv := reflect.ValueOf(L).Elem().FieldByName("uvcache")
	for uv.IsValid() && uv.Kind() == reflect.Pointer && !uv.IsNil() {
		e := uv.Elem()
		idx, closed := e.FieldByName("index"), e.FieldByName("closed")
		if !idx.IsValid() || !closed.IsValid() {
			return
		}
		if int(idx.Int()) > base && !closed.Bool() { // (the list runs up from the lowest register)
			(*lua.Upvalue)(uv.UnsafePointer()).Close()
		}
		uv = e.FieldByName("next")
	}
}

// frameBase is the registry index of the first register of the function
// level levels up L's stack (0: the running one), or -1.
func frameBase(L *lua.LState, level int) int {
	dbg, ok := L.GetStack(level)
	if !ok {
		return -1
	}
	fr := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !fr.IsValid() || fr.Kind() != reflect.Pointer || fr.IsNil() {
		return -1
	}
	b := fr.Elem().FieldByName("LocalBase")
	if !b.IsValid() {
		return -1
	}
	return int(b.Int())
}

// protectedCall is L.PCall with a message handler h. A handler changes
// more than the message: gopher-lua, given none, closes the upvalues of
// every function on the stack as it raises an error, the live callers'
// too, so that after a pcall a closure no longer shares its variables
// with the function that made it ("local x = 1; local function get()
// return x end; pcall(error); x = 2; return get()" returned 1, where Lua
// returns 2). With a handler it closes none; protectedCall closes those
// of the functions the error unwound, as Lua's luaD_pcall does
// (luaF_close above the call), by returning from a function called where
// they stood: a return closes the upvalues at and above its base.
//
// gopher-lua tells whether a handler is set with one flag, which every
// protected call clears as it returns, a nested one too: protectedCall
// sets it back for its caller, or an error after a nested pcall would
// close every upvalue again.
func (vm *VM) protectedCall(L *lua.LState, nargs, nret int, h *lua.LFunction) error {
	flag := hasErrorFunc(L)
	had := flag != nil && *flag
	open := len(vm.concat.open)
	err := L.PCall(nargs, nret, h)
	if err != nil {
		// the size counts of the chains the error interrupted (coerce.go)
		vm.concat.open = vm.concat.open[:min(open, len(vm.concat.open))]
		top := L.GetTop()
		L.Push(vm.closer)
		_ = L.PCall(0, 0, nil)
		L.SetTop(top)
	}
	if had {
		*flag = true
	}
	return err
}

// hasErrorFuncOffset is where gopher-lua's LState keeps hasErrorFunc, or
// -1 if it has no such bool.
var hasErrorFuncOffset = func() uintptr {
	f, ok := reflect.TypeOf(lua.LState{}).FieldByName("hasErrorFunc")
	if !ok || f.Type.Kind() != reflect.Bool {
		return ^uintptr(0)
	}
	return f.Offset
}()

// hasErrorFunc points at gopher-lua's LState.hasErrorFunc, or is nil.
func hasErrorFunc(L *lua.LState) *bool {
	if hasErrorFuncOffset == ^uintptr(0) {
		return nil
	}
	return (*bool)(unsafe.Add(unsafe.Pointer(L), hasErrorFuncOffset))
}

// newCloser is protectedCall's function that only returns.
func (vm *VM) newCloser(L *lua.LState) *lua.LFunction {
	proto, msg := vm.compile(nil, chunkScript)
	if msg != "" {
		panic("luavm: compiling an empty chunk: " + msg)
	}
	return L.NewFunctionFromProto(proto)
}

// basePCall is gopher-lua's pcall through protectedCall.
func (vm *VM) basePCall(L *lua.LState) int {
	L.CheckAny(1)
	v := L.Get(1)
	if v.Type() != lua.LTFunction && L.GetMetaField(v, "__call").Type() != lua.LTFunction {
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
		return 2
	}
	if vm.cStackFull() {
		L.Push(lua.LFalse)
		L.Push(lua.LString(errCStackOverflow))
		return 2
	}
	// the handler closes the upvalues above the called function
	vm.pcallBases = append(vm.pcallBases, frameBase(L, 0))
	vm.catchers = append(vm.catchers, nil)
	err := vm.protectedCall(L, L.GetTop()-1, lua.MultRet, vm.handler)
	vm.pcallBases = vm.pcallBases[:len(vm.pcallBases)-1]
	vm.catchers = vm.catchers[:len(vm.catchers)-1]
	if err != nil {
		L.Push(lua.LFalse)
		L.Push(errorValue(err))
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// xpcall is Lua 5.1's luaB_xpcall through protectedCall: any value may
// be called, and any be the handler; the handler gets the message as Lua
// 5.1 words it, and when it fails it is called again with its own error,
// until it returns (Lua's luaG_errormsg calls the handler for each error
// until its C stack runs out: "error in error handling").
func (vm *VM) xpcall(L *lua.LState) int {
	if L.GetTop() < 2 {
		cArgError(L, 2, "value expected")
	}
	L.SetTop(2)
	fn, user := L.Get(1), L.Get(2)
	top := L.GetTop()
	base := frameBase(L, 0) + top // fn's register
	if fn.Type() != lua.LTFunction && L.GetMetaField(fn, "__call").Type() != lua.LTFunction {
		// the call fails before any function runs: only the handler does
		L.Push(lua.LFalse)
		L.Push(vm.callHandler(L, user, lua.LString("attempt to call a "+fn.Type().String()+" value")))
		return 2
	}
	if vm.cStackFull() {
		L.Push(lua.LFalse)
		L.Push(vm.callHandler(L, user, lua.LString(errCStackOverflow)))
		return 2
	}
	h := L.NewFunction(func(L *lua.LState) int {
		msg := L.Get(1)
		if s, ok := msg.(lua.LString); ok {
			if m, ok := vm.lua51Error(L, string(s), 1); ok {
				msg = lua.LString(m)
			}
		}
		L.Push(vm.callHandler(L, user, msg))
		closeAbove(L, base) // after the script's handler, as Lua
		return 1
	})
	L.Push(fn)
	vm.catchers = append(vm.catchers, user)
	err := vm.protectedCall(L, 0, lua.MultRet, h)
	vm.catchers = vm.catchers[:len(vm.catchers)-1]
	if err != nil {
		L.Push(lua.LFalse)
		L.Push(errorValue(err))
		return 2
	}
	L.Insert(lua.LTrue, top+1)
	return L.GetTop() - top
}

// maxHandlerCalls is how many times a failing handler is called again
// (Lua's LUAI_MAXCCALLS bounds its recursion).
const maxHandlerCalls = 200

// maxCCalls is Lua 5.1's LUAI_MAXCCALLS: the calls into Lua from C
// (lua_call, lua_pcall) that may be open at once, the script's own call
// among them; one more is "C stack overflow". gopher-lua calls into Lua
// from Go without counting, so pcall and xpcall count themselves (the
// calls a nested pcall makes are the ones a script can nest without
// bound); a metamethod's calls are bounded by the call stack alone.
const maxCCalls = 200

// errCStackOverflow is luaD_call's error past maxCCalls; raised while a C
// function (pcall) runs, it carries no position.
const errCStackOverflow = "C stack overflow"

// cStackFull reports whether a pcall or xpcall opened now would be the
// maxCCalls-th call into Lua: the script's own call and those of the
// protected calls open are the others.
func (vm *VM) cStackFull() bool { return 1+len(vm.catchers)+1 >= maxCCalls }

// callHandler is xpcall's handler h called with msg, again with its own
// error while it fails.
func (vm *VM) callHandler(L *lua.LState, h, msg lua.LValue) lua.LValue {
	for i := 0; i < maxHandlerCalls; i++ {
		L.Push(h)
		L.Push(msg)
		err := vm.protectedCall(L, 1, 1, vm.handler)
		if err == nil {
			v := L.Get(-1)
			L.Pop(1)
			return v
		}
		if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
			L.RaiseError("%s", ctx.Err().Error()) // killed: no handler may keep it
		}
		msg = errorValue(err)
	}
	return lua.LString("error in error handling")
}

// catchValue is what the innermost protected call makes of an error
// value v raised where Lua 5.1 reports it rather than raises it (load's
// reader): pcall's is v, xpcall's its handler's result, and the script's
// own, at top level, Redis's error table {err = "ERR " .. v}.
func (vm *VM) catchValue(L *lua.LState, v lua.LValue) lua.LValue {
	if n := len(vm.catchers); n > 0 {
		if h := vm.catchers[n-1]; h != nil {
			return vm.callHandler(L, h, v)
		}
		return v
	}
	if _, ok := v.(*lua.LTable); ok {
		return v
	}
	return errorTable(L, L.ToStringMeta(v).String()) // ("ERR " added)
}

// errorValue is the value a failed protected call gives its caller.
func errorValue(err error) lua.LValue {
	if ae, ok := err.(*lua.ApiError); ok {
		return ae.Object
	}
	return lua.LString(err.Error())
}
