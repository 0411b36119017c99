package luavm

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Table constructors gopher-lua's compiler gets wrong (compile.go's
// compileTableExpr, v1.1.2).
//
// Lua 5.1 evaluates a constructor's fields in order; it stores a record
// field ("[k] = v", "k = v") when met, and its list items 50 at a time
// (LFIELDS_PER_FLUSH): the 50th, 100th... item's value is evaluated, then
// OP_SETLIST stores the pending items before the next field
// (lparser.c's closelistfield), and the last ones, with all the values of
// a call or "..." ending the list, after the last field (lastlistfield).
// gopher-lua stores the same way, but checks whether to flush after every
// field, by the count of list items alone:
//
//   - a record field after the 50th, 100th... item (before the next
//     item) stores that block of 50 again, from registers the field may
//     have used for its key and value: "{<50 items>, [28] = 1}" left
//     t[28] the 28th item, "{<50 items>, x = f()}" set t[1] to f()'s
//     result;
//   - a call or "..." ending the list after exactly 50, 100... items has
//     its values stored from the start of the last block, not after it:
//     "{<50 items>, unpack({1, 2, 3})}" set t[1..3], not t[51..53];
//   - a record field ending the constructor whose value is a call or
//     "..." has the last flush take everything up to the stack's top,
//     the field's value included: "{1, x = f()}" set t[2].
//
// The last is undone by marking the value adjusted to one (AdjustRet,
// which gopher-lua reads for nothing else there). For the first two
// (constructors of 50 list items or more only), the fields up to the
// first place that goes wrong stay a constructor, and the rest are given
// to longTableMarker's function, which stores them as Lua 5.1 does:
//
//	{<50 items>, [k] = v, x, f()}  →  M({<50 items>}, "rlm", 50, k, v, x, f())
//
// The arguments are evaluated in the fields' order, as the fields were.
// A record's store can fail (a nil or NaN key): a record whose key is not
// a constant ends the call there, the rest going to the function the call
// returns, and so on, so that the error comes after that field's value
// is evaluated and before the next field's, with about the line Lua 5.1
// gives it (that of the value's last token; here the last line a part of
// the value starts on); a call takes at most longTableArgs values, so
// that its registers stay few, and a call or "..." that is not last in
// the constructor is marked adjusted to one value, as it may end a call's
// arguments:
//
//	M(t, code, n, <fields>)(<fields>)(<fields>)
//
// The table is reachable by no code until the last call returns it, so
// the stores done later than Lua does them cannot be seen; they are done
// in Lua 5.1's order (a block's items in ascending order, as gopher-lua's
// OP_SETLIST), which gives the table gopher-lua makes of a constructor
// it compiles right: its array part and its keys' order, for the models
// of pairs51.go.

// longTableMarker stands for longTableFn in a chunk until it is compiled
// (coerce.go's markers).
const longTableMarker = "\x00tumbler:long-table\x00"

// longTableFn is the function longTableMarker becomes.
var longTableFn = &lua.LFunction{IsG: true, GFunction: longTable, Env: coercionEnv}

// longTableArgs bounds the fields' values one call of the chain takes.
const longTableArgs = 40

// The codes of longTable's fields: a list item, a record field, and a
// call or "..." ending the list, all its values; and the end of a call's.
const (
	ltItem   = 'l'
	ltRecord = 'r'
	ltMulti  = 'm'
	ltEnd    = '|'
)

// fixConstructor applies the rewrites above to constructor t (the second
// if long): it returns what stands for t, t itself if not the second.
func fixConstructor(t *ast.TableExpr, long bool) ast.Expr {
	adjustLastRecord(t)
	if long {
		if e := longTableCall(t); e != nil {
			return e
		}
	}
	return t
}

// adjustLastRecord marks the value of a record field ending t, after list
// items, adjusted to one value.
func adjustLastRecord(t *ast.TableExpr) {
	n := len(t.Fields)
	if n < 2 || t.Fields[n-1].Key == nil {
		return
	}
	items := false
	for _, f := range t.Fields {
		items = items || f.Key == nil
	}
	if items {
		adjustOne(t.Fields[n-1].Value)
	}
}

// adjustOne marks e, if a call or "...", adjusted to one value.
func adjustOne(e ast.Expr) {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		e.AdjustRet = true
	case *ast.Comma3Expr:
		e.AdjustRet = true
	}
}

