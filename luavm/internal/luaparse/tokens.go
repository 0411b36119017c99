package luaparse

import "strconv"

// Tokens returns the tokens of src as this lexer reads them, for tests
// that check another reader of Lua text against it (luavm's lock-script
// matcher): a reserved word or symbol as its text ("if", "==", "("), a
// name as "name:" and the name, a string as "string:" and its value, a
// number as "number:" and its value formatted with 'g'. A lexical error
// (an unfinished string...) is returned as err.
func Tokens(src []byte) (toks []string, err error) {
	var ls lexer
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*syntaxError)
			if !ok {
				panic(r)
			}
			toks, err = nil, se
		}
	}()
	ls.init(src, "tokens")
	for {
		var t token
		switch tok := ls.llex(&t); tok {
		case tkEOS:
			return toks, nil
		case tkName:
			toks = append(toks, "name:"+t.str)
		case tkString:
			toks = append(toks, "string:"+t.str)
		case tkNumber:
			toks = append(toks, "number:"+strconv.FormatFloat(t.num, 'g', -1, 64))
		default:
			toks = append(toks, token2str(tok))
		}
	}
}
