package admin

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// StepEvidence is toolguard's own record of one step in a resume packet.
// It never carries a response body: only its status and hash.
type StepEvidence struct {
	Key            string `json:"key"`
	Route          string `json:"route"`
	Status         string `json:"status"`
	Hold           string `json:"hold"`
	OperationID    string `json:"operation_id"`
	Attempt        int    `json:"attempt"`
	Evidence       string `json:"evidence"`
	ResponseStatus int    `json:"response_status,omitempty"`
	ResponseHash   string `json:"response_hash,omitempty"`
	Verified       bool   `json:"verified"`
	NextAction     string `json:"next_action"`
}

// Unresolved is a held step and why.
type Unresolved struct {
	Key    string    `json:"key"`
	Route  string    `json:"route"`
	Hold   string    `json:"hold"`
	Reason string    `json:"reason"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// ResumePacket is what an agent rebuilds its context from.
type ResumePacket struct {
	Workflow       journal.Workflow `json:"workflow"`
	Checkpoint     json.RawMessage  `json:"checkpoint"`
	Steps          []StepEvidence   `json:"steps"`
	Unresolved     []Unresolved     `json:"unresolved"`
	NextSafeAction string           `json:"next_safe_action"`
}

// Resume builds the resume packet of workflow id in the caller scope that
// scope selects (see PickWorkflow: "" for the id's only one) from the
// journal, with each step's next action from the proxy's recovery table.
// It works on a read-only journal too (the CLI's offline `workflow resume
// --journal`).
func Resume(j Workflows, rec Recovery, id, scope string) (ResumePacket, error) {
	wf, err := PickWorkflow(j, id, scope)
	if err != nil {
		return ResumePacket{}, err
	}
	steps, err := j.WorkflowSteps(wf.Scope, id)
	if err != nil {
		return ResumePacket{}, err
	}
	return resumePacket(rec, wf, steps), nil
}

// agentEvidence is a step's evidence as an agent may read it: an
// operator's resolution is reported without the operator's note, which
// stays in the journal's event.
func agentEvidence(st *journal.Step) string {
	switch st.Decision {
	case DecisionResolvedCommitted, DecisionResolvedNotExecuted:
		return "resolved by an operator"
	}
	return st.Evidence
}

// resumePacket builds a workflow's packet from its record and steps.
func resumePacket(rec Recovery, w journal.Workflow, steps []journal.Step) ResumePacket {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].CreatedAt.Before(steps[j].CreatedAt) })
	p := ResumePacket{Workflow: w, Checkpoint: w.Checkpoint, Steps: []StepEvidence{}, Unresolved: []Unresolved{}}
	p.Workflow.Checkpoint = nil
	if p.Checkpoint == nil {
		p.Checkpoint = json.RawMessage("null")
	}
	var actions []string
	for i := range steps {
		st := &steps[i]
		action := rec.NextAction(st)
		ev := StepEvidence{Key: st.Key, Route: st.Route, Status: st.Status.String(), Hold: st.Hold.String(),
			OperationID: st.OperationID, Attempt: st.Attempt, Evidence: agentEvidence(st),
			Verified: st.Status == journal.StatusVerified, NextAction: action}
		if r := st.Response; r != nil {
			ev.ResponseStatus, ev.ResponseHash = r.Status, r.BodyHash
		}
		p.Steps = append(p.Steps, ev)
		if st.Held() {
			p.Unresolved = append(p.Unresolved, Unresolved{Key: st.Key, Route: st.Route, Hold: st.Hold.String(),
				Reason: st.HoldReason, Detail: st.LastError, Since: st.UpdatedAt})
		}
		if action != "" {
			actions = append(actions, action)
		}
	}
	p.NextSafeAction = pickAction(actions, len(steps))
	return p
}

// pickAction orders the steps' actions: an operator's review first, then
// waits, then retries; with nothing left, continue with the plan.
func pickAction(actions []string, steps int) string {
	for _, prefix := range []string{"operator review needed", "wait", "retry"} {
		for _, a := range actions {
			if strings.HasPrefix(a, prefix) {
				return a
			}
		}
	}
	if steps == 0 {
		return "start: no step has been sent yet"
	}
	return "continue: every step has a recorded outcome; proceed with the plan"
}
