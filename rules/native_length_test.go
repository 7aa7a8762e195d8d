package rules

import (
	"strings"
	"testing"
)

// Square caps idempotency_key at 45 characters: a 64-character key would
// be refused with 400 on every send. native_idempotency.length sends a
// prefix of the key; rules check refuses a length outside 32-64.
func TestNativeIdempotencyLength(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		spec    string
		want    string // the value sent for key
		wantErr string
	}{
		{name: "whole key", spec: "{body: idempotency_key}", want: key},
		{name: "square", spec: "{body: idempotency_key, length: 45}", want: key[:45]},
		{name: "header", spec: "{header: Idempotency-Key, length: 64}", want: key},
		{name: "too short", spec: "{body: idempotency_key, length: 16}", wantErr: "test.yaml:7:57: native_idempotency.length: 16 out of range (want 32-64"},
		{name: "too long", spec: "{body: idempotency_key, length: 65}", wantErr: "native_idempotency.length: 65 out of range"},
		{name: "not a number", spec: "{body: idempotency_key, length: x}", wantErr: "native_idempotency.length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "api: square\nhosts: [connect.squareup.com]\nroutes:\n  - name: pay\n    match: POST /v2/payments\n    effect: irreversible\n    native_idempotency: " + tc.spec + "\n"
			api, err := Parse("test.yaml", []byte(src))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := api.Routes[0].NativeIdempotency.Value(key); got != tc.want {
				t.Fatalf("Value = %q, want %q", got, tc.want)
			}
		})
	}
}
