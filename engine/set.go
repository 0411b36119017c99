package engine

import (
	"slices"
	"strconv"
)

// Redis 7.0's set-max-intset-entries default.
const setMaxIntsetEntries = 512

// set is the value of a set key. Like Redis 7.0 it reports the "intset"
// encoding while every member is an integer (as string2ll reads one) and
// there are at most 512 of them, and "hashtable" from then on; an intset
// is walked in ascending numeric order, as Redis's sorted integer array
// is, a hashtable in the map's order (Redis's is its dict's: clients may
// not rely on either).
//
// An empty set never stays in the keyspace: commands delete the key when
// they remove its last member.
type set struct {
	m      map[string]struct{}
	intset bool
}

// newSet returns an empty set whose encoding follows its first member.
func newSet(first string) *set {
	_, isInt := parseInt([]byte(first))
	return &set{m: make(map[string]struct{}), intset: isInt}
}

// Len returns the number of members.
func (s *set) Len() int { return len(s.m) }

// Encoding is what OBJECT ENCODING reports.
func (s *set) Encoding() string {
	if s.intset {
		return "intset"
	}
	return "hashtable"
}

// Has reports whether m is a member.
func (s *set) Has(m string) bool {
	_, ok := s.m[m]
	return ok
}

// Add adds m, reporting whether it was new; a member that is no integer,
// or one past 512, converts an intset to a hashtable, as setTypeAdd does.
func (s *set) Add(m string) bool {
	if _, ok := s.m[m]; ok {
		return false
	}
	if s.intset {
		if _, isInt := parseInt([]byte(m)); !isInt || len(s.m)+1 > setMaxIntsetEntries {
			s.intset = false
		}
	}
	s.m[m] = struct{}{}
	return true
}

// Del removes m, reporting whether it was there.
func (s *set) Del(m string) bool {
	if _, ok := s.m[m]; !ok {
		return false
	}
	delete(s.m, m)
	return true
}

// Members returns the members in the set's order.
func (s *set) Members() []string {
	out := make([]string, 0, len(s.m))
	for m := range s.m {
		out = append(out, m)
	}
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
	c := &set{m: make(map[string]struct{}, len(s.m)), intset: s.intset}
	for m := range s.m {
		c.m[m] = struct{}{}
	}
	return c
}
