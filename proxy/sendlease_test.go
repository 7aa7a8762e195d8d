package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/problem"
)

// A provider that commits a call and then loses the connection before it
// answers: net/http re-sends such a request on its own, once, on a new
// connection, when it carries an Idempotency-Key and the connection was
// reused. toolguard decides every send, so the provider sees the call
// once, the outcome is unknown, and the journal counts one attempt.
func TestTransportNeverResendsAGuardedCall(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: `  - name: charge
    match: POST /x/charges
    effect: irreversible
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
`})
	var effects atomic.Int64
	var drop http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		effects.Add(1)
		if bytes.Contains(body, []byte("drop")) {
			panic(http.ErrAbortHandler) // the answer is lost with the connection
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"ch_1"}`)
	})
	h.up.extra.Store(&drop)
	// The first call leaves a connection in the pool, so that the second
	// reuses it: the case net/http retries.
	if r, body := h.post("/x/charges", `{"amount":1}`, "Authorization", "Bearer a"); r.StatusCode != 200 {
		t.Fatalf("first call: %d %s", r.StatusCode, body)
	}
	r, body := h.post("/x/charges", `{"amount":2,"note":"drop"}`, "Authorization", "Bearer a")
	if got := effects.Load(); got != 2 {
		t.Fatalf("provider saw %d calls, want 2 (one each; the transport re-sent the second)", got)
	}
	if r.StatusCode != http.StatusGatewayTimeout || !strings.Contains(body, problem.OutcomeUnknown) {
		t.Fatalf("lost answer: %d %s, want 504 outcome-unknown", r.StatusCode, body)
	}
	st, err := h.j.Get(r.Header.Get(HeaderKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempt != 1 || st.Status != journal.StatusStarted {
		t.Fatalf("step = %s attempt %d, want started after 1 attempt", st.Status, st.Attempt)
	}
}

// slowJournal delays the acknowledgement of the first claim (a started
// step) past the lease: the claim is written, the answer comes late.
type slowJournal struct {
	journal.Store
	delay time.Duration
	once  atomic.Bool
}

func (j *slowJournal) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	st, err := j.Store.Apply(ctx, key, m)
	if err == nil && st.Status == journal.StatusStarted && j.once.CompareAndSwap(false, true) {
		time.Sleep(j.delay) // the fault: an acknowledgement that arrives late
	}
	return st, err
}

// A claim whose acknowledgement arrives after its lease ended is not sent:
// the lease counts from before the claim went out, not from its answer.
// Nothing reached the provider, the agent is told so, and its retry sends.
func TestNoSendAfterTheLeaseEnded(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Lease: 200 * time.Millisecond},
		WrapJournal: func(j journal.Store) journal.Store { return &slowJournal{Store: j, delay: 400 * time.Millisecond} }})
	r, body := h.post("/v1/invoices", `{"customer":"c1","amount":1}`, "Authorization", "Bearer a")
	if got := h.up.effects.Load(); got != 0 {
		t.Fatalf("upstream effects = %d after a late claim acknowledgement, want 0", got)
	}
	if r.StatusCode != http.StatusBadGateway || !strings.Contains(body, "nothing was sent") {
		t.Fatalf("late claim: %d %s, want 502 nothing was sent", r.StatusCode, body)
	}
	if !strings.Contains(h.logs.String(), "not sent: the claim's lease ended before the call was sent") {
		t.Fatal("the refusal is not logged")
	}
	r, body = h.post("/v1/invoices", `{"customer":"c1","amount":1}`, "Authorization", "Bearer a")
	if r.StatusCode != http.StatusCreated || h.up.effects.Load() != 1 {
		t.Fatalf("retry: %d %s, effects %d; want 201 and one effect", r.StatusCode, body, h.up.effects.Load())
	}
}

// A stored answer that kept no header at all is replayed, not dropped
// (the replay used to write into a nil header and lose the connection).
func TestReplayOfAnAnswerWithoutHeaders(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: `  - name: charge
    match: POST /x/charges
    effect: irreversible
`})
	var effects atomic.Int64
	var bare http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		effects.Add(1)
		w.Header()["Content-Type"] = nil // no sniffed type
		w.Header()["Date"] = nil
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "ok")
	})
	h.up.extra.Store(&bare)
	for i := range 2 {
		r, body := h.post("/x/charges", `{"amount":1}`, "Authorization", "Bearer a")
		if r.StatusCode != http.StatusCreated || body != "ok" {
			t.Fatalf("call %d: %d %q, want 201 ok", i+1, r.StatusCode, body)
		}
	}
	if got := effects.Load(); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

// Calls that provably never reached the provider (it is not up yet) do
// not spend the retry budget: the quick start's first curls, sent before
// its demo API listened, used to end the step needs_review after three.
func TestRefusedConnectionsDoNotSpendTheRetryBudget(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{MaxAttempts: 3}})
	h.up.Close() // nothing listens on its port now
	for i := range 5 {
		r, body := h.post("/v1/invoices", `{"customer":"c1","amount":1}`, "Authorization", "Bearer a")
		if r.StatusCode != http.StatusBadGateway || !strings.Contains(body, problem.UpstreamUnreachable) {
			t.Fatalf("call %d with the provider down: %d %s, want 502 upstream-unreachable", i+1, r.StatusCode, body)
		}
	}
	st, err := h.j.Get(h.stepKeys()[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Held() || st.Attempt != 0 {
		t.Fatalf("after 5 refused connections: hold %q, attempt %d; want not held, 0 attempts", st.Hold, st.Attempt)
	}
}

// A route is matched after the path is cleaned: `//v1/invoices` and
// `/v1/./invoices`, which the provider's server takes for /v1/invoices,
// are guarded as that route, never passed through unguarded.
func TestRouteMatchedInEveryPathSpelling(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	// The test provider's ServeMux redirects such paths; the agent here
	// does not follow redirects, so the answer is the first one.
	noFollow := *h.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h.client = &noFollow
	for _, p := range []string{"//v1/invoices", "/v1/./invoices", "/x/../v1/invoices", "/v1//invoices"} {
		r, body := h.post(p, `{"customer":"c-`+p+`","amount":1}`, "Authorization", "Bearer a")
		if out := r.Header.Get(HeaderOutcome); out == OutcomePassthrough || out == "" {
			t.Errorf("POST %s: outcome %q (%d %s), want it guarded", p, out, r.StatusCode, body)
		}
	}
}
