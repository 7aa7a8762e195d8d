package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrBackupUnsupported is WriteTo's answer: a PostgreSQL journal is backed
// up by the database's own tools (pg_dump, or the HA setup's backups).
var ErrBackupUnsupported = errors.New("a PostgreSQL journal is backed up with pg_dump --schema=toolguard, not by toolguard")

// WriteTo writes nothing and returns ErrBackupUnsupported (see
// docs/operations.md for pg_dump).
func (j *Journal) WriteTo(io.Writer) (int64, error) {
	return 0, fmt.Errorf("back up journal: %w", ErrBackupUnsupported)
}

// Size returns the bytes the journal's tables and indexes take in the
// database; 0 when it cannot be read.
func (j *Journal) Size() int64 {
	if j.closed.Load() {
		return 0
	}
	ctx, cancel := j.opContext()
	defer cancel()
	var n int64
	err := j.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, j.opts.Schema).Scan(&n)
	if err != nil {
		return 0
	}
	return n
}

// Path describes where the journal lives, without credentials: the
// database's host, port, name and the schema.
func (j *Journal) Path() string {
	c := j.pool.Config().ConnConfig
	return fmt.Sprintf("postgres://%s:%d/%s (schema %s)", c.Host, c.Port, c.Database, j.opts.Schema)
}

// Ping checks that the database answers, within ctx; an error wraps
// journal.ErrUnavailable when it cannot be reached (readiness probes).
func (j *Journal) Ping(ctx context.Context) error {
	if err := j.begin("ping journal"); err != nil {
		return err
	}
	if err := j.pool.Ping(ctx); err != nil {
		return j.fault("ping journal database", err, false)
	}
	return nil
}
