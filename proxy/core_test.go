package proxy

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// Two requests that differ only in field order, number spelling,
// whitespace and an ignored field are one intent: one effect, the second
// answered from the journal, over HTTP and through an intercepted tunnel.
func TestReplayWithIgnoredFieldChanged(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[useTLS], func(t *testing.T) {
			h := startHarness(t, harnessConfig{TLS: useTLS, Routes: invoiceRoute})
			r1, b1 := h.post("/v1/invoices", `{"customer":"c1","amount":100,"trace_id":"a"}`, "Authorization", "Bearer k1")
			r2, b2 := h.post("/v1/invoices", `{ "amount": 100.0, "customer":"c1", "trace_id":"b"}`, "Authorization", "Bearer k1")
			if got := h.up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects = %d, want 1", got)
			}
			if r1.StatusCode != http.StatusCreated || r2.StatusCode != http.StatusCreated {
				t.Fatalf("status = %d, %d; want 201, 201", r1.StatusCode, r2.StatusCode)
			}
			if got := r1.Header.Get(HeaderOutcome); got != OutcomeForwarded {
				t.Errorf("first outcome = %q, want forwarded", got)
			}
			if got := r2.Header.Get(HeaderOutcome); got != OutcomeReplayed {
				t.Errorf("second outcome = %q, want replayed", got)
			}
			if got := r2.Header.Get(HeaderReplayed); got != "true" {
				t.Errorf("Idempotent-Replayed = %q, want true", got)
			}
			if k := r1.Header.Get(HeaderKey); k == "" || k != r2.Header.Get(HeaderKey) {
				t.Errorf("keys differ or are empty: %q vs %q", k, r2.Header.Get(HeaderKey))
			}
			if b1 != b2 {
				t.Errorf("replayed body differs:\n%s\n%s", b1, b2)
			}
			if c := r2.Header.Get("Set-Cookie"); c != "" {
				t.Errorf("replay carries Set-Cookie %q; cookies are never stored", c)
			}
			steps := h.steps()
			if len(steps) != 1 || steps[0].Status != "committed" || steps[0].OperationID != "inv_1" {
				t.Fatalf("journal = %+v, want one committed step with operation_id inv_1", steps)
			}
		})
	}
}

func TestDistinctIntents(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	for _, body := range []string{`{"customer":"c1","amount":100}`, `{"customer":"c1","amount":101}`, `{"customer":"c2","amount":100}`} {
		if r, _ := h.post("/v1/invoices", body); r.Header.Get(HeaderOutcome) != OutcomeForwarded {
			t.Errorf("%s: outcome %q, want forwarded", body, r.Header.Get(HeaderOutcome))
		}
	}
	// The same body from another caller is another intent.
	if r, _ := h.post("/v1/invoices", `{"customer":"c1","amount":100}`, "Authorization", "Bearer other"); r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Errorf("another caller: outcome %q, want forwarded", r.Header.Get(HeaderOutcome))
	}
	if got := h.up.effects.Load(); got != 4 {
		t.Fatalf("upstream effects = %d, want 4", got)
	}
}

// Sixteen concurrent duplicates: one effect, sixteen identical answers,
// exactly one of them forwarded.
func TestConcurrentDuplicatesOneEffect(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	h.up.setHook(func(*http.Request) bool {
		arrived <- struct{}{}
		<-release
		return true
	})
	const n = 16
	var wg sync.WaitGroup
	bodies := make([]string, n)
	outcomes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, b := h.post("/v1/invoices", `{"customer":"c9","amount":5}`)
			bodies[i], outcomes[i] = b, r.Header.Get(HeaderOutcome)
		}()
	}
	<-arrived // the first call reached the provider; the others wait in the proxy
	close(release)
	wg.Wait()
	if got := h.up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	forwarded := 0
	for i := range bodies {
		if bodies[i] != bodies[0] {
			t.Errorf("answer %d differs: %s vs %s", i, bodies[i], bodies[0])
		}
		if outcomes[i] == OutcomeForwarded {
			forwarded++
		}
	}
	if forwarded != 1 {
		t.Errorf("forwarded answers = %d, want 1 (outcomes %v)", forwarded, outcomes)
	}
}

