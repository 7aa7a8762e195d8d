package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// review ls and journal show print what a held step would send: the full
// target with its query and every body field with its value. Regression:
// they showed the key field what="buy one coffee" only.
func TestHeldRequestShown(t *testing.T) {
	cleanEnv(t)
	path := filepath.Join(t.TempDir(), "toolguard.db")
	j, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("5", 64)
	_, err = j.Apply(context.Background(), key, func(*journal.Step) (journal.Change, error) {
		return journal.Change{Step: journal.Step{Key: key, API: "pay", Route: "approve", Status: journal.StatusPrepared,
			Hold: journal.HoldAwaitingApproval, HoldReason: "approval_required",
			Method: "POST", Scheme: "https", Host: "pay.example.com", Path: "/v1/approve",
			Query: "to_account=ATTACKER&amount=9999999&api_key=[redacted]", BodyHash: "sha256:ab",
			KeyFields: []journal.KeyField{{Field: "what", Value: `"buy one coffee"`}},
			RequestFields: []journal.KeyField{{Field: "amount", Value: "9999999"}, {Field: "card.number", Value: `"[redacted]"`},
				{Field: "to_account", Value: `"ATTACKER"`}, {Field: "what", Value: `"buy one coffee"`}}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT[\d:.]+Z`)
	for _, tc := range []struct{ name, golden string }{
		{name: "review ls", golden: "review_ls_request.golden"},
		{name: "journal show", golden: "journal_show_request.golden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(strings.Fields(tc.name), "--journal", path)
			if tc.name == "journal show" {
				args = append(args, key)
			}
			code, stdout, stderr := cli(t, args...)
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr)
			}
			got := stamp.ReplaceAllString(stdout, "TIME")
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", tc.name, golden, got, want)
			}
		})
	}
}
