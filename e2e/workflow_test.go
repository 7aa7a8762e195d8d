package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// wfRequest sends an admin request with a bearer token and returns the
// status and body.
func wfRequest(t *testing.T, p *proc, method, path, token, ifMatch, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, p.adminURL+path, strings.NewReader(body))
	if token == "" {
		token = p.token // the operator
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if token != p.token {
		// An agent presents its caller's credential: the agent token
		// reads and writes only that caller's scope.
		req.Header.Set("Toolguard-Api", "billing")
		req.Header.Set("Toolguard-Credential", "Bearer k1")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func workflowStatus(t *testing.T, p *proc, id string) string {
	t.Helper()
	var w map[string]any
	if code := p.admin(t, "GET", "/v1/workflows/"+id, nil, &w); code != 200 {
		t.Fatalf("GET workflow %s: %d", id, code)
	}
	return fmt.Sprint(w["status"])
}

func TestWorkflowLifecycle(t *testing.T) {
	up := newUpstream(t, false)
	up.hide.Store(true)
	route := fmt.Sprintf(`  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
    verify:
      request: GET http://%s/v1/invoices/{{operation_id}}
      expect: {status: 200}
      within: 30s
`, up.host())
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), route)}).start(t)
	c := p.client(t)
	const wf = "wf-run-1"
	code, _ := wfRequest(t, p, "PUT", "/v1/workflows/"+wf+"/checkpoint", "", "", `{"goal":"bill order 77","constraints":["eur only"],"plan":["create invoice","email customer"]}`)
	if code != 200 {
		t.Fatalf("first checkpoint: %d", code)
	}
	if got := workflowStatus(t, p, wf); got != "planned" {
		t.Fatalf("status = %q, want planned", got)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			close(reached)
			<-release
		}
		return true
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(t, c, up.URL+"/v1/invoices", invoiceBody, "Toolguard-Workflow", wf)
	}()
	<-reached
	if got := workflowStatus(t, p, wf); got != "executing" {
		t.Errorf("status while in flight = %q, want executing", got)
	}
	close(release)
	<-done
	up.setHook(nil)
	if got := workflowStatus(t, p, wf); got != "verifying" {
		t.Errorf("status while the effect is not visible = %q, want verifying", got)
	}
	up.show()
	var w map[string]any
	waitWorkflow(t, p, wf, func(m map[string]any) bool { w = m; return m["status"] == "completed" })
	if w["steps"] != float64(1) || w["current_route"] != "create_invoice" || w["input_hash"] == "" {
		t.Errorf("workflow record = %v", w)
	}
}

func waitWorkflow(t *testing.T, p *proc, id string, ok func(map[string]any) bool) {
	t.Helper()
	var last map[string]any
	eventually(t, "workflow "+id, func() bool {
		last = nil
		p.admin(t, "GET", "/v1/workflows/"+id, nil, &last)
		return ok(last)
	})
}

func TestWorkflowHoldsAndRetryableFailure(t *testing.T) {
	up := newUpstream(t, false)
	host := up.host()
	approval := `  - name: refund
    match: POST /v1/invoices
    effect: irreversible
    approval: required
`
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(host, approval)}).start(t)
	post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody, "Toolguard-Workflow", "wf-hold")
	if got := workflowStatus(t, p, "wf-hold"); got != "awaiting_approval" {
		t.Errorf("status = %q, want awaiting_approval", got)
	}
	up.Close()
	p2 := newSetup(t, map[string]string{"billing.yaml": ruleFile(host, invoiceRoute)}).start(t)
	post(t, p2.client(t), "http://"+host+"/v1/invoices", invoiceBody, "Toolguard-Workflow", "wf-retry")
	if got := workflowStatus(t, p2, "wf-retry"); got != "failed_retryable" {
		t.Errorf("status = %q, want failed_retryable", got)
	}
}

