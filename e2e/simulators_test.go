package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Recovery strategies of the provider simulator.
const (
	simHeader = "native-header" // dedupes on the Idempotency-Key header
	simBody   = "native-body"   // dedupes on idempotency_key in the JSON body (Square)
	simInject = "inject-lookup" // no idempotency; stores toolguard_ref, searchable at once
	simSettle = "settle-lookup" // as inject, but the search shows an order only simLag after it
	simNone   = "no-lookup"     // no idempotency, no search
)

// simLag is how long the settle simulator's search misses a new order.
const simLag = 4 * time.Second

// sim is a provider simulator: POST /v1/orders commits one effect per
// call (deduped as its strategy says), GET /v1/orders/search?ref= finds
// orders by the stored reference.
type sim struct {
	*httptest.Server
	strategy string
	effects  atomic.Int64
	absent   atomic.Int64 // searches answered with no order
	mu       sync.Mutex
	byIdem   map[string]string // native key → the first answer
	orders   []simOrder
	arrivals []time.Time // of every POST, effect or not
	hookMu   sync.Mutex
	hook     func(stage string) bool // as upstream.hook: "before" false drops the call
}

type simOrder struct {
	id, ref string
	at      time.Time
	answer  string
}

func newSim(t *testing.T, strategy string) *sim {
	s := &sim{strategy: strategy, byIdem: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/orders", s.create)
	mux.HandleFunc("GET /v1/orders/search", s.search)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *sim) setHook(h func(stage string) bool) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.hook = h
}

func (s *sim) runHook(stage string) bool {
	s.hookMu.Lock()
	h := s.hook
	s.hookMu.Unlock()
	return h == nil || h(stage)
}

