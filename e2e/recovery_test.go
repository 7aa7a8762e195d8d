package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Route variants by recovery strategy. The lookup asks the upstream for an
// invoice by the caller's reference.
func recoveryRoute(strategy, host string) string {
	r := `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
`
	switch strategy {
	case "native":
		r += "    native_idempotency: {header: Idempotency-Key}\n"
	case "lookup":
		r += fmt.Sprintf(`    lookup:
      request: GET http://%s/v1/invoices?reference={{body.reference}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
`, host)
	}
	return r
}

const invoiceBody = `{"customer":"c1","amount":4200,"reference":"order-77","trace_id":"t1"}`

// killMidCall sends one guarded call and SIGKILLs toolguard while the
// upstream holds it: at "before", the upstream then drops the request with
// no effect; at "after", the effect is committed and the answer is lost.
func killMidCall(t *testing.T, p *proc, up *upstream, stage string, headers ...string) {
	t.Helper()
	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	up.setHook(func(s string, r *http.Request) bool {
		if s != stage {
			return true
		}
		once.Do(func() { close(reached) })
		<-release
		return stage == "after"
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", strings.NewReader(invoiceBody))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		if resp, err := p.client(t).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-reached
	p.kill()
	close(release)
	<-done
	up.setHook(nil)
}

// waitStep polls the admin API until the key's step satisfies ok.
func waitStep(t *testing.T, p *proc, key string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var st map[string]any
	eventually(t, "step "+key, func() bool {
		st = nil
		p.admin(t, "GET", "/v1/steps/"+key, nil, &st)
		return ok(st)
	})
	return st
}

// eventually polls an observable state (the admin API) until cond holds,
// for states reached by toolguard's background work (verification).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the expected state", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRecoveryAfterKill(t *testing.T) {
	tests := []struct {
		strategy, stage string
		wantStatus      int
		wantOutcome     string
		wantEffects     int64
		wantHold        string
	}{
		{strategy: "native", stage: "before", wantStatus: 201, wantOutcome: "recovered", wantEffects: 1},
		{strategy: "native", stage: "after", wantStatus: 201, wantOutcome: "recovered", wantEffects: 1},
		{strategy: "lookup", stage: "before", wantStatus: 201, wantOutcome: "recovered", wantEffects: 1},
		{strategy: "lookup", stage: "after", wantStatus: 200, wantOutcome: "recovered", wantEffects: 1},
		{strategy: "none", stage: "before", wantStatus: 409, wantOutcome: "blocked", wantEffects: 0, wantHold: "needs_review"},
		{strategy: "none", stage: "after", wantStatus: 409, wantOutcome: "blocked", wantEffects: 1, wantHold: "needs_review"},
	}
	for _, backend := range backends {
		for _, tc := range tests {
			t.Run(backend+"/"+tc.strategy+"/kill-"+tc.stage, func(t *testing.T) {
				up := newUpstream(t, false)
				s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(tc.strategy, up.host()))})
				s.useBackend(t, backend)
				// A short upstream timeout: an interrupted attempt settles soon.
				s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
				killMidCall(t, s.start(t), up, tc.stage)

				p := s.start(t)
				c := p.client(t)
				// Duplicate deliveries during recovery: eight agents retry at
				// once, each until it is told something other than in-progress.
				const n = 8
				var wg sync.WaitGroup
				resps := make([]*http.Response, n)
				bodies := make([]string, n)
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resps[i], bodies[i] = postUntilSettled(t, c, up.URL+"/v1/invoices", invoiceBody)
					}()
				}
				wg.Wait()
				if got := up.effects.Load(); got != tc.wantEffects {
					t.Fatalf("upstream effects = %d, want %d", got, tc.wantEffects)
				}
				recovered := 0
				for i, r := range resps {
					if r.StatusCode != tc.wantStatus {
						t.Errorf("retry %d: status %d, want %d: %s", i, r.StatusCode, tc.wantStatus, bodies[i])
					}
					if o := r.Header.Get("Toolguard-Outcome"); o == tc.wantOutcome {
						recovered++
					} else if o != "replayed" && o != tc.wantOutcome {
						t.Errorf("retry %d: outcome %q", i, o)
					}
				}
				if recovered == 0 {
					t.Errorf("no retry was answered %q", tc.wantOutcome)
				}
				key := resps[0].Header.Get("Toolguard-Key")
				st := waitStep(t, p, key, func(map[string]any) bool { return true })
				if st["hold"] != tc.wantHold {
					t.Errorf("hold = %v, want %q", st["hold"], tc.wantHold)
				}
				if tc.wantHold == "" && st["operation_id"] != "inv_1" {
					t.Errorf("operation_id = %v, want inv_1", st["operation_id"])
				}
				// After recovery, a later duplicate is answered from the journal.
				r, _ := post(t, c, up.URL+"/v1/invoices", invoiceBody)
				if tc.wantHold == "" && r.Header.Get("Toolguard-Outcome") != "replayed" && r.Header.Get("Toolguard-Outcome") != "recovered" {
					t.Errorf("later duplicate: outcome %q", r.Header.Get("Toolguard-Outcome"))
				}
				if got := up.effects.Load(); got != tc.wantEffects {
					t.Fatalf("upstream effects after a later duplicate = %d, want %d", got, tc.wantEffects)
				}
			})
		}
	}
}

