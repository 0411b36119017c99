package luavm

import (
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Lua 5.1's numeric for converts a string initial value, limit or step to
// a number, as arithmetic does (OP_FORPREP's tonumber, luaO_str2d):
// Redisson's read lock scripts count down from a hash field,
// "for i=counter, 1, -1" with counter = redis.call('hget', ...). gopher-lua
// takes numbers only and raised "'for' initial value must be a number".
//
// So before compiling, every init, limit and step that is not a number
// literal is wrapped in a call to forNumber, which returns its argument
// converted when it is a numeric string and untouched otherwise (so the
// VM still raises its own errors for what Lua 5.1 refuses). The call's
// function is a string constant, forNumberMarker, that the compiled
// prototypes get replaced with forNumber itself: no global a script could
// see or shadow. A chunk whose own strings include a marker is left as
// it is.
//
// The same way, every operand of the concatenation operator that is not
// a string literal goes through concatOperand, which writes a number as
// Lua 5.1 does ("%.14g": 0.1+0.2 .. "" is "0.3", 1e15 .. "" is
// "1e+15"); gopher-lua's OP_CONCAT writes numbers with Go's digits
// ("0.30000000000000004", "1000000000000000", "+Inf"). The operand of a
// chain's continuation (the b .. c of a .. b .. c, one CONCAT of many
// registers) is not wrapped: its operands are.

//
// A chain of concatenations (a .. b .. c, one CONCAT) is built by
// gopher-lua in one allocation that nothing can refuse, and the memory
// watchdog sees it only once it is made: s .. s .. s .. s of a 256 MB s
// passed lua-memory-limit, and a long enough chain could ask for more
// memory than the host has. So a chain of two operands or more that are
// not string literals has its first one go through concatFirst, which
// opens a count of the chain's size, its last through concatLast, which
// closes it, and those between through concatNext: past the size limit
// (sizeLimit, as string.rep), the chain fails with "not enough memory"
// before it is built. The counts are a stack, as an operand may itself
// concatenate; those an error interrupts are dropped where it is caught
// (protectedCall), and each run starts with none.

// The markers stand for forNumber and the concat functions in a chunk
// until it is compiled.
const (
	forNumberMarker   = "\x00tumbler:for-number\x00"
	concatMarker      = "\x00tumbler:concat\x00"
	concatFirstMarker = "\x00tumbler:concat-first\x00"
	concatNextMarker  = "\x00tumbler:concat-next\x00"
	concatLastMarker  = "\x00tumbler:concat-last\x00"
)

// isMarker reports whether s is one of the markers a chunk's rewrites
// put in it (these, presizeMarker, longTableMarker), every one of which
// setCoercions replaces: a chunk that has one of its own gets none of
// the rewrites, so that its string stays a string.
func isMarker(s string) bool {
	switch s {
	case forNumberMarker, concatMarker, concatFirstMarker, concatNextMarker, concatLastMarker, presizeMarker, longTableMarker:
		return true
	}
	return false
}

// coercionEnv marks the functions the markers become (their Env, which
// they never read: they read and call nothing), for error messages that
// look through them (vmerror.go).
var coercionEnv = &lua.LTable{}

// forNumberFn and concatFn are the functions the marker constants become.
var (
	forNumberFn = &lua.LFunction{IsG: true, GFunction: forNumber, Env: coercionEnv}
	concatFn    = &lua.LFunction{IsG: true, GFunction: concatOperand, Env: coercionEnv}
)

// isCoercion reports whether v is one of the markers' functions.
func isCoercion(v lua.LValue) bool {
	f, ok := v.(*lua.LFunction)
	return ok && f.Env == coercionEnv
}

// concatSizes is a VM's count of the chains being built: a stack of
// sizes, and the functions of the chain markers.
type concatSizes struct {
	open              []int
	first, next, last *lua.LFunction
}

// Steps of a chain (concatStep).
const (
	chainFirst = iota
	chainNext
	chainLast
)

func (vm *VM) initConcatSizes() {
	c := &vm.concat
	fn := func(step int) *lua.LFunction {
		return &lua.LFunction{IsG: true, Env: coercionEnv, GFunction: func(L *lua.LState) int { return vm.concatStep(L, step) }}
	}
	c.first, c.next, c.last = fn(chainFirst), fn(chainNext), fn(chainLast)
}

// concatStep is concatOperand for an operand of a counted chain: it adds
// the operand's size to the chain's count, and refuses the chain past
// the size limit.
func (vm *VM) concatStep(L *lua.LState, step int) int {
	v := L.Get(1)
	n := 0
	switch x := v.(type) {
	case lua.LNumber:
		s := number14g(float64(x))
		v, n = lua.LString(s), len(s)
	case lua.LString:
		n = len(x)
	}
	c := &vm.concat
	if step == chainFirst || len(c.open) == 0 {
		c.open = append(c.open, 0)
	}
	top := len(c.open) - 1
	c.open[top] += n
	total := c.open[top]
	if step == chainLast || total > vm.sizeLimit() {
		c.open = c.open[:top]
	}
	if total > vm.sizeLimit() {
		L.RaiseError("not enough memory")
	}
	L.Push(v)
	return 1
}

// concatOperand returns its first argument, a number written as Lua 5.1
// writes it. (A __concat metamethod therefore sees a number operand as a
// string, where Lua 5.1 passes the number.)
func concatOperand(L *lua.LState) int {
	v := L.Get(1)
	if n, ok := v.(lua.LNumber); ok {
		v = lua.LString(number14g(float64(n)))
	}
	L.Push(v)
	return 1
}

// forNumber returns its first argument, made a number if it is a string
// that is one.
func forNumber(L *lua.LState) int {
	v := L.Get(1)
	if s, ok := v.(lua.LString); ok {
		if f, ok := str2d(string(s)); ok {
			v = lua.LNumber(f)
		}
	}
	L.Push(v)
	return 1
}

// wrapCoercions wraps the bounds of every numeric for in stmts (at any
// depth, in nested functions too) in a call to forNumberMarker, and the
// operands of every concatenation in one to concatMarker. It reports
// whether it wrapped any, and whether the chunk has a marker (isMarker)
// as a string of its own (own): it then changes nothing, and no other
// rewrite that puts a marker in may run.
func wrapCoercions(stmts []ast.Stmt) (wrapped, own bool) {
	var w coercionWalker
	walkStmts(&w, stmts)
	if w.clash || len(w.fors)+len(w.concats) == 0 {
		return false, w.clash
	}
	for _, f := range w.fors {
		f.Init = forNumberCall(f.Init)
		f.Limit = forNumberCall(f.Limit)
		if f.Step != nil {
			f.Step = forNumberCall(f.Step)
		}
	}
	inner := map[*ast.StringConcatOpExpr]bool{} // the continuations of chains
	for _, c := range w.concats {
		if r, ok := c.Rhs.(*ast.StringConcatOpExpr); ok {
			inner[r] = true
		}
	}
	for _, c := range w.concats {
		if !inner[c] {
			wrapChain(c)
		}
	}
	return true, false
}

// wrapChain wraps the operands of the chain whose first concatenation is
// c that are not string literals: in concatMarker's call when there is
// one, else the first in concatFirstMarker's, the last in
// concatLastMarker's and the others in concatNextMarker's.
func wrapChain(c *ast.StringConcatOpExpr) {
	type operand struct {
		at  *ast.StringConcatOpExpr
		rhs bool
	}
	var ops []operand
	for x := c; ; {
		if _, lit := x.Lhs.(*ast.StringExpr); !lit {
			ops = append(ops, operand{x, false})
		}
		next, chain := x.Rhs.(*ast.StringConcatOpExpr)
		if !chain {
			if _, lit := x.Rhs.(*ast.StringExpr); !lit {
				ops = append(ops, operand{x, true})
			}
			break
		}
		x = next
	}
	for i, op := range ops {
		marker := concatNextMarker
		switch {
		case len(ops) == 1:
			marker = concatMarker
		case i == 0:
			marker = concatFirstMarker
		case i == len(ops)-1:
			marker = concatLastMarker
		}
		if op.rhs {
			op.at.Rhs = markerCall(marker, op.at.Rhs)
		} else {
			op.at.Lhs = markerCall(marker, op.at.Lhs)
		}
	}
}

// forNumberCall is e wrapped in the marker's call, or e itself when it is a
// number literal (or one negated).
func forNumberCall(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.NumberExpr:
		return e
	case *ast.UnaryMinusOpExpr:
		if _, ok := x.Expr.(*ast.NumberExpr); ok {
			return e
		}
	}
	return markerCall(forNumberMarker, e)
}

