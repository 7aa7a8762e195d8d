package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
)

// Tests of the response- and recovery-side rule features through the
// in-process proxy: provider error envelopes, recovered answers in the
// provider's shape, outcome rules, retry signals, native key lifetime,
// settling, paged and rate-limited lookups, deletes and the email pattern.

// provider is a test's own API under /x/ on the harness's upstream: each
// POST /x/<thing> creates one object unless respond answers otherwise;
// objects are listed by GET /x/search on a separate lookup server.
type provider struct {
	mu      sync.Mutex
	objects []string // ids, in creation order
	refs    map[string]string
	effects atomic.Int64
	lookups atomic.Int64
	// respond, when set, writes the answer of a creation (after the
	// effect, when it returns true) instead of 201 {"id": ...}.
	respond atomic.Pointer[respondFunc]
	// drop aborts the connection after the effect: sent, no answer.
	drop atomic.Bool
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	if f := p.respond.Load(); f != nil {
		id := fmt.Sprintf("obj_%d", p.effects.Load()+1)
		if (*f)(w, r, id) {
			p.record(id, body)
		}
		return
	}
	id := p.record(fmt.Sprintf("obj_%d", p.effects.Load()+1), body)
	if p.drop.Load() {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%q,"object":"thing","ref":%q}`, id, body["ref"])
}

func (p *provider) record(id string, body map[string]any) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.effects.Add(1)
	p.objects = append(p.objects, id)
	if p.refs == nil {
		p.refs = map[string]string{}
	}
	ref, _ := body["ref"].(string)
	p.refs[id] = ref
	return id
}

// respondFunc answers a creation; see provider.respond.
type respondFunc func(w http.ResponseWriter, r *http.Request, id string) bool

// setRespond replaces how creations are answered; nil restores 201.
func (p *provider) setRespond(f respondFunc) {
	if f == nil {
		p.respond.Store(nil)
		return
	}
	p.respond.Store(&f)
}

// search lists the objects whose ref is ?ref=, Stripe-list style.
func (p *provider) search(w http.ResponseWriter, r *http.Request) {
	p.lookups.Add(1)
	p.mu.Lock()
	var data []string
	for _, id := range p.objects {
		if p.refs[id] == r.URL.Query().Get("ref") {
			data = append(data, fmt.Sprintf(`{"id":%q,"object":"thing","ref":%q}`, id, p.refs[id]))
		}
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
}

// startProvider serves p on the harness upstream's /x/ and returns the
// lookup server's URL; routes is a function of that URL.
func startProvider(t *testing.T, cfg harnessConfig, routes func(lookupURL string) string) (*harness, *provider) {
	t.Helper()
	p := &provider{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /x/search", p.search)
	mux.HandleFunc("GET /x/messages/{id}", p.messageStatus)
	lk := httptest.NewServer(mux)
	t.Cleanup(lk.Close)
	cfg.Routes = routes(lk.URL)
	h := startHarness(t, cfg)
	var hd http.Handler = http.HandlerFunc(p.serve)
	h.up.extra.Store(&hd)
	return h, p
}

func lookupRoute(extra string) func(string) string {
	return func(lk string) string {
		return `  - name: create_thing
    match: POST /x/things
    effect: irreversible
    key:
      fields: [ref]
    operation_id: body:id
    lookup:
      request: GET ` + lk + `/x/search?ref={{body.ref}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
` + extra
	}
}

// stripeError decodes a Stripe error envelope as stripe-go does.
type stripeError struct {
	Error struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeStripe(t *testing.T, body string) stripeError {
	t.Helper()
	var e stripeError
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type == "" {
		t.Fatalf("not a Stripe error (%v): %s", err, body)
	}
	return e
}

// A hold reaches a Stripe SDK as a Stripe error it decodes, with
// Stripe-Should-Retry: false so that it does not retry; toolguard's own
// headers stay.
func TestStripeEnvelopeHold(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: approvalRoute, Errors: "stripe"})
	resp, body := h.post("/v1/invoices", `{"customer":"c1","amount":1}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("status %d, want 409: %s", resp.StatusCode, body)
	}
	e := decodeStripe(t, body)
	if e.Error.Type != "api_error" || e.Error.Code != "toolguard_awaiting_approval" || !strings.Contains(e.Error.Message, "approve") {
		t.Errorf("error = %+v", e.Error)
	}
	for name, want := range map[string]string{
		"Content-Type": "application/json", "Stripe-Should-Retry": "false", "Retry-After": "30", HeaderOutcome: OutcomeBlocked,
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if resp.Header.Get(HeaderKey) == "" {
		t.Error("no Toolguard-Key header")
	}
	if n := h.up.effects.Load(); n != 0 {
		t.Fatalf("upstream effects = %d, want 0", n)
	}
}

// Without errors: the default stays problem+json.
func TestProblemEnvelopeIsDefault(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: approvalRoute})
	resp, body := h.post("/v1/invoices", `{"customer":"c1","amount":1}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || !strings.Contains(body, problem.AwaitingApproval) {
		t.Fatalf("Content-Type %q, body %s", ct, body)
	}
	if resp.Header.Get("Stripe-Should-Retry") != "" {
		t.Error("problem+json answer carries Stripe-Should-Retry")
	}
}

// A json template shapes refusals; x-should-retry says whether a retry
// can help.
func TestJSONTemplateEnvelope(t *testing.T) {
	h := startHarness(t, harnessConfig{
		Routes: `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [customer]
`,
		Errors: `{format: json, template: '{"ok": false, "error": "{{title}}", "detail": "{{detail}}", "toolguard_type": "{{type}}"}'}`,
	})
	resp, body := h.post("/v1/invoices", `{"amount":1}`)
	var got struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Detail string `json:"detail"`
		Type   string `json:"toolguard_type"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if resp.StatusCode != http.StatusBadRequest || got.Type != problem.InvalidBody || !strings.Contains(got.Detail, "customer") {
		t.Errorf("status %d, body %+v", resp.StatusCode, got)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("X-Should-Retry = %q, want false", resp.Header.Get("X-Should-Retry"))
	}
	if n := h.up.effects.Load(); n != 0 {
		t.Fatalf("upstream effects = %d, want 0", n)
	}
}

