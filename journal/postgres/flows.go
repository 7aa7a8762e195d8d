package postgres

import "github.com/toolguard/toolguard/journal"

// flowDelta is the change a step write makes to one workflow's record.
type flowDelta struct {
	id, scope                                                  string
	steps, held, started, retryable, verifying, done, prepared int32
	// Set when the step now belongs to the workflow: it becomes the
	// workflow's current step.
	curStep, curRoute, inputHash, prompt, policy string
}

// add counts s (delta +1) or uncounts it (-1) in its class, as
// journal.WorkflowCounts does.
func (d *flowDelta) add(s *journal.Step, delta int32) {
	d.steps += delta
	switch {
	case s.Held():
		d.held += delta
	case s.Status == journal.StatusStarted:
		d.started += delta
	case s.Status == journal.StatusFailed && s.Retryable:
		d.retryable += delta
	case s.Status == journal.StatusCommitted && !s.VerifyBy.IsZero():
		d.verifying += delta
	case s.Terminal():
		d.done += delta
	default:
		d.prepared += delta
	}
}

// flowDeltas are the workflow changes of a step going from old (nil for a
// new step) to s: at most one per workflow.
func flowDeltas(old, s *journal.Step) []flowDelta {
	var out []flowDelta
	if s.Workflow != "" {
		d := flowDelta{id: s.Workflow, scope: s.CredentialMAC, curStep: s.Key, curRoute: s.Route, inputHash: s.BodyHash}
		// A held step's versions are not the workflow's until an operator
		// releases it.
		if !s.Held() {
			d.prompt, d.policy = s.PromptVersion, s.PolicyVersion
		}
		d.add(s, 1)
		if sameFlow(old, s) {
			d.add(old, -1)
		}
		out = append(out, d)
	}
	if old != nil && old.Workflow != "" && !sameFlow(old, s) {
		d := flowDelta{id: old.Workflow, scope: old.CredentialMAC}
		d.add(old, -1)
		out = append(out, d)
	}
	return out
}

// sameFlow reports whether old (nil for none) counts in s's workflow
// record: the same id and scope.
func sameFlow(old, s *journal.Step) bool {
	return old != nil && old.Workflow == s.Workflow && old.CredentialMAC == s.CredentialMAC
}

// flowColumns are flowDeltas as the statement's array parameters.
type flowColumns struct {
	ids, scopes, curStep, curRoute, inputHash, prompt, policy  []string
	steps, held, started, retryable, verifying, done, prepared []int32
}

func flowArrays(ds []flowDelta) flowColumns {
	var c flowColumns
	for _, d := range ds {
		c.ids = append(c.ids, d.id)
		c.scopes = append(c.scopes, d.scope)
		c.steps = append(c.steps, d.steps)
		c.held = append(c.held, d.held)
		c.started = append(c.started, d.started)
		c.retryable = append(c.retryable, d.retryable)
		c.verifying = append(c.verifying, d.verifying)
		c.done = append(c.done, d.done)
		c.prepared = append(c.prepared, d.prepared)
		c.curStep = append(c.curStep, d.curStep)
		c.curRoute = append(c.curRoute, d.curRoute)
		c.inputHash = append(c.inputHash, d.inputHash)
		c.prompt = append(c.prompt, d.prompt)
		c.policy = append(c.policy, d.policy)
	}
	if c.ids == nil {
		c.ids, c.scopes, c.curStep, c.curRoute, c.inputHash, c.prompt, c.policy = []string{}, []string{}, []string{}, []string{}, []string{}, []string{}, []string{}
		c.steps, c.held, c.started, c.retryable, c.verifying, c.done, c.prepared = []int32{}, []int32{}, []int32{}, []int32{}, []int32{}, []int32{}, []int32{}
	}
	return c
}
