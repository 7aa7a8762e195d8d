package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// StepView is the JSON shape of a step in the admin API and the CLI. It
// carries the stored response's status and hash, never its body.
type StepView struct {
	Key      string `json:"key"`
	API      string `json:"api"`
	Route    string `json:"route"`
	Workflow string `json:"workflow"`
	// Scope is the caller's credential MAC (never the credential): the
	// key's and the workflow's scope; absent for callers without one
	// (credential: none).
	Scope       string `json:"scope,omitempty"`
	Status      string `json:"status"`
	Hold        string `json:"hold"`
	HoldReason  string `json:"hold_reason,omitempty"`
	Attempt     int    `json:"attempt"`
	Retryable   bool   `json:"retryable,omitempty"`
	OperationID string `json:"operation_id"`
	Method      string `json:"method"`
	// Target is the URL called: scheme://host/path?query (the query with
	// secret-named parameters masked; kept on held steps only). Steps
	// recorded before the scheme was kept show host/path.
	Target   string `json:"target"`
	BodyHash string `json:"body_hash"`
	// KeyFields summarises the key fields, redaction applied; absent on
	// steps recorded without a summary.
	KeyFields []journal.KeyField `json:"key_fields,omitempty"`
	// RequestFields are every body field with its value, redact paths
	// masked, sizes bounded (see journal.Step.RequestFields); absent on
	// steps that were never held while their request was at hand.
	RequestFields  []journal.KeyField `json:"request_fields,omitempty"`
	ResponseStatus int                `json:"response_status,omitempty"`
	ResponseHash   string             `json:"response_hash,omitempty"`
	ResponseBytes  int                `json:"response_bytes,omitempty"`
	Evidence       string             `json:"evidence,omitempty"`
	LastError      string             `json:"last_error,omitempty"`
	Decision       string             `json:"decision,omitempty"`
	PromptVersion  string             `json:"prompt_version,omitempty"`
	PolicyVersion  string             `json:"policy_version,omitempty"`
	Epoch          uint64             `json:"epoch"`
	Fence          uint64             `json:"fence"`
	CreatedAt      time.Time          `json:"created_at"`
	UpdatedAt      time.Time          `json:"updated_at"`
	VerifyBy       time.Time          `json:"verify_by,omitzero"`
	// SettlesAt is when an interrupted attempt of an owner whose claim was
	// taken over can no longer land; zero when none was.
	SettlesAt time.Time `json:"settles_at,omitzero"`
}

// ViewOf renders a step for operators.
func ViewOf(st *journal.Step) StepView {
	v := StepView{
		Key: st.Key, API: st.API, Route: st.Route, Workflow: st.Workflow, Scope: st.CredentialMAC,
		Status: st.Status.String(), Hold: st.Hold.String(), HoldReason: st.HoldReason,
		Attempt: st.Attempt, Retryable: st.Retryable, OperationID: st.OperationID,
		Method: st.Method, Target: targetOf(st), BodyHash: st.BodyHash,
		KeyFields: st.KeyFields, RequestFields: st.RequestFields,
		Evidence: st.Evidence, LastError: st.LastError, Decision: st.Decision,
		PromptVersion: st.PromptVersion, PolicyVersion: st.PolicyVersion,
		Epoch: st.Epoch, Fence: st.Fence, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, VerifyBy: st.VerifyBy, SettlesAt: st.SettlesAt,
	}
	if r := st.Response; r != nil {
		v.ResponseStatus, v.ResponseHash, v.ResponseBytes = r.Status, r.BodyHash, len(r.Body)
	}
	return v
}

// targetOf is the URL a step calls, as operators see it.
func targetOf(st *journal.Step) string {
	t := st.Host + st.Path
	if st.Scheme != "" {
		t = st.Scheme + "://" + t
	}
	if st.Query != "" {
		t += "?" + st.Query
	}
	return t
}

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

// ErrStillLanding refuses to resolve a step as not executed while its
// last attempt may still land at the provider: its owner's lease had not
// ended long enough ago for the longest send it allowed. Waiting until
// the time it names, or forcing, is the operator's choice.
var ErrStillLanding = errors.New("an interrupted attempt of this call may still land at the provider")

// Settler tells until when a step's last attempt may land, and the time
// to compare it with on the same clock (the proxy's settle).
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

type approval struct {
	Note string `json:"note,omitempty"`
}

func (a *Admin) approve(w http.ResponseWriter, r *http.Request) {
	var body approval
	if err := decodeOptional(r, &body, 64<<10); err != nil {
		a.adminError(w, badRequest(err))
		return
	}
	st, err := a.opts.Store.Apply(r.Context(), r.PathValue("key"), ApproveMutation(body.Note))
	if err != nil {
		a.adminError(w, notFoundAs(err, errNoStep))
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(&st))
}

// ApproveMutation releases a step held for approval: it becomes prepared
// and bound to the body the operator saw. Approving again is a no-op.
func ApproveMutation(note string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) { return approveChange(cur, note) }
}

func (a *Admin) resolve(w http.ResponseWriter, r *http.Request) {
	var res Resolution
	if err := decodeOptional(r, &res, 64<<10); err != nil {
		a.adminError(w, badRequest(err))
		return
	}
	m, err := ResolveMutationSettled(res, a.opts.Settle)
	if err != nil {
		a.adminError(w, badRequest(err))
		return
	}
	st, err := a.opts.Store.Apply(r.Context(), r.PathValue("key"), m)
	if err != nil {
		a.adminError(w, notFoundAs(err, errNoStep))
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
// last attempt may still land.
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

// decodeOptional decodes a JSON body if there is one, refusing unknown
// fields, duplicate members (decodeStrict) and bodies over max bytes.
func decodeOptional(r *http.Request, v any, max int64) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if int64(len(data)) > max {
		return fmt.Errorf("decode body: over %d bytes", max)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return decodeStrict(data, v)
}
