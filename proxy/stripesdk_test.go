package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stripe/stripe-go/v82"
)

// The Stripe Go SDK through the proxy with errors: stripe. A hold reaches
// it as a Stripe error it decodes, and it does not retry it (with
// problem+json it logged "Error decoding error" and retried each 409); an
// unknown outcome reaches it decoded too, and the caller's next call
// resolves it with one effect.
func TestStripeSDKReadsEnvelope(t *testing.T) {
	routes := func(approval string) func(string) string {
		return func(string) string {
			return `  - name: create_customer
    match: POST /v1/customers
    effect: irreversible
    key:
      fields: [email]
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
    approval: ` + approval + `
`
		}
	}
	client := func(h *harness) *stripe.Client {
		backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
			HTTPClient:        h.client,
			URL:               stripe.String(h.up.URL),
			MaxNetworkRetries: stripe.Int64(2),
			LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		})
		return stripe.NewClient("sk_test_123", stripe.WithBackends(backends))
	}
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("hold is not retried/tls=%v", useTLS), func(t *testing.T) {
			h, p := startProvider(t, harnessConfig{Errors: "stripe", TLS: useTLS}, routes("required"))
			_, err := client(h).V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{Email: stripe.String("ana@example.com")})
			var se *stripe.Error
			if !errors.As(err, &se) || se.Type != stripe.ErrorTypeAPI || se.Code != "toolguard_awaiting_approval" || se.HTTPStatusCode != http.StatusConflict {
				t.Fatalf("error = %#v, want a decoded Stripe api_error", err)
			}
			if n := len(h.guardedLines()); n != 1 {
				t.Fatalf("the SDK sent %d requests, want 1 (no retry of a hold)", n)
			}
			if n := p.effects.Load(); n != 0 {
				t.Fatalf("provider effects = %d, want 0", n)
			}
		})
	}
	t.Run("unknown outcome is resolved by the next call", func(t *testing.T) {
		h, p := startProvider(t, harnessConfig{Errors: "stripe"}, routes("none"))
		var sends atomic.Int64
		p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
			if sends.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError) // no effect, outcome unknown to toolguard
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":%q,"object":"customer"}`, id)
			return true
		})
		sdk := client(h)
		params := &stripe.CustomerCreateParams{Email: stripe.String("bo@example.com")}
		// stripe-go v82 retries a decoded Stripe error only when it is a 429
		// lock_timeout, so the unknown outcome reaches the caller, decoded.
		_, err := sdk.V1Customers.Create(context.Background(), params)
		var se *stripe.Error
		if !errors.As(err, &se) || se.Code != "toolguard_outcome_unknown" || se.HTTPStatusCode != http.StatusGatewayTimeout {
			t.Fatalf("first call: error = %#v, want a decoded toolguard_outcome_unknown", err)
		}
		// The SDK mints a fresh Idempotency-Key for the new call; toolguard
		// re-sends the intent's own key, and the provider's answer comes back.
		c, err := sdk.V1Customers.Create(context.Background(), params)
		if err != nil || c.ID != "obj_1" {
			t.Fatalf("second call = %+v, %v; want obj_1", c, err)
		}
		if n := sends.Load(); n != 2 {
			t.Fatalf("sends = %d, want 2 (the ambiguous one and its re-send on the same key)", n)
		}
		if n := p.effects.Load(); n != 1 {
			t.Fatalf("provider effects = %d, want 1", n)
		}
	})
}
