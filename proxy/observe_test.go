package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
)

// observeRoutes describe the echo provider of observeProvider: a route
// with a native idempotency header, one that needs approval, and one that
// takes its key in the body.
const observeRoutes = `  - name: create_invoice
    match: POST /x/invoices
    effect: irreversible
    key: {fields: [customer]}
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
  - name: payout
    match: POST /x/payouts
    effect: irreversible
    key: {fields: [amount]}
    approval: required
  - name: charge
    match: POST /x/charges
    effect: reversible
    native_idempotency: {body: idempotency_key}
`

// observeProvider serves /x/ on h's provider: every POST is an effect
// (counted) answered with what the provider received, in a body that is
// the same for the same request, so that answers can be compared byte for
// byte.
func observeProvider(h *harness) *atomic.Int64 {
	var effects atomic.Int64
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		effects.Add(1)
		sum := sha256.Sum256(b)
		var toolguard []string
		for k := range r.Header {
			if headerfilter.IsToolguard(k) {
				toolguard = append(toolguard, k)
			}
		}
		slices.Sort(toolguard)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=upstream")
		w.Header().Set("X-Request-Id", "req_"+hex.EncodeToString(sum[:4]))
		status := http.StatusCreated
		if strings.Contains(string(b), `"fail"`) {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{
			"id": "obj_" + hex.EncodeToString(sum[:4]), "path": r.URL.Path, "body_sha256": hex.EncodeToString(sum[:]),
			"idempotency_key": r.Header.Get("Idempotency-Key"), "toolguard_headers": toolguard,
		})
	})
	h.up.extra.Store(&handler)
	return &effects
}

// direct sends a request straight to the provider, as the agent would
// without toolguard.
func direct(t *testing.T, h *harness, method, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, h.up.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", testCredential)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.up.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// sameAnswer fails t unless the two answers have the same status, body
// and headers (Date aside).
func sameAnswer(t *testing.T, name string, got *http.Response, gotBody string, want *http.Response, wantBody string) {
	t.Helper()
	if got.StatusCode != want.StatusCode || gotBody != wantBody {
		t.Errorf("%s: answer %d %s, want %d %s", name, got.StatusCode, gotBody, want.StatusCode, wantBody)
	}
	g, w := got.Header.Clone(), want.Header.Clone()
	g.Del("Date")
	w.Del("Date")
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s: headers\n got %v\nwant %v", name, g, w)
	}
}

// settle waits until every observation of h's proxy is journaled.
func (h *harness) settle() { <-h.srv.observing.Idle() }

