package engine

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// set is the value of a set key. Like Redis 7.0 it reports the "intset"
// encoding while every member is an integer (as string2ll reads one) and
// there are at most set-max-intset-entries of them (512), and
// "hashtable" from then on; an intset
// is walked in ascending numeric order, as Redis's sorted integer array
// is, a hashtable in the map's order (Redis's is its dict's: clients may
// not rely on either).
//
// The members are kept in a slice too, indexed by a map, so that a random
// member (SPOP, SRANDMEMBER) is O(1); a removal moves the last member
// into the hole.
//
// An empty set never stays in the keyspace: commands delete the key when
// they remove its last member.
type set struct {
	idx    map[string]int // member to its index in list
	list   []string
	intset bool
	// width is the bytes an integer of the intset takes, as Redis's
	// intset would hold them (DUMP writes them so): the widest member
	// added decides it, and removals never narrow it (intset.go).
	width uint8
}

// newSet returns an empty set whose encoding follows its first member.
func newSet(first string) *set {
	_, isInt := parseInt([]byte(first))
	return &set{idx: make(map[string]int), intset: isInt}
}

// Len returns the number of members.
func (s *set) Len() int { return len(s.list) }

// Encoding is what OBJECT ENCODING reports.
func (s *set) Encoding() string {
	if s.intset {
		return "intset"
	}
	return "hashtable"
}

// Has reports whether m is a member.
func (s *set) Has(m string) bool {
	_, ok := s.idx[m]
	return ok
}

// Add adds m, reporting whether it was new; a member that is no integer,
// or one past set-max-intset-entries, converts an intset to a hashtable,
// as setTypeAdd does.
func (s *set) Add(m string, lim *EncodingLimits) bool {
	if _, ok := s.idx[m]; ok {
		return false
	}
	if s.intset {
		if v, isInt := parseInt([]byte(m)); !isInt || int64(len(s.list)+1) > lim.SetMaxIntsetEntries {
			s.intset = false
		} else {
			s.width = max(s.width, intsetWidth(v))
		}
	}
	s.idx[m] = len(s.list)
	s.list = append(s.list, m)
	return true
}

// Del removes m, reporting whether it was there.
func (s *set) Del(m string) bool {
	i, ok := s.idx[m]
	if !ok {
		return false
	}
	last := len(s.list) - 1
	if i != last {
		s.list[i] = s.list[last]
		s.idx[s.list[i]] = i
	}
	s.list[last] = ""
	s.list = s.list[:last]
	delete(s.idx, m)
	if cap(s.list) > 64 && len(s.list) < cap(s.list)/4 {
		s.list = slices.Clip(slices.Clone(s.list)) // give a shrunk set's memory back
	}
	return true
}

// randomMember returns a member of the non-empty set, uniformly.
func (s *set) randomMember() string { return s.list[rand.IntN(len(s.list))] }

// Members returns the members in the set's order.
func (s *set) Members() []string {
	out := slices.Clone(s.list)
	if s.intset {
		slices.SortFunc(out, func(a, b string) int {
			x, _ := strconv.ParseInt(a, 10, 64)
			y, _ := strconv.ParseInt(b, 10, 64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
	}
	return out
}

// clone is a deep copy (COPY).
func (s *set) clone() *set {
	c := &set{idx: make(map[string]int, len(s.idx)), list: slices.Clone(s.list), intset: s.intset, width: s.width}
	for m, i := range s.idx {
		c.idx[m] = i
	}
	return c
}
