package luavm

import (
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// astVisitor is what walkStmts tells of a syntax tree: each statement and
// each expression, before their parts. expr reports whether to go into
// the expression's parts (a function's body included).
type astVisitor interface {
	stmt(s ast.Stmt)
	expr(e ast.Expr) bool
}

// astScoper is what a visitor implements to be told of the scopes of
// local variables, as gopher-lua's compiler opens them (compile.go): a
// block or a function body entered (f the function, nil for a block)
// and left, and each local declared, in scope from the next expression
// walked until its block is left. Locals it declares itself (the
// numeric for's "(for index)" and the like) are not told: no name can
// refer to them.
type astScoper interface {
	enter(f *ast.FunctionExpr)
	leave(f *ast.FunctionExpr)
	local(name string)
}

// noScopes stands in for a visitor that does not follow scopes.
type noScopes struct{}

func (noScopes) enter(*ast.FunctionExpr) {}
func (noScopes) leave(*ast.FunctionExpr) {}
func (noScopes) local(string)            {}

func scoperOf(v astVisitor) astScoper {
	if s, ok := v.(astScoper); ok {
		return s
	}
	return noScopes{}
}

// walkStmts visits ss and everything in them, in order.
func walkStmts(v astVisitor, ss []ast.Stmt) {
	sc := scoperOf(v)
	block := func(ss []ast.Stmt) {
		sc.enter(nil)
		walkStmts(v, ss)
		sc.leave(nil)
	}
	for _, s := range ss {
		v.stmt(s)
		switch s := s.(type) {
		case *ast.AssignStmt:
			walkExprs(v, s.Lhs)
			walkExprs(v, s.Rhs)
		case *ast.LocalAssignStmt:
			// "local f = function" (and "local function f") has f in
			// scope in its own body; other locals start after the
			// statement
			if len(s.Names) == 1 && len(s.Exprs) == 1 {
				if _, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
					sc.local(s.Names[0])
					walkExpr(v, s.Exprs[0])
					continue
				}
			}
			walkExprs(v, s.Exprs)
			for _, n := range s.Names {
				sc.local(n)
			}
		case *ast.FuncCallStmt:
			walkExpr(v, s.Expr)
		case *ast.DoBlockStmt:
			block(s.Stmts)
		case *ast.WhileStmt:
			walkExpr(v, s.Condition)
			block(s.Stmts)
		case *ast.RepeatStmt:
			// the condition sees the body's locals
			sc.enter(nil)
			walkStmts(v, s.Stmts)
			walkExpr(v, s.Condition)
			sc.leave(nil)
		case *ast.IfStmt:
			walkExpr(v, s.Condition)
			block(s.Then)
			block(s.Else)
		case *ast.NumberForStmt:
			sc.enter(nil)
			walkExpr(v, s.Init)
			walkExpr(v, s.Limit)
			walkExpr(v, s.Step)
			sc.local(s.Name)
			walkStmts(v, s.Stmts)
			sc.leave(nil)
		case *ast.GenericForStmt:
			sc.enter(nil)
			walkExprs(v, s.Exprs)
			for _, n := range s.Names {
				sc.local(n)
			}
			walkStmts(v, s.Stmts)
			sc.leave(nil)
		case *ast.FuncDefStmt:
			method := false
			if s.Name != nil {
				walkExpr(v, s.Name.Func)
				walkExpr(v, s.Name.Receiver)
				method = s.Name.Func == nil // function a:b(): self is a parameter
			}
			if s.Func != nil && v.expr(s.Func) {
				walkFunction(v, s.Func, method)
			}
		case *ast.ReturnStmt:
			walkExprs(v, s.Exprs)
		}
	}
}

// walkFunction walks a function's body, its parameters in scope.
func walkFunction(v astVisitor, f *ast.FunctionExpr, method bool) {
	sc := scoperOf(v)
	sc.enter(f)
	if method {
		sc.local("self")
	}
	if f.ParList != nil {
		for _, n := range f.ParList.Names {
			sc.local(n)
		}
		if f.ParList.HasVargs && lua.CompatVarArg {
			sc.local("arg") // (Lua 5.0's table of the varargs)
		}
	}
	walkStmts(v, f.Stmts)
	sc.leave(f)
}

func walkExprs(v astVisitor, es []ast.Expr) {
	for _, e := range es {
		walkExpr(v, e)
	}
}

// walkExpr visits e and its parts (nothing for a nil e).
func walkExpr(v astVisitor, e ast.Expr) {
	if e == nil || !v.expr(e) {
		return
	}
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		walkExpr(v, e.Object)
		walkExpr(v, e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			walkExpr(v, f.Key)
			walkExpr(v, f.Value)
		}
	case *ast.FuncCallExpr:
		walkExpr(v, e.Func)
		walkExpr(v, e.Receiver)
		walkExprs(v, e.Args)
	case *ast.LogicalOpExpr:
		walkExpr(v, e.Lhs)
		walkExpr(v, e.Rhs)
	case *ast.RelationalOpExpr:
		walkExpr(v, e.Lhs)
		walkExpr(v, e.Rhs)
	case *ast.StringConcatOpExpr:
		walkExpr(v, e.Lhs)
		walkExpr(v, e.Rhs)
	case *ast.ArithmeticOpExpr:
		walkExpr(v, e.Lhs)
		walkExpr(v, e.Rhs)
	case *ast.UnaryMinusOpExpr:
		walkExpr(v, e.Expr)
	case *ast.UnaryNotOpExpr:
		walkExpr(v, e.Expr)
	case *ast.UnaryLenOpExpr:
		walkExpr(v, e.Expr)
	case *ast.FunctionExpr:
		walkFunction(v, e, false)
	}
}
