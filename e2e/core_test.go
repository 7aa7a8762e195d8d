package e2e

import (
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const invoiceRoute = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
`

// stepsOf lists the proxy's journal through the admin API.
func stepsOf(t *testing.T, p *proc, query string) []map[string]any {
	t.Helper()
	var out struct {
		Steps []map[string]any `json:"steps"`
	}
	if code := p.admin(t, "GET", "/v1/steps"+query, nil, &out); code != 200 {
		t.Fatalf("GET /v1/steps%s: %d", query, code)
	}
	return out.Steps
}

// eventsOf lists the proxy's event log through the admin API.
func eventsOf(t *testing.T, p *proc) []map[string]any {
	t.Helper()
	var out struct {
		Events []map[string]any `json:"events"`
	}
	if code := p.admin(t, "GET", "/v1/events", nil, &out); code != 200 {
		t.Fatalf("GET /v1/events: %d", code)
	}
	return out.Events
}

func TestReplayWithIgnoredFieldChanged(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			up := newUpstream(t, scheme == "https")
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
			if scheme == "https" {
				s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
			}
			p := s.start(t)
			c := p.client(t)

			r1, b1 := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":100,"trace_id":"a"}`, "Authorization", "Bearer k1")
			r2, b2 := post(t, c, up.URL+"/v1/invoices", `{ "amount": 100.0, "customer":"c1", "trace_id":"b"}`, "Authorization", "Bearer k1")

			if got := up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects = %d, want 1", got)
			}
			if r1.StatusCode != 201 || r2.StatusCode != 201 {
				t.Fatalf("status = %d, %d; want 201, 201", r1.StatusCode, r2.StatusCode)
			}
			if got := r1.Header.Get("Toolguard-Outcome"); got != "forwarded" {
				t.Errorf("first outcome = %q, want forwarded", got)
			}
			if got := r2.Header.Get("Toolguard-Outcome"); got != "replayed" {
				t.Errorf("second outcome = %q, want replayed", got)
			}
			if got := r2.Header.Get("Idempotent-Replayed"); got != "true" {
				t.Errorf("Idempotent-Replayed = %q, want true", got)
			}
			if r1.Header.Get("Toolguard-Key") == "" || r1.Header.Get("Toolguard-Key") != r2.Header.Get("Toolguard-Key") {
				t.Errorf("keys differ or are empty: %q vs %q", r1.Header.Get("Toolguard-Key"), r2.Header.Get("Toolguard-Key"))
			}
			if b1 != b2 {
				t.Errorf("replayed body differs:\n%s\n%s", b1, b2)
			}
			if r2.Header.Get("Set-Cookie") != "" {
				t.Errorf("replay carries Set-Cookie %q; cookies are never stored", r2.Header.Get("Set-Cookie"))
			}
			steps := stepsOf(t, p, "")
			if len(steps) != 1 || steps[0]["status"] != "committed" || steps[0]["operation_id"] != "inv_1" {
				t.Fatalf("journal = %v, want one committed step with operation_id inv_1", steps)
			}
		})
	}
}

func TestDistinctIntents(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	for _, body := range []string{`{"customer":"c1","amount":100}`, `{"customer":"c1","amount":101}`, `{"customer":"c2","amount":100}`} {
		r, _ := post(t, c, up.URL+"/v1/invoices", body)
		if r.Header.Get("Toolguard-Outcome") != "forwarded" {
			t.Errorf("%s: outcome %q, want forwarded", body, r.Header.Get("Toolguard-Outcome"))
		}
	}
	if got := up.effects.Load(); got != 3 {
		t.Fatalf("upstream effects = %d, want 3", got)
	}
}

