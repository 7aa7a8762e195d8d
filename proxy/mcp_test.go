package proxy

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/problem"
)

var bothWays = []way{viaGateway, viaForward}

func callArgs(project, title string) map[string]any {
	return map[string]any{"project": project, "title": title}
}

// holdOf returns the problem of a hold result, failing when res is not
// one.
func holdOf(t *testing.T, res *sdk.CallToolResult) mcp.Hold {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result is not an error: %+v", res)
	}
	raw, _ := json.Marshal(res.Meta[mcp.MetaProblem])
	var h mcp.Hold
	if err := json.Unmarshal(raw, &h); err != nil || h.Type == "" {
		t.Fatalf("result has no %s in _meta: %s", mcp.MetaProblem, raw)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if h.Key != "" && !strings.Contains(text, h.Key) {
		t.Errorf("hold text does not name the key %s: %q", h.Key, text)
	}
	return h
}

// The same create_ticket call, sent twice in two sessions with different
// JSON-RPC ids, has one effect; the second answer is the first result
// under the second id.
func TestMCPDuplicateAcrossSessions(t *testing.T) {
	cases := []struct {
		name   string
		way    way
		server func(*testing.T) *ticketServer
	}{
		{name: "gateway", way: viaGateway, server: newTicketServer},
		{name: "forward proxy", way: viaForward, server: newTicketServer},
		{name: "forward proxy, HTTPS intercepted", way: viaForward, server: newTLSTicketServer},
		{name: "gateway to an HTTPS server", way: viaGateway, server: newTLSTicketServer},
	}
	for _, tc := range cases {
		w := tc.way
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, tc.server(t), Options{})
			a := p.agent(w, "alice")
			first, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Disk full")})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.lastOutcome(); got != OutcomeForwarded {
				t.Errorf("first outcome = %q, want forwarded", got)
			}
			s2 := a.session(t, ctx)
			if _, err := s2.ListTools(ctx, nil); err != nil { // moves the session's ids on
				t.Fatal(err)
			}
			// Field order and _meta differ: neither is part of the intent.
			second, err := s2.CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: map[string]any{"title": "Disk full", "project": "ops"},
				Meta: sdk.Meta{"progressToken": "p-2"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := a.lastOutcome(); got != OutcomeReplayed {
				t.Errorf("second outcome = %q, want replayed", got)
			}
			a.mu.Lock()
			h := a.last
			a.mu.Unlock()
			if h.Get("Content-Type") != "application/json" || h.Get("Mcp-Session-Id") != "" || h.Get(HeaderReplayed) != "true" {
				t.Errorf("replay headers = %v, want application/json, Idempotent-Replayed and no session id", h)
			}
			if n := p.tickets.created.Load(); n != 1 {
				t.Errorf("tickets created = %d, want 1", n)
			}
			if !reflect.DeepEqual(first, second) {
				t.Errorf("replayed result differs:\nfirst  %+v\nsecond %+v", first, second)
			}
			// Another principal's same call is another intent.
			if _, err := p.agent(w, "bob").session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Disk full")}); err != nil {
				t.Fatal(err)
			}
			if n := p.tickets.created.Load(); n != 2 {
				t.Errorf("tickets created after another principal's call = %d, want 2", n)
			}
			sts := p.steps(t)
			if len(sts) != 2 || sts[0].Route != "create_ticket" || sts[0].OperationID == "" {
				t.Errorf("steps = %+v, want two create_ticket steps with operation ids", sts)
			}
		})
	}
}

// A read-only tool passes through, and nothing is journaled.
func TestMCPReadOnlyPasses(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			s := p.agent(w, "alice").session(t, ctx)
			for range 2 {
				if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "get_ticket", Arguments: callArgs("ops", "x")}); err != nil {
					t.Fatal(err)
				}
			}
			if n := p.tickets.reads.Load(); n != 2 {
				t.Errorf("reads = %d, want 2", n)
			}
			if sts := p.steps(t); len(sts) != 0 {
				t.Errorf("journal holds %d steps, want none", len(sts))
			}
		})
	}
}

// A result with isError: true is an outcome: stored and replayed.
func TestMCPToolErrorReplayed(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			a := p.agent(w, "alice")
			var results []*sdk.CallToolResult
			for range 2 {
				res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("old", "fail")})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError {
					t.Fatalf("result = %+v, want isError", res)
				}
				results = append(results, res)
			}
			if n := p.tickets.failed.Load(); n != 1 {
				t.Errorf("tool ran %d times, want 1", n)
			}
			if a.lastOutcome() != OutcomeReplayed || !reflect.DeepEqual(results[0], results[1]) {
				t.Errorf("second answer (%s) is not the replay of the first: %+v vs %+v", a.lastOutcome(), results[0], results[1])
			}
			if sts := p.steps(t); len(sts) != 1 || sts[0].Status != journal.StatusCommitted {
				t.Errorf("steps = %+v, want one committed", sts)
			}
		})
	}
}

// An invalid-params error means the tool did not run: it is not stored,
// and the retry is sent again.
func TestMCPInvalidParamsNotStored(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			a := p.agent(w, "alice")
			args := map[string]any{"project": "ops", "title": "x", "priority": "bogus"}
			for i := range 2 {
				_, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: args})
				if err == nil || !strings.Contains(err.Error(), "priority must be") {
					t.Fatalf("call %d: error = %v, want the server's invalid params error", i, err)
				}
			}
			if n := p.tickets.invalid.Load(); n != 2 {
				t.Errorf("server saw %d calls, want 2 (the retry is sent again)", n)
			}
			sts := p.steps(t)
			if len(sts) != 1 || sts[0].Status != journal.StatusPrepared || sts[0].Response != nil {
				t.Errorf("steps = %+v, want one prepared step without a stored response", sts)
			}
		})
	}
}