// An interrupted call whose effect a lookup finds answers the agent with
// the found object and the route's status, not toolguard's evidence body,
// and every replay shows the same.
func TestRecoveredAnswerInProviderShape(t *testing.T) {
	h, p := startProvider(t, harnessConfig{}, lookupRoute("      answer: {body: data.0, status: 201}\n"))
	p.drop.Store(true)
	if resp, body := h.post("/x/things", `{"ref":"order-7"}`); resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("interrupted call: %d %s", resp.StatusCode, body)
	}
	p.drop.Store(false)
	resp, body := h.post("/x/things", `{"ref":"order-7"}`)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(HeaderOutcome) != OutcomeRecovered {
		t.Fatalf("recovery: %d %s outcome %s", resp.StatusCode, body, resp.Header.Get(HeaderOutcome))
	}
	var obj struct{ ID, Object, Ref string }
	if err := json.Unmarshal([]byte(body), &obj); err != nil || obj.ID != "obj_1" || obj.Object != "thing" || obj.Ref != "order-7" {
		t.Fatalf("recovered answer %s (%v), want the found object", body, err)
	}
	resp2, body2 := h.post("/x/things", `{"ref":"order-7"}`)
	if resp2.StatusCode != http.StatusCreated || body2 != body || resp2.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Fatalf("replay: %d %s, want the recovered answer", resp2.StatusCode, body2)
	}
	if n := p.effects.Load(); n != 1 {
		t.Fatalf("provider effects = %d, want 1", n)
	}
	st := h.steps()[0]
	if st.Status != "committed" || st.OperationID != "obj_1" {
		t.Fatalf("step %+v", st)
	}
}

