// Package luaparse reads Lua 5.1 source as Redis's Lua does and builds
// gopher-lua's syntax tree for it.
//
// gopher-lua's own parser is a yacc grammar for a Lua with goto and labels
// (Lua 5.2's): it refuses "goto" as a name, reads numbers with Go's rules
// (1e500 is NaN, "0x1p4" and "1..2" fail in the wrong place), accepts
// "(f())" as a statement and "f\n(g)()" as one call, and its errors are
// yacc's ("syntax error", "parse error"). This package is a port of Lua
// 5.1's recursive-descent parser (lparser.c and llex.c) instead: it
// accepts exactly the scripts Redis accepts, refuses the others with Lua
// 5.1's message, line and token, and applies Lua 5.1's limits (200 local
// variables and 60 upvalues a function, 200 levels of nesting).
//
// The tree it builds is the one gopher-lua's parser builds for the same
// script, node for node and line for line, so that gopher-lua's compiler
// makes the same code of it (a test compares them on a corpus).
package luaparse

import (
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// Lua 5.1's limits (luaconf.h).
const (
	maxVars     = 200 // LUAI_MAXVARS: active local variables in a function
	maxUpvalues = 60  // LUAI_MAXUPVALUES
	maxCCalls   = 200 // LUAI_MAXCCALLS: nested chunks and expressions
)

// Parse parses src, whose chunk name (as Lua shows it, "user_script" for
// Redis's "@user_script") prefixes error messages. The error's text is
// Lua 5.1's: "user_script:LINE: message near 'token'".
func Parse(src []byte, chunk string) (stmts []ast.Stmt, err error) {
	return parseChunk(src, nil, chunk)
}

// ParseReader is Parse of a chunk read in pieces, as Lua's lua_load reads
// one: fill is called when the parser needs more, and a nil or empty
// piece ends the chunk. A panic in fill (a Lua error) goes through.
func ParseReader(fill func() []byte, chunk string) (stmts []ast.Stmt, err error) {
	return parseChunk(nil, fill, chunk)
}

func parseChunk(src []byte, fill func() []byte, chunk string) (stmts []ast.Stmt, err error) {
	p := &parser{}
	p.ls.fill = fill
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*syntaxError)
			if !ok {
				panic(r)
			}
			stmts, err = nil, se
		}
	}()
	p.ls.init(src, chunk)
	p.openFunc(&funcState{vararg: true}, 0) // the main function is vararg
	p.ls.advance()
	stmts = p.chunk()
	p.check(tkEOS)
	p.closeFunc()
	return stmts, nil
}

// What an expression is, as far as the grammar cares (expdesc's kinds).
type expKind uint8

const (
	kOther  expKind = iota
	kVar            // a variable: VLOCAL, VUPVAL, VGLOBAL or VINDEXED
	kCall           // a call, nothing around it: VCALL
	kVararg         // '...': VVARARG
)

// funcState is what Lua 5.1's FuncState keeps that the grammar's checks
// need: the variables in scope and the upvalues, to name and count them
// as Lua does.
type funcState struct {
	prev        *funcState
	vararg      bool     // the function may use '...'
	vars        []string // its local variables, in the order declared
	actvar      []int    // the active ones (their index in vars) and those being declared
	nactvar     int
	ups         []upvalDesc
	linedefined int
	bl          *blockCnt
}

type upvalDesc struct {
	local bool // an enclosing function's local (else its upvalue)
	info  int  // that local's place among the active ones, or that upvalue's
}

type blockCnt struct {
	prev      *blockCnt
	nactvar   int
	breakable bool
}

type parser struct {
	ls      lexer
	fs      *funcState
	nCcalls int
}

func (p *parser) openFunc(fs *funcState, line int) {
	fs.prev = p.fs
	fs.linedefined = line
	p.fs = fs
}

func (p *parser) closeFunc() { p.fs = p.fs.prev }

func (p *parser) errorExpected(tok int) {
	p.ls.syntaxError("'" + token2str(tok) + "' expected")
}

