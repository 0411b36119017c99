package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Reply kinds are the RESP type bytes. RESP3 kinds are decoded too, so a
// server that answers in RESP3 does not break the client, but the
// benchmark itself speaks RESP2.
const (
	KindStatus  = '+'
	KindError   = '-'
	KindInt     = ':'
	KindBulk    = '$'
	KindArray   = '*'
	KindNull    = '_'
	KindBool    = '#'
	KindDouble  = ','
	KindBigNum  = '('
	KindVerb    = '='
	KindBlobErr = '!'
	KindMap     = '%'
	KindSet     = '~'
	KindPush    = '>'
	KindAttr    = '|'
)

// Reply is one decoded RESP reply. For a top-level reply Str aliases the
// connection's buffer and is valid only until the next ReadReply; nested
// elements own their bytes.
type Reply struct {
	Kind  byte
	Nil   bool // $-1 or *-1 or RESP3 null
	Int   int64
	Str   []byte
	Elems []Reply
}

// IsOK reports whether r is the status reply +OK.
func (r Reply) IsOK() bool { return r.Kind == KindStatus && string(r.Str) == "OK" }

// IsErr reports whether r is an error reply.
func (r Reply) IsErr() bool { return r.Kind == KindError || r.Kind == KindBlobErr }

// String renders r for messages.
func (r Reply) String() string {
	switch {
	case r.Nil:
		return "(nil)"
	case r.Kind == KindInt:
		return "(integer) " + strconv.FormatInt(r.Int, 10)
	case r.Kind == KindArray || r.Kind == KindMap || r.Kind == KindSet || r.Kind == KindPush:
		return fmt.Sprintf("(array of %d)", len(r.Elems))
	case r.IsErr():
		return "(error) " + string(r.Str)
	}
	return strconv.Quote(string(r.Str))
}

// Conn is a minimal RESP2 client connection with explicit pipelining:
// Write* calls only buffer, Flush sends, and ReadReply reads replies in
// order. A Conn is not safe for concurrent use.
type Conn struct {
	nc  net.Conn
	r   *bufio.Reader
	w   *bufio.Writer
	num []byte // scratch for integer encoding
	buf []byte // scratch for bulk replies
}

// Dial connects to a Redis-protocol server at addr ("host:port").
func Dial(ctx context.Context, addr string) (*Conn, error) { return dialNet(ctx, addr, nil) }

// dialNet is Dial, over TLS when cfg is set.
func dialNet(ctx context.Context, addr string, cfg *tls.Config) (*Conn, error) {
	var nc net.Conn
	var err error
	if cfg != nil {
		d := tls.Dialer{Config: cfg}
		nc, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // (Go's default; a TLS connection's socket has it too)
	}
	return NewConn(nc), nil
}

