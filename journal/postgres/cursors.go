package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// Cursors are the cursors of hold notifications kept in the journal's
// database (table notify_cursors), shared by the replicas: the
// notify.Cursors of a PostgreSQL journal. Their passes run under
// RunExclusive, so one replica delivers each event.
type Cursors struct{ j *Journal }

// Cursors returns the journal's notification cursors.
func (j *Journal) Cursors() *Cursors { return &Cursors{j: j} }

// Load returns the seq stored under name; ok is false when none is.
func (c *Cursors) Load(ctx context.Context, name string) (seq uint64, ok bool, err error) {
	op := "load notification cursor " + name
	if err := c.j.begin(op); err != nil {
		return 0, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.j.opts.OpTimeout)
	defer cancel()
	var v int64
	err = c.j.pool.QueryRow(ctx, "SELECT seq FROM notify_cursors WHERE name = $1", name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, c.j.fault(op, err, false)
	}
	return uint64(v), true, nil
}

// Store sets name to next if it holds prev (prev 0 also matches a name
// that holds nothing, which it creates), in one statement that commits
// on its own; stored reports whether it did. Concurrent Stores over the
// same value wait for each other's row lock: one applies.
func (c *Cursors) Store(ctx context.Context, name string, prev, next uint64) (stored bool, err error) {
	op := "store notification cursor " + name
	if c.j.readOnly {
		return false, fmt.Errorf("%s: %w", op, journal.ErrReadOnly)
	}
	if err := c.j.begin(op); err != nil {
		return false, err
	}
	if prev >= 1<<63 || next >= 1<<63 {
		return false, fmt.Errorf("%s: seq %d out of range", op, max(prev, next))
	}
	ctx, cancel := context.WithTimeout(ctx, c.j.opts.OpTimeout)
	defer cancel()
	sql := "UPDATE notify_cursors SET seq = $3, updated_at = now() WHERE name = $1 AND seq = $2"
	if prev == 0 {
		sql = `INSERT INTO notify_cursors (name, seq) VALUES ($1, $3)
			ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq, updated_at = now() WHERE notify_cursors.seq = $2`
	}
	tag, err := c.j.pool.Exec(ctx, sql, name, int64(prev), int64(next))
	if err != nil {
		return false, c.j.fault(op, err, true)
	}
	return tag.RowsAffected() == 1, nil
}
