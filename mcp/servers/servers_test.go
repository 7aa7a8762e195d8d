package servers

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/rules"
)

func unlisted(name string) *rules.API { return &rules.API{Name: name} }

// tickets is a rule file with one tool, shared by two gateway servers.
func tickets() *rules.API {
	api := &rules.API{Name: "tickets", MCP: &rules.MCP{Path: "/mcp", Tools: map[string]*rules.Route{}}}
	api.MCP.Tools["create_ticket"] = &rules.Route{API: api, Name: "create_ticket", Effect: rules.EffectIrreversible}
	api.MCP.Tools["list_tickets"] = &rules.Route{API: api, Name: "list_tickets", Effect: rules.EffectSafe}
	return api
}

// TestNewSet: each gateway server is named for itself, with its own copy
// of the shared rule file's tools, and a server without one gets the
// unlisted API.
func TestNewSet(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:9/mcp")
	shared := tickets()
	set := NewSet([]Gateway{{Name: "a", URL: u, API: shared}, {Name: "b", URL: u, API: shared}, {Name: "bare", URL: u}}, unlisted)
	a, b := set.Named("a"), set.Named("b")
	if a == nil || b == nil || a.API.Name != "a" || b.API.Name != "b" || a.URL != u {
		t.Fatalf("servers a %+v, b %+v", a, b)
	}
	ra, rb := a.API.Tool("create_ticket"), b.API.Tool("create_ticket")
	if ra == rb || ra.API != a.API || rb.API != b.API || shared.Tool("create_ticket").API != shared {
		t.Error("the servers share the rule file's routes")
	}
	if bare := set.Named("bare"); bare == nil || bare.API.Name != "bare" || bare.API.MCP.Path != "/mcp" {
		t.Errorf("a server without a rule file: %+v", bare)
	}
	if set.Named("nowhere") != nil {
		t.Error("a server that is not configured")
	}
	api := tickets()
	if fp := set.ForAPI(api); fp == nil || fp.URL != nil || set.ForAPI(api) != fp {
		t.Error("the forward proxy's server of an API is not one")
	}
}

// TestRoute: a tool's rule decides; a tool no rule names follows the
// unlisted policy, tightened by a destructive annotation and, when
// trusted, loosened by a read-only one.
func TestRoute(t *testing.T) {
	list := func(sv *Server, tools string) {
		body := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tools + `]}}`
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body))}
		sv.Listed(resp, []byte("1"))
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	sv := NewSet([]Gateway{{Name: "t", API: tickets()}}, unlisted).Named("t")
	list(sv, `{"name":"ro","annotations":{"readOnlyHint":true}},{"name":"boom","annotations":{"destructiveHint":true}}`)
	tests := []struct {
		tool    string
		p       Policy
		guarded bool
	}{
		{"create_ticket", Policy{Unlisted: policy.UnlistedPass}, true},
		{"list_tickets", Policy{}, false},
		{"other", Policy{}, true},
		{"other", Policy{Unlisted: policy.UnlistedPass}, false},
		{"boom", Policy{Unlisted: policy.UnlistedPass}, true},
		{"ro", Policy{}, true},
		{"ro", Policy{TrustAnnotations: true}, false},
		{"boom", Policy{TrustAnnotations: true}, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%+v", tc.tool, tc.p), func(t *testing.T) {
			r, guarded := sv.Route(tc.tool, tc.p)
			if guarded != tc.guarded {
				t.Fatalf("guarded = %v, want %v", guarded, tc.guarded)
			}
			if guarded && (r.Name != tc.tool || r.API != sv.API) {
				t.Errorf("route %+v", r)
			}
		})
	}
	// A later listing that no longer says read-only takes the trust back.
	list(sv, `{"name":"ro","annotations":{"readOnlyHint":false}}`)
	if _, guarded := sv.Route("ro", Policy{TrustAnnotations: true}); !guarded {
		t.Error("a tool once listed as not read-only passes")
	}
}

// Agents choose tool names: the cache of their routes is bounded.
func TestUnlistedBounded(t *testing.T) {
	sv := NewSet([]Gateway{{Name: "t", API: tickets()}}, unlisted).Named("t")
	for i := range maxUnlistedRoutes + 10 {
		r, guarded := sv.Route(fmt.Sprintf("tool_%d", i), Policy{})
		if !guarded || r.Name != fmt.Sprintf("tool_%d", i) || r.Effect != rules.EffectIrreversible {
			t.Fatalf("unlisted tool %d: route %+v, guarded %v", i, r, guarded)
		}
	}
	n := 0
	sv.unlisted.Range(func(any, any) bool { n++; return true })
	if n != maxUnlistedRoutes {
		t.Errorf("cached routes = %d, want %d", n, maxUnlistedRoutes)
	}
}

// TestCancelsGuardedCall: a notifications/cancelled for a guarded call in
// flight in the same session and credential is recognised, and nothing
// else is.
func TestCancelsGuardedCall(t *testing.T) {
	sv := NewSet([]Gateway{{Name: "t", API: tickets()}}, unlisted).Named("t")
	req := func(session, auth string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp/t", nil)
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Authorization", auth)
		return r
	}
	cancel := func(id string) mcp.Body {
		b, err := mcp.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	end := sv.Begin(req("s1", "Bearer a"), []byte("7"))
	if !sv.CancelsGuardedCall(req("s1", "Bearer a"), cancel("7")) {
		t.Error("the cancellation of a call in flight is not recognised")
	}
	for name, ok := range map[string]bool{
		"another id":         sv.CancelsGuardedCall(req("s1", "Bearer a"), cancel("8")),
		"another session":    sv.CancelsGuardedCall(req("s2", "Bearer a"), cancel("7")),
		"another credential": sv.CancelsGuardedCall(req("s1", "Bearer b"), cancel("7")),
	} {
		if ok {
			t.Errorf("%s: recognised", name)
		}
	}
	other, err := mcp.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sv.CancelsGuardedCall(req("s1", "Bearer a"), other) {
		t.Error("another notification is recognised")
	}
	end()
	if sv.CancelsGuardedCall(req("s1", "Bearer a"), cancel("7")) {
		t.Error("a call no longer in flight is recognised")
	}
}
