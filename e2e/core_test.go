package e2e

import (
	"net/http"
	"os/exec"
	"strings"
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

func TestPassthroughStreams(t *testing.T) {
	up := newUpstream(t, false)
	// unlisted: pass, so that writes no route lists pass through as well.
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute) + "unlisted: pass\n"}).start(t)
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
