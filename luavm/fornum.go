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
// see or shadow. A chunk whose own strings include the marker is left as
// it is.

// forNumberMarker stands for forNumber in a chunk until it is compiled.
const forNumberMarker = "\x00tumbler:for-number\x00"

// forNumberFn is the function the marker constants become; it keeps no
// environment, as it reads and calls nothing.
var forNumberFn = &lua.LFunction{IsG: true, GFunction: forNumber}

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

// wrapForNumbers wraps the bounds of every numeric for in stmts (at any
// depth, in nested functions too) in a call to forNumberMarker. It
// reports false, changing nothing, when the chunk has the marker as a
// string of its own.
func wrapForNumbers(stmts []ast.Stmt) bool {
	var w forWalker
	w.stmts(stmts)
	if w.clash || len(w.fors) == 0 {
		return false
	}
	for _, f := range w.fors {
		f.Init = forNumberCall(f.Init)
		f.Limit = forNumberCall(f.Limit)
		if f.Step != nil {
			f.Step = forNumberCall(f.Step)
		}
	}
	return true
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
	fn := &ast.StringExpr{Value: forNumberMarker}
	fn.SetLine(e.Line())
	fn.SetLastLine(e.LastLine())
	call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{e}}
	call.SetLine(e.Line())
	call.SetLastLine(e.LastLine())
	return call
}

// setForNumbers replaces the marker in the constants of p and of the
// functions inside it with forNumberFn.
func setForNumbers(p *lua.FunctionProto) {
	for i, c := range p.Constants {
		if s, ok := c.(lua.LString); ok && s == forNumberMarker {
			p.Constants[i] = forNumberFn
		}
	}
	for _, q := range p.FunctionPrototypes {
		setForNumbers(q)
	}
}

// forWalker collects the numeric fors of a chunk and whether any string
// in it is the marker.
type forWalker struct {
	fors  []*ast.NumberForStmt
	clash bool
}

func (w *forWalker) stmts(ss []ast.Stmt) {
	for _, s := range ss {
		switch s := s.(type) {
		case *ast.AssignStmt:
			w.exprs(s.Lhs)
			w.exprs(s.Rhs)
		case *ast.LocalAssignStmt:
			w.exprs(s.Exprs)
		case *ast.FuncCallStmt:
			w.expr(s.Expr)
		case *ast.DoBlockStmt:
			w.stmts(s.Stmts)
		case *ast.WhileStmt:
			w.expr(s.Condition)
			w.stmts(s.Stmts)
		case *ast.RepeatStmt:
			w.stmts(s.Stmts)
			w.expr(s.Condition)
		case *ast.IfStmt:
			w.expr(s.Condition)
			w.stmts(s.Then)
			w.stmts(s.Else)
		case *ast.NumberForStmt:
			w.fors = append(w.fors, s)
			w.expr(s.Init)
			w.expr(s.Limit)
			w.expr(s.Step)
			w.stmts(s.Stmts)
		case *ast.GenericForStmt:
			w.exprs(s.Exprs)
			w.stmts(s.Stmts)
		case *ast.FuncDefStmt:
			if s.Name != nil {
				w.expr(s.Name.Func)
				w.expr(s.Name.Receiver)
			}
			w.expr(s.Func)
		case *ast.ReturnStmt:
			w.exprs(s.Exprs)
		}
	}
}

func (w *forWalker) exprs(es []ast.Expr) {
	for _, e := range es {
		w.expr(e)
	}
}

func (w *forWalker) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.StringExpr:
		if e.Value == forNumberMarker {
			w.clash = true
		}
	case *ast.AttrGetExpr:
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			w.expr(f.Key)
			w.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		w.expr(e.Func)
		w.expr(e.Receiver)
		w.exprs(e.Args)
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.stmts(e.Stmts)
	}
}
