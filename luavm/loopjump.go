package luavm

import "github.com/yuin/gopher-lua/ast"

// guardLoopBreaks works around a gopher-lua compiler bug (compile.go's
// jump-to-jump optimization, v1.1.2): a jump back to the start of a loop
// body that begins with a jump (a break, an if whose condition is a
// false constant, ...) follows that jump, whose offset was already
// resolved, as if it were still a label: the loop then jumps elsewhere,
// and "for k in pairs({1}) do break end" after another loop could run for
// ever. A loop body whose first statement may begin with a jump gets an
// instruction before it: a block declaring a local that no name can
// refer to (a LOADNIL; its register is free again after it).
func guardLoopBreaks(ss []ast.Stmt) {
	walkStmts(loopBreakGuard{}, ss)
}

type loopBreakGuard struct{}

func (loopBreakGuard) expr(ast.Expr) bool { return true }

func (loopBreakGuard) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.GenericForStmt:
		s.Stmts = guardFirstJump(s.Stmts)
	case *ast.NumberForStmt:
		s.Stmts = guardFirstJump(s.Stmts)
	case *ast.WhileStmt:
		s.Stmts = guardFirstJump(s.Stmts)
	case *ast.RepeatStmt:
		s.Stmts = guardFirstJump(s.Stmts)
	}
}

// guardFirstJump returns ss with a LOADNIL first when its first statement
// may compile to code that begins with a jump.
func guardFirstJump(ss []ast.Stmt) []ast.Stmt {
	if len(ss) == 0 {
		return ss
	}
	switch ss[0].(type) {
	case *ast.BreakStmt, *ast.IfStmt, *ast.WhileStmt, *ast.RepeatStmt, *ast.DoBlockStmt:
	default:
		return ss // an assignment, a call, a return, a numeric or generic for: no jump first
	}
	line := ss[0].Line()
	nop := &ast.LocalAssignStmt{Names: []string{"(loop)"}}
	nop.SetLine(line)
	nop.SetLastLine(line)
	blk := &ast.DoBlockStmt{Stmts: []ast.Stmt{nop}}
	blk.SetLine(line)
	blk.SetLastLine(line)
	return append([]ast.Stmt{blk}, ss...)
}
