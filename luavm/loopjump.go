package luavm

import "github.com/yuin/gopher-lua/ast"

// guardLoopBreaks works around a gopher-lua compiler bug (compile.go's
// jump-to-jump optimization, v1.1.2): a jump back to the start of a loop
// body that begins with a jump (break) follows that jump, whose offset
// was already resolved, as if it were still a label: the loop then jumps
// elsewhere, and "for k in pairs({1}) do break end" after another loop
// can run for ever. A body that begins with break gets an instruction
// before it: the break goes in a block with a local of its own, which
// no name can refer to (a LOADNIL).
func guardLoopBreaks(ss []ast.Stmt) {
	walkStmts(loopBreakGuard{}, ss)
}

type loopBreakGuard struct{}

func (loopBreakGuard) expr(ast.Expr) bool { return true }

func (loopBreakGuard) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.GenericForStmt:
		s.Stmts = guardFirstBreak(s.Stmts)
	case *ast.NumberForStmt:
		s.Stmts = guardFirstBreak(s.Stmts)
	case *ast.WhileStmt:
		s.Stmts = guardFirstBreak(s.Stmts)
	case *ast.RepeatStmt:
		s.Stmts = guardFirstBreak(s.Stmts)
	}
}

// guardFirstBreak returns ss with its first statement, when that is a
// break (alone or first in do blocks), put after a LOADNIL.
func guardFirstBreak(ss []ast.Stmt) []ast.Stmt {
	first := ss
	for len(first) > 0 {
		if d, ok := first[0].(*ast.DoBlockStmt); ok {
			first = d.Stmts
			continue
		}
		break
	}
	if len(first) == 0 {
		return ss
	}
	br, ok := first[0].(*ast.BreakStmt)
	if !ok {
		return ss
	}
	nop := &ast.LocalAssignStmt{Names: []string{"(break)"}}
	nop.SetLine(br.Line())
	nop.SetLastLine(br.Line())
	blk := &ast.DoBlockStmt{Stmts: []ast.Stmt{nop, br}}
	blk.SetLine(br.Line())
	blk.SetLastLine(br.LastLine())
	first[0] = blk
	return ss
}
