package admin

import (
	"fmt"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// The transitions of an operator's decisions, pure functions of the
// current record and of values captured before journal.Apply, like the
// pipeline's (lifecycle/transitions.go): a backend may run the mutation that
// calls them more than once, and the journal checks every change against
// its allowlist (journal.Allowed).
//
//	approve  prepared/awaiting_approval → prepared (bound to the body)
//	resolve  held → committed | prepared (operator's finding)

// approveChange releases a step held for approval: it becomes prepared
// and bound to the body the operator saw. Approving again changes nothing
// (journal.ErrNoChange).
func approveChange(cur *journal.Step, note string) (journal.Change, error) {
	if cur == nil {
		return journal.Change{}, journal.ErrNotFound
	}
	if cur.Hold != journal.HoldAwaitingApproval {
		if cur.Decision == DecisionApproved {
			return journal.Change{}, journal.ErrNoChange
		}
		return journal.Change{}, fmt.Errorf("%w: approve: step %s is %s (hold %q); only steps awaiting approval can be approved", errNotHeld, cur.Key, cur.Status, cur.Hold)
	}
	st := *cur
	st.Hold, st.HoldReason = journal.HoldNone, ""
	st.Status = journal.StatusPrepared
	st.ApprovedBodyHash = cur.BodyHash
	st.Decision = DecisionApproved
	return journal.Change{Step: st, Event: journal.EventApproved, Reason: "operator approved", Note: note, Claim: true}, nil
}

// resolveChange ends a hold with an operator's finding (decision is
// DecisionResolvedCommitted or DecisionResolvedNotExecuted). It claims the
// step, fencing out an owner that may still be writing.
func resolveChange(cur *journal.Step, decision string, res Resolution) (journal.Change, error) {
	if cur == nil {
		return journal.Change{}, journal.ErrNotFound
	}
	if !cur.Held() {
		if cur.Decision == decision {
			return journal.Change{}, journal.ErrNoChange
		}
		return journal.Change{}, fmt.Errorf("%w: resolve: step %s is %s and not held; nothing to resolve", errNotHeld, cur.Key, cur.Status)
	}
	st := *cur
	st.Hold, st.HoldReason, st.Decision = journal.HoldNone, "", decision
	st.VerifyBy = time.Time{}
	st.Evidence = "operator: " + res.Note
	if decision == DecisionResolvedCommitted {
		if st.Status != journal.StatusVerified {
			st.Status = journal.StatusCommitted
		}
		st.Retryable = false
		if res.OperationID != "" {
			st.OperationID = res.OperationID
		}
	} else {
		st.Status = journal.StatusPrepared
		st.Response = nil
		st.ApprovedBodyHash = cur.BodyHash
	}
	return journal.Change{Step: st, Event: journal.EventResolved, Reason: "operator resolved: " + res.Outcome, Note: res.Note, Claim: true}, nil
}
