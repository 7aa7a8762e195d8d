package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testPostgres returns the DSN of the PostgreSQL server the tests may use
// (TOOLGUARD_TEST_POSTGRES). Without one the test is skipped with one line,
// except under CI, where a missing server is a failure: .ci/run starts one.
func testPostgres(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("TOOLGUARD_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("TOOLGUARD_TEST_POSTGRES is not set: CI must run the PostgreSQL tests (see .ci/run)")
		}
		skipped.Skip(t, "PostgreSQL (set TOOLGUARD_TEST_POSTGRES)", "TOOLGUARD_TEST_POSTGRES is not set: skipping a test that needs PostgreSQL")
	}
	return dsn
}

// freshDatabase creates an empty database for one test on the server of
// TOOLGUARD_TEST_POSTGRES and returns its DSN; it is dropped when the test
// ends.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := testPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to TOOLGUARD_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "tg_e2e_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TOOLGUARD_TEST_POSTGRES must be a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// backends are the journal backends the crash matrix runs on.
var backends = []string{"bolt", "postgres"}

// useBackend points s at the named journal backend: for postgres, a fresh
// database and a secret file that every process of s shares, as replicas
// would through a Secret.
func (s *setup) useBackend(t *testing.T, backend string) {
	t.Helper()
	if backend != "postgres" {
		return
	}
	dsn := freshDatabase(t)
	secret := filepath.Join(s.dir, "shared.secret")
	writeSecret(t, secret, "0123456789abcdef0123456789abcdef")
	// A 3s lease instead of the default 15s: takeovers in the crash matrix
	// wait for the dead owner's lease, and the 15s wait made each case slow.
	// Tests that need another lease append their own setting after this one.
	s.env = append(s.env,
		"TOOLGUARD_RECOVERY_LEASE=3s",
		"TOOLGUARD_JOURNAL_BACKEND=postgres",
		"TOOLGUARD_JOURNAL_DSN="+dsn,
		"TOOLGUARD_JOURNAL_SECRET_FILE="+secret)
}

// writeSecret writes an HMAC secret file readable only by its owner.
func writeSecret(t *testing.T, path, secret string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(fmt.Errorf("write secret: %w", err))
	}
}
