package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/pgtest"
)

// pgReplica is a toolguard working directory whose journal is the
// PostgreSQL database at dsn, keyed by the secret in secretFile.
func pgReplica(t *testing.T, rules map[string]string, dsn, secretFile string) *setup {
	s := newSetup(t, rules)
	s.env = append(s.env, "TOOLGUARD_JOURNAL_BACKEND=postgres", "TOOLGUARD_JOURNAL_DSN="+dsn,
		"TOOLGUARD_JOURNAL_SECRET_FILE="+secretFile)
	return s
}

func writeSecret(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Two replicas share one database and one secret: a retry that reaches
// the other replica is answered from the journal, not sent again.
func TestPostgresReplicaReplaysOtherReplicasCall(t *testing.T) {
	dsn := pgtest.Database(t)
	up := newUpstream(t, false)
	rules := map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}
	secret := writeSecret(t, strings.Repeat("s", 40))
	a := pgReplica(t, rules, dsn, secret).start(t)
	b := pgReplica(t, rules, dsn, secret).start(t)

	ra, bodyA := post(t, a.client(t), up.URL+"/v1/invoices", `{"customer":"c1","amount":7}`, "Authorization", "Bearer agent")
	rb, bodyB := post(t, b.client(t), up.URL+"/v1/invoices", `{"customer":"c1","amount":7}`, "Authorization", "Bearer agent")
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	if bodyA != bodyB || ra.Header.Get("Toolguard-Outcome") != "forwarded" || rb.Header.Get("Toolguard-Outcome") != "replayed" {
		t.Fatalf("A: %s %q; B: %s %q; want B to replay A's answer", ra.Header.Get("Toolguard-Outcome"), bodyA,
			rb.Header.Get("Toolguard-Outcome"), bodyB)
	}
	if steps := stepsOf(t, b, ""); len(steps) != 1 || steps[0]["status"] != "committed" {
		t.Fatalf("replica B lists %v, want the one committed step", steps)
	}
	// The inspection commands read the database directly.
	key, _ := stepsOf(t, b, "")[0]["key"].(string)
	for _, args := range [][]string{
		{"journal", "ls", "--dsn", dsn, "--json"},
		{"journal", "show", key, "--dsn", dsn, "--json"},
		{"journal", "export", "--jsonl", "--dsn", dsn},
	} {
		if out := tgOK(t, nil, args...); !strings.Contains(out, key) || !strings.Contains(out, `"committed"`) {
			t.Fatalf("toolguard %s: %s", strings.Join(args, " "), out)
		}
	}
	if out := tgOK(t, nil, "journal", "tail", "--dsn", dsn); strings.Count(out, key[:12]) != 2 {
		t.Fatalf("journal tail --dsn: %s; want the step's two events", out)
	}
	if r := tg(t, nil, "journal", "backup", "x.db", "--dsn", dsn); r.code != 2 || !strings.Contains(r.stderr, "pg_dump") {
		t.Fatalf("journal backup --dsn: exit %d, %s; want 2 and a pointer to pg_dump", r.code, r.stderr)
	}
	if out := tgOK(t, []string{"TOOLGUARD_JOURNAL_BACKEND=postgres", "TOOLGUARD_JOURNAL_DSN=" + dsn}, "journal", "check"); !strings.Contains(out, "journal check: ok") {
		t.Fatalf("journal check from the environment's DSN: %s", out)
	}
}

// A replica given another secret would derive other keys for the same
// intents: it refuses to start, in one line that says why.
func TestPostgresReplicaWithOtherSecretRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	up := newUpstream(t, false)
	rules := map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}
	pgReplica(t, rules, dsn, writeSecret(t, strings.Repeat("a", 40))).start(t)

	other := pgReplica(t, rules, dsn, writeSecret(t, strings.Repeat("b", 40)))
	// A serve that wrongly starts is killed after a minute instead of
	// hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--rules", other.rules, "--ca-dir", filepath.Join(other.dir, "ca"), "--log-format", "json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + other.dir}, other.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if err == nil || ctx.Err() != nil || !strings.Contains(last, "journal secret differs") || !strings.Contains(last, "journal.secret_file") {
		t.Fatalf("serve with another secret: %v, last line %q; want a refusal naming journal.secret_file", err, last)
	}
}

func TestPostgresMigrateCommand(t *testing.T) {
	dsn := pgtest.Database(t)
	if out := tgOK(t, nil, "journal", "migrate", "--dsn", dsn); !strings.Contains(out, "migrated from version 0 to 1") {
		t.Fatalf("first migrate: %s", out)
	}
	if out := tgOK(t, []string{"TOOLGUARD_JOURNAL_DSN=" + dsn}, "journal", "migrate"); !strings.Contains(out, "at version 1, nothing to do") {
		t.Fatalf("second migrate: %s", out)
	}
	if r := tg(t, nil, "journal", "migrate", "--dsn", "postgres://u:hunter2@[bad"); r.code != 2 || strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("migrate with a bad DSN: exit %d, %s; want 2 without the password", r.code, r.stderr)
	}
}
