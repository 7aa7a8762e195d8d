package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// touchWorkflow updates the record of workflow id in scope after a step of
// it changed from old to s (either may be nil, or belong to another
// workflow or scope), in the same transaction as the change.
func (bk *buckets) touchWorkflow(scope, id string, old, s *journal.Step, now time.Time) error {
	w, err := loadWorkflow(bk.workflows, scope, id)
	if errors.Is(err, journal.ErrNotFound) {
		w, err = bk.adoptWorkflow(scope, id, now)
	}
	if err != nil {
		return err
	}
	if old != nil && old.Workflow == id && old.CredentialMAC == scope {
		w.Counts.Add(old, -1)
		w.Steps--
	}
	if s != nil && s.Workflow == id && s.CredentialMAC == scope {
		w.Counts.Add(s, 1)
		w.Steps++
		w.CurrentStep, w.CurrentRoute = s.Key, s.Route
		if w.InputHash == "" {
			w.InputHash = s.BodyHash
		}
		// A held step's versions are not the workflow's until an operator
		// releases it: a version change stays under review.
		if s.PromptVersion != "" && !s.Held() {
			w.PromptVersion = s.PromptVersion
		}
		if s.PolicyVersion != "" && !s.Held() {
			w.PolicyVersion = s.PolicyVersion
		}
	}
	w.Status, w.Held = w.Counts.Status(), w.Counts.Held
	w.Version++
	w.UpdatedAt = now
	return putWorkflow(bk.workflows, w)
}

// adoptWorkflow returns the new record of workflow id in scope: the
// empty scope's record of id when it counts no step (a checkpoint written
// before any call, without ?scope=), moved to scope, so that the first
// caller's steps find the plan made for them; else a fresh record.
func (bk *buckets) adoptWorkflow(scope, id string, now time.Time) (*journal.Workflow, error) {
	if scope != "" {
		w, err := loadWorkflow(bk.workflows, "", id)
		if err == nil && w.Steps == 0 {
			if err := bk.workflows.Delete(workflowKey("", id)); err != nil {
				return nil, fmt.Errorf("adopt workflow %s: %w", id, err)
			}
			w.Scope = scope
			return w, nil
		}
		if err != nil && !errors.Is(err, journal.ErrNotFound) {
			return nil, err
		}
	}
	return &journal.Workflow{ID: id, Scope: scope, CreatedAt: now}, nil
}

// workflowSteps loads every step of workflow id in scope through the
// workflow index.
func (bk *buckets) workflowSteps(scope, id string) ([]journal.Step, error) {
	prefix := workflowPrefix(id)
	var out []journal.Step
	c := bk.byWorkflow.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		s, err := bk.getStep(string(k[len(prefix):]))
		if err != nil {
			return nil, fmt.Errorf("workflow %s: %w", id, err)
		}
		if s.CredentialMAC == scope {
			out = append(out, *s)
		}
	}
	return out, nil
}

// workflowKey is where the record of workflow id in scope is stored: the
// id for the empty scope (as before workflows had scopes), else the id, a
// NUL and the scope, so that every scope of an id sorts right after it.
func workflowKey(scope, id string) []byte {
	if scope == "" {
		return []byte(id)
	}
	return []byte(id + "\x00" + scope)
}

func loadWorkflow(b *bbolt.Bucket, scope, id string) (*journal.Workflow, error) {
	v := b.Get(workflowKey(scope, id))
	if v == nil {
		return nil, journal.ErrNotFound
	}
	return decodeWorkflow(v, id)
}

func decodeWorkflow(v []byte, id string) (*journal.Workflow, error) {
	var w journal.Workflow
	if err := json.Unmarshal(v, &w); err != nil {
		return nil, fmt.Errorf("%w: decode workflow %s: %v", journal.ErrCorrupt, id, err)
	}
	return &w, nil
}

func putWorkflow(b *bbolt.Bucket, w *journal.Workflow) error {
	data, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("encode workflow %s: %w", w.ID, err)
	}
	if err := b.Put(workflowKey(w.Scope, w.ID), data); err != nil {
		return fmt.Errorf("put workflow %s: %w", w.ID, err)
	}
	return nil
}

// scopesOf returns the records of workflow id, one per scope, in scope
// order.
func (bk *buckets) scopesOf(id string) ([]journal.Workflow, error) {
	var out []journal.Workflow
	c := bk.workflows.Cursor()
	for k, v := c.Seek([]byte(id)); k != nil; k, v = c.Next() {
		if string(k) != id && !bytes.HasPrefix(k, []byte(id+"\x00")) {
			break
		}
		w, err := decodeWorkflow(v, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *w)
	}
	return out, nil
}

