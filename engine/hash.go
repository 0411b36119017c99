package engine

// hash is the value of a hash key. Like Redis it starts compact: a slice
// of field/value pairs in insertion order ("listpack"), searched linearly,
// which is what makes HGETALL's order match Redis's for small hashes. It
// becomes a Go map ("hashtable") once it has more than
// hash-max-listpack-entries fields (512) or a field or value longer than
// hash-max-listpack-value bytes (64), and never goes back.
//
// An empty hash never stays in the keyspace: commands delete the key when
// they remove its last field.
type hash struct {
	lp []hashPair        // compact form; nil once m is used
	m  map[string]string // table form
	// HSCAN's paging of the table form (scansnap.go): fields added to m
	// so far, and the snapshot an iteration reads.
	adds uint64
	snap *scanSnap
}

type hashPair struct{ field, value string }

func newHash() *hash { return &hash{lp: make([]hashPair, 0, 4)} }

// Len returns the number of fields.
func (h *hash) Len() int {
	if h.m != nil {
		return len(h.m)
	}
	return len(h.lp)
}

// Encoding is what OBJECT ENCODING reports.
func (h *hash) Encoding() string {
	if h.m != nil {
		return "hashtable"
	}
	return "listpack"
}

func (h *hash) find(field string) int {
	for i := range h.lp {
		if h.lp[i].field == field {
			return i
		}
	}
	return -1
}

// Get returns the value of field.
func (h *hash) Get(field string) (string, bool) {
	if h.m != nil {
		v, ok := h.m[field]
		return v, ok
	}
	if i := h.find(field); i >= 0 {
		return h.lp[i].value, true
	}
	return "", false
}

// convert moves the fields into the table form.
func (h *hash) convert() {
	if h.m != nil {
		return
	}
	h.m = make(map[string]string, len(h.lp))
	for _, p := range h.lp {
		h.m[p.field] = p.value
	}
	h.lp = nil
}

// Set stores field's value and reports whether the field is new. As in
// Redis's hashTypeSet, a field or value too long for the compact form
// converts it first, and a compact hash left with more fields than
// hash-max-listpack-entries is converted after the write, an update
// included (the limit may have been lowered since the hash grew).
func (h *hash) Set(field, value string, lim *EncodingLimits) (created bool) {
	if h.m == nil && (int64(len(field)) > lim.HashMaxListpackValue || int64(len(value)) > lim.HashMaxListpackValue) {
		h.convert()
	}
	if h.m != nil {
		_, exists := h.m[field]
		h.m[field] = value
		if !exists {
			h.adds++ // (HSCAN: scansnap.go)
		}
		return !exists
	}
	created = true
	if i := h.find(field); i >= 0 {
		h.lp[i].value = value
		created = false
	} else {
		h.lp = append(h.lp, hashPair{field, value})
	}
	if int64(len(h.lp)) > lim.HashMaxListpackEntries {
		h.convert()
	}
	return created
}

// Del removes field and reports whether it was there.
func (h *hash) Del(field string) bool {
	if h.m != nil {
		if _, ok := h.m[field]; !ok {
			return false
		}
		delete(h.m, field)
		return true
	}
	i := h.find(field)
	if i < 0 {
		return false
	}
	copy(h.lp[i:], h.lp[i+1:])
	h.lp[len(h.lp)-1] = hashPair{}
	h.lp = h.lp[:len(h.lp)-1]
	return true
}

// Each calls fn for every field, in insertion order for the compact form
// and in map order for the table form.
func (h *hash) Each(fn func(field, value string)) {
	if h.m != nil {
		for f, v := range h.m {
			fn(f, v)
		}
		return
	}
	for _, p := range h.lp {
		fn(p.field, p.value)
	}
}

// pairs returns the fields and values, in the order Each visits them.
func (h *hash) pairs() []hashPair {
	if h.m == nil {
		return h.lp
	}
	out := make([]hashPair, 0, len(h.m))
	for f, v := range h.m {
		out = append(out, hashPair{f, v})
	}
	return out
}