// NewConn wraps an established connection.
func NewConn(nc net.Conn) *Conn {
	return &Conn{
		nc:  nc,
		r:   bufio.NewReaderSize(nc, 64<<10),
		w:   bufio.NewWriterSize(nc, 64<<10),
		num: make([]byte, 0, 24),
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// SetDeadline sets the read and write deadline of the connection.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// WriteArray buffers an array header of n elements; n bulk strings follow.
func (c *Conn) WriteArray(n int) {
	c.w.WriteByte('*')
	c.num = strconv.AppendInt(c.num[:0], int64(n), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
}

// WriteBulk buffers one bulk string argument.
func (c *Conn) WriteBulk(b []byte) {
	c.w.WriteByte('$')
	c.num = strconv.AppendInt(c.num[:0], int64(len(b)), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
	c.w.Write(b)
	c.w.WriteString("\r\n")
}

// WriteBulkString buffers one bulk string argument.
func (c *Conn) WriteBulkString(s string) {
	c.w.WriteByte('$')
	c.num = strconv.AppendInt(c.num[:0], int64(len(s)), 10)
	c.w.Write(c.num)
	c.w.WriteString("\r\n")
	c.w.WriteString(s)
	c.w.WriteString("\r\n")
}

// WriteBulkInt buffers an integer as a bulk string argument.
func (c *Conn) WriteBulkInt(n int64) {
	var tmp [20]byte
	c.WriteBulk(strconv.AppendInt(tmp[:0], n, 10))
}

// WriteCommand buffers a command given as strings.
func (c *Conn) WriteCommand(args ...string) {
	c.WriteArray(len(args))
	for _, a := range args {
		c.WriteBulkString(a)
	}
}

// Flush sends everything buffered.
func (c *Conn) Flush() error { return c.w.Flush() }

// Do sends one command and reads its reply; an error reply is returned as
// the Reply (with a nil error), an I/O or protocol failure as the error.
// The reply owns its bytes.
func (c *Conn) Do(args ...string) (Reply, error) {
	c.WriteCommand(args...)
	if err := c.Flush(); err != nil {
		return Reply{}, err
	}
	r, err := c.ReadReply()
	if err != nil {
		return Reply{}, err
	}
	r.Str = append([]byte(nil), r.Str...)
	return r, nil
}

// ErrProtocol is returned for a malformed reply.
var ErrProtocol = errors.New("bench: protocol error")

// maxBulk bounds the size of a bulk reply this client accepts.
const maxBulk = 512 << 20

// line reads one CRLF-terminated line without the CRLF. The slice aliases
// the reader's buffer.
func (c *Conn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("%w: line too long", ErrProtocol)
		}
		return nil, err
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return nil, fmt.Errorf("%w: line without CRLF", ErrProtocol)
	}
	return b[:len(b)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
	}
	return n, nil
}

// ReadReply reads the next reply. A top-level bulk or status reply's Str is
// valid only until the next call.
func (c *Conn) ReadReply() (Reply, error) { return c.read(false) }

func (c *Conn) read(own bool) (Reply, error) {
	ln, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	if len(ln) == 0 {
		return Reply{}, fmt.Errorf("%w: empty line", ErrProtocol)
	}
	r := Reply{Kind: ln[0]}
	body := ln[1:]
	switch r.Kind {
	case KindStatus, KindError, KindDouble, KindBigNum:
		r.Str = c.keep(body, own)
	case KindInt:
		r.Int, err = parseInt(body)
	case KindBool:
		r.Int = 0
		if string(body) == "t" {
			r.Int = 1
		}
	case KindNull:
		r.Nil = true
	case KindBulk, KindVerb, KindBlobErr:
		var n int64
		if n, err = parseInt(body); err != nil {
			return r, err
		}
		if n < 0 {
			r.Nil = true
			return r, nil
		}
		if n > maxBulk {
			return r, fmt.Errorf("%w: bulk of %d bytes", ErrProtocol, n)
		}
		if cap(c.buf) < int(n)+2 {
			c.buf = make([]byte, int(n)+2)
		}
		b := c.buf[:n+2]
		if _, err = io.ReadFull(c.r, b); err != nil {
			return r, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return r, fmt.Errorf("%w: bulk without CRLF", ErrProtocol)
		}
		r.Str = c.keep(b[:n], own)
	case KindArray, KindSet, KindPush, KindMap, KindAttr:
		var n int64
		if n, err = parseInt(body); err != nil {
			return r, err
		}
		if n < 0 {
			r.Nil = true
			return r, nil
		}
		if r.Kind == KindMap || r.Kind == KindAttr {
			n *= 2
		}
		if n > 1<<20 {
			return r, fmt.Errorf("%w: aggregate of %d elements", ErrProtocol, n)
		}
		r.Elems = make([]Reply, n)
		for i := range r.Elems {
			if r.Elems[i], err = c.read(true); err != nil {
				return r, err
			}
		}
		if r.Kind == KindAttr { // an attribute precedes the real reply
			return c.read(own)
		}
	default:
		return r, fmt.Errorf("%w: unknown reply type %q", ErrProtocol, r.Kind)
	}
	return r, err
}

func (c *Conn) keep(b []byte, own bool) []byte {
	if own {
		return append([]byte(nil), b...)
	}
	return b
}
