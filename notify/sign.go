package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of every delivery.
const (
	// HeaderSignature carries t=<unix seconds>,v1=<hex HMAC-SHA256 of
	// "<t>.<body>">; only webhooks with a secret get it.
	HeaderSignature = "Toolguard-Signature"
	// HeaderEventID is the event's seq: the same on every attempt at one
	// event, for receivers to dedupe deliveries.
	HeaderEventID = "Toolguard-Event-Id"
)

// DefaultTolerance is the replay window Verify callers should use: a
// signature older (or newer) than this by the receiver's clock is refused.
const DefaultTolerance = 5 * time.Minute

// Sign returns the Toolguard-Signature value for body sent at t: the
// HMAC-SHA256 of "<unix seconds>.<body>" keyed by secret, in hex.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header, a Toolguard-Signature value, against body and
// secret: one of its v1= signatures must be the HMAC of its t= and the
// body, and t must be within tolerance of now (0: no check). Its errors
// wrap ErrNoSignature, ErrSignature or ErrTimestamp.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("verify signature: %w", ErrNoSignature)
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		ok = ok || hmac.Equal(s, want)
	}
	if !ok {
		return fmt.Errorf("verify signature: %w", ErrSignature)
	}
	if age := now.Sub(time.Unix(sec, 0)); tolerance > 0 && (age > tolerance || age < -tolerance) {
		return fmt.Errorf("verify signature: %w: signed %s ago", ErrTimestamp, age.Round(time.Second))
	}
	return nil
}
