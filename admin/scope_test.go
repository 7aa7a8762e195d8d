package admin

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// The agent token sees the steps, events and workflows of the credential
// scope its caller presents, and nothing of another's; the operator token
// sees every scope. The scope is the proxy's to compute
// (Proxy.CredentialScope); one it cannot compute is a 400.
func TestAgentScope(t *testing.T) {
	j := openJournal(t)
	keyA, keyB, keyNone := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	macA, macB := strings.Repeat("1", 64), strings.Repeat("2", 64)
	putHeld(t, j, keyA, "order-78", macA, journal.HoldAwaitingApproval)
	putHeld(t, j, keyB, "order-78", macB, journal.HoldAwaitingApproval)
	putHeld(t, j, keyNone, "", "", journal.HoldAwaitingApproval)
	p := testProxy{apis: []string{"billing"}, scopes: map[string]string{"billing sk_a": macA, "billing sk_b": macB}}
	srv := httptest.NewServer(New(Options{Journal: j, Proxy: p, Token: "op", AgentToken: "ag"}))
	defer srv.Close()
	as := func(api, cred string) http.Header {
		return http.Header{HeaderAgentAPI: {api}, HeaderAgentCredential: {cred}}
	}

	tests := []struct {
		name     string
		token    string
		header   http.Header
		path     string
		status   int
		wantKeys []string // the keys of a list's steps or events, in any order
		want     map[string]any
	}{
		{name: "agent lists its own", token: "ag", header: as("billing", "sk_a"), path: "/v1/steps", status: 200, wantKeys: []string{keyA}},
		{name: "agent without a credential lists the unscoped", token: "ag", path: "/v1/steps", status: 200, wantKeys: []string{keyNone}},
		{name: "operator lists all", token: "op", path: "/v1/steps", status: 200, wantKeys: []string{keyA, keyB, keyNone}},
		{name: "agent reads its own", token: "ag", header: as("billing", "sk_a"), path: "/v1/steps/" + keyA, status: 200},
		{name: "agent reads another's", token: "ag", header: as("billing", "sk_a"), path: "/v1/steps/" + keyB, status: 404},
		{name: "agent follows its own events", token: "ag", header: as("billing", "sk_b"), path: "/v1/events", status: 200, wantKeys: []string{keyB}},
		{name: "agent's own workflow", token: "ag", header: as("billing", "sk_b"), path: "/v1/workflows/order-78", status: 200,
			want: map[string]any{"id": "order-78", "scope": macB}},
		{name: "agent without a credential, a scoped workflow", token: "ag", path: "/v1/workflows/order-78", status: 404},
		{name: "operator, a workflow in two scopes", token: "op", path: "/v1/workflows/order-78", status: 409},
		{name: "operator picks a scope by prefix", token: "op", path: "/v1/workflows/order-78?scope=1111", status: 200,
			want: map[string]any{"scope": macA}},
		{name: "whoami agent", token: "ag", header: as("billing", "sk_a"), path: "/v1/whoami", status: 200,
			want: map[string]any{"role": "agent", "scope": macA}},
		{name: "whoami agent unscoped", token: "ag", path: "/v1/whoami", status: 200, want: map[string]any{"role": "agent"}},
		{name: "whoami operator", token: "op", header: as("billing", "sk_a"), path: "/v1/whoami", status: 200, want: map[string]any{"role": "operator"}},
		{name: "unknown api", token: "ag", header: as("nope", "sk_a"), path: "/v1/steps", status: 400,
			want: map[string]any{"type": ProblemBadRequest, "detail": `agent scope: api "nope": no rule file has that name`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			if code := call(t, srv.URL, "GET", tc.path, tc.token, "", tc.header, &got); code != tc.status {
				t.Fatalf("status %d, want %d: %v", code, tc.status, got)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if _, ok := got["scope"]; ok && tc.want != nil && tc.want["scope"] == nil {
				t.Errorf("scope = %v, want none", got["scope"])
			}
			if tc.wantKeys == nil {
				return
			}
			var keys []string
			for _, list := range []string{"steps", "events"} {
				items, _ := got[list].([]any)
				for _, it := range items {
					if k := it.(map[string]any)["key"].(string); !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys %v, want %v", keys, tc.wantKeys)
			}
		})
	}
}
