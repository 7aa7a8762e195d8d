package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// ExpireHolds removes up to batch steps held for approval and never sent
// (journal.Step.Expirable) last updated before cutoff, oldest first (served
// by steps_expiry_idx), and records an expired event for each, in one
// transaction. Replicas may expire at the same time: each locks the rows
// it removes with FOR UPDATE SKIP LOCKED, and a step approved meanwhile no
// longer matches when its row is re-read under the lock.
func (j *Journal) ExpireHolds(cutoff time.Time, batch int) (expired int, more bool, err error) {
	const op = "expire holds"
	if j.readOnly {
		return 0, false, fmt.Errorf("%s: %w", op, journal.ErrReadOnly)
	}
	if err := j.begin(op); err != nil {
		return 0, false, err
	}
	if batch <= 0 {
		batch = 500
	}
	batch = min(batch, maxEvents) // one event each, numbered within the transaction
	ctx, cancel := j.opContext()
	defer cancel()
	err = pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		gone, err := deleteExpired(ctx, tx, cutoff, batch)
		if err != nil {
			return err
		}
		expired = len(gone)
		if err := insertExpiredEvents(ctx, tx, gone, j.stamp()); err != nil {
			return err
		}
		flows := map[[2]string]int32{} // id, scope
		for _, s := range gone {
			if s.Workflow != "" {
				flows[[2]string{s.Workflow, s.CredentialMAC}]++
			}
		}
		return sweepFlows(ctx, tx, flows, cutoff, j.stamp(), "held")
	})
	if err != nil {
		return 0, false, j.fault(op, err, true)
	}
	j.commits.Add(1)
	j.hints.clear() // steps were deleted (hints.go)
	return expired, expired == batch, nil
}

// deleteExpired removes the expirable steps older than cutoff, up to batch,
// and returns them.
func deleteExpired(ctx context.Context, tx pgx.Tx, cutoff time.Time, batch int) ([]*journal.Step, error) {
	rows, err := tx.Query(ctx, `WITH v AS (
			SELECT key FROM steps WHERE hold = 1 AND status = 1 AND updated_at < $1
			ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		DELETE FROM steps s USING v WHERE s.key = v.key RETURNING s.revision, s.lease_until, s.record, s.response_body`,
		cutoff, batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var gone []*journal.Step
	for rows.Next() {
		var rev int64
		var lease *time.Time
		var record, body []byte
		if err := rows.Scan(&rev, &lease, &record, &body); err != nil {
			return nil, err
		}
		s, err := decodeStep(rev, lease, record, body)
		if err != nil {
			return nil, err
		}
		gone = append(gone, s)
	}
	return gone, rows.Err()
}

// insertExpiredEvents records the expired event of each removed step.
func insertExpiredEvents(ctx context.Context, tx pgx.Tx, gone []*journal.Step, now any) error {
	if len(gone) == 0 {
		return nil
	}
	keys, reasons := make([]string, len(gone)), make([]string, len(gone))
	keySeqs, epochs, fences := make([]int64, len(gone)), make([]int64, len(gone)), make([]int64, len(gone))
	for i, s := range gone {
		keys[i], reasons[i] = s.Key, journal.ExpiredReason(s)
		keySeqs[i], epochs[i], fences[i] = int64(s.Revision)+1, int64(s.Epoch), int64(s.Fence)
	}
	_, err := tx.Exec(ctx, `INSERT INTO events (seq, xid, key, key_seq, time, type, from_status, to_status, hold, reason, note, epoch, fence)
		SELECT (pg_current_xact_id()::text::bigint << 10) + x.n, pg_current_xact_id(), x.key, x.key_seq,
			coalesce($6::timestamptz, now()), $7, $8, $8, 0, x.reason, '', x.epoch, x.fence
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])
			WITH ORDINALITY AS x(key, key_seq, reason, epoch, fence, n)`,
		keys, keySeqs, reasons, epochs, fences, now, string(journal.EventExpired), int16(journal.StatusPrepared))
	return err
}