// longTableCall is the chain of longTableMarker's calls that stands for
// t, or nil if gopher-lua compiles t right.
func longTableCall(t *ast.TableExpr) ast.Expr {
	items, at := 0, -1
	for i, f := range t.Fields {
		if items > 0 && items%50 == 0 && (f.Key != nil || i == len(t.Fields)-1 && multret(f.Value)) {
			at = i
			break
		}
		if f.Key == nil {
			items++
		}
	}
	if at < 0 {
		return nil
	}
	head := &ast.TableExpr{Fields: t.Fields[:at]}
	head.SetLine(t.Line())
	head.SetLastLine(t.LastLine())
	adjustOne(head.Fields[at-1].Value) // (one value: it is not last in t)

	var code []byte
	var args [][]ast.Expr
	var lines []int
	var seg []ast.Expr
	end := func(line int) {
		args = append(args, seg)
		lines = append(lines, line)
		seg = nil
	}
	rest := t.Fields[at:]
	for i, f := range rest {
		if len(seg) >= longTableArgs {
			end(t.Line())
		}
		if len(seg) == 0 && len(args) > 0 {
			code = append(code, ltEnd)
		}
		switch {
		case f.Key == nil && i == len(rest)-1 && multret(f.Value):
			code = append(code, ltMulti)
			seg = append(seg, f.Value)
		case f.Key == nil:
			code = append(code, ltItem)
			adjustOne(f.Value)
			seg = append(seg, f.Value)
		default:
			adjustOne(f.Key)
			adjustOne(f.Value)
			seg = append(seg, f.Key, f.Value)
			code = append(code, ltRecord)
			if !constantKey(f.Key) {
				end(lastLine(f.Value)) // the store's error, if any, before the next field
			}
		}
	}
	if len(seg) > 0 || len(args) == 0 {
		end(t.Line())
	}

	node := func(e ast.Expr, line int) ast.Expr {
		e.SetLine(line)
		e.SetLastLine(line)
		return e
	}
	var call ast.Expr = node(&ast.StringExpr{Value: longTableMarker}, t.Line())
	for i, seg := range args {
		if i == 0 {
			seg = append([]ast.Expr{head,
				node(&ast.StringExpr{Value: string(code)}, t.Line()),
				node(&ast.NumberExpr{Value: strconv.Itoa(items)}, t.Line())}, seg...)
		}
		call = node(&ast.FuncCallExpr{Func: call, Args: seg}, lines[i])
	}
	return call
}

// lastLine is the last line of e's parts: that of its last token, where
// that token ends a part (Lua 5.1 gives a record's store that line).
func lastLine(e ast.Expr) int {
	var v lastLineVisitor
	walkExpr(&v, e)
	return int(v)
}

type lastLineVisitor int

func (v *lastLineVisitor) expr(e ast.Expr) bool {
	*v = lastLineVisitor(max(int(*v), e.Line(), e.LastLine()))
	_, fn := e.(*ast.FunctionExpr)
	return !fn // (its last line is its "end"'s)
}

func (*lastLineVisitor) stmt(ast.Stmt) {}

// constantKey reports whether a record field's key k is a constant that
// can key a table (not nil; a number literal is never NaN).
func constantKey(k ast.Expr) bool {
	switch k.(type) {
	case *ast.StringExpr, *ast.NumberExpr, *ast.TrueExpr, *ast.FalseExpr:
		return true
	}
	return false
}

// longTableState is a constructor's table as longTable's calls build it.
type longTableState struct {
	t       *lua.LTable
	code    string
	next    int            // the next field's code
	items   int            // the list items stored
	pending []lua.LValue   // and those not yet
	more    *lua.LFunction // the function that takes the next fields
}

// longTable is longTableMarker's function: longTable(t, code, n, ...)
// stores the values of the fields code tells in t, whose list has n items,
// and returns t, or, when code has more fields, a function that takes the
// next ones.
func longTable(L *lua.LState) int {
	s := &longTableState{t: L.CheckTable(1), code: L.CheckString(2), items: L.CheckInt(3)}
	return s.store(L, 4)
}

// store stores the fields whose values are L's arguments from the from-th.
func (s *longTableState) store(L *lua.LState, from int) int {
	top, i := L.GetTop(), from
	for ; s.next < len(s.code) && s.code[s.next] != ltEnd; s.next++ {
		switch s.code[s.next] {
		case ltItem:
			s.pending = append(s.pending, L.Get(i))
			i++
			if len(s.pending) == 50 {
				s.flush()
			}
		case ltRecord:
			L.SetTable(s.t, L.Get(i), L.Get(i+1))
			i += 2
		case ltMulti:
			for ; i <= top; i++ {
				s.pending = append(s.pending, L.Get(i))
			}
		}
	}
	if s.next < len(s.code) {
		s.next++ // (ltEnd)
		if s.more == nil {
			s.more = &lua.LFunction{IsG: true, Env: coercionEnv, GFunction: func(L *lua.LState) int {
				return s.store(L, 1)
			}}
		}
		L.Push(s.more)
		return 1
	}
	s.flush()
	L.Push(s.t)
	return 1
}

// flush stores the pending list items, as OP_SETLIST does.
func (s *longTableState) flush() {
	for _, v := range s.pending {
		s.items++
		s.t.RawSetInt(s.items, v)
	}
	s.pending = s.pending[:0]
}