// markerCall is e wrapped in a call of the marker's function.
func markerCall(marker string, e ast.Expr) ast.Expr {
	fn := &ast.StringExpr{Value: marker}
	fn.SetLine(e.Line())
	fn.SetLastLine(e.LastLine())
	call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{e}}
	call.SetLine(e.Line())
	call.SetLastLine(e.LastLine())
	return call
}

// setCoercions replaces the markers in the constants of p and of the
// functions inside it with their functions (the chain markers with vm's).
func (vm *VM) setCoercions(p *lua.FunctionProto) {
	for i, c := range p.Constants {
		switch s, _ := c.(lua.LString); s {
		case forNumberMarker:
			p.Constants[i] = forNumberFn
		case concatMarker:
			p.Constants[i] = concatFn
		case concatFirstMarker:
			p.Constants[i] = vm.concat.first
		case concatNextMarker:
			p.Constants[i] = vm.concat.next
		case concatLastMarker:
			p.Constants[i] = vm.concat.last
		case presizeMarker:
			p.Constants[i] = vm.presizeFn
		case longTableMarker:
			p.Constants[i] = longTableFn
		}
	}
	for _, q := range p.FunctionPrototypes {
		vm.setCoercions(q)
	}
}

// coercionWalker collects the numeric fors and the concatenations of a chunk,
// and whether any string in it is a marker.
type coercionWalker struct {
	fors    []*ast.NumberForStmt
	concats []*ast.StringConcatOpExpr
	clash   bool
}

func (w *coercionWalker) stmt(s ast.Stmt) {
	if f, ok := s.(*ast.NumberForStmt); ok {
		w.fors = append(w.fors, f)
	}
}

func (w *coercionWalker) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StringExpr:
		if isMarker(e.Value) {
			w.clash = true
		}
	case *ast.StringConcatOpExpr:
		w.concats = append(w.concats, e)
	}
	return true
}
