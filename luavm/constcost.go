package luavm

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
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
//
// Constant folding costs too. Each arithmetic operator (and unary minus)
// the compiler meets first tries to fold its whole operand tree
// (constFold), so a chain x+1+1+...+1 of n terms takes n²/2 visits, each
// worth several searches' steps (arithStepCost): 20,000 terms took 12 s.
// And a folded constant that is NaN (0/0) never equals the constants
// already found, so each one is a new constant.

// The compiler also walks the chain of open blocks: to find what each
// name refers to (FindLocalVarAndBlock, through the enclosing functions'
// blocks too), and as it leaves each block (LocalVarsCount). Each block
// passed is counted as a step: a chain of 20,000 elseif, each a block in
// the one before, took 3.9 s. And a string constant compared with one
// of the same length is compared byte by byte: with long strings that
// share a prefix, a step costs more (longStepBytes).

// constCostMax bounds the steps of a chunk's constant searches: about a
// second of compiling, 16,000 distinct constants.
const constCostMax = 1 << 27

// arithStepCost is what one constFold visit costs, in steps of the
// constant search (about 60 ns against 9).
const arithStepCost = 7

// longStepBytes is how many bytes of a string compared cost one more
// step (16,000 distinct strings of 1,000 bytes sharing a prefix took 10.8
// s to compile, of 22 bytes 2.1 s); shorter strings count nothing more.
const longStepBytes = 256

// constCounter plays out the constant searches of one function as the
// compiler will make them: every string and number literal, every name
// that is not a local (of this function or one it is in: a global's
// name is a constant), and every method name. Nested functions count on
// their own.
type constCounter struct {
	uses  int
	index map[string]int // the constants so far, by kind and value
	steps int
	nans  int         // the NaN constants folding made
	long  map[int]int // the distinct long string constants, by length
	folds int         // the operator nodes folding visits
	line  int         // the function's first line; 0 for the main chunk
}

func newConstCounter(line int) *constCounter {
	return &constCounter{line: line, index: map[string]int{}}
}

// addNumber counts a number constant, the compiler's way: by value (1
// and 1.0 are one, 0 and -0 too), a NaN (0/0 folded) always a new one.
func (c *constCounter) addNumber(v float64) {
	if v != v {
		c.uses++
		c.steps += len(c.index)
		c.nans++
		c.index["\x00nan"+strconv.Itoa(c.nans)] = len(c.index)
		return
	}
	if v == 0 {
		v = 0 // (-0 is 0)
	}
	c.add('n', strconv.FormatFloat(v, 'g', -1, 64))
}

// addLong counts the byte comparisons of a search for a long string:
// as if it ran the length of each constant of its length (those after
// it too, when it is found: an overestimate).
func (c *constCounter) addLong(v string) {
	if c.long == nil {
		c.long = map[int]int{}
	}
	n := c.long[len(v)]
	c.steps += n * (len(v) / longStepBytes)
	if _, ok := c.index["s"+v]; !ok {
		c.long[len(v)] = n + 1
	}
}

// numberValue is a number literal's value, as the compiler reads it.
func numberValue(text string) float64 {
	return float64(lua.LVAsNumber(lua.LString(text)))
}

func (c *constCounter) add(kind byte, v string) {
	c.uses++
	if kind == 's' && len(v) >= longStepBytes {
		c.addLong(v)
	}
	k := string(kind) + v
	if i, ok := c.index[k]; ok {
		c.steps += i
		return
	}
	c.steps += len(c.index)
	c.index[k] = len(c.index)
}

// constCost totals a chunk's functions, in the order they are compiled
// (a function before the one it is in), and keeps the first that takes
// the total past constCostMax, to report it.
type constCost struct {
	total  int
	over   *constCounter
	onDone func(*constCounter) // (for tests)
}