// An approval-gated tool gives a hold result; an approval lets exactly one
// call run; the retry gets its result.
func TestMCPApproval(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			a := p.agent(w, "alice")
			call := &sdk.CallToolParams{Name: "close_ticket", Arguments: callArgs("ops", "T-9")}
			res, err := a.session(t, ctx).CallTool(ctx, call)
			if err != nil {
				t.Fatalf("a hold must not be a transport or protocol error: %v", err)
			}
			h := holdOf(t, res)
			if h.Type != problem.AwaitingApproval || h.Key == "" || h.RetryAfter == 0 {
				t.Fatalf("hold = %+v, want awaiting-approval with a key and a retry hint", h)
			}
			if n := p.tickets.closed.Load(); n != 0 {
				t.Fatalf("tool ran %d times before approval", n)
			}
			if _, err := p.j.Apply(ctx, h.Key, admin.ApproveMutation("")); err != nil {
				t.Fatal(err)
			}
			var results []*sdk.CallToolResult
			for range 2 {
				res, err := a.session(t, ctx).CallTool(ctx, call)
				if err != nil || res.IsError {
					t.Fatalf("after approval: %+v, %v", res, err)
				}
				results = append(results, res)
			}
			if n := p.tickets.closed.Load(); n != 1 {
				t.Errorf("tool ran %d times after approval, want 1", n)
			}
			if !reflect.DeepEqual(results[0], results[1]) {
				t.Errorf("retry did not get the approved call's result: %+v vs %+v", results[0], results[1])
			}
		})
	}
}

// A call whose answer never came (the server took longer than the
// upstream timeout) is resolved on the retry by the rule's lookup tool:
// no second effect. Without a lookup, the retry gets a readable hold.
func TestMCPUnknownOutcomeRecovery(t *testing.T) {
	ctx := context.Background()
	ts := newTicketServer(t)
	ts.slow = make(chan struct{})
	release := sync.OnceFunc(func() { close(ts.slow) })
	t.Cleanup(release)
	p := newMCPProxy(t, ts, Options{UpstreamTimeout: 300 * time.Millisecond})
	a := p.agent(viaGateway, "alice")
	// Sessions close after the tool returns (a DELETE waits for it).
	defer release()

	// slow_ticket has no lookup.
	res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "slow_ticket", Arguments: callArgs("ops", "Slow")})
	if err != nil {
		t.Fatal(err)
	}
	if h := holdOf(t, res); h.Type != problem.OutcomeUnknown {
		t.Fatalf("hold = %+v, want outcome-unknown", h)
	}
	res, err = a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "slow_ticket", Arguments: callArgs("ops", "Slow")})
	if err != nil {
		t.Fatal(err)
	}
	if h := holdOf(t, res); h.Type != problem.AmbiguousEffect {
		t.Fatalf("retry hold = %+v, want ambiguous-effect", h)
	}
	if n := ts.created.Load(); n != 1 {
		t.Errorf("effects = %d, want 1", n)
	}
}

// The lookup tool finds the effect of a call whose answer was lost.
func TestMCPLookupRecovers(t *testing.T) {
	ctx := context.Background()
	ts := newTicketServer(t)
	p := newMCPProxy(t, ts, Options{})
	// The first call went out and took effect, but its outcome was never
	// recorded (as after a crash between sending and recording).
	a := p.agent(viaGateway, "alice")
	if _, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Lost")}); err != nil {
		t.Fatal(err)
	}
	sts := p.steps(t)
	if len(sts) != 1 {
		t.Fatalf("steps = %d, want 1", len(sts))
	}
	if _, err := p.j.Apply(ctx, sts[0].Key, func(cur *journal.Step) (journal.Change, error) {
		st := *cur
		st.Status, st.Response, st.OperationID = journal.StatusStarted, nil, ""
		return journal.Change{Step: st, Event: "test", Reason: "simulated crash before the outcome write"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	p.srv.now = func() time.Time { return time.Now().Add(time.Hour) } // the attempt has settled
	res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Lost")})
	if err != nil || res.IsError {
		t.Fatalf("recovered answer = %+v, %v", res, err)
	}
	if got := a.lastOutcome(); got != OutcomeRecovered {
		t.Errorf("outcome = %q, want recovered", got)
	}
	if n := ts.created.Load(); n != 1 {
		t.Errorf("effects = %d, want 1", n)
	}
	st, _ := p.j.Get(sts[0].Key)
	if st.Status != journal.StatusCommitted || st.OperationID != "T-1" {
		t.Errorf("step = %s %q, want committed with the lookup's operation id T-1", st.Status, st.OperationID)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if !strings.Contains(text, "T-1") || !strings.Contains(text, "already taken effect") {
		t.Errorf("recovered text = %q", text)
	}
}

// N agents send the same intent at once, each in a session of its own:
// one effect, and every agent gets the same result.
func TestMCPConcurrentDuplicates(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			a := p.agent(w, "alice")
			const n = 8
			sessions := make([]*sdk.ClientSession, n)
			for i := range sessions {
				sessions[i] = a.session(t, ctx)
			}
			results := make([]*sdk.CallToolResult, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = sessions[i].CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Same")})
				}()
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil || results[i].IsError {
					t.Fatalf("agent %d: %+v, %v", i, results[i], errs[i])
				}
				if !reflect.DeepEqual(results[i], results[0]) {
					t.Errorf("agent %d got %+v, agent 0 %+v", i, results[i], results[0])
				}
			}
			if got := p.tickets.created.Load(); got != 1 {
				t.Errorf("effects = %d, want 1", got)
			}
		})
	}
}
