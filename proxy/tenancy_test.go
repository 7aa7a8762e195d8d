package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// elsewhere is the host of rule files that do not name the provider, whose
// calls then follow unmatched: (a write to a host a file names follows the
// file's unlisted:).
const elsewhere = "elsewhere.example"

// unmatchedGuard guards calls no route describes, their callers' credential
// in headers (nil: the default, Authorization).
func unmatchedGuard(headers ...string) Options {
	return Options{Unmatched: policy.UnmatchedGuard, UnmatchedCredential: Credential{Headers: headers}}
}

// Regression: a credential sent in a header other than the one hard-coded
// (Authorization for unmatched: guard) was keyed as "no credential", so two
// tenants that sent the same body got one key: the second received the
// first one's stored answer, and its own call was never sent.
func TestTenantsGetTheirOwnAnswers(t *testing.T) {
	const body = `{"customer":"cus_1","amount":100}`
	tests := []struct {
		name string
		cfg  harnessConfig
		path string
		a, b []string // each tenant's credential headers, as name, value pairs
	}{
		{name: "rule file, Authorization", cfg: harnessConfig{Routes: invoiceRoute}, path: "/v1/invoices",
			a: []string{"Authorization", "Bearer sk_a"}, b: []string{"Authorization", "Bearer sk_b"}},
		{name: "rule file, second listed header", path: "/v1/invoices",
			cfg: harnessConfig{Routes: invoiceRoute, Credential: "{headers: [Authorization, X-Api-Key]}"},
			a:   []string{"Authorization", "", "X-Api-Key", "key_a"}, b: []string{"Authorization", "", "X-Api-Key", "key_b"}},
		{name: "rule file, one value in two headers", path: "/v1/invoices",
			cfg: harnessConfig{Routes: invoiceRoute, Credential: "{headers: [Authorization, X-Api-Key]}"},
			a:   []string{"Authorization", "shared"}, b: []string{"Authorization", "", "X-Api-Key", "shared"}},
		{name: "unmatched guard, Authorization", path: "/v1/emails",
			cfg: harnessConfig{Routes: invoiceRoute, RuleHost: elsewhere, ConnectToUpstream: true, Options: unmatchedGuard()},
			a:   []string{"Authorization", "Bearer sk_a"}, b: []string{"Authorization", "Bearer sk_b"}},
		{name: "unmatched guard, configured header", path: "/v1/emails",
			cfg: harnessConfig{Routes: invoiceRoute, RuleHost: elsewhere, ConnectToUpstream: true, Options: unmatchedGuard("Authorization", "X-Api-Key")},
			a:   []string{"Authorization", "", "X-Api-Key", "key_a"}, b: []string{"Authorization", "", "X-Api-Key", "key_b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, tc.cfg)
			want := map[string]string{}
			for i, tenant := range [][]string{tc.a, tc.b} {
				resp, got := h.post(tc.path, body, tenant...)
				if resp.StatusCode != http.StatusCreated || resp.Header.Get(HeaderOutcome) != OutcomeForwarded {
					t.Fatalf("tenant %d: %d %s %s, want 201 forwarded", i+1, resp.StatusCode, resp.Header.Get(HeaderOutcome), got)
				}
				want[strings.Join(tenant, " ")] = got
			}
			for i, tenant := range [][]string{tc.a, tc.b} {
				resp, got := h.post(tc.path, body, tenant...)
				if resp.Header.Get(HeaderOutcome) != OutcomeReplayed || got != want[strings.Join(tenant, " ")] {
					t.Errorf("tenant %d again: %s %s, want its own answer %s replayed", i+1, resp.Header.Get(HeaderOutcome), got, want[strings.Join(tenant, " ")])
				}
			}
			if n := h.up.effects.Load(); n != 2 {
				t.Errorf("upstream effects = %d, want 2 (one per tenant)", n)
			}
			if sts := h.steps(); len(sts) != 2 || sts[0].Scope == "" || sts[0].Scope == sts[1].Scope {
				t.Errorf("steps = %+v, want 2 with distinct caller scopes", sts)
			}
		})
	}
}

