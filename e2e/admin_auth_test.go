package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// approvalRoute holds every invoice for an operator's approval.
const approvalRoute = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [customer]}
    approval: required
`

// TestAdminSecureByDefault: serve with no admin token configured generates
// one (0600, beside the journal, printed once, reused), refuses approvals
// without it, and the CLI finds it. Regression: with no token configured
// any request, an empty bearer included, was an operator, so the agent
// approved its own held call and got 201 forwarded.
func TestAdminSecureByDefault(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), approvalRoute)})
	p := s.start(t)
	path := filepath.Join(s.dir, "admin-token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no generated operator token: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	if p.token == "" || !strings.Contains(p.logs.String(), "operator token: "+p.token) {
		t.Errorf("the first start does not print the operator token:\n%s", p.logs.String())
	}

	c := p.client(t)
	r, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":5}`)
	key := r.Header.Get("Toolguard-Key")
	if r.StatusCode != http.StatusConflict || key == "" {
		t.Fatalf("held call: %d, key %q; want 409 awaiting approval", r.StatusCode, key)
	}
	for _, auth := range []string{"", "Bearer ", "Bearer  ", "Basic Og=="} {
		req, _ := http.NewRequest(http.MethodPost, p.adminURL+"/v1/steps/"+key+"/approve", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("approve with Authorization %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	if r, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":5}`); r.StatusCode != http.StatusConflict || up.effects.Load() != 0 {
		t.Fatalf("retry after refused approvals: %d, %d effects; want still held", r.StatusCode, up.effects.Load())
	}

	// The CLI reads the generated token beside the journal that
	// TOOLGUARD_JOURNAL_PATH names.
	if out, err := p.cli("review", "approve", key, "--admin", p.adminURL).CombinedOutput(); err != nil {
		t.Fatalf("review approve with the generated token: %v\n%s", err, out)
	}
	if r, _ := post(t, c, up.URL+"/v1/invoices", `{"customer":"c1","amount":5}`); r.Header.Get("Toolguard-Outcome") != "forwarded" || up.effects.Load() != 1 {
		t.Fatalf("retry after approval: %d %s, %d effects", r.StatusCode, r.Header.Get("Toolguard-Outcome"), up.effects.Load())
	}
	// Without a way to find it, the CLI says where it looked.
	res := tg(t, nil, "review", "ls", "--admin", p.adminURL)
	if res.code != 1 || !strings.Contains(res.stderr, "401") || !strings.Contains(res.stderr, "TOOLGUARD_JOURNAL_PATH") {
		t.Errorf("review ls without a token: exit %d, stderr %s; want 401 with a hint", res.code, res.stderr)
	}

	// A restart reuses the token, prints it no more, and logs its file.
	p.kill()
	p2 := s.start(t)
	if p2.token != p.token {
		t.Errorf("the restart changed the token")
	}
	if logs := p2.logs.String(); strings.Contains(logs, p.token) || !strings.Contains(logs, path) {
		t.Errorf("the restart's log holds the token, or not its file:\n%s", logs)
	}
}

// TestAdminInsecureNoAuthWarns: admin.insecure_no_auth is the one way to
// an open admin API, and it is warned at every start.
func TestAdminInsecureNoAuthWarns(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), approvalRoute)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_INSECURE_NO_AUTH=true")
	for start := range 2 {
		p := s.start(t)
		if !strings.Contains(p.logs.String(), "INSECURE: admin.insecure_no_auth is set") {
			t.Errorf("start %d: no warning:\n%s", start, p.logs.String())
		}
		if code := p.admin(t, "GET", "/v1/steps", nil, nil); code != http.StatusOK {
			t.Errorf("start %d: GET /v1/steps without a token: %d, want 200", start, code)
		}
		p.kill()
	}
	if _, err := os.Stat(filepath.Join(s.dir, "admin-token")); err == nil {
		t.Errorf("a token was generated although authentication is off")
	}
}
