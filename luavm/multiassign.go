package luavm

import (
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// splitMultiAssigns works around a gopher-lua compiler bug (compile.go's
// compileAssignStmtRight, v1.1.2; yuin/gopher-lua#440): in an assignment
// to several variables, each value is compiled straight into the
// register of a local it is assigned to, before the values after it are
// evaluated, so "a, b = b, a" made both 2, where Lua 5.1 evaluates every
// value first. Likewise an indexed target whose table or key is a local
// assigned in the same statement ("t, t.x = 5, 1") indexed the new value
// (Lua 5.1's check_conflict copies it first), and "a, a = 1, 2" left 2
// (Lua assigns right to left: 1).
//
// Each assignment to more than one target takes its values as the
// results of one call, "a, b = (function(...) return ... end)(b, a)":
// gopher-lua evaluates a call's results into registers of their own and
// then moves them to the targets, the last first, as Lua does. (A block
// of locals would do too, but gopher-lua's debug ranges of a block's
// locals are wrong once it ends, and later errors would name them.) An
// assignment where an indexed target's table or key is a variable the
// statement assigns ("t, t.x = 5, 1") becomes a block that copies that
// table or key first (Lua 5.1's check_conflict), evaluates the values
// into locals no script can name, and assigns one target at a time, the
// last first:
//
//	a, t[a] = f()  →  do local (k) = a  local (v1), (v2) = f()  t[(k)] = (v2)  a = (v1) end
//
// There, one order differs from Lua 5.1's, where a value's evaluation
// changes a target's table or key: the other tables and keys of indexed
// targets are evaluated after the values, where Lua evaluates them
// before.
func splitMultiAssigns(ss []ast.Stmt) []ast.Stmt {
	ss = splitAssignList(ss)
	walkStmts(multiAssignSplitter{}, ss)
	return ss
}

type multiAssignSplitter struct{}

func (multiAssignSplitter) expr(e ast.Expr) bool {
	if f, ok := e.(*ast.FunctionExpr); ok {
		f.Stmts = splitAssignList(f.Stmts)
	}
	return true
}

func (multiAssignSplitter) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.DoBlockStmt:
		s.Stmts = splitAssignList(s.Stmts)
	case *ast.WhileStmt:
		s.Stmts = splitAssignList(s.Stmts)
	case *ast.RepeatStmt:
		s.Stmts = splitAssignList(s.Stmts)
	case *ast.IfStmt:
		s.Then = splitAssignList(s.Then)
		s.Else = splitAssignList(s.Else)
	case *ast.NumberForStmt:
		s.Stmts = splitAssignList(s.Stmts)
	case *ast.GenericForStmt:
		s.Stmts = splitAssignList(s.Stmts)
	}
}

// splitAssignList returns ss with its assignments to several targets
// rewritten (the statements themselves; blocks nested in them are
// walked by walkStmts).
func splitAssignList(ss []ast.Stmt) []ast.Stmt {
	var out []ast.Stmt
	for i, s := range ss {
		a, ok := s.(*ast.AssignStmt)
		if !ok || len(a.Lhs) < 2 || !needsSplit(a) {
			if out != nil {
				out = append(out, s)
			}
			continue
		}
		if out == nil {
			out = append(make([]ast.Stmt, 0, len(ss)), ss[:i]...)
		}
		out = append(out, splitAssign(a))
	}
	if out == nil {
		return ss
	}
	return out
}

// needsSplit reports whether gopher-lua could get a wrong: a value is
// compiled into the register of a local target before the values after
// it are evaluated, so only a statement with a target that is a name can
// go wrong, and only where that name is a target twice, or is read by
// another target's table or key or by a value, or where these run code
// that might read it as an upvalue: a call, or an operation a metamethod
// can serve (an index, arithmetic, a comparison, a concatenation). The
// forms that do neither ("a, b = 1, 2", "a, b = c, nil") are left as
// they are: the rewrite costs a call each time the statement runs.
func needsSplit(a *ast.AssignStmt) bool {
	names := map[string]bool{}
	for _, l := range a.Lhs {
		if id, ok := l.(*ast.IdentExpr); ok {
			if names[id.Value] {
				return true // "a, a = 1, 2"
			}
			names[id.Value] = true
		}
	}
	if len(names) == 0 {
		return false // indexed targets only: each value gets a register of its own
	}
	v := &readsTargets{names: names}
	for _, l := range a.Lhs {
		if g, ok := l.(*ast.AttrGetExpr); ok {
			walkExpr(v, g.Object)
			walkExpr(v, g.Key)
		}
	}
	walkExprs(v, a.Rhs)
	return v.hit
}

