package problem

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/rules"
)

// TestStripeShapes: every problem toolguard answers on a guarded route
// has a Stripe shape; holds and bad input say "do not retry", and only
// answers a retry can resolve say "retry".
func TestStripeShapes(t *testing.T) {
	retry := map[string]bool{InProgress: true, UpstreamUnreachable: true, OutcomeUnknown: true, Unavailable: true, RequestTimeout: true}
	for typ := range info {
		if strings.HasPrefix(typ, "urn:toolguard:admin:") {
			continue
		}
		t.Run(typ, func(t *testing.T) {
			sh, ok := stripeShapes[typ]
			if !ok {
				t.Fatal("no Stripe shape")
			}
			if sh.shouldRetry != retry[typ] {
				t.Errorf("shouldRetry = %v, want %v", sh.shouldRetry, retry[typ])
			}
			status, h, _ := Render(rules.ErrorFormat{Style: rules.ErrorsStripe}, New(typ, "k", "why"))
			if status != info[typ].status {
				t.Errorf("status %d, want %d", status, info[typ].status)
			}
			if got := h.Get("Stripe-Should-Retry"); got != map[bool]string{true: "true", false: "false"}[retry[typ]] {
				t.Errorf("Stripe-Should-Retry %q", got)
			}
		})
	}
}

// TestRender: each format keeps the status and Retry-After; RFC 9457's
// body is the problem itself, Stripe's an error object.
func TestRender(t *testing.T) {
	p := New(InProgress, "k1", "in flight")
	p.RetryAfter = 1500 * time.Millisecond
	status, h, body := Render(rules.ErrorFormat{}, p)
	var got Details
	if err := json.Unmarshal(body, &got); err != nil || status != 409 || got.Key != "k1" || got.Title == "" ||
		h.Get("Content-Type") != "application/problem+json" || h.Get("Retry-After") != "2" {
		t.Errorf("plain: %d %v %s (%v)", status, h, body, err)
	}
	status, h, body = Render(rules.ErrorFormat{Style: rules.ErrorsStripe}, New("urn:toolguard:unknown", "", ""))
	if status != 0 || !strings.Contains(string(body), `"code":"toolguard_error"`) || h.Get("Retry-After") != "" {
		t.Errorf("stripe, unknown type: %d %v %s", status, h, body)
	}
	status, _, body = Render(rules.ErrorFormat{Style: rules.ErrorsStripe}, New(Rejected, "", "not allowed"))
	if status != 403 || !strings.Contains(string(body), `"message":"Call rejected by policy: not allowed"`) {
		t.Errorf("stripe: %d %s", status, body)
	}
	f := rules.ErrorFormat{Style: rules.ErrorsJSON, Template: `{"error":{"kind":"{{type}}","status":{{status}}}}`}
	status, h, body = Render(f, New(Unavailable, "", ""))
	if status != 503 || string(body) != `{"error":{"kind":"urn:toolguard:unavailable","status":503}}`+"\n" || h.Get("X-Should-Retry") != "true" {
		t.Errorf("json template: %d %v %s", status, h, body)
	}
}
