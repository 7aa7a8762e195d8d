package journal

import (
	"fmt"
	"net/http"
	"time"
)

// SchemaVersion is the version of the journal layout written by this build,
// stamped on every Step record it writes. Layout 2 of the bbolt file stores
// steps by record sequence (package bolt); bolt.Open upgrades a layout-1
// file in place.
const SchemaVersion = 2

// Status is the state of a step (see DESIGN.md, "Step states").
type Status uint8

const (
	// StatusUnknown is the zero value; it is never stored.
	StatusUnknown Status = iota
	// StatusPrepared: the intent is recorded and certainly not sent.
	StatusPrepared
	// StatusStarted: the request was possibly sent; its outcome is not recorded.
	StatusStarted
	// StatusCommitted: the upstream answered with a definitive success.
	StatusCommitted
	// StatusVerified: the effect was confirmed by a verification probe.
	StatusVerified
	// StatusFailed: a definitive failure, or not executed at all.
	StatusFailed
)

var statusNames = [...]string{"", "prepared", "started", "committed", "verified", "failed"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", s)
}

// ParseStatus parses a status name as printed by String.
func ParseStatus(s string) (Status, error) {
	for i, n := range statusNames {
		if i > 0 && n == s {
			return Status(i), nil
		}
	}
	return StatusUnknown, fmt.Errorf("unknown step status %q (want prepared, started, committed, verified or failed)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	*s = v
	return err
}

// Hold says why a step must not be forwarded until an operator acts.
type Hold uint8

const (
	// HoldNone: the step is not held.
	HoldNone Hold = iota
	// HoldAwaitingApproval: the route needs an operator's approval first.
	HoldAwaitingApproval
	// HoldNeedsReview: the outcome is uncertain or the effect was not seen.
	HoldNeedsReview
)

var holdNames = [...]string{"", "awaiting_approval", "needs_review"}

func (h Hold) String() string {
	if int(h) < len(holdNames) {
		return holdNames[h]
	}
	return fmt.Sprintf("hold(%d)", h)
}

// ParseHold parses a hold name; the empty string is HoldNone.
func ParseHold(s string) (Hold, error) {
	for i, n := range holdNames {
		if n == s {
			return Hold(i), nil
		}
	}
	return HoldNone, fmt.Errorf("unknown hold %q (want awaiting_approval or needs_review)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (h Hold) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hold) UnmarshalText(b []byte) error {
	v, err := ParseHold(string(b))
	*h = v
	return err
}

// Step is the journal record of one idempotency key. It never holds a
// credential or a whole request body: only hashes of them, KeyFields, and,
// on steps held for an operator, RequestFields and Query.
type Step struct {
	Schema   int    `json:"schema"`
	Key      string `json:"key"`
	API      string `json:"api"`
	Route    string `json:"route"`
	Workflow string `json:"workflow,omitempty"`

	Status     Status `json:"status"`
	Hold       Hold   `json:"hold"`
	HoldReason string `json:"hold_reason,omitempty"`
	// Observed marks an observation (package observe): a call forwarded
	// untouched in observe mode, whose record says what happened to it. It
	// is never replayed, held or recovered, and a guarded call treats its
	// key as new.
	Observed bool `json:"observed,omitempty"`

	// Attempt counts the times the request was (possibly) sent upstream.
	Attempt int `json:"attempt"`
	// Retryable marks a failed step that may be executed again.
	Retryable bool `json:"retryable,omitempty"`

	// Epoch and Fence identify the owner of the latest claim (see package doc).
	Epoch uint64 `json:"epoch"`
	Fence uint64 `json:"fence"`
	// Revision counts the events recorded for this key; each change's events are numbered
	// Revision+1.. and the step's Revision becomes the last of them. Backends use it as the
	// step's optimistic-concurrency version.
	Revision uint64 `json:"revision"`
	// LeaseUntil is when the claim of a started step lapses, by the journal's clock (on PostgreSQL
	// the database's now()); zero when the backend keeps leases in the process (bbolt).
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// ReadAt is the journal's clock when this record was read; not stored.
	ReadAt time.Time `json:"-"`

	// Method, Host and Path describe the target.
	Method string `json:"method"`
	Host   string `json:"host"`
	Path   string `json:"path"`
	// Scheme is the target's scheme (http or https); empty on steps
	// recorded before it was kept.
	Scheme string `json:"scheme,omitempty"`
	// Query is the target's query string as an operator is shown it, with
	// the values of parameters named like secrets (api_key, token,
	// signature...) masked and values shortened. It is kept only where
	// RequestFields is.
	Query string `json:"query,omitempty"`

	// CredentialMAC is an HMAC of the caller's credential header: it tells
	// whose step this is (a verification resumed after a restart waits for
	// that caller's next request) without holding the credential.
	CredentialMAC string `json:"credential_mac,omitempty"`

	// BodyHash is the sha256 of the canonical whole request body; approvals
	// and reviews bind to it.
	BodyHash string `json:"body_hash"`
	// KeyFields summarises the request's key fields for the operator who
	// approves or reviews it, with the route's redact paths masked: short
	// values (64 bytes each, 1 KiB in all), never the credential, and only
	// member names for a body keyed whole. Set when the step is created;
	// nil when the proxy keeps no summary.
	KeyFields []KeyField `json:"key_fields,omitempty"`
	// RecoveryValues are the request values the route's lookup and
	// verification templates read ({{body.PATH}} and {{path.NAME}}, as raw
	// JSON by reference), redact paths left out: the minimum a recovery
	// made without the request (after a restart, by the background
	// resolver, on another replica) needs. Set when the step is created.
	RecoveryValues map[string]string `json:"recovery_values,omitempty"`
	// KeyForm is the canonical form the key was derived in
	// (rules.KeyForm); zero for steps journaled before forms were numbered.
	KeyForm int `json:"key_form,omitempty"`
	// SettlesAt is when an attempt of an owner whose claim was taken over
	// can no longer land at the provider: its lease's end plus the longest
	// send it allowed, on the journal's clock. Zero when no takeover
	// happened.
	SettlesAt time.Time `json:"settles_at,omitzero"`
	// RequestFields are every field of the request body with its value,
	// for the operator who approves or resolves the step: the route's
	// redact paths masked, values cut at 256 bytes, at most 64 fields and
	// 8 KiB, a last entry named "…" saying what was left out. They are
	// kept only when a step is put on hold while its request is at hand
	// (approval, budget, version change, ambiguous effect on a retry), and
	// not when the proxy keeps no summaries.
	RequestFields []KeyField `json:"request_fields,omitempty"`
	// ApprovedBodyHash is set when an operator approved the request with
	// that body; it is consumed by the one forward it allows.
	ApprovedBodyHash string `json:"approved_body_hash,omitempty"`
	// Budgeted is set by the journal on a step whose creation counted
	// against its route's budget (Change.Budget); a mutation cannot set or
	// clear it.
	Budgeted bool `json:"budgeted,omitempty"`

	OperationID string    `json:"operation_id,omitempty"`
	Response    *Response `json:"response,omitempty"`
	// Evidence says how the current status was established, in words.
	Evidence  string `json:"evidence,omitempty"`
	LastError string `json:"last_error,omitempty"`

	// Decision records the last operator decision on the step: approved,
	// resolved_committed or resolved_not_executed; empty when none.
	Decision string `json:"decision,omitempty"`

	PromptVersion string `json:"prompt_version,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// VerifyBy is the deadline of a pending verification; zero when none is
	// pending.
	VerifyBy time.Time `json:"verify_by,omitzero"`
}

// KeyField is one entry of Step.KeyFields: a key field's path and its
// value as canonical JSON text (shortened, redacted), or a top-level member
// name with an empty Value.
type KeyField struct {
	Field string `json:"field"`
	Value string `json:"value,omitempty"`
}

// Response is an upstream answer as stored for replay. Header holds only
// headers that are safe to keep (no cookies, no credentials).
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
	// BodyHash is the sha256 of the full body as received.
	BodyHash string `json:"body_hash"`
	// Truncated is set when the body was larger than the store limit and
	// only its hash was kept.
	Truncated bool `json:"truncated,omitempty"`
}

// Held reports whether the step must not be forwarded.
func (s *Step) Held() bool { return s.Hold != HoldNone }

// Leasable reports whether the step's claim has something to lease, so
// that Renew extends it: a started step (its call may be in flight) or a
// committed step with a pending verification (its verifier probes).
func (s *Step) Leasable() bool {
	return s.Status == StatusStarted || (s.Status == StatusCommitted && !s.VerifyBy.IsZero())
}

// Expirable reports whether the step is a hold that nobody settled and
// that was never sent: awaiting approval (for its route's approval, or
// over its budget), prepared. Store.ExpireHolds removes such steps once
// they are older than the hold expiry; holds for review may have been
// sent and stay until an operator resolves them.
func (s *Step) Expirable() bool {
	return s.Hold == HoldAwaitingApproval && s.Status == StatusPrepared
}

// Terminal reports whether the step has a stored, definitive outcome.
func (s *Step) Terminal() bool {
	return s.Status == StatusCommitted || s.Status == StatusVerified || (s.Status == StatusFailed && !s.Retryable)
}
