package luavm

import "github.com/yuin/gopher-lua/ast"

// astVisitor is what walkStmts tells of a syntax tree: each statement and
// each expression, before their parts. expr reports whether to go into
// the expression's parts (a function's body included).
type astVisitor interface {
	stmt(s ast.Stmt)
	expr(e ast.Expr) bool
}

// walkStmts visits ss and everything in them, in order.
func walkStmts(v astVisitor, ss []ast.Stmt) {
	for _, s := range ss {
		v.stmt(s)
		switch s := s.(type) {
		case *ast.AssignStmt:
			walkExprs(v, s.Lhs)
			walkExprs(v, s.Rhs)
		case *ast.LocalAssignStmt:
			walkExprs(v, s.Exprs)
		case *ast.FuncCallStmt:
			walkExpr(v, s.Expr)
		case *ast.DoBlockStmt:
			walkStmts(v, s.Stmts)
		case *ast.WhileStmt:
			walkExpr(v, s.Condition)
			walkStmts(v, s.Stmts)
		case *ast.RepeatStmt:
			walkStmts(v, s.Stmts)
			walkExpr(v, s.Condition)
		case *ast.IfStmt:
			walkExpr(v, s.Condition)
			walkStmts(v, s.Then)
			walkStmts(v, s.Else)
		case *ast.NumberForStmt:
			walkExpr(v, s.Init)
			walkExpr(v, s.Limit)
			walkExpr(v, s.Step)
			walkStmts(v, s.Stmts)
		case *ast.GenericForStmt:
			walkExprs(v, s.Exprs)
			walkStmts(v, s.Stmts)
		case *ast.FuncDefStmt:
			if s.Name != nil {
				walkExpr(v, s.Name.Func)
				walkExpr(v, s.Name.Receiver)
			}
			walkExpr(v, s.Func)
		case *ast.ReturnStmt:
			walkExprs(v, s.Exprs)
		}
	}
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
		walkStmts(v, e.Stmts)
	}
}
