//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP scenarios: a tools/call through toolguard's gateway endpoint to an
// MCP server (the official Go SDK, stateless, JSON answers) on the plain
// upstream, next to the REST scenarios guarded and replay. The load client
// writes its JSON-RPC messages itself: an SDK session per worker would
// measure the SDK's client as much as the proxy.
const (
	scMCPDirect  = "mcp-direct"
	scMCPGuarded = "mcp-guarded"
	scMCPReplay  = "mcp-replay"
)

// mcpServerName is the gateway name of the bench's MCP server, and the
// api of its rule file.
const mcpServerName = "benchmcp"

// mcpHandler serves the ticket tool: one effect per call, after the
// upstream's latency.
func (u *upstreams) mcpHandler() http.Handler {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	type in struct {
		Project string `json:"project"`
		Title   string `json:"title"`
		TraceID string `json:"trace_id,omitempty"`
	}
	type out struct {
		ID string `json:"id"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "create_ticket"}, func(_ context.Context, _ *sdk.CallToolRequest, _ in) (*sdk.CallToolResult, out, error) {
		u.delay()
		return nil, out{ID: fmt.Sprintf("T-%d", u.effects.Add(1))}, nil
	})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

const mcpRule = `version: v1
api: ` + mcpServerName + `
mcp: {path: /mcp}
tools:
  - name: create_ticket
    effect: irreversible
    key: {fields: [project, title]}
    operation_id: result:structuredContent.id
`

// mcpCalls mints tools/call messages of distinct intents.
type mcpCalls struct {
	nonce string
	n     atomic.Int64
}

func (m *mcpCalls) body() []byte {
	n := m.n.Add(1)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"p%d","title":"%s-%d","trace_id":"t-%d"}}}`,
		n, n%100, m.nonce, n, n)
}

// mcpPost is a tools/call to toolguard's gateway endpoint.
func (e *env) mcpPost(body []byte) *http.Request {
	return mcpRequest(e.toolguard.String()+"/mcp/"+mcpServerName, body)
}

func mcpRequest(u string, body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer bench")
	return req
}

// mcpLoad is the load of an MCP scenario.
func (e *env) mcpLoad(name string, conc int) load {
	if name == scMCPDirect {
		u := e.up.plain.URL + "/mcp"
		return newLoad(conc, nil, nil, func(int, int) *http.Request { return mcpRequest(u, e.mcpCalls.body()) }, expect(200, ""))
	}
	if name == scMCPReplay {
		set := e.mcpReplay
		return newLoad(conc, nil, nil, func(w, i int) *http.Request { return e.mcpPost(set[(w+i*conc)%len(set)]) }, expect(200, "replayed"))
	}
	return newLoad(conc, nil, nil, func(int, int) *http.Request { return e.mcpPost(e.mcpCalls.body()) }, expect(200, "forwarded"))
}

// seedMCPReplay commits n tools/call intents and keeps their messages.
func (e *env) seedMCPReplay(ctx context.Context, n int) error {
	client, check := newClient(1, nil, nil, nil), expect(200, "forwarded")
	defer client.CloseIdleConnections()
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = e.mcpCalls.body()
		if err := send(client, e.mcpPost(bodies[i]).WithContext(ctx), check); err != nil {
			return fmt.Errorf("seed MCP intent %d: %w", i, err)
		}
	}
	e.mcpReplay = bodies
	return nil
}
