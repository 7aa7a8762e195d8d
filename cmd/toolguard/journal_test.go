package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// stoppedJournal writes a journal holding steps with the given keys, held
// for approval, and its secret beside it, as a stopped proxy leaves them.
func stoppedJournal(t *testing.T, keys ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolguard.db")
	j, err := bolt.Open(path, bolt.Options{})
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

// The CLI takes a unique key prefix, as git does, offline and online.
func TestKeyPrefix(t *testing.T) {
	cleanEnv(t)
	unique := "c0ffee" + strings.Repeat("0", 58)
	twinA, twinB := "abcd01"+strings.Repeat("0", 58), "abcd02"+strings.Repeat("0", 58)
	offline := stoppedJournal(t, unique, twinA, twinB)
	onlinePath := stoppedJournal(t, unique, twinA, twinB)
	j, err := bolt.Open(onlinePath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	api := httptest.NewServer(admin.New(admin.Options{Journal: j, InsecureNoAuth: true}))
	defer api.Close()

	for _, src := range []struct{ name, flag, value string }{
		{name: "offline", flag: "--journal", value: offline},
		{name: "online", flag: "--admin", value: api.URL},
	} {
		tests := []struct {
			name       string
			args       []string
			wantCode   int
			wantStdout string
			wantStderr []string
		}{
			{name: "show unique prefix", args: []string{"journal", "show", "c0ff"}, wantStdout: unique},
			{name: "show ambiguous prefix", args: []string{"journal", "show", "abcd"}, wantCode: 1,
				wantStderr: []string{"key prefix abcd is ambiguous", twinA, twinB}},
			{name: "show no match", args: []string{"journal", "show", "dead"}, wantCode: 1},
			{name: "approve ambiguous prefix", args: []string{"review", "approve", "abcd"}, wantCode: 1,
				wantStderr: []string{"key prefix abcd is ambiguous"}},
			{name: "approve unique prefix", args: []string{"review", "approve", "abcd02"}, wantStdout: "approved " + twinB},
			{name: "resolve unique prefix", args: []string{"review", "resolve", "c0ffee", "--outcome", "not-executed"},
				wantStdout: "resolved " + unique},
		}
		for _, tc := range tests {
			t.Run(src.name+"/"+tc.name, func(t *testing.T) {
				code, stdout, stderr := cli(t, append(tc.args, src.flag, src.value)...)
				if code != tc.wantCode || !strings.Contains(stdout, tc.wantStdout) {
					t.Errorf("exit code %d, want %d; stdout does not contain %q:\n%s%s", code, tc.wantCode, tc.wantStdout, stdout, stderr)
				}
				for _, w := range tc.wantStderr {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr does not contain %q:\n%s", w, stderr)
					}
				}
			})
		}
	}
}

// Regression: journal ls stopped at --limit without a word.
func TestListSaysWhenLimitCut(t *testing.T) {
	cleanEnv(t)
	path := stoppedJournal(t, strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64))
	tests := []struct {
		name      string
		args      []string
		wantLines int // lines of the table, header included
		wantCut   bool
	}{
		{name: "journal ls cut", args: []string{"journal", "ls", "--limit", "2"}, wantLines: 3, wantCut: true},
		{name: "journal ls whole", args: []string{"journal", "ls", "--limit", "3"}, wantLines: 4},
		{name: "review ls cut", args: []string{"review", "ls", "--limit", "1"}, wantLines: 2, wantCut: true},
		{name: "review ls whole", args: []string{"review", "ls"}, wantLines: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append(tc.args, "--journal", path)...)
			if code != 0 {
				t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
			}
			if got := strings.Count(stdout, "\n"); got != tc.wantLines {
				t.Errorf("%d lines, want %d:\n%s", got, tc.wantLines, stdout)
			}
			cut := strings.Contains(stderr, "of more; use --limit")
			if cut != tc.wantCut {
				t.Errorf("stderr says the list was cut: %v, want %v; stderr:\n%s", cut, tc.wantCut, stderr)
			}
		})
	}
}

// The CLI reads the operator token from TOOLGUARD_ADMIN_TOKEN_FILE.
func TestAdminTokenFile(t *testing.T) {
	cleanEnv(t)
	j, err := bolt.Open(stoppedJournal(t, strings.Repeat("e", 64)), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	api := httptest.NewServer(admin.New(admin.Options{Journal: j, Token: "s3cret"}))
	defer api.Close()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, wrong, empty := write("good", "s3cret\n"), write("wrong", "nope\n"), write("empty", "\n")
	tests := []struct {
		name       string
		env        map[string]string
		wantCode   int
		wantStderr string
	}{
		{name: "token file", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN_FILE": good}},
		{name: "token", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN": "s3cret"}},
		{name: "wrong token file", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN_FILE": wrong}, wantCode: 1,
			wantStderr: "TOOLGUARD_ADMIN_TOKEN_FILE"},
		{name: "both", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN_FILE": good, "TOOLGUARD_ADMIN_TOKEN": "s3cret"}, wantCode: 2,
			wantStderr: "TOOLGUARD_ADMIN_TOKEN_FILE (admin.token_file): set together with TOOLGUARD_ADMIN_TOKEN"},
		{name: "missing file", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN_FILE": filepath.Join(dir, "absent")}, wantCode: 2,
			wantStderr: "cannot read token file"},
		{name: "empty file", env: map[string]string{"TOOLGUARD_ADMIN_TOKEN_FILE": empty}, wantCode: 2, wantStderr: "is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := cli(t, "journal", "ls", "--admin", api.URL)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit code %d, want %d; stderr does not contain %q:\n%s", code, tc.wantCode, tc.wantStderr, stderr)
			}
			if code == 0 && !strings.Contains(stdout, strings.Repeat("e", 64)) {
				t.Errorf("journal ls does not list the step:\n%s", stdout)
			}
		})
	}
}

// review ls and journal show print a held step's key summary: compact in
// the table, whole in show.
func TestKeyFieldsShown(t *testing.T) {
	cleanEnv(t)
	path := filepath.Join(t.TempDir(), "toolguard.db")
	j, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("7", 64)
	fields := []journal.KeyField{{Field: "customer", Value: `"cus_1"`}, {Field: "amount", Value: "1250"},
		{Field: "card", Value: `{"exp":"12/30","number":"[redacted]"}`}}
	_, err = j.Apply(context.Background(), key, func(*journal.Step) (journal.Change, error) {
		return journal.Change{Step: journal.Step{Key: key, API: "billing", Route: "charge", KeyFields: fields,
			Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval, HoldReason: "approval_required"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretPath(path), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "review ls", args: []string{"review", "ls"}, want: `customer="cus_1" amount=1250 card={"exp":"12/30…`},
		{name: "journal show", args: []string{"journal", "show", key}, want: `key_fields:    customer="cus_1" amount=1250 card={"exp":"12/30","number":"[redacted]"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append(tc.args, "--journal", path)...)
			if code != 0 || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit code %d; stdout does not contain %q:\n%s%s", code, tc.want, stdout, stderr)
			}
		})
	}
}
