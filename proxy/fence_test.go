package proxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// scriptedTransport answers upstream calls in order: call i gets
// answers[i]; a call whose gate is set waits for it, ignoring its context,
// like a worker delayed past its lease.
type scriptedTransport struct {
	calls   atomic.Int64
	reached []chan struct{}
	gates   []chan struct{}
	answers []string
}

func (s *scriptedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	i := int(s.calls.Add(1)) - 1
	if i < len(s.reached) && s.reached[i] != nil {
		close(s.reached[i])
	}
	if i < len(s.gates) && s.gates[i] != nil {
		<-s.gates[i]
	}
	if i < len(s.answers) && s.answers[i] == "hang" {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	body := s.answers[min(i, len(s.answers)-1)]
	return &http.Response{StatusCode: 201, Status: "201 Created", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// fakeClock is a settable lease clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type testProxy struct {
	srv     *Server
	j       *bolt.Journal
	client  *http.Client
	logs    *syncBuffer
	clock   *fakeClock
	baseURL string
}

// newTestProxy runs a proxy with one route of api.test, whose upstream is
// the simulator tr (see serveSim).
func newTestProxy(t *testing.T, route string, tr http.RoundTripper, opts Options) *testProxy {
	t.Helper()
	const host = "api.test:80"
	return newSetProxy(t, "test.yaml", "api: test\nhosts: [\"api.test\"]\ncredential: {header: Authorization}\nroutes:\n"+route, host, tr, opts)
}

// newSetProxy is newTestProxy for the rule file text; the client's
// requests go to http://host, on the simulator's port.
func newSetProxy(t *testing.T, file, text, host string, tr http.RoundTripper, opts Options) *testProxy {
	t.Helper()
	up := serveSim(t, tr)
	api, err := rules.Parse(file, []byte(up.at(text)))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if errs := j.Check(); len(errs) > 0 {
			t.Errorf("journal check: %v", errs)
		}
		j.Close()
	})
	opts = up.options(opts)
	opts.Rules, opts.Journal, opts.Logger, opts.Secret = set, j, log, []byte("0123456789abcdef0123456789abcdef")
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Now()}
	srv.now = clock.now
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	pu, _ := url.Parse(ts.URL)
	return &testProxy{srv: srv, j: j, logs: logs, clock: clock, baseURL: up.at("http://" + host),
		client: &http.Client{Transport: credentialed{&http.Transport{Proxy: http.ProxyURL(pu)}}}}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (p *testProxy) post(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	resp, err := p.client.Post(p.baseURL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const nativeRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
`

// A worker delayed past its lease: its step is taken over by a retry, and
// its late outcome write is refused by the fencing token.
func TestStaleOwnerLateWriteRejected(t *testing.T) {
	tr := &scriptedTransport{
		reached: []chan struct{}{make(chan struct{})},
		gates:   []chan struct{}{make(chan struct{})},
		answers: []string{`{"id":"late"}`, `{"id":"second"}`},
	}
	p := newTestProxy(t, nativeRoute, tr, Options{UpstreamTimeout: time.Hour})
	type res struct {
		resp *http.Response
		body string
	}
	first := make(chan res, 1)
	go func() {
		r, b := p.post(t, "/v1/things", `{"n":1}`)
		first <- res{r, b}
	}()
	<-tr.reached[0]
	p.clock.add(2 * time.Hour) // the first call's lease has ended

	r2, b2 := p.post(t, "/v1/things", `{"n":1}`)
	if r2.Header.Get(HeaderOutcome) != OutcomeRecovered || !strings.Contains(b2, "second") {
		t.Fatalf("takeover: %q %s, want recovered second", r2.Header.Get(HeaderOutcome), b2)
	}
	close(tr.gates[0]) // the stale owner finishes now
	r1 := <-first
	if !strings.Contains(r1.body, "second") || r1.resp.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Fatalf("stale owner answered %q %s, want the journal's replayed answer", r1.resp.Header.Get(HeaderOutcome), r1.body)
	}
	st, err := p.j.Get(r2.Header.Get(HeaderKey))
	if err != nil {
		t.Fatal(err)
	}
	if st.OperationID != "second" || st.Attempt != 2 {
		t.Fatalf("journal: operation %q attempt %d, want second, 2", st.OperationID, st.Attempt)
	}
	if !strings.Contains(p.logs.String(), "fenc") {
		t.Errorf("the rejected late write was not logged:\n%s", p.logs.String())
	}
}

// An upstream call that hangs past its deadline ends as outcome-unknown and
// the step stays started.
func TestUpstreamHangIsOutcomeUnknown(t *testing.T) {
	tr := &scriptedTransport{answers: []string{"hang"}}
	p := newTestProxy(t, nativeRoute, tr, Options{UpstreamTimeout: 50 * time.Millisecond})
	r, b := p.post(t, "/v1/things", `{"n":1}`)
	if r.StatusCode != http.StatusGatewayTimeout || !strings.Contains(b, problem.OutcomeUnknown) {
		t.Fatalf("got %d %s, want 504 outcome-unknown", r.StatusCode, b)
	}
	st, _ := p.j.Get(r.Header.Get(HeaderKey))
	if st.Status != journal.StatusStarted || !strings.Contains(st.LastError, "deadline") {
		t.Fatalf("step %s %q, want started with a deadline error", st.Status, st.LastError)
	}
}

// Retryable failures re-execute at most MaxAttempts times, then are held.
func TestRetryBudget(t *testing.T) {
	var calls atomic.Int64
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls.Add(1)
		return &http.Response{StatusCode: 429, Status: "429 Too Many Requests", Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: req}, nil
	})
	p := newTestProxy(t, nativeRoute, tr, Options{MaxAttempts: 2})
	for i, want := range []int{429, 429, 409, 409} {
		r, b := p.post(t, "/v1/things", `{"n":1}`)
		if r.StatusCode != want {
			t.Fatalf("call %d: %d %s, want %d", i, r.StatusCode, b, want)
		}
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("upstream calls = %d, want 2", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A 409 on a route with native idempotency means the key is in use by a
// request still executing at the provider (Stripe's answer): not a
// definitive failure. The next retry re-sends the key and gets the outcome.
func TestNativeKeyInUseIsNotFinal(t *testing.T) {
	var calls atomic.Int64
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status, body := 409, `{"error":{"type":"idempotency_error"}}`
		if calls.Add(1) > 1 {
			status, body = 201, `{"id":"pi_1"}`
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	})
	p := newTestProxy(t, nativeRoute, tr, Options{})
	if r, b := p.post(t, "/v1/things", `{"n":1}`); r.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("first: %d %s, want 504 outcome-unknown", r.StatusCode, b)
	}
	r, b := p.post(t, "/v1/things", `{"n":1}`)
	if r.StatusCode != 201 || r.Header.Get(HeaderOutcome) != OutcomeRecovered || !strings.Contains(b, "pi_1") {
		t.Fatalf("retry: %d %q %s, want 201 recovered", r.StatusCode, r.Header.Get(HeaderOutcome), b)
	}
}

// A verifier whose step was taken over meanwhile (an operator's decision
// claims the step) must not write its late answer.
func TestStaleVerifierIsFenced(t *testing.T) {
	probe, release := make(chan struct{}), make(chan struct{})
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		body := `{"id":"inv_1","status":"open"}`
		if req.Method == http.MethodGet {
			close(probe)
			<-release
		}
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	})
	route := nativeRoute + `    verify:
      request: GET http://api.test/v1/things/{{operation_id}}
      expect: {status: 200, body: {status: open}}
      within: 1h
`
	p := newTestProxy(t, route, tr, Options{})
	r, _ := p.post(t, "/v1/things", `{"n":1}`)
	key := r.Header.Get(HeaderKey)
	<-probe // the verifier is asking
	if _, err := p.j.Apply(context.Background(), key, func(cur *journal.Step) (journal.Change, error) {
		return journal.Change{Step: *cur, Event: "taken_over", Claim: true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	close(release)
	// The verifier gets its late answer and finishes.
	eventually(t, "the verifier finishes", func() bool { return !p.srv.verifications.Verifying(key) })
	st, _ := p.j.Get(key)
	if st.Status == journal.StatusVerified {
		t.Fatal("a stale verifier marked the step verified")
	}
	if !strings.Contains(p.logs.String(), "verification result discarded") {
		t.Errorf("the fenced verification was not logged:\n%s", p.logs.String())
	}
}

// Square caps idempotency_key at 45 characters: with
// native_idempotency.length the provider gets the key's first 45
// characters in the body, the same on the re-send after an unknown
// outcome.
func TestNativeKeyLengthInBody(t *testing.T) {
	var sent []string
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(req.Body)
		var body struct {
			IdempotencyKey string `json:"idempotency_key"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("upstream body %s: %v", b, err)
		}
		sent = append(sent, body.IdempotencyKey)
		status := 500
		if len(sent) > 1 {
			status = 200
		}
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"payment":{"id":"p1"}}`)), Request: req}, nil
	})
	p := newTestProxy(t, `  - name: pay
    match: POST /v2/payments
    effect: irreversible
    key: {fields: [amount_money, reference_id]}
    native_idempotency: {body: idempotency_key, length: 45}
`, tr, Options{})
	for range 2 {
		p.post(t, "/v2/payments", `{"idempotency_key":"sdk-1","amount_money":{"amount":100,"currency":"USD"},"reference_id":"o1"}`)
	}
	if len(sent) != 2 {
		t.Fatalf("upstream calls = %d, want 2 (a 500, then the re-send on the same key)", len(sent))
	}
	if len(sent[0]) != 45 || sent[0] != sent[1] {
		t.Fatalf("idempotency_key sent = %q, want the same 45 characters twice", sent)
	}
}