// checkLimit is luaY_checklimit.
func (p *parser) checkLimit(v, limit int, what string) {
	if v <= limit {
		return
	}
	msg := "main function has more than " + strconv.Itoa(limit) + " " + what
	if p.fs.linedefined != 0 {
		msg = "function at line " + strconv.Itoa(p.fs.linedefined) + " has more than " + strconv.Itoa(limit) + " " + what
	}
	p.ls.lexError(msg, 0)
}

func (p *parser) testNext(c int) bool {
	if p.ls.t.tok == c {
		p.ls.advance()
		return true
	}
	return false
}

func (p *parser) check(c int) {
	if p.ls.t.tok != c {
		p.errorExpected(c)
	}
}

func (p *parser) checkNext(c int) {
	p.check(c)
	p.ls.advance()
}

func (p *parser) checkMatch(what, who, where int) {
	if p.testNext(what) {
		return
	}
	if where == p.ls.line {
		p.errorExpected(what)
	}
	p.ls.syntaxError("'" + token2str(what) + "' expected (to close '" + token2str(who) + "' at line " + strconv.Itoa(where) + ")")
}

// strCheckName reads a name: its text and the line it is on.
func (p *parser) strCheckName() (string, int) {
	p.check(tkName)
	s, line := p.ls.t.str, p.ls.t.line
	p.ls.advance()
	return s, line
}

func (p *parser) enterLevel() {
	p.nCcalls++
	if p.nCcalls > maxCCalls {
		p.ls.lexError("chunk has too many syntax levels", 0)
	}
}

func (p *parser) leaveLevel() { p.nCcalls-- }

// Variables and scopes.

func (p *parser) newLocalVar(name string, n int) {
	fs := p.fs
	p.checkLimit(fs.nactvar+n+1, maxVars, "local variables")
	fs.vars = append(fs.vars, name)
	for len(fs.actvar) <= fs.nactvar+n {
		fs.actvar = append(fs.actvar, 0)
	}
	fs.actvar[fs.nactvar+n] = len(fs.vars) - 1
}

func (p *parser) adjustLocalVars(n int) { p.fs.nactvar += n }

func (fs *funcState) searchVar(name string) int {
	for i := fs.nactvar - 1; i >= 0; i-- {
		if fs.vars[fs.actvar[i]] == name {
			return i
		}
	}
	return -1
}

// indexUpvalue is indexupvalue: the upvalue's index, a new one counted
// against the limit.
func (p *parser) indexUpvalue(fs *funcState, u upvalDesc) int {
	for i, have := range fs.ups {
		if have == u {
			return i
		}
	}
	saved := p.fs
	p.fs = fs // the limit's message names the function the upvalue is for
	p.checkLimit(len(fs.ups)+1, maxUpvalues, "upvalues")
	p.fs = saved
	fs.ups = append(fs.ups, u)
	return len(fs.ups) - 1
}

// singleVarAux resolves name from fs outwards: global reports a global,
// else local tells a local of fs (info its place) from an upvalue.
func (p *parser) singleVarAux(fs *funcState, name string) (global, local bool, info int) {
	if fs == nil {
		return true, false, 0
	}
	if v := fs.searchVar(name); v >= 0 {
		return false, true, v
	}
	g, l, i := p.singleVarAux(fs.prev, name)
	if g {
		return true, false, 0
	}
	return false, false, p.indexUpvalue(fs, upvalDesc{local: l, info: i})
}

// singleVar reads a name used as a variable.
func (p *parser) singleVar() *ast.IdentExpr {
	name, line := p.strCheckName()
	p.singleVarAux(p.fs, name)
	e := &ast.IdentExpr{Value: name}
	e.SetLine(line)
	return e
}

func (p *parser) enterBlock(bl *blockCnt, breakable bool) {
	bl.breakable = breakable
	bl.nactvar = p.fs.nactvar
	bl.prev = p.fs.bl
	p.fs.bl = bl
}

