package bodyread

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrTimeout is a body that arrived too slowly: a read ran past the
// Clock's deadline.
var ErrTimeout = errors.New("request body read timed out")

// Deadliner sets the read deadline of the connection a body arrives on,
// as http.ResponseController does; a zero time clears it.
type Deadliner interface {
	SetReadDeadline(t time.Time) error
}

// Clock holds a body read to a read timeout and a minimum rate through
// read deadlines on the client connection.
type Clock struct {
	// Conn is the connection's deadline control; nil sets no deadline,
	// and the Clock then only counts bytes.
	Conn Deadliner
	// Timeout is the longest a read may wait for bytes, and the allowance
	// before the minimum rate applies.
	Timeout time.Duration
	// MinRate is the least average rate, in bytes per second, once the
	// allowance is used up: each MinRate bytes received extend the
	// deadline by one second. Zero or less sets none.
	MinRate int64
	// Start is when the body began to be read.
	Start time.Time

	got int64
	set bool // a deadline is set on the connection
}

// deadline is when the next read must have brought bytes: within the
// timeout, and before the rate allowance runs out.
func (k *Clock) deadline(now time.Time) time.Time {
	d := now.Add(k.Timeout)
	if k.MinRate > 0 {
		allowance := k.Timeout + time.Duration(float64(k.got)/float64(k.MinRate)*float64(time.Second))
		if r := k.Start.Add(allowance); r.Before(d) {
			d = r
		}
	}
	return d
}

// Read reads into p from r under the deadline; a read that runs past it
// fails with an error wrapping ErrTimeout and the read's own.
func (k *Clock) Read(r io.Reader, p []byte) (int, error) {
	var dl time.Time
	if k.Conn != nil {
		dl = k.deadline(time.Now())
		k.set = k.Conn.SetReadDeadline(dl) == nil
	}
	n, err := r.Read(p)
	k.got += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && k.set && (errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(dl)) {
		return n, fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return n, err
}

// Stop ends the clock. After a whole body it clears the deadline, so that
// it cannot cut the connection later (net/http reads ahead on it once a
// body is read). After a body that was refused part way (413, 408, 503) it
// sets the deadline in the past: closing the body must not wait for the
// rest of it (for an intercepted request it would read it all), and the
// connection is closed after the answer.
func (k *Clock) Stop(whole bool) {
	switch {
	case k.Conn == nil:
	case whole:
		if k.set {
			k.Conn.SetReadDeadline(time.Time{})
		}
	default:
		k.Conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// Join returns the n bytes of filled and last as one slice (last itself
// when it is the only chunk).
func Join(filled [][]byte, last []byte, n int64) []byte {
	if len(filled) == 0 {
		return last
	}
	out := make([]byte, 0, n)
	for _, c := range filled {
		out = append(out, c...)
	}
	return append(out, last...)
}
