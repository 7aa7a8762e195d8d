package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal/postgres"
)

// pgCLIReplica is a toolguard working directory whose journal is the
// PostgreSQL database at dsn.
func pgCLIReplica(t *testing.T, rules map[string]string, dsn string) *setup {
	s := newSetup(t, rules)
	secret := filepath.Join(s.dir, "journal.secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "TOOLGUARD_JOURNAL_BACKEND=postgres", "TOOLGUARD_JOURNAL_DSN="+dsn,
		"TOOLGUARD_JOURNAL_SECRET_FILE="+secret)
	return s
}

// The inspection commands read a PostgreSQL journal directly with --dsn
// (or the serve environment's DSN), and point to pg_dump for backups.
func TestPostgresInspectionCommands(t *testing.T) {
	dsn := pgtest.Database(t)
	up := newUpstream(t, false)
	p := pgCLIReplica(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}, dsn).start(t)
	r, _ := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1","amount":7}`)
	key := r.Header.Get("Toolguard-Key")
	if r.StatusCode != http.StatusCreated || key == "" {
		t.Fatalf("guarded call: %d, key %q", r.StatusCode, key)
	}
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
	env := []string{"TOOLGUARD_JOURNAL_BACKEND=postgres", "TOOLGUARD_JOURNAL_DSN=" + dsn}
	if out := tgOK(t, env, "journal", "check"); !strings.Contains(out, "journal check: ok") {
		t.Fatalf("journal check from the environment's DSN: %s", out)
	}
	if r := tg(t, nil, "journal", "backup", "x.db", "--dsn", dsn); r.code != 2 || !strings.Contains(r.stderr, "pg_dump") {
		t.Fatalf("journal backup --dsn: exit %d, %s; want 2 and a pointer to pg_dump", r.code, r.stderr)
	}
}

func TestPostgresMigrateCommand(t *testing.T) {
	dsn := pgtest.Database(t)
	if out := tgOK(t, nil, "journal", "migrate", "--dsn", dsn); !strings.Contains(out, "migrated from version 0 to "+strconv.Itoa(postgres.SchemaVersion)) {
		t.Fatalf("first migrate: %s", out)
	}
	if out := tgOK(t, []string{"TOOLGUARD_JOURNAL_DSN=" + dsn}, "journal", "migrate"); !strings.Contains(out, "at version "+strconv.Itoa(postgres.SchemaVersion)+", nothing to do") {
		t.Fatalf("second migrate: %s", out)
	}
	if r := tg(t, nil, "journal", "migrate", "--dsn", "postgres://u:hunter2@[bad"); r.code != 2 || strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("migrate with a bad DSN: exit %d, %s; want 2 without the password", r.code, r.stderr)
	}
}
