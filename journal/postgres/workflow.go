package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

const workflowColumns = `id, scope, status, version, current_step, current_route, input_hash, prompt_version, policy_version,
	steps, held, started, retryable, verifying, done, prepared, checkpoint, checkpoint_at, created_at, updated_at`

// stepScope is a step's workflow scope, its caller's credential MAC, as SQL
// over steps s.
const stepScope = "coalesce(s.record->>'credential_mac', '')"

// scanWorkflow decodes a row of workflowColumns.
func scanWorkflow(row pgx.Row) (journal.Workflow, error) {
	var w journal.Workflow
	var version int64
	var c journal.WorkflowCounts
	var steps, held, started, retryable, verifying, done, prepared int32
	var cp []byte
	var cpAt *time.Time
	err := row.Scan(&w.ID, &w.Scope, &w.Status, &version, &w.CurrentStep, &w.CurrentRoute, &w.InputHash, &w.PromptVersion,
		&w.PolicyVersion, &steps, &held, &started, &retryable, &verifying, &done, &prepared, &cp, &cpAt,
		&w.CreatedAt, &w.UpdatedAt)
	if err != nil {
		return w, err
	}
	c = journal.WorkflowCounts{Held: int(held), Started: int(started), Retryable: int(retryable),
		Verifying: int(verifying), Done: int(done), Prepared: int(prepared)}
	w.Version, w.Steps, w.Held, w.Counts = uint64(version), int(steps), int(held), c
	if cp != nil {
		w.Checkpoint = json.RawMessage(cp)
	}
	if cpAt != nil {
		w.CheckpointAt = cpAt.UTC()
	}
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	return w, nil
}

// GetWorkflow returns the record of workflow id in scope, or an error
// wrapping journal.ErrNotFound.
func (j *Journal) GetWorkflow(scope, id string) (journal.Workflow, error) {
	op := "get workflow " + id
	if err := j.begin(op); err != nil {
		return journal.Workflow{}, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	w, err := scanWorkflow(j.pool.QueryRow(ctx, "SELECT "+workflowColumns+" FROM workflows WHERE id = $1 AND scope = $2", id, scope))
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Workflow{}, fmt.Errorf("%s: %w", op, journal.ErrNotFound)
	}
	if err != nil {
		return journal.Workflow{}, j.fault(op, err, false)
	}
	return w, nil
}

// FindWorkflows returns the records of workflow id in every scope, in
// scope order; none (and no error) when the id is unknown.
func (j *Journal) FindWorkflows(id string) ([]journal.Workflow, error) {
	return j.queryWorkflows("find workflow "+id, "SELECT "+workflowColumns+" FROM workflows WHERE id = $1 ORDER BY scope", id)
}

// ListWorkflows returns up to limit workflows (default 1000) in id order,
// the scopes of one id in scope order.
func (j *Journal) ListWorkflows(limit int) ([]journal.Workflow, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	return j.queryWorkflows("list workflows", "SELECT "+workflowColumns+" FROM workflows ORDER BY id, scope LIMIT $1", limit)
}

// queryWorkflows runs a query of workflowColumns.
func (j *Journal) queryWorkflows(op, query string, args ...any) ([]journal.Workflow, error) {
	if err := j.begin(op); err != nil {
		return nil, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	rows, err := j.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, j.fault(op, err, false)
	}
	defer rows.Close()
	var out []journal.Workflow
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, j.fault(op, err, false)
		}
		out = append(out, w)
	}
	return out, j.fault(op, rows.Err(), false)
}

// WorkflowSteps returns every step of workflow id in scope, in key order.
func (j *Journal) WorkflowSteps(scope, id string) ([]journal.Step, error) {
	op := "list workflow steps " + id
	if err := j.begin(op); err != nil {
		return nil, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	return j.querySteps(ctx, op, "SELECT "+stepColumns+", now() FROM steps s WHERE s.workflow = $1 AND "+stepScope+" = $2 ORDER BY s.key", id, scope)
}

// PutCheckpoint stores a workflow's checkpoint as a compare-and-swap on its
// version, in one transaction that locks the workflow's row. ifVersion is
// the version the caller read; nil is allowed only while the workflow has
// no checkpoint (journal.ErrPreconditionRequired otherwise). A stale
// version fails with a *journal.VersionError (journal.ErrVersionMismatch).
// The workflow is created (status planned) in scope if it does not exist.
func (j *Journal) PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (journal.Workflow, error) {
	op := "put checkpoint " + id
	if j.readOnly {
		return journal.Workflow{}, fmt.Errorf("%s: %w", op, journal.ErrReadOnly)
	}
	if id == "" || len(id) > journal.MaxWorkflowLen || strings.IndexByte(id, 0) >= 0 {
		return journal.Workflow{}, fmt.Errorf("put checkpoint: %w: workflow id must be 1 to %d bytes, without NUL", journal.ErrInvalidChange, journal.MaxWorkflowLen)
	}
	if err := j.begin(op); err != nil {
		return journal.Workflow{}, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	var out journal.Workflow
	var refused error
	err := pgx.BeginFunc(ctx, j.pool, func(tx pgx.Tx) error {
		var now time.Time
		if err := tx.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
			return err
		}
		if j.opts.Now != nil {
			now = j.opts.Now()
		}
		now = now.UTC()
		if _, err := tx.Exec(ctx, `INSERT INTO workflows (id, scope, version, created_at, updated_at) VALUES ($1, $3, 0, $2, $2)
			ON CONFLICT (id, scope) DO NOTHING`, id, now, scope); err != nil {
			return err
		}
		var version int64
		var has bool
		if err := tx.QueryRow(ctx, "SELECT version, checkpoint IS NOT NULL FROM workflows WHERE id = $1 AND scope = $2 FOR UPDATE", id, scope).Scan(&version, &has); err != nil {
			return err
		}
		switch {
		case ifVersion == nil && has:
			refused = journal.ErrPreconditionRequired
		case ifVersion != nil && *ifVersion != uint64(version):
			refused = &journal.VersionError{ID: id, Want: *ifVersion, Current: uint64(version)}
		}
		if refused != nil {
			return refused // rolls back the row this transaction may have created
		}
		var err error
		out, err = scanWorkflow(tx.QueryRow(ctx, `UPDATE workflows SET checkpoint = $2, checkpoint_at = $3,
			version = version + 1, updated_at = $3 WHERE id = $1 AND scope = $4 RETURNING `+workflowColumns, id, []byte(checkpoint), now, scope))
		return err
	})
	if refused != nil {
		return journal.Workflow{}, fmt.Errorf("%s: %w", op, refused)
	}
	if err != nil {
		return journal.Workflow{}, j.fault(op, err, true)
	}
	j.commits.Add(1)
	return out, nil
}

// opContext bounds an operation of the journal's context-free methods.
func (j *Journal) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), j.opts.OpTimeout)
}