func TestCheckpointConcurrency(t *testing.T) {
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)}).start(t)
	path := "/v1/workflows/wf-cas/checkpoint"
	if code, body := wfRequest(t, p, "PUT", path, "", "", `{"goal":"g"}`); code != 200 {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	if code, _ := wfRequest(t, p, "PUT", path, "", "", `{"goal":"g2"}`); code != 428 {
		t.Fatalf("PUT without If-Match on an existing checkpoint: %d, want 428", code)
	}
	const writers = 2
	codes := make([]int, writers)
	bodies := make([]string, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], bodies[i] = wfRequest(t, p, "PUT", path, "", `"1"`, fmt.Sprintf(`{"goal":"writer %d"}`, i))
		}()
	}
	close(start)
	wg.Wait()
	won, lost := 0, 0
	for i, c := range codes {
		switch c {
		case 200:
			won++
		case 412:
			lost++
			var problem struct {
				Type           string `json:"type"`
				CurrentVersion uint64 `json:"current_version"`
			}
			if json.Unmarshal([]byte(bodies[i]), &problem) != nil || problem.CurrentVersion != 2 || problem.Type != "urn:toolguard:admin:version-mismatch" {
				t.Errorf("412 body lacks the current version: %s", bodies[i])
			}
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("codes = %v, want one 200 and one 412", codes)
	}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"raw tool output refused", `{"goal":"g","tool_output":"<html>..."}`, 400},
		{"oversized field", `{"goal":"` + strings.Repeat("x", 5000) + `"}`, 413},
		{"oversized body", `{"goal":"g","plan":["` + strings.Repeat("y", 70000) + `"]}`, 413},
		{"bad artifact hash", `{"goal":"g","artifacts":[{"id":"a","sha256":"xyz"}]}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := wfRequest(t, p, "PUT", path, "", `"2"`, tc.body); code != tc.want {
				t.Fatalf("%d %s, want %d", code, body, tc.want)
			}
		})
	}
}

func TestResumePacketAfterKill(t *testing.T) {
	for _, tc := range []struct {
		strategy, want string
	}{
		{"none", "operator review needed: create_invoice outcome unknown"},
		{"native", "retry create_invoice: provider dedupes on the key"},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			up := newUpstream(t, false)
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), recoveryRoute(tc.strategy, up.host()))})
			s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=op", "TOOLGUARD_ADMIN_AGENT_TOKEN=agent")
			p := s.start(t)
			// A first, completed step whose response carries a marker.
			post(t, p.client(t), up.URL+"/v1/invoices", `{"customer":"PLANTED-MARKER-42","reference":"r0"}`, "Toolguard-Workflow", "wf-k")
			if code, _ := wfRequest(t, p, "PUT", "/v1/workflows/wf-k/checkpoint", "agent", "", `{"goal":"bill","plan":["a","b"]}`); code != 200 {
				t.Fatalf("agent checkpoint: %d", code)
			}
			killMidCall(t, p, up, "after", "Toolguard-Workflow", "wf-k")

			p2 := s.start(t)
			code, body := wfRequest(t, p2, "GET", "/v1/workflows/wf-k/resume", "agent", "", "")
			if code != 200 {
				t.Fatalf("resume: %d %s", code, body)
			}
			var packet struct {
				Workflow   map[string]any   `json:"workflow"`
				Checkpoint map[string]any   `json:"checkpoint"`
				Steps      []map[string]any `json:"steps"`
				Next       string           `json:"next_safe_action"`
			}
			if err := json.Unmarshal([]byte(body), &packet); err != nil {
				t.Fatal(err)
			}
			if packet.Next != tc.want {
				t.Errorf("next_safe_action = %q, want %q", packet.Next, tc.want)
			}
			if packet.Checkpoint["goal"] != "bill" || len(packet.Steps) != 2 || packet.Workflow["status"] != "executing" {
				t.Errorf("packet = %s", body)
			}
			if strings.Contains(body, "PLANTED-MARKER-42") || bytes.Contains([]byte(body), []byte("auth_seen")) {
				t.Errorf("the resume packet carries response content: %s", body)
			}
			if code, _ := wfRequest(t, p2, "POST", "/v1/steps/"+fmt.Sprint(packet.Steps[1]["key"])+"/resolve", "agent", "", `{"outcome":"committed"}`); code != 403 {
				t.Errorf("agent resolve: %d, want 403", code)
			}
		})
	}
}

func TestVersionChangeMidWorkflow(t *testing.T) {
	for _, tc := range []struct {
		policy      string
		wantStatus  int
		wantEffects int64
	}{
		{"stop", 409, 1},
		{"allow", 201, 2},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			up := newUpstream(t, false)
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
			s.env = append(s.env, "TOOLGUARD_ON_VERSION_CHANGE="+tc.policy)
			p := s.start(t)
			c := p.client(t)
			post(t, c, up.URL+"/v1/invoices", `{"n":1}`, "Toolguard-Workflow", "wf-v", "Toolguard-Prompt-Version", "p1")
			r, body := post(t, c, up.URL+"/v1/invoices", `{"n":2}`, "Toolguard-Workflow", "wf-v", "Toolguard-Prompt-Version", "p2")
			if r.StatusCode != tc.wantStatus {
				t.Fatalf("second step: %d %s, want %d", r.StatusCode, body, tc.wantStatus)
			}
			if tc.policy == "stop" && !strings.Contains(body, "urn:toolguard:version-changed") {
				t.Errorf("problem = %s, want version-changed", body)
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Errorf("effects = %d, want %d", got, tc.wantEffects)
			}
			found := false
			events := eventsOf(t, p)
			for _, e := range events {
				if (tc.policy == "allow" && e["type"] == "version_changed") || (tc.policy == "stop" && e["type"] == "held") {
					found = found || strings.Contains(fmt.Sprint(e["reason"]), "p1 → p2")
				}
			}
			if !found {
				t.Errorf("no event records the version change: %v", events)
			}
		})
	}
}

func TestWorkflowCLI(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody, "Toolguard-Workflow", "wf-cli")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workflow", "ls"}, "wf-cli"},
		{[]string{"workflow", "show", "wf-cli"}, "completed"},
		{[]string{"workflow", "show", "wf-cli", "--json"}, `"status": "completed"`},
		{[]string{"workflow", "resume", "wf-cli"}, `"next_safe_action": "continue: every step has a recorded outcome; proceed with the plan"`},
	} {
		out, err := p.cli(append(tc.args, "--admin", p.adminURL)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v\n%s", tc.args, err, out)
		}
	}
	p.kill()
	out, err := exec.Command(binary, "workflow", "ls", "--journal", filepath.Join(s.dir, "toolguard.db")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wf-cli") {
		t.Errorf("workflow ls --journal: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "workflow", "resume", "wf-cli", "--journal", filepath.Join(s.dir, "toolguard.db"), "--rules", s.rules).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"next_safe_action": "continue:`) {
		t.Errorf("workflow resume --journal: %v\n%s", err, out)
	}
}