// Inside lookup.settle after an interrupted attempt, "not found" is
// inconclusive: in-progress with Retry-After (here in Stripe's shape,
// which the SDK retries), never a second send.
func TestLookupSettleInconclusive(t *testing.T) {
	h, p := startProvider(t, harnessConfig{Errors: "stripe"}, lookupRoute("      settle: 90s\n"))
	p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
		panic(http.ErrAbortHandler) // sent, not landed yet
	})
	h.post("/x/things", `{"ref":"order-8"}`)
	p.setRespond(nil)
	resp, body := h.post("/x/things", `{"ref":"order-8"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("status %d, want 409: %s", resp.StatusCode, body)
	}
	e := decodeStripe(t, body)
	if e.Error.Type != "idempotency_error" || e.Error.Code != "idempotency_key_in_use" || resp.Header.Get("Stripe-Should-Retry") != "true" {
		t.Errorf("error %+v, Stripe-Should-Retry %q", e.Error, resp.Header.Get("Stripe-Should-Retry"))
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 60 || ra > 90 {
		t.Errorf("Retry-After = %q, want the rest of the 90s settle window", resp.Header.Get("Retry-After"))
	}
	if n := p.effects.Load(); n != 0 {
		t.Fatalf("provider effects = %d, want 0 (nothing re-sent)", n)
	}
	if n := p.lookups.Load(); n != 1 {
		t.Fatalf("lookups = %d, want 1", n)
	}
}

// Beyond lookup.rate the provider is not asked: the retry gets
// in-progress with Retry-After, never "absent" and never a re-send.
func TestLookupRateBudget(t *testing.T) {
	h, p := startProvider(t, harnessConfig{Options: Options{UpstreamTimeout: time.Second}}, lookupRoute("      rate: 1/h\n"))
	p.drop.Store(true)
	h.post("/x/things", `{"ref":"a"}`)
	h.post("/x/things", `{"ref":"b"}`)
	p.drop.Store(false)
	if resp, body := h.post("/x/things", `{"ref":"a"}`); resp.Header.Get(HeaderOutcome) != OutcomeRecovered {
		t.Fatalf("first lookup: %d %s", resp.StatusCode, body)
	}
	resp, body := h.post("/x/things", `{"ref":"b"}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, problem.InProgress) || !strings.Contains(body, "lookup.rate") {
		t.Fatalf("over budget: %d %s", resp.StatusCode, body)
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 60 {
		t.Errorf("Retry-After = %q, want about an hour's token", resp.Header.Get("Retry-After"))
	}
	if n := p.lookups.Load(); n != 1 {
		t.Errorf("lookups = %d, want 1", n)
	}
	if n := p.effects.Load(); n != 2 {
		t.Fatalf("provider effects = %d, want 2", n)
	}
}

