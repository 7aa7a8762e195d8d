package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// sweepable selects the finished steps a sweep may remove (served by
// steps_sweep_idx): committed, verified or definitively failed, not held,
// no verification pending.
const sweepable = "hold = 0 AND verify_by IS NULL AND (status IN (3, 4) OR (status = 5 AND NOT retryable))"

// Sweep removes up to batch finished steps last updated before cutoff,
// oldest first, and up to batch events older than cutoff, in one
// transaction. Held steps, steps with a pending verification, started or
// prepared steps and retryable failures are never removed. more reports
// that another call may find more to remove.
//
// Replicas may sweep at the same time: each locks the rows it removes with
// FOR UPDATE SKIP LOCKED, so they share the work instead of waiting on
// each other, and a step being changed by a transition is skipped (and
// re-checked, since its row is re-read under the lock).
func (j *Journal) Sweep(cutoff time.Time, batch int) (removed int, more bool, err error) {
	const op = "sweep journal"
	if j.readOnly {
		return 0, false, fmt.Errorf("sweep: %w", journal.ErrReadOnly)
	}
	if err := j.begin(op); err != nil {
		return 0, false, err
	}
	if batch <= 0 {
		batch = 500
	}
	ctx, cancel := j.opContext()
	defer cancel()
	var events int64
	err = pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH v AS (
				SELECT key FROM steps WHERE `+sweepable+` AND updated_at < $1
				ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
			DELETE FROM steps s USING v WHERE s.key = v.key RETURNING s.workflow, `+stepScope, cutoff, batch)
		if err != nil {
			return err
		}
		flows := map[[2]string]int32{} // id, scope
		for rows.Next() {
			var wf, scope string
			if err := rows.Scan(&wf, &scope); err != nil {
				rows.Close()
				return err
			}
			removed++
			if wf != "" {
				flows[[2]string{wf, scope}]++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := sweepFlows(ctx, tx, flows, cutoff, j.stamp(), "done"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM events WHERE seq IN (
			SELECT seq FROM events WHERE time < $1 ORDER BY time LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
		events = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, false, j.fault(op, err, true)
	}
	j.commits.Add(1)
	j.hints.clear() // steps were deleted (hints.go)
	return removed, removed == batch || events == int64(batch), nil
}

// sweepFlows uncounts the removed steps (all of class, the name of a
// workflows count column: done for a sweep, held for expired holds) from
// their workflows and drops the workflows left empty, unless their
// checkpoint was written at or after cutoff.
func sweepFlows(ctx context.Context, tx pgx.Tx, flows map[[2]string]int32, cutoff time.Time, now any, class string) error {
	if class != "done" && class != "held" {
		return fmt.Errorf("sweep workflows: unknown class %q", class)
	}
	for ref, n := range flows {
		if _, err := tx.Exec(ctx, `UPDATE workflows SET steps = steps - $2, `+class+` = `+class+` - $2, version = version + 1,
			updated_at = coalesce($3::timestamptz, now()) WHERE id = $1 AND scope = $4`, ref[0], n, now, ref[1]); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM workflows WHERE id = $1 AND scope = $3 AND steps = 0
			AND (checkpoint_at IS NULL OR checkpoint_at < $2)`, ref[0], cutoff, ref[1]); err != nil {
			return err
		}
	}
	return nil
}

// stamp is the time written on records outside Apply: Options.Now, or
// nil for the database's now().
func (j *Journal) stamp() any {
	if j.opts.Now != nil {
		return j.opts.Now().UTC()
	}
	return nil
}
