package luavm

import "github.com/yuin/gopher-lua/ast"

// padForExplists works around a gopher-lua compiler bug (compile.go's
// compileGenericForStmt, v1.1.2): the explist of a generic for is
// adjusted to the number of the loop's own variables, where Lua 5.1
// adjusts it to three values (generator, state, control). With fewer
// than three variables the missing values were never set to nil, and
// the registers kept whatever the explist's code had left there: in
// "for k, v in next, r.s do" the control value started as the string
// "s" (the key loaded to index r), so next failed with "invalid key to
// 'next'" where Redis iterates the table.
//
// Each generic for with fewer than three variables is given three
// values: nils appended to an explist that does not end in a call or
// "..." (no register is spent), or, for one that does and has more than
// one expression, names no script can refer to, up to three variables,
// so that gopher-lua adjusts to three ("for k in f, g()" leaves g() two
// values). A single call ("for k, v in pairs(t)") was already right.
func padForExplists(ss []ast.Stmt) {
	walkStmts(forExplistPad{}, ss)
}

type forExplistPad struct{}

func (forExplistPad) expr(ast.Expr) bool { return true }

func (forExplistPad) stmt(s ast.Stmt) {
	f, ok := s.(*ast.GenericForStmt)
	if !ok || len(f.Names) >= 3 || len(f.Exprs) == 0 {
		return
	}
	last := f.Exprs[len(f.Exprs)-1]
	multi := false
	switch e := last.(type) {
	case *ast.FuncCallExpr:
		multi = !e.AdjustRet
	case *ast.Comma3Expr:
		multi = !e.AdjustRet
	}
	switch {
	case !multi:
		for len(f.Exprs) < 3 {
			n := &ast.NilExpr{}
			n.SetLine(last.Line())
			n.SetLastLine(last.LastLine())
			f.Exprs = append(f.Exprs, n)
		}
	case len(f.Exprs) > 1:
		for len(f.Names) < 3 {
			f.Names = append(f.Names, "(for pad)")
		}
	}
}
