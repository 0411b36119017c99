package engine

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// Redis's migrateCommand: the keys' values go to the target as RESTORE
// commands (their DUMP payloads and the time they have left), pipelined
// on a connection kept for the next MIGRATE to the same address; each key
// the target accepts is then deleted here, unless COPY. As in Redis the
// command holds the server (the keyspace lock) while it talks to the
// target, for at most timeout ms per read or write.

func registerMigrate(e *Engine) {
	e.Register(&Command{Name: "migrate", Arity: -6, Flags: FlagWrite, FirstKey: 3, LastKey: 3, Step: 1,
		Keys: migrateKeys, Group: "generic", Fn: cmdMigrate})
}

// migrateKeys is Redis's migrateGetKeys: the key argument, or the keys
// after KEYS.
func migrateKeys(args [][]byte) []int {
	for i := 6; i < len(args); i++ {
		switch {
		case eqFold(args[i], "keys"):
			if len(args[3]) > 0 {
				return nil
			}
			pos := make([]int, 0, len(args)-i-1)
			for j := i + 1; j < len(args); j++ {
				pos = append(pos, j)
			}
			return pos
		case eqFold(args[i], "auth"):
			i++
		case eqFold(args[i], "auth2"):
			i += 2
		}
	}
	return []int{3}
}

// MigrateSecrets returns the positions of the arguments that Redis's
// migrateCommand redacts (redactClientCommandArgument) for MONITOR and
// SLOWLOG: AUTH's password, AUTH2's user name and password. Redis
// redacts them as it parses the options, so an option it refuses (a
// syntax error, an AUTH short of its arguments) or KEYS ends the search.
func MigrateSecrets(args [][]byte) []int {
	var pos []int
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "copy"), eqFold(args[j], "replace"):
		case eqFold(args[j], "auth") && more >= 1:
			pos = append(pos, j+1)
			j++
		case eqFold(args[j], "auth2") && more >= 2:
			pos = append(pos, j+1, j+2)
			j += 2
		default:
			return pos
		}
	}
	return pos
}

// migrateSockets are Redis's migrate_cached_sockets: one connection per
// target address, closed after migrateSocketIdle unused.
type migrateSockets struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
}

type migrateConn struct {
	c       net.Conn
	r       *bufio.Reader
	lastDB  int64 // the target's selected database; -1: unknown
	lastUse time.Time
}

const (
	migrateSocketIdle  = 10 * time.Second // MIGRATE_SOCKET_CACHE_TTL
	migrateSocketItems = 64               // MIGRATE_SOCKET_CACHE_ITEMS
)

// get returns the cached connection to addr, or a new one. When it cannot
// connect it returns the error, and whether Redis would have found out
// only when writing (refused: its non-blocking connect counts the
// socket's error state as connected).
func (m *migrateSockets) get(addr string, timeout time.Duration) (cs *migrateConn, err error, atWrite bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.closeIdle(now)
	if cs := m.conns[addr]; cs != nil {
		cs.lastUse = now
		return cs, nil, false
	}
	if len(m.conns) >= migrateSocketItems {
		for a, cs := range m.conns { // one at random
			cs.c.Close()
			delete(m.conns, a)
			break
		}
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err, errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	cs = &migrateConn{c: c, r: bufio.NewReader(c), lastDB: -1, lastUse: now}
	if m.conns == nil {
		m.conns = make(map[string]*migrateConn)
	}
	m.conns[addr] = cs
	return cs, nil, false
}

// closeIdle closes the connections unused for migrateSocketIdle
// (migrateCloseTimedoutSockets, which Redis's cron runs each second; here
// the next MIGRATE or INFO does). Requires m.mu.
func (m *migrateSockets) closeIdle(now time.Time) {
	for a, cs := range m.conns {
		if now.Sub(cs.lastUse) > migrateSocketIdle {
			cs.c.Close()
			delete(m.conns, a)
		}
	}
}

// cached is how many connections MIGRATE keeps (INFO's
// migrate_cached_sockets), once the idle ones are closed.
func (m *migrateSockets) cached() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeIdle(time.Now())
	return len(m.conns)
}

// Close closes the connections MIGRATE keeps to its targets (the server
// is closing). A later MIGRATE makes new ones.
func (e *Engine) Close() {
	m := &e.migrate
	m.mu.Lock()
	defer m.mu.Unlock()
	for addr, cs := range m.conns {
		cs.c.Close()
		delete(m.conns, addr)
	}
}

// close drops the cached connection to addr.
func (m *migrateSockets) close(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cs := m.conns[addr]; cs != nil {
		cs.c.Close()
		delete(m.conns, addr)
	}
}

// migrateLineMax is the reply line Redis's MIGRATE reads at most: its
// buffer's 1024 bytes, less the terminating NUL.
const migrateLineMax = 1023

// errMigrateEmptyLine is a bare newline from the target: Redis's
// connSyncReadLine returns 0 for it, which MIGRATE takes as a socket
// error.
var errMigrateEmptyLine = errors.New("empty reply line")

// readLine is connSyncReadLine into Redis's 1024-byte buffer: one reply
// line, without its CRLF, read before the deadline. A line longer than
// migrateLineMax is cut there and its rest read as the next line, as
// Redis reads it, so a target that streams bytes without a newline costs
// a fixed buffer, not memory for as long as it streams.
func (cs *migrateConn) readLine(timeout time.Duration) (string, error) {
	_ = cs.c.SetReadDeadline(time.Now().Add(timeout))
	var buf [migrateLineMax]byte
	n := 0
	for n < len(buf) {
		b, err := cs.r.ReadByte()
		if err != nil {
			return "", err
		}
		if b == '\n' {
			if n == 0 {
				return "", errMigrateEmptyLine
			}
			if buf[n-1] == '\r' {
				n--
			}
			return string(buf[:n]), nil
		}
		buf[n] = b
		n++
	}
	return string(buf[:n]), nil
}

