package proxy

import (
	"context"
	"reflect"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The duplicate across sessions is answered once whatever the protocol
// revision and the server's transport mode: sessions (2025-06-18,
// 2025-11-25), the stateless 2026-07-28 revision (server/discover, the
// Mcp-Method and Mcp-Name headers), SSE or JSON answers.
func TestMCPRevisions(t *testing.T) {
	servers := []struct {
		name string
		opts *sdk.StreamableHTTPOptions
	}{
		{name: "sessions, SSE answers"},
		{name: "sessions, JSON answers", opts: &sdk.StreamableHTTPOptions{JSONResponse: true}},
		{name: "stateless", opts: &sdk.StreamableHTTPOptions{Stateless: true}},
	}
	versions := []string{"2025-06-18", "2025-11-25", "2026-07-28"}
	for _, sv := range servers {
		for _, v := range versions {
			for _, w := range bothWays {
				t.Run(sv.name+"/"+v+"/"+string(w), func(t *testing.T) {
					ctx := context.Background()
					ts := newTicketServerWith(t, sv.opts)
					p := newMCPProxy(t, ts, Options{})
					a := p.agent(w, "alice")
					a.version = v
					var results []*sdk.CallToolResult
					for i := range 2 {
						s := a.session(t, ctx)
						got := s.InitializeResult().ProtocolVersion
						if v == "2026-07-28" && sv.opts != nil && sv.opts.Stateless && got != v {
							t.Fatalf("negotiated %s, want %s", got, v)
						}
						for range i { // a different id in the second session
							if _, err := s.ListTools(ctx, nil); err != nil {
								t.Fatal(err)
							}
						}
						res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Disk full")})
						if err != nil || res.IsError {
							t.Fatalf("call %d (protocol %s): %+v, %v", i, got, res, err)
						}
						results = append(results, res)
					}
					if n := ts.created.Load(); n != 1 {
						t.Errorf("effects = %d, want 1", n)
					}
					if a.lastOutcome() != OutcomeReplayed || !reflect.DeepEqual(results[0], results[1]) {
						t.Errorf("second answer %s %+v, want the replay of %+v", a.lastOutcome(), results[1], results[0])
					}
					ts.mu.Lock()
					h := ts.callHeaders
					ts.mu.Unlock()
					if v == "2026-07-28" && sv.opts != nil && sv.opts.Stateless && (h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != "create_ticket") {
						t.Errorf("the server got Mcp-Method %q, Mcp-Name %q: the headers did not pass", h.Get("Mcp-Method"), h.Get("Mcp-Name"))
					}
				})
			}
		}
	}
}

// A multi round-trip call (2026-07-28): the server asks for input first,
// which is no outcome (the tool did not run); the client's continuation,
// under a new id and carrying inputResponses, continues the same step and
// is sent. A later call of the same intent is answered from the journal.
func TestMCPMultiRoundTrip(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			ts := newTicketServerWith(t, &sdk.StreamableHTTPOptions{Stateless: true})
			p := newMCPProxy(t, ts, Options{})
			a := p.agent(w, "alice")
			a.version = "2026-07-28"
			call := &sdk.CallToolParams{Name: "deploy_ticket", Arguments: callArgs("ops", "v2")}
			first, err := a.session(t, ctx).CallTool(ctx, call)
			if err != nil || first.IsError || first.NeedsInput() {
				t.Fatalf("first call: %+v, %v", first, err)
			}
			if ts.asked.Load() != 1 || ts.created.Load() != 1 {
				t.Fatalf("asked %d, created %d; want the continuation sent once after one request for input", ts.asked.Load(), ts.created.Load())
			}
			second, err := a.session(t, ctx).CallTool(ctx, call)
			if err != nil || !reflect.DeepEqual(first, second) || a.lastOutcome() != OutcomeReplayed {
				t.Fatalf("second call: %+v (%s), %v; want the replay of %+v", second, a.lastOutcome(), err, first)
			}
			if ts.asked.Load() != 1 || ts.created.Load() != 1 {
				t.Errorf("asked %d, created %d after the replay, want 1 and 1", ts.asked.Load(), ts.created.Load())
			}
			if sts := p.steps(t); len(sts) != 1 {
				t.Errorf("steps = %d, want one: the continuation is the same step", len(sts))
			}
		})
	}
}

