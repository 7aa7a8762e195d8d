package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's numbered steps, NNNN_name.sql, applied in
// order; schema_version records the ones applied.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migration is one numbered schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", e.Name())
		}
		data, err := migrations.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(data)})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].version < out[k].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the version of the newest migration built into this
// binary.
var SchemaVersion = func() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}()

// migrateLockKey is the advisory lock (with the schema name's hash as
// second key) held while migrating, so that replicas starting together
// migrate one after the other.
const migrateLockKey = 0x746f6f6c // "tool"

// Migrate brings the schema named by opts.Schema (default "toolguard") of
// the database at opts.DSN up to this binary's SchemaVersion, creating it
// when missing. It returns the version found before and the version now. A
// database migrated by a newer toolguard is refused with ErrSchemaNewer and
// left untouched.
func Migrate(ctx context.Context, opts Options) (from, to int, err error) {
	opts = opts.withDefaults()
	cfg, err := opts.poolConfig()
	if err != nil {
		return 0, 0, err
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, 0, classify("connect to journal database", err, false)
	}
	defer pool.Close()
	return migrate(ctx, pool, opts.Schema, opts.Logger)
}

// migrate applies the missing migrations under the schema's advisory lock,
// each in its own transaction with its schema_version row.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) (from, to int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, classify("connect to journal database", err, false)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext($2))", migrateLockKey, schema); err != nil {
		return 0, 0, classify("lock journal schema for migration", err, false)
	}
	defer func() {
		// A failed unlock leaves the lock with the session; closing the
		// connection releases it.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, hashtext($2))", migrateLockKey, schema); uerr != nil {
			_ = conn.Conn().Close(context.Background())
		}
	}()
	ident := pgx.Identifier{schema}.Sanitize()
	// A schema created beforehand (by a DBA, for a role without CREATE on
	// the database) is used as it is.
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return 0, 0, classify("look up journal schema "+schema, err, false)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
			return 0, 0, classify("create journal schema "+schema, err, true)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident+
		".schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return 0, 0, classify("create journal schema "+schema, err, true)
	}
	from, err = currentVersion(ctx, conn.Conn(), schema)
	if err != nil {
		return 0, 0, err
	}
	if from > len(ms) {
		return from, from, newerError(schema, from)
	}
	for _, m := range ms[from:] {
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", m.version)
			return err
		})
		if err != nil {
			return from, m.version - 1, classify("apply journal migration "+m.name, err, true)
		}
		log.Info("journal: migrated schema", "schema", schema, "version", m.version, "migration", m.name)
	}
	return from, len(ms), nil
}

// currentVersion reads the schema's version; 0 when nothing was applied.
func currentVersion(ctx context.Context, conn *pgx.Conn, schema string) (int, error) {
	var v int
	err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&v)
	if err != nil {
		return 0, classify("read journal schema version", err, false)
	}
	return v, nil
}

// checkVersion refuses a schema that is not exactly this binary's version
// (read-only opens do not migrate).
func checkVersion(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify("connect to journal database", err, false)
	}
	defer conn.Release()
	v, err := currentVersion(ctx, conn.Conn(), schema)
	if isUndefinedTable(err) {
		v, err = 0, nil
	}
	switch {
	case err != nil:
		return err
	case v > SchemaVersion:
		return newerError(schema, v)
	case v < SchemaVersion:
		return fmt.Errorf("%w: schema %q is at version %d, this toolguard needs %d; run toolguard journal migrate",
			ErrSchemaOlder, schema, v, SchemaVersion)
	}
	return nil
}

func newerError(schema string, v int) error {
	return fmt.Errorf("%w: schema %q is at version %d, newer than this toolguard's %d; upgrade toolguard",
		ErrSchemaNewer, schema, v, SchemaVersion)
}

// ErrSchemaNewer means the database was migrated by a newer toolguard; this
// binary refuses to use it rather than misread it.
var ErrSchemaNewer = errors.New("journal database schema is newer than this toolguard")

// ErrSchemaOlder means a read-only Open found a schema that needs a
// migration (which only a writable Open or Migrate makes).
var ErrSchemaOlder = errors.New("journal database schema needs a migration")
