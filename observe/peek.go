package observe

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
)

// Peeked is how much of a request body Peek holds.
type Peeked uint8

const (
	PeekWhole    Peeked = iota // the whole body
	PeekTooLarge               // part of it: it is larger than the limit
	PeekPartial                // part of it: no room to read on, or a read error
)

// String names p for logs and test failures.
func (p Peeked) String() string {
	switch p {
	case PeekWhole:
		return "whole"
	case PeekTooLarge:
		return "too large"
	case PeekPartial:
		return "partial"
	}
	return "unknown"
}

// Peek reads req's body so that an observed call's key can be derived,
// and puts back a body that gives the upstream exactly the bytes the agent
// sent: what was read, then the rest, streamed. It reads at most max
// bytes (one more tells a body larger than max), never waiting: room
// returns how many more bytes may be read now that have are held, 0 when
// there is no room at once. body is what was read; nil when req has no
// body or announces a length over max.
func Peek(req *http.Request, max int64, room func(have int64) int64) (body []byte, got Peeked) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, PeekWhole
	}
	if req.ContentLength > max {
		return nil, PeekTooLarge
	}
	orig := req.Body
	b, got := read(orig, req.ContentLength, max, room)
	var rest io.Reader = bytes.NewReader(b)
	if got != PeekWhole {
		rest = io.MultiReader(rest, orig)
	}
	req.Body = struct {
		io.Reader
		io.Closer
	}{rest, orig}
	return b, got
}

// read reads r, of length n (0 or less: unknown), as Peek does.
func read(r io.Reader, n, max int64, room func(have int64) int64) ([]byte, Peeked) {
	var b []byte
	for {
		next := min(room(int64(len(b))), max+1-int64(len(b)))
		if next <= 0 {
			return b, PeekPartial
		}
		b = slices.Grow(b, int(next))
		k, err := r.Read(b[len(b) : len(b)+int(next)])
		b = b[:len(b)+k]
		switch {
		case int64(len(b)) > max:
			return b, PeekTooLarge
		case errors.Is(err, io.EOF) || (err == nil && n > 0 && int64(len(b)) == n):
			return b, PeekWhole
		case err != nil:
			return b, PeekPartial // the transport meets the error again reading the rest
		}
	}
}