func TestConcurrentDuplicatesOneEffect(t *testing.T) {
	up := newUpstream(t, false)
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			arrived <- struct{}{}
			<-release
		}
		return true
	})
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	const n = 16
	var wg sync.WaitGroup
	bodies := make([]string, n)
	outcomes := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, b := post(t, c, up.URL+"/v1/invoices", `{"customer":"c9","amount":5}`)
			bodies[i], outcomes[i] = b, r.Header.Get("Toolguard-Outcome")
		}(i)
	}
	<-arrived // the first call reached the upstream; the others wait in the proxy
	close(release)
	wg.Wait()
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	forwarded := 0
	for i := range bodies {
		if bodies[i] != bodies[0] {
			t.Errorf("answer %d differs: %s vs %s", i, bodies[i], bodies[0])
		}
		if outcomes[i] == "forwarded" {
			forwarded++
		}
	}
	if forwarded != 1 {
		t.Errorf("forwarded answers = %d, want 1 (outcomes %v)", forwarded, outcomes)
	}
}

func TestFormBodyFieldOrder(t *testing.T) {
	up := newUpstream(t, false)
	route := `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [customer, amount, "items"]
`
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route)}).start(t)
	c := p.client(t)
	for _, form := range []string{"customer=c1&amount=100&items=a&items=b&trace=1", "items=a&trace=2&amount=100&items=b&customer=c1"} {
		resp, err := c.PostForm(up.URL+"/v1/invoices", mustQuery(form))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
}

func mustQuery(s string) url.Values {
	v, err := url.ParseQuery(s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestPassthroughStreams(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	resp, body := do(t, c, mustRequest("GET", up.URL+"/v1/stream"))
	if body != "chunk-0\nchunk-1\nchunk-2\n" {
		t.Fatalf("body = %q", body)
	}
	if got := resp.Header.Get("Toolguard-Outcome"); got != "passthrough" {
		t.Errorf("outcome = %q, want passthrough", got)
	}
	// Unmatched POSTs pass through too, and are never journaled.
	post(t, c, up.URL+"/v1/emails", `{"to":"a"}`)
	post(t, c, up.URL+"/v1/emails", `{"to":"a"}`)
	if got := up.effects.Load(); got != 2 {
		t.Errorf("unmatched effects = %d, want 2", got)
	}
	if steps := stepsOf(t, p, ""); len(steps) != 0 {
		t.Errorf("journal has %d steps after passthrough calls, want 0", len(steps))
	}
}

func mustRequest(method, u string) *http.Request {
	r, err := http.NewRequest(method, u, nil)
	if err != nil {
		panic(err)
	}
	return r
}

func TestCredentialScoping(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	r1, b1 := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1"}`, "Authorization", "Bearer tenant-a")
	r2, b2 := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1"}`, "Authorization", "Bearer tenant-b")
	if got := up.effects.Load(); got != 2 {
		t.Fatalf("upstream effects = %d, want 2 (one per credential)", got)
	}
	if r1.Header.Get("Toolguard-Key") == r2.Header.Get("Toolguard-Key") {
		t.Error("two credentials got the same key")
	}
	if !strings.Contains(b1, "tenant-a") || !strings.Contains(b2, "tenant-b") || r2.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Errorf("cross-tenant replay: %s / %s", b1, b2)
	}
}

func TestDurableAcrossRestart(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	_, b1 := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1"}`)
	p.kill() // SIGKILL: nothing is flushed on the way out

	p2 := s.start(t)
	r2, b2 := post(t, p2.client(t), up.URL+"/v1/invoices", `{"customer":"c1"}`)
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream effects = %d, want 1", got)
	}
	if r2.Header.Get("Toolguard-Outcome") != "replayed" || b1 != b2 {
		t.Fatalf("after restart: outcome %q body %s, want replayed %s", r2.Header.Get("Toolguard-Outcome"), b2, b1)
	}
}

