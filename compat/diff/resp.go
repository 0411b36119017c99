package diff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Encode returns args as a RESP multibulk command.
func Encode(args []string) []byte {
	b := make([]byte, 0, 64)
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

// maxBulk bounds a bulk length the reader accepts, so a corrupt reply
// cannot make it allocate without limit.
const maxBulk = 64 << 20

// ReadReply reads exactly one complete RESP2 or RESP3 reply from r and
// returns its raw bytes, nested aggregates included. An attribute (|) is
// returned together with the reply it annotates.
func ReadReply(r *bufio.Reader) ([]byte, error) {
	var out []byte
	if err := readValue(r, &out, 0); err != nil {
		return out, err
	}
	return out, nil
}

func readLine(r *bufio.Reader, out *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// a long simple string or error: keep reading
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: malformed line %q", line)
	}
	*out = append(*out, line...)
	return line[1 : len(line)-2], nil
}

func readValue(r *bufio.Reader, out *[]byte, depth int) error {
	if depth > 10000 { // deeper than Redis replies: a script's arrays nest 7994 deep at most
		return errors.New("resp: nesting too deep")
	}
	t, err := r.Peek(1)
	if err != nil {
		if err == io.EOF && depth > 0 {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	typ := t[0]
	body, err := readLine(r, out)
	if err != nil {
		return err
	}
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > maxBulk {
			return fmt.Errorf("resp: bad length %q", body)
		}
		if n == -1 {
			return nil
		}
		start := len(*out)
		*out = append(*out, make([]byte, n+2)...)
		if _, err := io.ReadFull(r, (*out)[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if !bytes.HasSuffix(*out, []byte("\r\n")) {
			return errors.New("resp: bulk not terminated by CRLF")
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > 1<<20 {
			return fmt.Errorf("resp: bad count %q", body)
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readValue(r, out, depth+1); err != nil {
				return err
			}
		}
		if typ == '|' {
			// an attribute precedes the reply it describes
			return readValue(r, out, depth+1)
		}
		return nil
	}
	return fmt.Errorf("resp: unknown type byte %q", typ)
}

// Elements splits a raw aggregate reply into its header and the raw bytes
// of each element. ok is false when raw is not an aggregate.
func Elements(raw []byte) (header []byte, elems [][]byte, ok bool) {
	if len(raw) == 0 {
		return nil, nil, false
	}
	switch raw[0] {
	case '*', '~', '>', '%':
	default:
		return nil, nil, false
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	var h []byte
	body, err := readLine(r, &h)
	if err != nil {
		return nil, nil, false
	}
	n, err := strconv.Atoi(string(body))
	if err != nil {
		return nil, nil, false
	}
	if raw[0] == '%' {
		n *= 2
	}
	for i := 0; i < n; i++ {
		e, err := ReadReply(r)
		if err != nil {
			return nil, nil, false
		}
		elems = append(elems, e)
	}
	return h, elems, true
}

// SameMultiset reports whether a and b are the same reply when the
// elements of every aggregate, at any depth, are taken in any order (a
// map's key-value pairs move together).
func SameMultiset(a, b []byte) bool {
	return bytes.Equal(canonical(a), canonical(b))
}

// canonical returns raw with the elements of every aggregate sorted.
func canonical(raw []byte) []byte {
	header, elems, ok := Elements(raw)
	if !ok {
		return raw
	}
	for i := range elems {
		elems[i] = canonical(elems[i])
	}
	if raw[0] == '%' {
		pairs := make([][]byte, 0, len(elems)/2)
		for i := 0; i+1 < len(elems); i += 2 {
			pairs = append(pairs, append(append([]byte(nil), elems[i]...), elems[i+1]...))
		}
		elems = pairs
	}
	sortRaw(elems)
	out := append([]byte(nil), header...)
	for _, e := range elems {
		out = append(out, e...)
	}
	return out
}

func sortRaw(s [][]byte) {
	sort.Slice(s, func(i, j int) bool { return bytes.Compare(s[i], s[j]) < 0 })
}

// integerOf returns the integer a raw reply carries: an integer reply, or
// a bulk string holding a decimal integer.
func integerOf(raw []byte) (int64, bool) {
	if len(raw) < 3 {
		return 0, false
	}
	switch raw[0] {
	case ':':
		n, err := strconv.ParseInt(string(raw[1:len(raw)-2]), 10, 64)
		return n, err == nil
	case '$':
		i := bytes.Index(raw, []byte("\r\n"))
		if i < 0 || i+2 > len(raw)-2 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(raw[i+2:len(raw)-2]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Approx reports whether a and b are the same reply except that integers
// (and bulk strings holding integers) may differ by at most tol, provided
// both have the same type byte; everything else must be byte-identical.
func Approx(a, b []byte, tol int64) bool {
	if x, ok := integerOf(a); ok {
		y, ok := integerOf(b)
		if !ok || a[0] != b[0] {
			return false
		}
		d := x - y
		return d >= -tol && d <= tol
	}
	ha, ea, ok1 := Elements(a)
	hb, eb, ok2 := Elements(b)
	if !ok1 || !ok2 {
		return bytes.Equal(a, b)
	}
	if !bytes.Equal(ha, hb) || len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if !Approx(ea[i], eb[i], tol) {
			return false
		}
	}
	return true
}
