package eventstream

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"
)

// ContentType is the media type of an event stream.
const ContentType = "text/event-stream"

// Event renders data as one SSE event of type message, each of its lines
// a data line.
func Event(data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: message\n")
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// Accepted reports whether a request's Accept header admits an event
// stream.
func Accepted(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ContentType {
				return true
			}
		}
	}
	return false
}

// Is reports whether a response's Content-Type is an event stream.
func Is(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == ContentType
}

// Copy writes resp to w: its header, status and body. An event stream
// goes out event by event, flushed as it comes.
func Copy(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if resp.Body == nil {
		return
	}
	defer resp.Body.Close()
	if !Is(resp.Header) {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