// Past native_idempotency.ttl the provider has forgotten the key: an
// interrupted call is held for review instead of re-sent.
func TestNativeKeyExpiredHolds(t *testing.T) {
	h, p := startProvider(t, harnessConfig{}, func(string) string {
		return `  - name: create_thing
    match: POST /x/things
    effect: irreversible
    key:
      fields: [ref]
    native_idempotency: {header: Idempotency-Key, ttl: 1ns}
`
	})
	p.drop.Store(true)
	h.post("/x/things", `{"ref":"late"}`)
	p.drop.Store(false)
	resp, body := h.post("/x/things", `{"ref":"late"}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, lifecycle.ReasonKeyExpired) {
		t.Fatalf("retry past the ttl: %d %s", resp.StatusCode, body)
	}
	if n := p.effects.Load(); n != 1 {
		t.Fatalf("provider effects = %d, want 1", n)
	}
	if st := h.steps()[0]; st.Hold != "needs_review" {
		t.Fatalf("step %+v, want held", st)
	}
}

// Outcome rules read the body: ok:false and GraphQL errors are failures,
// a 200 THROTTLED answer is retryable, 202 is accepted (committed, to be
// verified), and a 404 on DELETE is already done.
func TestOutcomeRules(t *testing.T) {
	routes := func(lk string) string {
		return `  - name: create_thing
    match: POST /x/things
    effect: irreversible
    key:
      fields: [ref]
    outcome:
      retryable: {body: {"errors.0.extensions.code": THROTTLED}}
      failure: {body: {ok: "false"}}
      accepted: {status: 202}
    verify:
      request: GET ` + lk + `/x/search?ref={{body.ref}}
      expect: {status: 200, body: {"data.#": "1"}}
      within: 1h
  - name: delete_thing
    match: DELETE /x/things/{id}
    effect: irreversible
    outcome:
      already_done: {status: [404, 410]}
`
	}
	h, p := startProvider(t, harnessConfig{}, routes)
	var sends atomic.Int64
	p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
		sends.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"no such thing"}`)
			return false
		case strings.Contains(r.URL.RawQuery, "throttle") && sends.Load() == 1:
			fmt.Fprint(w, `{"data":null,"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`)
			return false
		case strings.Contains(r.URL.RawQuery, "slack"):
			fmt.Fprint(w, `{"ok":false,"error":"channel_not_found"}`)
			return false
		case strings.Contains(r.URL.RawQuery, "async"):
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":%q,"status":"queued"}`, id)
			return true
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
		return true
	})
	t.Run("failure is replayed", func(t *testing.T) {
		sends.Store(0)
		h.post("/x/things?slack", `{"ref":"s"}`)
		resp, body := h.post("/x/things?slack", `{"ref":"s"}`)
		if resp.Header.Get(HeaderOutcome) != OutcomeReplayed || !strings.Contains(body, "channel_not_found") || sends.Load() != 1 {
			t.Fatalf("retry of a failure: outcome %s, %s, sends %d", resp.Header.Get(HeaderOutcome), body, sends.Load())
		}
	})
	t.Run("throttled is retried", func(t *testing.T) {
		sends.Store(0)
		h.post("/x/things?throttle", `{"ref":"t"}`)
		resp, _ := h.post("/x/things?throttle", `{"ref":"t"}`)
		if resp.StatusCode != http.StatusCreated || resp.Header.Get(HeaderOutcome) != OutcomeForwarded || sends.Load() != 2 {
			t.Fatalf("retry of a throttled call: %d %s, sends %d", resp.StatusCode, resp.Header.Get(HeaderOutcome), sends.Load())
		}
	})
	t.Run("accepted is committed, verification pending", func(t *testing.T) {
		resp, _ := h.post("/x/things?async", `{"ref":"q"}`)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("delete of a gone thing is already done", func(t *testing.T) {
		sends.Store(0)
		resp, _ := h.send(http.MethodDelete, "/x/things/obj_9", "")
		resp2, _ := h.send(http.MethodDelete, "/x/things/obj_9", "")
		if resp.StatusCode != http.StatusNotFound || resp2.Header.Get(HeaderOutcome) != OutcomeReplayed || sends.Load() != 1 {
			t.Fatalf("delete: %d, retry %s, sends %d", resp.StatusCode, resp2.Header.Get(HeaderOutcome), sends.Load())
		}
	})
	byRoute := map[string][]journal.Step{}
	for _, key := range h.stepKeys() {
		st, err := h.j.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		byRoute[st.Route] = append(byRoute[st.Route], st)
	}
	accepted, failed := 0, 0
	for _, st := range byRoute["create_thing"] {
		switch {
		case st.Response != nil && st.Response.Status == http.StatusAccepted:
			// Its verification runs in the background and may have passed.
			accepted++
			pending := st.Status == journal.StatusCommitted && !st.VerifyBy.IsZero() && strings.HasPrefix(st.Evidence, "accepted")
			if !pending && st.Status != journal.StatusVerified {
				t.Errorf("accepted step %s verify_by %v evidence %q, want committed with a pending verification, or verified", st.Status, st.VerifyBy, st.Evidence)
			}
		case st.Status == journal.StatusFailed:
			failed++
			if st.Retryable {
				t.Errorf("a failed step stayed retryable: %+v", st)
			}
		}
	}
	if accepted != 1 || failed != 1 {
		t.Errorf("create steps: %d accepted, %d failed; want 1 and 1 (the ok:false answer)", accepted, failed)
	}
	if d := byRoute["delete_thing"]; len(d) != 1 || d[0].Status != journal.StatusCommitted || !strings.HasPrefix(d[0].Evidence, "already done") {
		t.Errorf("delete steps %+v, want one committed, already done", d)
	}
}

// stepKeys lists the journal's keys.
func (h *harness) stepKeys() []string {
	var keys []string
	for _, st := range h.steps() {
		keys = append(keys, st.Key)
	}
	return keys
}

// Upstream retry signals: a 5xx's Retry-After reaches the agent on the
// outcome-unknown answer (the retry carries the same key); a 4xx with
// Stripe-Should-Retry: true may be executed again; a 429 retried inside
// its Retry-After gets the stored 429, not another send; a 429 with
// x-should-retry: false is never sent again.
func TestUpstreamRetrySignals(t *testing.T) {
	h, p := startProvider(t, harnessConfig{}, func(string) string {
		return `  - name: create_thing
    match: POST /x/things
    effect: reversible
    key:
      fields: [ref]
`
	})
	var sends atomic.Int64
	p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
		sends.Add(1)
		switch r.URL.RawQuery {
		case "busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "lock":
			w.Header().Set("Stripe-Should-Retry", "true")
			w.WriteHeader(http.StatusBadRequest)
		case "slow":
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
		case "quota":
			w.Header().Set("X-Should-Retry", "false")
			w.Header().Set("Retry-After-Ms", "1500")
			w.WriteHeader(http.StatusTooManyRequests)
		}
		return false
	})
	resp, body := h.post("/x/things?busy", `{"ref":"busy"}`)
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("5xx: %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	sends.Store(0)
	h.post("/x/things?lock", `{"ref":"lock"}`)
	h.post("/x/things?lock", `{"ref":"lock"}`)
	if n := sends.Load(); n != 2 {
		t.Errorf("Stripe-Should-Retry: true: sends %d, want 2", n)
	}
	sends.Store(0)
	h.post("/x/things?slow", `{"ref":"slow"}`)
	resp, _ = h.post("/x/things?slow", `{"ref":"slow"}`)
	if n := sends.Load(); n != 1 || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Errorf("429 with Retry-After: 60, retried at once: sends %d, %d %s; want the stored 429 replayed", n, resp.StatusCode, resp.Header.Get(HeaderOutcome))
	}
	sends.Store(0)
	h.post("/x/things?quota", `{"ref":"quota"}`)
	resp, _ = h.post("/x/things?quota", `{"ref":"quota"}`)
	if n := sends.Load(); n != 1 || resp.Header.Get(HeaderOutcome) != OutcomeReplayed || resp.Header.Get("Retry-After-Ms") != "1500" {
		t.Errorf("x-should-retry: false: sends %d, outcome %s, Retry-After-Ms %q", n, resp.Header.Get(HeaderOutcome), resp.Header.Get("Retry-After-Ms"))
	}
}

