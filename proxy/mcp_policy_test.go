package proxy

import (
	"context"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/policy"
)

// Tools no rule names follow mcp.unlisted; the annotations of tools/list
// may tighten it, and loosen it only where the operator trusts them.
func TestMCPUnlistedPolicy(t *testing.T) {
	tests := []struct {
		name     string
		unlisted policy.Unlisted
		trust    bool
		tool     string // find_ticket is readOnlyHint, purge_tickets destructiveHint
		list     bool   // the agent lists the tools first
		guarded  bool
	}{
		{name: "guard by default", tool: "find_ticket", list: true, guarded: true},
		{name: "untrusted read-only hint does not loosen", unlisted: policy.UnlistedGuard, tool: "find_ticket", list: true, guarded: true},
		{name: "trusted read-only hint loosens", unlisted: policy.UnlistedGuard, trust: true, tool: "find_ticket", list: true, guarded: false},
		{name: "trusted, but never listed", unlisted: policy.UnlistedGuard, trust: true, tool: "find_ticket", guarded: true},
		{name: "pass", unlisted: policy.UnlistedPass, tool: "find_ticket", list: true, guarded: false},
		{name: "destructive hint tightens pass", unlisted: policy.UnlistedPass, tool: "purge_tickets", list: true, guarded: true},
		{name: "trusted destructive hint tightens pass", unlisted: policy.UnlistedPass, trust: true, tool: "purge_tickets", list: true, guarded: true},
		{name: "pass, never listed", unlisted: policy.UnlistedPass, tool: "purge_tickets", guarded: false},
	}
	for _, w := range bothWays {
		for _, tc := range tests {
			t.Run(string(w)+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				ts := newTicketServer(t)
				p := newMCPProxy(t, ts, Options{MCPUnlisted: tc.unlisted, MCPTrustAnnotations: tc.trust})
				a := p.agent(w, "alice")
				s := a.session(t, ctx)
				if tc.list {
					if _, err := s.ListTools(ctx, nil); err != nil {
						t.Fatal(err)
					}
				}
				for range 2 {
					if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{"title": "x"}}); err != nil {
						t.Fatal(err)
					}
				}
				ran := ts.reads.Load() + ts.purged.Load()
				steps := len(p.steps(t))
				switch {
				case tc.guarded && (ran != 1 || steps != 1):
					t.Errorf("tool ran %d times with %d steps, want guarded: 1 and 1", ran, steps)
				case !tc.guarded && (ran != 2 || steps != 0):
					t.Errorf("tool ran %d times with %d steps, want passed through: 2 and 0", ran, steps)
				}
			})
		}
	}
}

// Agents choose tool names: tools no rule names share one metrics label
// (the bound of their cached routes is package servers' to test).
func TestMCPUnlistedLabel(t *testing.T) {
	p := newMCPProxy(t, newTicketServer(t), Options{})
	ep := p.srv.mcp.Named("tickets")
	for i := range 10 {
		r, guarded := p.srv.gateway.Route(ep, fmt.Sprintf("tool_%d", i))
		if !guarded || r.Name != fmt.Sprintf("tool_%d", i) {
			t.Fatalf("unlisted tool %d: route %+v, guarded %v", i, r, guarded)
		}
		if got := (&mcpCall{}).routeLabel(&call{route: r}); got != "unlisted" {
			t.Fatalf("metric label = %q, want unlisted", got)
		}
	}
	named, _ := p.srv.gateway.Route(ep, "create_ticket")
	if got := (&mcpCall{}).routeLabel(&call{route: named}); got != "create_ticket" {
		t.Errorf("metric label of a named tool = %q", got)
	}
}
