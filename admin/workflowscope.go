package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/journal"
)

// A workflow id names one record per caller scope (journal.Workflow.Scope,
// the caller's credential MAC). The admin API's workflow endpoints take
// ?scope=: a prefix of the scope's MAC, or "none" for callers without a
// credential. Without it, an id in one scope is that scope's; an id in
// several scopes is ambiguous (409, listing them).

// scopeNone selects the scope of callers without a credential.
const scopeNone = "none"

// AmbiguousScopeError names the scopes a workflow request could mean.
type AmbiguousScopeError struct {
	ID     string
	Scopes []string
}

func (e *AmbiguousScopeError) Error() string {
	names := make([]string, len(e.Scopes))
	for i, s := range e.Scopes {
		names[i] = s
		if s == "" {
			names[i] = scopeNone
		}
	}
	return fmt.Sprintf("workflow %s exists in %d caller scopes (%s): name one with ?scope= (a prefix of its credential MAC, or none)",
		e.ID, len(e.Scopes), strings.Join(names, ", "))
}

// Unwrap makes errors.Is(err, ErrAmbiguousScope) true.
func (e *AmbiguousScopeError) Unwrap() error { return ErrAmbiguousScope }

// PickWorkflow returns the record of workflow id that scope selects ("":
// the id's only one), an error wrapping errNoWorkflow when none does, or an
// *AmbiguousScopeError.
func PickWorkflow(j Workflows, id, scope string) (journal.Workflow, error) {
	all, err := j.FindWorkflows(id)
	if err != nil {
		return journal.Workflow{}, err
	}
	var match []journal.Workflow
	for _, w := range all {
		if scope == "" || (scope == scopeNone && w.Scope == "") || (scope != scopeNone && w.Scope != "" && strings.HasPrefix(w.Scope, scope)) {
			match = append(match, w)
		}
	}
	switch len(match) {
	case 0:
		return journal.Workflow{}, fmt.Errorf("workflow %s%s: %w", id, scopeNote(scope), errNoWorkflow)
	case 1:
		return match[0], nil
	}
	e := &AmbiguousScopeError{ID: id}
	for _, w := range match {
		e.Scopes = append(e.Scopes, w.Scope)
	}
	return journal.Workflow{}, e
}

func scopeNote(scope string) string {
	if scope == "" {
		return ""
	}
	return " in scope " + scope
}

// checkpointScope is the scope a checkpoint PUT writes to: the selected
// record's; for a new workflow, the ?scope= given in full (a credential
// MAC) or none, else the empty scope.
func checkpointScope(j Workflows, r *http.Request) (string, error) {
	id, scope := r.PathValue("id"), workflowScopeParam(r)
	w, err := PickWorkflow(j, id, scope)
	switch {
	case err == nil:
		return w.Scope, nil
	case !errors.Is(err, errNoWorkflow):
		return "", err
	case scope == "" || scope == scopeNone:
		return "", nil
	case !sha256Hex.MatchString(scope):
		return "", badRequest(fmt.Errorf("scope %q: a new workflow's scope is a whole credential MAC (64 hex digits) or none", scope))
	}
	return scope, nil
}
