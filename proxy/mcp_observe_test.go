package proxy

import (
	"context"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
)

// An MCP server in observe mode gets every tools/call, duplicates and
// calls that need approval included, through the gateway and the forward
// proxy; the answers carry no toolguard header, and the journal says what
// enforcement would have done.
func TestMCPObserve(t *testing.T) {
	cases := []struct {
		name   string
		way    way
		server func(*testing.T) *ticketServer
	}{
		{name: "gateway", way: viaGateway, server: newTicketServer},
		{name: "forward proxy", way: viaForward, server: newTicketServer},
		{name: "forward proxy, HTTPS intercepted", way: viaForward, server: newTLSTicketServer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, tc.server(t), Options{Mode: policy.ModeObserve})
			a := p.agent(tc.way, "alice")
			for range 2 {
				res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Disk full")})
				if err != nil || res.IsError {
					t.Fatalf("create_ticket: %+v, %v", res, err)
				}
				// The client may hold the whole answer before the proxy has
				// read the server's end of it: until then the call is in
				// flight, and a duplicate would be observed as waiting for
				// it. The retry comes once the first observation ended.
				<-p.srv.observing.Idle()
			}
			res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "close_ticket", Arguments: callArgs("ops", "T-1")})
			if err != nil || res.IsError {
				t.Fatalf("close_ticket: %+v, %v; want the server's own result", res, err)
			}
			if got := p.tickets.created.Load(); got != 2 {
				t.Errorf("tickets created = %d, want 2: observe mode sends every call", got)
			}
			if got := p.tickets.closed.Load(); got != 1 {
				t.Errorf("tickets closed = %d, want 1", got)
			}
			if len(a.outcomes) != 0 {
				t.Errorf("answers carried Toolguard-Key: outcomes %v", a.outcomes)
			}
			<-p.srv.observing.Idle()
			evs, err := p.j.Events(0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := woulds(evs), sorted([]string{"forward", "replay", "hold_approval"}); !slices.Equal(got, want) {
				t.Errorf("would = %v, want %v", got, want)
			}
			for _, st := range p.steps(t) {
				if !st.Observed || st.Status != journal.StatusCommitted {
					t.Errorf("step %s: %s observed=%v; want a committed observation (the tool returned a result)", st.Route, st.Status, st.Observed)
				}
			}
		})
	}
}