// observedEvents are the journal's observation events, what enforcement
// would have done by key.
func (h *harness) observedEvents() []journal.Event {
	h.t.Helper()
	h.settle()
	evs, err := h.j.Events(0, 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []journal.Event
	for _, ev := range evs {
		if _, ok := ev.Would(); ok {
			out = append(out, ev)
		}
	}
	return out
}

// woulds are what enforcement would have done, in the order of their
// names: observations are journaled in the background, in any order.
func woulds(evs []journal.Event) []string {
	var out []string
	for _, ev := range evs {
		if w, ok := ev.Would(); ok {
			out = append(out, w.String())
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// In observe mode every answer is the provider's own, byte for byte, and
// every call reaches it as the agent sent it (no key injected in a header
// or the body, the agent's own idempotency key kept); the journal records
// what enforcement would have done: forward, replay the duplicate, hold
// for approval, refuse an invalid body, a call without a credential and
// a body over limits.max_body.
func TestObserveChangesNoAnswer(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[useTLS], func(t *testing.T) {
			h := startHarness(t, harnessConfig{TLS: useTLS, Routes: observeRoutes, Options: Options{Mode: policy.ModeObserve, MaxBody: 256}})
			effects := observeProvider(h)
			big := `{"customer":"c1","pad":"` + strings.Repeat("x", 300) + `"}`
			calls := []struct {
				name, path, body string
				headers          []string
				would            string
			}{
				{name: "new intent", path: "/x/invoices", body: `{"customer":"c1","amount":1}`, would: "forward"},
				{name: "duplicate", path: "/x/invoices", body: `{"amount":1,"customer":"c1"}`, headers: []string{"Idempotency-Key", "sdk-key-2"}, would: "replay"},
				{name: "invalid body", path: "/x/invoices", body: `{"amount":1}`, would: "refuse_invalid_body"},
				{name: "approval", path: "/x/payouts", body: `{"amount":7}`, would: "hold_approval"},
				{name: "key in the body", path: "/x/charges", body: `{"amount":7,"fail":true}`, would: "forward"},
				{name: "no credential", path: "/x/payouts", body: `{"amount":8}`, headers: []string{"Authorization", ""}, would: "refuse_invalid_body"},
				{name: "too large", path: "/x/invoices", body: big, would: "refuse_body_too_large"},
			}
			for _, tc := range calls {
				got, gotBody := h.post(tc.path, tc.body, tc.headers...)
				want, wantBody := direct(t, h, http.MethodPost, tc.path, tc.body, tc.headers...)
				sameAnswer(t, tc.name, got, gotBody, want, wantBody)
				for k := range got.Header {
					if headerfilter.IsToolguard(k) {
						t.Errorf("%s: answer carries %s", tc.name, k)
					}
				}
				var echo struct {
					IdempotencyKey   string   `json:"idempotency_key"`
					ToolguardHeaders []string `json:"toolguard_headers"`
				}
				json.Unmarshal([]byte(gotBody), &echo)
				if want := headerValue(tc.headers, "Idempotency-Key"); echo.IdempotencyKey != want {
					t.Errorf("%s: provider got Idempotency-Key %q, want the agent's %q", tc.name, echo.IdempotencyKey, want)
				}
			}
			if got, n := effects.Load(), int64(2*len(calls)); got != n { // the direct calls too
				t.Errorf("provider effects = %d, want %d: every call reaches it", got, n)
			}
			evs := h.observedEvents()
			var want []string
			for _, tc := range calls {
				want = append(want, tc.would)
			}
			if got := woulds(evs); !slices.Equal(got, sorted(want)) {
				t.Errorf("would = %v, want %v", got, want)
			}
			for _, st := range h.steps() {
				if !st.Observed || st.Hold != "" || st.Workflow != "" || st.ResponseBytes != 0 {
					t.Errorf("step %s/%s: observed=%v hold=%q workflow=%q response bytes %d; want an observation, no body kept",
						st.Route, st.Key, st.Observed, st.Hold, st.Workflow, st.ResponseBytes)
				}
			}
			if got := h.metric(`toolguard_observed_total{api="billing",route="create_invoice",would="replay"}`); got != "1" {
				t.Errorf("observed replay metric = %q, want 1", got)
			}
			if got := h.metric(`toolguard_observed_total{api="billing",route="payout",would="hold_approval"}`); got != "1" {
				t.Errorf("observed hold metric = %q, want 1", got)
			}
			lines := 0
			for _, l := range h.observedLines() {
				if l["mode"] != "observe" || l["would"] == "" || l["outcome"] != outcomeObserved {
					t.Errorf("decision line %v lacks mode=observe, would and outcome observed", l)
				}
				lines++
			}
			if lines != len(calls) {
				t.Errorf("observed decision lines = %d, want %d", lines, len(calls))
			}
		})
	}
}

func headerValue(headers []string, name string) string {
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == name {
			return headers[i+1]
		}
	}
	return ""
}

// observedLines are the decision lines of observed calls.
func (h *harness) observedLines() []map[string]any {
	h.t.Helper()
	h.settle()
	var out []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "observed call" {
			out = append(out, m)
		}
	}
	return out
}

// Switching from observe to enforce needs no migration, and an
// observation is never replayed: the first guarded call of an intent that
// was only observed is sent, and its duplicate replayed.
func TestObserveThenEnforce(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Mode: policy.ModeObserve}})
	body := `{"customer":"c1","amount":100}`
	for range 2 {
		if r, _ := h.post("/v1/invoices", body); r.Header.Get(HeaderOutcome) != "" {
			t.Fatalf("observed answer carries Toolguard-Outcome %q", r.Header.Get(HeaderOutcome))
		}
	}
	if got := woulds(h.observedEvents()); !slices.Equal(got, sorted([]string{"forward", "replay"})) {
		t.Fatalf("would = %v, want forward, replay", got)
	}
	observed := h.steps()[0]
	h.restart(func(o *Options) { o.Mode = policy.ModeEnforce })
	r3, b3 := h.post("/v1/invoices", body)
	r4, b4 := h.post("/v1/invoices", body)
	if got := h.up.effects.Load(); got != 3 {
		t.Fatalf("provider effects = %d, want 3: two observed, one guarded", got)
	}
	if r3.Header.Get(HeaderOutcome) != OutcomeForwarded || r4.Header.Get(HeaderOutcome) != OutcomeReplayed || b3 != b4 {
		t.Fatalf("enforced: %s then %s (%s, %s); want forwarded then replayed, same answer",
			r3.Header.Get(HeaderOutcome), r4.Header.Get(HeaderOutcome), b3, b4)
	}
	st := h.steps()[0]
	if st.Observed || st.Key != observed.Key || st.Attempt != 1 || !st.CreatedAt.After(observed.CreatedAt) || st.OperationID != "inv_3" {
		t.Errorf("guarded step %+v: want the observation's key, guarded, attempt 1, created anew, operation inv_3", st)
	}
}

