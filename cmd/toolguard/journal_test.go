package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// stoppedJournal writes a journal holding steps with the given keys, held
// for approval, and its secret beside it, as a stopped proxy leaves them.
func stoppedJournal(t *testing.T, keys ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolguard.db")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		_, err := j.Apply(context.Background(), k, func(*journal.Step) (journal.Change, error) {
			return journal.Change{Step: journal.Step{Key: k, API: "billing", Route: "create_invoice",
				Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval, HoldReason: "approval_required"}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretPath(path), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Regression: journal backup copied the journal without the secret a
// restore needs, and replaced an existing file without asking.
func TestJournalBackupSecretAndForce(t *testing.T) {
	cleanEnv(t)
	src := stoppedJournal(t, strings.Repeat("a", 64))
	dst := filepath.Join(t.TempDir(), "backup.db")

	code, stdout, stderr := cli(t, "journal", "backup", dst, "--journal", src)
	if code != 0 {
		t.Fatalf("backup: exit code %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "check ok") || !strings.Contains(stdout, "secret "+dst+".secret: copied from "+src+".secret") {
		t.Errorf("backup does not report the copy and its secret:\n%s", stdout)
	}
	want, _ := os.ReadFile(secretPath(src))
	got, err := os.ReadFile(dst + ".secret")
	if err != nil || string(got) != string(want) {
		t.Fatalf("backup secret = %q, %v; want %q", got, err, want)
	}
	if fi, err := os.Stat(dst + ".secret"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup secret mode: %v %v, want 0600", fi.Mode(), err)
	}
	before, _ := os.ReadFile(dst)

	tests := []struct {
		name     string
		existing string // the file that exists when the backup runs
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "journal exists", existing: dst, args: []string{"journal", "backup", dst, "--journal", src}, wantCode: 1,
			wantErr: dst + " exists; use --force to replace it"},
		{name: "only the secret exists", existing: dst + ".secret", args: []string{"journal", "backup", dst, "--journal", src}, wantCode: 1,
			wantErr: dst + ".secret exists; use --force to replace it"},
		{name: "forced", existing: dst, args: []string{"journal", "backup", "--force", dst, "--journal", src}, wantCode: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.existing == dst+".secret" {
				os.Remove(dst)
				t.Cleanup(func() { os.WriteFile(dst, before, 0o600) })
			}
			code, _, stderr := cli(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit code %d, want %d; stderr does not contain %q:\n%s", code, tc.wantCode, tc.wantErr, stderr)
			}
			if tc.wantCode != 0 {
				if got, _ := os.ReadFile(tc.existing); len(got) == 0 {
					t.Errorf("%s was removed or emptied by a refused backup", tc.existing)
				}
			}
			if _, err := os.Stat(dst); tc.existing == dst && err != nil {
				t.Errorf("backup file: %v", err)
			}
		})
	}
	// The forced copy is a journal that opens and lists its step.
	code, stdout, stderr = cli(t, "journal", "ls", "--journal", dst)
	if code != 0 || !strings.Contains(stdout, strings.Repeat("a", 64)) {
		t.Errorf("journal ls of the backup: exit code %d\n%s%s", code, stdout, stderr)
	}
}

func TestJournalBackupWithoutSecret(t *testing.T) {
	cleanEnv(t)
	src := stoppedJournal(t, strings.Repeat("b", 64))
	os.Remove(secretPath(src))
	dst := filepath.Join(t.TempDir(), "backup.db")
	code, _, stderr := cli(t, "journal", "backup", dst, "--journal", src)
	if code != 1 || !strings.Contains(stderr, "the journal's secret "+src+".secret, which a restore needs, cannot be read") {
		t.Errorf("backup of a journal without its secret: exit code %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("a refused backup wrote %s", dst)
	}
}
