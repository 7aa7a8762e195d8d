package journal

import (
	"errors"
	"testing"
	"time"
)

func TestDeriveWorkflowStatus(t *testing.T) {
	st := func(status Status, mod func(*Step)) Step {
		s := Step{Status: status}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	held := func(s *Step) { s.Hold = HoldNeedsReview }
	tests := []struct {
		name  string
		steps []Step
		want  string
	}{
		{name: "no steps", want: WorkflowPlanned},
		{name: "prepared only", steps: []Step{st(StatusPrepared, nil)}, want: WorkflowPlanned},
		{name: "in flight", steps: []Step{st(StatusCommitted, nil), st(StatusStarted, nil)}, want: WorkflowExecuting},
		{name: "verifying", steps: []Step{st(StatusCommitted, func(s *Step) { s.VerifyBy = time.Unix(1, 0) })}, want: WorkflowVerifying},
		{name: "completed", steps: []Step{st(StatusCommitted, nil), st(StatusVerified, nil), st(StatusFailed, nil)}, want: WorkflowCompleted},
		{name: "retryable failure", steps: []Step{st(StatusCommitted, nil), st(StatusFailed, func(s *Step) { s.Retryable = true })}, want: WorkflowFailedRetryable},
		{name: "a hold wins", steps: []Step{st(StatusStarted, nil), st(StatusStarted, held)}, want: WorkflowAwaitingApproval},
		{name: "approval hold", steps: []Step{st(StatusPrepared, func(s *Step) { s.Hold = HoldAwaitingApproval })}, want: WorkflowAwaitingApproval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeriveWorkflowStatus(tc.steps); got != tc.want {
				t.Fatalf("DeriveWorkflowStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWorkflowCountsStatus is the derivation of a workflow's status from
// its step counts, as docs/operations.md "Workflows and the resume packet" defines it: planned only before
// anything was sent.
func TestWorkflowCountsStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    WorkflowCounts
		want string
	}{
		{"nothing yet", WorkflowCounts{}, WorkflowPlanned},
		{"only prepared", WorkflowCounts{Prepared: 2}, WorkflowPlanned},
		{"held", WorkflowCounts{Held: 1, Done: 3}, WorkflowAwaitingApproval},
		{"started", WorkflowCounts{Started: 1, Retryable: 1}, WorkflowExecuting},
		{"retryable", WorkflowCounts{Retryable: 1, Verifying: 1}, WorkflowFailedRetryable},
		{"verifying", WorkflowCounts{Verifying: 1, Done: 1}, WorkflowVerifying},
		{"all done", WorkflowCounts{Done: 2}, WorkflowCompleted},
		{"first step verified, second released", WorkflowCounts{Done: 1, Prepared: 1}, WorkflowExecuting},
	} {
		if got := tc.c.Status(); got != tc.want {
			t.Errorf("%s: %+v → %s, want %s", tc.name, tc.c, got, tc.want)
		}
	}
}

// TestVersionError: a stale checkpoint version says which versions, and
// is ErrVersionMismatch to errors.Is.
func TestVersionError(t *testing.T) {
	var err error = &VersionError{ID: "wf", Want: 3, Current: 5}
	if !errors.Is(err, ErrVersionMismatch) {
		t.Errorf("%v is not ErrVersionMismatch", err)
	}
	if got, want := err.Error(), "workflow wf is at version 5, not 3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
