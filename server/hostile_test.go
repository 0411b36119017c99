package server

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hostile-input suite: clients that break the protocol in every way
// we know of, while a well-behaved client takes and releases a lock over
// and over. The well-behaved client must never see an error, the server
// must stay up, and the keyspace invariants must hold.

const releaseScript = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"

// lockClient is a well-behaved client doing lock cycles: SET NX PX, then
// EVALSHA of the release script.
type lockClient struct {
	conn net.Conn
	rd   *bufio.Reader
	sha  string
	key  string
	tok  string
}

func newLockClient(addr, pass, key string) (*lockClient, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	lc := &lockClient{conn: conn, rd: bufio.NewReader(conn), key: key, tok: "tok-" + key}
	if pass != "" {
		if r, err := lc.roundTrip("AUTH", pass); err != nil || r != "+OK\r\n" {
			conn.Close()
			return nil, fmt.Errorf("AUTH: %q %v", r, err)
		}
	}
	r, err := lc.roundTrip("SCRIPT", "LOAD", releaseScript)
	if err != nil || !strings.HasPrefix(r, "$40\r\n") {
		conn.Close()
		return nil, fmt.Errorf("SCRIPT LOAD: %q %v", r, err)
	}
	lc.sha = r[5:45]
	return lc, nil
}

func (lc *lockClient) roundTrip(args ...string) (string, error) {
	lc.conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := lc.conn.Write([]byte(encode(args...))); err != nil {
		return "", err
	}
	var b strings.Builder
	err := readReply(lc.rd, &b)
	return b.String(), err
}

// cycle takes the lock and releases it; any other reply is an error.
func (lc *lockClient) cycle() error {
	if r, err := lc.roundTrip("SET", lc.key, lc.tok, "NX", "PX", "30000"); err != nil || r != "+OK\r\n" {
		return fmt.Errorf("acquire %s: %q %v", lc.key, r, err)
	}
	if r, err := lc.roundTrip("EVALSHA", lc.sha, "1", lc.key, lc.tok); err != nil || r != ":1\r\n" {
		return fmt.Errorf("release %s: %q %v", lc.key, r, err)
	}
	return nil
}

// hostileInputs are byte streams a client may send; each goes on its own
// connection, which is then closed.
func hostileInputs(seed int64) map[string][]byte {
	noise := make([]byte, 64<<10)
	rand.New(rand.NewSource(seed)).Read(noise)
	big := strings.Repeat("a", 70000)
	return map[string][]byte{
		"negative bulk length":         []byte("*1\r\n$-5\r\nxx\r\n"),
		"absurd bulk length":           []byte("*1\r\n$9223372036854775800\r\nxx\r\n"),
		"overflowing bulk length":      []byte("*1\r\n$99999999999999999999999\r\n"),
		"negative multibulk count":     []byte("*-7\r\nPING\r\n"),
		"absurd multibulk count":       []byte("*4611686018427387904\r\n"),
		"huge multibulk count, no arg": []byte("*1048576\r\n"),
		"huge multibulk count, 1 arg":  []byte("*1000000\r\n$3\r\nGET\r\n"),
		"over the multibulk cap":       []byte("*1048577\r\n"),
		"truncated frame":              []byte("*3\r\n$3\r\nSET\r\n$4\r\nlock"),
		"truncated bulk length":        []byte("*2\r\n$3\r\nGET\r\n$12"),
		"bad type byte":                []byte("*1\r\n+PING\r\n"),
		"not a number":                 []byte("*x\r\n"),
		"bulk length not a number":     []byte("*1\r\n$x\r\n"),
		"unbalanced quotes":            []byte("SET \"lock\r\n"),
		"64K+ inline without newline":  []byte(big),
		"64K+ inline with newline":     []byte(big + "\r\n"),
		"64K+ count line":              []byte("*" + strings.Repeat("1", 70000) + "\r\n"),
		"binary noise":                 noise,
		"NUL bytes":                    make([]byte, 4096),
		"unauthenticated mbulk count":  []byte("*11\r\n"),
		"unauthenticated bulk length":  []byte("*1\r\n$16385\r\n"),
		"unauthenticated big command":  []byte(encode("SET", "lock:x", strings.Repeat("v", 20000))),
		"unauthenticated commands":     []byte(encode("SET", "lock:good", "stolen") + encode("FLUSHALL") + encode("EVAL", "return 1", "0")),
		"wrong password":               []byte(encode("AUTH", "nope") + encode("DEL", "lock:good")),
	}
}

// sendHostile writes in, then reads whatever comes back until the server
// closes the connection or a short deadline passes, and closes.
func sendHostile(addr string, in []byte) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	// The server may close before reading everything (a protocol error),
	// so a failed write is not a failure of the test.
	_, _ = conn.Write(in)
	_, _ = io.Copy(io.Discard, conn)
	return nil
}

