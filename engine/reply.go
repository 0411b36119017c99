package engine

// Writer receives a command's reply. The server implements it as RESP2 or
// RESP3 on a connection; the Lua VM implements it by building Lua values.
// Aggregates are written as a header (WriteArray, WriteMap, ...) followed by
// their elements.
type Writer interface {
	// Proto is the protocol the reply is for: 2 or 3.
	Proto() int
	WriteStatus(s string)
	WriteError(msg string)
	WriteInt(n int64)
	WriteBulk(b []byte)
	WriteBulkString(s string)
	// WriteNull writes a null bulk string ($-1, RESP3 _).
	WriteNull()
	// WriteNullArray writes a null array (*-1, RESP3 _).
	WriteNullArray()
	WriteArray(n int)
	// WriteMap writes a map header of n pairs (RESP2: an array of 2n).
	WriteMap(n int)
	// WriteSet writes a set header (RESP2: an array).
	WriteSet(n int)
	// WriteBool writes a boolean (RESP2: the integer 1 or 0).
	WriteBool(v bool)
	// WriteDouble writes a double (RESP2: a bulk string).
	WriteDouble(f float64)
	// WriteVerbatim writes a verbatim string with a 3-letter format
	// (RESP2: a bulk string).
	WriteVerbatim(format, s string)
	// WriteBigNumber writes a big number, its decimal digits (RESP2: a
	// bulk string). Only scripts return one ({big_number='...'}).
	WriteBigNumber(s string)
}

// CopyingWriter is a Writer that copies every string and byte slice it
// is given before the call returns, as a connection's does into its
// output buffer: it keeps nothing a command hands it. A key's value
// replied to one stays free to change in place after the command
// (Ctx.replyValue); any other Writer may keep what it is given, as a
// script's does.
type CopyingWriter interface {
	Writer
	CopiesReplies()
}

// Shared replies.
const (
	statusOK = "OK"
)
