package engine

// list is the value of a list key: a deque of strings in a ring buffer,
// with O(1) push and pop at both ends and O(1) access by index. Its
// capacity is a power of two; it shrinks when it becomes sparse, so a list
// that was once long does not pin its buffer.
//
// An empty list never stays in the keyspace: commands delete the key when
// they remove its last element, as Redis does.
type list struct {
	buf  []string // len(buf) is 0 or a power of two
	head int      // index in buf of element 0
	n    int
}

const listMinCap = 8

// Len returns the number of elements.
func (l *list) Len() int { return l.n }

// slot returns the buffer index of element i.
func (l *list) slot(i int) int { return (l.head + i) & (len(l.buf) - 1) }

// At returns element i (0 <= i < Len).
func (l *list) At(i int) string { return l.buf[l.slot(i)] }

// Set replaces element i (0 <= i < Len).
func (l *list) Set(i int, s string) { l.buf[l.slot(i)] = s }

// resize moves the elements into a buffer of capacity c (a power of two,
// at least n), element 0 first.
func (l *list) resize(c int) {
	nb := make([]string, c)
	if l.n > 0 {
		end := l.head + l.n
		if end <= len(l.buf) {
			copy(nb, l.buf[l.head:end])
		} else {
			k := copy(nb, l.buf[l.head:])
			copy(nb[k:], l.buf[:end-len(l.buf)])
		}
	}
	l.buf, l.head = nb, 0
}

func (l *list) grow() {
	if l.n < len(l.buf) {
		return
	}
	c := 2 * len(l.buf)
	if c < listMinCap {
		c = listMinCap
	}
	l.resize(c)
}

// shrink halves the buffer while it is at most a quarter full.
func (l *list) shrink() {
	c := len(l.buf)
	for c > listMinCap && l.n <= c/4 {
		c /= 2
	}
	if c != len(l.buf) {
		l.resize(c)
	}
}

// PushBack appends s.
func (l *list) PushBack(s string) {
	l.grow()
	l.buf[l.slot(l.n)] = s
	l.n++
}

// PushFront prepends s.
func (l *list) PushFront(s string) {
	l.grow()
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = s
	l.n++
}

// PopFront removes and returns element 0 (Len > 0).
func (l *list) PopFront() string {
	s := l.buf[l.head]
	l.buf[l.head] = ""
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	l.shrink()
	return s
}

// PopBack removes and returns the last element (Len > 0).
func (l *list) PopBack() string {
	i := l.slot(l.n - 1)
	s := l.buf[i]
	l.buf[i] = ""
	l.n--
	l.shrink()
	return s
}

// Pop removes an element from the head (left) or the tail.
func (l *list) Pop(left bool) string {
	if left {
		return l.PopFront()
	}
	return l.PopBack()
}

// Push adds an element at the head (left) or the tail.
func (l *list) Push(s string, left bool) {
	if left {
		l.PushFront(s)
	} else {
		l.PushBack(s)
	}
}

// Trim removes left elements from the head and right from the tail.
func (l *list) Trim(left, right int) {
	for ; left > 0 && l.n > 0; left-- {
		l.buf[l.head] = ""
		l.head = (l.head + 1) & (len(l.buf) - 1)
		l.n--
	}
	for ; right > 0 && l.n > 0; right-- {
		l.buf[l.slot(l.n-1)] = ""
		l.n--
	}
	l.shrink()
}

// Filter keeps, in order, the elements for which keep returns true. It
// visits elements from the head, or from the tail when reverse is set.
func (l *list) Filter(reverse bool, keep func(s string) bool) {
	kept := make([]string, 0, l.n)
	if reverse {
		for i := l.n - 1; i >= 0; i-- {
			if s := l.At(i); keep(s) {
				kept = append(kept, s)
			}
		}
		for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
			kept[i], kept[j] = kept[j], kept[i]
		}
	} else {
		for i := 0; i < l.n; i++ {
			if s := l.At(i); keep(s) {
				kept = append(kept, s)
			}
		}
	}
	l.buf, l.head, l.n = nil, 0, 0
	c := listMinCap
	for c < len(kept) {
		c *= 2
	}
	l.buf = make([]string, c)
	copy(l.buf, kept)
	l.n = len(kept)
}

// Insert puts s before element i (0 <= i <= Len), moving the shorter side.
func (l *list) Insert(i int, s string) {
	if i == 0 {
		l.PushFront(s)
		return
	}
	if i == l.n {
		l.PushBack(s)
		return
	}
	l.grow()
	if i < l.n/2 {
		// shift elements [0, i) one slot towards the head
		l.head = (l.head - 1) & (len(l.buf) - 1)
		l.n++
		for j := 0; j < i; j++ {
			l.buf[l.slot(j)] = l.buf[l.slot(j+1)]
		}
	} else {
		// shift elements [i, n) one slot towards the tail
		for j := l.n; j > i; j-- {
			l.buf[l.slot(j)] = l.buf[l.slot(j-1)]
		}
		l.n++
	}
	l.buf[l.slot(i)] = s
}
