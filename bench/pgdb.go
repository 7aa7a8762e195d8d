//go:build linux

package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// defaultDSN is the local PostgreSQL server the harness uses by default.
const defaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// pgServer creates the run's databases on a PostgreSQL server and drops
// them when the run ends.
type pgServer struct {
	admin    string // DSN of a database to connect to for CREATE and DROP
	prefix   string
	settings []string // name=value set on every database it creates
	created  []string
	names    []string // every database created, dropped or not
}

func newPGServer(dsn string, settings []string) *pgServer {
	return &pgServer{admin: dsn, settings: settings,
		prefix: "toolguard_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// create makes a fresh database named for what it serves and returns its
// DSN.
func (s *pgServer) create(ctx context.Context, what string) (string, error) {
	return s.createFrom(ctx, what, "")
}

// createFrom is create with the new database a copy of template (none
// when empty), which must have no connections.
func (s *pgServer) createFrom(ctx context.Context, what, template string) (string, error) {
	u, err := url.Parse(s.admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-dsn: want a postgres:// URL")
	}
	name := s.prefix + "_" + what
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	create := "CREATE DATABASE " + ident
	if template != "" {
		// FILE_COPY (PostgreSQL 15) copies the files between two
		// checkpoints; the default, WAL_LOG, would write the whole copy to
		// the WAL, to be flushed and checkpointed during what follows.
		create += " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY = FILE_COPY"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	s.created = append(s.created, name)
	for _, kv := range s.settings {
		k, v, _ := strings.Cut(kv, "=")
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET %s = %s", ident, k, quoteLiteral(v))); err != nil {
			return "", fmt.Errorf("set %s on database %s: %w", k, name, err)
		}
	}
	u.Path = "/" + name
	s.names = append(s.names, name)
	return u.String(), nil
}

// dsnFor is the -dsn with database name.
func (s *pgServer) dsnFor(name string) string {
	u, err := url.Parse(s.admin)
	if err != nil {
		return s.admin
	}
	u.Path = "/" + name
	return u.String()
}

// adminDSN is the -dsn without pgxpool's own parameters (pool_max_conns
// and the like), which a single connection would send to the server.
func (s *pgServer) adminDSN() string {
	u, err := url.Parse(s.admin)
	if err != nil {
		return s.admin
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// last is the name of the newest database create made.
func (s *pgServer) last() string { return s.names[len(s.names)-1] }

// drop removes every database create made.
func (s *pgServer) drop() {
	if len(s.created) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		progress("drop bench databases: %v", err)
		return
	}
	defer conn.Close(ctx)
	for _, name := range s.created {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			progress("drop database %s: %v", name, err)
		}
	}
	s.created = nil
}

// serverSettings reads the server settings that bound a commit.
func (s *pgServer) serverSettings(ctx context.Context) ([]string, error) {
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var out []string
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return nil, err
	}
	out = append(out, "server_version="+version)
	for _, name := range []string{"synchronous_commit", "fsync", "wal_sync_method", "commit_delay", "commit_siblings", "max_connections", "shared_buffers"} {
		var v string
		if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, name+"="+v)
	}
	return out, nil
}

// validSettingName accepts a PostgreSQL setting name (letters, digits,
// underscores and dots).
func validSettingName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func quoteLiteral(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// writeSecret writes the HMAC secret the replicas share.
func writeSecret(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "shared.secret")
	return path, os.WriteFile(path, []byte(strconv.FormatInt(time.Now().UnixNano(), 16)+"-bench-shared-secret-0123456789abcdef\n"), 0o600)
}

// pgEnv are the settings that put a toolguard subprocess on the database
// at dsn with the shared secret.
func pgEnv(dsn, secretFile string) []string {
	return []string{"TOOLGUARD_JOURNAL_BACKEND=postgres", "TOOLGUARD_JOURNAL_DSN=" + dsn, "TOOLGUARD_JOURNAL_SECRET_FILE=" + secretFile}
}

// size is database name's size in MiB (0 when it cannot be read).
func (s *pgServer) size(ctx context.Context, name string) float64 {
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		return 0
	}
	defer conn.Close(context.Background())
	var b int64
	if err := conn.QueryRow(ctx, "SELECT pg_database_size($1)", name).Scan(&b); err != nil {
		return 0
	}
	return mib(b)
}