// TestReviewResolve ends an ambiguous hold both ways, through the CLI.
func TestReviewResolve(t *testing.T) {
	for _, tc := range []struct {
		stage, outcome string
		wantStatus     int
		wantEffects    int64
	}{
		{stage: "after", outcome: "committed", wantStatus: 200, wantEffects: 1},
		{stage: "before", outcome: "not-executed", wantStatus: 201, wantEffects: 1},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			up := newUpstream(t, false)
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("none", up.host()))})
			killMidCall(t, s.start(t), up, tc.stage)
			p := s.start(t)
			c := p.client(t)
			r, _ := post(t, c, up.URL+"/v1/invoices", invoiceBody)
			key := r.Header.Get("Toolguard-Key")
			if r.StatusCode != 409 {
				t.Fatalf("status %d, want 409", r.StatusCode)
			}
			out, err := p.cli("review", "ls", "--admin", p.adminURL).CombinedOutput()
			if err != nil || !strings.Contains(string(out), key) || !strings.Contains(string(out), "outcome_unknown") {
				t.Fatalf("review ls: %v\n%s", err, out)
			}
			resolve := []string{"review", "resolve", key, "--outcome", tc.outcome, "--operation-id", "inv_1", "--note", "checked the dashboard", "--admin", p.adminURL}
			if tc.outcome == "not-executed" {
				// The killed process's attempt may still land for an
				// upstream timeout after it stopped: the CLI says so and
				// refuses without --force.
				out, err := p.cli(resolve...).CombinedOutput()
				if err == nil || !strings.Contains(string(out), "may still land at the provider") {
					t.Fatalf("review resolve not-executed inside the landing window: %v\n%s; want it refused with the reason", err, out)
				}
				resolve = append(resolve, "--force")
			}
			out, err = p.cli(resolve...).CombinedOutput()
			if err != nil {
				t.Fatalf("review resolve: %v\n%s", err, out)
			}
			// Resolving again is idempotent; approving a resolved key is a 409.
			if out, err := p.cli("review", "resolve", key, "--outcome", tc.outcome, "--admin", p.adminURL).CombinedOutput(); err != nil {
				t.Fatalf("second resolve: %v\n%s", err, out)
			}
			if out, err := p.cli("review", "approve", key, "--admin", p.adminURL).CombinedOutput(); err == nil || !strings.Contains(string(out), "409") {
				t.Fatalf("approve of a resolved key: %v\n%s", err, out)
			}
			r, body := post(t, c, up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("after resolve: %d %s, want %d", r.StatusCode, body, tc.wantStatus)
			}
			if tc.outcome == "committed" {
				var got map[string]string
				json.Unmarshal([]byte(body), &got)
				// The operator's note is operator-to-operator text: it stays in
				// the event and never reaches the agent.
				_, hasNote := got["note"]
				if got["resolved"] != "committed" || got["operation_id"] != "inv_1" || hasNote || r.Header.Get("Toolguard-Outcome") != "recovered" {
					t.Errorf("resolved answer = %s (outcome %q)", body, r.Header.Get("Toolguard-Outcome"))
				}
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Fatalf("upstream effects = %d, want %d", got, tc.wantEffects)
			}
			noted := false
			events := eventsOf(t, p)
			for _, e := range events {
				if e["type"] == "resolved" && e["note"] == "checked the dashboard" {
					noted = true
				}
			}
			if !noted {
				t.Errorf("no resolved event with the operator's note in %v", events)
			}
		})
	}
}

func TestUpstream500AfterEffect(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		up := newUpstream(t, false)
		p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("none", up.host()))}).start(t)
		up.status.Store(500)
		post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		up.status.Store(0)
		r, body := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		if r.StatusCode != 409 || !strings.Contains(body, "urn:toolguard:ambiguous-effect") || up.effects.Load() != 1 {
			t.Fatalf("retry after a 500: %d %s, effects %d; want 409 ambiguous-effect and 1 effect", r.StatusCode, body, up.effects.Load())
		}
	})
	for _, strategy := range []string{"native", "lookup"} {
		t.Run(strategy, func(t *testing.T) {
			up := newUpstream(t, false)
			p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(strategy, up.host()))}).start(t)
			c := p.client(t)
			up.status.Store(500)
			r, _ := post(t, c, up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != 504 {
				t.Fatalf("first answer %d, want 504 outcome-unknown", r.StatusCode)
			}
			up.status.Store(0)
			r, body := post(t, c, up.URL+"/v1/invoices", invoiceBody)
			if r.Header.Get("Toolguard-Outcome") != "recovered" || !strings.Contains(body, "inv_1") {
				t.Fatalf("retry: %d %q %s, want recovered inv_1", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
			}
			if got := up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects = %d, want 1", got)
			}
		})
	}
}