// A 2025-11-25 server may close a call's SSE stream before the response
// and expect the client to resume it (GET with Last-Event-ID): toolguard
// resumes it itself, so the outcome is known and journaled, not unknown.
func TestMCPResumedStream(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ctx := context.Background()
			ts := newTicketServerWith(t, &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
			p := newMCPProxy(t, ts, Options{})
			a := p.agent(w, "alice")
			a.version = "2025-11-25"
			call := &sdk.CallToolParams{Name: "polled_ticket", Arguments: callArgs("ops", "Polled")}
			first, err := a.session(t, ctx).CallTool(ctx, call)
			if err != nil || first.IsError {
				t.Fatalf("first call: %+v, %v", first, err)
			}
			if ts.streamsClosed.Load() != 1 {
				t.Fatalf("the server closed %d streams early, want 1 (the test would not test resumption)", ts.streamsClosed.Load())
			}
			second, err := a.session(t, ctx).CallTool(ctx, call)
			if err != nil || !reflect.DeepEqual(first, second) || a.lastOutcome() != OutcomeReplayed {
				t.Fatalf("second call: %+v (%s), %v; want the replay of %+v", second, a.lastOutcome(), err, first)
			}
			if n := ts.created.Load(); n != 1 {
				t.Errorf("effects = %d, want 1", n)
			}
		})
	}
}

// While a guarded call runs, the server's messages before its response
// reach the agent as they come: progress notifications, and — in the 2025
// revisions — an elicitation the tool waits for, which the agent answers
// through the gateway. The response follows once it is journaled; a
// replay has neither.
func TestMCPRelayedMessages(t *testing.T) {
	for _, w := range bothWays {
		for _, tool := range []string{"progress_ticket", "confirm_ticket"} {
			t.Run(string(w)+"/"+tool, func(t *testing.T) {
				ctx := context.Background()
				ts := newTicketServer(t)
				p := newMCPProxy(t, ts, Options{UpstreamTimeout: 5 * time.Second})
				a := p.agent(w, "alice")
				a.version = "2025-11-25"
				call := &sdk.CallToolParams{Name: tool, Arguments: callArgs("ops", "Relayed"), Meta: sdk.Meta{"progressToken": "p-7"}}
				first, err := a.session(t, ctx).CallTool(ctx, call)
				if err != nil || first.IsError {
					t.Fatalf("first call: %+v, %v", first, err)
				}
				if tool == "progress_ticket" {
					// The SDK runs notification handlers on goroutines of
					// their own: the two relayed before the response may
					// be handled after CallTool returned.
					for i := 0; i < 2; i++ {
						select {
						case <-a.progressed:
						case <-time.After(5 * time.Second):
						}
					}
				}
				switch {
				case tool == "progress_ticket" && a.progress.Load() != 2:
					t.Errorf("progress notifications received = %d, want 2", a.progress.Load())
				case tool == "confirm_ticket" && a.elicited.Load() != 1:
					t.Errorf("elicitations answered = %d, want 1", a.elicited.Load())
				}
				before := a.progress.Load() + a.elicited.Load()
				second, err := a.session(t, ctx).CallTool(ctx, call)
				if err != nil || !reflect.DeepEqual(first, second) || a.lastOutcome() != OutcomeReplayed {
					t.Fatalf("second call: %+v (%s), %v; want the replay of %+v", second, a.lastOutcome(), err, first)
				}
				if after := a.progress.Load() + a.elicited.Load(); after != before {
					t.Errorf("the replay relayed %d messages, want none", after-before)
				}
				if n := ts.created.Load(); n != 1 {
					t.Errorf("effects = %d, want 1", n)
				}
			})
		}
	}
}