func TestHostile_ProtocolAbuseWhileLocking(t *testing.T) {
	srv := RunT(t, WithConfig(func(c *Config) { c.RequirePass = "pw"; c.CommandLog = 0 }))
	addr := srv.Addr()

	stop := make(chan struct{})
	var goodErrs []error
	var mu sync.Mutex
	var cycles atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		lc, err := newLockClient(addr, "pw", fmt.Sprintf("lock:good%d", i))
		if err != nil {
			t.Fatal(err)
		}
		defer lc.conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := lc.cycle(); err != nil {
					mu.Lock()
					goodErrs = append(goodErrs, err)
					mu.Unlock()
					return
				}
				cycles.Add(1)
			}
		}()
	}

	inputs := hostileInputs(1)
	var hwg sync.WaitGroup
	for round := 0; round < 3; round++ {
		for name, in := range inputs {
			hwg.Add(1)
			go func() {
				defer hwg.Done()
				if err := sendHostile(addr, in); err != nil {
					mu.Lock()
					goodErrs = append(goodErrs, fmt.Errorf("%s: dial: %v", name, err))
					mu.Unlock()
				}
			}()
		}
		hwg.Wait()
	}
	close(stop)
	wg.Wait()
	for _, err := range goodErrs {
		t.Error(err)
	}
	if cycles.Load() == 0 {
		t.Error("the well-behaved clients completed no lock cycle")
	}
	c := dial(t, addr)
	if got := c.do("AUTH", "pw"); got != "+OK\r\n" {
		t.Fatalf("fresh connection AUTH = %q", got)
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("fresh connection PING = %q", got)
	}
	if got := c.do("EXISTS", "lock:good", "lock:x"); got != ":0\r\n" {
		t.Errorf("unauthenticated writes reached the keyspace: EXISTS = %q", got)
	}
	if msg := srv.Engine().CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
}

// TestHostile_TenThousandConnections opens 10,000 connections at once
// (both ends live in this process, so it needs twice as many descriptors;
// with a lower hard limit it opens as many as fit and says so). The
// server stays up and well-behaved clients see no errors.
func TestHostile_TenThousandConnections(t *testing.T) {
	const want = 10000
	n := want
	need := uint64(2*want + 256)
	cur, hard := raiseNofile(t, need)
	if cur < need {
		n = int(cur-256) / 2
		if n < 1000 {
			t.Skipf("RLIMIT_NOFILE hard limit %d leaves room for only %d connections", hard, n)
		}
		t.Logf("RLIMIT_NOFILE hard limit is %d: opening %d connections, not %d", hard, n, want)
	}
	srv := RunT(t, WithConfig(func(c *Config) { c.MaxClients = n + 16; c.CommandLog = 0 }))
	addr := srv.Addr()

	good, err := newLockClient(addr, "", "lock:steady")
	if err != nil {
		t.Fatal(err)
	}
	defer good.conn.Close()

	conns := make([]net.Conn, n)
	var dialErrs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := net.DialTimeout("tcp", addr, 20*time.Second)
				if err != nil {
					dialErrs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				conns[i] = c
			}
		}()
	}
	// The well-behaved client keeps locking while the flood arrives.
	flooding := make(chan struct{})
	go func() { wg.Wait(); close(flooding) }()
	cycles := 0
loop:
	for {
		select {
		case <-flooding:
			break loop
		default:
		}
		if err := good.cycle(); err != nil {
			t.Fatalf("well-behaved client during the flood: %v", err)
		}
		cycles++
	}
	closeAll := func() {
		for i, c := range conns {
			if c != nil {
				c.Close()
				conns[i] = nil
			}
		}
	}
	defer closeAll()
	if d := dialErrs.Load(); d > 0 {
		t.Fatalf("%d of %d connections failed, first: %v", d, n, firstErr.Load())
	}
	// Every 100th connection is served.
	for i := 0; i < n; i += 100 {
		c := conns[i]
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		buf := make([]byte, 7)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("conn %d: PING = %q %v", i, buf, err)
		}
	}
	for i := 0; i < 100; i++ {
		if err := good.cycle(); err != nil {
			t.Fatalf("well-behaved client with %d connections open: %v", n, err)
		}
	}
	closeAll()
	fresh := dial(t, addr)
	if got := fresh.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("fresh connection after the flood: PING = %q", got)
	}
	t.Logf("%d connections open, %d lock cycles during the flood", n, cycles)
	if msg := srv.Engine().CheckInvariants(); msg != "" {
		t.Fatal(msg)
	}
}
