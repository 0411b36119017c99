package engine

import "github.com/tumblerdb/tumbler/expiry"

// StringOrAbsent reports whether key holds a string, or no live value, at
// the command's time. It has no side effects: no lazy expiry, no hit or
// miss counted. Requires the keyspace lock (scripts run under it).
func (c *Ctx) StringOrAbsent(key []byte) bool {
	ent := c.Eng.keys.get(key)
	return ent == nil || ent.kind() == KindString || expiry.Expired(ent.deadline, c.Now)
}
