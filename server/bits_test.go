package server

import "testing"

// The bit commands and client tracking: their reads (GETBIT, BITCOUNT,
// BITPOS, BITFIELD_RO, LCS) track their keys, and a write invalidates a
// tracked key only when Redis signals a modification: SETBIT and BITFIELD
// that change nothing, and SETRANGE of nothing, say nothing.
func TestTracking_BitCommands(t *testing.T) {
	srv := RunT(t)
	a := dial(t, srv.Addr())
	b := dial(t, srv.Addr())
	a.hello3()
	a.expectDo("+OK\r\n", "CLIENT", "TRACKING", "ON")
	b.expectDo(":0\r\n", "SETBIT", "k", "0", "1")
	a.expectDo(":1\r\n", "GETBIT", "k", "0")

	b.expectDo(":1\r\n", "SETBIT", "k", "0", "1") // no change
	b.expectDo("*1\r\n:128\r\n", "BITFIELD", "k", "SET", "u8", "0", "128")
	b.expectDo("*1\r\n$-1\r\n", "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "200")
	b.expectDo(":1\r\n", "SETRANGE", "k", "0", "")
	a.expectDo("+PONG\r\n", "PING") // no invalidation came first
	b.expectDo(":0\r\n", "SETBIT", "k", "1", "1")
	a.expect(inval3("k"))

	a.expectDo(":2\r\n", "BITCOUNT", "k")
	b.expectDo(":1\r\n", "SETRANGE", "k", "0", "x")
	a.expect(inval3("k"))

	a.expectDo(":1\r\n", "BITPOS", "k", "1")
	b.expectDo("*1\r\n:120\r\n", "BITFIELD", "k", "INCRBY", "u8", "0", "0") // no change
	b.expectDo("*1\r\n:121\r\n", "BITFIELD", "k", "INCRBY", "u8", "0", "1")
	a.expect(inval3("k"))

	a.expectDo("*1\r\n:121\r\n", "BITFIELD_RO", "k", "GET", "u8", "0")
	a.expectDo("$0\r\n\r\n", "LCS", "k", "other")
	b.expectDo(":1\r\n", "BITOP", "NOT", "other", "k")
	a.expect(inval3("other"))
	b.expectDo(":0\r\n", "BITOP", "AND", "k", "nosuch")
	a.expect(inval3("k"))

	// BITFIELD is a write command even with only GETs: it tracks nothing
	b.expectDo(":0\r\n", "SETBIT", "k", "0", "1")
	a.expectDo("*1\r\n:128\r\n", "BITFIELD", "k", "GET", "u8", "0")
	b.expectDo(":0\r\n", "SETBIT", "k", "1", "1")
	a.expectDo("+PONG\r\n", "PING")
}