// Bad input gets a precise problem, is never forwarded, and leaves the
// journal as it was.
func TestBadInput(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{MaxBody: 1 << 10}})
	h.post("/v1/invoices", `{"customer":"kept"}`)
	tests := []struct {
		name, body, problem string
		status              int
	}{
		{name: "unparseable", body: `{"customer":`, problem: problem.InvalidBody, status: http.StatusBadRequest},
		{name: "too large", body: `{"customer":"` + strings.Repeat("x", 2048) + `"}`, problem: problem.BodyTooLarge, status: http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, b := h.post("/v1/invoices", tc.body)
			if r.StatusCode != tc.status || !strings.Contains(b, tc.problem) || r.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("got %d %s %s, want %d %s", r.StatusCode, r.Header.Get("Content-Type"), b, tc.status, tc.problem)
			}
		})
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Errorf("upstream effects = %d, want 1 (bad input is never forwarded)", got)
	}
	if steps := h.steps(); len(steps) != 1 || steps[0].Status != "committed" {
		t.Errorf("journal = %+v, want the one committed step, untouched", steps)
	}
}

// An approval lets exactly the approved body through, once.
func TestApproval(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: `  - name: create_refund
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [customer, amount]
    approval: required
`})
	body := `{"customer":"c1","amount":10,"memo":"as shown"}`
	r, b := h.post("/v1/invoices", body)
	if r.StatusCode != http.StatusConflict || !strings.Contains(b, problem.AwaitingApproval) || r.Header.Get("Retry-After") == "" {
		t.Fatalf("first call: %d %s (Retry-After %q), want 409 awaiting-approval", r.StatusCode, b, r.Header.Get("Retry-After"))
	}
	key := r.Header.Get(HeaderKey)
	st, err := h.j.Get(key)
	if err != nil || st.Status != journal.StatusPrepared || st.Hold != journal.HoldAwaitingApproval {
		t.Fatalf("step = %s %s (%v), want prepared awaiting_approval", st.Status, st.Hold, err)
	}
	if code := h.adminCall("POST", "/v1/steps/"+key+"/approve", map[string]string{"note": "ok by finance"}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	// Same key, a different body: not forwarded under the approval.
	if r, b := h.post("/v1/invoices", `{"customer":"c1","amount":10,"memo":"changed"}`); r.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, problem.PayloadMismatch) {
		t.Fatalf("changed body: %d %s, want 422 payload-mismatch", r.StatusCode, b)
	}
	if r, _ := h.post("/v1/invoices", body); r.StatusCode != http.StatusCreated || r.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("approved call: %d %q, want 201 forwarded", r.StatusCode, r.Header.Get(HeaderOutcome))
	}
	if r, _ := h.post("/v1/invoices", body); r.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Fatalf("retry after the approved call: %q, want replayed", r.Header.Get(HeaderOutcome))
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want exactly 1", got)
	}
	if code := h.adminCall("POST", "/v1/steps/"+key+"/approve", nil, nil); code != http.StatusOK {
		t.Fatalf("second approve: %d, want 200 (idempotent)", code)
	}
}