// A guarded call that carries no credential is refused before anything is
// journaled or sent, naming the route and the headers expected.
func TestMissingCredentialRefused(t *testing.T) {
	tests := []struct {
		name    string
		cfg     harnessConfig
		path    string
		headers []string
		want    []string // in the problem's detail
	}{
		{name: "rule file header absent", cfg: harnessConfig{Routes: invoiceRoute}, path: "/v1/invoices",
			headers: []string{"Authorization", ""}, want: []string{"route billing.create_invoice", "expected header Authorization", "credential: none"}},
		{name: "rule file names no credential", cfg: harnessConfig{Routes: invoiceRoute, Credential: "-"}, path: "/v1/invoices",
			want: []string{"route billing.create_invoice", "declares no credential header"}},
		{name: "none of the listed headers", path: "/v1/invoices",
			cfg:     harnessConfig{Routes: invoiceRoute, Credential: "{headers: [Authorization, X-Api-Key]}"},
			headers: []string{"Authorization", "", "Api-Key", "k"}, want: []string{"expected header Authorization or X-Api-Key"}},
		{name: "unmatched guard default", cfg: harnessConfig{Routes: invoiceRoute, RuleHost: elsewhere, ConnectToUpstream: true, Options: unmatchedGuard()}, path: "/v1/emails",
			headers: []string{"Authorization", ""}, want: []string{"route unmatched.POST ", "expected header Authorization"}},
		{name: "unmatched guard configured", cfg: harnessConfig{Routes: invoiceRoute, RuleHost: elsewhere, ConnectToUpstream: true, Options: unmatchedGuard("X-Api-Key")}, path: "/v1/emails",
			want: []string{"expected header X-Api-Key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, tc.cfg)
			resp, body := h.post(tc.path, `{"customer":"cus_1"}`, tc.headers...)
			var p problem.Details
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatalf("answer %d %s: %v", resp.StatusCode, body, err)
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" || p.Type != string(problem.InvalidBody) {
				t.Errorf("answer %d %s %s, want 400 problem+json %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, problem.InvalidBody)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Detail, w) {
					t.Errorf("detail %q does not say %q", p.Detail, w)
				}
			}
			if n := h.up.effects.Load(); n != 0 {
				t.Errorf("upstream effects = %d, want 0", n)
			}
			if sts, err := h.j.List(journal.Filter{}); err != nil || len(sts) != 0 {
				t.Errorf("journal steps = %v (%v), want none", sts, err)
			}
			if got := h.metric(`toolguard_rejected_total{reason="no_credential"}`); got != "1" {
				t.Errorf("no_credential rejections = %q, want 1", got)
			}
		})
	}
}

// credential: none (and unmatched_credential: none) lets calls without a
// credential through, every such caller in one scope, on purpose.
func TestCredentialNoneSharesOnPurpose(t *testing.T) {
	tests := []struct {
		name string
		cfg  harnessConfig
		path string
	}{
		{name: "rule file", cfg: harnessConfig{Routes: invoiceRoute, Credential: "none"}, path: "/v1/invoices"},
		{name: "unmatched guard", path: "/v1/emails",
			cfg: harnessConfig{Routes: invoiceRoute, RuleHost: elsewhere, ConnectToUpstream: true, Options: Options{Unmatched: policy.UnmatchedGuard, UnmatchedCredential: Credential{None: true}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, tc.cfg)
			first, a := h.post(tc.path, `{"customer":"cus_1"}`, "Authorization", "")
			again, b := h.post(tc.path, `{"customer":"cus_1"}`, "Authorization", "")
			if first.StatusCode != http.StatusCreated || again.Header.Get(HeaderOutcome) != OutcomeReplayed || a != b {
				t.Errorf("answers %d %s / %s %s, want 201 and the same answer replayed", first.StatusCode, a, again.Header.Get(HeaderOutcome), b)
			}
			if n := h.up.effects.Load(); n != 1 {
				t.Errorf("upstream effects = %d, want 1", n)
			}
		})
	}
}

// Regression: an MCP gateway server without a rule file took the caller's
// credential from Authorization only, so callers that sent theirs in
// another header, or none, shared one key.
func TestMCPGatewayWithoutRuleFileScopesCallers(t *testing.T) {
	tests := []struct {
		name   string
		cred   Credential
		header string // the header the agents send their credential in ("": Authorization: Bearer)
	}{
		{name: "default Authorization"},
		{name: "configured header", cred: Credential{Headers: []string{"X-Api-Key"}}, header: "X-Api-Key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTicketServer(t)
			p := startMCPProxy(t, Options{MCPServers: []MCPServer{{Name: "tickets", URL: ts.url}}, MCPUnlistedCredential: tc.cred})
			p.tickets = ts
			ctx := context.Background()
			call := &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Same title")}
			for _, token := range []string{"tenant-a", "tenant-b"} {
				a := p.agent(viaGateway, token)
				a.credHeader = tc.header
				res, err := a.session(t, ctx).CallTool(ctx, call)
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v", token, err, res)
				}
			}
			if n := ts.created.Load(); n != 2 {
				t.Errorf("tickets created = %d, want 2 (one per caller)", n)
			}
			res, err := p.agent(viaGateway, "").session(t, ctx).CallTool(ctx, call)
			if err != nil || !res.IsError || !strings.Contains(toolText(res), "carries no credential") {
				t.Errorf("call without a credential: %v %+v, want a refusal (isError)", err, res)
			}
			if n, sts := ts.created.Load(), p.steps(t); n != 2 || len(sts) != 2 {
				t.Errorf("after the refusal: %d created, %d steps, want 2 and 2", n, len(sts))
			}
		})
	}
}