func (s *sim) create(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Reference      string `json:"reference"`
		IdempotencyKey string `json:"idempotency_key"`
		ToolguardRef   string `json:"toolguard_ref"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.arrivals = append(s.arrivals, time.Now())
	s.mu.Unlock()
	if !s.runHook("before") {
		panic(http.ErrAbortHandler) // the connection drops; no effect
	}
	idem := ""
	switch s.strategy {
	case simHeader:
		idem = r.Header.Get("Idempotency-Key")
	case simBody:
		idem = body.IdempotencyKey
	}
	s.mu.Lock()
	answer, replayed := s.byIdem[idem]
	if !replayed || idem == "" {
		n := s.effects.Add(1)
		answer = fmt.Sprintf(`{"id":"ord_%d","object":"order","reference":%q}`, n, body.Reference)
		s.orders = append(s.orders, simOrder{id: fmt.Sprintf("ord_%d", n), ref: body.ToolguardRef, at: time.Now(), answer: answer})
		if idem != "" {
			s.byIdem[idem] = answer
		}
		replayed = false
	}
	s.mu.Unlock()
	if !replayed {
		s.runHook("after")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, answer)
}

// search answers the orders with the reference, except, for the settle
// strategy, those younger than simLag.
func (s *sim) search(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("ref")
	var found []json.RawMessage
	s.mu.Lock()
	for _, o := range s.orders {
		if o.ref != ref || ref == "" || (s.strategy == simSettle && time.Since(o.at) < simLag) {
			continue
		}
		found = append(found, json.RawMessage(o.answer))
	}
	s.mu.Unlock()
	if len(found) == 0 {
		s.absent.Add(1)
		found = []json.RawMessage{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"orders": found})
}

// simRules is the rule file of a simulator strategy and route effect.
func simRules(strategy, effect, host string) string {
	route := fmt.Sprintf(`  - name: create_order
    match: POST /v1/orders
    effect: %s
    key: {fields: [customer, amount, reference]}
    operation_id: body:id
`, effect)
	lookup := fmt.Sprintf(`    inject: {body: toolguard_ref}
    lookup:
      request: GET http://%s/v1/orders/search?ref={{key}}
      found: {status: 200, body: {"orders.#": "1"}}
      absent: {status: 200, body: {"orders.#": "0"}}
      operation_id: body:orders.0.id
      answer: {body: orders.0, status: 201}
`, host)
	switch strategy {
	case simHeader:
		route += "    native_idempotency: {header: Idempotency-Key}\n"
	case simBody:
		route += "    native_idempotency: {body: idempotency_key}\n"
	case simInject:
		route += lookup
	case simSettle:
		route += lookup + fmt.Sprintf("      settle: %s\n", simLag+2*time.Second)
	}
	return fmt.Sprintf("version: v1\napi: shop\nhosts: [%q]\ncredential: {header: Authorization}\nroutes:\n%s", host, route)
}

// simAgentCalls numbers the agent's calls: each carries a fresh
// idempotency_key of its own, as SDKs mint one per call.
var simAgentCalls atomic.Int64

func simOrderBody() string {
	return fmt.Sprintf(`{"customer":"c1","amount":4200,"reference":"order-77","idempotency_key":"agent-%d"}`, simAgentCalls.Add(1))
}

// simRetry is an agent that honours 409 in-progress: it retries until it
// gets any other answer, and reports how many in-progress answers it got
// (each must carry Retry-After).
func simRetry(t *testing.T, c *http.Client, u string) (resp *http.Response, body string, inProgress int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, b := post(t, c, u, simOrderBody())
		if r.StatusCode != http.StatusConflict || !strings.Contains(b, "urn:toolguard:in-progress") || time.Now().After(deadline) {
			return r, b, inProgress
		}
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("409 in-progress without Retry-After: %s", b)
		}
		inProgress++
		time.Sleep(50 * time.Millisecond) // the agent's retry backoff
	}
}

// killSimMidCall sends one guarded call and SIGKILLs toolguard while the
// simulator holds it at stage (see killMidCall).
func killSimMidCall(t *testing.T, p *proc, s *sim, stage string) {
	t.Helper()
	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	s.setHook(func(st string) bool {
		if st != stage {
			return true
		}
		once.Do(func() { close(reached) })
		<-release
		return stage == "after"
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", s.URL+"/v1/orders", strings.NewReader(simOrderBody()))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := p.client(t).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-reached
	p.kill()
	close(release)
	<-done
	s.setHook(nil)
}

// Each recovery strategy against a provider simulator, through the real
// binary: SIGKILL before and after the provider's effect, then eight
// agents retry at once. Native keys re-send and the provider dedupes; an
// injected reference is found by an exact lookup and answered in the
// provider's shape; an eventually consistent search that does not show the
// effect yet answers 409 in-progress with Retry-After until lookup.settle
// has passed, never a re-send; without a lookup an irreversible route is
// held, a reversible one re-sent (a second effect, on record).
func TestProviderSimulatorCrashMatrix(t *testing.T) {
	tests := []struct {
		strategy, effect, stage string
		wantStatus              int
		wantID                  string // the order id every answer names
		wantEffects             int64
		wantHold                string
		wantSettling            bool // in-progress answers while the search lags
	}{
		{strategy: simHeader, effect: "irreversible", stage: "before", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simHeader, effect: "irreversible", stage: "after", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simBody, effect: "irreversible", stage: "before", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simBody, effect: "irreversible", stage: "after", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simInject, effect: "irreversible", stage: "before", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simInject, effect: "irreversible", stage: "after", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simSettle, effect: "irreversible", stage: "before", wantStatus: 201, wantID: "ord_1", wantEffects: 1, wantSettling: true},
		{strategy: simSettle, effect: "irreversible", stage: "after", wantStatus: 201, wantID: "ord_1", wantEffects: 1, wantSettling: true},
		{strategy: simNone, effect: "irreversible", stage: "before", wantStatus: 409, wantEffects: 0, wantHold: "needs_review"},
		{strategy: simNone, effect: "irreversible", stage: "after", wantStatus: 409, wantEffects: 1, wantHold: "needs_review"},
		{strategy: simNone, effect: "reversible", stage: "before", wantStatus: 201, wantID: "ord_1", wantEffects: 1},
		{strategy: simNone, effect: "reversible", stage: "after", wantStatus: 201, wantID: "ord_2", wantEffects: 2},
	}
	for _, tc := range tests {
		t.Run(tc.strategy+"/"+tc.effect+"/kill-"+tc.stage, func(t *testing.T) {
			t.Parallel()
			sm := newSim(t, tc.strategy)
			s := newSetup(t, map[string]string{"shop.yaml": simRules(tc.strategy, tc.effect, sm.Listener.Addr().String())})
			s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=500ms")
			killSimMidCall(t, s.start(t), sm, tc.stage)
			p := s.start(t)
			c := p.client(t)

			const n = 8
			var wg sync.WaitGroup
			resps := make([]*http.Response, n)
			bodies := make([]string, n)
			waits := make([]int, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resps[i], bodies[i], waits[i] = simRetry(t, c, sm.URL+"/v1/orders")
				}()
			}
			wg.Wait()
			if got := sm.effects.Load(); got != tc.wantEffects {
				t.Fatalf("provider effects = %d, want %d", got, tc.wantEffects)
			}
			for i, r := range resps {
				if r.StatusCode != tc.wantStatus {
					t.Errorf("agent %d: status %d, want %d: %s", i, r.StatusCode, tc.wantStatus, bodies[i])
					continue
				}
				if tc.wantID == "" {
					continue
				}
				var order struct{ ID, Object, Reference string }
				if err := json.Unmarshal([]byte(bodies[i]), &order); err != nil || order.ID != tc.wantID || order.Object != "order" || order.Reference != "order-77" {
					t.Errorf("agent %d: answer %s, want the provider's order %s", i, bodies[i], tc.wantID)
				}
			}
			if tc.wantSettling {
				total := 0
				for _, w := range waits {
					total += w
				}
				// The search answered "absent" while the order was (or may
				// have been) on its way, and no agent's retry was re-sent.
				if total == 0 || sm.absent.Load() == 0 {
					t.Errorf("in-progress answers %d, absent searches %d: want both inside the settle window", total, sm.absent.Load())
				}
				sm.checkResendAfterSettle(t, tc.stage)
			}
			key := resps[0].Header.Get("Toolguard-Key")
			st := waitStep(t, p, key, func(map[string]any) bool { return true })
			if fmt.Sprint(st["hold"]) != tc.wantHold && !(tc.wantHold == "" && st["hold"] == nil) {
				t.Errorf("hold = %v, want %q", st["hold"], tc.wantHold)
			}
			if tc.wantID != "" && st["operation_id"] != tc.wantID {
				t.Errorf("operation_id = %v, want %s", st["operation_id"], tc.wantID)
			}
			if tc.strategy == simInject || tc.strategy == simSettle {
				sm.mu.Lock()
				if len(sm.orders) != 1 || sm.orders[0].ref != key {
					t.Errorf("stored references %+v, want the one order with toolguard_ref %s", sm.orders, key)
				}
				sm.mu.Unlock()
			}
			if tc.effect == "reversible" {
				checkResentOnRecord(t, p, key)
			}
			// A later duplicate is answered from the journal.
			r, b := post(t, c, sm.URL+"/v1/orders", simOrderBody())
			if r.StatusCode != tc.wantStatus || (tc.wantID != "" && !strings.Contains(b, tc.wantID)) {
				t.Errorf("later duplicate: %d %s", r.StatusCode, b)
			}
			if got := sm.effects.Load(); got != tc.wantEffects {
				t.Fatalf("provider effects after a later duplicate = %d, want %d", got, tc.wantEffects)
			}
		})
	}
}

// checkResendAfterSettle asserts the interrupted attempt was re-sent (when
// it took no effect) only once lookup.settle had passed since it started,
// and not at all when it had.
func (s *sim) checkResendAfterSettle(t *testing.T, stage string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if stage == "after" {
		if len(s.arrivals) != 1 {
			t.Errorf("%d sends reached the provider, want 1 (no re-send of an effect the search lagged on)", len(s.arrivals))
		}
		return
	}
	settle := simLag + 2*time.Second
	// The step is marked started a little before its send arrives.
	const slack = 250 * time.Millisecond
	if len(s.arrivals) != 2 || s.arrivals[1].Sub(s.arrivals[0]) < settle-slack {
		t.Errorf("sends at %v, want the re-send %v or more after the interrupted one", s.arrivals, settle)
	}
}

// checkResentOnRecord asserts the journal's events of key say that the
// reversible step was re-sent because it could not be queried.
func checkResentOnRecord(t *testing.T, p *proc, key string) {
	t.Helper()
	for _, e := range eventsOf(t, p) {
		if e["key"] == key && e["type"] == "resent" && e["reason"] == "re-send: route is reversible and cannot be queried" {
			return
		}
	}
	t.Errorf("no event of %s says the reversible step was re-sent: %v", key, eventsOf(t, p))
}
