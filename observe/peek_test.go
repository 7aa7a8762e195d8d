package observe

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// onlyReader hides a reader's other methods (WriterTo...), as a request
// body of unknown length would.
type onlyReader struct{ io.Reader }

// brokenReader gives its bytes, then an error.
type brokenReader struct {
	r   io.Reader
	err error
}

func (b *brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, b.err
	}
	return n, err
}

// TestPeek: the key's bytes are read within max and the room given,
// never waiting for more, and the body put back gives the upstream
// exactly what the agent sent, whatever was read of it.
func TestPeek(t *testing.T) {
	errBroke := errors.New("connection reset")
	tests := []struct {
		name   string
		body   io.Reader // nil: no body
		length int64     // -1: unknown
		max    int64
		room   int64 // total room to hand out, in chunks of 4
		sent   string
		want   Peeked
		read   string // what Peek holds
	}{
		{name: "no body", length: 0, max: 10, room: 100, want: PeekWhole},
		{name: "whole, known length", body: strings.NewReader("abcdefg"), length: 7, max: 10, room: 100, sent: "abcdefg", want: PeekWhole, read: "abcdefg"},
		{name: "whole, unknown length", body: onlyReader{strings.NewReader("abcdefg")}, length: -1, max: 10, room: 100, sent: "abcdefg", want: PeekWhole, read: "abcdefg"},
		{name: "exactly max", body: onlyReader{strings.NewReader("abcdefghij")}, length: -1, max: 10, room: 100, sent: "abcdefghij", want: PeekWhole, read: "abcdefghij"},
		{name: "too large, announced", body: strings.NewReader("abcdefghijk"), length: 11, max: 10, room: 100, sent: "abcdefghijk", want: PeekTooLarge},
		{name: "too large, unknown length", body: onlyReader{strings.NewReader("abcdefghijklmn")}, length: -1, max: 10, room: 100, sent: "abcdefghijklmn", want: PeekTooLarge, read: "abcdefghijk"},
		{name: "no room", body: strings.NewReader("abcdefg"), length: 7, max: 10, room: 0, sent: "abcdefg", want: PeekPartial},
		{name: "room runs out", body: onlyReader{strings.NewReader("abcdefg")}, length: -1, max: 10, room: 4, sent: "abcdefg", want: PeekPartial, read: "abcd"},
		{name: "broken", body: &brokenReader{r: strings.NewReader("abc"), err: errBroke}, length: -1, max: 10, room: 100, sent: "abc", want: PeekPartial, read: "abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://example.com/", nil)
			if tc.body != nil {
				req.Body = io.NopCloser(tc.body)
			}
			req.ContentLength = tc.length
			held := int64(0)
			room := func(have int64) int64 {
				if have < held {
					return held - have
				}
				if take := min(4, tc.room-held); take > 0 {
					held += take
					return held - have
				}
				return 0
			}
			body, got := Peek(req, tc.max, room)
			if got != tc.want {
				t.Errorf("Peek = %v, want %v", got, tc.want)
			}
			if string(body) != tc.read {
				t.Errorf("Peek holds %q, want %q", body, tc.read)
			}
			var sent []byte
			if req.Body != nil {
				sent, _ = io.ReadAll(req.Body)
			}
			if string(sent) != tc.sent {
				t.Errorf("the upstream would get %q, want the agent's %q", sent, tc.sent)
			}
		})
	}
}

func TestPeekedString(t *testing.T) {
	for p, want := range map[Peeked]string{PeekWhole: "whole", PeekTooLarge: "too large", PeekPartial: "partial", 9: "unknown"} {
		if got := p.String(); got != want {
			t.Errorf("Peeked(%d).String() = %q, want %q", p, got, want)
		}
	}
}