// toolText joins the text contents of a tool result.
func toolText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Regression: workflow state was not scoped by the caller. Tenant B's
// first call in workflow order-78, with another Toolguard-Prompt-Version,
// held tenant A's next call as version-changed.
func TestWorkflowVersionChangeScopedByCaller(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	call := func(who, prompt, body string) *http.Response {
		t.Helper()
		resp, got := h.post("/v1/invoices", body, "Authorization", "Bearer "+who,
			HeaderWorkflow, "order-78", HeaderPromptVersion, prompt)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s (prompt %s): %d %s", who, prompt, resp.StatusCode, got)
		}
		return resp
	}
	call("tenant-a", "v1", `{"n":1}`)
	call("tenant-b", "v2", `{"n":1}`) // B's own workflow: no change for B
	call("tenant-a", "v1", `{"n":2}`) // A's versions are still v1
	if n := h.up.effects.Load(); n != 3 {
		t.Errorf("upstream effects = %d, want 3", n)
	}
	// The same caller changing versions mid-workflow is still stopped.
	resp, body := h.post("/v1/invoices", `{"n":3}`, "Authorization", "Bearer tenant-a",
		HeaderWorkflow, "order-78", HeaderPromptVersion, "v9")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "version") {
		t.Errorf("tenant A changing versions: %d %s, want 409 version-changed", resp.StatusCode, body)
	}

	// The operator sees both scopes of order-78: without ?scope= the id is
	// ambiguous; a scope prefix selects one.
	var conflict problem.Details
	if code := h.adminCall("GET", "/v1/workflows/order-78", nil, &conflict); code != http.StatusConflict || conflict.Type != admin.ProblemAmbiguousScope {
		t.Fatalf("GET without scope: %d %+v, want 409 %s", code, conflict, admin.ProblemAmbiguousScope)
	}
	sts := h.steps()
	scopes := map[string]bool{}
	for _, st := range sts {
		scopes[st.Scope] = true
	}
	if len(scopes) != 2 {
		t.Fatalf("steps' scopes = %v, want 2", scopes)
	}
	for scope := range scopes {
		if !strings.Contains(conflict.Detail, scope) {
			t.Errorf("409 detail %q does not list scope %s", conflict.Detail, scope)
		}
		var w journal.Workflow
		if code := h.adminCall("GET", "/v1/workflows/order-78?scope="+scope[:12], nil, &w); code != http.StatusOK || w.Scope != scope {
			t.Errorf("GET ?scope=%s: %d %+v", scope[:12], code, w)
		}
		var p admin.ResumePacket
		if code := h.adminCall("GET", "/v1/workflows/order-78/resume?scope="+scope[:12], nil, &p); code != http.StatusOK || p.Workflow.Scope != scope {
			t.Errorf("resume ?scope=%s: %d %+v", scope[:12], code, p.Workflow)
		}
		cp := admin.Checkpoint{Goal: "ship order 78"}
		if code := h.adminCall("PUT", "/v1/workflows/order-78/checkpoint?scope="+scope[:12], cp, &w); code != http.StatusOK || w.Scope != scope {
			t.Errorf("checkpoint ?scope=%s: %d %+v", scope[:12], code, w)
		}
	}
	if code := h.adminCall("PUT", "/v1/workflows/order-78/checkpoint", admin.Checkpoint{Goal: "x"}, nil); code != http.StatusConflict {
		t.Errorf("checkpoint without scope: %d, want 409", code)
	}
	// An id in one scope works as before, without ?scope=.
	h.post("/v1/invoices", `{"n":4}`, "Authorization", "Bearer tenant-c", HeaderWorkflow, "solo")
	if code := h.adminCall("GET", "/v1/workflows/solo", nil, nil); code != http.StatusOK {
		t.Errorf("GET solo: %d, want 200", code)
	}
}
