package admin

import (
	"errors"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// stepIn is a step in status, changed by mod when it is not nil.
func stepIn(status journal.Status, mod func(*journal.Step)) *journal.Step {
	s := &journal.Step{Key: "k", Status: status, BodyHash: "b", Attempt: 1, Epoch: 1, Fence: 3}
	if mod != nil {
		mod(s)
	}
	return s
}

// allowed fails t when the journal's allowlist refuses ch from cur: every
// transition an operator makes must be one the backends accept.
func allowed(t *testing.T, cur *journal.Step, ch journal.Change) {
	t.Helper()
	if err := journal.AllowedChange(cur, &ch); err != nil {
		t.Fatalf("the journal refuses this change: %v", err)
	}
}

// TestOperatorChanges covers approve and resolve from every state.
func TestOperatorChanges(t *testing.T) {
	awaiting := stepIn(journal.StatusPrepared, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldAwaitingApproval, "approval_required" })
	review := stepIn(journal.StatusStarted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, "outcome_unknown" })
	abandoned := stepIn(journal.StatusStarted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, "abandoned" })
	notVisible := stepIn(journal.StatusCommitted, func(s *journal.Step) {
		s.Hold, s.HoldReason, s.Response = journal.HoldNeedsReview, "effect_not_visible", &journal.Response{Status: 201}
	})
	approved := stepIn(journal.StatusPrepared, func(s *journal.Step) { s.Decision = DecisionApproved })
	tests := []struct {
		name   string
		cur    *journal.Step
		op     func(*journal.Step) (journal.Change, error)
		err    error
		status journal.Status
	}{
		{name: "approve", cur: awaiting, op: func(c *journal.Step) (journal.Change, error) { return approveChange(c, "ok") }, status: journal.StatusPrepared},
		{name: "approve again", cur: approved, op: func(c *journal.Step) (journal.Change, error) { return approveChange(c, "ok") }, err: journal.ErrNoChange},
		{name: "approve a step under review", cur: review, op: func(c *journal.Step) (journal.Change, error) { return approveChange(c, "") }, err: errNotHeld},
		{name: "approve a missing step", op: func(c *journal.Step) (journal.Change, error) { return approveChange(c, "") }, err: journal.ErrNotFound},
		{name: "resolve committed", cur: review, op: resolveWith(DecisionResolvedCommitted), status: journal.StatusCommitted},
		{name: "resolve an abandoned step committed", cur: abandoned, op: resolveWith(DecisionResolvedCommitted), status: journal.StatusCommitted},
		{name: "resolve not executed", cur: review, op: resolveWith(DecisionResolvedNotExecuted), status: journal.StatusPrepared},
		{name: "resolve a not-visible effect not executed", cur: notVisible, op: resolveWith(DecisionResolvedNotExecuted), status: journal.StatusPrepared},
		{name: "resolve an approval committed", cur: awaiting, op: resolveWith(DecisionResolvedCommitted), status: journal.StatusCommitted},
		{name: "resolve a step not held", cur: stepIn(journal.StatusStarted, nil), op: resolveWith(DecisionResolvedCommitted), err: errNotHeld},
		{name: "resolve again", cur: stepIn(journal.StatusCommitted, func(s *journal.Step) { s.Decision = DecisionResolvedCommitted }), op: resolveWith(DecisionResolvedCommitted), err: journal.ErrNoChange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := tc.op(tc.cur)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			allowed(t, tc.cur, ch)
			if ch.Step.Status != tc.status || ch.Step.Held() || !ch.Claim || ch.Step.ApprovedBodyHash == "" && tc.status == journal.StatusPrepared {
				t.Fatalf("change = %+v", ch)
			}
		})
	}
}

func resolveWith(decision string) func(*journal.Step) (journal.Change, error) {
	return func(c *journal.Step) (journal.Change, error) {
		return resolveChange(c, decision, Resolution{Outcome: decision, Note: "checked"})
	}
}
