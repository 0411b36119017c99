package luavm

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// gopher-lua's compiler finds a function's constants (its strings,
// numbers and global names) by a linear search of those it has already
// (funcContext.ConstIndex), where Lua's keeps a hash table: each use of a
// constant costs a step for every constant before it, and compiling a
// function of K distinct constants at least K²/2 steps. A generated
// script of 40,000 distinct constants took 7 s to compile, one of 400,000
// lines over eight minutes, a core busy all along (and the keyspace lock
// held, for FUNCTION LOAD and loadstring; Redis compiles either in a
// moment). So before compiling, the search is played out from the syntax
// tree (cheaply, with a map), and past constCostMax steps the script is
// refused with a compile error. That is far beyond what any hand-written
// script holds: a 100 KB generated one comes to about 10⁷.

// constCostMax bounds the steps of a chunk's constant searches: about a
// second and a half of compiling, 16,000 distinct constants.
const constCostMax = 1 << 27

// constCounter plays out the constant searches of one function as the
// compiler will make them: every string and number literal, every name
// that is not a local (a global's name is a constant; taking locals for
// constants too only overestimates), and every method name. Nested
// functions count on their own.
type constCounter struct {
	uses  int
	index map[string]int // the constants so far, by kind and value
	steps int
	line  int // the function's first line; 0 for the main chunk
}

func (c *constCounter) add(kind byte, v string) {
	c.uses++
	if c.index == nil {
		c.index = map[string]int{}
	}
	k := string(kind) + v
	if i, ok := c.index[k]; ok {
		c.steps += i
		return
	}
	c.steps += len(c.index)
	c.index[k] = len(c.index)
}

// constCost walks a chunk's functions. It stops at the first function
// that takes the total past constCostMax, reporting it.
type constCost struct {
	total int
	over  *constCounter
}

// checkConstCost returns the error to refuse a chunk with, "" when its
// compiling is affordable. chunk names it as errors do ("user_script").
func checkConstCost(stmts []ast.Stmt, chunk string) string {
	var cc constCost
	cc.function(stmts, 0)
	if cc.over == nil {
		return ""
	}
	o := cc.over
	where := "the main chunk"
	if o.line > 0 {
		where = fmt.Sprintf("the function at line %d", o.line)
	}
	line := max(o.line, 1)
	return fmt.Sprintf("%s:%d: too many constants for tumbler to compile in %s (%d distinct, used %d times)",
		chunk, line, where, len(o.index), o.uses)
}

func (cc *constCost) function(stmts []ast.Stmt, line int) {
	if cc.over != nil {
		return
	}
	c := &constCounter{line: line}
	walkStmts(constWalker{cc: cc, c: c}, stmts)
	if cc.over != nil {
		return
	}
	if cc.total += c.steps; cc.total > constCostMax {
		cc.over = c
	}
}

// constWalker counts one function's constants into c, and hands the
// functions inside it to cc.
type constWalker struct {
	cc *constCost
	c  *constCounter
}

func (w constWalker) stmt(s ast.Stmt) {
	if d, ok := s.(*ast.FuncDefStmt); ok && d.Name != nil && d.Name.Method != "" {
		w.c.add('s', d.Name.Method)
	}
}

func (w constWalker) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StringExpr:
		w.c.add('s', e.Value)
	case *ast.NumberExpr:
		w.c.add('n', e.Value)
	case *ast.IdentExpr:
		w.c.add('s', e.Value)
	case *ast.FuncCallExpr:
		if e.Method != "" {
			w.c.add('s', e.Method)
		}
	case *ast.FunctionExpr:
		w.cc.function(e.Stmts, max(e.Line(), 1))
		return false // its own constants
	}
	return true
}
