package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Faults between toolguard and its PostgreSQL journal, made by cutting
// toolguard's connections through a TCP proxy: toolguard never sends a call
// whose claim it could not commit, and never sends one twice.

// pgBehindCutter starts toolguard on a fresh database reached through a
// cutter.
func pgBehindCutter(t *testing.T, strategy string) (*upstream, *proc, *cutter) {
	t.Helper()
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(strategy, up.host()))})
	s.useBackend(t, "postgres")
	var dsn string
	for i, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, "TOOLGUARD_JOURNAL_DSN="); ok {
			u, err := url.Parse(v)
			if err != nil {
				t.Fatal(err)
			}
			cut := newCutter(t, u.Host)
			u.Host = cut.addr()
			dsn = u.String()
			s.env[i] = "TOOLGUARD_JOURNAL_DSN=" + dsn
			s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
			return up, s.start(t), cut
		}
	}
	t.Fatal("no DSN in the postgres setup")
	return nil, nil, nil
}

func readyz(t *testing.T, p *proc) int {
	t.Helper()
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}).Get(p.adminURL + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestDatabaseDownBeforeClaim(t *testing.T) {
	up, p, cut := pgBehindCutter(t, "lookup")
	c := p.client(t)
	cut.cut(true)
	r, body := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("guarded call with the database down: %d %s, want 503 with Retry-After", r.StatusCode, body)
	}
	if got := up.effects.Load(); got != 0 {
		t.Fatalf("upstream effects = %d with the journal down, want 0", got)
	}
	// Reads that no rule guards do not need the journal.
	if r, body := do(t, c, mustRequest("GET", up.URL+"/v1/ping")); r.StatusCode != 200 || body != "pong" {
		t.Fatalf("passthrough with the database down: %d %s", r.StatusCode, body)
	}
	eventually(t, "/readyz not ready", func() bool { return readyz(t, p) == http.StatusServiceUnavailable })
	cut.restore()
	eventually(t, "/readyz ready again", func() bool { return readyz(t, p) == http.StatusOK })
	r, body = post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Fatalf("after the database returned: %d %q %s, want forwarded", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}

// The journal goes away while the call is at the provider: the claim was
// committed, the outcome cannot be. The step stays started, and the retry
// after the database returns resolves it through the recovery table.
func TestDatabaseCutWhileCallIsAtProvider(t *testing.T) {
	for _, tc := range []struct {
		strategy, stage string
		wantEffects     int64
		wantStatus      int
	}{
		{strategy: "lookup", stage: "after", wantEffects: 1, wantStatus: 200},
		{strategy: "lookup", stage: "before", wantEffects: 1, wantStatus: 200},
		{strategy: "none", stage: "after", wantEffects: 1, wantStatus: 409},
	} {
		t.Run(tc.strategy+"/"+tc.stage, func(t *testing.T) {
			up, p, cut := pgBehindCutter(t, tc.strategy)
			c := p.client(t)
			up.setHook(func(stage string, r *http.Request) bool {
				if stage == tc.stage {
					cut.cut(true)
				}
				return true
			})
			r, body := post(t, c, up.URL+"/v1/invoices", invoiceBody)
			up.setHook(nil)
			if r.StatusCode < 500 {
				t.Fatalf("answer with the outcome unrecorded: %d %s, want a 5xx", r.StatusCode, body)
			}
			cut.restore()
			r, body = retryUntilAnswered(t, c, up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("retry after the database returned: %d %q %s, want %d", r.StatusCode, r.Header.Get("Toolguard-Outcome"), body, tc.wantStatus)
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Fatalf("upstream effects = %d, want %d", got, tc.wantEffects)
			}
		})
	}
}

// The database goes away twice under load: every intent ends with exactly
// one effect and a journaled step.
func TestDatabaseOutagesUnderLoad(t *testing.T) {
	up, p, cut := pgBehindCutter(t, "lookup")
	c := p.client(t)
	const intents = 20
	var wg sync.WaitGroup
	keys := make([]string, intents)
	errs := make(chan error, intents)
	for i := range intents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"customer":"c%d","amount":%d,"reference":"load-%d","trace_id":"t"}`, i, 100+i, i)
			r, b := retryUntilAnswered(t, c, up.URL+"/v1/invoices", body)
			if r.StatusCode != 201 && r.StatusCode != 200 {
				errs <- fmt.Errorf("intent %d: %d %s", i, r.StatusCode, b)
				return
			}
			keys[i] = r.Header.Get("Toolguard-Key")
		}()
	}
	for range 2 {
		time.Sleep(300 * time.Millisecond) // let calls get under way, then fail over
		cut.cut(true)
		time.Sleep(700 * time.Millisecond) // the outage
		cut.restore()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range intents {
		if n := up.effectsFor(fmt.Sprintf("load-%d", i)); n != 1 {
			t.Errorf("intent %d: %d effects, want 1", i, n)
		}
		if keys[i] == "" {
			continue
		}
		var st map[string]any
		if code := p.admin(t, "GET", "/v1/steps/"+keys[i], nil, &st); code != 200 {
			t.Errorf("intent %d: step %s not in the journal (%d)", i, keys[i], code)
		}
	}
}

// retryUntilAnswered retries a guarded call as an agent would while
// toolguard says to come back later (503, 504, 409 in-progress).
func retryUntilAnswered(t *testing.T, c *http.Client, u, body string) (*http.Response, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, b := post(t, c, u, body)
		retry := r.StatusCode == 503 || r.StatusCode == 504 ||
			(r.StatusCode == 409 && strings.Contains(b, "urn:toolguard:in-progress"))
		if !retry || time.Now().After(deadline) {
			return r, b
		}
		time.Sleep(100 * time.Millisecond) // the agent's retry backoff
	}
}