func (p *parser) leaveBlock() {
	bl := p.fs.bl
	p.fs.bl = bl.prev
	p.fs.nactvar = bl.nactvar
}

// Expressions.

func (p *parser) stringExpr(s string, line int) *ast.StringExpr {
	e := &ast.StringExpr{Value: s}
	e.SetLine(line)
	return e
}

// numberValue is the text of a NumberExpr that gopher-lua's compiler
// reads back (strconv) as f: an infinity as "inf", as Go reads it.
func numberValue(f float64) string {
	if f > 1.7976931348623157e308 {
		return "inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// constructor reads a table constructor.
func (p *parser) constructor() *ast.TableExpr {
	line := p.ls.line
	t := &ast.TableExpr{Fields: []*ast.Field{}}
	t.SetLine(p.ls.t.line)
	p.checkNext('{')
	for p.ls.t.tok != '}' {
		switch p.ls.t.tok {
		case tkName: // a list item or a record field
			p.ls.peek()
			if p.ls.lookahead.tok != '=' {
				t.Fields = append(t.Fields, &ast.Field{Value: p.expr()})
			} else {
				t.Fields = append(t.Fields, p.recField())
			}
		case '[':
			t.Fields = append(t.Fields, p.recField())
		default:
			t.Fields = append(t.Fields, &ast.Field{Value: p.expr()})
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
	return t
}

func (p *parser) recField() *ast.Field {
	var key ast.Expr
	if p.ls.t.tok == tkName {
		name, line := p.strCheckName()
		key = p.stringExpr(name, line)
	} else {
		key = p.yindex()
	}
	p.checkNext('=')
	return &ast.Field{Key: key, Value: p.expr()}
}

// yindex reads '[' expr ']'.
func (p *parser) yindex() ast.Expr {
	p.ls.advance()
	e := p.expr()
	p.checkNext(']')
	return e
}

func (p *parser) parList() *ast.ParList {
	fs := p.fs
	pl := &ast.ParList{Names: []string{}}
	n := 0
	if p.ls.t.tok != ')' {
		for {
			switch p.ls.t.tok {
			case tkName:
				name, _ := p.strCheckName()
				p.newLocalVar(name, n)
				n++
				pl.Names = append(pl.Names, name)
			case tkDots:
				p.ls.advance()
				// LUA_COMPAT_VARARG: a vararg function has a local
				// "arg", which counts against the limit
				p.newLocalVar("arg", n)
				n++
				fs.vararg = true
				pl.HasVargs = true
			default:
				p.ls.syntaxError("<name> or '...' expected")
			}
			if fs.vararg || !p.testNext(',') {
				break
			}
		}
	}
	p.adjustLocalVars(n)
	return pl
}

// body reads a function's parameters and body; line is where Lua 5.1
// says it starts (for "function at line N" and the closing 'end').
func (p *parser) body(needSelf bool, line int) *ast.FunctionExpr {
	p.openFunc(&funcState{}, line)
	f := &ast.FunctionExpr{}
	f.SetLine(p.ls.t.line)
	p.checkNext('(')
	if needSelf {
		p.newLocalVar("self", 0)
		p.adjustLocalVars(1)
	}
	f.ParList = p.parList()
	p.checkNext(')')
	f.Stmts = p.chunk()
	f.SetLastLine(p.ls.t.line)
	p.checkMatch(tkEnd, tkFunction, line)
	p.closeFunc()
	return f
}

// exprList reads expr {',' expr}: the expressions, and the last one's kind.
func (p *parser) exprList() ([]ast.Expr, expKind) {
	e, k := p.exprKind()
	list := []ast.Expr{e}
	for p.testNext(',') {
		e, k = p.exprKind()
		list = append(list, e)
	}
	return list, k
}

func (p *parser) funcArgs() []ast.Expr {
	line := p.ls.line
	switch p.ls.t.tok {
	case '(':
		if line != p.ls.lastline {
			p.ls.syntaxError("ambiguous syntax (function call x new statement)")
		}
		p.ls.advance()
		args := []ast.Expr{}
		if p.ls.t.tok != ')' {
			args, _ = p.exprList()
		}
		p.checkMatch(')', '(', line)
		return args
	case '{':
		return []ast.Expr{p.constructor()}
	case tkString:
		s := p.stringExpr(p.ls.t.str, p.ls.t.line)
		p.ls.advance()
		return []ast.Expr{s}
	}
	p.ls.syntaxError("function arguments expected")
	return nil
}

// prefixExp reads a name or a parenthesized expression.
func (p *parser) prefixExp() (ast.Expr, expKind) {
	switch p.ls.t.tok {
	case '(':
		line, parenLine := p.ls.line, p.ls.t.line
		p.ls.advance()
		e, k := p.exprKind()
		p.checkMatch(')', '(', line)
		// As gopher-lua's grammar: a call alone in parentheses is cut
		// to one value and keeps its line; any other expression takes
		// the line of the '(' ('...' is cut to one value too).
		if k == kCall {
			e.(*ast.FuncCallExpr).AdjustRet = true
		} else {
			if c3, ok := e.(*ast.Comma3Expr); ok {
				c3.AdjustRet = true
			}
			e.SetLine(parenLine)
		}
		return e, kOther
	case tkName:
		return p.singleVar(), kVar
	}
	p.ls.syntaxError("unexpected symbol")
	return nil, kOther
}

// primaryExp reads prefixexp { '.' NAME | '[' exp ']' | ':' NAME funcargs | funcargs }.
func (p *parser) primaryExp() (ast.Expr, expKind) {
	e, k := p.prefixExp()
	for {
		switch p.ls.t.tok {
		case '.':
			p.ls.advance()
			name, line := p.strCheckName()
			a := &ast.AttrGetExpr{Object: e, Key: p.stringExpr(name, line)}
			a.SetLine(e.Line())
			e, k = a, kVar
		case '[':
			a := &ast.AttrGetExpr{Object: e, Key: p.yindex()}
			a.SetLine(e.Line())
			e, k = a, kVar
		case ':':
			p.ls.advance()
			name, _ := p.strCheckName()
			c := &ast.FuncCallExpr{Receiver: e, Method: name, Args: p.funcArgs()}
			c.SetLine(e.Line())
			e, k = c, kCall
		case '(', tkString, '{':
			c := &ast.FuncCallExpr{Func: e, Args: p.funcArgs()}
			c.SetLine(e.Line())
			e, k = c, kCall
		default:
			return e, k
		}
	}
}

func (p *parser) simpleExp() (ast.Expr, expKind) {
	t := p.ls.t
	var e ast.Expr
	k := kOther
	switch t.tok {
	case tkNumber:
		e = &ast.NumberExpr{Value: numberValue(t.num)}
	case tkString:
		e = &ast.StringExpr{Value: t.str}
	case tkNil:
		e = &ast.NilExpr{}
	case tkTrue:
		e = &ast.TrueExpr{}
	case tkFalse:
		e = &ast.FalseExpr{}
	case tkDots:
		if !p.fs.vararg {
			p.ls.syntaxError("cannot use '...' outside a vararg function")
		}
		e, k = &ast.Comma3Expr{}, kVararg
	case '{':
		return p.constructor(), kOther
	case tkFunction:
		p.ls.advance()
		b := p.body(false, p.ls.line)
		f := &ast.FunctionExpr{ParList: b.ParList, Stmts: b.Stmts}
		f.SetLine(t.line)
		f.SetLastLine(b.LastLine())
		return f, kOther
	default:
		return p.primaryExp()
	}
	e.SetLine(t.line)
	p.ls.advance()
	return e, k
}

// Operators, in lparser.c's ORDER OPR.
const (
	oprAdd = iota
	oprSub
	oprMul
	oprDiv
	oprMod
	oprPow
	oprConcat
	oprNe
	oprEq
	oprLt
	oprLe
	oprGt
	oprGe
	oprAnd
	oprOr
	oprNone
)

var priority = [...]struct{ left, right int }{
	{6, 6}, {6, 6}, {7, 7}, {7, 7}, {7, 7}, // + - * / %
	{10, 9}, {5, 4}, // ^ and .. (right associative)
	{3, 3}, {3, 3}, // ~= ==
	{3, 3}, {3, 3}, {3, 3}, {3, 3}, // < <= > >=
	{2, 2}, {1, 1}, // and or
}

const unaryPriority = 8

func binOpr(tok int) int {
	switch tok {
	case '+':
		return oprAdd
	case '-':
		return oprSub
	case '*':
		return oprMul
	case '/':
		return oprDiv
	case '%':
		return oprMod
	case '^':
		return oprPow
	case tkConcat:
		return oprConcat
	case tkNe:
		return oprNe
	case tkEq:
		return oprEq
	case '<':
		return oprLt
	case tkLe:
		return oprLe
	case '>':
		return oprGt
	case tkGe:
		return oprGe
	case tkAnd:
		return oprAnd
	case tkOr:
		return oprOr
	}
	return oprNone
}

var oprText = [...]string{"+", "-", "*", "/", "%", "^", "..", "~=", "==", "<", "<=", ">", ">=", "and", "or"}

func binaryExpr(op int, lhs, rhs ast.Expr) ast.Expr {
	var e ast.Expr
	switch op {
	case oprAnd, oprOr:
		e = &ast.LogicalOpExpr{Operator: oprText[op], Lhs: lhs, Rhs: rhs}
	case oprNe, oprEq, oprLt, oprLe, oprGt, oprGe:
		e = &ast.RelationalOpExpr{Operator: oprText[op], Lhs: lhs, Rhs: rhs}
	case oprConcat:
		e = &ast.StringConcatOpExpr{Lhs: lhs, Rhs: rhs}
	default:
		e = &ast.ArithmeticOpExpr{Operator: oprText[op], Lhs: lhs, Rhs: rhs}
	}
	e.SetLine(lhs.Line())
	return e
}

// subExpr reads (simpleexp | unop subexpr) { binop subexpr } while the
// operators bind tighter than limit; it returns the first operator it
// left.
func (p *parser) subExpr(limit int) (ast.Expr, expKind, int) {
	p.enterLevel()
	var e ast.Expr
	var k expKind
	switch p.ls.t.tok {
	case tkNot, '-', '#':
		tok := p.ls.t.tok
		p.ls.advance()
		operand, _, _ := p.subExpr(unaryPriority)
		switch tok {
		case tkNot:
			e = &ast.UnaryNotOpExpr{Expr: operand}
		case '-':
			e = &ast.UnaryMinusOpExpr{Expr: operand}
		default:
			e = &ast.UnaryLenOpExpr{Expr: operand}
		}
		e.SetLine(operand.Line())
	default:
		e, k = p.simpleExp()
	}
	op := binOpr(p.ls.t.tok)
	for op != oprNone && priority[op].left > limit {
		p.ls.advance()
		rhs, _, next := p.subExpr(priority[op].right)
		e, k = binaryExpr(op, e, rhs), kOther
		op = next
	}
	p.leaveLevel()
	return e, k, op
}

func (p *parser) exprKind() (ast.Expr, expKind) {
	e, k, _ := p.subExpr(0)
	return e, k
}

func (p *parser) expr() ast.Expr {
	e, _, _ := p.subExpr(0)
	return e
}

// Statements.

func blockFollow(tok int) bool {
	switch tok {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

func (p *parser) chunk() []ast.Stmt {
	stmts := []ast.Stmt{}
	p.enterLevel()
	for last := false; !last && !blockFollow(p.ls.t.tok); {
		var s ast.Stmt
		s, last = p.statement()
		stmts = append(stmts, s)
		p.testNext(';')
	}
	p.leaveLevel()
	return stmts
}

func (p *parser) block() []ast.Stmt {
	var bl blockCnt
	p.enterBlock(&bl, false)
	stmts := p.chunk()
	p.leaveBlock()
	return stmts
}

// statement reads one statement; last reports a return or break, which
// must end its block.
func (p *parser) statement() (s ast.Stmt, last bool) {
	line := p.ls.line // for error messages
	tokLine := p.ls.t.line
	switch p.ls.t.tok {
	case tkIf:
		s = p.ifStat(line)
	case tkWhile:
		s = p.whileStat(line)
	case tkDo:
		p.ls.advance()
		d := &ast.DoBlockStmt{Stmts: p.block()}
		d.SetLastLine(p.ls.t.line)
		p.checkMatch(tkEnd, tkDo, line)
		s = d
	case tkFor:
		s = p.forStat(line)
	case tkRepeat:
		s = p.repeatStat(line)
	case tkFunction:
		s = p.funcStat(line)
	case tkLocal:
		p.ls.advance()
		if p.testNext(tkFunction) {
			s = p.localFunc()
		} else {
			s = p.localStat()
		}
	case tkReturn:
		s, last = p.retStat(), true
	case tkBreak:
		p.ls.advance()
		p.breakStat()
		s, last = &ast.BreakStmt{}, true
	default:
		return p.exprStat(), false // (its line is its first expression's)
	}
	s.SetLine(tokLine)
	return s, last
}

func (p *parser) cond() ast.Expr { return p.expr() }

func (p *parser) breakStat() {
	bl := p.fs.bl
	for bl != nil && !bl.breakable {
		bl = bl.prev
	}
	if bl == nil {
		p.ls.syntaxError("no loop to break")
	}
}

func (p *parser) whileStat(line int) ast.Stmt {
	p.ls.advance()
	w := &ast.WhileStmt{Condition: p.cond()}
	var bl blockCnt
	p.enterBlock(&bl, true)
	p.checkNext(tkDo)
	w.Stmts = p.block()
	w.SetLastLine(p.ls.t.line)
	p.checkMatch(tkEnd, tkWhile, line)
	p.leaveBlock()
	return w
}

func (p *parser) repeatStat(line int) ast.Stmt {
	var loop, scope blockCnt
	p.enterBlock(&loop, true)
	p.enterBlock(&scope, false)
	p.ls.advance()
	r := &ast.RepeatStmt{Stmts: p.chunk()}
	p.checkMatch(tkUntil, tkRepeat, line)
	r.Condition = p.cond() // inside the scope block
	r.SetLastLine(r.Condition.Line())
	p.leaveBlock()
	p.leaveBlock()
	return r
}

// forBody reads DO block, declaring the loop's nvars variables after its
// three hidden ones.
func (p *parser) forBody(nvars int) []ast.Stmt {
	p.adjustLocalVars(3)
	p.checkNext(tkDo)
	var bl blockCnt
	p.enterBlock(&bl, false)
	p.adjustLocalVars(nvars)
	stmts := p.block()
	p.leaveBlock()
	return stmts
}

func (p *parser) forStat(line int) ast.Stmt {
	var bl blockCnt
	p.enterBlock(&bl, true)
	p.ls.advance()
	name, _ := p.strCheckName()
	var s ast.Stmt
	switch p.ls.t.tok {
	case '=':
		p.newLocalVar("(for index)", 0)
		p.newLocalVar("(for limit)", 1)
		p.newLocalVar("(for step)", 2)
		p.newLocalVar(name, 3)
		p.checkNext('=')
		f := &ast.NumberForStmt{Name: name, Init: p.expr()}
		p.checkNext(',')
		f.Limit = p.expr()
		if p.testNext(',') {
			f.Step = p.expr()
		}
		f.Stmts = p.forBody(1)
		s = f
	case ',', tkIn:
		p.newLocalVar("(for generator)", 0)
		p.newLocalVar("(for state)", 1)
		p.newLocalVar("(for control)", 2)
		p.newLocalVar(name, 3)
		f := &ast.GenericForStmt{Names: []string{name}}
		n := 4
		for p.testNext(',') {
			name, _ := p.strCheckName()
			p.newLocalVar(name, n)
			n++
			f.Names = append(f.Names, name)
		}
		p.checkNext(tkIn)
		f.Exprs, _ = p.exprList()
		f.Stmts = p.forBody(n - 3)
		s = f
	default:
		p.ls.syntaxError("'=' or 'in' expected")
	}
	s.SetLastLine(p.ls.t.line)
	p.checkMatch(tkEnd, tkFor, line)
	p.leaveBlock()
	return s
}

// testThenBlock reads [IF | ELSEIF] cond THEN block.
func (p *parser) testThenBlock() *ast.IfStmt {
	line := p.ls.t.line
	p.ls.advance()
	s := &ast.IfStmt{Condition: p.cond()}
	p.checkNext(tkThen)
	s.Then = p.block()
	s.SetLine(line)
	return s
}

func (p *parser) ifStat(line int) ast.Stmt {
	top := p.testThenBlock()
	cur := top
	for p.ls.t.tok == tkElseif {
		next := p.testThenBlock()
		cur.Else = []ast.Stmt{next}
		cur = next
	}
	if p.ls.t.tok == tkElse {
		p.ls.advance()
		cur.Else = p.block()
	}
	top.SetLastLine(p.ls.t.line)
	p.checkMatch(tkEnd, tkIf, line)
	return top
}

func (p *parser) localFunc() ast.Stmt {
	name, _ := p.strCheckName()
	p.newLocalVar(name, 0)
	p.adjustLocalVars(1)
	b := p.body(false, p.ls.line)
	s := &ast.LocalAssignStmt{Names: []string{name}, Exprs: []ast.Expr{b}}
	s.SetLastLine(b.LastLine())
	return s
}

func (p *parser) localStat() ast.Stmt {
	s := &ast.LocalAssignStmt{Exprs: []ast.Expr{}}
	for {
		name, _ := p.strCheckName()
		p.newLocalVar(name, len(s.Names))
		s.Names = append(s.Names, name)
		if !p.testNext(',') {
			break
		}
	}
	if p.testNext('=') {
		s.Exprs, _ = p.exprList()
	}
	p.adjustLocalVars(len(s.Names))
	return s
}

func (p *parser) funcStat(line int) ast.Stmt {
	p.ls.advance()
	// funcname -> NAME {'.' NAME} [':' NAME]
	name := &ast.FuncName{}
	var f ast.Expr = p.singleVar()
	for p.ls.t.tok == '.' {
		p.ls.advance()
		key, keyLine := p.strCheckName()
		a := &ast.AttrGetExpr{Object: f, Key: p.stringExpr(key, keyLine)}
		a.SetLine(keyLine)
		f = a
	}
	needSelf := false
	if p.ls.t.tok == ':' {
		p.ls.advance()
		name.Receiver = f
		name.Method, _ = p.strCheckName()
		needSelf = true
	} else {
		name.Func = f
	}
	b := p.body(needSelf, line)
	s := &ast.FuncDefStmt{Name: name, Func: b}
	s.SetLastLine(b.LastLine())
	return s
}

func (p *parser) exprStat() ast.Stmt {
	e, k := p.primaryExp()
	if k == kCall {
		s := &ast.FuncCallStmt{Expr: e}
		s.SetLine(e.Line())
		return s
	}
	lhs := []ast.Expr{e}
	for {
		if k != kVar {
			p.ls.syntaxError("syntax error")
		}
		if !p.testNext(',') {
			break
		}
		e, k = p.primaryExp()
		p.checkLimit(len(lhs), maxCCalls-p.nCcalls, "variables in assignment")
		lhs = append(lhs, e)
	}
	p.checkNext('=')
	s := &ast.AssignStmt{Lhs: lhs}
	s.Rhs, _ = p.exprList()
	s.SetLine(lhs[0].Line())
	return s
}

func (p *parser) retStat() ast.Stmt {
	p.ls.advance()
	s := &ast.ReturnStmt{}
	if !blockFollow(p.ls.t.tok) && p.ls.t.tok != ';' {
		s.Exprs, _ = p.exprList()
	}
	return s
}
