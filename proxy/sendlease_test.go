package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
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

// Connecting is capped to the lease's end: a dial that outlasts it is
// abandoned, nothing is sent, and the attempt counts as not sent.
func TestWireCapsTheDialToTheLease(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(150 * time.Millisecond) // the fault: a dial slower than the lease
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	lease := lifecycle.NewLease(time.Now(), 100*time.Millisecond)
	ctx, w := watchWire(context.Background(), lease)
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(`{"a":1}`))
	noTransportResend(req, false)
	_, err := tr.RoundTrip(req)
	w.stop()
	if err == nil || !errors.Is(wireCause(ctx, err), errLeaseLapsed) {
		t.Fatalf("round trip after the lease: %v, want errLeaseLapsed", err)
	}
	if w.sent(err) {
		t.Fatal("a connection closed before writing counted as sent")
	}
	if got := requests.Load(); got != 0 {
		t.Fatalf("server got %d requests, want 0", got)
	}
}

// Connecting and writing are capped to the lease's end: a request still
// being written when the lease ends (a provider that stopped reading) is
// cancelled, and counts as possibly sent.
func TestWireCapsTheWriteToTheLease(t *testing.T) {
	stuck := make(chan struct{})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-stuck // reads no body: the client's write blocks once the buffers fill
	}))
	defer srv.Close()
	defer close(stuck)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	lease := lifecycle.NewLease(time.Now(), time.Second)
	ctx, w := watchWire(context.Background(), lease)
	body := bytes.Repeat([]byte("x"), 64<<20)
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, bytes.NewReader(body))
	noTransportResend(req, false)
	done := make(chan error, 1)
	go func() { _, err := tr.RoundTrip(req); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the write outlived its lease")
	}
	w.stop()
	if !errors.Is(wireCause(ctx, err), errLeaseLapsed) {
		t.Fatalf("round trip = %v, want it cancelled at the lease's end", err)
	}
	// The server may run its handler after the client gave up: wait for it
	// (under load the check used to race the handler's goroutine).
	for deadline := time.Now().Add(5 * time.Second); requests.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if requests.Load() != 1 || !w.sent(err) {
		t.Fatalf("requests = %d, sent = %v: a partly written request must count as possibly sent", requests.Load(), w.sent(err))
	}
}

// The last check is made when the transport hands the connection over,
// immediately before the request is written: after the lease, the
// connection is closed (nothing of the request is written) and the
// attempt counts as not sent. A second connection of one attempt, after
// the request was written whole, is the transport re-sending on its own:
// refused the same way.
func TestWireChecksTheLeaseOnTheConnection(t *testing.T) {
	lapsed := lifecycle.NewLease(time.Now().Add(-time.Hour), time.Second)
	_, w := watchWire(context.Background(), nil)
	w.lease = lapsed
	c1, c2 := net.Pipe()
	defer c2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: c1})
	if _, err := c1.Write([]byte("x")); err == nil {
		t.Fatal("the connection was not closed")
	}
	if w.sent(errors.New("closed")) {
		t.Fatal("a refused connection counted as sent")
	}

	_, w = watchWire(context.Background(), lifecycle.NewLease(time.Now(), time.Hour))
	a1, a2 := net.Pipe()
	defer a2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: a1})
	w.wrote.Store(true)
	b1, b2 := net.Pipe()
	defer b2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: b1})
	if _, err := b1.Write([]byte("x")); err == nil {
		t.Fatal("a re-send's connection was not closed")
	}
	w.stop()
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
