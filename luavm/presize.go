package luavm

import (
	"reflect"
	"strconv"
	"weak"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// The sizes Lua 5.1 gives a table constructor's table.
//
// Lua 5.1 makes the table of {1, 2, x = 1, y = 2} with room for its list
// items in the array part and its other fields in the hash part (OP_NEWTABLE's
// sizes, luaO_int2fb's rounding included), then sets the fields: their keys
// collide where they would not in a table grown one key at a time, and
// next(t, 4) of {1, 2, 3} is an error where it is not once t[1], t[2] and
// t[3] were assigned. gopher-lua keeps no trace of it, so in a chunk that
// may traverse a table (one naming pairs, next, foreach, encode or pack,
// or making a table with a map or set field, a RESP3 reply's), each
// table constructor with fields is wrapped in a call to
// presizeMarker's function, which notes the table's sizes for the
// models of pairs51.go and returns it: about 0.1 µs a constructor run,
// in those chunks only. The notes are weak (they keep no table alive) and
// dropped when a run starts.

// presizeMarker stands for the noting function in a chunk until it is
// compiled (coerce.go's markers).
const presizeMarker = "\x00tumbler:presize\x00"

// presizes notes the constructors' tables of a run.
type presizes struct {
	m     map[weak.Pointer[lua.LTable]]presize
	sweep int // the size at which to drop the entries of tables gone
}

// presize is what a constructor made: the sizes of the array and hash
// parts Lua 5.1 gives it, the length of its list (its array part's
// length once OP_SETLIST has set a call's values), and how many of
// gopher-lua's keys its other fields set.
type presize struct{ na, nh, list, keys int32 }

func (p *presizes) add(t *lua.LTable, s presize) {
	if p.m == nil {
		p.m = make(map[weak.Pointer[lua.LTable]]presize)
		p.sweep = 1024
	}
	if len(p.m) >= p.sweep {
		for k := range p.m {
			if k.Value() == nil {
				delete(p.m, k)
			}
		}
		p.sweep = max(1024, 2*len(p.m))
	}
	p.m[weak.Make(t)] = s
}

// get is what made t, if a constructor did in this run.
func (p *presizes) get(t *lua.LTable) (presize, bool) {
	if p == nil || len(p.m) == 0 {
		return presize{}, false
	}
	s, ok := p.m[weak.Make(t)]
	return s, ok
}

func (p *presizes) reset() {
	if len(p.m) > 0 {
		*p = presizes{}
	}
}

// presize is presizeMarker's function: presize(t, code) notes what made
// t (code: presizeCode's) and returns t.
func (vm *VM) presize(L *lua.LState) int {
	if t, ok := L.Get(1).(*lua.LTable); ok && tableFieldsOK {
		c, _ := L.Get(2).(lua.LNumber)
		code := uint64(c) - 1
		na, nh := int32(code&(1<<24-1)), int32(code>>24&(1<<26-1))
		s := presize{na: na, nh: nh, list: na, keys: int32(len(tableKeys(t)))}
		if code>>50 != 0 { // the list ends with a call's values
			s.list = int32(len(tableArray(t)))
		}
		vm.presized.add(t, s)
	}
	L.SetTop(1)
	return 1
}

// int2fb and fb2int are Lua 5.1's luaO_int2fb and luaO_fb2int: the size
// a constructor's table gets for n items (x < 16: n, then rounded up to
// 3 significant bits).
func int2fb(x int) int {
	e := 0
	for x >= 16 {
		x = (x + 1) >> 1
		e++
	}
	if x < 8 {
		return x
	}
	return ((e + 1) << 3) | (x - 8)
}

func fb2int(x int) int {
	e := (x >> 3) & 31
	if e == 0 {
		return x
	}
	return ((x & 7) + 8) << (e - 1)
}

// rewriteConstructors rewrites the table constructors of a chunk, in one
// walk: those gopher-lua compiles wrong (longtable.go), and, in a chunk
// that may traverse a table, each in presizeMarker's call, with the sizes
// Lua 5.1's parser gives it; none that puts a marker in when the chunk
// has one of its own (own: wrapCoercions). It reports whether it wrapped
// any (sized) and whether it used longTableMarker (long).
func rewriteConstructors(stmts []ast.Stmt, own bool) (sized, long bool) {
	var w constructorWalker
	walkStmts(&w, stmts)
	sized = w.traverses && !own && len(w.tables) > 0
	// the innermost first: an outer constructor's rewrite (longtable.go)
	// moves its fields' values out of the places the walker noted
	for i := len(w.tables) - 1; i >= 0; i-- {
		at := w.tables[i]
		t := (*at).(*ast.TableExpr)
		if e := fixConstructor(t, !own); e != t {
			*at, long = e, true
		}
		if sized {
			*at = presizeCall(t, *at)
		}
	}
	return sized, long
}

// presizeCall is the call presizeMarker(e, code) of constructor t (e, or
// what stands for it), code the sizes Lua 5.1's parser gives t, and
// whether its list ends with a call's values (presize), in one number:
// never 0, which would take the place of a -0 of the chunk in
// gopher-lua's constants.
func presizeCall(t *ast.TableExpr, e ast.Expr) ast.Expr {
	na, nh, mr := 0, 0, 0
	for _, f := range t.Fields {
		if f.Key == nil {
			na++
		} else {
			nh++
		}
	}
	if n := len(t.Fields); n > 0 && t.Fields[n-1].Key == nil && multret(t.Fields[n-1].Value) {
		na-- // lparser.c's lastlistfield: set with the call's values
		mr = 1
	}
	na, nh = min(fb2int(int2fb(na)), 1<<24-1), min(fb2int(int2fb(nh)), 1<<26-1)
	code := &ast.NumberExpr{Value: strconv.FormatUint(1+uint64(na)+uint64(nh)<<24+uint64(mr)<<50, 10)}
	code.SetLine(e.Line())
	code.SetLastLine(e.LastLine())
	call := markerCall(presizeMarker, e).(*ast.FuncCallExpr)
	call.Args = append(call.Args, code)
	return call
}

func multret(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		return !e.AdjustRet
	case *ast.Comma3Expr:
		return !e.AdjustRet
	}
	return false
}