// messageStatus is a provider's message status API: delivered once sent.
func (p *provider) messageStatus(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	_, ok := p.refs[r.PathValue("id")]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	fmt.Fprint(w, `{"status":"delivered"}`)
}

// The email pattern: the key is an idempotency fingerprint (recipient,
// template, business reference), the operation id is the provider's
// message id from a header, and the message status API verifies it. A
// retry with fields an SDK adds per call is the same email; another
// reference is another email.
func TestEmailPattern(t *testing.T) {
	h, p := startProvider(t, harnessConfig{}, func(lk string) string {
		return `  - name: send_email
    match: POST /x/emails
    effect: irreversible
    key:
      fields: [to, template, ref]
    operation_id: header:X-Message-Id
    verify:
      request: GET ` + lk + `/x/messages/{{operation_id}}
      expect: {status: 200, body: {status: delivered}}
      within: 10s
      mode: sync
`
	})
	p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
		w.Header().Set("X-Message-Id", id)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"message":"queued"}`)
		return true
	})
	first, _ := h.post("/x/emails", `{"to":"ana@example.com","template":"receipt","ref":"order-1","sent_at":"10:00"}`)
	retry, _ := h.post("/x/emails", `{"ref":"order-1","template":"receipt","to":"ana@example.com","sent_at":"10:01"}`)
	other, _ := h.post("/x/emails", `{"to":"ana@example.com","template":"receipt","ref":"order-2","sent_at":"10:02"}`)
	if first.Header.Get(HeaderOutcome) != OutcomeForwarded || retry.Header.Get(HeaderOutcome) != OutcomeReplayed || other.Header.Get(HeaderOutcome) != OutcomeForwarded {
		t.Fatalf("outcomes %s, %s, %s; want forwarded, replayed, forwarded",
			first.Header.Get(HeaderOutcome), retry.Header.Get(HeaderOutcome), other.Header.Get(HeaderOutcome))
	}
	if got := retry.Header.Get("X-Message-Id"); got != "obj_1" {
		t.Errorf("replayed X-Message-Id = %q, want obj_1", got)
	}
	if n := p.effects.Load(); n != 2 {
		t.Fatalf("provider effects = %d, want 2", n)
	}
	st, err := h.j.Get(first.Header.Get(HeaderKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.OperationID != "obj_1" || st.Status != journal.StatusVerified {
		t.Fatalf("step %s operation id %q, want verified obj_1", st.Status, st.OperationID)
	}
}

// Deletes are verified before (the thing exists) and after (it is gone):
// a delete of a thing that is already gone is answered from the check,
// committed as already done, and never sent; a delete of a thing that
// exists is sent once and verified gone.
func TestDeleteVerifiedBeforeAndAfter(t *testing.T) {
	h, p := startProvider(t, harnessConfig{}, func(lk string) string {
		return `  - name: delete_thing
    match: DELETE /x/things/{id}
    effect: irreversible
    verify:
      before:
        request: GET ` + lk + `/x/messages/{{path.id}}
        expect: {status: 200}
      request: GET ` + lk + `/x/messages/{{path.id}}
      expect: {status: 404}
      within: 10s
      mode: sync
    outcome:
      already_done: {status: [404, 410]}
