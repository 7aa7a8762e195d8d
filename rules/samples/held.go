package samples

import (
	"fmt"
	"net/http"

	"github.com/toolguard/toolguard/rules"
)

// Held samples. Check tells which samples toolguard would hold for an
// operator rather than send, as if the samples of a run were sent in
// order, at once, by the callers their credentials name:
//
//   - a route's approval: required, or approval.when true for the sample,
//     or approval.when failing on it (held too: fail closed);
//   - a route's budget: a caller's new intents beyond budget.calls (within
//     budget.per, which a run of samples takes no time to span).
//
// A sample of an intent seen before in the run (same key) is that intent
// again, answered as it was: it is neither held anew nor counted.

// holds tracks the intents and budgets of one run.
type holds struct {
	seen map[string]bool
	// spent counts the intents sent per route and caller.
	spent map[budgetOf]int
}

// budgetOf is one caller's budget of one route.
type budgetOf struct {
	route      *rules.Route
	credential string
}

func newHolds() *holds {
	return &holds{seen: map[string]bool{}, spent: map[budgetOf]int{}}
}

// held says why the sample of intent it, derived from in and h, would be
// held; "" when it would be sent (or is an intent seen before).
func (hs *holds) held(r *rules.Route, it *rules.Intent, in rules.Input, h http.Header) string {
	if !r.Effect.Guarded() || hs.seen[it.Key] {
		return ""
	}
	hs.seen[it.Key] = true
	need, err := r.NeedsApproval(it.Doc, in, h)
	switch {
	case err != nil:
		return "held for approval: " + err.Error() + " (fail closed)"
	case need && r.ApprovalRequired:
		return "held for approval: approval: required"
	case need:
		return "held for approval: approval.when is true"
	}
	if b := r.Budget; b != nil {
		k := budgetOf{r, in.Credential}
		if hs.spent[k] >= b.Calls {
			return fmt.Sprintf("held for approval: over budget (%d calls per %s)", b.Calls, b.Per)
		}
		hs.spent[k]++
	}
	return ""
}