// Resolving an ambiguous hold through the admin API, both ways.
func TestReviewResolveInProcess(t *testing.T) {
	tests := []struct {
		outcome     string
		wantStatus  int
		wantEffects int64
	}{
		{outcome: "committed", wantStatus: http.StatusOK, wantEffects: 1},
		{outcome: "not_executed", wantStatus: http.StatusCreated, wantEffects: 2},
	}
	for _, tc := range tests {
		t.Run(tc.outcome, func(t *testing.T) {
			h := startHarness(t, harnessConfig{Routes: invoiceRoute})
			body := `{"customer":"c1","amount":10}`
			key := holdForReview(t, h, body)
			res := admin.Resolution{Outcome: tc.outcome, OperationID: "inv_1", Note: "checked the dashboard"}
			if tc.outcome == "not_executed" {
				// The attempt may still land for an upstream timeout after
				// it was last written: not executed needs force until then.
				var p problem.Details
				if code := h.adminCall("POST", "/v1/steps/"+key+"/resolve", res, &p); code != http.StatusConflict || p.Type != admin.ProblemStillLanding {
					t.Fatalf("resolve not_executed inside the landing window: %d %s, want 409 %s", code, p.Type, admin.ProblemStillLanding)
				}
				res.Force = true
			}
			for range 2 { // resolving again is idempotent
				if code := h.adminCall("POST", "/v1/steps/"+key+"/resolve", res, nil); code != http.StatusOK {
					t.Fatalf("resolve: %d", code)
				}
			}
			if code := h.adminCall("POST", "/v1/steps/"+key+"/approve", nil, nil); code != http.StatusConflict {
				t.Fatalf("approve of a resolved step: %d, want 409", code)
			}
			r, b := h.post("/v1/invoices", body)
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("after resolve: %d %s, want %d", r.StatusCode, b, tc.wantStatus)
			}
			if got := h.up.effects.Load(); got != tc.wantEffects {
				t.Fatalf("upstream effects = %d, want %d", got, tc.wantEffects)
			}
			if r, _ := h.post("/v1/invoices", body); r.Header.Get(HeaderOutcome) == OutcomeForwarded || h.up.effects.Load() != tc.wantEffects {
				t.Fatalf("a later duplicate was forwarded")
			}
		})
	}
}

// unmatched decides calls no route matches: passed through, guarded as
// irreversible on the whole body, or refused (reads included).
func TestUnmatchedPolicies(t *testing.T) {
	tests := []struct {
		unmatched   policy.Unmatched
		wantEffects int64
		wantStatus  int
		wantOutcome string
		readStatus  int
		readOutcome string
	}{
		{unmatched: policy.UnmatchedPassthrough, wantEffects: 2, wantStatus: 201, wantOutcome: OutcomePassthrough, readStatus: 200, readOutcome: OutcomePassthrough},
		{unmatched: policy.UnmatchedGuard, wantEffects: 1, wantStatus: 201, wantOutcome: OutcomeReplayed, readStatus: 200, readOutcome: OutcomePassthrough},
		{unmatched: policy.UnmatchedReject, wantEffects: 0, wantStatus: 403, wantOutcome: OutcomeBlocked, readStatus: 403, readOutcome: OutcomeBlocked},
	}
	for _, tc := range tests {
		t.Run(tc.unmatched.String(), func(t *testing.T) {
			// HTTPS where the policy makes toolguard intercept every host; a
			// passed-through HTTPS call is a tunnel it cannot mark.
			h := startHarness(t, harnessConfig{TLS: tc.unmatched != policy.UnmatchedPassthrough, Routes: invoiceRoute, RuleHost: "elsewhere.example",
				Options: Options{Unmatched: tc.unmatched}, ConnectToUpstream: true})
			var r *http.Response
			for range 2 {
				r, _ = h.post("/v1/emails", `{"to":"a@example.com"}`)
			}
			if got := h.up.effects.Load(); got != tc.wantEffects {
				t.Errorf("effects = %d, want %d", got, tc.wantEffects)
			}
			if r.StatusCode != tc.wantStatus || r.Header.Get(HeaderOutcome) != tc.wantOutcome {
				t.Errorf("second call: %d %q, want %d %q", r.StatusCode, r.Header.Get(HeaderOutcome), tc.wantStatus, tc.wantOutcome)
			}
			if r, _ := h.send(http.MethodGet, "/v1/ping", ""); r.StatusCode != tc.readStatus || r.Header.Get(HeaderOutcome) != tc.readOutcome {
				t.Errorf("GET: %d %q, want %d %q", r.StatusCode, r.Header.Get(HeaderOutcome), tc.readStatus, tc.readOutcome)
			}
		})
	}
}

