package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Operator decisions recorded in Step.Decision.
const (
	DecisionApproved            = "approved"
	DecisionResolvedCommitted   = "resolved_committed"
	DecisionResolvedNotExecuted = "resolved_not_executed"
)

// Resolution is the body of POST /v1/steps/{key}/resolve.
type Resolution struct {
	Outcome     string `json:"outcome"`
	OperationID string `json:"operation_id,omitempty"`
	Note        string `json:"note,omitempty"`
	// Force resolves not_executed although an interrupted attempt may
	// still land at the provider (see ErrStillLanding).
	Force bool `json:"force,omitempty"`
}

// Settler tells until when a step's last attempt may land, and the time
// to compare it with on the same clock (Proxy.Settle).
type Settler func(st *journal.Step) (until, now time.Time)

// stillLanding refuses a not_executed resolution of st inside its
// landing window, unless forced.
func stillLanding(settle Settler, st *journal.Step, res Resolution, decision string) error {
	if settle == nil || res.Force || decision != DecisionResolvedNotExecuted || st.Status != journal.StatusStarted {
		return nil
	}
	until, now := settle(st)
	if !now.Before(until) {
		return nil
	}
	return fmt.Errorf("%w until %s (in %s): resolving it as not executed now lets the next retry send it a second time; wait, or resolve with force",
		ErrStillLanding, until.UTC().Format(time.RFC3339), until.Sub(now).Round(time.Second))
}

// approval is the optional body of POST /v1/steps/{key}/approve.
type approval struct {
	Note string `json:"note,omitempty"`
}

// approve answers POST /v1/steps/{key}/approve.
func (a *API) approve(w http.ResponseWriter, r *http.Request) {
	var body approval
	if err := decodeOptional(r, &body, 64<<10); err != nil {
		a.fail(w, badRequest(err))
		return
	}
	st, err := a.opts.Journal.Apply(r.Context(), r.PathValue("key"), ApproveMutation(body.Note))
	if err != nil {
		a.fail(w, notFoundAs(err, errNoStep))
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(&st))
}

// ApproveMutation releases a step held for approval: it becomes prepared
// and bound to the body the operator saw. Approving again is a no-op.
func ApproveMutation(note string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) { return approveChange(cur, note) }
}

// resolve answers POST /v1/steps/{key}/resolve.
func (a *API) resolve(w http.ResponseWriter, r *http.Request) {
	var res Resolution
	if err := decodeOptional(r, &res, 64<<10); err != nil {
		a.fail(w, badRequest(err))
		return
	}
	m, err := ResolveMutationSettled(res, a.proxy.Settle)
	if err != nil {
		a.fail(w, badRequest(err))
		return
	}
	st, err := a.opts.Journal.Apply(r.Context(), r.PathValue("key"), m)
	if err != nil {
		a.fail(w, notFoundAs(err, errNoStep))
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(&st))
}

// ResolveMutation ends a hold with an operator's finding. committed
// answers retries from the stored response (or the resolution itself);
// not_executed lets the next retry with the reviewed body be sent.
func ResolveMutation(res Resolution) (journal.Mutation, error) {
	return ResolveMutationSettled(res, nil)
}

// ResolveMutationSettled is ResolveMutation that refuses, with
// ErrStillLanding, a not_executed resolution while settle says the step's
// last attempt may still land; a nil settle checks nothing.
func ResolveMutationSettled(res Resolution, settle Settler) (journal.Mutation, error) {
	var decision string
	switch res.Outcome {
	case "committed":
		decision = DecisionResolvedCommitted
	case "not_executed", "not-executed":
		decision = DecisionResolvedNotExecuted
	default:
		return nil, fmt.Errorf("outcome: want committed or not_executed (got %q)", res.Outcome)
	}
	return func(cur *journal.Step) (journal.Change, error) {
		if err := stillLanding(settle, cur, res, decision); err != nil {
			return journal.Change{}, err
		}
		return resolveChange(cur, decision, res)
	}, nil
}
