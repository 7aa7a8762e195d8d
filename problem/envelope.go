package problem

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
	InProgress:          {"idempotency_error", "idempotency_key_in_use", true},
	AmbiguousEffect:     {"api_error", "toolguard_ambiguous_effect", false},
	AwaitingApproval:    {"api_error", "toolguard_awaiting_approval", false},
	PayloadMismatch:     {"idempotency_error", "toolguard_payload_mismatch", false},
	InvalidBody:         {"invalid_request_error", "toolguard_invalid_body", false},
	BodyTooLarge:        {"invalid_request_error", "toolguard_body_too_large", false},
	RequestTimeout:      {"invalid_request_error", "toolguard_request_timeout", true},
	UpstreamUnreachable: {"api_error", "toolguard_upstream_unreachable", true},
	OutcomeUnknown:      {"api_error", "toolguard_outcome_unknown", true},
	VersionChanged:      {"api_error", "toolguard_version_changed", false},
	Rejected:            {"invalid_request_error", "toolguard_rejected", false},
	Unavailable:         {"api_error", "toolguard_unavailable", true},
	RetryBudget:         {"api_error", "toolguard_retry_budget_exhausted", false},
	HeadersTooLarge:     {"invalid_request_error", "toolguard_headers_too_large", false},
	OverBudget:          {"api_error", "toolguard_over_budget", false},
	// Cleared only by an operator: an SDK's quick retries would not help.
	TooManyHolds: {"invalid_request_error", "toolguard_too_many_holds", false},
}

// shouldRetry says whether an agent's retry of p can help: it resolves an
// unknown outcome, finds a call no longer in flight, or reaches a
// toolguard that can take the call again. Holds and bad input never can.
func shouldRetry(p *Details) bool {
	if sh, ok := stripeShapes[p.Type]; ok {
		return sh.shouldRetry
	}
	return false
}

// Render is p in an API's error format, as it goes out: status, headers
// and body. Every format keeps the problem's status and Retry-After, and
// the provider-shaped ones say whether a retry can help; toolguard's own
// headers are set by the caller. The zero format is RFC 9457's.
func Render(f rules.ErrorFormat, p *Details) (status int, h http.Header, body []byte) {
	switch f.Style {
	case rules.ErrorsStripe:
		return p.Status, retryHeaders(jsonHeader(), p.RetryAfter, lifecycle.HeaderStripeShouldRetry, shouldRetry(p)), stripeBody(p)
	case rules.ErrorsJSON:
		body := f.RenderError(map[string]string{"type": p.Type, "title": p.Title, "detail": p.Detail, "key": p.Key, "status": strconv.Itoa(p.Status)})
		return p.Status, retryHeaders(jsonHeader(), p.RetryAfter, lifecycle.HeaderXShouldRetry, shouldRetry(p)), append(body, '\n')
	}
	return p.plain()
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

// stripeBody is p as Stripe's error object; the message carries the
// title and the detail.
func stripeBody(p *Details) []byte {
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

// retryHeaders adds the retry headers of a provider-shaped refusal to h.
func retryHeaders(h http.Header, after time.Duration, shouldHeader string, should bool) http.Header {
	h.Set(shouldHeader, strconv.FormatBool(should))
	if after > 0 {
		h.Set(lifecycle.HeaderRetryAfter, strconv.Itoa(int((after+time.Second-1)/time.Second)))
	}
	return h
}
