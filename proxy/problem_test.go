package proxy

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// TestStripeShapes: every problem toolguard answers on a guarded route
// has a Stripe shape; holds and bad input say "do not retry", and only
// answers a retry can resolve say "retry".
func TestStripeShapes(t *testing.T) {
	retry := map[string]bool{ProblemInProgress: true, ProblemUpstreamUnreachable: true, ProblemOutcomeUnknown: true, ProblemUnavailable: true, ProblemRequestTimeout: true}
	for typ := range problemInfo {
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
			resp := renderProblem(rules.ErrorFormat{Style: rules.ErrorsStripe}, newProblem(typ, "k", "why"), nil)
			if resp.StatusCode != problemInfo[typ].status {
				t.Errorf("status %d, want %d", resp.StatusCode, problemInfo[typ].status)
			}
		})
	}
}
