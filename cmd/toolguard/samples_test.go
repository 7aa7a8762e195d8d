package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRulesCheckSamples(t *testing.T) {
	cleanEnv(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"method":"POST","url":"https://api.stripe.com/v1/refunds","content_type":"application/x-www-form-urlencoded","body":"payment_intent=pi_1"}`+"\n"), 0o644)
	tests := []struct {
		name     string
		sample   string
		wantCode int
		golden   string
	}{
		{name: "every key field found", sample: "../../examples/samples/requests.jsonl", wantCode: 0},
		{name: "fields missing", sample: bad, wantCode: 1, golden: "rules_check_sample_missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, "rules", "check", "../../examples/rules", "--sample", tc.sample)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if tc.golden != "" {
				golden(t, tc.golden, stderr)
			}
		})
	}
}