// GetWorkflow returns the record of workflow id in scope, or an error
// wrapping ErrNotFound.
func (b *Journal) GetWorkflow(scope, id string) (journal.Workflow, error) {
	got, changed, stale := b.overlay.workflow(scope, id)
	switch {
	case changed && got == nil:
		return journal.Workflow{}, fmt.Errorf("get workflow %s: %w", id, journal.ErrNotFound)
	case changed:
		return *got, nil
	}
	// Read as of the last checkpoint: what the writes since changed is in
	// the overlay (checkpoint.go), unless it could not tell.
	view := b.rawView
	if stale {
		view = b.view
	}
	var w journal.Workflow
	err := view("get workflow "+id, func(bk *buckets) error {
		got, err := loadWorkflow(bk.workflows, scope, id)
		if err == nil {
			w = *got
		}
		return err
	})
	return w, err
}

// FindWorkflows returns the records of workflow id in every scope, in
// scope order; none (and no error) when the id is unknown.
func (b *Journal) FindWorkflows(id string) ([]journal.Workflow, error) {
	var out []journal.Workflow
	err := b.view("find workflow "+id, func(bk *buckets) error {
		var err error
		out, err = bk.scopesOf(id)
		return err
	})
	return out, err
}

// ListWorkflows returns up to limit workflows (default 1000) in id order,
// the scopes of one id in scope order.
func (b *Journal) ListWorkflows(limit int) ([]journal.Workflow, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var out []journal.Workflow
	err := b.view("list workflows", func(bk *buckets) error {
		return bk.workflows.ForEach(func(k, v []byte) error {
			if len(out) >= limit {
				return nil
			}
			var w journal.Workflow
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("%w: decode workflow %s: %v", journal.ErrCorrupt, k, err)
			}
			out = append(out, w)
			return nil
		})
	})
	return out, err
}

// WorkflowSteps returns every step of workflow id in scope, in key order.
func (b *Journal) WorkflowSteps(scope, id string) ([]journal.Step, error) {
	var out []journal.Step
	err := b.view("list workflow steps "+id, func(bk *buckets) error {
		var err error
		out, err = bk.workflowSteps(scope, id)
		return err
	})
	return out, err
}

// PutCheckpoint stores a workflow's checkpoint as a compare-and-swap on its
// version, inside one durable transaction. ifVersion is the version the
// caller read; nil means the caller names none, which is allowed only
// while the workflow has no checkpoint (ErrPreconditionRequired
// otherwise). A stale version fails with a *VersionError. The workflow is
// created (status planned) if it does not exist, in scope.
func (b *Journal) PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (journal.Workflow, error) {
	if b.readOnly {
		return journal.Workflow{}, fmt.Errorf("put checkpoint %s: %w", id, journal.ErrReadOnly)
	}
	if id == "" || len(id) > journal.MaxWorkflowLen || strings.IndexByte(id, 0) >= 0 {
		return journal.Workflow{}, fmt.Errorf("put checkpoint: %w: workflow id must be 1 to %d bytes, without NUL", journal.ErrInvalidChange, journal.MaxWorkflowLen)
	}
	var out journal.Workflow
	err := b.update(func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if err := bumpApplied(bk.meta); err != nil { // a write outside the log (checkpoint.go)
			return err
		}
		now := b.now().UTC()
		w, err := loadWorkflow(bk.workflows, scope, id)
		switch {
		case errors.Is(err, journal.ErrNotFound):
			w = &journal.Workflow{ID: id, Scope: scope, Status: journal.WorkflowPlanned, CreatedAt: now}
		case err != nil:
			return err
		}
		switch {
		case ifVersion == nil && w.Checkpoint != nil:
			return journal.ErrPreconditionRequired
		case ifVersion != nil && *ifVersion != w.Version:
			return &journal.VersionError{ID: id, Want: *ifVersion, Current: w.Version}
		}
		w.Checkpoint = checkpoint
		w.CheckpointAt = now
		w.Version++
		w.UpdatedAt = now
		out = *w
		return putWorkflow(bk.workflows, w)
	})
	if err != nil {
		return journal.Workflow{}, fmt.Errorf("put checkpoint %s: %w", id, err)
	}
	b.commits.Add(1)
	return out, nil
}

var jsonUnmarshal = json.Unmarshal