// A rule file's guard mode overrides the global one, both ways.
func TestObservePerRuleFile(t *testing.T) {
	tests := []struct {
		name     string
		global   policy.Mode
		file     string
		outcomes []string
	}{
		{name: "file observes", global: policy.ModeEnforce, file: "{mode: observe}", outcomes: []string{"", ""}},
		{name: "file enforces", global: policy.ModeObserve, file: "{mode: enforce}", outcomes: []string{OutcomeForwarded, OutcomeReplayed}},
		{name: "global observe", global: policy.ModeObserve, outcomes: []string{"", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, harnessConfig{Routes: invoiceRoute, Guard: tc.file, Options: Options{Mode: tc.global}})
			var got []string
			for range 2 {
				r, _ := h.post("/v1/invoices", `{"customer":"c1"}`)
				got = append(got, r.Header.Get(HeaderOutcome))
			}
			if !slices.Equal(got, tc.outcomes) {
				t.Errorf("outcomes %q, want %q", got, tc.outcomes)
			}
		})
	}
}

// A duplicate that arrives while the first call is still in flight
// would have waited for it; both reach the provider.
func TestObserveInFlightDuplicate(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Mode: policy.ModeObserve}})
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	h.up.setHook(func(*http.Request) bool {
		arrived <- struct{}{}
		<-release
		return true
	})
	var wg sync.WaitGroup
	post := func() {
		defer wg.Done()
		h.post("/v1/invoices", `{"customer":"c7"}`)
	}
	wg.Add(2)
	go post()
	<-arrived
	go post()
	<-arrived
	close(release)
	wg.Wait()
	if got := woulds(h.observedEvents()); !slices.Equal(got, sorted([]string{"forward", "wait"})) {
		t.Errorf("would = %v, want forward, wait", got)
	}
	if got := h.up.effects.Load(); got != 2 {
		t.Errorf("provider effects = %d, want 2", got)
	}
}

// An answer whose outcome enforcement could not know (a 5xx) leaves the
// observation started: a duplicate of an irreversible call without a
// lookup would have been held for review, and the resolver ends the
// observation later without looking anything up.
func TestObserveAmbiguousOutcome(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Mode: policy.ModeObserve}})
	h.up.status.Store(http.StatusBadGateway)
	r1, _ := h.post("/v1/invoices", `{"customer":"c5"}`)
	r2, _ := h.post("/v1/invoices", `{"customer":"c5"}`)
	if r1.StatusCode != http.StatusBadGateway || r2.StatusCode != http.StatusBadGateway {
		t.Fatalf("statuses %d, %d; want the provider's 502 twice", r1.StatusCode, r2.StatusCode)
	}
	if got := woulds(h.observedEvents()); !slices.Equal(got, sorted([]string{"forward", "hold_ambiguous"})) {
		t.Errorf("would = %v, want forward, hold_ambiguous", got)
	}
	st := h.steps()[0]
	if st.Status != "started" || !st.Observed || st.Attempt != 2 {
		t.Fatalf("observation %s attempt %d observed %v; want started, attempt 2", st.Status, st.Attempt, st.Observed)
	}
	h.srv.opts.AbandonAfter = 0
	h.srv.now = func() time.Time { return time.Now().Add(time.Hour) }
	if n := h.srv.newResolver().Pass(context.Background()); n != 1 {
		t.Fatalf("resolver settled %d steps, want the observation", n)
	}
	if st := h.steps()[0]; st.Status != "failed" || !st.Observed || st.Hold != "" {
		t.Errorf("ended observation %s hold %q observed %v; want failed, not held", st.Status, st.Hold, st.Observed)
	}
}

// The admin API lists observations with the flag that tells them from
// guarded steps.
func TestObserveStepView(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Mode: policy.ModeObserve}})
	h.post("/v1/invoices", `{"customer":"c2"}`)
	h.settle()
	var out struct {
		Steps []admin.StepView `json:"steps"`
	}
	h.adminCall("GET", "/v1/steps", nil, &out)
	if len(out.Steps) != 1 || !out.Steps[0].Observed {
		t.Fatalf("steps %+v, want one observation", out.Steps)
	}
}
