package engine

import (
	"sync"
	"sync/atomic"
)

// The ACL log (ACL LOG): refused commands, keys, channels and failed
// authentications, newest first, similar entries within a minute merged
// into one with a count, as Redis's addACLLogEntry.

// aclLogGroupMs is ACL_LOG_GROUPING_MAX_TIME_DELTA.
const aclLogGroupMs = 60000

// ACLLogEntry is one entry of the ACL log.
type ACLLogEntry struct {
	Count    int64
	Reason   string // command, key, channel, auth
	Context  string // toplevel, multi, lua
	Object   string
	Username string
	Ctime    int64 // unix ms of the last occurrence
	Info     string
}

type aclLog struct {
	mu      sync.Mutex
	entries []*ACLLogEntry // newest first
	max     atomic.Int64   // acllog-max-len
}

var aclReasons = [...]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedAuth: "auth", aclDeniedChannel: "channel"}
var aclContexts = [...]string{aclCtxToplevel: "toplevel", aclCtxMulti: "multi", aclCtxLua: "lua"}

// SetLogMaxLen sets acllog-max-len, trimming the log at once.
func (a *ACL) SetLogMaxLen(n int64) {
	a.log.max.Store(n)
	a.log.mu.Lock()
	a.log.trim()
	a.log.mu.Unlock()
}

func (l *aclLog) trim() {
	if m := int(l.max.Load()); len(l.entries) > m {
		clear(l.entries[max(m, 0):])
		l.entries = l.entries[:max(m, 0)]
	}
}

// add records an entry, or bumps a similar one among the last ten.
func (l *aclLog) add(le *ACLLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.entries) && i < 10; i++ {
		cur := l.entries[i]
		d := cur.Ctime - le.Ctime
		if d < 0 {
			d = -d
		}
		if cur.Reason == le.Reason && cur.Context == le.Context && d <= aclLogGroupMs &&
			cur.Object == le.Object && cur.Username == le.Username {
			cur.Count++
			cur.Ctime, cur.Info = le.Ctime, le.Info
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = cur
			return
		}
	}
	l.entries = append(l.entries, nil)
	copy(l.entries[1:], l.entries)
	l.entries[0] = le
	l.trim()
}

// Log returns up to n entries, newest first, as copies.
func (a *ACL) Log(n int) []ACLLogEntry {
	a.log.mu.Lock()
	defer a.log.mu.Unlock()
	n = min(n, len(a.log.entries))
	out := make([]ACLLogEntry, n)
	for i := range out {
		out[i] = *a.log.entries[i]
	}
	return out
}

// ResetLog empties the log.
func (a *ACL) ResetLog() {
	a.log.mu.Lock()
	a.log.entries = nil
	a.log.mu.Unlock()
}

func (a *ACL) info(cl *Client) string {
	if a.ClientInfo == nil || cl == nil {
		return ""
	}
	return a.ClientInfo(cl)
}

// LogAuthFailure records a failed AUTH or HELLO AUTH: object is the
// command name as the client sent it.
func (a *ACL) LogAuthFailure(cl *Client, object, username string) {
	ctx := aclCtxToplevel
	if cl != nil && cl.InMulti() {
		ctx = aclCtxMulti
	}
	a.log.add(&ACLLogEntry{Count: 1, Reason: aclReasons[aclDeniedAuth], Context: aclContexts[ctx],
		Object: object, Username: username, Ctime: a.e.clock.Wall().UnixMilli(), Info: a.info(cl)})
}

// logDenial records a refused command, key or channel.
func (a *ACL) logDenial(cl *Client, res, ctx int, cmd *Command, args [][]byte, pos int) {
	obj := cmd.Name
	if res != aclDeniedCmd {
		obj = string(args[pos])
	}
	user := "default"
	if cl != nil && cl.ACL != nil {
		user = cl.ACL.Name
	}
	a.log.add(&ACLLogEntry{Count: 1, Reason: aclReasons[res], Context: aclContexts[ctx],
		Object: obj, Username: user, Ctime: a.e.clock.Wall().UnixMilli(), Info: a.info(cl)})
}
