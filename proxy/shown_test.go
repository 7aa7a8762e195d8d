package proxy

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/problem"
)

// approveRoute keys an approval on what the agent says it buys.
const approveRoute = `  - name: approve
    match: POST /v1/approve
    effect: irreversible
    key: {fields: [what]}
    redact: [card.number]
    approval: required
  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [customer]}
`

// A held approval shows its operator the whole target, query included
// (secret-named parameters masked), and every body field with its value
// (redact paths masked). Regression: the operator saw only the key field
// what="buy one coffee", the target without its query and a body hash,
// and approved a transfer of 9999999 to ATTACKER.
func TestHeldStepShowsWholeRequest(t *testing.T) {
	const body = `{"what":"buy one coffee","to_account":"ATTACKER","amount":9999999,"card":{"number":"4242424242424242"}}`
	const query = "?to_account=ATTACKER&amount=9999999&api_key=sk_query_secret"
	tests := []struct {
		name       string
		opts       Options
		wantFields []journal.KeyField
		wantQuery  string
	}{
		{name: "shown", wantQuery: "?to_account=ATTACKER&amount=9999999&api_key=[redacted]", wantFields: []journal.KeyField{
			{Field: "amount", Value: "9999999"},
			{Field: "card.number", Value: `"[redacted]"`},
			{Field: "to_account", Value: `"ATTACKER"`},
			{Field: "what", Value: `"buy one coffee"`},
		}},
		{name: "summaries off", opts: Options{NoKeySummary: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, harnessConfig{Routes: approveRoute, Options: tc.opts})
			r, b := h.post("/v1/approve"+query, body, "Authorization", "Bearer sk_live_credential")
			if r.StatusCode != http.StatusConflict || !strings.Contains(b, problem.AwaitingApproval) {
				t.Fatalf("call: %d %s, want 409 awaiting-approval", r.StatusCode, b)
			}
			var v admin.StepView
			if code := h.adminCall("GET", "/v1/steps/"+r.Header.Get(HeaderKey), nil, &v); code != http.StatusOK {
				t.Fatalf("step view: %d", code)
			}
			if want := "http://" + strings.TrimPrefix(h.up.URL, "http://") + "/v1/approve" + tc.wantQuery; v.Target != want {
				t.Errorf("target = %q, want %q", v.Target, want)
			}
			if !reflect.DeepEqual(v.RequestFields, tc.wantFields) {
				t.Errorf("request_fields = %q, want %q", v.RequestFields, tc.wantFields)
			}
			var list map[string]any
			h.adminCall("GET", "/v1/steps?hold=awaiting_approval", nil, &list)
			st, _ := h.j.Get(v.Key)
			for _, s := range []string{"4242424242424242", "sk_query_secret", "sk_live_credential"} {
				if strings.Contains(jsonText(t, list), s) || strings.Contains(jsonText(t, st), s) || strings.Contains(h.logs.String(), s) {
					t.Errorf("%q reached the journal, the admin API or the log", s)
				}
			}
			if got := h.up.effects.Load(); got != 0 {
				t.Fatalf("upstream effects = %d, want 0 while held", got)
			}
		})
	}
}

// A step that is never held keeps no body values and no query.
func TestForwardedStepKeepsNoRequestFields(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: approveRoute})
	r, _ := h.post("/v1/invoices?note=x", `{"customer":"c1","amount":5}`, "Authorization", "Bearer k1")
	if r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("outcome %q", r.Header.Get(HeaderOutcome))
	}
	st, err := h.j.Get(r.Header.Get(HeaderKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.RequestFields != nil || st.Query != "" {
		t.Errorf("forwarded step keeps request_fields %q, query %q", st.RequestFields, st.Query)
	}
}
