package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/problem"
)

// When the agent disconnects while the server is still streaming its
// answer, toolguard keeps its own request open, journals the outcome, and
// answers the retry (in a new session) from it: one effect.
func TestMCPAgentDisconnectsMidStream(t *testing.T) {
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ts := newTicketServer(t)
			ts.slow = make(chan struct{})
			release := sync.OnceFunc(func() { close(ts.slow) })
			t.Cleanup(release)
			p := newMCPProxy(t, ts, Options{})
			held := make(chan struct{}, 1)
			p.srv.cancelHeld = func() { held <- struct{}{} }
			a := p.agent(w, "alice")
			// A progress token: the tool reports progress, so the agent's
			// answer is an event stream when it goes away.
			call := &sdk.CallToolParams{Name: "slow_ticket", Arguments: callArgs("ops", "Streamed"), Meta: sdk.Meta{"progressToken": "p-1"}}

			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			s1 := a.session(t, context.Background())
			go func() {
				_, err := s1.CallTool(ctx, call)
				errc <- err
			}()
			<-ts.slowDone  // the tool has made its effect and is still running
			<-a.progressed // the agent reads the relayed event stream
			cancel()       // the agent goes away mid-stream (the SDK also sends notifications/cancelled)
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("first call: err = %v, want context.Canceled", err)
			}
			select {
			case <-held: // the SDK sends it after CallTool returned
			case <-time.After(10 * time.Second):
				t.Fatal("toolguard never held back the notifications/cancelled of the guarded call")
			}
			release()
			if n := ts.cancels.Load(); n != 0 {
				t.Errorf("the server got %d notifications/cancelled for a guarded call in flight, want none", n)
			}
			res, err := a.session(t, context.Background()).CallTool(context.Background(), call)
			if err != nil || res.IsError {
				t.Fatalf("retry: %+v, %v", res, err)
			}
			if got := a.lastOutcome(); got != OutcomeReplayed {
				t.Errorf("retry outcome = %q, want replayed", got)
			}
			if n := ts.created.Load(); n != 1 {
				t.Errorf("effects = %d, want 1", n)
			}
			out, _ := json.Marshal(res.StructuredContent)
			if string(out) != `{"id":"T-1"}` {
				t.Errorf("retry result = %s, want the first call's", out)
			}
		})
	}
}

// Bad input gets a JSON-RPC error or a clear refusal, and nothing is
// journaled or sent.
func TestMCPBadInput(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"ops","title":"` + strings.Repeat("x", 5000) + `"}}}`
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   int    // JSON-RPC error code; 0 for a hold result
		wantID     string // the id echoed, as JSON
		wantType   string // problem type of a hold result
	}{
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"`, wantStatus: 400, wantCode: mcp.CodeParseError, wantID: "null"},
		{name: "duplicate member", body: `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"create_ticket"}}`, wantStatus: 400, wantCode: mcp.CodeParseError, wantID: "null"},
		{name: "not JSON-RPC", body: `{"id":1,"method":"tools/call","params":{"name":"create_ticket"}}`, wantStatus: 400, wantCode: mcp.CodeInvalidRequest, wantID: "null"},
		{name: "batch of a call and a notification",
			body:       `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"a","title":"b"}}},{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]`,
			wantStatus: 400, wantCode: mcp.CodeInvalidRequest, wantID: "null"},
		{name: "tools/call as a notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"create_ticket"}}`, wantStatus: 400, wantCode: mcp.CodeInvalidRequest, wantID: "null"},
		{name: "oversized arguments", body: big, wantStatus: 413, wantCode: mcp.CodeInvalidRequest, wantID: "null"},
		{name: "no params.name", body: `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"arguments":{}}}`, wantStatus: 200, wantCode: mcp.CodeInvalidParams, wantID: `"a-1"`},
		{name: "arguments not an object", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_ticket","arguments":[1]}}`, wantStatus: 200, wantCode: mcp.CodeInvalidParams, wantID: "3"},
		{name: "arguments read two ways", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"a","project":"b","title":"c"}}}`,
			wantStatus: 200, wantID: "4", wantType: problem.InvalidBody},
	}
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ts := newTicketServer(t)
			p := newMCPProxy(t, ts, Options{MaxBody: 4096})
			client, target := &http.Client{}, p.proxy.String()+"/mcp/tickets"
			if w == viaForward {
				client.Transport = &http.Transport{Proxy: http.ProxyURL(p.proxy)}
				target = ts.url.String()
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(tc.body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					body, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != tc.wantStatus {
						t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
					}
					var got struct {
						ID     json.RawMessage `json:"id"`
						Error  *mcp.Error      `json:"error"`
						Result *struct {
							IsError bool                       `json:"isError"`
							Meta    map[string]json.RawMessage `json:"_meta"`
						} `json:"result"`
					}
					if err := json.Unmarshal(body, &got); err != nil {
						t.Fatalf("answer is not a JSON-RPC response: %s", body)
					}
					if string(got.ID) != tc.wantID {
						t.Errorf("id = %s, want %s", got.ID, tc.wantID)
					}
					switch {
					case tc.wantCode != 0 && (got.Error == nil || got.Error.Code != tc.wantCode):
						t.Errorf("answer = %s, want JSON-RPC error %d", body, tc.wantCode)
					case tc.wantType != "" && (got.Result == nil || !got.Result.IsError || !strings.Contains(string(got.Result.Meta[mcp.MetaProblem]), tc.wantType)):
						t.Errorf("answer = %s, want a hold result of type %s", body, tc.wantType)
					}
				})
			}
			if n := ts.calls.Load() + ts.invalid.Load(); n != 0 {
				t.Errorf("the server ran %d tool calls, want none", n)
			}
			if sts := p.steps(t); len(sts) != 0 {
				t.Errorf("journal holds %d steps, want none", len(sts))
			}
		})
	}
}

// An HTTP 4xx from the server means the tool did not run: an expired
// session's 404 reaches the client as it was (so that it initialises
// again), nothing is stored, and the call in the new session is sent.
func TestMCPSessionExpired(t *testing.T) {
	ctx := context.Background()
	p := newMCPProxy(t, newTicketServer(t), Options{})
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"ops","title":"Disk full"}}}`
	req, _ := http.NewRequest(http.MethodPost, p.proxy.String()+"/mcp/tickets", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Mcp-Session-Id", "expired-session")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %d, want the server's 404 for an unknown session", resp.StatusCode)
	}
	sts := p.steps(t)
	if len(sts) != 1 || sts[0].Status.String() != "prepared" || sts[0].Response != nil {
		t.Fatalf("steps = %+v, want one prepared step without a stored answer", sts)
	}
	res, err := p.agent(viaGateway, "alice").session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Disk full")})
	if err != nil || res.IsError {
		t.Fatalf("call in a new session: %+v, %v", res, err)
	}
	if n := p.tickets.created.Load(); n != 1 {
		t.Errorf("effects = %d, want 1", n)
	}
}
