package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Types of the problems toolguard answers with (contract, DESIGN.md
// "Errors").
const (
	InProgress          = "urn:toolguard:in-progress"
	AmbiguousEffect     = "urn:toolguard:ambiguous-effect"
	AwaitingApproval    = "urn:toolguard:awaiting-approval"
	PayloadMismatch     = "urn:toolguard:payload-mismatch"
	InvalidBody         = "urn:toolguard:invalid-body"
	BodyTooLarge        = "urn:toolguard:body-too-large"
	RequestTimeout      = "urn:toolguard:request-timeout" // added beyond the contract's list
	UpstreamUnreachable = "urn:toolguard:upstream-unreachable"
	OutcomeUnknown      = "urn:toolguard:outcome-unknown"
	VersionChanged      = "urn:toolguard:version-changed"
	// Added beyond the contract's list.
	Rejected        = "urn:toolguard:rejected"
	Unavailable     = "urn:toolguard:unavailable"
	RetryBudget     = "urn:toolguard:retry-budget-exhausted"
	HeadersTooLarge = "urn:toolguard:headers-too-large"
	// OverBudget: a new intent over its route's budget, held for an
	// operator's approval (send Retry-After).
	OverBudget = "urn:toolguard:over-budget"
	// TooManyHolds: a new intent that would be held while its
	// caller has limits.max_open_holds held calls; nothing was journaled
	// (send Retry-After).
	TooManyHolds = "urn:toolguard:too-many-holds"
)

// info is the status and title of each type.
var info = map[string]struct {
	status int
	title  string
}{
	InProgress:          {http.StatusConflict, "A call with this key is in progress"},
	AmbiguousEffect:     {http.StatusConflict, "Outcome unknown; held for review"},
	AwaitingApproval:    {http.StatusConflict, "Awaiting an operator's approval"},
	PayloadMismatch:     {http.StatusUnprocessableEntity, "Body differs from the approved one"},
	InvalidBody:         {http.StatusBadRequest, "Body cannot be parsed to derive the key"},
	BodyTooLarge:        {http.StatusRequestEntityTooLarge, "Body too large"},
	RequestTimeout:      {http.StatusRequestTimeout, "Request body arrived too slowly"},
	UpstreamUnreachable: {http.StatusBadGateway, "Upstream unreachable; nothing was sent"},
	OutcomeUnknown:      {http.StatusGatewayTimeout, "Sent, but no answer; outcome unknown"},
	VersionChanged:      {http.StatusConflict, "Prompt or policy version changed mid-workflow"},
	Rejected:            {http.StatusForbidden, "Call rejected by policy"},
	Unavailable:         {http.StatusServiceUnavailable, "toolguard cannot take the call now"},
	RetryBudget:         {http.StatusConflict, "Retry budget exhausted; held for review"},
	HeadersTooLarge:     {http.StatusRequestHeaderFieldsTooLarge, "Request headers too large"},
	OverBudget:          {http.StatusConflict, "Over the route's call budget; awaiting an operator's approval"},
	TooManyHolds:        {http.StatusTooManyRequests, "Too many calls held for an operator"},
}

// Details is an RFC 9457 problem body ("problem details").
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Key    string `json:"key,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
}

// New is the problem of type typ (one of the types above), with the
// step's key ("" when none) and a detail for the agent.
func New(typ, key, detail string) *Details {
	in := info[typ]
	return &Details{Type: typ, Title: in.title, Status: in.status, Detail: detail, Key: key}
}

func (p *Details) body() []byte {
	b, _ := json.Marshal(p) // marshalling plain strings and ints cannot fail
	return append(b, '\n')
}

// plain is p as RFC 9457 has it: application/problem+json, with
// Retry-After when p asks to wait.
func (p *Details) plain() (int, http.Header, []byte) {
	h := http.Header{"Content-Type": {"application/problem+json"}}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	return p.Status, h, p.body()
}
