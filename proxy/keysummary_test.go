package proxy

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// summaryRoute needs approval and redacts the card number, which is also
// part of a key field.
const summaryRoute = `  - name: charge
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [customer, amount, card]}
    redact: [card.number]
    approval: required
`

// A held step shows the operator its key fields with redaction applied:
// the masked card number and the credential never reach the journal or the
// admin API.
func TestHeldStepViewCarriesKeySummary(t *testing.T) {
	const body = `{"customer":"cus_<b>1</b>","amount":1250,"card":{"number":"4242424242424242","exp":"12/30"}}`
	const credential = "Bearer sk_live_secret_credential"
	tests := []struct {
		name string
		opts Options
		want []journal.KeyField
	}{
		{name: "summary kept", want: []journal.KeyField{
			{Field: "customer", Value: `"cus_<b>1</b>"`},
			{Field: "amount", Value: "1250"},
			{Field: "card", Value: `{"exp":"12/30","number":"[redacted]"}`},
		}},
		{name: "summaries off", opts: Options{NoKeySummary: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, harnessConfig{Routes: summaryRoute, Options: tc.opts})
			r, b := h.post("/v1/invoices", body, "Authorization", credential)
			if r.StatusCode != http.StatusConflict || !strings.Contains(b, problem.AwaitingApproval) {
				t.Fatalf("call: %d %s, want 409 awaiting-approval", r.StatusCode, b)
			}
			var v admin.StepView
			if code := h.adminCall("GET", "/v1/steps/"+r.Header.Get(HeaderKey), nil, &v); code != http.StatusOK {
				t.Fatalf("step view: %d", code)
			}
			if !reflect.DeepEqual(v.KeyFields, tc.want) {
				t.Errorf("key_fields = %q, want %q", v.KeyFields, tc.want)
			}
			var raw map[string]any
			h.adminCall("GET", "/v1/steps?hold=awaiting_approval", nil, &raw)
			st, err := h.j.Get(r.Header.Get(HeaderKey))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"4242424242424242", "sk_live_secret_credential"} {
				if strings.Contains(h.logs.String(), s) || strings.Contains(jsonText(t, raw), s) || strings.Contains(jsonText(t, st), s) {
					t.Errorf("%q reached the journal, the admin API or the log", s)
				}
			}
			if got := h.up.effects.Load(); got != 0 {
				t.Fatalf("upstream effects = %d, want 0 while held", got)
			}
		})
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A call guarded by unmatched: guard is keyed on its whole body: its step
// keeps the body's member names, never a value.
func TestUnmatchedGuardKeySummaryHasNamesOnly(t *testing.T) {
	h := startHarness(t, harnessConfig{TLS: true, Routes: invoiceRoute, RuleHost: "elsewhere.example",
		Options: Options{Unmatched: policy.UnmatchedGuard}, ConnectToUpstream: true})
	r, b := h.post("/v1/emails", `{"to":"secret-recipient@example.com","body":"private text"}`)
	if r.StatusCode != http.StatusCreated || r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("call: %d %q %s, want 201 forwarded", r.StatusCode, r.Header.Get(HeaderOutcome), b)
	}
	steps := h.steps()
	if len(steps) != 1 {
		t.Fatalf("%d steps, want 1", len(steps))
	}
	want := []journal.KeyField{{Field: "body"}, {Field: "to"}}
	if !reflect.DeepEqual(steps[0].KeyFields, want) {
		t.Errorf("key_fields = %q, want %q", steps[0].KeyFields, want)
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Errorf("upstream effects = %d, want 1", got)
	}
}
