package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Workflow statuses (contract), derived from a workflow's steps and holds.
const (
	WorkflowPlanned          = "planned"
	WorkflowAwaitingApproval = "awaiting_approval"
	WorkflowExecuting        = "executing"
	WorkflowVerifying        = "verifying"
	WorkflowCompleted        = "completed"
	WorkflowFailedRetryable  = "failed_retryable"
)

// Workflow is the record of the steps that share a Toolguard-Workflow
// value. Version increases by one on every change; writers that act on
// what they read name the version they read (optimistic concurrency).
type Workflow struct {
	ID string `json:"id"`
	// Scope is the credential MAC of the callers whose steps the record
	// counts (journal.Step.CredentialMAC, never the credential): one
	// workflow id is one record per caller, so that one tenant's versions
	// and checkpoint never decide for another's. "" for callers without a
	// credential (credential: none).
	Scope   string `json:"scope,omitempty"`
	Status  string `json:"status"`
	Version uint64 `json:"version"`
	// CurrentStep is the key of the step changed last, CurrentRoute its
	// route.
	CurrentStep  string `json:"current_step,omitempty"`
	CurrentRoute string `json:"current_route,omitempty"`
	// InputHash identifies the workflow's input: the body hash of its first
	// step.
	InputHash     string `json:"input_hash,omitempty"`
	PromptVersion string `json:"prompt_version,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	Steps         int    `json:"steps"`
	Held          int    `json:"held"`
	// Counts are the steps by class, from which Status is derived.
	Counts WorkflowCounts `json:"counts"`
	// Checkpoint is the agent's own compact resume state, as JSON; nil
	// until one is written.
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	// CheckpointAt is when the checkpoint was last written.
	CheckpointAt time.Time `json:"checkpoint_at,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// WorkflowCounts are a workflow's steps by class. The journal keeps them
// in the workflow record, updated in the same transaction as each step, so
// a workflow's status costs nothing to derive however many steps it has.
type WorkflowCounts struct {
	Held      int `json:"held"`
	Started   int `json:"started"`
	Retryable int `json:"retryable"`
	Verifying int `json:"verifying"`
	Done      int `json:"done"`
	Prepared  int `json:"prepared"`
}

// add counts s (delta +1) or uncounts it (-1).
func (c *WorkflowCounts) add(s *Step, delta int) {
	switch {
	case s.Held():
		c.Held += delta
	case s.Status == StatusStarted:
		c.Started += delta
	case s.Status == StatusFailed && s.Retryable:
		c.Retryable += delta
	case s.Status == StatusCommitted && !s.VerifyBy.IsZero():
		c.Verifying += delta
	case s.Terminal():
		c.Done += delta
	default:
		c.Prepared += delta
	}
}

// Status derives the workflow status, in order of precedence: a hold →
// awaiting_approval (an operator must act); a started step → executing; a
// retryable failure → failed_retryable; a pending verification →
// verifying; only definitive outcomes → completed; definitive outcomes
// and a step not sent yet → executing; nothing sent yet → planned.
func (c WorkflowCounts) Status() string {
	switch {
	case c.Held > 0:
		return WorkflowAwaitingApproval
	case c.Started > 0:
		return WorkflowExecuting
	case c.Retryable > 0:
		return WorkflowFailedRetryable
	case c.Verifying > 0:
		return WorkflowVerifying
	case c.Done > 0 && c.Prepared == 0:
		return WorkflowCompleted
	case c.Done > 0:
		// Something was sent and has its outcome, and a step still waits
		// to be (an approval released it): not planned any more.
		return WorkflowExecuting
	}
	return WorkflowPlanned
}

// DeriveWorkflowStatus is the status of a workflow with these steps (see
// WorkflowCounts.Status).
func DeriveWorkflowStatus(steps []Step) string {
	var c WorkflowCounts
	for i := range steps {
		c.add(&steps[i], 1)
	}
	return c.Status()
}

// touchWorkflow updates the record of workflow id in scope after a step of
// it changed from old to s (either may be nil, or belong to another
// workflow or scope), in the same transaction as the change.
func (bk *buckets) touchWorkflow(scope, id string, old, s *Step, now time.Time) error {
	w, err := loadWorkflow(bk.workflows, scope, id)
	if errors.Is(err, ErrNotFound) {
		w, err = bk.adoptWorkflow(scope, id, now)
	}
	if err != nil {
		return err
	}
	if old != nil && old.Workflow == id && old.CredentialMAC == scope {
		w.Counts.add(old, -1)
		w.Steps--
	}
	if s != nil && s.Workflow == id && s.CredentialMAC == scope {
		w.Counts.add(s, 1)
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
func (bk *buckets) adoptWorkflow(scope, id string, now time.Time) (*Workflow, error) {
	if scope != "" {
		w, err := loadWorkflow(bk.workflows, "", id)
		if err == nil && w.Steps == 0 {
			if err := bk.workflows.Delete(workflowKey("", id)); err != nil {
				return nil, fmt.Errorf("adopt workflow %s: %w", id, err)
			}
			w.Scope = scope
			return w, nil
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return &Workflow{ID: id, Scope: scope, CreatedAt: now}, nil
}

// workflowSteps loads every step of workflow id in scope through the
// workflow index.
func (bk *buckets) workflowSteps(scope, id string) ([]Step, error) {
	prefix := workflowPrefix(id)
	var out []Step
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

func loadWorkflow(b *bolt.Bucket, scope, id string) (*Workflow, error) {
	v := b.Get(workflowKey(scope, id))
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeWorkflow(v, id)
}

func decodeWorkflow(v []byte, id string) (*Workflow, error) {
	var w Workflow
	if err := json.Unmarshal(v, &w); err != nil {
		return nil, fmt.Errorf("%w: decode workflow %s: %v", ErrCorrupt, id, err)
	}
	return &w, nil
}

func putWorkflow(b *bolt.Bucket, w *Workflow) error {
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
func (bk *buckets) scopesOf(id string) ([]Workflow, error) {
	var out []Workflow
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
func (b *Bolt) GetWorkflow(scope, id string) (Workflow, error) {
	var w Workflow
	err := b.view("get workflow "+id, func(bk *buckets) error {
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
func (b *Bolt) FindWorkflows(id string) ([]Workflow, error) {
	var out []Workflow
	err := b.view("find workflow "+id, func(bk *buckets) error {
		var err error
		out, err = bk.scopesOf(id)
		return err
	})
	return out, err
}

// ListWorkflows returns up to limit workflows (default 1000) in id order,
// the scopes of one id in scope order.
func (b *Bolt) ListWorkflows(limit int) ([]Workflow, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var out []Workflow
	err := b.view("list workflows", func(bk *buckets) error {
		return bk.workflows.ForEach(func(k, v []byte) error {
			if len(out) >= limit {
				return nil
			}
			var w Workflow
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("%w: decode workflow %s: %v", ErrCorrupt, k, err)
			}
			out = append(out, w)
			return nil
		})
	})
	return out, err
}

// WorkflowSteps returns every step of workflow id in scope, in key order.
func (b *Bolt) WorkflowSteps(scope, id string) ([]Step, error) {
	var out []Step
	err := b.view("list workflow steps "+id, func(bk *buckets) error {
		var err error
		out, err = bk.workflowSteps(scope, id)
		return err
	})
	return out, err
}

// VersionError is returned by PutCheckpoint when the caller's version is
// not the workflow's current one; it wraps ErrVersionMismatch.
type VersionError struct {
	ID      string
	Want    uint64 // the version the caller named
	Current uint64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("workflow %s is at version %d, not %d", e.ID, e.Current, e.Want)
}

func (e *VersionError) Unwrap() error { return ErrVersionMismatch }

// PutCheckpoint stores a workflow's checkpoint as a compare-and-swap on its
// version, inside one durable transaction. ifVersion is the version the
// caller read; nil means the caller names none, which is allowed only
// while the workflow has no checkpoint (ErrPreconditionRequired
// otherwise). A stale version fails with a *VersionError. The workflow is
// created (status planned) if it does not exist, in scope.
func (b *Bolt) PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (Workflow, error) {
	if b.readOnly {
		return Workflow{}, fmt.Errorf("put checkpoint %s: %w", id, ErrReadOnly)
	}
	if id == "" || len(id) > maxWorkflowLen || strings.IndexByte(id, 0) >= 0 {
		return Workflow{}, fmt.Errorf("put checkpoint: %w: workflow id must be 1 to %d bytes, without NUL", ErrInvalidChange, maxWorkflowLen)
	}
	var out Workflow
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		now := b.now().UTC()
		w, err := loadWorkflow(bk.workflows, scope, id)
		switch {
		case errors.Is(err, ErrNotFound):
			w = &Workflow{ID: id, Scope: scope, Status: WorkflowPlanned, CreatedAt: now}
		case err != nil:
			return err
		}
		switch {
		case ifVersion == nil && w.Checkpoint != nil:
			return ErrPreconditionRequired
		case ifVersion != nil && *ifVersion != w.Version:
			return &VersionError{ID: id, Want: *ifVersion, Current: w.Version}
		}
		w.Checkpoint = checkpoint
		w.CheckpointAt = now
		w.Version++
		w.UpdatedAt = now
		out = *w
		return putWorkflow(bk.workflows, w)
	})
	if err != nil {
		return Workflow{}, fmt.Errorf("put checkpoint %s: %w", id, err)
	}
	b.commits.Add(1)
	return out, nil
}

var jsonUnmarshal = json.Unmarshal