`
	})
	p.record("obj_1", map[string]any{"ref": "r"})
	var deletes atomic.Int64
	p.setRespond(func(w http.ResponseWriter, r *http.Request, id string) bool {
		deletes.Add(1)
		p.mu.Lock()
		delete(p.refs, strings.TrimPrefix(r.URL.Path, "/x/things/"))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"deleted":true}`)
		return false
	})
	gone, body := h.send(http.MethodDelete, "/x/things/obj_404", "")
	if gone.StatusCode != http.StatusNotFound || gone.Header.Get(HeaderOutcome) != OutcomeRecovered || deletes.Load() != 0 {
		t.Fatalf("delete of a gone thing: %d %s outcome %s, deletes %d", gone.StatusCode, body, gone.Header.Get(HeaderOutcome), deletes.Load())
	}
	st, err := h.j.Get(gone.Header.Get(HeaderKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != journal.StatusCommitted || st.Attempt != 0 || !strings.HasPrefix(st.Evidence, "already done") {
		t.Fatalf("gone step %s attempt %d evidence %q", st.Status, st.Attempt, st.Evidence)
	}
	ok, body := h.send(http.MethodDelete, "/x/things/obj_1", "")
	if ok.StatusCode != http.StatusOK || ok.Header.Get(HeaderOutcome) != OutcomeForwarded || deletes.Load() != 1 {
		t.Fatalf("delete of an existing thing: %d %s, deletes %d", ok.StatusCode, body, deletes.Load())
	}
	again, _ := h.send(http.MethodDelete, "/x/things/obj_1", "")
	if again.Header.Get(HeaderOutcome) != OutcomeReplayed || deletes.Load() != 1 {
		t.Fatalf("retry: outcome %s, deletes %d", again.Header.Get(HeaderOutcome), deletes.Load())
	}
	if st, _ := h.j.Get(ok.Header.Get(HeaderKey)); st.Status != journal.StatusVerified {
		t.Fatalf("existing thing's delete: %s, want verified gone", st.Status)
	}
}
