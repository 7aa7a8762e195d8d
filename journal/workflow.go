package journal

import (
	"encoding/json"
	"fmt"
	"time"
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

// Add counts s (delta +1) or uncounts it (-1).
func (c *WorkflowCounts) Add(s *Step, delta int) {
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
		c.Add(&steps[i], 1)
	}
	return c.Status()
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