// The contract's query GET /v1/steps?status=&workflow=&hold= with empty
// values filters nothing.
func TestStepsEmptyFilters(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	h.post("/v1/invoices", `{"customer":"c1"}`)
	for query, want := range map[string]int{"?status=&workflow=&hold=": 1, "?hold=none": 1, "?hold=needs_review": 0} {
		var out struct {
			Steps []admin.StepView `json:"steps"`
		}
		if code := h.adminCall("GET", "/v1/steps"+query, nil, &out); code != http.StatusOK || len(out.Steps) != want {
			t.Errorf("%s: %d, %d steps; want 200, %d", query, code, len(out.Steps), want)
		}
	}
}

// A form body's key does not depend on field order; repeated fields keep
// their order.
func TestFormBodyFieldOrder(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [customer, amount, "items"]
`})
	for _, form := range []string{"customer=c1&amount=100&items=a&items=b&trace=1", "items=a&trace=2&amount=100&items=b&customer=c1"} {
		req, _ := http.NewRequest(http.MethodPost, h.up.URL+"/v1/invoices", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		h.do(req)
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}

// A connection refused before anything was written: not executed, 502,
// retryable.
func TestUpstreamUnreachableIsRetryable(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	h.up.Close() // nothing listens there now
	r, b := h.post("/v1/invoices", `{"customer":"c1"}`)
	if r.StatusCode != http.StatusBadGateway || !strings.Contains(b, problem.UpstreamUnreachable) {
		t.Fatalf("got %d %s, want 502 upstream-unreachable", r.StatusCode, b)
	}
	if steps := h.steps(); len(steps) != 1 || steps[0].Status != "failed" || !steps[0].Retryable {
		t.Fatalf("journal = %+v, want one failed, retryable step", steps)
	}
}

// A 5xx after the request was written is ambiguous: 504, the step stays
// started.
func TestUpstream5xxIsOutcomeUnknown(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	h.up.status.Store(http.StatusServiceUnavailable)
	r, b := h.post("/v1/invoices", `{"customer":"c1"}`)
	if r.StatusCode != http.StatusGatewayTimeout || !strings.Contains(b, problem.OutcomeUnknown) {
		t.Fatalf("got %d %s, want 504 outcome-unknown", r.StatusCode, b)
	}
	if steps := h.steps(); len(steps) != 1 || steps[0].Status != "started" {
		t.Fatalf("journal = %+v, want the step still started", steps)
	}
}

// A definitive failure (most 4xx) is stored and replayed, never re-sent.
func TestDefinitiveFailureIsReplayed(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	h.up.status.Store(http.StatusUnprocessableEntity)
	r1, b1 := h.post("/v1/invoices", `{"customer":"c1"}`)
	r2, b2 := h.post("/v1/invoices", `{"customer":"c1"}`)
	if r1.StatusCode != http.StatusUnprocessableEntity || r1.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("first: %d %q", r1.StatusCode, r1.Header.Get(HeaderOutcome))
	}
	if r2.StatusCode != http.StatusUnprocessableEntity || r2.Header.Get(HeaderOutcome) != OutcomeReplayed || b1 != b2 {
		t.Fatalf("second: %d %q %s, want the stored 422 replayed", r2.StatusCode, r2.Header.Get(HeaderOutcome), b2)
	}
	if got := h.up.effects.Load(); got != 1 {
		t.Fatalf("upstream calls = %d, want 1", got)
	}
	if steps := h.steps(); len(steps) != 1 || steps[0].Status != "failed" || steps[0].Retryable {
		t.Fatalf("journal = %+v, want one definitive failure", steps)
	}
}
