package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// policyRoute holds invoices above 10000 for approval (approval.when)
// and lets each caller send 3 invoices a minute (budget).
const policyRoute = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [reference]}
    operation_id: body:id
    approval: {when: 'int(body.amount) > 10000'}
    budget: {calls: 3, per: 1m}
`

// TestApprovalAndBudgetAcrossReplicas: two toolguard processes on one
// PostgreSQL journal. An invoice above the threshold is held for approval
// and sent once approved; small invoices racing through both replicas
// share one budget: exactly its 3 calls are sent, the others are held
// with reason budget, and an operator's approval on either replica sends
// one of them.
func TestApprovalAndBudgetAcrossReplicas(t *testing.T) {
	up := newUpstream(t, false)
	_, ps := replicas(t, 2, map[string]string{"billing.yaml": ruleFile(up.host(), policyRoute)})
	url := up.URL + "/v1/invoices"
	invoice := func(ref string, amount int) string {
		return fmt.Sprintf(`{"customer":"c1","amount":%d,"reference":%q}`, amount, ref)
	}

	big, body := post(t, ps[0].client(t), url, invoice("big", 50000))
	if big.StatusCode != http.StatusConflict || !strings.Contains(body, "urn:toolguard:awaiting-approval") {
		t.Fatalf("invoice above the threshold: %d %s, want 409 awaiting-approval", big.StatusCode, body)
	}

	const n = 8
	var wg sync.WaitGroup
	replies := make([]*http.Response, n)
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], bodies[i] = post(t, ps[i%2].client(t), url, invoice(fmt.Sprintf("small-%d", i), 100))
		}()
	}
	wg.Wait()
	var sent, held []int
	for i, r := range replies {
		switch {
		case r.StatusCode == http.StatusCreated:
			sent = append(sent, i)
		case r.StatusCode == http.StatusConflict && strings.Contains(bodies[i], "urn:toolguard:over-budget"):
			held = append(held, i)
		default:
			t.Fatalf("small invoice %d: %d %s", i, r.StatusCode, bodies[i])
		}
	}
	if len(sent) != 3 || up.effects.Load() != 3 {
		t.Fatalf("%d invoices sent, %d effects; want the budget's 3 (held: %v)", len(sent), up.effects.Load(), held)
	}
	overKey := replies[held[0]].Header.Get("Toolguard-Key")
	var st map[string]any
	ps[1].admin(t, http.MethodGet, "/v1/steps/"+overKey, nil, &st)
	if st["hold"] != "awaiting_approval" || st["hold_reason"] != "budget" {
		t.Fatalf("held invoice: hold %v (%v), want awaiting_approval (budget)", st["hold"], st["hold_reason"])
	}

	for _, tc := range []struct {
		key, body string
		on        *proc
	}{
		{big.Header.Get("Toolguard-Key"), invoice("big", 50000), ps[1]},
		{overKey, invoice(fmt.Sprintf("small-%d", held[0]), 100), ps[0]},
	} {
		if code := tc.on.admin(t, http.MethodPost, "/v1/steps/"+tc.key+"/approve", map[string]string{"note": "ok"}, nil); code != http.StatusOK {
			t.Fatalf("approve %s: %d", tc.key, code)
		}
		r, b := post(t, ps[0].client(t), url, tc.body)
		if r.StatusCode != http.StatusCreated || r.Header.Get("Toolguard-Outcome") != "forwarded" {
			t.Fatalf("approved invoice: %d %q %s, want 201 forwarded", r.StatusCode, r.Header.Get("Toolguard-Outcome"), b)
		}
	}
	if got := up.effects.Load(); got != 5 {
		t.Fatalf("upstream effects = %d, want 5", got)
	}
}