func cmdMigrate(c *Ctx) {
	e := c.Eng
	args := c.Args
	copyKeys, replace := false, false
	var username, password []byte
	firstKey, numKeys := 3, 1
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "copy"):
			copyKeys = true
		case eqFold(args[j], "replace"):
			replace = true
		case eqFold(args[j], "auth"):
			if more < 1 {
				c.W.WriteError(ErrSyntax)
				return
			}
			j++
			password = args[j]
		case eqFold(args[j], "auth2"):
			if more < 2 {
				c.W.WriteError(ErrSyntax)
				return
			}
			username, password = args[j+1], args[j+2]
			j += 2
		case eqFold(args[j], "keys"):
			if len(args[3]) != 0 {
				c.W.WriteError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			firstKey, numKeys = j+1, len(args)-j-1
			j = len(args)
		default:
			c.W.WriteError(ErrSyntax)
			return
		}
	}
	timeoutMs, ok1 := parseInt(args[5])
	dbid, ok2 := parseInt(args[4])
	if !ok1 || !ok2 {
		c.W.WriteError(ErrNotInteger)
		return
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	timeout := time.Duration(min(timeoutMs, int64(1<<62)/int64(time.Millisecond))) * time.Millisecond

	var keys [][]byte
	var ents []*entry
	for j := 0; j < numKeys; j++ {
		if ent := e.lookupRead(args[firstKey+j], c.Now); ent != nil {
			keys = append(keys, args[firstKey+j])
			ents = append(ents, ent)
		}
	}
	if len(keys) == 0 {
		c.W.WriteStatus("NOKEY")
		return
	}
	addr := net.JoinHostPort(string(args[1]), string(args[2]))

	for retry := true; ; retry = false {
		cs, err, atWrite := e.migrate.get(addr, timeout)
		if err != nil {
			switch {
			case !atWrite:
				c.W.WriteError("IOERR error or timeout connecting to the client")
				return
			case retry:
				continue
			}
			c.W.WriteError("IOERR error or timeout writing to target instance")
			return
		}
		var buf []byte
		if password != nil {
			if username != nil {
				buf = appendCommand(buf, []byte("AUTH"), username, password)
			} else {
				buf = appendCommand(buf, []byte("AUTH"), password)
			}
		}
		selectDB := cs.lastDB != dbid
		if selectDB {
			buf = appendCommand(buf, []byte("SELECT"), strconv.AppendInt(nil, dbid, 10))
		}
		sent := 0
		for i, ent := range ents {
			ttl := int64(0)
			if ent.deadline != 0 {
				if ttl = ent.deadline - e.Now(); ttl < 0 {
					continue
				}
				ttl = max(ttl, 1)
			}
			keys[sent], ents[sent] = keys[i], ent
			sent++
			payload := dumpFooter(e.dumpValue(nil, ent))
			restore := [][]byte{[]byte("RESTORE"), keys[sent-1], strconv.AppendInt(nil, ttl, 10), payload}
			if replace {
				restore = append(restore, []byte("REPLACE"))
			}
			buf = appendCommand(buf, restore...)
		}
		keys, ents = keys[:sent], ents[:sent]

		_ = cs.c.SetWriteDeadline(time.Now().Add(timeout))
		_, err = cs.c.Write(buf)
		writeErr := err != nil
		var authLine, selectLine string
		if err == nil && password != nil {
			authLine, err = cs.readLine(timeout)
		}
		if err == nil && selectDB {
			selectLine, err = cs.readLine(timeout)
		}
		if err != nil {
			// (the write, AUTH or SELECT: nothing was restored)
			e.migrate.close(addr)
			if retry && !errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			what := "reading"
			if writeErr {
				what = "writing"
			}
			c.W.WriteError("IOERR error or timeout " + what + " to target instance")
			return
		}
		targetErr, socketErr := "", error(nil)
		done := 0
		for j := range keys {
			line, err := cs.readLine(timeout)
			if err != nil {
				socketErr = err
				break
			}
			done = j + 1
			switch {
			case password != nil && authLine != "" && authLine[0] == '-':
				line = authLine
			case selectDB && selectLine != "" && selectLine[0] == '-':
				line = selectLine
			}
			if line != "" && line[0] == '-' {
				if targetErr == "" {
					cs.lastDB = -1
					targetErr = "ERR Target instance replied with error: " + line[1:]
				}
				continue
			}
			if !copyKeys {
				ent := e.lookup(keys[j], c.Now)
				if ent != nil {
					e.removeKey(ent.key(), ent)
					e.modified(ent.key())
					e.notify(NotifyGeneric, "del", ent.key())
					e.dirty++
				}
			}
		}
		if socketErr != nil {
			e.migrate.close(addr)
			if targetErr == "" && done == 0 && retry && !errors.Is(socketErr, os.ErrDeadlineExceeded) {
				continue
			}
			if targetErr == "" {
				c.W.WriteError("IOERR error or timeout reading to target instance")
				return
			}
		}
		if targetErr != "" {
			c.W.WriteError(targetErr)
			return
		}
		cs.lastDB = dbid
		c.W.WriteStatus(statusOK)
		return
	}
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
