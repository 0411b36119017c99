package engine

import "strconv"

// docs_table.go is written with acl_table.go (acl_spec.go's go:generate).

// COMMAND DOCS: Redis 7.0's entry of each command (docs_table.go, made by
// internal/aclgen -docs from redis-server's COMMAND DOCS) is kept as RESP3 and
// replayed through the client's Writer, so that RESP2 gets the flattened
// form Redis sends; a container's "subcommands" are tumbler's own.

// writeCommandDoc writes cmd's COMMAND DOCS entry.
func writeCommandDoc(w Writer, cmd *Command) {
	subs := sortedSubs(cmd)
	raw, ok := docsTable[cmd.Name]
	if !ok {
		// A command Redis 7.0 lacks (7.2's and later): its summary and
		// group.
		raw = "%3\r\n$7\r\nsummary\r\n" + docBulk(cmd.Summary) + "$5\r\nsince\r\n$5\r\n7.2.0\r\n$5\r\ngroup\r\n" + docBulk(docGroup(cmd))
	}
	extra := 0
	if len(subs) > 0 {
		extra = 1
	}
	replayRESP3(w, raw, 0, extra)
	if len(subs) > 0 {
		w.WriteBulkString("subcommands")
		w.WriteMap(len(subs))
		for _, s := range subs {
			w.WriteBulkString(s.Name)
			writeCommandDoc(w, s)
		}
	}
}

func docGroup(cmd *Command) string {
	if cmd.Group == "" {
		return "server"
	}
	return cmd.Group
}

func docBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// replayRESP3 writes the RESP3 value at s[i:] (of the kinds COMMAND DOCS
// uses: maps, sets, arrays, bulk strings, statuses, integers) to w,
// adding extra pairs to the count of a map at the top, which the caller
// then writes. It returns the index after the value. s is generated, so
// it is well formed.
func replayRESP3(w Writer, s string, i, extra int) int {
	t := s[i]
	j := i + 1
	for s[j] != '\r' {
		j++
	}
	text := s[i+1 : j]
	next := j + 2
	switch t {
	case '+':
		w.WriteStatus(text)
		return next
	case ':':
		n, _ := strconv.ParseInt(text, 10, 64)
		w.WriteInt(n)
		return next
	case '$':
		n, _ := strconv.Atoi(text)
		w.WriteBulkString(s[next : next+n])
		return next + n + 2
	}
	n, _ := strconv.Atoi(text)
	elems := n
	switch t {
	case '%':
		w.WriteMap(n + extra)
		elems = 2 * n
	case '~':
		w.WriteSet(n)
	default:
		w.WriteArray(n)
	}
	for k := 0; k < elems; k++ {
		next = replayRESP3(w, s, next, 0)
	}
	return next
}
