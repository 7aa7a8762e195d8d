package observe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTee: the agent reads the answer unchanged; the observation gets
// its first bytes, and the hash of all of it only when it was read to its
// end.
func TestTee(t *testing.T) {
	const answer = `{"id":"ch_1","amount":500}`
	full := sha256.Sum256([]byte(answer))
	errReset := errors.New("connection reset")
	tests := []struct {
		name string
		body io.Reader
		max  int64
		// read is how many bytes the agent reads before it closes the
		// body; -1: all of it.
		read     int
		wantRead string
		wantHead string
		wantSum  string
		wantErr  error
	}{
		{name: "read to its end", body: strings.NewReader(answer), max: 1 << 10, read: -1,
			wantRead: answer, wantHead: answer, wantSum: hex.EncodeToString(full[:])},
		{name: "longer than the stored limit", body: strings.NewReader(answer), max: 8, read: -1,
			wantRead: answer, wantHead: answer[:8], wantSum: hex.EncodeToString(full[:])},
		{name: "closed early", body: strings.NewReader(answer), max: 1 << 10, read: 5,
			wantRead: answer[:5], wantHead: answer[:5]},
		{name: "broken", body: io.MultiReader(strings.NewReader("abc"), &failing{errReset}), max: 1 << 10, read: -1,
			wantRead: "abc", wantHead: "abc", wantErr: errReset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig()
			c := &fakeCall{}
			o := g.r.Start(t.Context(), c, testLine, fresh("k"))
			resp := &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(tc.body)}
			o.Tee(resp, tc.max)
			var got []byte
			var err error
			if tc.read < 0 {
				got, err = io.ReadAll(resp.Body)
			} else {
				got = make([]byte, tc.read)
				_, err = io.ReadFull(resp.Body, got)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("read error %v, want %v", err, tc.wantErr)
			}
			if err := resp.Body.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if string(got) != tc.wantRead {
				t.Errorf("the agent read %q, want %q", got, tc.wantRead)
			}
			g.settle(t)
			if len(c.attempts) != 1 {
				t.Fatalf("%d attempts recorded, want one", len(c.attempts))
			}
			a := c.attempts[0]
			if string(a.Head) != tc.wantHead || a.Resp != resp || !a.Sent || !errors.Is(a.Err, tc.wantErr) {
				t.Errorf("attempt head %q resp %p sent %v err %v; want head %q, the answer, sent, %v", a.Head, a.Resp, a.Sent, a.Err, tc.wantHead, tc.wantErr)
			}
			st := g.j.step(t, "k")
			if tc.wantErr == nil && (st.Response == nil || st.Response.BodyHash != tc.wantSum) {
				t.Errorf("response %+v, want hash %q", st.Response, tc.wantSum)
			}
		})
	}
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
