package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
)

// stripeShape is how one of toolguard's problems reads as a Stripe error.
// shouldRetry is sent as Stripe-Should-Retry: SDKs that read it retry a
// "true" and never a "false". (stripe-go v82 decodes the error object and
// retries a decoded error only when it is a 429 lock_timeout, so it never
// retries these.)
type stripeShape struct {
	typ, code   string
	shouldRetry bool
}

var stripeShapes = map[string]stripeShape{
	ProblemInProgress:          {"idempotency_error", "idempotency_key_in_use", true},
	ProblemAmbiguousEffect:     {"api_error", "toolguard_ambiguous_effect", false},
	ProblemAwaitingApproval:    {"api_error", "toolguard_awaiting_approval", false},
	ProblemPayloadMismatch:     {"idempotency_error", "toolguard_payload_mismatch", false},
	ProblemInvalidBody:         {"invalid_request_error", "toolguard_invalid_body", false},
	ProblemBodyTooLarge:        {"invalid_request_error", "toolguard_body_too_large", false},
	ProblemRequestTimeout:      {"invalid_request_error", "toolguard_request_timeout", true},
	ProblemUpstreamUnreachable: {"api_error", "toolguard_upstream_unreachable", true},
	ProblemOutcomeUnknown:      {"api_error", "toolguard_outcome_unknown", true},
	ProblemVersionChanged:      {"api_error", "toolguard_version_changed", false},
	ProblemRejected:            {"invalid_request_error", "toolguard_rejected", false},
	ProblemUnavailable:         {"api_error", "toolguard_unavailable", true},
	ProblemRetryBudget:         {"api_error", "toolguard_retry_budget_exhausted", false},
	ProblemHeadersTooLarge:     {"invalid_request_error", "toolguard_headers_too_large", false},
	ProblemOverBudget:          {"api_error", "toolguard_over_budget", false},
	// Cleared only by an operator: an SDK's quick retries would not help.
	ProblemTooManyHolds: {"invalid_request_error", "toolguard_too_many_holds", false},
}

// shouldRetry says whether an agent's retry of p can help: it resolves an
// unknown outcome, finds a call no longer in flight, or reaches a
// toolguard that can take the call again. Holds and bad input never can.
func shouldRetry(p *Problem) bool {
	if sh, ok := stripeShapes[p.Type]; ok {
		return sh.shouldRetry
	}
	return false
}

// renderProblem renders p in an API's error format. Every format keeps
// the problem's status and Retry-After; toolguard's own headers are set
// by the caller.
func renderProblem(f rules.ErrorFormat, p *Problem, req *http.Request) *http.Response {
	switch f.Style {
	case rules.ErrorsStripe:
		return withRetryAfter(bodyResponse(req, p.Status, jsonHeader(), stripeBody(p)), p.RetryAfter, lifecycle.HeaderStripeShouldRetry, shouldRetry(p))
	case rules.ErrorsJSON:
		body := f.RenderError(map[string]string{"type": p.Type, "title": p.Title, "detail": p.Detail, "key": p.Key, "status": strconv.Itoa(p.Status)})
		return withRetryAfter(bodyResponse(req, p.Status, jsonHeader(), append(body, '\n')), p.RetryAfter, lifecycle.HeaderXShouldRetry, shouldRetry(p))
	}
	return p.response(req)
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

// stripeBody is p as Stripe's error object; the message carries the
// title and the detail.
func stripeBody(p *Problem) []byte {
	sh, ok := stripeShapes[p.Type]
	if !ok {
		sh = stripeShape{typ: "api_error", code: "toolguard_error"}
	}
	msg := p.Title
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	type stripeError struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Error stripeError `json:"error"`
	}{stripeError{sh.typ, sh.code, msg}})
	return append(b, '\n')
}

// withRetryAfter adds the retry headers of a provider-shaped refusal.
func withRetryAfter(resp *http.Response, after time.Duration, shouldHeader string, should bool) *http.Response {
	resp.Header.Set(shouldHeader, strconv.FormatBool(should))
	if after > 0 {
		resp.Header.Set(lifecycle.HeaderRetryAfter, strconv.Itoa(int((after+time.Second-1)/time.Second)))
	}
	return resp
}
