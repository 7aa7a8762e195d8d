package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Problem types toolguard answers with (contract, DESIGN.md "Errors").
const (
	ProblemInProgress          = "urn:toolguard:in-progress"
	ProblemAmbiguousEffect     = "urn:toolguard:ambiguous-effect"
	ProblemAwaitingApproval    = "urn:toolguard:awaiting-approval"
	ProblemPayloadMismatch     = "urn:toolguard:payload-mismatch"
	ProblemInvalidBody         = "urn:toolguard:invalid-body"
	ProblemBodyTooLarge        = "urn:toolguard:body-too-large"
	ProblemRequestTimeout      = "urn:toolguard:request-timeout" // added beyond the contract's list
	ProblemUpstreamUnreachable = "urn:toolguard:upstream-unreachable"
	ProblemOutcomeUnknown      = "urn:toolguard:outcome-unknown"
	ProblemVersionChanged      = "urn:toolguard:version-changed"
	// Added beyond the contract's list.
	ProblemRejected        = "urn:toolguard:rejected"
	ProblemUnavailable     = "urn:toolguard:unavailable"
	ProblemRetryBudget     = "urn:toolguard:retry-budget-exhausted"
	ProblemHeadersTooLarge = "urn:toolguard:headers-too-large"
	// ProblemOverBudget: a new intent over its route's budget, held for an
	// operator's approval (send Retry-After).
	ProblemOverBudget = "urn:toolguard:over-budget"
	// ProblemTooManyHolds: a new intent that would be held while its
	// caller has limits.max_open_holds held calls; nothing was journaled
	// (send Retry-After).
	ProblemTooManyHolds = "urn:toolguard:too-many-holds"
)

var problemInfo = map[string]struct {
	status int
	title  string
}{
	ProblemInProgress:          {http.StatusConflict, "A call with this key is in progress"},
	ProblemAmbiguousEffect:     {http.StatusConflict, "Outcome unknown; held for review"},
	ProblemAwaitingApproval:    {http.StatusConflict, "Awaiting an operator's approval"},
	ProblemPayloadMismatch:     {http.StatusUnprocessableEntity, "Body differs from the approved one"},
	ProblemInvalidBody:         {http.StatusBadRequest, "Body cannot be parsed to derive the key"},
	ProblemBodyTooLarge:        {http.StatusRequestEntityTooLarge, "Body too large"},
	ProblemRequestTimeout:      {http.StatusRequestTimeout, "Request body arrived too slowly"},
	ProblemUpstreamUnreachable: {http.StatusBadGateway, "Upstream unreachable; nothing was sent"},
	ProblemOutcomeUnknown:      {http.StatusGatewayTimeout, "Sent, but no answer; outcome unknown"},
	ProblemVersionChanged:      {http.StatusConflict, "Prompt or policy version changed mid-workflow"},
	ProblemRejected:            {http.StatusForbidden, "Call rejected by policy"},
	ProblemUnavailable:         {http.StatusServiceUnavailable, "toolguard cannot take the call now"},
	ProblemRetryBudget:         {http.StatusConflict, "Retry budget exhausted; held for review"},
	ProblemHeadersTooLarge:     {http.StatusRequestHeaderFieldsTooLarge, "Request headers too large"},
	ProblemOverBudget:          {http.StatusConflict, "Over the route's call budget; awaiting an operator's approval"},
	ProblemTooManyHolds:        {http.StatusTooManyRequests, "Too many calls held for an operator"},
}

// Problem is an RFC 9457 problem body.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Key    string `json:"key,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter time.Duration `json:"-"`
}

func newProblem(typ, key, detail string) *Problem {
	info := problemInfo[typ]
	return &Problem{Type: typ, Title: info.title, Status: info.status, Detail: detail, Key: key}
}

func (p *Problem) body() []byte {
	b, _ := json.Marshal(p) // marshalling plain strings and ints cannot fail
	return append(b, '\n')
}

// response renders p as an *http.Response for goproxy to send.
func (p *Problem) response(req *http.Request) *http.Response {
	h := http.Header{"Content-Type": {"application/problem+json"}}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((p.RetryAfter+time.Second-1)/time.Second)))
	}
	return bodyResponse(req, p.Status, h, p.body())
}

func bodyResponse(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{} // a stored answer that kept no header
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
