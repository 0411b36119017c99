package engine

// EncodingLimits are the thresholds of the compact encodings, Redis 7.0's
// settings of the same names. Hashes, sets and sorted sets read them when
// they choose or change an encoding (OBJECT ENCODING reports it); lists
// are "quicklist" whatever the list settings say, as in Redis 7.0, which
// only tunes the nodes' sizes with them.
type EncodingLimits struct {
	HashMaxListpackEntries int64 // hash-max-listpack-entries: fields of a compact hash (512)
	HashMaxListpackValue   int64 // hash-max-listpack-value: bytes of its fields and values (64)
	SetMaxIntsetEntries    int64 // set-max-intset-entries: members of an intset (512)
	ZsetMaxListpackEntries int64 // zset-max-listpack-entries: members of a compact sorted set (128)
	ZsetMaxListpackValue   int64 // zset-max-listpack-value: bytes of its members (64)
	ListMaxListpackSize    int64 // list-max-listpack-size (-2): how DUMP cuts a list into nodes (cmd_dump.go)
	ListCompressDepth      int64 // list-compress-depth (0): reported, not acted on (DUMP's bytes do not depend on it)
}

// DefaultEncodingLimits returns Redis 7.0's defaults.
func DefaultEncodingLimits() EncodingLimits {
	return EncodingLimits{
		HashMaxListpackEntries: 512,
		HashMaxListpackValue:   64,
		SetMaxIntsetEntries:    512,
		ZsetMaxListpackEntries: 128,
		ZsetMaxListpackValue:   64,
		ListMaxListpackSize:    -2,
	}
}

// SetEncodingLimits installs new thresholds (CONFIG SET). Values already
// in the keyspace keep their encoding until a command changes them, as in
// Redis.
func (e *Engine) SetEncodingLimits(l EncodingLimits) { e.enc.Store(&l) }

// EncodingLimits returns the current thresholds.
func (e *Engine) EncodingLimits() EncodingLimits { return *e.limits() }

// limits returns the current thresholds: one atomic load, no copy; the
// value must not be modified.
func (e *Engine) limits() *EncodingLimits { return e.enc.Load() }