func TestVerification(t *testing.T) {
	route := verifyRoute
	t.Run("visible later", func(t *testing.T) {
		up := newUpstream(t, false)
		up.hide.Store(true)
		p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route(up.host(), "30s"))}).start(t)
		r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		key := r.Header.Get("Toolguard-Key")
		st := waitStep(t, p, key, func(st map[string]any) bool { return st["status"] != "" })
		if st["status"] != "committed" {
			t.Fatalf("status %v while the effect is withheld, want committed", st["status"])
		}
		up.show()
		waitStep(t, p, key, func(st map[string]any) bool { return st["status"] == "verified" })
	})
	t.Run("never visible", func(t *testing.T) {
		up := newUpstream(t, false)
		up.hide.Store(true)
		p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route(up.host(), "300ms"))}).start(t)
		r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		key := r.Header.Get("Toolguard-Key")
		st := waitStep(t, p, key, func(st map[string]any) bool { return st["hold"] != "" })
		if st["hold"] != "needs_review" || st["hold_reason"] != "effect_not_visible" || st["status"] != "committed" {
			t.Fatalf("step = %v, want committed, held needs_review effect_not_visible", st)
		}
	})
	t.Run("sync mode verifies before answering", func(t *testing.T) {
		up := newUpstream(t, false)
		sync := strings.Replace(route(up.host(), "30s"), "      within: 30s\n", "      within: 30s\n      mode: sync\n", 1)
		p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), sync)}).start(t)
		r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		var st map[string]any
		p.admin(t, "GET", "/v1/steps/"+r.Header.Get("Toolguard-Key"), nil, &st)
		if st["status"] != "verified" {
			t.Fatalf("status right after a sync-verified answer = %v, want verified", st["status"])
		}
	})
	t.Run("pending across a restart, with the caller's credential", func(t *testing.T) {
		up := newUpstream(t, false)
		up.hide.Store(true)
		up.requireAuth.Store(true)
		s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route(up.host(), "30s"))})
		p := s.start(t)
		r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody, "Authorization", "Bearer k1")
		key := r.Header.Get("Toolguard-Key")
		p.kill()
		up.show()
		p2 := s.start(t)
		// The credential was never stored: the resumed verification waits
		// for the same caller's next guarded call to lend it.
		post(t, p2.client(t), up.URL+"/v1/invoices", `{"customer":"other"}`, "Authorization", "Bearer k1")
		waitStep(t, p2, key, func(st map[string]any) bool { return st["status"] == "verified" })
	})
	t.Run("pending across a restart", func(t *testing.T) {
		up := newUpstream(t, false)
		up.hide.Store(true)
		// No caller comes back: the probe needs no credential lent.
		s := newSetup(t, map[string]string{"billing.yaml": sharedRuleFile(up.host(), route(up.host(), "30s"))})
		p := s.start(t)
		r, _ := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
		key := r.Header.Get("Toolguard-Key")
		p.kill()
		up.show()
		p2 := s.start(t)
		waitStep(t, p2, key, func(st map[string]any) bool { return st["status"] == "verified" })
	})
}

// postUntilSettled is an agent that honours 409 in-progress: it retries
// after a pause until it gets any other answer.
func postUntilSettled(t *testing.T, c *http.Client, u, body string) (*http.Response, string) {
	t.Helper()
	// On PostgreSQL a killed owner's lease (upstream timeout plus a grace)
	// must lapse before the step can be taken over.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, b := post(t, c, u, body)
		if r.StatusCode != http.StatusConflict || !strings.Contains(b, "urn:toolguard:in-progress") || time.Now().After(deadline) {
			return r, b
		}
		time.Sleep(50 * time.Millisecond) // the agent's retry backoff
	}
}

// Regression for the lookup race: after a crash, the provider may still be
// executing the interrupted request. A lookup that does not see it yet must
// not be taken as "absent" until the attempt has settled (an upstream
// timeout after it started), or the re-send would duplicate it.
func TestLookupWaitsForInterruptedAttempt(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute("lookup", up.host()))})
	s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=2s")
	killMidCall(t, s.start(t), up, "before") // the upstream dropped it: no effect yet
	p := s.start(t)
	c := p.client(t)
	r, body := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != 409 || !strings.Contains(body, "urn:toolguard:in-progress") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("retry right after the crash: %d %s, want 409 in-progress with Retry-After", r.StatusCode, body)
	}
	// The interrupted request lands at the provider late.
	req, _ := http.NewRequest("POST", up.URL+"/v1/invoices", strings.NewReader(invoiceBody))
	up.commit(req, []byte(invoiceBody))
	r, body = postUntilSettled(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.Header.Get("Toolguard-Outcome") != "recovered" || !strings.Contains(body, "inv_1") {
		t.Fatalf("after it settled: %d %q %s, want recovered from the lookup", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}
