package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/toolguard/toolguard/observe"
)

// onlyReader hides a reader's other methods (WriterTo...), as a request
// body of unknown length would.
type onlyReader struct{ io.Reader }

// TestPeekBody: the key's bytes are read within the limits, never waiting
// for room, and the body put back gives the upstream exactly what the
// agent sent, whatever was read of it.
func TestPeekBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		length  int64 // -1: unknown
		maxBody int64
		buffer  int64
		taken   int64 // budget already held by other calls
		want    observe.Peeked
	}{
		{name: "small", body: `{"a":1}`, length: 7, maxBody: 100, buffer: 1 << 20, want: observe.PeekWhole},
		{name: "small, unknown length", body: `{"a":1}`, length: -1, maxBody: 100, buffer: 1 << 20, want: observe.PeekWhole},
		{name: "exactly the room taken", body: strings.Repeat("x", 64), length: 64, maxBody: 100, buffer: 64, want: observe.PeekWhole},
		{name: "longer than the budget: read alone", body: strings.Repeat("x", 300), length: -1, maxBody: 1000, buffer: 100, want: observe.PeekWhole},
		{name: "too large, announced", body: strings.Repeat("x", 300), length: 300, maxBody: 100, buffer: 1 << 20, want: observe.PeekTooLarge},
		{name: "too large, unknown length", body: strings.Repeat("x", 300), length: -1, maxBody: 100, buffer: 1 << 20, want: observe.PeekTooLarge},
		{name: "no room", body: `{"a":1}`, length: 7, maxBody: 100, buffer: 64, taken: 64, want: observe.PeekPartial},
		{name: "no body", length: 0, maxBody: 100, buffer: 64, want: observe.PeekWhole},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{opts: Options{MaxBody: tc.maxBody, BodyBuffer: tc.buffer}, bodies: semaphore.NewWeighted(tc.buffer)}
			if tc.taken > 0 && !s.bodies.TryAcquire(tc.taken) {
				t.Fatal("cannot take the budget")
			}
			req, _ := http.NewRequest(http.MethodPost, "http://example.com/", nil)
			if tc.body != "" || tc.length != 0 {
				req.Body = io.NopCloser(onlyReader{strings.NewReader(tc.body)})
			}
			req.ContentLength = tc.length
			c := &call{in: req}
			got := s.peekBody(c)
			if got != tc.want {
				t.Errorf("peekBody = %d, want %d", got, tc.want)
			}
			if got == observe.PeekWhole && string(c.body) != tc.body {
				t.Errorf("c.body = %q, want the whole body", c.body)
			}
			var sent []byte
			if req.Body != nil {
				sent, _ = io.ReadAll(req.Body)
			}
			if string(sent) != tc.body {
				t.Errorf("the upstream would get %d bytes %q, want the agent's %d", len(sent), sent, len(tc.body))
			}
			s.releaseBody(c)
			if !s.bodies.TryAcquire(tc.buffer - tc.taken) {
				t.Errorf("the body's room was not given back")
			}
		})
	}
}