// checkConstCost returns the error to refuse a chunk with, "" when its
// compiling is affordable. chunk names it as errors do ("user_script").
func checkConstCost(stmts []ast.Stmt, chunk string) string {
	var cc constCost
	cc.count(stmts)
	if cc.over == nil {
		return ""
	}
	o := cc.over
	where := "the main chunk"
	if o.line > 0 {
		where = fmt.Sprintf("the function at line %d", o.line)
	}
	line := max(o.line, 1)
	return fmt.Sprintf("%s:%d: too many constants or operators for tumbler to compile in %s (%d distinct constants, used %d times; %d operator visits folding)",
		chunk, line, where, len(o.index), o.uses, o.folds)
}

// count walks a chunk, counting each function when it is compiled.
func (cc *constCost) count(stmts []ast.Stmt) {
	w := &constWalker{cc: cc, c: newConstCounter(0), locals: map[string]int{}}
	walkStmts(w, stmts)
	cc.done(w.c)
}

// done adds a function's count, when it is compiled, to the chunk's.
func (cc *constCost) done(c *constCounter) {
	if cc.onDone != nil {
		cc.onDone(c)
	}
	if cc.total += c.steps; cc.total > constCostMax && cc.over == nil {
		cc.over = c
	}
}

// constWalker counts each function's constants into its own counter, c
// the one of the function it is in, and follows the locals in scope.
type constWalker struct {
	cc     *constCost
	c      *constCounter
	outer  []*constCounter // the counters of the functions c is in
	locals map[string]int  // how many locals in scope have the name
	blocks [][]string      // the names each open block declared
	// the conditions that are a literal string or number: the compiler
	// knows them true and searches no constant for them
	literalConds map[ast.Expr]bool
}

func (w *constWalker) enter(f *ast.FunctionExpr) {
	if f != nil {
		w.outer = append(w.outer, w.c)
		w.c = newConstCounter(max(f.Line(), 1))
	}
	w.blocks = append(w.blocks, nil)
}

func (w *constWalker) leave(f *ast.FunctionExpr) {
	w.c.steps += len(w.blocks) // (the chain walked leaving it)
	last := len(w.blocks) - 1
	for _, n := range w.blocks[last] {
		w.locals[n]--
	}
	w.blocks = w.blocks[:last]
	if f != nil {
		w.cc.done(w.c)
		w.c = w.outer[len(w.outer)-1]
		w.outer = w.outer[:len(w.outer)-1]
	}
}

func (w *constWalker) local(name string) {
	w.locals[name]++
	if last := len(w.blocks) - 1; last >= 0 {
		w.blocks[last] = append(w.blocks[last], name)
	} // (the main chunk's own locals stay to the end)
}

func (w *constWalker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.IfStmt:
		w.literalCond(s.Condition, false)
	case *ast.WhileStmt:
		w.literalCond(s.Condition, false)
	case *ast.RepeatStmt:
		w.literalCond(s.Condition, false)
	case *ast.AssignStmt:
		// a global assigned to is looked up twice: once more than the
		// walk of the names counts
		for _, e := range s.Lhs {
			w.globalAgain(e)
		}
	case *ast.FuncDefStmt:
		if s.Name != nil && s.Name.Method != "" {
			w.c.add('s', s.Name.Method)
		}
		if s.Name != nil {
			w.globalAgain(s.Name.Func) // function f(): an assignment
		}
	case *ast.NumberForStmt:
		if s.Step == nil {
			w.c.add('n', "1") // the compiler's default step
		}
	}
}

// literalCond notes the parts of a condition that are a literal string
// or number the compiler compiles nothing for: as compileBranchCondition
// goes through not, and and or, those with no next condition.
func (w *constWalker) literalCond(e ast.Expr, hasNext bool) {
	switch e := e.(type) {
	case *ast.StringExpr, *ast.NumberExpr:
		if hasNext {
			return
		}
		if w.literalConds == nil {
			w.literalConds = map[ast.Expr]bool{}
		}
		w.literalConds[e] = true
	case *ast.UnaryNotOpExpr:
		w.literalCond(e.Expr, !hasNext)
	case *ast.LogicalOpExpr:
		w.literalCond(e.Lhs, e.Operator == "or")
		w.literalCond(e.Rhs, hasNext)
	}
}

