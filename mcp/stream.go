package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"time"
)

// ErrNoResponse: the answer ended (or broke) before the response to the
// request arrived.
var ErrNoResponse = errors.New("answer ended before the response to the request")

// ErrOtherResponse: a JSON answer that is not the response to the request
// (another id, no id, or not a response at all). It is no outcome of the
// request: whoever it answers, it must not be taken, or kept, as this
// request's result.
var ErrOtherResponse = errors.New("answer is not the response to the request")

// Stream is what a reader of an SSE answer learnt that lets it resume the
// stream after the server closed it (2025-11-25: a server may close a
// request's stream early and have the client poll with a GET carrying
// Last-Event-ID).
type Stream struct {
	// LastEventID is the id of the last event read; "" when none had one.
	LastEventID string
	// Retry is the reconnection delay the server asked for; zero when it
	// asked for none.
	Retry time.Duration
	// Relay, when set, receives the data of every event before the
	// response (notifications, and requests the server makes of the
	// client), as it is read.
	Relay func(data []byte)
}

// ReadResponse reads a server's answer to the request with id: a single
// JSON message (application/json), or an SSE stream (text/event-stream)
// whose events are read until the response with that id (notifications
// and requests of the server before it are skipped). A body or an event
// larger than max gives an error; so does a stream that ends first
// (wrapping ErrNoResponse), and a JSON message that is not a response with
// that id (wrapping ErrOtherResponse): ids are checked the same way on
// both paths.
func ReadResponse(contentType string, body io.Reader, id []byte, max int64) ([]byte, error) {
	return ReadResponseFrom(contentType, body, id, max, &Stream{})
}

// ReadResponseFrom is ReadResponse that records in st where an SSE stream
// can be resumed.
func ReadResponseFrom(contentType string, body io.Reader, id []byte, max int64, st *Stream) (raw []byte, err error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "text/event-stream" {
		b, err := io.ReadAll(io.LimitReader(body, max+1))
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		if int64(len(b)) > max {
			return nil, fmt.Errorf("read response: larger than %d bytes", max)
		}
		if !matchesID(b, id) {
			return nil, fmt.Errorf("%w: want a response with id %s", ErrOtherResponse, id)
		}
		return b, nil
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), int(max)+1)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if data.Len() > 0 && matchesID(data.Bytes(), id) {
				return bytes.Clone(data.Bytes()), nil
			}
			if data.Len() > 0 && st.Relay != nil {
				st.Relay(bytes.Clone(data.Bytes()))
			}
			data.Reset()
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
			if int64(data.Len()) > max {
				return nil, fmt.Errorf("read event: larger than %d bytes", max)
			}
		case "id":
			st.LastEventID = string(value)
		case "retry":
			if ms, err := strconv.ParseInt(string(value), 10, 64); err == nil && ms >= 0 {
				st.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoResponse, err)
	}
	if data.Len() > 0 && matchesID(data.Bytes(), id) {
		return bytes.Clone(data.Bytes()), nil
	}
	return nil, ErrNoResponse
}

// matchesID reports whether data is a response to the request with id.
func matchesID(data, id []byte) bool {
	ms, err := members(data)
	if err != nil {
		return false
	}
	_, res := ms["result"]
	_, e := ms["error"]
	return (res || e) && SameID(ms["id"], id)
}

// SameID compares two raw ids: equal strings, or numbers of equal value.
func SameID(a, b []byte) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 || a[0] == '"' || b[0] == '"' {
		return false
	}
	var x, y float64
	return jsonNumber(a, &x) && jsonNumber(b, &y) && x == y
}

func jsonNumber(b []byte, f *float64) bool { return json.Unmarshal(b, f) == nil }
