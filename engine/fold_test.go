package engine

import "testing"

// TestFoldASCII: LowerASCII and EqualFoldASCII change and compare the
// case of ASCII letters only, as Redis's sdstolower and strcasecmp: the
// Kelvin sign (U+212A), which Unicode lowers to "k", and the long s
// (U+017F), which Unicode folds with "s", stay themselves, and bytes that
// are no UTF-8 are kept as they are.
func TestFoldASCII(t *testing.T) {
	for _, tc := range []struct{ in, lower string }{
		{"KeepTTL", "keepttl"},
		{"keepttl", "keepttl"},
		{"\u212aEEPTTL", "\u212aeepttl"},
		{"\u017fAVE", "\u017fave"},
		{"A\xffB", "a\xffb"},
		{"", ""},
	} {
		if got := LowerASCII(tc.in); got != tc.lower {
			t.Errorf("LowerASCII(%q) = %q, want %q", tc.in, got, tc.lower)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"KEEPTTL", "keepttl", true},
		{"KeEpTtL", "kEePtTl", true},
		{"\u212aEEPTTL", "keepttl", false},
		{"\u212aEEPTTL", "\u212aeepttl", true},
		{"\u017fave", "save", false},
		{"SAVE", "save ", false},
		{"[", "{", false}, // not letters: 0x5b is no 0x7b
		{"\xff", "\xdf", false},
	} {
		if got := EqualFoldASCII(tc.a, tc.b); got != tc.want {
			t.Errorf("EqualFoldASCII(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if s := "no upper case"; LowerASCII(s) != s {
		t.Error("LowerASCII changed a lower-case string")
	}
}

// TestEqFold_StopsAtNUL: eqFold is strcasecmp(arg, word) == 0, which
// reads the argument as a C string: "nx\x00z" is NX, "n\x00x" is no NX;
// eqFoldAll compares every byte; lowerC is the word a strcasecmp switch
// sees.
func TestEqFold_StopsAtNUL(t *testing.T) {
	for _, tc := range []struct {
		arg, word string
		fold, all bool
	}{
		{"NX", "nx", true, true},
		{"nx\x00z", "nx", true, false},
		{"NX\x00", "nx", true, false},
		{"n\x00x", "nx", false, false},
		{"\x00nx", "nx", false, false},
		{"nxx\x00", "nx", false, false},
		{"n", "nx", false, false},
		{"nx\x01", "nx", false, false},
		{"", "nx", false, false},
	} {
		if got := eqFold([]byte(tc.arg), tc.word); got != tc.fold {
			t.Errorf("eqFold(%q, %q) = %v, want %v", tc.arg, tc.word, got, tc.fold)
		}
		if got := eqFoldAll([]byte(tc.arg), tc.word); got != tc.all {
			t.Errorf("eqFoldAll(%q, %q) = %v, want %v", tc.arg, tc.word, got, tc.all)
		}
	}
	for in, want := range map[string]string{"WithScores\x00x": "withscores", "\x00REV": "", "REV": "rev", "": ""} {
		if got := lowerC([]byte(in)); got != want {
			t.Errorf("lowerC(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cstr("+get\x00x"); got != "+get" {
		t.Errorf("cstr(%q) = %q, want %q", "+get\x00x", got, "+get")
	}
}