// globalAgain counts a second search for e's name when it is a global.
func (w *constWalker) globalAgain(e ast.Expr) {
	if id, ok := e.(*ast.IdentExpr); ok && w.locals[id.Value] == 0 {
		w.c.add('s', id.Value)
	}
}

func (w *constWalker) expr(e ast.Expr) bool {
	if w.literalConds[e] {
		delete(w.literalConds, e)
		return false
	}
	switch e := e.(type) {
	case *ast.StringExpr:
		w.c.add('s', e.Value)
	case *ast.NumberExpr:
		w.c.addNumber(numberValue(e.Value))
	case *ast.IdentExpr:
		w.c.steps += len(w.blocks) // (the chain searched for it)
		if w.locals[e.Value] == 0 {
			w.c.add('s', e.Value) // a global
		}
	case *ast.FuncCallExpr:
		if e.Method != "" {
			w.c.add('s', e.Method)
		}
	case *ast.ArithmeticOpExpr, *ast.UnaryMinusOpExpr:
		_, extra, constant, v, visits := w.arith(e)
		if constant {
			w.c.addNumber(v)
		}
		visits += extra // (the first fold, before the unary minus ones were folded in place)
		w.c.folds += visits
		w.c.steps += visits * arithStepCost
		return false // (arith walked it)
	}
	return true
}

// arith counts an operator tree as the compiler folds and compiles it.
// Compiling an operator node folds the tree under it (size: its operator
// nodes); when that gives a constant (all its leaves are number
// literals) nothing under it is compiled, else both sides are, the
// operator ones in the same way. A side that folds to a constant under
// one that does not is a constant of its own, by its value. A unary
// minus over a constant is folded in place by the first fold that meets
// it (constFold rewrites its operand): later folds visit it as one node,
// and extra is what the first visits more. Other expressions under the
// tree are walked as usual. arith reports the tree's size (its unary
// minus over constants counted as one node), extra, whether it folds to
// a constant and its value then, and the fold visits compiling it takes
// after the first fold.
func (w *constWalker) arith(e ast.Expr) (size, extra int, constant bool, value float64, visits int) {
	var sides []ast.Expr
	op := "-" // (unary)
	switch e := e.(type) {
	case *ast.NumberExpr:
		return 0, 0, true, numberValue(e.Value), 0
	case *ast.ArithmeticOpExpr:
		sides, op = []ast.Expr{e.Lhs, e.Rhs}, e.Operator
	case *ast.UnaryMinusOpExpr:
		sides = []ast.Expr{e.Expr}
	default:
		walkExpr(w, e)
		return 0, 0, false, 0, 0
	}
	size, constant = 1, true
	var consts [2]bool
	var values [2]float64
	inner := 0
	for i, s := range sides {
		var n, x, v int
		n, x, consts[i], values[i], v = w.arith(s)
		size += n
		extra += x
		constant = constant && consts[i]
		inner += v
	}
	if constant {
		// one fold at this node: nothing under it is compiled
		if len(sides) == 1 {
			return 1, extra + size - 1, true, -values[0], 1 // (folded in place)
		}
		return size, extra, true, foldArith(op, values[0], values[1]), size
	}
	for i := range sides {
		if consts[i] {
			w.c.addNumber(values[i])
		}
	}
	return size, extra, false, 0, size + inner
}

// foldArith is the compiler's constant folding of a binary operator
// (gopher-lua's constFold, luaModulo).
func foldArith(op string, l, r float64) float64 {
	switch op {
	case "+":
		return l + r
	case "-":
		return l - r
	case "*":
		return l * r
	case "/":
		return l / r
	case "%":
		v := math.Mod(l, r)
		if r > 0 && v < 0 || r < 0 && v > 0 {
			v += r
		}
		return v
	case "^":
		return math.Pow(l, r)
	}
	return math.NaN()
}