// constructorWalker finds the table constructors with fields (the places
// that hold them, to replace) and whether the chunk may traverse a table.
type constructorWalker struct {
	tables    []*ast.Expr
	traverses bool
}

func (w *constructorWalker) stmt(s ast.Stmt) { w.slots(s) }

func (w *constructorWalker) expr(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if e.Value == "pairs" || e.Value == "next" {
			w.traverses = true
		}
	case *ast.StringExpr:
		switch e.Value {
		case "pairs", "next", "foreach", "encode", "pack":
			w.traverses = true
		}
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if k, ok := f.Key.(*ast.StringExpr); ok && (k.Value == "map" || k.Value == "set") {
				w.traverses = true // a RESP3 map or set reply, written in lua_next's order
			}
			w.place(&f.Key)
			w.place(&f.Value)
		}
	default:
		w.slots(e)
	}
	return true
}

var (
	exprType  = reflect.TypeFor[ast.Expr]()
	exprsType = reflect.TypeFor[[]ast.Expr]()
)

// slots notes the constructors among the expressions of statement or
// expression n (a pointer to an ast struct): its fields that hold one
// or a list of them, found by reflect (it runs as a chunk compiles).
func (w *constructorWalker) slots(n any) {
	v := reflect.ValueOf(n)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Type() {
		case exprType:
			w.place(f.Addr().Interface().(*ast.Expr))
		case exprsType:
			for j := range f.Len() {
				w.place(f.Index(j).Addr().Interface().(*ast.Expr))
			}
		}
	}
}

// place notes *at if it is a constructor with fields.
func (w *constructorWalker) place(at *ast.Expr) {
	if t, ok := (*at).(*ast.TableExpr); ok && len(t.Fields) > 0 {
		w.tables = append(w.tables, at)
	}
}
