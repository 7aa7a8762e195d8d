package proxy

import (
	"fmt"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
)

// This file decides what holds a new intent before it is sent: its
// route's approval (approval: required, or approval.when, evaluated once
// per new intent and never for a replay), its route's budget (counted by
// the journal in the claim's own write, see journal.Change.Budget), and
// the cap on its caller's open holds (limits.max_open_holds).

// approvalVerdict is what a call's approval said, once evaluated.
type approvalVerdict struct {
	done bool
	need bool
	// err says why approval.when could not be evaluated; need is then
	// true (fail closed).
	err error
}

// needsApproval reports whether c's new intent waits for an operator. It
// evaluates the route's approval.when the first time it is asked only:
// run asks before the claim when the key has no step, and the claim's
// mutation asks again (then for free) when it finds none.
func (s *Server) needsApproval(c *call) bool {
	if !c.approval.done {
		need, err := c.route.NeedsApproval(c.intent.Doc, c.input, c.in.Header)
		c.approval = approvalVerdict{done: true, need: need, err: err}
	}
	return c.approval.need
}

// explain says in d.Why what held a new intent of c: approval.when, or the
// route's budget.
func explain(c *call, d lifecycle.Decision) lifecycle.Decision {
	switch {
	case d.Reason == lifecycle.ReasonApproval && c.approval.err != nil:
		d.Why = c.approval.err.Error() + "; held for approval (fail closed)"
	case d.Reason == lifecycle.ReasonApproval && c.route.ApprovalWhen != nil:
		d.Why = "approval.when is true"
	case d.Reason == lifecycle.ReasonBudget:
		b := c.route.Budget
		d.Why = fmt.Sprintf("over the route's budget of %d calls per %s", b.Calls, b.Per)
	}
	return d
}

// limited adds to ch, the change decision d makes to c's key (cur nil
// for a new key), the limits on creating it: the route's budget when a
// new intent is sent, the cap on the caller's open holds when one is
// held. A hold because approval.when could not be evaluated keeps the
// error as its evidence.
func (s *Server) limited(c *call, cur *journal.Step, d lifecycle.Decision, ch journal.Change) journal.Change {
	if cur != nil {
		return ch
	}
	if b := c.route.Budget; b != nil && d.Action == lifecycle.ActionForward {
		ch.Budget = &journal.Budget{Calls: b.Calls, Per: b.Per}
	}
	if ch.Step.Held() {
		ch.MaxHolds = s.opts.MaxOpenHolds
		if d.Reason == lifecycle.ReasonApproval && c.approval.err != nil {
			ch.Step.Evidence = d.Why
		}
	}
	return ch
}

// tooManyHoldsRetry is the Retry-After of a call refused because its
// caller has too many open holds: operators settle holds in minutes.
const tooManyHoldsRetry = time.Minute

// tooManyHolds answers a new intent that would be held while its caller
// has limits.max_open_holds holds already: 429, and nothing journaled.
func (s *Server) tooManyHolds(c *call) *answer {
	s.metrics.Reject("too_many_holds")
	p := problem.New(problem.TooManyHolds, c.intent.Key, fmt.Sprintf(
		"this call would be held for an operator, and its caller has %d held calls already (limits.max_open_holds); it was not recorded: retry once an operator has settled some",
		s.opts.MaxOpenHolds))
	p.RetryAfter = tooManyHoldsRetry
	return s.problem(c, p)
}
