package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

const optionalNoteRoute = `  - name: create_order
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [client, item, note]
      optional: [note]
    operation_id: body:id
`

// curlFormDeclared posts body with curl -d and no Content-Type of its own, as a
// user trying the proxy would: curl then declares a form.
func curlFormDeclared(t *testing.T, p *proc, url, body string) answer {
	t.Helper()
	cmd := exec.Command("curl", "-sS", "-i", "--max-time", "30", "-H", "Authorization: Bearer k1", "-d", body, url)
	cmd.Env = clientEnv(t, "http_proxy="+p.proxyURL.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl -d %s: %v\n%s", url, err, stderrOf(err))
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
	if err != nil {
		t.Fatalf("curl -d %s: read its answer: %v\n%s", url, err, out)
	}
	return answerOf(resp)
}

// decodeKeyFieldProblem decodes a problem+json answer.
func decodeKeyFieldProblem(t *testing.T, a answer) (typ, detail string) {
	t.Helper()
	var pb struct{ Type, Detail string }
	if err := json.Unmarshal([]byte(a.body), &pb); err != nil {
		t.Fatalf("answer %d is not problem JSON: %v\n%s", a.status, err, a.body)
	}
	return pb.Type, pb.Detail
}

// Regression: with a route keyed on fields [client, item], curl -d sent
// the JSON body as a form, every key field was null, and a second,
// different request was answered "replayed" with the first one's object.
// A JSON body that lacked the fields did the same.
func TestMissingKeyFieldsRefused(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed for this test: ", err)
	}
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), optionalNoteRoute)}).start(t)
	url := up.URL + "/v1/invoices"

	for _, body := range []string{`{"client":"a","item":"z"}`, `{"client":"b","item":"y"}`} {
		a := curlFormDeclared(t, p, url, body)
		typ, detail := decodeKeyFieldProblem(t, a)
		if a.status != 400 || typ != "urn:toolguard:invalid-body" || !strings.Contains(detail, "looks like JSON") {
			t.Fatalf("curl -d %s: %d %s %q, want 400 invalid-body saying the form body looks like JSON", body, a.status, typ, detail)
		}
	}
	if got := up.effects.Load(); got != 0 {
		t.Fatalf("upstream effects after curl -d = %d, want 0", got)
	}
	if steps := stepsOf(t, p, ""); len(steps) != 0 {
		t.Fatalf("journal holds %d steps after refused calls, want none: %v", len(steps), steps)
	}

	c := p.client(t)
	r, b := post(t, c, url, `{"client":"a","trace":"t1"}`, "Authorization", "Bearer k1")
	a := answer{status: r.StatusCode, body: b}
	typ, detail := decodeKeyFieldProblem(t, a)
	if want := `route billing/create_order: the body lacks required key field "item"`; r.StatusCode != 400 || typ != "urn:toolguard:invalid-body" || detail != want {
		t.Fatalf("JSON without item: %d %s %q, want 400 invalid-body %q", r.StatusCode, typ, detail, want)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	r, b = post(t, c, url, `{}`, "Authorization", "Bearer k1")
	if _, detail := decodeKeyFieldProblem(t, answer{status: r.StatusCode, body: b}); r.StatusCode != 400 || !strings.Contains(detail, `fields "client", "item"`) {
		t.Fatalf("empty JSON object: %d %q, want 400 naming client and item", r.StatusCode, detail)
	}
	if got := up.effects.Load(); got != 0 {
		t.Fatalf("upstream effects after refused calls = %d, want 0", got)
	}
	if steps := stepsOf(t, p, ""); len(steps) != 0 {
		t.Fatalf("journal holds %d steps after refused calls, want none", len(steps))
	}

	// The optional note may be left out: forwarded, and one effect.
	r, b = post(t, c, url, `{"client":"a","item":"z"}`, "Authorization", "Bearer k1")
	if r.StatusCode != 201 || r.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Fatalf("without the optional note: %d %s (%s), want 201 forwarded", r.StatusCode, b, r.Header.Get("Toolguard-Outcome"))
	}
	r, _ = post(t, c, url, `{"client":"a","item":"other"}`, "Authorization", "Bearer k1")
	if r.StatusCode != 201 || r.Header.Get("Toolguard-Outcome") != "forwarded" {
		t.Fatalf("another item: %d (%s), want 201 forwarded", r.StatusCode, r.Header.Get("Toolguard-Outcome"))
	}
	if got := up.effects.Load(); got != 2 {
		t.Fatalf("upstream effects = %d, want 2 (two intents)", got)
	}
}

// TestServeWarnsWithoutRoutes: a rules directory without rule files is
// not an error (every call follows the unmatched policy), but it is most
// often a wrong path, so serve says so loudly at start-up.
func TestServeWarnsWithoutRoutes(t *testing.T) {
	s := newSetup(t, map[string]string{"README.md": "rules go here"})
	p := s.start(t) // start returns once serve listens: the warning is written before
	var warned int
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "NO ROUTES") {
			warned++
			if rec["level"] != "WARN" || rec["rules_dir"] != s.rules {
				t.Errorf("warning = %v, want level WARN and rules_dir %s", rec, s.rules)
			}
		}
	}
	if warned != 1 {
		t.Fatalf("%d NO ROUTES warnings, want 1; log:\n%s", warned, p.logs.String())
	}
}
