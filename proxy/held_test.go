package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/problem"
)

// holdForReview leaves a step of invoiceRoute held needs_review: the
// provider takes the effect and answers 500, so the outcome is unknown,
// and the retry finds an irreversible route that cannot be queried.
func holdForReview(t *testing.T, h *harness, body string, headers ...string) string {
	t.Helper()
	h.up.status.Store(http.StatusInternalServerError)
	r, b := h.post("/v1/invoices", body, headers...)
	if r.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("first call: %d %s, want 504 outcome-unknown", r.StatusCode, b)
	}
	h.up.status.Store(0)
	r, b = h.post("/v1/invoices", body, headers...)
	if r.StatusCode != http.StatusConflict || !strings.Contains(b, problem.AmbiguousEffect) {
		t.Fatalf("retry: %d %s, want 409 ambiguous-effect", r.StatusCode, b)
	}
	return r.Header.Get(HeaderKey)
}

// Regression: a retry of a held step that differed only in ignored fields
// (a new trace_id: same key, other whole-body hash) was answered 422
// payload-mismatch, which an agent reads as a final client error. It must
// get the identical retry's answer; 422 only once a decision would send it.
func TestHeldRetryWithIgnoredFieldChanged(t *testing.T) {
	t.Run("awaiting approval", func(t *testing.T) {
		h := startHarness(t, harnessConfig{Routes: approvalRoute})
		held := `{"customer":"c1","amount":10,"trace_id":"a"}`
		other := `{"customer":"c1","amount":10,"trace_id":"b"}`
		r1, b1 := h.post("/v1/invoices", held)
		r2, b2 := h.post("/v1/invoices", other)
		for i, r := range []*http.Response{r1, r2} {
			if r.StatusCode != http.StatusConflict || r.Header.Get("Retry-After") == "" || r.Header.Get(HeaderOutcome) != OutcomeBlocked {
				t.Fatalf("call %d: %d %q, want 409 blocked with Retry-After", i+1, r.StatusCode, r.Header.Get(HeaderOutcome))
			}
		}
		if !strings.Contains(b1, problem.AwaitingApproval) || !strings.Contains(b2, problem.AwaitingApproval) {
			t.Fatalf("answers %s / %s, want awaiting-approval twice", b1, b2)
		}
		key := r1.Header.Get(HeaderKey)
		if code := h.adminCall("POST", "/v1/steps/"+key+"/approve", map[string]string{"note": "ok"}, nil); code != http.StatusOK {
			t.Fatalf("approve: %d", code)
		}
		// Now the other body would be sent under the approval: 422.
		if r, b := h.post("/v1/invoices", other); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, problem.PayloadMismatch) {
			t.Fatalf("other body after approval: %d %s, want 422 payload-mismatch", r.StatusCode, b)
		}
		if r, b := h.post("/v1/invoices", held); r.StatusCode != http.StatusCreated || r.Header.Get(HeaderOutcome) != OutcomeForwarded {
			t.Fatalf("approved body: %d %s, want 201 forwarded", r.StatusCode, b)
		}
		if got := h.up.effects.Load(); got != 1 {
			t.Fatalf("upstream effects = %d, want 1", got)
		}
	})
	t.Run("needs review", func(t *testing.T) {
		h := startHarness(t, harnessConfig{Routes: invoiceRoute})
		key := holdForReview(t, h, `{"customer":"c1","amount":10,"trace_id":"a"}`)
		r, b := h.post("/v1/invoices", `{"customer":"c1","amount":10,"trace_id":"b"}`)
		if r.StatusCode != http.StatusConflict || !strings.Contains(b, problem.AmbiguousEffect) || r.Header.Get(HeaderKey) != key {
			t.Fatalf("retry with a new trace_id: %d %s, want 409 ambiguous-effect for %s", r.StatusCode, b, key)
		}
		if got := h.up.effects.Load(); got != 1 {
			t.Fatalf("upstream effects = %d, want 1", got)
		}
	})
}

// An operator's resolve note is operator-to-operator text: the agent's
// answer carries the outcome and operation id only, the event keeps it.
func TestResolveNoteStaysWithOperators(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	body := `{"customer":"c1","amount":10}`
	key := holdForReview(t, h, body, HeaderWorkflow, "wf-1")
	const note = "internal: checked the billing DB on host db-7"
	res := admin.Resolution{Outcome: "committed", OperationID: "inv_1", Note: note}
	if code := h.adminCall("POST", "/v1/steps/"+key+"/resolve", res, nil); code != http.StatusOK {
		t.Fatalf("resolve: %d", code)
	}
	r, b := h.post("/v1/invoices", body, HeaderWorkflow, "wf-1")
	if r.StatusCode != http.StatusOK || r.Header.Get(HeaderOutcome) != OutcomeRecovered {
		t.Fatalf("after resolve: %d %q %s, want 200 recovered", r.StatusCode, r.Header.Get(HeaderOutcome), b)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(b), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"resolved": "committed", "operation_id": "inv_1"}
	if len(got) != len(want) || got["resolved"] != want["resolved"] || got["operation_id"] != want["operation_id"] {
		t.Fatalf("agent's answer = %s, want exactly %v", b, want)
	}
	if strings.Contains(b, "db-7") {
		t.Fatalf("the note reached the agent: %s", b)
	}
	var packet admin.ResumePacket
	if code := h.adminCall("GET", "/v1/workflows/wf-1/resume", nil, &packet); code != http.StatusOK || len(packet.Steps) != 1 {
		t.Fatalf("resume: %d %+v, want one step", code, packet)
	}
	if ev := packet.Steps[0].Evidence; strings.Contains(ev, "db-7") || ev == "" {
		t.Fatalf("resume packet evidence %q, want the resolution without the note", ev)
	}
	noted := false
	for _, e := range h.events() {
		if e["type"] == "resolved" && e["note"] == note {
			noted = true
		}
	}
	if !noted {
		t.Errorf("no resolved event with the operator's note in %v", h.events())
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}
