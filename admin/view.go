package admin

import (
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
	Scope  string `json:"scope,omitempty"`
	Status string `json:"status"`
	// Observed marks an observation: a call of observe mode, forwarded
	// untouched and never replayed (journal.Step.Observed).
	Observed    bool   `json:"observed,omitempty"`
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
		Status: st.Status.String(), Observed: st.Observed, Hold: st.Hold.String(), HoldReason: st.HoldReason,
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
