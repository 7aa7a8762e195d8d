package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// Checkpoint is an agent's compact resume state: facts and references,
// never hidden reasoning or raw tool output. Unknown fields are refused.
type Checkpoint struct {
	Goal          string     `json:"goal"`
	Constraints   []string   `json:"constraints,omitempty"`
	Plan          []string   `json:"plan,omitempty"`
	Unresolved    []string   `json:"unresolved,omitempty"`
	Artifacts     []Artifact `json:"artifacts,omitempty"`
	PromptVersion string     `json:"prompt_version,omitempty"`
	PolicyVersion string     `json:"policy_version,omitempty"`
}

// Artifact references a produced artifact by id and content hash.
type Artifact struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
	URI    string `json:"uri,omitempty"`
}

// Checkpoint limits: a checkpoint holds concise facts.
const (
	maxCheckpointBytes = 64 << 10
	maxCheckpointText  = 2048
	maxCheckpointItems = 100
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// validate checks a checkpoint's shape and sizes.
func (c *Checkpoint) validate() error {
	if strings.TrimSpace(c.Goal) == "" {
		return errors.New("goal: required")
	}
	texts := map[string][]string{"goal": {c.Goal}, "constraints": c.Constraints, "plan": c.Plan, "unresolved": c.Unresolved}
	for field, list := range texts {
		if len(list) > maxCheckpointItems {
			return fmt.Errorf("%w: %s: %d items (max %d)", errTooLarge, field, len(list), maxCheckpointItems)
		}
		for i, t := range list {
			if len(t) > maxCheckpointText {
				return fmt.Errorf("%w: %s[%d]: %d bytes (max %d): store raw tool output as an artifact (id and sha256), not in the checkpoint", errTooLarge, field, i, len(t), maxCheckpointText)
			}
		}
	}
	if len(c.Artifacts) > maxCheckpointItems {
		return fmt.Errorf("%w: artifacts: %d items (max %d)", errTooLarge, len(c.Artifacts), maxCheckpointItems)
	}
	for i, a := range c.Artifacts {
		if a.ID == "" || !sha256Hex.MatchString(a.SHA256) {
			return fmt.Errorf("artifacts[%d]: want an id and a lowercase hex sha256 (got id %q, sha256 %q)", i, a.ID, a.SHA256)
		}
	}
	return nil
}

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

// ResumePacket builds the resume packet of workflow id in the caller scope
// that scope selects (see PickWorkflow: "" for the id's only one) from the
// journal and the loaded rules. It works on a read-only journal too (the
// CLI's offline `workflow resume --journal`).
func (s *Server) ResumePacket(id, scope string) (ResumePacket, error) {
	wf, err := PickWorkflow(s.journal, id, scope)
	if err != nil {
		return ResumePacket{}, err
	}
	steps, err := s.journal.WorkflowSteps(wf.Scope, id)
	if err != nil {
		return ResumePacket{}, err
	}
	return s.resumePacket(wf, steps), nil
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

// resumePacket builds a workflow's packet from the journal alone.
func (s *Server) resumePacket(w journal.Workflow, steps []journal.Step) ResumePacket {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].CreatedAt.Before(steps[j].CreatedAt) })
	p := ResumePacket{Workflow: w, Checkpoint: w.Checkpoint, Steps: []StepEvidence{}, Unresolved: []Unresolved{}}
	p.Workflow.Checkpoint = nil
	if p.Checkpoint == nil {
		p.Checkpoint = json.RawMessage("null")
	}
	now := s.now()
	var actions []string
	for i := range steps {
		st := &steps[i]
		action := s.nextAction(st, now)
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

// nextAction says what is safe to do about one step, from the same
// recovery table the proxy uses; "" when nothing is left to do.
func (s *Server) nextAction(st *journal.Step, now time.Time) string {
	route := s.routeOf(st.API, st.Route)
	sit := Situation{Step: st, BodyHash: st.BodyHash, MaxAttempts: s.opts.MaxAttempts,
		InFlight: s.flights.live(st.Key, now) != nil || inFlightElsewhere(st, s.journal.Epoch()), Settling: s.settling(st)}
	if route != nil {
		sit.Strategy, sit.HasLookup = recoveryOf(route, stepLookupAbsent(route, st))
		sit.Effect, sit.Approval = route.Effect, route.ApprovalRequired
		sit.NativeExpired = nativeExpired(route, st, now)
		sit.Backoff = backoff(st, now)
	} else {
		sit.Effect = rules.EffectIrreversible
	}
	name := st.Route
	d := Decide(sit)
	switch d.Action {
	case ActionBlock, ActionHold:
		switch d.Reason {
		case ReasonApproval:
			return "wait: approval of " + name + " pending"
		case ReasonVersionChanged:
			return "operator review needed: " + name + " held after a prompt/policy version change"
		case ReasonNotVisible:
			return "operator review needed: " + name + " effect not visible"
		case ReasonRetryBudget:
			return "operator review needed: " + name + " failed on every attempt"
		case ReasonAbandoned:
			return "operator review needed: " + name + " was interrupted and nobody retried it; outcome unknown"
		}
		return "operator review needed: " + name + " outcome unknown"
	case ActionWait:
		return "wait: " + name + " in flight"
	case ActionSettle:
		return "wait: " + name + " may still be landing at the provider"
	case ActionLookup:
		return "retry " + name + ": toolguard asks the provider first and does not re-send if it took effect"
	case ActionForward:
		switch {
		case st.Status == journal.StatusStarted && sit.Strategy == StrategyNative:
			return "retry " + name + ": provider dedupes on the key"
		case st.Status == journal.StatusStarted:
			return "retry " + name + ": reversible route, it will be re-sent"
		case st.Status == journal.StatusFailed:
			return "retry " + name + ": failed before taking effect, safe to retry"
		}
		return "retry " + name + ": approved, not sent yet"
	}
	if sit.Backoff {
		return "wait: " + name + " failed, and the provider asked to wait before a retry (Retry-After)"
	}
	if st.Status == journal.StatusCommitted && !st.VerifyBy.IsZero() {
		return "wait: verification of " + name + " pending"
	}
	return ""
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

// mountWorkflows adds the workflow endpoints to the admin API.
func (s *Server) mountWorkflows(mux *http.ServeMux, auth func(Role, http.HandlerFunc) http.HandlerFunc) {
	ws := s.journal
	mux.HandleFunc("GET /v1/workflows", auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		all, err := ws.ListWorkflows(0)
		if err != nil {
			adminError(w, s.log, err)
			return
		}
		list := all[:0]
		for _, wf := range all {
			if visible(r, wf.Scope) {
				wf.Checkpoint = nil
				list = append(list, wf)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"workflows": nonNilList(list)})
	}))
	mux.HandleFunc("GET /v1/workflows/{id}", auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		wf, err := PickWorkflow(ws, r.PathValue("id"), workflowScopeParam(r))
		if err != nil {
			adminError(w, s.log, notFoundAs(err, errNoWorkflow))
			return
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(wf.Version, 10)))
		writeJSON(w, http.StatusOK, wf)
	}))
	mux.HandleFunc("GET /v1/workflows/{id}/resume", auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		p, err := s.ResumePacket(r.PathValue("id"), workflowScopeParam(r))
		if err != nil {
			adminError(w, s.log, notFoundAs(err, errNoWorkflow))
			return
		}
		writeJSON(w, http.StatusOK, p)
	}))
	mux.HandleFunc("PUT /v1/workflows/{id}/checkpoint", auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		wf, err := putCheckpoint(r, s.journal)
		if err != nil {
			adminError(w, s.log, notFoundAs(err, errNoWorkflow))
			return
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(wf.Version, 10)))
		writeJSON(w, http.StatusOK, wf)
	}))
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// putCheckpoint validates a checkpoint body and stores it.
func putCheckpoint(r *http.Request, cp Store) (journal.Workflow, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxCheckpointBytes+1))
	if err != nil {
		return journal.Workflow{}, badRequest(fmt.Errorf("read body: %w", err))
	}
	if len(data) > maxCheckpointBytes {
		return journal.Workflow{}, fmt.Errorf("%w: a checkpoint is at most %d bytes of concise facts; store large content as an artifact (id and sha256)", errCheckpointTooLarge, maxCheckpointBytes)
	}
	var c Checkpoint
	if err := decodeStrict(data, &c); err != nil {
		return journal.Workflow{}, fmt.Errorf("%w: %v (fields: goal, constraints, plan, unresolved, artifacts, prompt_version, policy_version; raw tool output is refused)", errBadCheckpoint, err)
	}
	if err := c.validate(); err != nil {
		return journal.Workflow{}, fmt.Errorf("%w: %w", errBadCheckpoint, err)
	}
	ifVersion, err := parseIfMatch(r.Header.Get("If-Match"))
	if err != nil {
		return journal.Workflow{}, badRequest(err)
	}
	scope, err := checkpointScope(cp, r)
	if err != nil {
		return journal.Workflow{}, err
	}
	canon, _ := json.Marshal(c)
	return cp.PutCheckpoint(scope, r.PathValue("id"), ifVersion, canon)
}

// parseIfMatch reads If-Match: "7" or 7; nil when absent.
func parseIfMatch(v string) (*uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseUint(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("If-Match: want a quoted workflow version such as \"3\" (got %s)", v)
	}
	return &n, nil
}

// WorkflowAdmin returns the hook that mounts the workflow endpoints on the
// admin API.
func (s *Server) WorkflowAdmin() func(*http.ServeMux, func(Role, http.HandlerFunc) http.HandlerFunc) {
	return s.mountWorkflows
}
