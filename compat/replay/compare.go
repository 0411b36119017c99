package replay

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tumblerdb/tumbler/compat/diff"
)

// Compare checks got against want by the step's mode. It returns nil when
// they agree and otherwise says how they differ.
func Compare(st Step, want, got []byte) error {
	switch st.Mode {
	case ModeExact:
		if !bytes.Equal(want, got) {
			return errors.New("replies differ")
		}
	case ModeApprox:
		if !diff.Approx(want, got, st.Tol) {
			return fmt.Errorf("replies differ beyond ±%d", st.Tol)
		}
	case ModeUnordered:
		if !diff.SameMultiset(want, got) {
			return errors.New("replies differ as multisets")
		}
	case ModeTypeOnly:
		if len(want) == 0 || len(got) == 0 || want[0] != got[0] {
			return errors.New("reply types differ")
		}
	case ModeFields:
		return compareFields(want, got, st.Fields)
	default:
		return fmt.Errorf("unknown mode %d", st.Mode)
	}
	return nil
}

// compareFields compares two maps (RESP3 %) or flat key/value arrays
// (RESP2 *, as HELLO 2 replies): the same keys in the same order, every
// value byte for byte except those of the ignored fields, whose values need
// only have the same type.
func compareFields(want, got []byte, ignore []string) error {
	hw, ew, ok1 := diff.Elements(want)
	hg, eg, ok2 := diff.Elements(got)
	if !ok1 || !ok2 || (want[0] != '%' && want[0] != '*') {
		if bytes.Equal(want, got) {
			return nil
		}
		return errors.New("replies differ (not maps)")
	}
	if !bytes.Equal(hw, hg) || len(ew) != len(eg) {
		return fmt.Errorf("map headers differ: %q vs %q", hw, hg)
	}
	if len(ew)%2 != 0 {
		return errors.New("an odd number of elements is no list of fields")
	}
	skip := map[string]bool{}
	for _, f := range ignore {
		skip[f] = true
	}
	for i := 0; i < len(ew); i += 2 {
		if !bytes.Equal(ew[i], eg[i]) {
			return fmt.Errorf("field %d: keys differ: %q vs %q", i/2+1, ew[i], eg[i])
		}
		key, _ := stringOf(ew[i])
		if skip[key] {
			if len(ew[i+1]) == 0 || len(eg[i+1]) == 0 || ew[i+1][0] != eg[i+1][0] {
				return fmt.Errorf("field %q: value types differ: %q vs %q", key, ew[i+1], eg[i+1])
			}
			continue
		}
		if !bytes.Equal(ew[i+1], eg[i+1]) {
			return fmt.Errorf("field %q: values differ: %q vs %q", key, ew[i+1], eg[i+1])
		}
	}
	return nil
}

// stringOf returns the text of a simple string or bulk string frame.
func stringOf(raw []byte) (string, bool) {
	if len(raw) < 3 {
		return "", false
	}
	switch raw[0] {
	case '+':
		return string(raw[1 : len(raw)-2]), true
	case '$':
		i := bytes.Index(raw, []byte("\r\n"))
		if i < 0 || i+2 > len(raw)-2 {
			return "", false
		}
		return string(raw[i+2 : len(raw)-2]), true
	}
	return "", false
}
