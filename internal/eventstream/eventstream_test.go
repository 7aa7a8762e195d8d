package eventstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want string
	}{
		{name: "one line", data: `{"jsonrpc":"2.0"}`, want: "event: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n"},
		{name: "lines", data: "a\nb", want: "event: message\ndata: a\ndata: b\n\n"},
		{name: "empty", data: "", want: "event: message\ndata: \n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Event([]byte(tc.data))); got != tc.want {
				t.Errorf("Event(%q) = %q, want %q", tc.data, got, tc.want)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		accept []string
		want   bool
	}{
		{name: "none"},
		{name: "JSON only", accept: []string{"application/json"}},
		{name: "both", accept: []string{"application/json, text/event-stream"}, want: true},
		{name: "second header", accept: []string{"application/json", "text/event-stream;q=0.9"}, want: true},
		{name: "malformed part", accept: []string{"text/;;, text/event-stream"}, want: true},
		{name: "wildcard is not enough", accept: []string{"*/*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Accept": tc.accept}
			if got := Accepted(h); got != tc.want {
				t.Errorf("Accepted(%q) = %v, want %v", tc.accept, got, tc.want)
			}
		})
	}
}

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		want        bool
	}{
		{contentType: "text/event-stream", want: true},
		{contentType: "text/event-stream; charset=utf-8", want: true},
		{contentType: "application/json"},
		{contentType: ""},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			if got := Is(http.Header{"Content-Type": {tc.contentType}}); got != tc.want {
				t.Errorf("Is(%q) = %v, want %v", tc.contentType, got, tc.want)
			}
		})
	}
}

// flushCounter is a ResponseWriter that counts its flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

func TestCopy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		body        io.ReadCloser
		wantFlushes bool
	}{
		{name: "JSON", contentType: "application/json", body: io.NopCloser(strings.NewReader(`{"a":1}`))},
		{name: "event stream", contentType: "text/event-stream", body: io.NopCloser(strings.NewReader(`{"a":1}`)), wantFlushes: true},
		{name: "no body", contentType: "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
			resp := &http.Response{StatusCode: 201, Header: http.Header{"Content-Type": {tc.contentType}, "X-A": {"1"}}, Body: tc.body}
			Copy(w, resp)
			want := `{"a":1}`
			if tc.body == nil {
				want = ""
			}
			if w.Code != 201 || w.Header().Get("X-A") != "1" || w.Body.String() != want {
				t.Fatalf("copied %d %v %q", w.Code, w.Header(), w.Body.String())
			}
			if (w.flushes > 0) != tc.wantFlushes {
				t.Fatalf("%d flushes", w.flushes)
			}
		})
	}
}
