package proxy

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
)

// A tool's verify is another tool call: the step is verified when its
// result shows the effect, and held (effect_not_visible) when it never
// does within the rule's time; the retry of a held step gets a hold.
func TestMCPVerify(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			p := newMCPProxy(t, newTicketServer(t), Options{})
			a := p.agent(w, "alice")
			if res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "open_ticket", Arguments: callArgs("ops", "Seen")}); err != nil || res.IsError {
				t.Fatalf("open_ticket: %+v, %v", res, err)
			}
			if res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "open_hidden", Arguments: callArgs("ops", "Unseen")}); err != nil || res.IsError {
				t.Fatalf("open_hidden: %+v, %v", res, err)
			}
			got := map[string]journal.Step{}
			for _, st := range p.steps(t) {
				got[st.Route] = st
			}
			if st := got["open_ticket"]; st.Status != journal.StatusVerified {
				t.Errorf("open_ticket step = %s (%s), want verified", st.Status, st.Evidence)
			}
			if st := got["open_hidden"]; st.Hold != journal.HoldNeedsReview || st.HoldReason != lifecycle.ReasonNotVisible {
				t.Errorf("open_hidden step = %s %s/%s, want held effect_not_visible", st.Status, st.Hold, st.HoldReason)
			}
			res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "open_hidden", Arguments: callArgs("ops", "Unseen")})
			if err != nil {
				t.Fatal(err)
			}
			if h := holdOf(t, res); h.Type != problem.AmbiguousEffect {
				t.Errorf("retry of the unverified call: hold %s, want ambiguous-effect", h.Type)
			}
			if n := p.tickets.created.Load(); n != 2 {
				t.Errorf("effects = %d, want 2", n)
			}
		})
	}
}

// A tool's verification pending at a restart is resumed for a gateway
// server: routeOf finds the tool, mcpResume the server's URL, and the
// caller's next call lends its credential.
func TestMCPVerifyResumed(t *testing.T) {
	ctx := context.Background()
	p := newMCPProxy(t, newTicketServer(t), Options{})
	a := p.agent(viaGateway, "alice")
	s := a.session(t, ctx)
	if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "open_ticket", Arguments: callArgs("ops", "Seen")}); err != nil {
		t.Fatal(err)
	}
	st := p.steps(t)[0]
	// As the journal holds it after a crash during the verification.
	if _, err := p.j.Apply(ctx, st.Key, func(cur *journal.Step) (journal.Change, error) {
		next := *cur
		next.Status, next.VerifyBy = journal.StatusCommitted, time.Now().Add(10*time.Second)
		return journal.Change{Step: next, Event: "test", Reason: "verification pending at a crash"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := p.srv.ResumeVerifications(); err != nil || n != 1 {
		t.Fatalf("ResumeVerifications() = %d, %v; want 1", n, err)
	}
	if _, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Lends the credential")}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := p.j.Get(st.Key)
		if err == nil && got.Status == journal.StatusVerified {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step = %s %s, want verified after the resumed probe", got.Status, got.LastError)
		}
		time.Sleep(10 * time.Millisecond) // background work: poll the journal
	}
}
