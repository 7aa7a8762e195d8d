// Package pgtest gives tests a PostgreSQL database to run against: the DSN
// in TOOLGUARD_TEST_POSTGRES, and a fresh schema per test that is dropped
// afterwards. Without the variable the tests skip with one line, except
// under CI=true, where they fail: CI must run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable that holds the test database's DSN.
const EnvDSN = "TOOLGUARD_TEST_POSTGRES"

// DSN returns the test database's DSN, or skips the test (fails it when
// CI=true) when EnvDSN is unset.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, and CI=true: the PostgreSQL tests must run in CI", EnvDSN)
		}
		skipped.Skip(t, "PostgreSQL (set "+EnvDSN+")", fmt.Sprintf("PostgreSQL tests skipped: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvDSN))
	}
	return dsn
}

// Schema returns the name of a schema no other test uses; it is dropped
// with everything in it when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "tg_test_" + strings.ToLower(sanitize(t.Name())) + "_" + hex.EncodeToString(b)
	if len(name) > 63 {
		name = name[len(name)-63:]
		name = "t" + name[1:]
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", name, err)
		}
	})
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Database creates a database no other test uses and returns its DSN; it
// is dropped when the test ends. For tests that run toolguard processes,
// which keep their tables in the default schema.
func Database(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "tg_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(dsn, name)
}

// withDatabase returns dsn with its database replaced by name, keeping
// everything else (a password included).
func withDatabase(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name // key/value: the last setting wins
}
