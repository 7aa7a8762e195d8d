package notify

import (
	"errors"
	"testing"
	"time"
)

// TestSignGolden pins the signature to an HMAC computed elsewhere
// (Python's hmac module), so that receivers in any language agree.
func TestSignGolden(t *testing.T) {
	got := Sign([]byte("whsec_0123456789abcdef"), time.Unix(1700000000, 0), []byte(`{"seq":1}`))
	want := "t=1700000000,v1=9f70c63ba4abc0f898d280b91b9fab73171fead40ad34173bd226a14b7e0da65"
	if got != want {
		t.Errorf("Sign() = %s\nwant     %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	secret, body := []byte("whsec_0123456789abcdef"), []byte(`{"seq":1}`)
	signed := time.Unix(1700000000, 0)
	good := Sign(secret, signed, body)
	tests := []struct {
		name   string
		secret []byte
		header string
		body   string
		now    time.Time
		want   error
	}{
		{name: "good", header: good, now: signed.Add(time.Minute)},
		{name: "good, spaces and a second signature", header: "t=1700000000, v1=00ff, " + good[len("t=1700000000,"):], now: signed},
		{name: "tampered body", header: good, body: `{"seq":2}`, now: signed, want: ErrSignature},
		{name: "other secret", secret: []byte("whsec_other_secret_000"), header: good, now: signed, want: ErrSignature},
		{name: "too old", header: good, now: signed.Add(DefaultTolerance + time.Second), want: ErrTimestamp},
		{name: "from the future", header: good, now: signed.Add(-DefaultTolerance - time.Second), want: ErrTimestamp},
		{name: "empty", header: "", now: signed, want: ErrNoSignature},
		{name: "no v1", header: "t=1700000000", now: signed, want: ErrNoSignature},
		{name: "no t", header: good[len("t=1700000000,"):], now: signed, want: ErrNoSignature},
		{name: "other timestamp", header: "t=1700000001," + good[len("t=1700000000,"):], now: signed, want: ErrSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, b := secret, body
			if tc.secret != nil {
				s = tc.secret
			}
			if tc.body != "" {
				b = []byte(tc.body)
			}
			err := Verify(s, tc.header, b, tc.now, DefaultTolerance)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify() = %v, want %v", err, tc.want)
			}
		})
	}
}