// readsTargets finds, in the expressions it walks, a name of names, a
// call, or an operation a metamethod can serve. A function expression
// reads nothing as it is created.
type readsTargets struct {
	names map[string]bool
	hit   bool
}

func (v *readsTargets) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.IdentExpr:
		v.hit = v.hit || v.names[e.Value]
	case *ast.FuncCallExpr, *ast.AttrGetExpr, *ast.ArithmeticOpExpr, *ast.StringConcatOpExpr,
		*ast.RelationalOpExpr, *ast.UnaryMinusOpExpr, *ast.UnaryLenOpExpr:
		v.hit = true
	case *ast.FunctionExpr:
		return false
	}
	return !v.hit
}

func (*readsTargets) stmt(ast.Stmt) {}

// splitAssign is the block that stands for a; its locals' names, "(assign
// 1)" and the like, are no Lua name.
func splitAssign(a *ast.AssignStmt) ast.Stmt {
	line, last := a.Line(), a.LastLine()
	ident := func(name string) *ast.IdentExpr {
		e := &ast.IdentExpr{Value: name}
		e.SetLine(line)
		e.SetLastLine(last)
		return e
	}
	assigned := map[string]bool{}
	for _, l := range a.Lhs {
		if id, ok := l.(*ast.IdentExpr); ok {
			assigned[id.Value] = true
		}
	}
	conflict := false
	for _, l := range a.Lhs {
		if g, ok := l.(*ast.AttrGetExpr); ok {
			for _, part := range []ast.Expr{g.Object, g.Key} {
				if id, ok := part.(*ast.IdentExpr); ok && assigned[id.Value] {
					conflict = true
				}
			}
		}
	}
	if !conflict {
		// The values as the results of one call, "(function(...) return
		// ... end)(values)": gopher-lua evaluates a call's results into
		// registers of their own, then moves them to the targets, the last
		// first, the tables and keys of indexed targets evaluated before
		// the values, all as Lua does; the values' operands keep their
		// names in errors (block locals would not: gopher-lua's debug
		// ranges of a block's locals are wrong after it).
		va := &ast.Comma3Expr{}
		va.SetLine(line)
		va.SetLastLine(last)
		ret := &ast.ReturnStmt{Exprs: []ast.Expr{va}}
		ret.SetLine(line)
		ret.SetLastLine(last)
		fn := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: true}, Stmts: []ast.Stmt{ret}}
		fn.SetLine(line)
		fn.SetLastLine(last)
		call := &ast.FuncCallExpr{Func: fn, Args: a.Rhs}
		call.SetLine(line)
		call.SetLastLine(last)
		st := &ast.AssignStmt{Lhs: a.Lhs, Rhs: []ast.Expr{call}}
		st.SetLine(line)
		st.SetLastLine(last)
		return st
	}
	var body []ast.Stmt
	local := func(names []string, exprs []ast.Expr) {
		st := &ast.LocalAssignStmt{Names: names, Exprs: exprs}
		st.SetLine(line)
		st.SetLastLine(last)
		body = append(body, st)
	}
	// the tables and keys that name a variable assigned here, as they are
	// before the assignment (each local its own name: a name stands for
	// the last local declared with it)
	lhs := make([]ast.Expr, len(a.Lhs))
	for i, l := range a.Lhs {
		lhs[i] = l
		g, ok := l.(*ast.AttrGetExpr)
		if !ok {
			continue
		}
		ng := *g
		for _, part := range []*ast.Expr{&ng.Object, &ng.Key} {
			if id, ok := (*part).(*ast.IdentExpr); ok && assigned[id.Value] {
				name := "(assign index " + strconv.Itoa(len(body)) + ")"
				local([]string{name}, []ast.Expr{id})
				*part = ident(name)
			}
		}
		lhs[i] = &ng
	}
	names := make([]string, len(a.Lhs))
	for i := range names {
		names[i] = "(assign " + strconv.Itoa(i) + ")"
	}
	local(names, a.Rhs)
	for i := len(lhs) - 1; i >= 0; i-- {
		st := &ast.AssignStmt{Lhs: []ast.Expr{lhs[i]}, Rhs: []ast.Expr{ident(names[i])}}
		st.SetLine(line)
		st.SetLastLine(last)
		body = append(body, st)
	}
	blk := &ast.DoBlockStmt{Stmts: body}
	blk.SetLine(line)
	blk.SetLastLine(last)
	return blk
}
