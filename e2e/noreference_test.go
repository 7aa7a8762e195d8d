package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// noReferenceRules is a rule file for the simulator whose create_order
// route keys on a business reference, order_ref, that the agent's calls do
// not carry, and searches for it; the agent's own per-call idempotency_key
// is volatile. native adds the provider's Idempotency-Key for the whole
// file. unlisted leaves POST /v1/orders to unlisted: guard instead of the
// route.
func noReferenceRules(host string, native, unlisted bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: v1\napi: shop\nhosts: [%q]\ncredential: {header: Authorization}\n", host)
	if native {
		b.WriteString("native_idempotency: {header: Idempotency-Key, ttl: 24h}\n")
	}
	b.WriteString("volatile: [idempotency_key]\nroutes:\n")
	path := "/v1/orders"
	if unlisted {
		path = "/v1/other_orders"
	}
	fmt.Fprintf(&b, `  - name: create_order
    match: POST %s
    effect: irreversible
    key:
      reference: [order_ref]
      fields: [customer, amount]
    operation_id: body:id
    lookup:
      request: GET http://%s/v1/orders/search?ref={{body.order_ref}}
      found: {status: 200, body: {"orders.#": "1"}}
      absent: {status: 200, body: {"orders.#": "0"}}
      operation_id: body:orders.0.id
`, path, host)
	return b.String()
}

// The crash matrix on a call with no business reference, through the real
// binary on bbolt and PostgreSQL: SIGKILL before and after the provider's
// effect, then eight agents retry at once. A call keyed on the whole
// request (its route's reference absent, or no route at all: unlisted:
// guard) is re-sent on the file's native key and deduped by the provider,
// one effect either way; without a native key its lookup cannot be made
// (it would search by the absent reference), so it is held, never guessed.
func TestCrashWithoutReference(t *testing.T) {
	tests := []struct {
		name             string
		native, unlisted bool
		stage            string
		wantStatus       int
		wantEffects      int64
		wantHold         string
		wantRoute        string
	}{
		{name: "reference absent/native/kill-before", native: true, stage: "before", wantStatus: 201, wantEffects: 1, wantRoute: "create_order"},
		{name: "reference absent/native/kill-after", native: true, stage: "after", wantStatus: 201, wantEffects: 1, wantRoute: "create_order"},
		{name: "unlisted/native/kill-before", native: true, unlisted: true, stage: "before", wantStatus: 201, wantEffects: 1, wantRoute: "unlisted"},
		{name: "unlisted/native/kill-after", native: true, unlisted: true, stage: "after", wantStatus: 201, wantEffects: 1, wantRoute: "unlisted"},
		{name: "reference absent/no native/kill-before", stage: "before", wantStatus: 409, wantEffects: 0, wantHold: "needs_review", wantRoute: "create_order"},
		{name: "reference absent/no native/kill-after", stage: "after", wantStatus: 409, wantEffects: 1, wantHold: "needs_review", wantRoute: "create_order"},
	}
	for _, backend := range backends {
		for _, tc := range tests {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				strategy := simNone
				if tc.native {
					strategy = simHeader
				}
				sm := newSim(t, strategy)
				s := newSetup(t, map[string]string{"shop.yaml": noReferenceRules(sm.Listener.Addr().String(), tc.native, tc.unlisted)})
				s.useBackend(t, backend)
				s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=500ms")
				killSimMidCall(t, s.start(t), sm, tc.stage)
				p := s.start(t)
				c := p.client(t)

				const n = 8
				var wg sync.WaitGroup
				resps := make([]*http.Response, n)
				bodies := make([]string, n)
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resps[i], bodies[i], _ = simRetry(t, c, sm.URL+"/v1/orders")
					}()
				}
				wg.Wait()
				if got := sm.effects.Load(); got != tc.wantEffects {
					t.Fatalf("provider effects = %d, want %d", got, tc.wantEffects)
				}
				for i, r := range resps {
					if r.StatusCode != tc.wantStatus {
						t.Errorf("agent %d: status %d, want %d: %s", i, r.StatusCode, tc.wantStatus, bodies[i])
					} else if tc.wantStatus == 201 && !strings.Contains(bodies[i], `"id":"ord_1"`) {
						t.Errorf("agent %d: answer %s, want the provider's ord_1", i, bodies[i])
					}
				}
				key := resps[0].Header.Get("Toolguard-Key")
				st := waitStep(t, p, key, func(map[string]any) bool { return true })
				if st["route"] != tc.wantRoute {
					t.Errorf("step route = %v, want %s", st["route"], tc.wantRoute)
				}
				if fmt.Sprint(st["hold"]) != tc.wantHold && !(tc.wantHold == "" && st["hold"] == nil) {
					t.Errorf("hold = %v, want %q", st["hold"], tc.wantHold)
				}
				if tc.wantHold != "" && !strings.Contains(fmt.Sprint(st["last_error"]), "no lookup: the request has no body.order_ref") {
					t.Errorf("held step's evidence %v, want it to say the reference was absent", st["last_error"])
				}
				sm.mu.Lock()
				if tc.native && len(sm.byIdem) != 1 {
					t.Errorf("provider saw %d idempotency keys, want 1 (the intent's, on every send)", len(sm.byIdem))
				}
				sm.mu.Unlock()
			})
		}
	}
}