func TestBadInput(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_MAX_BODY=1KiB")
	p := s.start(t)
	c := p.client(t)
	post(t, c, up.URL+"/v1/invoices", `{"customer":"kept"}`)

	cases := []struct {
		name, body, problem string
		status              int
	}{
		{"unparseable", `{"customer":`, "urn:toolguard:invalid-body", 400},
		{"too large", `{"customer":"` + strings.Repeat("x", 2048) + `"}`, "urn:toolguard:body-too-large", 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, b := post(t, c, up.URL+"/v1/invoices", tc.body)
			if r.StatusCode != tc.status || !strings.Contains(b, tc.problem) || r.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("got %d %s %s, want %d %s", r.StatusCode, r.Header.Get("Content-Type"), b, tc.status, tc.problem)
			}
		})
	}
	if got := up.effects.Load(); got != 1 {
		t.Errorf("upstream effects = %d, want 1 (bad input is never forwarded)", got)
	}
	steps := stepsOf(t, p, "")
	if len(steps) != 1 || steps[0]["status"] != "committed" {
		t.Errorf("journal = %v, want the one committed step, untouched", steps)
	}
}

func TestBrokenRulesRefuseStart(t *testing.T) {
	s := newSetup(t, map[string]string{"bad.yaml": "api: billing\nhosts: [x.example]\nroutes:\n  - name: a\n    match: POST /v1/x\n    effect: maybe\n"})
	out, err := exec.Command(binary, "serve", "--rules", s.rules, "--journal", s.dir+"/tg.db", "--ca-dir", s.dir+"/ca",
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatalf("serve started with a broken rule file:\n%s", out)
	}
	if !strings.Contains(string(out), "bad.yaml:6:13:") {
		t.Fatalf("error does not name file:line:col:\n%s", out)
	}
}

func TestUpstreamUnreachableIsRetryable(t *testing.T) {
	up := newUpstream(t, false)
	host := up.host()
	up.Close() // nothing listens there now
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(host, invoiceRoute)}).start(t)
	r, b := post(t, p.client(t), "http://"+host+"/v1/invoices", `{"customer":"c1"}`)
	if r.StatusCode != 502 || !strings.Contains(b, "urn:toolguard:upstream-unreachable") {
		t.Fatalf("got %d %s, want 502 upstream-unreachable", r.StatusCode, b)
	}
	steps := stepsOf(t, p, "?status=failed")
	if len(steps) != 1 || steps[0]["retryable"] != true {
		t.Fatalf("journal = %v, want one failed, retryable step", steps)
	}
}

func TestUpstream5xxIsOutcomeUnknown(t *testing.T) {
	up := newUpstream(t, false)
	up.status.Store(503)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	r, b := post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"c1"}`)
	if r.StatusCode != 504 || !strings.Contains(b, "urn:toolguard:outcome-unknown") {
		t.Fatalf("got %d %s, want 504 outcome-unknown", r.StatusCode, b)
	}
	if steps := stepsOf(t, p, "?status=started"); len(steps) != 1 {
		t.Fatalf("journal = %v, want the step still started", steps)
	}
}

func TestDefinitiveFailureIsReplayed(t *testing.T) {
	up := newUpstream(t, false)
	up.status.Store(422)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	c := p.client(t)
	r1, b1 := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	r2, b2 := post(t, c, up.URL+"/v1/invoices", invoiceBody)
	if r1.StatusCode != 422 || r1.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Fatalf("first: %d %q", r1.StatusCode, r1.Header.Get("Toolguard-Outcome"))
	}
	if r2.StatusCode != 422 || r2.Header.Get("Toolguard-Outcome") != "replayed" || b1 != b2 {
		t.Fatalf("second: %d %q %s, want the stored 422 replayed", r2.StatusCode, r2.Header.Get("Toolguard-Outcome"), b2)
	}
	if got := up.effects.Load(); got != 1 {
		t.Fatalf("upstream calls = %d, want 1", got)
	}
	steps := stepsOf(t, p, "?status=failed")
	if len(steps) != 1 || steps[0]["retryable"] == true {
		t.Fatalf("journal = %v, want one definitive failure", steps)
	}
}
