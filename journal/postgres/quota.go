package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// Quotas: route budgets (journal.Change.Budget) and caps on open holds
// (journal.Change.MaxHolds).
//
// A limited creation is written in a transaction that first takes a
// transaction-scoped advisory lock on what it counts (one caller, API and
// route for a budget; one caller for holds), then counts, then writes the
// step. Every replica creating under the same limit takes the same lock,
// and the lock is held until the commit, so the next one counts the write
// of the previous one: of creations racing at a budget's edge, at most
// the budget's calls are written. Writes that are not limited take no
// lock and keep their single statement.

// limited reports whether p's write counts against a limit.
func (p *pending) limited() bool {
	return p.old == nil && (p.budget != nil || p.maxHolds > 0)
}

// quotaLock takes the advisory lock of one limit for the rest of tx; the
// schema keeps journals of different schemas apart.
const quotaLock = "SELECT pg_advisory_xact_lock(hashtext(current_schema()), hashtext($1))"

// budgetUsed counts the budgeted steps of one caller, API and route
// created after $4, up to $5 of them (served by steps_budget_idx).
const budgetUsed = `SELECT count(*) FROM (SELECT 1 FROM steps
	WHERE coalesce(record->>'credential_mac', '') = $1 AND record->>'api' = $2 AND record->>'route' = $3
		AND created_at > $4 AND record->>'budgeted' = 'true' LIMIT $5) x`

// holdsOpen counts the held steps of one caller, up to $2 of them (served
// by steps_caller_hold_idx).
const holdsOpen = `SELECT count(*) FROM (SELECT 1 FROM steps
	WHERE coalesce(record->>'credential_mac', '') = $1 AND hold <> 0 LIMIT $2) x`

// writeLimited writes p's new step under its limits, scanning the
// statement's result into dst; nothing is written when a limit refuses it
// (journal.ErrOverBudget, journal.ErrTooManyHolds).
func (j *Journal) writeLimited(ctx context.Context, p *pending, stmt string, args []any, dst ...any) error {
	s := &p.step
	return pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		if b := p.budget; b != nil {
			lock := fmt.Sprintf("budget:%d:%s:%d:%s:%s", len(s.CredentialMAC), s.CredentialMAC, len(s.API), s.API, s.Route)
			if _, err := tx.Exec(ctx, quotaLock, lock); err != nil {
				return err
			}
			var used int
			if err := tx.QueryRow(ctx, budgetUsed, s.CredentialMAC, s.API, s.Route, s.CreatedAt.Add(-b.Per), b.Calls).Scan(&used); err != nil {
				return err
			}
			if used >= b.Calls {
				return fmt.Errorf("%w: %d of %d calls of route %s/%s within %s", journal.ErrOverBudget, used, b.Calls, s.API, s.Route, b.Per)
			}
		}
		if p.maxHolds > 0 {
			if _, err := tx.Exec(ctx, quotaLock, "holds:"+s.CredentialMAC); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, holdsOpen, s.CredentialMAC, p.maxHolds).Scan(&n); err != nil {
				return err
			}
			if n >= p.maxHolds {
				return fmt.Errorf("%w: the caller has %d held steps (max %d)", journal.ErrTooManyHolds, n, p.maxHolds)
			}
		}
		return tx.QueryRow(ctx, stmt, args...).Scan(dst...)
	})
}
